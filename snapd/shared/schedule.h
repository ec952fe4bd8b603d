/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "timespan.h"

/*
 * Snapshots fall due at the multiples of the job's interval on the UTC
 * wall clock (an interval of 1h: at every full hour; 15min: at :00, :15,
 * :30, :45), whatever time the daemon started.
 */

/* The first due time strictly after now. */
usec_t schedule_next(usec_t interval, usec_t now);

/* The latest due time at or before now. */
usec_t schedule_previous(usec_t interval, usec_t now);

/*
 * Whether a due time passed since the last snapshot (0: never), so that
 * one catch-up snapshot is owed: after downtime or suspend, however many
 * due times were missed, the answer is one snapshot, not a burst.
 */
bool schedule_missed(usec_t interval, usec_t last, usec_t now);
