/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * The one mount test of refsnap: an entry is on another mount when its
 * mount ID (statx STATX_MNT_ID) differs, never when st_dev does (a btrfs
 * subvolume has an st_dev of its own on the same mount, and a bind mount
 * of the same filesystem shares st_dev with what it hides).  Opening
 * through chase_dir() with CHASE_NO_XDEV asks the kernel the same
 * question.
 *
 * An entry of a tree (the walk, diff, restore, removal) is looked at with
 * the *_no_xdev() calls below, never with stat(2) by name: stat(2) of a
 * mount point goes on to the root of what is mounted there and asks that
 * filesystem (FUSE: a request to its server, which refuses root without
 * allow_other and may never answer; a network filesystem: its server).
 * openat2(2) with RESOLVE_NO_XDEV stops at the mount point with -EXDEV
 * and asks the mounted filesystem nothing (fs/namei.c: handle_mounts()
 * fails once traverse_mounts() has stepped onto the mounted root, which
 * only reads the mount table; an automount point is not triggered).
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

/*
 * Open dir_fd/name, one component, with flags (O_NOFOLLOW and O_CLOEXEC
 * added; O_PATH to look without opening): never following a symbolic
 * link (with O_PATH, the link itself), never crossing into a mount.
 * Returns the descriptor, or -errno: -EXDEV when something is mounted on
 * name (or it is an automount point); the mounted filesystem is never
 * asked anything.
 */
int open_no_xdev(int dir_fd, const char *name, int flags);

/*
 * statx(2) of dir_fd/name, not following a symbolic link, or -EXDEV (a
 * mount point, not entered) or another -errno.
 */
int statx_no_xdev(int dir_fd, const char *name, unsigned mask, struct statx *ret);

/* The same as fstatat(2) with AT_SYMLINK_NOFOLLOW: 0, -EXDEV or -errno. */
int fstatat_no_xdev(int dir_fd, const char *name, struct stat *ret);

/*
 * Is path (absolute, normalized) reached through a FUSE mount, one on
 * path itself or on a directory above it?  Decided by the mount table
 * (mountinfo, NULL: /proc/self/mountinfo) alone: nothing on the path is
 * opened or stat'ed, for that would ask the FUSE server (which refuses
 * root without allow_other, and may never answer).  A user may mount
 * FUSE on a directory she owns, her home or a job's source among them;
 * nothing else she can mount.  1 (its mount point and type in *ret_where
 * and *ret_type, new strings, each when not NULL), 0, or -errno.  A FUSE
 * mount hidden under a later mount on or above it still counts (the safe
 * direction).
 */
int path_under_fuse(const char *mountinfo, const char *path, char **ret_where, char **ret_type);

/*
 * The line of the mount of ID id (statx STATX_MNT_ID; mountinfo's first
 * field) in the mount table (mountinfo, NULL: /proc/self/mountinfo), a new
 * string in *ret_line, and its "FSTYPE SOURCE SUPER-OPTIONS" part (after
 * " - ", inside that string) in *ret_tail: 0, or -errno (-ENOENT: no such
 * mount there; -EINVAL: its line has no " - ").
 */
int mountinfo_line_by_id(const char *mountinfo, uint64_t id, char **ret_line, char **ret_tail);

/*
 * The mount point (unescaped) and the mount's own options (mountinfo's
 * sixth field: "ro,nosuid,nodev,noexec,relatime", not the superblock's)
 * of the mount of ID id in the mount table (mountinfo, NULL:
 * /proc/self/mountinfo), new strings in *ret_where and *ret_options: 0,
 * or -errno (-ENOENT: no such mount there; -EINVAL: a line it cannot
 * read).
 */
int mountinfo_mount_by_id(const char *mountinfo, uint64_t id, char **ret_where, char **ret_options);

/* Is opt (one word) among options (comma-separated, as mountinfo gives them)? */
bool mount_options_have(const char *options, const char *opt);

/*
 * Is something mounted at or below the directory fd?  For a tree that is
 * removed whole without a walk (a btrfs subvolume destroyed in one call),
 * where a walk's mount ID test cannot look: the mount table (mountinfo,
 * NULL: /proc/self/mountinfo) is searched for a mount point at or below
 * the path the kernel gives fd (/proc/self/fd/N, in this process's
 * namespace, as the table's are).  1, 0, or -errno (-ENOENT: fd is no
 * longer reachable by a path).
 */
int mounts_below_fd(const char *mountinfo, int fd);
/*
 * The same, strictly below: a mount at fd's own path does not count (a
 * job's source is often the root of its filesystem's mount; a walk from
 * fd sees the tree of fd's mount whatever is mounted over it).
 */
int mounts_inside_fd(const char *mountinfo, int fd);

/*
 * Is the mount of ID id (statx STATX_MNT_ID; mountinfo's first field) a
 * FUSE mount?  By the mount table (mountinfo, NULL: /proc/self/mountinfo):
 * 1, 0, or -errno (-ENOENT: no such mount there).
 */
int mount_id_is_fuse(const char *mountinfo, uint64_t id);
