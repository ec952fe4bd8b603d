/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * The snapshot engine's tree walk: mirrors the tree under src_root into
 * dst_root (an empty directory).  Regular files are made by ops->clone
 * (reflinkat(REFLINK_ATTR_ALL) in the daemon); directories, symbolic
 * links, FIFOs, sockets and device nodes are made here with their
 * metadata; hard links inside the tree stay hard links.
 *
 * It works on descriptors only, opened with O_NOFOLLOW: it never follows
 * a symbolic link, never leaves src_root's mount, and never enters a
 * directory with skip_dev/skip_ino (the store).  A directory that is
 * swapped for a symbolic link while the walk runs is refused, not
 * followed.  Entries that vanish during the walk are counted and skipped.
 */

typedef struct WalkOps {
        /* Make dst_dir/name sharing the data and attributes of src_dir/name. */
        int (*clone)(int src_dir, const char *name, int dst_dir, void *userdata);
        void *userdata;
} WalkOps;

typedef struct WalkStats {
        uint64_t files, dirs, symlinks, specials, hardlinks;
        uint64_t bytes;         /* apparent size of the regular files */
        uint64_t excluded, vanished, other_mounts;
} WalkStats;

typedef struct Walk {
        const WalkOps *ops;
        char *const *exclude;
        dev_t skip_dev;
        ino_t skip_ino;
        const volatile sig_atomic_t *cancel;    /* set: stop with -ECANCELED */
        FILE *log;                              /* where problems are described */
        unsigned workers;                       /* > 1: the root's directories in parallel */
        WalkStats stats;                        /* added to */
} Walk;

/*
 * Returns 0, or -errno of the first failure that makes the snapshot
 * unusable (described on w->log); the caller removes dst_root then.
 */
int walk_tree(Walk *w, int src_root, int dst_root);

/*
 * The same for one entry: src_dir/name (of any type; a directory with
 * everything below it) becomes dst_dir/name.  An entry that vanished is
 * counted in stats.vanished and 0 is returned.
 */
int walk_entry(Walk *w, int src_dir, const char *name, int dst_dir);
