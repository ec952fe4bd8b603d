/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stock-kernel path of reflinkat(): where the kernel has no
 * reflinkat(2), the same new file made from what every kernel has.  An
 * unnamed O_TMPFILE inode in newpath's directory, the source's data
 * inode flags set on it, FICLONE, then user.* and trusted.* xattrs,
 * owner, security.* xattrs, the access ACL, mode and times through its
 * descriptor, and only then a name, with linkat().  As the system call:
 * nothing is named until the file is complete (a failure, a crash or a
 * kill leaves an unnamed inode the filesystem reclaims), the data is
 * never copied (a filesystem that cannot share it answers EOPNOTSUPP),
 * and what is asked for is kept or the call fails.  Where user space
 * cannot decide what the kernel decides, it refuses (EPERM) rather than
 * give more: the mode of a file the caller neither owns nor has
 * CAP_FOWNER over, a set-group-ID bit chmod(2) dropped.  See reflinkat.2.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "reflink.h"

/* The inode flags reflinkat(2) gives the new file as the source has them. */
#define KEPT_FLAGS (FS_NOCOW_FL | FS_NOATIME_FL | FS_NODUMP_FL | FS_SYNC_FL)

static bool have_cap(int cap) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return false;
        return d[cap / 32].effective & (1U << (cap % 32));
}

