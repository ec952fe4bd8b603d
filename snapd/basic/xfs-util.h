/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * XFS: many inodes looked at in one call (XFS_IOC_BULKSTAT, root only),
 * by inode number, never through a name: no lookup, no mount crossed, no
 * other filesystem asked.  The fields are the in-core inode's, as statx
 * gives them, but for the size, which is the size on disk (it lags a
 * write not yet written back; never larger than statx's).  Each inode's
 * lock is taken shared for the moment it is read, as stat does: an inode
 * busy under its owner's long operation delays the call, never hangs it
 * the way a FUSE server can.
 */

typedef struct XfsStat {
        uint64_t ino;
        uint64_t size;          /* on disk */
        int64_t ctime_sec;
        uint32_t ctime_nsec;
        uint32_t mode;
        uint32_t nlink;
        uint32_t uid, gid;
} XfsStat;

/* Is fd on XFS?  1, 0 or -errno. */
int fd_is_xfs(int fd);

/*
 * The inodes of inos (n, ascending, no duplicates) on fd's XFS that exist,
 * in *ret (*ret_n of them, ascending; *ret NULL when none), in calls of
 * up to 64 inodes from the next one wanted.  It stops early, with what it
 * has, where the wanted inodes lie so far apart that a call would bring
 * fewer than 8 of them (the caller looks at the rest one by one).
 * -ENOTTY on another filesystem, -EPERM without CAP_SYS_ADMIN, -errno.
 */
int xfs_bulkstat_inodes(int fd, const uint64_t *inos, size_t n, XfsStat **ret, size_t *ret_n);

/* The record of ino in s (n, ascending), or NULL. */
const XfsStat *xfs_stat_find(const XfsStat *s, size_t n, uint64_t ino);
