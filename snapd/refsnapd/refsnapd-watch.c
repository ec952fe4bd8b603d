/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>
#include <sys/epoll.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "chase.h"
#include "fd-util.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "refsnapd-watch.h"

#define WATCH_MASK (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_MODIFY | \
                    FAN_ATTRIB | FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR)
#define WATCH_DIR_MOVED (FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_DELETE_SELF | FAN_MOVE_SELF)

static usec_t now_monotonic(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}

/* Reads of one group per wakeup: a bounded batch, then the loop runs other work. */
#define WATCH_READS_PER_WAKEUP 4
/*
 * Events decoded since a group's queue was last found empty, past which
 * its filesystem's jobs count as changed: the rest is read undecoded (a
 * flood costs a read per 8 KiB, not a decode and a walk per event).
 */
#define WATCH_BACKLOG_MAX 10000
/*
 * Directories looked at to attribute them, likewise: a change deep in a
 * tree whose cache was just forgotten costs a walk of up to 1,024, and a
 * flood of those must not cost 10,000 such walks.
 */
#define WATCH_WALK_MAX 100000

struct WatchFs {
        dev_t dev;              /* the superblock's (mountinfo), the same through every mount */
        int fan_fd;             /* this filesystem's fanotify group */
        char *path;             /* a job's source on it: where root_fd is found from */
        bool btrfs;
        bool top;               /* root_fd was the filesystem's root when last found */
        unsigned backlog;       /* events decoded since its queue was last empty */
        unsigned walked;        /* directories looked at to attribute them, likewise */
        /*
         * What handles are decoded against: found at each batch of events
         * and closed after it, so that nothing keeps the filesystem busy
         * between batches (umount, then removing its device, succeeds).
         */
        int root_fd;
};

struct Watch {
        int epoll_fd;
        bool bounded;
        WatchFs **fs;
        size_t n_fs;
};

static WatchFs *watch_fs_free(WatchFs *fs) {
        if (!fs)
                return NULL;
        safe_close(fs->fan_fd);
        safe_close(fs->root_fd);
        free(fs->path);
        free(fs);
        return NULL;
}

int watch_new(bool bounded, Watch **ret) {
        Watch *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->bounded = bounded;
        w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epoll_fd < 0) {
                int r = -errno;

                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

bool watch_is_bounded(const Watch *w) {
        return w->bounded;
}

Watch *watch_free(Watch *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_fs; i++)
                watch_fs_free(w->fs[i]);
        free(w->fs);
        safe_close(w->epoll_fd);
        free(w);
        return NULL;
}

int watch_fd(const Watch *w) {
        return w->epoll_fd;
}

