/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "config.h"

/*
 * Apply the job's retention at time now: print each snapshot with the
 * verdict and why (to out, when not NULL) and, unless dry_run, remove
 * those that go.  Takes the store's lock, waiting for a snapshot being
 * made.  Returns how many went (or would), or -errno.
 */
int snapshot_prune(const Job *job, time_t now, bool dry_run, FILE *out);

/*
 * Delete the snapshot name of the store (its descriptor, store_open()ed)
 * of job job_name, as prune removes one: under the store's lock, taken
 * without waiting (-EBUSY: a snapshot, prune or restore of the job holds
 * it), renamed to a hidden name in one step (so it is never listed half
 * deleted), then removed.  "latest" is moved to the newest snapshot that
 * is left (not a guard), or removed with the last one, before the
 * rename.  A pinned snapshot is refused (-EPERM) unless force, which
 * deletes it with its pin.  -EINVAL: name is not a snapshot's name;
 * -ENOENT: no such snapshot.  What it removed (or could not) goes to out
 * when not NULL.  Returns 0 or -errno; a tree that was retired but could
 * not be removed is left hidden for the next run, and counts as deleted.
 */
int snapshot_delete(int store, const char *job_name, const char *name, bool force, FILE *out);
