/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "stat-util.h"
#include "refsnapd-watch.h"
#include "snapshot-name.h"
#include "timespan.h"

/*
 * refsnapd's state: the jobs, their timers and snapshot workers, the
 * change watch, the signals.  The manager knows nothing of D-Bus: it
 * tells whoever listens (refsnapd-bus.c) through ManagerListener.
 */

typedef struct Manager Manager;

/* How a job's last snapshot run ended (D-Bus LastResult). */
typedef enum JobResult {
        JOB_RESULT_NONE,        /* none since the daemon started, and none in the store */
        JOB_RESULT_OK,
        JOB_RESULT_PARTIAL,
        JOB_RESULT_FAILED,
        JOB_RESULT_SKIPPED,     /* by its pre_snapshot hook */
        JOB_RESULT_CANCELLED,
} JobResult;

/* "", "ok", "partial", "failed", "skipped", "cancelled". */
const char *job_result_to_string(JobResult r);

typedef struct JobState {
        Manager *manager;
        char *name;
        const Job *job;         /* in manager->config; NULL once dropped by a reload */
        usec_t last;            /* start of the newest snapshot, 0: none */
        usec_t next;
        bool changed;           /* since the last snapshot began */
        bool watched;
        WatchFs *fs;            /* the watch of its source's filesystem, when watched */
        FileId source_id;       /* its source, by identity: what changes are attributed to */
        uint64_t source_mnt;    /* the mount its source was on when watched */
        char result[128];
        JobResult last_result;
        char last_name[SNAPSHOT_NAME_MAX];      /* the newest snapshot, "": none */
        usec_t last_skip;       /* CLOCK_REALTIME of the last on_change skip, 0: none */
        usec_t last_verified;   /* when the store was last known to match the source: a snapshot's start, a skip */
        uint64_t n_failed, n_partial;   /* runs that failed, or ended partial, since the daemon started */
        pid_t child;
        sd_event_source *timer, *child_source;
        bool paused;            /* its due times are skipped (Pause()), as its store's .paused says */
        usec_t paused_until;    /* CLOCK_REALTIME when the pause ends, 0: until resumed */
        sd_event_source *pause_timer;   /* ends a pause with an end */
        /*
         * Self-service guard snapshots of the job running (refsnapd-self.c):
         * a due time meanwhile waits for them (due_waiting, its time) and
         * is decided when the last one ends, never skipped.
         */
        unsigned guards;
        usec_t due_waiting;
        /*
         * Its store's snapshots as last counted (the bus's SnapshotsKept,
         * which anyone may read), and the store's directory then: its
         * identity and modification time.  Counted again when either
         * differs; kept_known false: not counted yet.
         */
        bool kept_known;
        uint32_t kept;
        FileId kept_store;
        struct timespec kept_mtime;
} JobState;

typedef struct ManagerListener {
        /* A snapshot worker of js started. */
        void (*started)(JobState *js, void *userdata);
        /* It ended: ok, with the new snapshot's name, or not (js->result says how). */
        void (*finished)(JobState *js, bool ok, const char *snapshot, void *userdata);
        /* js is about to be freed (its job was dropped, or the daemon stops). */
        void (*dropped)(JobState *js, void *userdata);
        /* Something of js that is shown changed (changed, next due time, a skip). */
        void (*job_changed)(JobState *js, void *userdata);
        /* The set of jobs or their configuration changed (start, reload). */
        void (*jobs_changed)(void *userdata);
        /* The daemon is stopping. */
        void (*stopping)(void *userdata);
        void *userdata;
} ManagerListener;

struct Manager {
        const char *config_path, *dropins;
        sd_event *event;
        Config *config;
        JobState **jobs;
        size_t n_jobs;
        Watch *watch;
        sd_event_source *watch_source, *kill_timer, *mounts_source;
        int mountinfo_fd;       /* polled for mounts and unmounts */
        struct Attribution *attribution;        /* a change -> the jobs it belongs to */
        ManagerListener listener;
        char *status;           /* the last STATUS= line */
        /* Children that are no job's worker: D-Bus prunes, workers of dropped jobs. */
        pid_t *others;
        size_t n_others;
        /* Children reaped since the queues were last read to their end. */
        pid_t exited[16];
        size_t n_exited;
        /* When lost events (an overflow) were last said, CLOCK_MONOTONIC. */
        usec_t lost_said;
        bool stopping;
};

