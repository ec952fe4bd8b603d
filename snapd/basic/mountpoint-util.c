/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"
#include "mountpoint-util.h"

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
