/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit-status.h"
#include "log.h"
#include "path-util.h"
#include "prune.h"
#include "refsnapd-worker.h"
#include "snapshot.h"

static volatile sig_atomic_t worker_cancel = 0;

static int run_hook(const char *hook, const Job *job, const char *snapshot) {
        pid_t pid = fork();
        int status;

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                setenv("REFSNAP_JOB", job->name, 1);
                setenv("REFSNAP_SOURCE", job->source, 1);
                setenv("REFSNAP_STORE", job->store, 1);
                if (snapshot)
                        setenv("REFSNAP_SNAPSHOT", snapshot, 1);
                execl(hook, hook, job->name, (char *) NULL);
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

static void worker_post_snapshot(const Job *job, const char *name) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (!job->post_snapshot)
                return;
        path = path_join(job->store, name);
        if (!path)
                return;
        r = run_hook(job->post_snapshot, job, path);
        if (r != 0)
                log_job(LOG_WARNING, job->name, "post_snapshot %s failed (%d)", job->post_snapshot, r);
}

static void worker_prune(const Job *job) {
        int r;

        r = snapshot_prune(job, time(NULL), false, NULL);
        if (r < 0)
                log_job(LOG_ERR, job->name, "retention failed: %s", strerror(-r));
        else if (r > 0)
                log_job(LOG_INFO, job->name, "retention removed %d snapshot%s", r, r == 1 ? "" : "s");
}

_noreturn_ void worker_run(const Job *job) {
        char name[SNAPSHOT_NAME_MAX];
        SnapshotFacts facts;
        int r;

        worker_signals();
        if (job->pre_snapshot) {
                r = run_hook(job->pre_snapshot, job, NULL);
                if (r != 0) {
                        log_job(LOG_WARNING, job->name, "pre_snapshot %s failed (%d): snapshot skipped",
                                job->pre_snapshot, r);
                        _exit(EXIT_SKIPPED);
                }
        }
        r = snapshot_take(job, NULL, &worker_cancel, stderr, name, &facts);
        if (r == -ECANCELED) {
                log_job(LOG_NOTICE, job->name, "snapshot cancelled, partial tree removed");
                _exit(EXIT_CANCELLED);
        }
        if (r < 0) {
                log_job(LOG_ERR, job->name, "snapshot failed: %s", strerror(-r));
                _exit(EXIT_FAILED);
        }
        log_job(LOG_INFO, job->name,
                "snapshot %s: %llu files, %llu directories, %llu bytes shared, %llu vanished, %llds",
                name, (unsigned long long) facts.files, (unsigned long long) facts.dirs,
                (unsigned long long) facts.bytes, (unsigned long long) facts.vanished,
                (long long) (facts.end - facts.start));
        worker_post_snapshot(job, name);
        worker_prune(job);
        _exit(EXIT_OK);
}

int worker_start(const Job *job, pid_t *ret) {
        pid_t pid = fork();

        if (pid < 0)
                return -errno;
        if (pid == 0)
                worker_run(job);
        *ret = pid;
        return 0;
}
