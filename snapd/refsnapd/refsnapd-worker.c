/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit-status.h"
#include "hook.h"
#include "macro.h"
#include "log.h"
#include "log-event.h"
#include "path-util.h"
#include "prune.h"
#include "refsnapd-watch.h"
#include "refsnapd-worker.h"
#include "snapshot.h"
#include "time-util.h"
#include "timespan.h"

static volatile sig_atomic_t worker_cancel = 0;
/* This run took the store's lock and reached its pre hook (or where it would be). */
static bool worker_reached_pre = false;

/*
 * Run hook (pre or post) of job.  The environment is built here and is
 * all the hook gets (see hook.h and refsnapd.conf(5)).  Returns what
 * hook_run() returns.
 */
static int worker_hook(const Job *job, const char *which, const char *hook, const char *snapshot,
                       const char *result) {
        _cleanup_free_ char *e_job = NULL, *e_src = NULL, *e_store = NULL, *e_hook = NULL, *e_snap = NULL,
                            *e_result = NULL, *why = NULL;
        char *env[8];
        size_t n = 0;
        usec_t timeout = job->hook_timeout;
        char span[64];
        int r;

        if (asprintf(&e_job, "REFSNAP_JOB=%s", job->name) < 0 ||
            asprintf(&e_src, "REFSNAP_SOURCE=%s", job->source) < 0 ||
            asprintf(&e_store, "REFSNAP_STORE=%s", job->store) < 0 ||
            asprintf(&e_hook, "REFSNAP_HOOK=%s", which) < 0 ||
            (snapshot && asprintf(&e_snap, "REFSNAP_SNAPSHOT=%s", snapshot) < 0) ||
            (result && asprintf(&e_result, "REFSNAP_RESULT=%s", result) < 0))
                return -ENOMEM;
        env[n++] = (char *) "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        env[n++] = e_job;
        env[n++] = e_src;
        env[n++] = e_store;
        env[n++] = e_hook;
        if (e_snap)
                env[n++] = e_snap;
        if (e_result)
                env[n++] = e_result;
        env[n] = NULL;

        /*
         * A post hook after a cancel still runs (a quiesced service must
         * be resumed), within what the daemon gives its workers to stop.
         */
        if (worker_cancel && (timeout == 0 || timeout > HOOK_CANCEL_GRACE))
                timeout = HOOK_CANCEL_GRACE;
        /* Checked as the store is, each time: root runs only what only root could have put there. */
        r = hook_check(hook, &why);
        if (r < 0) {
                log_job(LOG_ERR, job->name, "%s_snapshot %s refused: %s", which, hook,
                        why ? why : strerror(-r));
                return r;
        }
        r = hook_run(hook, job->name, env, timeout, strcmp(which, "pre") == 0 ? &worker_cancel : NULL);
        if (r == -ETIME)
                log_job(LOG_WARNING, job->name, "%s_snapshot %s did not end within %s: killed", which, hook,
                        timespan_format(timeout, span, sizeof(span)));
        else if (r == -ECANCELED)
                log_job(LOG_NOTICE, job->name, "%s_snapshot %s: cancelled", which, hook);
        else if (r < 0)
                log_job(LOG_WARNING, job->name, "%s_snapshot %s: %s", which, hook, strerror(-r));
        else if (r > 0)
                log_job(LOG_WARNING, job->name, "%s_snapshot %s failed (exit status %d)", which, hook, r);
        return r;
}

/*
 * The daemon's watch told to ignore a directory of the snapshot
 * (refsnapd-watch.h); asked no more once refused.  Called by the walk's
 * threads at once: the group is read and cleared atomically.
 */
static void worker_quiet_dir(int dir_fd, void *userdata) {
        int *group = userdata, g = __atomic_load_n(group, __ATOMIC_RELAXED);

        if (g >= 0 && watch_quiet_dir(g, dir_fd) < 0)
                __atomic_store_n(group, -EBADF, __ATOMIC_RELAXED);
}

static void on_term(int sig) {
        worker_cancel = 1;
}

/* SIGTERM and SIGINT cancel; the worker dies with the daemon. */
static void worker_signals(void) {
        struct sigaction sa = { .sa_handler = on_term };
        sigset_t none;

        sigemptyset(&none);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGHUP, SIG_IGN);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/*
 * Run by snapshot_take() once the store is locked, with or without a pre
 * hook: a run that never got here (the job busy with another run, its
 * source or store missing) runs no post hook either, which would resume a
 * service in the middle of another run's snapshot.
 */
static int worker_pre(void *userdata) {
        const Job *job = userdata;
        int r;

        worker_reached_pre = true;
        if (!job->pre_snapshot)
                return 0;
        r = worker_hook(job, "pre", job->pre_snapshot, NULL, NULL);
        if (r != 0 && r != -ECANCELED)
                log_job(LOG_WARNING, job->name, "pre_snapshot failed: snapshot skipped");
        return r != 0;
}

