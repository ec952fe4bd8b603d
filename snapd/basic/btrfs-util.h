/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <linux/btrfs.h>
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

/*
 * What changed, as the filesystem itself records it (the generation of
 * the tree blocks that hold it), for the subvolume fd is in.  No user can
 * change anything in a subvolume without the leaf holding the inode's
 * item being written in the transaction that changes it, a write through
 * a shared mapping included (its ctime, at the first fault after
 * writeback); a change that fanotify never reports (mmap(2)) is seen
 * here.
 */

/* The filesystem's current transaction ID (BTRFS_IOC_FS_INFO, generation): 0 or -errno. */
int btrfs_fs_generation(int fd, uint64_t *ret);

/*
 * Write back every file's dirty data and commit (BTRFS_IOC_SYNC), then
 * commit whatever transaction began meanwhile and wait for it
 * (BTRFS_IOC_START_SYNC, BTRFS_IOC_WAIT_SYNC): *ret its ID, or the last
 * committed one's when none ran.  Every change made before the call is in
 * that transaction or an earlier one, and in the tree (a write's size,
 * extents and times reach it at writeback, btrfs's delayed inode updates
 * at the commit); every change that reaches the tree after the call
 * returned is in a later one.
 */
int btrfs_commit(int fd, uint64_t *ret);

/*
 * Every item of tree tree_id (0: the subvolume fd is in; or one of the
 * filesystem's own trees, BTRFS_QUOTA_TREE_OBJECTID, BTRFS_FS_TREE_OBJECTID)
 * with a key from range's minimum to its maximum (objectid, type and offset,
 * compared in that order), in leaves of transaction range->min_transid to
 * max_transid, in key order: fn(header, item data, userdata), as many
 * BTRFS_IOC_TREE_SEARCH_V2 calls as the items take (root only).  fn
 * returning < 0 stops the search with that, > 0 stops it with 0 (enough
 * seen).  range's tree_id and nr_items are not used.
 */
typedef int (*btrfs_search_fn)(const struct btrfs_ioctl_search_header *h, const void *data, void *userdata);
int btrfs_tree_search(int fd, uint64_t tree_id, const struct btrfs_ioctl_search_key *range,
                      btrfs_search_fn fn, void *userdata);

/*
 * Each inode number (BTRFS_FIRST_FREE_OBJECTID and up) with an item in a
 * leaf of the subvolume's tree written in transaction min_transid or
 * later (BTRFS_IOC_TREE_SEARCH_V2 with min_transid: the rest of the tree
 * is not read), each once, ascending: a superset of the inodes changed
 * since (a leaf holds the items of neighbouring inodes too), less those
 * whose inode item is among them and was last written before (every
 * change of an inode writes its inode item with the transaction's ID:
 * btrfs_inode_item.transid).  Items not
 * in the tree yet (btrfs's delayed inode updates) are not seen: commit
 * first (btrfs_sync()).  fn returning < 0 stops the search with it.
 */
int btrfs_changed_inodes(int fd, uint64_t min_transid, int (*fn)(uint64_t ino, void *userdata), void *userdata);

/* Each directory that holds a link to inode ino of fd's subvolume (INODE_REF and INODE_EXTREF items). */
int btrfs_inode_parents(int fd, uint64_t ino, int (*fn)(uint64_t parent, void *userdata), void *userdata);

/*
 * The path of inode ino (a directory, or the first link of another
 * inode) from the root of fd's subvolume, "a/b" ("" for the root)
 * (BTRFS_IOC_INO_LOOKUP; root only): 0, -ENOENT or -errno.
 */
int btrfs_inode_path(int fd, uint64_t ino, char **ret);

/*
 * Each directory of fd's subvolume that holds another subvolume
 * (BTRFS_IOC_GET_SUBVOL_ROOTREF): by its inode number.
 */
int btrfs_subvol_child_dirs(int fd, int (*fn)(uint64_t dirid, void *userdata), void *userdata);
