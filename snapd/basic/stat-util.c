/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/sysmacros.h>

#include "stat-util.h"

void stat_from_statx(struct stat *st, const struct statx *x) {
        *st = (struct stat) {
                .st_dev = makedev(x->stx_dev_major, x->stx_dev_minor),
                .st_ino = x->stx_ino,
                .st_mode = x->stx_mode,
                .st_nlink = x->stx_nlink,
                .st_uid = x->stx_uid,
                .st_gid = x->stx_gid,
                .st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor),
                .st_size = x->stx_size,
                .st_atim = { x->stx_atime.tv_sec, x->stx_atime.tv_nsec },
                .st_mtim = { x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec },
                .st_ctim = { x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec },
        };
}
