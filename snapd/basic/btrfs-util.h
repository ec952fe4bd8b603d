/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/*
 * btrfs subvolumes, by descriptor (<linux/btrfs.h>).  A subvolume's root
 * is inode 256 (BTRFS_FIRST_FREE_OBJECTID) on a btrfs; it has an st_dev
 * of its own but the mount ID of the mount it is reached through, so
 * "another mount" is still decided by mount ID (mountpoint-util.h).
 * Every call returns -errno; one on another filesystem answers 0 (the
 * questions) or -ENOTTY (the ioctls).  A descriptor may be O_PATH: the
 * ioctls are made on one reopened from it.
 */

/* Is fd on a btrfs (fstatfs: BTRFS_SUPER_MAGIC)?  1, 0 or -errno. */
int fd_is_btrfs(int fd);

/* Is fd the root directory of a btrfs subvolume?  1, 0 or -errno. */
int btrfs_is_subvol_fd(int fd);

/*
 * Is dir_fd/name a subvolume of dir_fd's own mount, a direct child of
 * dir_fd by that name (looked at with statx_no_xdev(): never following a
 * symbolic link, never entering a mount on name, which is -EXDEV)?  1, 0,
 * -ENOENT or -errno.
 */
int btrfs_is_subvol_at(int dir_fd, const char *name);

/* Make an empty subvolume dir_fd/name (BTRFS_IOC_SUBVOL_CREATE_V2); -EEXIST when name is there. */
int btrfs_subvol_make(int dir_fd, const char *name);

/*
 * Make dir_fd/name a snapshot of the subvolume whose root is src_fd
 * (BTRFS_IOC_SNAP_CREATE_V2), read-only when read_only: O(1) whatever
 * its size.  -EEXIST when name is there.
 */
int btrfs_subvol_snapshot(int src_fd, int dir_fd, const char *name, bool read_only);

/* The read-only flag of the subvolume whose root is fd: 1, 0 or -errno. */
int btrfs_subvol_get_read_only(int fd);
/* Set or clear it (BTRFS_IOC_SUBVOL_SETFLAGS): 0 or -errno. */
int btrfs_subvol_set_read_only(int fd, bool read_only);

/* The ID of the subvolume fd is in (its tree, BTRFS_IOC_INO_LOOKUP): 0 or -errno. */
int btrfs_subvol_get_id(int fd, uint64_t *ret);

/*
 * Destroy the subvolume dir_fd/name, read-only or not, with everything in
 * it, without walking it (BTRFS_IOC_SNAP_DESTROY_V2 by name, the kernel's
 * own lookup of name in dir_fd; BTRFS_IOC_SNAP_DESTROY on a kernel
 * without it).  Only a subvolume that btrfs_is_subvol_at() says is one
 * (-ENOTTY for anything else: not destroyed).  The space is given back
 * by the filesystem in the background; the name is gone at once, and
 * for good at the next transaction commit.
 */
int btrfs_subvol_destroy(int dir_fd, const char *name);

/*
 * The same by subvolume ID (BTRFS_SUBVOL_SPEC_BY_ID), fd anywhere on its
 * filesystem: -ENOENT when no such subvolume.
 */
int btrfs_subvol_destroy_by_id(int fd, uint64_t id);

/* Commit the filesystem's transaction (BTRFS_IOC_SYNC): 0 or -errno. */
int btrfs_sync(int fd);
