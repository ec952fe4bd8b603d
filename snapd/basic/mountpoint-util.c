/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "stat-util.h"

int mount_id_at(int dir_fd, const char *name, uint64_t *ret) {
        struct statx x;
        int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH);

        if (statx(dir_fd, name, flags, STATX_MNT_ID, &x) < 0)
                return -errno;
        if (!(x.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        *ret = x.stx_mnt_id;
        return 0;
}

int path_mount_id_nearest(const char *path, uint64_t *ret, char **ret_found) {
        _cleanup_free_ char *p = strdup(path);
        int r;

        if (!p)
                return -ENOMEM;
        for (;;) {
                r = mount_id_at(AT_FDCWD, p, ret);
                if (r == 0) {
                        if (ret_found)
                                *ret_found = TAKE_PTR(p);
                        return 0;
                }
                if (r != -ENOENT || strcmp(p, "/") == 0)
                        return r;
                char *slash = strrchr(p, '/');

                if (!slash)
                        return r;
                *slash = '\0';
                if (!p[0])
                        strcpy(p, "/");
        }
}

/* Is dir a mount point now (its mount ID not its parent's)? */
static int is_mounted(const char *dir) {
        _cleanup_close_ int fd = -EBADF;
        uint64_t a, b;
        int r;

        fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
        r = mount_id_at(fd, "", &a);
        if (r >= 0)
                r = mount_id_at(fd, "..", &b);
        if (r < 0)
                return r;
        return a != b;
}

int fstab_unmounted_above(const char *fstab, const char *path, char **ret_where) {
        FILE *f = setmntent(fstab, "re");
        struct mntent *e;
        int r = 0;

        if (!f)
                return errno == ENOENT ? 0 : -errno;
        while ((e = getmntent(f))) {
                const char *rest;

                if (e->mnt_dir[0] != '/' || strcmp(e->mnt_dir, "/") == 0 || strcmp(e->mnt_type, "swap") == 0)
                        continue;
                rest = path_startswith(path, e->mnt_dir);
                if (!rest || (*rest && *rest != '/'))
                        continue;
                r = is_mounted(e->mnt_dir);
                if (r < 0)
                        break;
                if (r == 0) {
                        if (ret_where && !(*ret_where = strdup(e->mnt_dir)))
                                r = -ENOMEM;
                        else
                                r = 1;
                        break;
                }
                r = 0;
        }
        endmntent(f);
        return r;
}

int open_no_xdev(int dir_fd, const char *name, int flags) {
        struct open_how how = {
                .flags = flags | O_NOFOLLOW | O_CLOEXEC,
                .resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
        };
        int fd;

        if (!*name || strchr(name, '/'))
                return -EINVAL;
        do
                fd = (int) syscall(SYS_openat2, dir_fd, name, &how, sizeof(how));
        while (fd < 0 && errno == EAGAIN);      /* a concurrent rename: try again */
        return fd < 0 ? -errno : fd;
}

int statx_no_xdev(int dir_fd, const char *name, unsigned mask, struct statx *ret) {
        int fd = open_no_xdev(dir_fd, name, O_PATH), r = 0;

        if (fd < 0)
                return fd;
        /* The entry itself, as the O_PATH descriptor holds it. */
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, mask, ret) < 0)
                r = -errno;
        close(fd);
        return r;
}

int fstatat_no_xdev(int dir_fd, const char *name, struct stat *ret) {
        struct statx x;
        int r = statx_no_xdev(dir_fd, name, STATX_BASIC_STATS, &x);

        if (r < 0)
                return r;
        stat_from_statx(ret, &x);
        return 0;
}

/* A mount point as mountinfo escapes it (\\040 for a space, \\011, \\012, \\134), unescaped in place. */
static void mountinfo_unescape(char *s) {
        char *o = s;

        for (const char *i = s; *i; o++) {
                if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' && i[2] >= '0' && i[2] <= '7' && i[3] >= '0' &&
                    i[3] <= '7') {
                        *o = (char) ((i[1] - '0') << 6 | (i[2] - '0') << 3 | (i[3] - '0'));
                        i += 4;
                } else
                        *o = *i++;
        }
        *o = '\0';
}