/* The source, opened for reading, or -errno; EINVAL for what is not a regular file. */
static int open_source(int dirfd, const char *path, unsigned flags) {
        _cleanup_close_ int p = -EBADF;
        struct stat st;
        int fd;

        if (path[0] == '\0' && (flags & AT_EMPTY_PATH))
                p = dirfd == AT_FDCWD ? open(".", O_PATH | O_CLOEXEC) : fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        else if (path[0] == '\0')
                return -ENOENT;
        else
                p = openat(dirfd, path, O_PATH | O_CLOEXEC | ((flags & AT_SYMLINK_FOLLOW) ? 0 : O_NOFOLLOW));
        if (p < 0)
                return -errno;
        if (fstat(p, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EPERM;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        /* Read permission on the inode itself, also for an O_PATH descriptor. */
        fd = open(PROC_FD(p), O_RDONLY | O_NOCTTY | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* newpath's directory (O_PATH) and its last component, or -errno. */
static int open_parent(int dirfd, const char *path, char **ret_base) {
        _cleanup_free_ char *copy = NULL;
        const char *base;
        char *slash;
        int fd;

        if (path[0] == '\0')
                return -ENOENT;
        if (path[strlen(path) - 1] == '/')
                return -ENOENT;
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        slash = strrchr(copy, '/');
        if (slash) {
                *slash = '\0';
                base = slash + 1;
                fd = openat(dirfd, copy[0] ? copy : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        } else {
                base = copy;
                fd = dirfd == AT_FDCWD ? open(".", O_PATH | O_DIRECTORY | O_CLOEXEC) :
                                         fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        }
        if (fd < 0)
                return -errno;
        if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
                safe_close(fd);
                return -EEXIST;
        }
        *ret_base = strdup(base);
        if (!*ret_base) {
                safe_close(fd);
                return -ENOMEM;
        }
        return fd;
}

/* The source's flags of KEPT_FLAGS on the new inode, before it has data. */
static int copy_flags(int src, int dst) {
        unsigned sf = 0, df = 0, want;

        if (ioctl(src, FS_IOC_GETFLAGS, &sf) < 0)
                sf = 0;         /* a filesystem without flags: none to keep */
        if (ioctl(dst, FS_IOC_GETFLAGS, &df) < 0)
                return (sf & KEPT_FLAGS) ? -EOPNOTSUPP : 0;
        want = (df & ~KEPT_FLAGS) | (sf & KEPT_FLAGS);
        if (want == df)
                return 0;
        if (ioctl(dst, FS_IOC_SETFLAGS, &want) < 0)
                return errno == EPERM || errno == EACCES ? -EPERM : -EOPNOTSUPP;
        if (ioctl(dst, FS_IOC_GETFLAGS, &df) < 0 || (df & KEPT_FLAGS) != (sf & KEPT_FLAGS))
                return -EOPNOTSUPP;
        return 0;
}

/*
 * XFS lists a file's ACLs a second time under trusted. (its own names for
 * them, for a caller with CAP_SYS_ADMIN): the ACL is copied as the ACL,
 * or not at all, never through these.
 */
static bool is_acl_alias(const char *name) {
        return strcmp(name, "trusted.SGI_ACL_FILE") == 0 || strcmp(name, "trusted.SGI_ACL_DEFAULT") == 0;
}

/* One value of src on dst; -ENODATA when src has no such attribute (any more). */
static int copy_xattr(int src, int dst, const char *name) {
        _cleanup_free_ char *v = NULL;
        ssize_t n;

        for (;;) {
                n = fgetxattr(src, name, NULL, 0);
                if (n < 0)
                        return -errno;
                free(v);
                v = malloc(n ? n : 1);
                if (!v)
                        return -ENOMEM;
                n = fgetxattr(src, name, v, n);
                if (n >= 0)
                        break;
                if (errno != ERANGE)
                        return -errno;
        }
        return fsetxattr(dst, name, v, n, 0) < 0 ? -errno : 0;
}

/* The names of src's xattrs, a NUL-separated list, or NULL with -errno in *ret. */
static char *list_xattrs(int src, ssize_t *ret) {
        _cleanup_free_ char *names = NULL;
        ssize_t n;

        for (;;) {
                n = flistxattr(src, NULL, 0);
                if (n < 0)
                        break;
                free(names);
                names = malloc(n ? n : 1);
                if (!names) {
                        *ret = -ENOMEM;
                        return NULL;
                }
                n = flistxattr(src, names, n);
                if (n >= 0 || errno != ERANGE)
                        break;
        }
        if (n < 0) {
                *ret = errno == EOPNOTSUPP ? 0 : -errno;
                return *ret == 0 ? strdup("") : NULL;
        }
        *ret = n;
        return TAKE_PTR(names);
}

/*
 * In a user namespace other than the first, the kernel copies a file
 * capability only if translating it out of the caller's namespace gives
 * back exactly the stored value, which user space cannot see (it reads
 * the value translated): the stock path refuses to copy one there.
 */
static bool in_initial_userns(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/uid_map", "re");
        unsigned long a, b, c;

        return f && fscanf(f, "%lu %lu %lu", &a, &b, &c) == 3 && a == 0 && b == 0 && c == 4294967295UL;
}

/*
 * The xattrs of one namespace ("user.", "trusted.", "security.") from src
 * to dst.  user.* and trusted.* as the system call copies them (trusted.*
 * are listed only to a caller with CAP_SYS_ADMIN); any failure fails the
 * call, with security.* EPERM, as the system call answers.
 */
static int copy_xattrs(int src, int dst, const char *prefix) {
        _cleanup_free_ char *names = NULL;
        ssize_t n;
        int r;

        names = list_xattrs(src, &n);
        if (!names)
                return (int) n;
        for (const char *p = names; p < names + n; p += strlen(p) + 1) {
                if (strncmp(p, prefix, strlen(prefix)) != 0 || is_acl_alias(p))
                        continue;
                if (strcmp(p, "security.capability") == 0 && !in_initial_userns())
                        return -EPERM;
                r = copy_xattr(src, dst, p);
                if (r == -ENODATA)
                        continue;       /* removed meanwhile */
                if (r < 0)
                        return strcmp(prefix, "security.") == 0 && r != -ENOSPC && r != -EDQUOT ? -EPERM : r;
        }
        return 0;
}

static int copy_acl(int src, int dst) {
        int r = copy_xattr(src, dst, "system.posix_acl_access");

        if (r == -ENODATA) {
                /* None on the source: none inherited on the copy either. */
                if (fremovexattr(dst, "system.posix_acl_access") < 0 && errno != ENODATA)
                        return errno == EOPNOTSUPP ? 0 : -errno;
                return 0;
        }
        return r == -EOPNOTSUPP ? 0 : r;
}

/* Everything preserve asks for, on the unnamed dst, in the order that keeps it. */
static int copy_attributes(int src, int dst, const struct stat *st, unsigned preserve) {
        struct stat now;
        int r;

        r = copy_xattrs(src, dst, "user.");
        if (r >= 0)
                r = copy_xattrs(src, dst, "trusted.");
        if (r < 0)
                return r;
        if (preserve & REFLINK_ATTR_OWNER) {
                /* The system call's rule: the source's owner in its group, or CAP_CHOWN. */
                if (!have_cap(CAP_CHOWN) &&
                    (st->st_uid != geteuid() || fchown(dst, -1, st->st_gid) < 0))
                        return -EPERM;
                if (fchown(dst, st->st_uid, st->st_gid) < 0)
                        return errno == EINVAL ? -EOVERFLOW : -EPERM;
        }
        /* After the owner: a chown clears security.capability. */
        if (preserve & REFLINK_ATTR_SECURITY) {
                r = copy_xattrs(src, dst, "security.");
                if (r < 0)
                        return r;
        }
        if (preserve & REFLINK_ATTR_ACL) {
                r = copy_acl(src, dst);
                if (r < 0)
                        return r;
        }
        if (preserve & REFLINK_ATTR_MODE) {
                if (st->st_uid != geteuid() && !have_cap(CAP_FOWNER))
                        return -EPERM;
                if (fchmod(dst, st->st_mode & 07777) < 0)
                        return -errno;
                /* chmod(2) drops a set-group-ID bit silently; the call fails instead. */
                if (fstat(dst, &now) < 0)
                        return -errno;
                if ((now.st_mode & 07777) != (st->st_mode & 07777))
                        return -EPERM;
        }
        if (futimens(dst, (const struct timespec[2]) { st->st_atim, st->st_mtim }) < 0)
                return -errno;
        return 0;
}

int reflinkat_stock(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                    unsigned preserve, unsigned flags) {
        _cleanup_close_ int src = -EBADF, dir = -EBADF, fd = -EBADF;
        _cleanup_free_ char *base = NULL;
        struct stat st, made;
        int r;

        if ((flags & ~(unsigned) (AT_SYMLINK_FOLLOW | AT_EMPTY_PATH)) ||
            (preserve & ~(unsigned) REFLINK_ATTR_ALL) ||
            ((preserve & REFLINK_ATTR_SECURITY) && !(preserve & REFLINK_ATTR_OWNER)) ||
            ((preserve & REFLINK_ATTR_ACL) && !(preserve & REFLINK_ATTR_MODE))) {
                r = -EINVAL;
                goto fail;
        }
        src = open_source(olddirfd, oldpath, flags);
        if (src < 0) {
                r = src;
                goto fail;
        }
        if (fstat(src, &st) < 0) {
                r = -errno;
                goto fail;
        }
        dir = open_parent(newdirfd, newpath, &base);
        if (dir < 0) {
                r = dir;
                goto fail;
        }
        /* Taken already: fail before any work, as the system call does
         * (linkat() below is what decides, if the name appears meanwhile). */
        if (fstatat(dir, base, &made, AT_SYMLINK_NOFOLLOW) == 0) {
                r = -EEXIST;
                goto fail;
        }
        /* The unnamed inode, with what any new file there gets (umask, default ACL). */
        fd = openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, st.st_mode & 0777);
        if (fd < 0) {
                r = errno == EISDIR || errno == EINVAL ? -EOPNOTSUPP : -errno;
                goto fail;
        }
        r = copy_flags(src, fd);
        if (r < 0)
                goto fail;
        if (ioctl(fd, FICLONE, src) < 0) {
                /* EINVAL, ENOTTY: these two inodes cannot share extents. */
                r = errno == EINVAL || errno == ENOTTY ? -EOPNOTSUPP : -errno;
                goto fail;
        }
        /* The whole source shared, or nothing named. */
        if (fstat(fd, &made) < 0) {
                r = -errno;
                goto fail;
        }
        if (made.st_size != st.st_size) {
                r = -EIO;
                goto fail;
        }
        r = copy_attributes(src, fd, &st, preserve);
        if (r < 0)
                goto fail;
        /* The name last: linkat() of an O_TMPFILE inode never replaces one. */
        if (linkat(AT_FDCWD, PROC_FD(fd), dir, base, AT_SYMLINK_FOLLOW) < 0) {
                r = -errno;
                goto fail;
        }
        return 0;
fail:
        errno = -r;
        return -1;
}
