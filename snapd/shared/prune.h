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