static bool fstype_is_fuse(const char *type) {
        return strcmp(type, "fuse") == 0 || strcmp(type, "fuseblk") == 0 || strncmp(type, "fuse.", 5) == 0;
}

int path_under_fuse(const char *mountinfo, const char *path, char **ret_where, char **ret_type) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        f = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        while (getline(&line, &size, f) > 0) {
                char where[4096], type[256];
                const char *sep;

                /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER-OPTIONS" */
                if (sscanf(line, "%*s %*s %*s %*s %4095s", where) != 1)
                        continue;
                sep = strstr(line, " - ");
                if (!sep || sscanf(sep + 3, "%255s", type) != 1)
                        continue;
                if (!fstype_is_fuse(type))
                        continue;
                mountinfo_unescape(where);
                if (!path_startswith(path, where))
                        continue;
                if (ret_where && !(*ret_where = strdup(where)))
                        return -ENOMEM;
                if (ret_type && !(*ret_type = strdup(type))) {
                        if (ret_where)
                                *ret_where = mfree(*ret_where);
                        return -ENOMEM;
                }
                return 1;
        }
        return 0;
}

int mountinfo_line_by_id(const char *mountinfo, uint64_t id, char **ret_line, char **ret_tail) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        f = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        while (getline(&line, &size, f) > 0) {
                unsigned long long mid;
                char *sep;

                if (sscanf(line, "%llu ", &mid) != 1 || mid != id)
                        continue;
                sep = strstr(line, " - ");
                if (!sep)
                        return -EINVAL;
                *ret_tail = sep + 3;
                *ret_line = TAKE_PTR(line);
                return 0;
        }
        return -ENOENT;
}

int mountinfo_mount_by_id(const char *mountinfo, uint64_t id, char **ret_where, char **ret_options) {
        _cleanup_free_ char *line = NULL, *where = NULL, *options = NULL;
        char *tail;
        int r;

        r = mountinfo_line_by_id(mountinfo, id, &line, &tail);
        if (r < 0)
                return r;
        /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ..." */
        if (sscanf(line, "%*s %*s %*s %*s %ms %ms", &where, &options) != 2)
                return -EINVAL;
        mountinfo_unescape(where);
        *ret_where = TAKE_PTR(where);
        *ret_options = TAKE_PTR(options);
        return 0;
}

bool mount_options_have(const char *options, const char *opt) {
        size_t n = strlen(opt);

        for (const char *p = options; p && *p;) {
                size_t k = strcspn(p, ",");

                if (k == n && strncmp(p, opt, n) == 0)
                        return true;
                p += k;
                if (*p == ',')
                        p++;
        }
        return false;
}

static int mounts_under_fd(const char *mountinfo, int fd, bool at_too) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char path[4096];
        size_t size = 0;
        ssize_t n;

        n = readlink(PROC_FD(fd), path, sizeof(path) - 1);
        if (n < 0)
                return -errno;
        if ((size_t) n >= sizeof(path) - 1)
                return -ENAMETOOLONG;
        path[n] = '\0';
        if (path[0] != '/' || strstr(path, " (deleted)"))
                return -ENOENT;
        f = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        while (getline(&line, &size, f) > 0) {
                char where[4096];
                const char *p;

                /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ..." */
                if (sscanf(line, "%*s %*s %*s %*s %4095s", where) != 1)
                        continue;
                mountinfo_unescape(where);
                if ((p = path_startswith(where, path)) && (at_too || *p))
                        return 1;
        }
        return 0;
}

int mounts_below_fd(const char *mountinfo, int fd) {
        return mounts_under_fd(mountinfo, fd, true);
}

int mounts_inside_fd(const char *mountinfo, int fd) {
        return mounts_under_fd(mountinfo, fd, false);
}

int mount_id_is_fuse(const char *mountinfo, uint64_t id) {
        _cleanup_free_ char *line = NULL;
        char *tail, type[256];
        int r;

        r = mountinfo_line_by_id(mountinfo, id, &line, &tail);
        if (r < 0)
                return r;
        if (sscanf(tail, "%255s", type) != 1)
                return -EINVAL;
        return fstype_is_fuse(type);
}
