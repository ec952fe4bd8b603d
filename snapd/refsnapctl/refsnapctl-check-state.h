/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "timespan.h"

/*
 * refsnapctl check's judgment of one job, apart from where its facts come
 * from (the daemon over D-Bus, the configuration, the store), so that the
 * host test can give it every state.  The states are the Nagios plugin
 * convention's, and its exit statuses.
 */
typedef enum CheckState {
        CHECK_OK = 0,
        CHECK_WARNING = 1,
        CHECK_CRITICAL = 2,
        CHECK_UNKNOWN = 3,
} CheckState;

typedef struct CheckJob {
        const char *result;     /* the daemon's last result (ListJobs): "ok", "partial (...)", "failed", ... */
        usec_t last;            /* start of the newest snapshot, 0: none */
        usec_t checked;         /* when it was last found unchanged (on_change's skip), 0: never */
        bool newest_partial;    /* the newest snapshot's facts say files were skipped */
        usec_t interval;        /* the job's; the default thresholds are multiples of it */
        bool paused;            /* paused now (refsnapctl pause): its scheduled snapshots are skipped */
        usec_t paused_until;    /* when that ends, 0: when resumed */
} CheckJob;

/* The default thresholds: a job is late after these many intervals without a verified snapshot. */
#define CHECK_WARN_INTERVALS 2
#define CHECK_CRIT_INTERVALS 4

/*
 * The state of j at now, with thresholds warn and crit (0: the defaults
 * from its interval) on the age of what was last verified: the newest
 * snapshot, or a later check that found the source unchanged.  A failed
 * last run is CRITICAL, and so is an age beyond crit; a paused job is a
 * WARNING (whatever its age: the pause is meant, but nothing is taken);
 * a partial one (or
 * a partial newest snapshot, even one verified unchanged since: what it
 * skipped is still missing) a WARNING, and so is an age beyond warn.  why (size bytes) says it in words;
 * *age gets the age (0 with no snapshot).
 */
CheckState check_job_state(const CheckJob *j, usec_t now, usec_t warn, usec_t crit, usec_t *age, char *why,
                           size_t size);

const char *check_state_to_string(CheckState s);

/* The worse of a and b (UNKNOWN is worse than WARNING, better than CRITICAL, as Nagios ranks it). */
CheckState check_state_worst(CheckState a, CheckState b);
