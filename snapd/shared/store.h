/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "snapshot-name.h"

/*
 * A job's versioned tree:
 *   STORE/2026-12-03T07:00:00Z/      complete snapshots, named by UTC start
 *   STORE/2026-12-03T07:00:00Z-01/   a second one within the same second
 *   STORE/latest -> 2026-12-03T07:00:00Z
 *   STORE/.partial-NAME/             a snapshot being made (removed at start)
 *   STORE/.facts/NAME                what refsnapctl list shows, per snapshot
 * The store is root's, mode 0700.
 */

typedef struct SnapshotFacts {
        time_t start, end;
        uint64_t files, dirs, symlinks, specials, hardlinks, bytes, vanished, excluded;
        unsigned errors;
} SnapshotFacts;

/*
 * Open the store (an absolute path), never through a symbolic link,
 * making missing directories (mode 0700) unless !create.
 */
int store_open(const char *path, bool create);

/* The snapshots, oldest first (names only, valid and directories). */
int store_list(int store, char ***ret, size_t *n);

/* The newest snapshot's name into name; -ENOENT when there is none. */
int store_newest(int store, char name[static SNAPSHOT_NAME_MAX]);

/*
 * Take the store's lock (flock on its directory), held until the
 * descriptor is closed: one snapshot or prune of a store at a time, so a
 * snapshot being made is never taken for a leftover.  wait: block until
 * free; else -EBUSY when another holds it.
 */
int store_lock(int store, bool wait);

/*
 * Remove what an interrupted run left: .partial-* trees and stray temp
 * files.  Takes the lock; when another process holds it (a snapshot is
 * being made), removes nothing and returns 0.
 */
int store_remove_leftovers(int store, FILE *log);

int store_write_facts(int store, const char *name, const SnapshotFacts *f);
int store_read_facts(int store, const char *name, SnapshotFacts *f);
int store_set_latest(int store, const char *name);

/* Remove the snapshot NAME and its facts. */
int store_remove_snapshot(int store, const char *name);