const char *watch_fs_how(const WatchFs *fs) {
        return fs->top ? "the filesystem root" : "the source's mount";
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s) {
        char *o = s;

        for (; *s; s++)
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *o++ = (char) ((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else
                        *o++ = *s;
        *o = '\0';
}

/* The superblock device and type of mount mnt_id, from mountinfo. */
static int mount_info(uint64_t mnt_id, dev_t *ret_dev, char **ret_type) {
        _cleanup_free_ char *line = NULL;
        char *tail, type[64];
        unsigned maj, min;
        int r;

        r = mountinfo_line_by_id(NULL, mnt_id, &line, &tail);
        if (r < 0)
                return r == -EINVAL ? -ENOENT : r;
        if (sscanf(line, "%*u %*u %u:%u", &maj, &min) != 2 || sscanf(tail, "%63s", type) != 1)
                return -ENOENT;
        unescape(type);
        *ret_dev = makedev(maj, min);
        *ret_type = strdup(type);
        return *ret_type ? 0 : -ENOMEM;
}

typedef struct TopInode {
        bool found;
        uint32_t gen;
} TopInode;

static int on_top_inode(const struct btrfs_ioctl_search_header *h, const void *data, void *userdata) {
        TopInode *t = userdata;
        uint64_t gen;

        if (h->objectid != BTRFS_FIRST_FREE_OBJECTID || h->type != BTRFS_INODE_ITEM_KEY || h->len < sizeof(gen))
                return -EIO;
        /* struct btrfs_inode_item begins with its generation, little-endian. */
        memcpy(&gen, data, sizeof(gen));
        *t = (TopInode) { .found = true, .gen = (uint32_t) le64toh(gen) };
        return 1;       /* the one item */
}

/*
 * The generation of the top-level subvolume's root directory (a file
 * handle names it): read from the filesystem tree with
 * BTRFS_IOC_TREE_SEARCH_V2, through any directory of the filesystem.
 */
static int btrfs_top_generation(int dir_fd, uint32_t *ret) {
        TopInode t = {};
        int r;

        r = btrfs_tree_search(dir_fd, BTRFS_FS_TREE_OBJECTID, &(struct btrfs_ioctl_search_key) {
                                      .min_objectid = BTRFS_FIRST_FREE_OBJECTID,
                                      .max_objectid = BTRFS_FIRST_FREE_OBJECTID,
                                      .min_type = BTRFS_INODE_ITEM_KEY,
                                      .max_type = BTRFS_INODE_ITEM_KEY,
                                      .max_offset = UINT64_MAX,
                                      .max_transid = UINT64_MAX,
                              },
                              on_top_inode, &t);
        if (r < 0)
                return r;
        if (!t.found)
                return -ENOENT;
        *ret = t.gen;
        return 0;
}

/*
 * The root of a btrfs filesystem's top-level subvolume, as a detached
 * mount of its own, reached from dir_fd (on any mount of the filesystem,
 * a subvolume's included) without the block device: a file handle of the
 * top-level root directory, decoded through dir_fd's mount, then cloned
 * (open_tree(2)) so that its mount root is the filesystem's root, and
 * ".." climbs from any directory of the filesystem to it.
 */
static int btrfs_top_root(int dir_fd) {
        struct {
                uint64_t objectid, root_objectid;
                uint32_t gen;
        } __attribute__((packed)) fid = { .objectid = BTRFS_FIRST_FREE_OBJECTID, .root_objectid = BTRFS_FS_TREE_OBJECTID };
        union {
                struct file_handle fh;
                char raw[sizeof(struct file_handle) + sizeof(fid)];
        } h = {};
        _cleanup_close_ int top = -EBADF;
        uint32_t gen;
        int r, mfd;

        r = btrfs_top_generation(dir_fd, &gen);
        if (r < 0)
                return r;
        fid.gen = gen;
        h.fh.handle_bytes = sizeof(fid);
        h.fh.handle_type = 0x4d;        /* FILEID_BTRFS_WITHOUT_PARENT */
        memcpy(h.fh.f_handle, &fid, sizeof(fid));
        top = open_by_handle_at(dir_fd, &h.fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (top < 0)
                return -errno;
        mfd = open_tree(top, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        return mfd < 0 ? -errno : mfd;
}

/*
 * A directory descriptor that is not O_PATH, on the same directory: what
 * open_by_handle_at(2) takes (open_tree(2) returns an O_PATH one).
 * Consumes fd.
 */
static int reopen_dir(int fd) {
        int r;

        if (fd < 0)
                return fd;
        r = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        r = r < 0 ? -errno : r;
        safe_close(fd);
        return r;
}

static int fan_group(bool bounded) {
        unsigned flags = FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_REPORT_DFID_NAME;
        int fd = -1;

        /*
         * Bounded (the default): fs.fanotify.max_queued_events, then one
         * overflow event.  Unlimited only when asked for: its events are
         * allocated __GFP_NOFAIL, so that no cgroup limit bounds what a
         * user's flood makes the kernel keep for the daemon.
         */
        if (!bounded)
                fd = fanotify_init(flags | FAN_UNLIMITED_QUEUE, O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        if (bounded || (fd < 0 && errno == EPERM))
                fd = fanotify_init(flags, O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        return fd < 0 ? -errno : fd;
}

/* The superblock device and type of the filesystem dir_fd is on. */
static int dir_fs(int dir_fd, dev_t *ret_dev, char **ret_type) {
        uint64_t mnt;
        int r;

        r = fd_mount_id(dir_fd, &mnt);
        if (r < 0)
                return r;
        return mount_info(mnt, ret_dev, ret_type);
}

/*
 * What handles are decoded against, found from dir_fd (a directory of
 * fs): for btrfs its top-level root, else (or where that cannot be had)
 * dir_fd's own mount.
 */
static int fs_root_from(WatchFs *fs, int dir_fd) {
        int fd = fs->btrfs ? reopen_dir(btrfs_top_root(dir_fd)) : -EOPNOTSUPP;

        fs->top = fd >= 0;
        if (fd < 0) {
                fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
                fd = fd < 0 ? -errno : fd;
        }
        return fd;
}

/* Find fs->root_fd for a batch, from fs->path; -EXDEV: that path is on another filesystem now. */
static int fs_open_root(WatchFs *fs) {
        _cleanup_free_ char *type = NULL;
        _cleanup_close_ int dir = -EBADF;
        dev_t dev;
        int r;

        if (fs->root_fd >= 0)
                return 0;
        /* A user's FUSE mount over that path now: never asked anything. */
        if (path_under_fuse(NULL, fs->path, NULL, NULL) != 0)
                return -EXDEV;
        /* Nor one mounted since the table was read: by the mount the walk reaches. */
        dir = chase_dir(AT_FDCWD, fs->path, &(Chase) { .flags = CHASE_NO_FUSE });
        if (dir == -EREMOTE)
                return -EXDEV;
        if (dir < 0)
                return dir;
        r = dir_fs(dir, &dev, &type);
        if (r < 0)
                return r;
        if (dev != fs->dev)
                return -EXDEV;
        r = fs_root_from(fs, dir);
        if (r < 0)
                return r;
        fs->root_fd = r;
        return 0;
}

static void fs_close_root(WatchFs *fs) {
        fs->root_fd = safe_close(fs->root_fd);
}

/* Mark the filesystem (again: a filesystem unmounted and mounted anew is a new one to the kernel). */
static int fs_mark(WatchFs *fs, int dir_fd) {
        _cleanup_close_ int root = fs_root_from(fs, dir_fd);

        if (root < 0)
                return root;
        if (fanotify_mark(fs->fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, WATCH_MASK, root, ".") < 0)
                return -errno;
        return 0;
}

int watch_add(Watch *w, int dir_fd, const char *path, WatchFs **ret) {
        _cleanup_free_ char *type = NULL, *copy = strdup(path);
        WatchFs *fs = NULL, **list;
        dev_t dev;
        int r;

        if (!copy)
                return -ENOMEM;
        r = dir_fs(dir_fd, &dev, &type);
        if (r < 0)
                return r;
        for (size_t i = 0; i < w->n_fs && !fs; i++)
                if (w->fs[i]->dev == dev)
                        fs = w->fs[i];
        if (fs) {
                r = fs_mark(fs, dir_fd);
                if (r < 0)
                        return r;
                free(fs->path);
                fs->path = TAKE_PTR(copy);
                *ret = fs;
                return 0;
        }

        fs = calloc(1, sizeof(*fs));
        if (!fs)
                return -ENOMEM;
        *fs = (WatchFs) { .dev = dev, .fan_fd = -EBADF, .root_fd = -EBADF, .btrfs = strcmp(type, "btrfs") == 0,
                          .path = TAKE_PTR(copy) };
        fs->fan_fd = fan_group(w->bounded);
        if (fs->fan_fd < 0) {
                r = fs->fan_fd;
                goto fail;
        }
        r = fs_mark(fs, dir_fd);
        if (r < 0)
                goto fail;
        if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, fs->fan_fd,
                      &(struct epoll_event) { .events = EPOLLIN, .data.ptr = fs }) < 0) {
                r = -errno;
                goto fail;
        }
        list = reallocarray(w->fs, w->n_fs + 1, sizeof(*list));
        if (!list) {
                r = -ENOMEM;
                goto fail;
        }
        w->fs = list;
        w->fs[w->n_fs++] = fs;
        *ret = fs;
        return 0;
fail:
        watch_fs_free(fs);
        return r;
}

int watch_fs_group(const WatchFs *fs) {
        return fs->fan_fd;
}

int watch_quiet_dir(int group, int dir_fd) {
        /* Of the directory itself and of its entries (FAN_EVENT_ON_CHILD); kept over a modify (required). */
        if (fanotify_mark(group, FAN_MARK_ADD | FAN_MARK_IGNORE_SURV | FAN_MARK_EVICTABLE,
                          WATCH_MASK | FAN_EVENT_ON_CHILD, dir_fd, NULL) < 0)
                return -errno;
        return 0;
}

int watch_quiet_end(int group) {
        /* The group's only inode marks are these: its watch is a filesystem mark. */
        if (fanotify_mark(group, FAN_MARK_FLUSH, 0, AT_FDCWD, NULL) < 0)
                return -errno;
        return 0;
}

void watch_retain(Watch *w, WatchFs *const *keep, size_t n) {
        size_t k = 0;

        for (size_t i = 0; i < w->n_fs; i++) {
                bool used = false;

                for (size_t j = 0; j < n && !used; j++)
                        used = keep[j] == w->fs[i];
                if (used)
                        w->fs[k++] = w->fs[i];
                else
                        watch_fs_free(w->fs[i]);        /* closing the group drops its mark and epoll entry */
        }
        w->n_fs = k;
}

/*
 * One event's directory and entry name, decoded against fs's root, to the
 * callbacks.  Returns the directories changed() looked at (1 when it was
 * not called).
 */
static unsigned handle_event(WatchFs *fs, const char *rec, size_t len, const WatchCallbacks *cb, void *userdata) {
        struct fanotify_event_info_fid fid;
        union {
                struct file_handle fh;
                char raw[sizeof(struct file_handle) + MAX_HANDLE_SZ];
        } h;
        _cleanup_close_ int fd = -EBADF;
        size_t info = sizeof(struct fanotify_event_metadata), at, end;
        char name[NAME_MAX + 1] = "";
        unsigned walked;

        if (len < info + sizeof(fid) + sizeof(struct file_handle)) {
                cb->unknown(fs, "an event without a directory handle", false, userdata);
                return 1;
        }
        memcpy(&fid, rec + info, sizeof(fid));
        memcpy(&h.fh, rec + info + sizeof(fid), sizeof(struct file_handle));
        at = info + sizeof(fid) + sizeof(struct file_handle) + h.fh.handle_bytes;
        end = info + fid.hdr.len;
        if ((fid.hdr.info_type != FAN_EVENT_INFO_TYPE_DFID_NAME && fid.hdr.info_type != FAN_EVENT_INFO_TYPE_DFID &&
             fid.hdr.info_type != FAN_EVENT_INFO_TYPE_FID) ||
            h.fh.handle_bytes > MAX_HANDLE_SZ || at > len || end > len || end < at) {
                cb->unknown(fs, "an event that does not parse", false, userdata);
                return 1;
        }
        memcpy(h.fh.f_handle, rec + info + sizeof(fid) + sizeof(struct file_handle), h.fh.handle_bytes);
        if (fid.hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME) {
                size_t n = strnlen(rec + at, end - at);

                if (n == end - at || n > NAME_MAX) {
                        cb->unknown(fs, "an event whose name does not parse", false, userdata);
                        return 1;
                }
                memcpy(name, rec + at, n + 1);
        }
        fd = open_by_handle_at(fs->root_fd, &h.fh, O_PATH | O_CLOEXEC);
        if (fd < 0) {
                /* Removed since (ESTALE), or not reachable from this root. */
                cb->unknown(fs, errno == ESTALE ? "a directory removed since" : "a handle that does not decode", false,
                            userdata);
                return 1;
        }
        walked = cb->changed(fs, fd, name[0] ? name : NULL, userdata);
        return MAX(walked, 1u);
}

/*
 * Read fs's queue: at most max_reads reads (0: until it is empty).  Returns
 * 1 when it is empty, 0 when events may be left, or -errno.
 */
static int process_fs_batch(WatchFs *fs, unsigned max_reads, usec_t deadline, const WatchCallbacks *cb,
                            void *userdata) {
        /* Records are only 4-byte aligned: each is copied out before use. */
        char buf[8192];

        for (unsigned reads = 0; max_reads == 0 || reads < max_reads; reads++) {
                ssize_t len;

                /* At least one read: an empty queue is never taken for a backlog. */
                if (reads > 0 && deadline != 0 && now_monotonic() >= deadline)
                        return 0;
                len = read(fs->fan_fd, buf, sizeof(buf));
                if (len < 0) {
                        int r = -errno;         /* before the callback, which logs */

                        if (r == -EAGAIN) {
                                fs->backlog = fs->walked = 0;
                                return 1;
                        }
                        if (r == -EINTR)
                                continue;
                        cb->unknown(fs, "a failed read of the change queue", true, userdata);
                        return r;
                }
                for (size_t off = 0; off + sizeof(struct fanotify_event_metadata) <= (size_t) len;) {
                        struct fanotify_event_metadata m;

                        memcpy(&m, buf + off, sizeof(m));
                        if (m.event_len < sizeof(m) || off + m.event_len > (size_t) len) {
                                cb->unknown(fs, "a truncated event", true, userdata);       /* the rest of the read is lost */
                                break;
                        }
                        /* Told whoever moved it, decoded or not: what lies under what changed. */
                        if ((m.mask & FAN_ONDIR) && (m.mask & WATCH_DIR_MOVED))
                                cb->moved(fs, userdata);
                        if (m.mask & FAN_Q_OVERFLOW)
                                cb->unknown(fs, "the change queue overflowed", true, userdata);
                        else if (!cb->own(m.pid, userdata) && cb->wanted(fs, userdata)) {
                                if (++fs->backlog > WATCH_BACKLOG_MAX) {
                                        cb->unknown(fs, "a backlog of more than 10000 changes", true, userdata);
                                        fs->backlog = fs->walked = 0;
                                } else if (fs_open_root(fs) < 0)
                                        cb->unknown(fs, "a change on a filesystem no longer reached through its job's source",
                                                    false, userdata);
                                else if ((fs->walked += handle_event(fs, buf + off, m.event_len, cb, userdata)) >
                                         WATCH_WALK_MAX) {
                                        cb->unknown(fs, "more than 100000 directories walked to attribute queued changes",
                                                    true, userdata);
                                        fs->backlog = fs->walked = 0;
                                }
                        }
                        off += m.event_len;
                }
        }
        return 0;
}

static int process_fs(WatchFs *fs, unsigned max_reads, usec_t deadline, const WatchCallbacks *cb, void *userdata) {
        int r = process_fs_batch(fs, max_reads, deadline, cb, userdata);

        fs_close_root(fs);
        return r;
}

int watch_process(Watch *w, const WatchCallbacks *cb, void *userdata) {
        struct epoll_event ev[16];
        int n, r = 0;

        n = epoll_wait(w->epoll_fd, ev, ELEMENTSOF(ev), 0);
        if (n < 0)
                return errno == EINTR ? 0 : -errno;
        for (int i = 0; i < n; i++) {
                int k = process_fs(ev[i].data.ptr, WATCH_READS_PER_WAKEUP, 0, cb, userdata);

                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}

int watch_drain(Watch *w, usec_t budget, bool backlog_unknown, const WatchCallbacks *cb, void *userdata) {
        usec_t deadline = now_monotonic() + budget;
        int r = 0;

        for (size_t i = 0; i < w->n_fs; i++) {
                int k = process_fs(w->fs[i], 0, deadline, cb, userdata);

                if (k == 0) {
                        /* Left unread: what it holds counts, unread. */
                        if (backlog_unknown)
                                cb->unknown(w->fs[i], "more queued changes than could be read by the due time",
                                            true, userdata);
                        if (r == 0)
                                r = 1;
                } else if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}
