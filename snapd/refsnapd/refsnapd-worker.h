/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <sys/types.h>

#include "config.h"
#include "macro.h"

/*
 * A snapshot worker: the pre_snapshot hook, the snapshot, the
 * post_snapshot hook, retention, in a process of its own, so that the
 * daemon's loop, its watchdog and status queries go on during a long
 * snapshot and a stop can cancel it (SIGTERM: the partial tree is
 * removed).  It exits with EXIT_OK, EXIT_FAILED, EXIT_SKIPPED (the
 * pre_snapshot hook failed) or EXIT_CANCELLED (exit-status.h).
 */

/*
 * Fork a worker for job (full: a full snapshot, refsnapctl snapshot
 * --full; description: the snapshot's, or NULL); its pid in *ret.
 * watch_group: the daemon's fanotify group of the job's filesystem
 * (refsnapd-watch.h), or -EBADF: the worker has it ignore the
 * directories of the snapshot it writes (watch_quiet_dir()).
 */
int worker_start(const Job *job, bool full, const char *description, int watch_group, pid_t *ret);

/* The worker's work, in this process (refsnapd --run-once: no watch_group).  Never returns. */
_noreturn_ void worker_run(const Job *job, bool full, const char *description, int watch_group);
