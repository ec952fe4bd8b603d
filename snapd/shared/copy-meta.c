/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <acl/libacl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
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

int copy_meta_fd(int src, int dst, const struct stat *st) {
        char sp[PROC_FD_PATH_MAX], dp[PROC_FD_PATH_MAX];
        int r;

        proc_fd_path(src, sp);
        proc_fd_path(dst, dp);
        /* Owner first: chown clears set[ug]id, which the mode restores. */
        if (fchownat(dst, "", st->st_uid, st->st_gid, AT_EMPTY_PATH) < 0)
                return -errno;
        if (chmod(dp, st->st_mode & 07777) < 0)
                return -errno;
        r = copy_acl(sp, dp, ACL_TYPE_ACCESS);
        if (r < 0)
                return r;
        if (S_ISDIR(st->st_mode)) {
                r = copy_acl(sp, dp, ACL_TYPE_DEFAULT);
                if (r < 0)
                        return r;
        }
        r = copy_xattrs_fd(src, dst);
        if (r < 0)
                return r;
        return copy_times_fd(dst, st);
}

int copy_meta_symlink(int dirfd, const char *name, const struct stat *st) {
        struct timespec ts[2] = { st->st_atim, st->st_mtim };

        if (fchownat(dirfd, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}
