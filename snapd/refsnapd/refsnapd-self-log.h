/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/*
 * The rate limit of self-service's log lines (refsnapd-self.c,
 * refsnapd-caller.c, and refsnapd-polkit.c for its action): any user may
 * call, and each call writes a line or two, so one user could push
 * refsnapd past journald's limit per service (10000 lines in 30 s by
 * default), which then drops the daemon's own events (a snapshot failed,
 * a prune failed).  Per uid SELF_LOG_BURST lines per
 * SELF_LOG_INTERVAL_SEC, SELF_LOG_TOTAL for all users together; the first
 * line refused in an interval says so, once, and the first line of that
 * uid after the interval says how many were not written.
 */
#define SELF_LOG_INTERVAL_SEC 30
#define SELF_LOG_BURST 200
#define SELF_LOG_TOTAL 2000

/* May a self-service line of uid be written now?  Counts it. */
bool self_log_allow(uid_t uid);
