/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <acl/libacl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/acl.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "copy-meta.h"
#include "fd-util.h"
#include "macro.h"

static bool is_acl_xattr(const char *name) {
        return strcmp(name, "system.posix_acl_access") == 0 ||
               strcmp(name, "system.posix_acl_default") == 0;
}

int copy_xattrs_fd(int src, int dst) {
        _cleanup_free_ char *names = NULL, *value = NULL;
        char sp[PROC_FD_PATH_MAX], dp[PROC_FD_PATH_MAX];
        ssize_t len;

        proc_fd_path(src, sp);
        proc_fd_path(dst, dp);
        for (;;) {
                len = listxattr(sp, NULL, 0);
                if (len < 0)
                        return errno == ENOTSUP ? 0 : -errno;
                if (len == 0)
                        return 0;
                free(names);
                names = malloc(len);
                if (!names)
                        return -ENOMEM;
                len = listxattr(sp, names, len);
                if (len >= 0)
                        break;
                if (errno != ERANGE)
                        return -errno;
        }
        value = malloc(XATTR_SIZE_MAX);
        if (!value)
                return -ENOMEM;
        for (char *n = names; n < names + len; n += strlen(n) + 1) {
                ssize_t vl;

                if (is_acl_xattr(n))
                        continue;
                vl = getxattr(sp, n, value, XATTR_SIZE_MAX);
                if (vl < 0) {
                        if (errno == ENODATA)
                                continue;
                        return -errno;
                }
                if (setxattr(dp, n, value, vl, 0) < 0)
                        return -errno;
        }
        return 0;
}

int drop_extra_xattrs_fd(int src, int dst) {
        _cleanup_free_ char *names = NULL;
        char sp[PROC_FD_PATH_MAX], dp[PROC_FD_PATH_MAX];
        ssize_t len;

        proc_fd_path(src, sp);
        proc_fd_path(dst, dp);
        for (;;) {
                len = listxattr(dp, NULL, 0);
                if (len < 0)
                        return errno == ENOTSUP ? 0 : -errno;
                if (len == 0)
                        return 0;
                free(names);
                names = malloc(len);
                if (!names)
                        return -ENOMEM;
                len = listxattr(dp, names, len);
                if (len >= 0)
                        break;
                if (errno != ERANGE)
                        return -errno;
        }
        for (char *n = names; n < names + len; n += strlen(n) + 1) {
                if (is_acl_xattr(n))
                        continue;
                if (getxattr(sp, n, NULL, 0) >= 0)
                        continue;
                if (errno != ENODATA)
                        return -errno;
                if (removexattr(dp, n) < 0 && errno != ENODATA)
                        return -errno;
        }
        return 0;
}

static int copy_acl(const char *sp, const char *dp, acl_type_t type) {
        acl_t acl = acl_get_file(sp, type);
        int r = 0;

        if (!acl)
                return errno == ENOTSUP ? 0 : -errno;
        /*
         * An empty default ACL means none.  A minimal access ACL is set too:
         * the kernel then drops one the new file may have inherited.
         */
        if (type == ACL_TYPE_DEFAULT && acl_entries(acl) == 0) {
                if (acl_delete_def_file(dp) < 0 && errno != ENODATA)
                        r = -errno;
        } else if (acl_set_file(dp, type, acl) < 0)
                r = -errno;
        acl_free(acl);
        return r;
}

int copy_times_fd(int dst, const struct stat *st) {
        struct timespec ts[2] = { st->st_atim, st->st_mtim };

        return utimensat(AT_FDCWD, PROC_FD(dst), ts, 0) < 0 ? -errno : 0;
}

/*
 * The inode flags that say how a directory's new files are stored and
 * handled (lsattr's C, A, d, S), as reflinkat(2) keeps them on files.
 * Set after the directory's entries were made, so they only shape files
 * made in it later.
 */
#define DIR_FLAGS (FS_NOCOW_FL | FS_NOATIME_FL | FS_NODUMP_FL | FS_SYNC_FL)

int copy_dir_flags(int src, int dst) {
        int sf = 0, df = 0, want;

        if (ioctl(src, FS_IOC_GETFLAGS, &sf) < 0)
                return errno == ENOTTY || errno == EOPNOTSUPP ? 0 : -errno;     /* no flags here */
        if (ioctl(dst, FS_IOC_GETFLAGS, &df) < 0) {
                if ((errno == ENOTTY || errno == EOPNOTSUPP) && !(sf & DIR_FLAGS))
                        return 0;
                return -errno;
        }
        want = (df & ~DIR_FLAGS) | (sf & DIR_FLAGS);
        if (want == df)
                return 0;
        return ioctl(dst, FS_IOC_SETFLAGS, &want) < 0 ? -errno : 0;
}

/*
 * In an order a power cut at any step cannot turn into a mix that grants
 * more than the old state or the new one: first the mode bits both allow
 * (no set-id bit), then owner, ACLs, flags, extended attributes and
 * times, and the mode last.  An access ACL sets the permission bits too,
 * to the new ones; the chown clears set[ug]id, which the mode restores.
 */
int copy_meta_fd(int src, int dst, const struct stat *st) {
        char sp[PROC_FD_PATH_MAX], dp[PROC_FD_PATH_MAX];
        struct stat cur;
        int r;

        proc_fd_path(src, sp);
        proc_fd_path(dst, dp);
        if (fstat(dst, &cur) < 0)
                return -errno;
        if ((cur.st_mode & 07777) != (cur.st_mode & st->st_mode & 0777) &&
            chmod(dp, cur.st_mode & st->st_mode & 0777) < 0)
                return -errno;
        if (fchownat(dst, "", st->st_uid, st->st_gid, AT_EMPTY_PATH) < 0)
                return -errno;
        r = copy_acl(sp, dp, ACL_TYPE_ACCESS);
        if (r < 0)
                return r;
        if (S_ISDIR(st->st_mode)) {
                r = copy_acl(sp, dp, ACL_TYPE_DEFAULT);
                if (r < 0)
                        return r;
                r = copy_dir_flags(src, dst);
                if (r < 0)
                        return r;
        }
        r = copy_xattrs_fd(src, dst);
        if (r < 0)
                return r;
        r = copy_times_fd(dst, st);
        if (r < 0)
                return r;
        /* The mode last: changes the ctime only. */
        return chmod(dp, st->st_mode & 07777) < 0 ? -errno : 0;
}

int copy_meta_symlink(int dirfd, const char *name, const struct stat *st) {
        struct timespec ts[2] = { st->st_atim, st->st_mtim };

        if (fchownat(dirfd, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}
