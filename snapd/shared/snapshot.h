/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "config.h"
#include "mirror.h"
#include "store.h"

typedef struct SnapshotPre {
        /*
         * What runs with the store locked, before anything is written (the
         * pre_snapshot hook): 0 goes on; anything else skips the snapshot.
         */
        int (*fn)(void *userdata);
        void *userdata;
        /* A guard snapshot, taken by a restore of what it replaces: so marked in the facts. */
        bool guard;
        /*
         * A guard of these paths only (relative to the source, normalized;
         * NULL: the whole tree): each that is there, with everything below
         * it and the job's exclude patterns not applied inside it (a guard
         * holds at least what the restore may replace), and the
         * directories above it; the paths it holds are listed in the
         * facts (store_read_guarded()).
         */
        char *const *paths;
        /* A full snapshot, whatever the previous one's manifest (refsnapctl snapshot --full). */
        bool full;
        /*
         * What the one who asked for it says of it (refsnapctl snapshot
         * --description; checked by snapshot_description_check()), written
         * beside its facts before it is published; NULL: none.
         */
        const char *description;
        /* NULL, or: Mirror.dir_hook, for each directory of the snapshot the walk writes in. */
        void (*dir_hook)(int dir_fd, void *userdata);
        void *dir_hook_userdata;
} SnapshotPre;

/* snapshot_take() when pre skipped the snapshot. */
#define SNAPSHOT_SKIPPED 1

/*
 * Take one snapshot of job into its store: incremental when it can be
 * (the previous snapshot, "latest", has a usable manifest of the same
 * source and excludes, and no full one is asked for by pre->full or due
 * by job->full_every: unchanged files are then that snapshot's inodes,
 * see MirrorReuse), else full; either way its manifest is written beside
 * its facts (not for a guard).  Built under .partial-NAME (on btrfs a
 * subvolume: when incremental a writable snapshot of the previous one,
 * brought up to date in place, REUSE_INPLACE; made read-only once
 * complete), synced, renamed into place only when complete, then "latest" moves to it.  On any failure
 * the partial tree is removed; a cancelled one is left hidden for the
 * next run.  ops is NULL for the real engine, reflinkat(REFLINK_ATTR_ALL)
 * for each regular file.  pre (may be NULL) runs once the store is
 * locked.  Problems, and why a snapshot is full when one could have been
 * incremental, are described on log.  Returns 0, SNAPSHOT_SKIPPED or
 * -errno.
 */
int snapshot_take(const Job *job, const MirrorOps *ops, const volatile sig_atomic_t *cancel,
                  FILE *log, const SnapshotPre *pre, char name[static SNAPSHOT_NAME_MAX],
                  SnapshotFacts *facts);