static void worker_prune(const Job *job) {
        int r;

        r = snapshot_prune(job, time(NULL), false, NULL);
        if (r < 0)
                log_job(LOG_ERR, job->name, "retention: some snapshots could not be removed: %s", strerror(-r));
        else if (r > 0)
                log_job(LOG_INFO, job->name, "retention removed %d snapshot%s", r, r == 1 ? "" : "s");
}

_noreturn_ void worker_run(const Job *job, bool full, const char *description, int watch_group) {
        _cleanup_free_ char *path = NULL;
        int quiet = watch_group;
        SnapshotPre pre = { .fn = worker_pre, .userdata = (void *) job, .full = full, .description = description,
                            .dir_hook = watch_group >= 0 ? worker_quiet_dir : NULL, .dir_hook_userdata = &quiet };
        char name[SNAPSHOT_NAME_MAX] = "";
        SnapshotFacts facts;
        const char *result;
        usec_t begin, duration;
        FILE *log;
        int r, code;

        worker_signals();
        /* What the walk says, each line through the job's log, a name never raw (log.h). */
        log = log_job_stream(job->name);
        begin = now_monotonic();
        r = snapshot_take(job, NULL, &worker_cancel, log ? log : stderr, &pre, name, &facts);
        duration = now_monotonic() - begin;
        /* What is done from here on counts again (retention's removals are dropped as the daemon's own). */
        if (watch_group >= 0)
                (void) watch_quiet_end(watch_group);
        if (log)
                fflush(log);
        if (r == SNAPSHOT_SKIPPED) {
                result = worker_cancel ? "cancelled" : "failed";
                code = worker_cancel ? EXIT_CANCELLED : EXIT_SKIPPED;
        } else if (r == -ECANCELED) {
                log_job(LOG_NOTICE, job->name, "snapshot cancelled; its hidden partial tree is left for the next run");
                result = "cancelled";
                code = EXIT_CANCELLED;
        } else if (r < 0) {
                log_event(LOG_ERR, MESSAGE_ID_SNAPSHOT_FAILED, job->name,
                          &(EventFields) { .duration_usec = duration, .error = r },
                          "snapshot failed: %s", strerror(-r));
                result = "failed";
                code = EXIT_FAILED;
        } else {
                EventFields ef = { .snapshot = name, .has_counts = true, .files = facts.files,
                                   .bytes = facts.bytes, .duration_usec = duration };

                if (!facts.skipped)
                        log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_COMPLETE, job->name, &ef,
                                  "snapshot %s: %llu files, %llu directories, %llu bytes shared, %llu vanished, "
                                  "%llds; %s: %llu reused, %llu made, %llu directories compared",
                                  name, (unsigned long long) facts.files, (unsigned long long) facts.dirs,
                                  (unsigned long long) facts.bytes, (unsigned long long) facts.vanished,
                                  (long long) (facts.end - facts.start),
                                  facts.incremental ? "incremental" : "full", (unsigned long long) facts.reused,
                                  (unsigned long long) facts.made, (unsigned long long) facts.compared);
                else
                        /* The files, directories and bytes of the snapshot said as before, then why partial. */
                        log_event(LOG_WARNING, MESSAGE_ID_SNAPSHOT_PARTIAL, job->name, &ef,
                                  "snapshot %s: %llu files, %llu directories, %llu bytes shared, %llu vanished, "
                                  "%llds; snapshot %s is partial: %llu file%s skipped (listed above, and in "
                                  "%s/.facts/%s" STORE_SKIPPED_SUFFIX ")",
                                  name, (unsigned long long) facts.files, (unsigned long long) facts.dirs,
                                  (unsigned long long) facts.bytes, (unsigned long long) facts.vanished,
                                  (long long) (facts.end - facts.start), name,
                                  (unsigned long long) facts.skipped, facts.skipped == 1 ? "" : "s", job->store,
                                  name);
                result = facts.skipped ? "partial" : "ok";
                code = facts.skipped ? EXIT_PARTIAL : EXIT_OK;
                path = path_join(job->store, name);
        }
        /* After every run that reached the pre hook, however it went: the result says how. */
        if (job->post_snapshot && worker_reached_pre)
                (void) worker_hook(job, "post", job->post_snapshot, path, result);
        /*
         * Retention after a snapshot made, and after one that failed for
         * lack of space, or a full filesystem would stay full for good.
         */
        if (code == EXIT_OK || code == EXIT_PARTIAL)
                worker_prune(job);
        else if (r == -ENOSPC || r == -EDQUOT) {
                log_job(LOG_NOTICE, job->name, "out of space: applying retention to free what it may");
                worker_prune(job);
        }
        _exit(code);
}

int worker_start(const Job *job, bool full, const char *description, int watch_group, pid_t *ret) {
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0)
                worker_run(job, full, description, watch_group);
        *ret = pid;
        return 0;
}
