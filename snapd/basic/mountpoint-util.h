/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

/*
 * The one mount test of refsnap: an entry is on another mount when its
 * mount ID (statx STATX_MNT_ID) differs, never when st_dev does (a btrfs
 * subvolume has an st_dev of its own on the same mount, and a bind mount
 * of the same filesystem shares st_dev with what it hides).  Opening
 * through chase_dir() with CHASE_NO_XDEV asks the kernel the same
 * question.
 */

/* The mount ID of dir_fd/name (name "" : dir_fd itself), not following a symbolic link. */
int mount_id_at(int dir_fd, const char *name, uint64_t *ret);

static inline int fd_mount_id(int fd, uint64_t *ret) {
        return mount_id_at(fd, "", ret);
}

/*
 * The mount ID of path, or of its nearest existing ancestor (named in
 * *ret_found, a new string, when not NULL).
 */
int path_mount_id_nearest(const char *path, uint64_t *ret, char **ret_found);

/*
 * Is a filesystem that fstab (a file in fstab(5) format, such as
 * /etc/fstab) lists at path or above it not mounted now?  Then path names
 * a directory of the filesystem below that mount point, not the one it is
 * meant to.  1 and that mount point in *ret_where (a new string, when not
 * NULL); 0 when each is mounted (or fstab does not exist); -errno.  The
 * root, swap and entries that are not absolute paths are left out.
 */
int fstab_unmounted_above(const char *fstab, const char *path, char **ret_where);
