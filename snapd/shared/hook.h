/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>

#include "timespan.h"

/*
 * Run a job's pre_snapshot or post_snapshot hook.
 *
 * The hook runs in a process group of its own, with standard input from
 * /dev/null, its output on the daemon's (the journal), umask 022, default
 * signal handling, no descriptor of the daemon's, and a clean
 * environment: PATH and the REFSNAP_* variables given in env, nothing of
 * the daemon's (no NOTIFY_SOCKET, no INVOCATION_ID).  It is given timeout
 * (0: none); when that runs out its whole group gets SIGTERM, then
 * SIGKILL HOOK_KILL_GRACE later; when *cancel becomes set (the daemon is
 * stopping), HOOK_CANCEL_GRACE later, so that a post hook still fits in
 * the time the daemon gives its workers to stop (refsnapd-manager.c).
 */

#define HOOK_KILL_GRACE (2 * USEC_PER_SEC)
#define HOOK_CANCEL_GRACE (1 * USEC_PER_SEC)

/*
 * Run path with env (a NULL-terminated list of NAME=VALUE) and the job's
 * name as its argument.  Returns the hook's exit status (0..255), 128+N
 * when a signal N ended it, -ETIME when it ran out of time, -ECANCELED
 * when cancelled, or another -errno when it could not be run at all.
 */
int hook_run(const char *path, const char *arg, char *const env[], usec_t timeout,
             const volatile sig_atomic_t *cancel);

/*
 * May path be run as a hook?  Checked as the store is (store.h): named
 * without a symbolic link at any component, through directories that no
 * user other than root can change (root's, not writable by group or
 * others), and itself a regular file owned by root, not writable by group
 * or others, executable.  Otherwise a user could put a program of her own
 * where root runs it.  Returns 0, or -errno with *ret_why (a new string,
 * when ret_why is not NULL) saying what is wrong.
 */
int hook_check(const char *path, char **ret_why);
