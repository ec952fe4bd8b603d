/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>
#include <stdio.h>

#include "config.h"
#include "mirror.h"
#include "store.h"

/*
 * Take one snapshot of job into its store: built under .partial-NAME,
 * renamed into place only when complete, then "latest" moves to it.  On
 * any failure (or cancel) the partial tree is removed.  ops is NULL for
 * the real engine, reflinkat(REFLINK_ATTR_ALL) for each regular file.
 * Problems are described on log.  Returns 0 or -errno.
 */
int snapshot_take(const Job *job, const MirrorOps *ops, const volatile sig_atomic_t *cancel,
                  FILE *log, char name[static SNAPSHOT_NAME_MAX], SnapshotFacts *facts);
