/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chase.h"
#include "dirent-util.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "path-util.h"

static int open_beneath(int dir_fd, const char *path, ChaseFlags flags) {
        struct open_how how = {
                /* No O_NOFOLLOW: RESOLVE_NO_SYMLINKS refuses a link with -ELOOP. */
                .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
        };
        int fd;

        /* CHASE_NO_FUSE: each mount is crossed by cross_mount() alone. */
        if (flags & (CHASE_NO_XDEV | CHASE_NO_FUSE))
                how.resolve |= RESOLVE_NO_XDEV;
        do
                fd = (int) syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
        while (fd < 0 && errno == EAGAIN);      /* a concurrent rename: try again */
        return fd < 0 ? -errno : fd;
}

/*
 * The mount on name in dir_fd, reached without asking it anything: an
 * O_PATH lookup (no open, nothing looked up inside it), its mount ID by a
 * statx() that asks for no attribute and may not sync (a FUSE mount
 * answers from the kernel, even one that refuses root), its type by the
 * mount table.  A FUSE one: -EREMOTE.  Else it, opened.
 */
static int cross_mount(int dir_fd, const char *name) {
        struct open_how how = {
                .flags = O_PATH | O_CLOEXEC,
                .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
        };
        _cleanup_close_ int p = -EBADF;
        struct statx x;
        int r, fd;

        do
                p = (int) syscall(SYS_openat2, dir_fd, name, &how, sizeof(how));
        while (p < 0 && errno == EAGAIN);
        if (p < 0)
                return -errno;
        if (statx(p, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &x) < 0)
                return -errno;
        if (!(x.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        r = mount_id_is_fuse(NULL, x.stx_mnt_id);
        if (r == -ENOENT)
                return -EREMOTE;        /* not in the table (detached meanwhile): not entered */
        if (r < 0)
                return r;
        if (r > 0)
                return -EREMOTE;
        fd = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* The owner of name in dir_fd (what a mount on it shows), asking no FUSE server: 0 or -errno. */
static int owner_no_fuse(int dir_fd, const char *name, uid_t *ret) {
        struct open_how how = {
                .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
                .resolve = RESOLVE_NO_MAGICLINKS | RESOLVE_BENEATH,
        };
        _cleanup_close_ int p = -EBADF;
        struct statx x;

        do
                p = (int) syscall(SYS_openat2, dir_fd, name, &how, sizeof(how));
        while (p < 0 && errno == EAGAIN);
        if (p < 0)
                return -errno;
        /* What the kernel holds: a FUSE mount is not asked (and one refusing root: an error). */
        if (statx(p, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_UID, &x) < 0)
                return -errno;
        if (!(x.stx_mask & STATX_UID))
                return -EOPNOTSUPP;
        *ret = x.stx_uid;
        return 0;
}

/* Could a user other than root change what name means in dir (stat d)? */
static bool unsafe(const struct stat *d, int dir_fd, const char *name, ChaseFlags flags) {
        struct stat st;
        uid_t uid = (uid_t) -1;

        if (d->st_uid != 0)
                return true;
        if (!(d->st_mode & (S_IWGRP | S_IWOTH)))
                return false;
        if (!(d->st_mode & S_ISVTX))
                return true;
        /* Sticky: only the entry's owner (and root) may rename it. */
        if (flags & CHASE_NO_FUSE)
                return owner_no_fuse(dir_fd, name, &uid) < 0 || uid != 0;
        return fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != 0;
}

static int start_fd(int dir_fd, const char *path) {
        if (path[0] == '/')
                return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd == AT_FDCWD)
                return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
}

int chase_dir(int dir_fd, const char *path, Chase *c) {
        Chase none = {};
        _cleanup_close_ int fd = -EBADF;
        const char *p;

        if (!c)
                c = &none;
        c->failed_len = c->unsafe_len = 0;
        if (path_has_dotdot(path)) {
                c->failed_len = strlen(path);
                return -EINVAL;
        }
        fd = start_fd(dir_fd, path);
        if (fd < 0)
                return -errno;
        p = path + strspn(path, "/");
        if (!*p)
                return TAKE_FD(fd);

        /*
         * Nothing to do on the way: one call resolves all of it.  When it
         * fails, the walk below finds which component did.
         */
        if (!(c->flags & (CHASE_MKDIR | CHASE_SAFE)) && !c->found) {
                int r = open_beneath(fd, p, c->flags);

                if (r >= 0 || r == -ENOMEM)
                        return r;
        }

        while (*p) {
                _cleanup_free_ char *name = NULL;
                size_t n = strcspn(p, "/");
                bool made = false;
                struct stat st;
                int next;

                c->failed_len = (p - path) + n;
                name = strndup(p, n);
                if (!name)
                        return -ENOMEM;
                if (strcmp(name, ".") == 0)
                        goto advance;
                if (c->flags & CHASE_SAFE) {
                        if (fstat(fd, &st) < 0)
                                return -errno;
                        if (unsafe(&st, fd, name, c->flags)) {
                                size_t d = p - path;

                                while (d > 1 && path[d - 1] == '/')
                                        d--;
                                c->unsafe_len = d;
                                return -EPERM;
                        }
                }
                next = open_beneath(fd, name, c->flags);
                if (next == -EXDEV && (c->flags & CHASE_NO_FUSE) && !(c->flags & CHASE_NO_XDEV))
                        next = cross_mount(fd, name);
                if (next == -ENOENT && (c->flags & CHASE_MKDIR)) {
                        if (mkdirat(fd, name, 0700) == 0)
                                made = true;
                        else if (errno != EEXIST)
                                return -errno;
                        next = open_beneath(fd, name, c->flags);
                        if (next == -EXDEV && (c->flags & CHASE_NO_FUSE) && !(c->flags & CHASE_NO_XDEV))
                                next = cross_mount(fd, name);
                }
                if (next < 0)
                        return next;
                safe_close(fd);
                fd = next;
                if (made && c->made) {
                        _cleanup_free_ char *sofar = strndup(path, c->failed_len);
                        int r;

                        if (!sofar)
                                return -ENOMEM;
                        /* Ours only if nobody swapped another in since. */
                        if (fstat(fd, &st) == 0 && st.st_uid == geteuid()) {
                                r = c->made(fd, sofar, c->userdata);
                                if (r < 0)
                                        return r;
                        }
                } else if (!made && c->found) {
                        _cleanup_free_ char *sofar = strndup(path, c->failed_len);
                        int r;

                        if (!sofar)
                                return -ENOMEM;
                        r = c->found(fd, sofar, c->userdata);
                        if (r < 0)
                                return r;
                }
advance:
                p += n;
                p += strspn(p, "/");
        }
        c->failed_len = 0;
        return TAKE_FD(fd);
}

int chase_parent(int dir_fd, const char *path, Chase *c, const char **ret_base) {
        _cleanup_free_ char *dir = NULL;
        const char *base;
        int r;

        r = path_split(path, &dir, &base);
        if (r < 0)
                return r;
        if (dot_or_dot_dot(base))
                return -EINVAL;
        r = chase_dir(dir_fd, *dir ? dir : (path[0] == '/' ? "/" : ""), c);
        if (r >= 0)
                *ret_base = base;
        return r;
}