/*
 * Count pid among the daemon's other children: at stop it gets SIGTERM
 * (SIGKILL 3 s later), and the daemon exits only once it is gone.  The
 * caller watches it and calls manager_child_gone() when it exits.
 */
int manager_track_child(Manager *m, pid_t pid);
void manager_child_gone(Manager *m, pid_t pid);

/*
 * Load and check the configuration; every error is logged, and, when
 * errors is not NULL, returned there too (one per line).
 */
int manager_load_config(const char *path, const char *dropins, Config **ret, char **errors);

/*
 * Load the configuration anew and apply it (SIGHUP, D-Bus Reload()).  On
 * an error the previous configuration stays in force, and *errors (when
 * not NULL) says why: -EINVAL for errors of the configuration.
 */
int manager_reload(Manager *m, char **errors);

/*
 * Cancel js's running snapshot, as a stop does: SIGTERM to its worker,
 * which ends at the next entry and publishes nothing.  -ESRCH: none runs.
 */
int manager_cancel(JobState *js);

/*
 * Set up m (config_path and dropins given): load the configuration, the
 * event loop with its signals, the watch.  The jobs start with
 * manager_start(), once a listener is set.
 */
int manager_init(Manager *m);

/* Take up the configured jobs, then tell systemd we are ready. */
int manager_start(Manager *m);

void manager_done(Manager *m);

JobState *manager_find_job(Manager *m, const char *name);

/*
 * Start a snapshot of js now (full: a full one; description: what it is
 * stored with, or NULL), in a worker process.  -EBUSY: one is running;
 * -EINVAL: a description no snapshot may carry (snapshot_description_check()).
 */
int manager_snapshot_now(JobState *js, bool full, const char *description);

enum { JOB_STARTED = 1, JOB_SKIPPED = 2 };

/*
 * Pause js's schedule until until (µs of CLOCK_REALTIME; 0: until
 * resumed): its due times are skipped (logged), as SnapshotIfChanged
 * is; a snapshot asked for by name (Snapshot()) still runs.  Kept in
 * its store (store_write_paused()), so it outlives a restart.  -EINVAL:
 * until is past; -ENOENT: the job has no store yet.
 */
int manager_pause(JobState *js, usec_t until);
/*
 * End js's pause (a pause that had already ended is no error): a due
 * time missed meanwhile is taken up at once, as after downtime.
 */
int manager_resume(JobState *js);

/*
 * A self-service guard snapshot of js begins / has ended (in a child of
 * the daemon's, under the store's lock): a snapshot that comes due
 * meanwhile waits for it, and starts when the last one has ended;
 * manager_snapshot_now() and manager_job_decide() say -EBUSY meanwhile.
 */
void manager_guard_begin(JobState *js);
void manager_guard_end(JobState *js);

/*
 * js's store changed outside its worker (a snapshot deleted): its newest
 * snapshot is read again, and shown; when that is another, the job counts
 * as changed (on_change skips nothing until its next snapshot).
 */
void manager_job_store_changed(JobState *js);
/*
 * A path was purged from the job's snapshots (refsnapctl purge): the
 * newest may no longer hold what the source does, so on_change does not
 * skip the next due time; then as manager_job_store_changed().
 */
void manager_job_purged(JobState *js);

/*
 * The job's due-time decision, made now: JOB_SKIPPED when on_change may
 * skip it (unchanged since its last snapshot, as the watch saw it),
 * JOB_STARTED when a snapshot worker started; -EBUSY: one is running.
 * due is the due time the timer fired for, 0 when asked over D-Bus.
 */
int manager_job_decide(JobState *js, usec_t due);
