/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <xfs/xfs.h>    /* its own MIN and MAX: macro.h is not included beside it */

#include "stat-util.h"
#include "xfs-util.h"

#define BULK_CHUNK 64
#define BULK_MIN_USEFUL 8

int fd_is_xfs(int fd) {
        return fd_is_fs_type(fd, XFS_SUPER_MAGIC);
}

int xfs_bulkstat_inodes(int fd, const uint64_t *inos, size_t n, XfsStat **ret, size_t *ret_n) {
        struct xfs_bulkstat_req *req = NULL;
        XfsStat *out = NULL;
        size_t i = 0, k = 0;
        int r = 0;

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        req = calloc(1, XFS_BULKSTAT_REQ_SIZE(BULK_CHUNK));
        out = calloc(n, sizeof(*out));
        if (!req || !out) {
                r = -ENOMEM;
                goto out;
        }
        while (i < n) {
                size_t useful = 0;
                uint32_t got;

                req->hdr = (struct xfs_bulk_ireq) { .ino = inos[i], .icount = BULK_CHUNK };
                if (ioctl(fd, XFS_IOC_BULKSTAT, req) < 0) {
                        r = -errno;
                        goto out;
                }
                got = req->hdr.ocount < BULK_CHUNK ? req->hdr.ocount : BULK_CHUNK;
                if (got == 0)
                        break;  /* none from there on: the rest are gone */
                for (uint32_t j = 0; j < got; j++) {
                        const struct xfs_bulkstat *b = &req->bulkstat[j];

                        while (i < n && inos[i] < b->bs_ino)
                                i++;    /* not there (removed since readdir) */
                        if (i < n && inos[i] == b->bs_ino) {
                                out[k++] = (XfsStat) {
                                        .ino = b->bs_ino,
                                        .size = b->bs_size,
                                        .ctime_sec = b->bs_ctime,
                                        .ctime_nsec = b->bs_ctime_nsec,
                                        .mode = b->bs_mode,
                                        .nlink = b->bs_nlink,
                                        .uid = b->bs_uid,
                                        .gid = b->bs_gid,
                                };
                                useful++;
                                i++;
                        }
                }
                /* Wanted, and below the last one given: not there. */
                while (i < n && inos[i] <= req->bulkstat[got - 1].bs_ino)
                        i++;
                if (useful < BULK_MIN_USEFUL && got == BULK_CHUNK)
                        break;  /* far apart: one by one costs less */
        }
        *ret = k > 0 ? out : NULL;
        *ret_n = k;
        if (k > 0)
                out = NULL;
out:
        free(out);
        free(req);
        return r;
}

const XfsStat *xfs_stat_find(const XfsStat *s, size_t n, uint64_t ino) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s[mid].ino == ino)
                        return &s[mid];
                if (s[mid].ino < ino)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}
