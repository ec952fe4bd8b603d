/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/stat.h>

/*
 * Give dst the metadata of src: owner, mode, POSIX ACLs (access, and
 * default for directories, with libacl), extended attributes (every
 * namespace the caller may read) and times.  Both are descriptors of the
 * same type of file; O_PATH descriptors are fine.  st is src's stat.
 * Symbolic links get owner and times only (with their directory and name).
 * Returns 0 or -errno.
 */
int copy_meta_fd(int src, int dst, const struct stat *st);

/*
 * A directory's inode flags NOCOW, NOATIME, NODUMP and SYNC from src to
 * dst (both opened O_RDONLY): copy_meta_fd() does it for directories.
 */
int copy_dir_flags(int src, int dst);
int copy_meta_symlink(int dirfd, const char *name, const struct stat *st);

/* Times only: directories get them after their contents are made. */
int copy_times_fd(int dst, const struct stat *st);

/* Extended attributes other than the ACLs, src to dst. */
int copy_xattrs_fd(int src, int dst);

/*
 * Remove from dst the extended attributes (other than the ACLs) that src
 * does not have: for a directory kept from an older copy and brought up to
 * date in place (copy_meta_fd() only adds and overwrites).
 */
int drop_extra_xattrs_fd(int src, int dst);
