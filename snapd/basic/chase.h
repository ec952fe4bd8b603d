/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

/*
 * The one path resolver of refsnap.  Every directory a program opens by
 * name (a job's source, its store, a path inside a snapshot or a live
 * tree) is opened here, on openat2(2) with RESOLVE_NO_SYMLINKS and
 * RESOLVE_NO_MAGICLINKS: a symbolic link anywhere in the path is refused
 * (-ELOOP), never followed, and a relative path never leaves the
 * directory it starts from (RESOLVE_BENEATH; ".." is refused, -EINVAL).
 */

typedef enum ChaseFlags {
        /* Never enter another mount (RESOLVE_NO_XDEV): -EXDEV. */
        CHASE_NO_XDEV = 1 << 0,
        /*
         * Make missing directories (mode 0700) and hand each one made to
         * Chase.made, which gives it its metadata.
         */
        CHASE_MKDIR = 1 << 1,
        /*
         * Refuse (-EPERM) a path whose resolution looks a name up in a
         * directory that a user other than root could change: one not
         * owned by root, or writable by group or others (a sticky one
         * only where the entry looked up is root's, since then nobody
         * else may rename or remove it).  The last directory itself is
         * not an ancestor and is not checked.
         */
        CHASE_SAFE = 1 << 2,
        /*
         * Never enter a FUSE mount (-EREMOTE), deciding by the mount each
         * step reaches, never asking it anything: each component is
         * looked up with RESOLVE_NO_XDEV, and where that says -EXDEV the
         * mount is reached with O_PATH (no open, no lookup in it), its ID
         * read by statx(AT_STATX_DONT_SYNC, no attribute asked) and looked
         * up in /proc/self/mountinfo; not FUSE, the walk goes on from it
         * (the O_PATH descriptor pins it, so the ID is not reused).  The
         * directory dir_fd (or "/") is where it starts, not checked.
         */
        CHASE_NO_FUSE = 1 << 3,
} ChaseFlags;

typedef struct Chase {
        ChaseFlags flags;
        /* CHASE_MKDIR: dir_fd is the new directory, path its name so far. */
        int (*made)(int dir_fd, const char *path, void *userdata);
        /*
         * Each directory of path that was there already (not made), once
         * opened: dir_fd is it, path its name so far.  A negative return
         * stops the walk with it.  Set, it makes chase_dir() walk path
         * one component at a time.
         */
        int (*found)(int dir_fd, const char *path, void *userdata);
        void *userdata;  /* made()'s and found()'s */
        /* Out, on failure: the length of the prefix of path that failed. */
        size_t failed_len;
        /*
         * Out, on -EPERM from CHASE_SAFE: the length of the prefix naming
         * the directory at fault ("/" for the root; 0 for dir_fd itself).
         */
        size_t unsafe_len;
} Chase;

/*
 * Open the directory path (absolute: from "/", dir_fd unused; relative:
 * beneath dir_fd; "" is dir_fd itself).  c may be NULL: no flags.
 * Returns an O_DIRECTORY descriptor, or -errno: -ELOOP (a symbolic link),
 * -ENOTDIR, -ENOENT, -EXDEV (another mount), -EPERM (CHASE_SAFE),
 * -EREMOTE (CHASE_NO_FUSE), or what made() returned.
 */
int chase_dir(int dir_fd, const char *path, Chase *c);

/*
 * The directory holding the last component of path, opened as
 * chase_dir() does, and that component (a pointer into path).  path
 * must have a last component (not "", "/" or ending in "/").
 */
int chase_parent(int dir_fd, const char *path, Chase *c, const char **ret_base);
