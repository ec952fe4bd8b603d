/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>
#include <stdio.h>

#include "config.h"
#include "store.h"
#include "walk.h"

/*
 * Take one snapshot of job into its store: built under .partial-NAME,
 * renamed into place only when complete, then "latest" moves to it.  On
 * any failure (or cancel) the partial tree is removed.  ops is NULL for
 * the real engine, reflinkat(REFLINK_ATTR_ALL) for each regular file.
 * Problems are described on log.  Returns 0 or -errno.
 */
int snapshot_take(const Job *job, const WalkOps *ops, const volatile sig_atomic_t *cancel,
                  FILE *log, char name[static SNAPSHOT_NAME_MAX], SnapshotFacts *facts);

/*
 * Apply the job's retention at time now: print each snapshot with the
 * verdict and why (to out, when not NULL) and, unless dry_run, remove
 * those that go.  Returns how many went (or would), or -errno.
 */
int snapshot_prune(const Job *job, time_t now, bool dry_run, FILE *out);

/* The engine's clone step: reflinkat(src_dir, name, dst_dir, name, ALL). */
extern const WalkOps snapshot_reflink_ops;

/*
 * How many workers share a snapshot's top-level directories: one per
 * online CPU, at most SNAPSHOT_WORKERS_MAX.
 */
#define SNAPSHOT_WORKERS_MAX 4
unsigned snapshot_workers(void);
