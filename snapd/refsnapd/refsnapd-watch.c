/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "refsnapd-watch.h"

#define WATCH_MASK (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_MODIFY | \
                    FAN_ATTRIB | FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR)

typedef struct Fs {
        fsid_t fsid;
        int fd;                 /* any directory on it, for open_by_handle_at */
} Fs;

struct Watch {
        int fd;
        Fs *fs;
        size_t n_fs;
};

int watch_new(Watch **ret) {
        Watch *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME,
                              O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        if (w->fd < 0) {
                int r = -errno;
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

Watch *watch_free(Watch *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_fs; i++)
                safe_close(w->fs[i].fd);
        free(w->fs);
        safe_close(w->fd);
        free(w);
        return NULL;
}

int watch_fd(const Watch *w) {
        return w->fd;
}

int watch_add(Watch *w, const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct statfs sfs;
        Fs *fs;

        if (fd < 0)
                return -errno;
        if (fstatfs(fd, &sfs) < 0)
                return -errno;
        for (size_t i = 0; i < w->n_fs; i++)
                if (memcmp(&w->fs[i].fsid, &sfs.f_fsid, sizeof(fsid_t)) == 0)
                        return 0;
        if (fanotify_mark(w->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, WATCH_MASK, fd, NULL) < 0)
                return -errno;
        fs = reallocarray(w->fs, w->n_fs + 1, sizeof(*fs));
        if (!fs)
                return -ENOMEM;
        w->fs = fs;
        w->fs[w->n_fs++] = (Fs) { .fsid = sfs.f_fsid, .fd = TAKE_FD(fd) };
        return 0;
}

static int resolve_dir(Watch *w, const void *fsid, struct file_handle *fh, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        for (size_t i = 0; i < w->n_fs; i++) {
                if (memcmp(&w->fs[i].fsid, fsid, sizeof(fsid_t)) != 0)
                        continue;
                fd = open_by_handle_at(w->fs[i].fd, fh, O_PATH | O_CLOEXEC);
                break;
        }
        if (fd < 0)
                return fd == -EBADF ? -ENOENT : -errno;
        n = readlink(PROC_FD(fd), buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        return 0;
}

int watch_process(Watch *w, bool resolve, watch_cb cb, void *userdata) {
        /* Records are only 4-byte aligned: each is copied out before use. */
        char buf[8192];
        char path[PATH_MAX];
        int overflow = 0;

        for (;;) {
                ssize_t len = read(w->fd, buf, sizeof(buf));

                if (len < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return overflow;
                        return -errno;
                }
                for (size_t off = 0; off + sizeof(struct fanotify_event_metadata) <= (size_t) len;) {
                        struct fanotify_event_metadata m;
                        struct fanotify_event_info_fid fid;
                        union {
                                struct file_handle fh;
                                char raw[sizeof(struct file_handle) + MAX_HANDLE_SZ];
                        } h;
                        size_t info = off + sizeof(m);

                        memcpy(&m, buf + off, sizeof(m));
                        if (m.event_len < sizeof(m) || off + m.event_len > (size_t) len)
                                break;
                        off += m.event_len;
                        if (m.mask & FAN_Q_OVERFLOW) {
                                overflow = 1;
                                continue;
                        }
                        if (!resolve || m.event_len < sizeof(m) + sizeof(fid) + sizeof(struct file_handle))
                                continue;
                        memcpy(&fid, buf + info, sizeof(fid));
                        if (fid.hdr.info_type != FAN_EVENT_INFO_TYPE_DFID_NAME &&
                            fid.hdr.info_type != FAN_EVENT_INFO_TYPE_DFID &&
                            fid.hdr.info_type != FAN_EVENT_INFO_TYPE_FID)
                                continue;
                        memcpy(&h.fh, buf + info + sizeof(fid), sizeof(struct file_handle));
                        if (h.fh.handle_bytes > MAX_HANDLE_SZ ||
                            info + sizeof(fid) + sizeof(struct file_handle) + h.fh.handle_bytes > off)
                                continue;
                        memcpy(h.fh.f_handle, buf + info + sizeof(fid) + sizeof(struct file_handle),
                               h.fh.handle_bytes);
                        if (resolve_dir(w, &fid.fsid, &h.fh, path, sizeof(path)) == 0)
                                cb(path, m.pid, userdata);
                }
        }
}

void watch_retain(Watch *w, const char *const *paths, size_t n) {
        fsid_t *keep = calloc(n + 1, sizeof(fsid_t));
        size_t n_keep = 0, k = 0;

        if (!keep)
                return;         /* keep everything: a watch too many costs nothing */
        for (size_t i = 0; i < n; i++) {
                struct statfs sfs;

                if (statfs(paths[i], &sfs) == 0)
                        keep[n_keep++] = sfs.f_fsid;
        }
        for (size_t i = 0; i < w->n_fs; i++) {
                bool used = false;

                for (size_t j = 0; j < n_keep && !used; j++)
                        used = memcmp(&keep[j], &w->fs[i].fsid, sizeof(fsid_t)) == 0;
                if (used) {
                        w->fs[k++] = w->fs[i];
                        continue;
                }
                (void) fanotify_mark(w->fd, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, WATCH_MASK,
                                     w->fs[i].fd, NULL);
                safe_close(w->fs[i].fd);
        }
        w->n_fs = k;
        free(keep);
}
