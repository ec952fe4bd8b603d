/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A file's identity: the same inode of the same filesystem. */
typedef struct FileId {
        dev_t dev;
        ino_t ino;
} FileId;

static inline FileId file_id(const struct stat *st) {
        return (FileId) { .dev = st->st_dev, .ino = st->st_ino };
}

static inline bool file_id_is(const struct stat *st, FileId id) {
        return id.ino != 0 && st->st_dev == id.dev && st->st_ino == id.ino;
}

static inline bool file_id_equal(FileId a, FileId b) {
        return a.dev == b.dev && a.ino == b.ino;
}

static inline bool stat_inode_same(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* struct stat from what statx(2) returned. */
void stat_from_statx(struct stat *st, const struct statx *x);

/* Is fd on a filesystem of this type (statfs's f_type, <linux/magic.h>)?  1, 0 or -errno. */
int fd_is_fs_type(int fd, uint64_t magic);

/*
 * The identity of the filesystem (and, on btrfs, the subvolume) the
 * directory dir_fd (O_PATH will do) is on, stable across reboots, where
 * st_dev is not (a btrfs subvolume's anonymous device is numbered in the
 * order subvolumes are first used, a block device's in the order devices
 * appear): on btrfs a hash of the filesystem's fsid and the subvolume's
 * ID; elsewhere of the filesystem's UUID (FS_IOC_GETFSUUID; before
 * Linux 6.5 XFS's geometry, ext4's f_fsid, which is made of it).  Returns 1
 * then.  A filesystem with neither gets fs_identity_boot_local(dev), and
 * 0: an identity that holds within the current boot only (a reboot makes
 * it another, so what was recorded before is never taken for the same).
 */
int fs_identity(int dir_fd, dev_t dev, uint64_t *ret);
uint64_t fs_identity_boot_local(dev_t dev);
