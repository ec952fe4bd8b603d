/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "chase.h"
#include "exit-status.h"
#include "fd-util.h"
#include "hook.h"
#include "log.h"
#include "log-event.h"
#include "mountpoint-util.h"
#include "macro.h"
#include "path-util.h"
#include "refsnapd-attribution.h"
#include "refsnapd-manager.h"
#include "refsnapd-metrics.h"
#include "refsnapd-worker.h"
#include "schedule.h"
#include "store.h"
#include "time-util.h"

#define EMIT(m, event, ...)                                                     \
        do {                                                                    \
                if ((m)->listener.event)                                        \
                        (m)->listener.event(__VA_ARGS__, (m)->listener.userdata); \
        } while (0)

static int manager_read_queue(Manager *m, bool decide);
static void manager_note_exited(Manager *m, pid_t pid);

const char *job_result_to_string(JobResult r) {
        static const char *const names[] = {
                [JOB_RESULT_NONE] = "",
                [JOB_RESULT_OK] = "ok",
                [JOB_RESULT_PARTIAL] = "partial",
                [JOB_RESULT_FAILED] = "failed",
                [JOB_RESULT_SKIPPED] = "skipped",
                [JOB_RESULT_CANCELLED] = "cancelled",
        };

        return r >= 0 && (size_t) r < ELEMENTSOF(names) ? names[r] : "";
}

static void manager_update_status(Manager *m) {
        _cleanup_free_ char *status = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&status, &size);

        if (!f)
                return;
        if (m->stopping)
                fputs("stopping", f);
        for (size_t i = 0; !m->stopping && i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];
                char a[TIMESTAMP_MAX], b[TIMESTAMP_MAX];

                fprintf(f, "%s%s: last %s (%s), next %s%s", i ? "; " : "", js->name,
                        format_usec_utc(js->last, TIMESTAMP_LOG, "never", a, sizeof(a)),
                        js->result[0] ? js->result : "-",
                        js->child ? "running" : format_usec_utc(js->next, TIMESTAMP_LOG, "never", b, sizeof(b)),
                        js->paused ? " (paused)" : "");
        }
        if (!m->stopping && m->n_jobs == 0)
                fputs("no jobs configured", f);
        if (fclose(f) == 0) {
                sd_notifyf(false, "STATUS=%s", status);
                free(m->status);
                m->status = TAKE_PTR(status);
        }
}

/* The newest snapshot in the job's store, as the time it began; its name to name. */
static usec_t newest_snapshot(const Job *job, char name[static SNAPSHOT_NAME_MAX]) {
        _cleanup_close_ int store = store_open(job->store, false);
        time_t t = 0;

        name[0] = '\0';
        if (store < 0 || store_newest(store, name) < 0) {
                name[0] = '\0';
                return 0;
        }
        (void) snapshot_name_time(name, &t);
        return (usec_t) t * USEC_PER_SEC;
}

static int job_schedule(JobState *js, usec_t when);

/* What a worker's exit status means for its job. */
static void job_note_exit(JobState *js, int code, int sig, char name[static SNAPSHOT_NAME_MAX]) {
        switch (code) {
        case EXIT_OK:
                snprintf(js->result, sizeof(js->result), "ok");
                js->last_result = JOB_RESULT_OK;
                if (js->job)
                        js->last = newest_snapshot(js->job, name);
                break;
        case EXIT_PARTIAL: {
                _cleanup_close_ int store = -EBADF;
                SnapshotFacts f = {};

                js->last_result = JOB_RESULT_PARTIAL;
                js->n_partial++;
                if (js->job)
                        js->last = newest_snapshot(js->job, name);
                store = js->job && name[0] ? store_open(js->job->store, false) : -EBADF;
                if (store >= 0 && store_read_facts(store, name, &f) == 0 && f.skipped)
                        snprintf(js->result, sizeof(js->result), "partial (%llu file%s skipped)",
                                 (unsigned long long) f.skipped, f.skipped == 1 ? "" : "s");
                else
                        snprintf(js->result, sizeof(js->result), "partial");
                break;
        }
        case EXIT_SKIPPED:
                snprintf(js->result, sizeof(js->result), "skipped by pre_snapshot");
                js->last_result = JOB_RESULT_SKIPPED;
                js->changed = true;
                break;
        case EXIT_CANCELLED:
                snprintf(js->result, sizeof(js->result), "cancelled");
                js->last_result = JOB_RESULT_CANCELLED;
                js->changed = true;
                break;
        default:
                snprintf(js->result, sizeof(js->result), "failed");
                js->last_result = JOB_RESULT_FAILED;
                js->n_failed++;
                js->changed = true;
                if (code < 0)
                        log_event(LOG_ERR, MESSAGE_ID_SNAPSHOT_FAILED, js->name, NULL,
                                  "snapshot process killed by signal %d", sig);
                break;
        }
        if (js->last_result == JOB_RESULT_OK || js->last_result == JOB_RESULT_PARTIAL) {
                snprintf(js->last_name, sizeof(js->last_name), "%s", name);
                js->last_verified = MAX(js->last_verified, js->last);
        }
}

/* While stopping: end the loop once no child is left. */
static int manager_exit_if_done(Manager *m) {
        if (!m->stopping || m->n_others > 0)
                return 0;
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->child)
                        return 0;
        return sd_event_exit(m->event, 0);
}

int manager_track_child(Manager *m, pid_t pid) {
        pid_t *p = reallocarray(m->others, m->n_others + 1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        m->others = p;
        m->others[m->n_others++] = pid;
        if (m->stopping)
                kill(pid, SIGTERM);
        return 0;
}

void manager_child_gone(Manager *m, pid_t pid) {
        /* Its last changes may still be queued: read them while it is known as the daemon's own. */
        if (manager_read_queue(m, false) != 0)
                manager_note_exited(m, pid);
        for (size_t i = 0; i < m->n_others; i++)
                if (m->others[i] == pid) {
                        m->others[i] = m->others[--m->n_others];
                        break;
                }
        /* A prune over D-Bus, most often: the store changed. */
        if (!m->stopping)
                manager_write_metrics(m);
        (void) manager_exit_if_done(m);
}

static int on_other_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        manager_child_gone(userdata, si->si_pid);
        sd_event_source_disable_unref(s);
        return 0;
}

/*
 * The worker of a job a reload dropped: cancelled, and reaped by a
 * watch of its own (no zombie), waited for at stop like any child.
 */
static void manager_adopt_worker(Manager *m, JobState *js) {
        sd_event_source *s = NULL;
        pid_t pid = js->child;

        js->child = 0;
        js->child_source = sd_event_source_disable_unref(js->child_source);
        kill(pid, SIGTERM);
        if (sd_event_add_child(m->event, &s, pid, WEXITED, on_other_exit, m) < 0 ||
            manager_track_child(m, pid) < 0) {
                /* No way to watch it: wait here rather than leave a zombie. */
                sd_event_source_disable_unref(s);
                (void) waitpid(pid, NULL, 0);
                return;
        }
        (void) sd_event_source_set_floating(s, true);
        sd_event_source_unref(s);
}

static int on_worker_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        JobState *js = userdata;
        Manager *m = js->manager;
        int code = si->si_code == CLD_EXITED ? si->si_status : -1;
        char name[SNAPSHOT_NAME_MAX] = "";

        /* Its last changes may still be queued: read them while it is known as the daemon's own. */
        if (manager_read_queue(m, false) != 0)
                manager_note_exited(m, js->child);
        js->child = 0;
        js->child_source = sd_event_source_unref(js->child_source);
        job_note_exit(js, code, si->si_status, name);
        EMIT(m, finished, js, code == EXIT_OK || code == EXIT_PARTIAL, name);
        if (m->stopping)
                /* A cancelled or killed worker leaves its hidden partial
                 * tree; the job's next run removes it, so stopping stays
                 * quick. */
                return manager_exit_if_done(m);
        if (js->job)
                job_schedule(js, schedule_next(js->job->interval, now_realtime()));
        manager_update_status(m);
        manager_write_metrics(m);
        return 0;
}

static int job_start(JobState *js, bool full, const char *description) {
        Manager *m = js->manager;
        pid_t pid;
        int r;

        js->changed = false;
        r = worker_start(js->job, full, description, js->fs ? watch_fs_group(js->fs) : -EBADF, &pid);
        if (r < 0) {
                log_job(LOG_ERR, js->name, "cannot fork: %s", strerror(-r));
                return r;
        }
        r = sd_event_add_child(m->event, &js->child_source, pid, WEXITED, on_worker_exit, js);
        if (r < 0) {
                /* Unwatched it would hold the job "running" for ever: end it now. */
                log_job(LOG_ERR, js->name, "cannot watch the snapshot process: %s", strerror(-r));
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                snprintf(js->result, sizeof(js->result), "failed");
                return r;
        }
        js->child = pid;
        snprintf(js->result, sizeof(js->result), "running");
        EMIT(m, started, js);
        manager_update_status(m);
        return 0;
}

JobState *manager_find_job(Manager *m, const char *name) {
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->job && strcmp(m->jobs[i]->name, name) == 0)
                        return m->jobs[i];
        return NULL;
}

int manager_snapshot_now(JobState *js, bool full, const char *description) {
        if (!js->job)
                return -ENOENT;
        if (js->child || js->guards > 0)
                return -EBUSY;
        if (description && snapshot_description_check(description) < 0)
                return -EINVAL;
        log_job(LOG_INFO, js->name, "%s requested over D-Bus%s", full ? "full snapshot" : "snapshot",
                description ? ", with a description" : "");
        return job_start(js, full, description);
}

static void job_watch(JobState *js);

/*
 * May on_change skip the job now?  Only when a watch saw nothing since
 * the last snapshot began, and that snapshot is younger than
 * on_change_max_skip (which covers what the kernel does not report, such
 * as writes through a shared mapping).
 */
/*
 * The job's source, opened; -EREMOTE when a FUSE mount covers it (a
 * user's, on her directory): not opened, nor stat'ed, for that would ask
 * its server, and this process must never wait on one.  Decided by the
 * mount the walk reaches (CHASE_NO_FUSE), so a mount made after the
 * table was read is not entered either.
 */
static int open_source(const Job *job) {
        if (path_under_fuse(NULL, job->source, NULL, NULL) != 0)
                return -EREMOTE;
        return chase_dir(AT_FDCWD, job->source, &(Chase) { .flags = CHASE_NO_FUSE });
}

static bool job_may_skip(JobState *js, usec_t now) {
        const Job *job = js->job;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (!job->on_change || !js->watched || js->changed || js->last == 0 ||
            (job->on_change_max_skip != 0 && now >= js->last + job->on_change_max_skip))
                return false;
        /*
         * Still the directory that was watched?  One replaced by another of
         * the same name (rm -r, mkdir) is a change, and is watched anew.
         */
        fd = open_source(job);
        if (fd < 0 || fstat(fd, &st) < 0 || !file_id_equal(file_id(&st), js->source_id)) {
                job_watch(js);
                return false;
        }
        return true;
}

/* Where refsnapctl list sees it: the store's .checked (best effort). */
static void store_note_checked(const Job *job, usec_t now) {
        _cleanup_close_ int store = store_open(job->store, false);

        if (store >= 0)
                (void) store_write_checked(store, (time_t) (now / USEC_PER_SEC));
}

static int on_pause_end(sd_event_source *s, uint64_t usec, void *userdata);
static void job_schedule_first(JobState *js, usec_t now);

/* Arm (or disarm) the timer that ends js's pause. */
static void job_arm_pause_timer(JobState *js) {
        int r = 0;

        if (!js->paused || js->paused_until == 0) {
                if (js->pause_timer)
                        (void) sd_event_source_set_enabled(js->pause_timer, SD_EVENT_OFF);
                return;
        }
        if (js->pause_timer) {
                r = sd_event_source_set_time(js->pause_timer, js->paused_until);
                if (r >= 0)
                        r = sd_event_source_set_enabled(js->pause_timer, SD_EVENT_ONESHOT);
        } else
                r = sd_event_add_time(js->manager->event, &js->pause_timer, CLOCK_REALTIME, js->paused_until,
                                      USEC_PER_SEC / 1000, on_pause_end, js);
        if (r < 0)
                log_job(LOG_ERR, js->name, "cannot arm the end of its pause (it ends at the next due time): %s",
                        strerror(-r));
}

/* What js's store says of its pause (a job taken up, or its store changed). */
static void job_read_paused(JobState *js) {
        _cleanup_close_ int store = js->job ? store_open(js->job->store, false) : -EBADF;
        uint64_t until = 0;
        int r = store < 0 ? store : store_read_paused(store, &until);

        if (r < 0 && r != -ENOENT)
                log_job(LOG_WARNING, js->name, "cannot read its pause from %s/.paused (taken as not paused): %s",
                        js->job->store, strerror(-r));
        js->paused = r >= 0;
        js->paused_until = r >= 0 ? until : 0;
        job_arm_pause_timer(js);
}

/* End js's pause in its store and in what is shown; why is logged. */
static int job_unpause(JobState *js, const char *why) {
        _cleanup_close_ int store = -EBADF;
        int r;

        if (!js->paused)
                return 0;
        store = js->job ? store_open(js->job->store, false) : -ENOENT;
        r = store < 0 ? store : store_remove_paused(store);
        if (r < 0 && r != -ENOENT) {
                log_job(LOG_ERR, js->name, "cannot end its pause (%s/.paused): %s", js->job->store, strerror(-r));
                return r;
        }
        js->paused = false;
        js->paused_until = 0;
        job_arm_pause_timer(js);
        log_job(LOG_NOTICE, js->name, "%s", why);
        EMIT(js->manager, job_changed, js);
        manager_update_status(js->manager);
        manager_write_metrics(js->manager);
        return 0;
}

/* Is js paused at now?  A pause whose end is past ends here, if its timer has not ended it yet. */
static bool job_paused(JobState *js, usec_t now) {
        if (!js->paused)
                return false;
        if (js->paused_until == 0 || now < js->paused_until)
                return true;
        (void) job_unpause(js, "its pause has ended: scheduled snapshots again");
        return false;
}

static int on_pause_end(sd_event_source *s, uint64_t usec, void *userdata) {
        JobState *js = userdata;

        if (js->paused && js->paused_until != 0 && now_realtime() >= js->paused_until &&
            job_unpause(js, "its pause has ended: scheduled snapshots again") >= 0 && js->job &&
            !js->manager->stopping)
                job_schedule_first(js, now_realtime());
        return 0;
}

int manager_pause(JobState *js, usec_t until) {
        _cleanup_close_ int store = -EBADF;
        char a[TIMESTAMP_MAX];
        int r;

        if (!js->job)
                return -ENOENT;
        if (until != 0 && until <= now_realtime())
                return -EINVAL;
        store = store_open(js->job->store, false);
        if (store < 0)
                return store;
        r = store_write_paused(store, until);
        if (r < 0)
                return r;
        js->paused = true;
        js->paused_until = until;
        job_arm_pause_timer(js);
        log_job(LOG_NOTICE, js->name, "paused until %s: its due snapshots are skipped",
                until ? format_usec_utc(until, TIMESTAMP_LOG, "-", a, sizeof(a)) : "resumed");
        EMIT(js->manager, job_changed, js);
        manager_update_status(js->manager);
        manager_write_metrics(js->manager);
        return 0;
}

int manager_resume(JobState *js) {
        int r;

        if (!js->job)
                return -ENOENT;
        if (!js->paused)
                return 0;
        r = job_unpause(js, "resumed: scheduled snapshots again");
        if (r < 0)
                return r;
        if (!js->manager->stopping)
                job_schedule_first(js, now_realtime());
        return 0;
}

void manager_job_store_changed(JobState *js) {
        char before[SNAPSHOT_NAME_MAX];

        if (!js->job)
                return;
        snprintf(before, sizeof(before), "%s", js->last_name);
        js->last = newest_snapshot(js->job, js->last_name);
        /*
         * The newest snapshot went: what the watch saw unchanged since it
         * says nothing of the one that is newest now, so on_change may not
         * skip the next due time.
         */
        if (strcmp(before, js->last_name) != 0)
                js->changed = true;
        EMIT(js->manager, job_changed, js);
        manager_update_status(js->manager);
        manager_write_metrics(js->manager);
}

void manager_job_purged(JobState *js) {
        js->changed = true;
        manager_job_store_changed(js);
}

/*
 * The due-time decision, the one the timer makes and SnapshotIfChanged
 * asks for (due 0: now, over D-Bus): an on_change job the watch saw
 * unchanged is skipped, without looking at the tree (its result and the
 * store's .checked say so); any other starts a snapshot.  Either way the
 * job's schedule is left as it is: the caller reschedules.
 */
int manager_job_decide(JobState *js, usec_t due) {
        usec_t now;
        char a[64], b[64];
        int r;

        if (!js->job)
                return -ENOENT;
        if (js->child || js->guards > 0)
                return -EBUSY;
        if (job_paused(js, now_realtime())) {
                log_job(LOG_INFO, js->name, "paused%s%s: the %s skipped", js->paused_until ? " until " : "",
                        js->paused_until ? format_usec_utc(js->paused_until, TIMESTAMP_LOG, "-", a, sizeof(a)) : "",
                        due ? "due snapshot" : "due-time decision asked over D-Bus");
                return JOB_SKIPPED;
        }
        /*
         * Changes already in the queue count: the queue is read at idle
         * priority, after timers and the bus, so read it before deciding
         * (a backlog left unread counts as a change).
         */
        (void) manager_read_queue(js->manager, true);
        now = now_realtime();
        if (!job_may_skip(js, now)) {
                if (due == 0)
                        log_job(LOG_INFO, js->name, "changed since the last snapshot: one requested over D-Bus");
                r = job_start(js, false, NULL);
                return r < 0 ? r : JOB_STARTED;
        }
        if (due == 0)
                log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_UNCHANGED, js->name, NULL,
                          "unchanged since the last snapshot, skipped (asked over D-Bus)");
        else
                log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_UNCHANGED, js->name, NULL,
                          "unchanged since the last snapshot, skipped (%llu ms after due)",
                          (unsigned long long) ((now - MIN(due, now)) / 1000));
        snprintf(js->result, sizeof(js->result), "unchanged since %s, checked %s",
                 format_usec_utc(js->last, TIMESTAMP_ISO, "-", a, sizeof(a)),
                 format_usec_utc(now, TIMESTAMP_ISO, "-", b, sizeof(b)));
        store_note_checked(js->job, now);
        js->last_skip = js->last_verified = now;
        EMIT(js->manager, job_changed, js);
        manager_update_status(js->manager);
        manager_write_metrics(js->manager);
        return JOB_SKIPPED;
}

static int on_job_due(sd_event_source *s, uint64_t usec, void *userdata) {
        JobState *js = userdata;
        int r;

        if (!js->job || js->manager->stopping)
                return 0;
        if (js->guards > 0 && !js->child) {
                /* A guard snapshot holds the store for a moment: the due one waits for it, and is not skipped. */
                log_job(LOG_INFO, js->name, "due snapshot waits for the self-service guard snapshot running");
                js->due_waiting = usec ? usec : 1;
                return 0;
        }
        r = manager_job_decide(js, usec);
        if (r == JOB_STARTED)
                return 0;       /* rescheduled when the worker exits */
        if (r == -EBUSY)
                log_job(LOG_NOTICE, js->name, "previous snapshot still running, not starting another");
        job_schedule(js, schedule_next(js->job->interval, now_realtime()));
        manager_update_status(js->manager);
        return 0;
}

void manager_guard_begin(JobState *js) {
        js->guards++;
}

void manager_guard_end(JobState *js) {
        usec_t due = js->due_waiting;

        if (js->guards > 0)
                js->guards--;
        if (js->guards > 0 || due == 0)
                return;
        js->due_waiting = 0;
        (void) on_job_due(NULL, due, js);
}

static int job_schedule(JobState *js, usec_t when) {
        Manager *m = js->manager;
        int r;

        js->next = when;
        if (js->timer) {
                r = sd_event_source_set_time(js->timer, when);
                if (r >= 0)
                        r = sd_event_source_set_enabled(js->timer, SD_EVENT_ONESHOT);
        } else
                r = sd_event_add_time(m->event, &js->timer, CLOCK_REALTIME, when, USEC_PER_SEC / 1000,
                                      on_job_due, js);
        if (r < 0)
                log_job(LOG_ERR, js->name, "cannot schedule: %s", strerror(-r));
        EMIT(m, job_changed, js);
        return r;
}

static JobState *job_state_free(JobState *js) {
        if (!js)
                return NULL;
        EMIT(js->manager, dropped, js);
        sd_event_source_disable_unref(js->timer);
        sd_event_source_disable_unref(js->child_source);
        sd_event_source_disable_unref(js->pause_timer);
        free(js->name);
        free(js);
        return NULL;
}

/*
 * Which jobs a change belongs to is the attribution's to say
 * (refsnapd-attribution.h); the walk up from a change stops being an
 * exact answer past this many directories, and says "unknown".
 */
#define ATTR_MAX_DEPTH 1024
/* How long a decision may spend reading what is queued before it. */
#define READ_QUEUE_BUDGET (USEC_PER_SEC / 5)

static void job_mark_changed(JobState *js, int level, const char *why) {
        if (js->changed || !js->job)
                return;
        js->changed = true;
        log_job(level, js->name, "changed: %s", why);
        EMIT(js->manager, job_changed, js);
}

/* The watched jobs' sources, for the attribution: source i is m->jobs[i]'s. */
static void manager_update_sources(Manager *m) {
        _cleanup_free_ FileId *ids = NULL;

        if (!m->attribution)
                return;
        ids = calloc(m->n_jobs + 1, sizeof(*ids));
        if (ids)
                for (size_t i = 0; i < m->n_jobs; i++)
                        if (m->jobs[i] && m->jobs[i]->job && m->jobs[i]->watched)
                                ids[i] = m->jobs[i]->source_id;
        if (!ids || attribution_set_sources(m->attribution, ids, m->n_jobs) < 0)
                /* Without it every change counts for every job on its filesystem. */
                m->attribution = attribution_free(m->attribution);
}

static bool on_watch_own(pid_t pid, void *userdata) {
        Manager *m = userdata;

        if (pid == getpid())
                return true;    /* the daemon itself: a store's .checked, say */
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->child == pid)
                        return true;
        for (size_t i = 0; i < m->n_others; i++)
                if (m->others[i] == pid)
                        return true;
        for (size_t i = 0; i < m->n_exited; i++)
                if (m->exited[i] == pid)
                        return true;
        return false;
}

static bool on_watch_wanted(const WatchFs *fs, void *userdata) {
        Manager *m = userdata;

        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->job && m->jobs[i]->fs == fs && !m->jobs[i]->changed)
                        return true;
        return false;
}

static void on_watch_moved(const WatchFs *fs, void *userdata) {
        Manager *m = userdata;

        if (m->attribution)
                attribution_forget(m->attribution);
}

/* Lost events are said at most this often, whether or not they change a job that was not changed yet. */
#define LOST_SAY_INTERVAL (10 * USEC_PER_SEC)

static void on_watch_unknown(const WatchFs *fs, const char *why, bool lost, void *userdata) {
        Manager *m = userdata;
        usec_t now;

        /* Lost events may have moved directories: nothing cached can be trusted. */
        if (lost && m->attribution)
                attribution_forget(m->attribution);
        /* Said even when every job there is changed already (the first of a flood's events marks them). */
        if (lost && sd_event_now(m->event, CLOCK_MONOTONIC, &now) >= 0 &&
            (m->lost_said == 0 || now >= m->lost_said + LOST_SAY_INTERVAL)) {
                const char *job = NULL;

                for (size_t i = 0; i < m->n_jobs && !job; i++)
                        if (m->jobs[i]->fs == fs && m->jobs[i]->job)
                                job = m->jobs[i]->name;
                log_notice("changes lost: %s, on the filesystem of %s: its jobs count as changed", why,
                           job ? job : "no job");
                m->lost_said = now;
        }
        /* Lost events are worth a line: a snapshot is taken for them. */
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->fs == fs)
                        job_mark_changed(m->jobs[i], lost ? LOG_NOTICE : LOG_DEBUG, why);
}

static unsigned on_watch_changed(const WatchFs *fs, int dir_fd, const char *name, void *userdata) {
        Manager *m = userdata;
        bool few[64] = {}, *hits = m->n_jobs <= ELEMENTSOF(few) ? few : calloc(m->n_jobs, sizeof(bool));
        const char *why = "a change that cannot be attributed";
        bool asked = hits && m->attribution && attribution_n_sources(m->attribution) == m->n_jobs;
        unsigned walked = 1;

        if (!asked || attribution_find(m->attribution, dir_fd, name, hits, &why) != ATTRIBUTION_JOBS)
                on_watch_unknown(fs, why, false, m);
        else
                for (size_t i = 0; i < m->n_jobs; i++)
                        if (hits[i])
                                job_mark_changed(m->jobs[i], LOG_DEBUG, "a change under its source");
        if (asked)
                walked = attribution_walked(m->attribution);
        if (hits != few)
                free(hits);
        return walked;
}

static const WatchCallbacks watch_callbacks = {
        .own = on_watch_own,
        .wanted = on_watch_wanted,
        .moved = on_watch_moved,
        .changed = on_watch_changed,
        .unknown = on_watch_unknown,
};

/*
 * Read what is queued now, before a decision that must have seen it (the
 * queue is otherwise read at idle priority, after timers): with decide, a
 * due time's, where a backlog not read within READ_QUEUE_BUDGET counts as
 * a change; without, a child's reaping.  Once every queue has been read
 * to its end, the changes of the children reaped before are all seen.
 * Returns 0 then, else non-zero.
 */
static int manager_read_queue(Manager *m, bool decide) {
        int r;

        if (!m->watch)
                return 0;
        r = watch_drain(m->watch, READ_QUEUE_BUDGET, decide, &watch_callbacks, m);
        if (r == 0)
                m->n_exited = 0;
        return r;
}

/*
 * A child of the daemon was reaped before its changes could all be read:
 * those still queued stay its own until every queue has been read to its
 * end (the last few such children, the oldest forgotten first).
 */
static void manager_note_exited(Manager *m, pid_t pid) {
        if (m->n_exited == ELEMENTSOF(m->exited)) {
                memmove(m->exited, m->exited + 1, sizeof(m->exited) - sizeof(m->exited[0]));
                m->n_exited--;
        }
        m->exited[m->n_exited++] = pid;
}

static int on_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        int r;

        r = watch_process(m->watch, &watch_callbacks, m);
        if (r < 0)
                log_warning("reading the change queue: %s; the jobs on that filesystem count as changed",
                            strerror(-r));
        return 0;
}

/* When the store says the job was last found unchanged, 0: never. */
static usec_t store_checked(const Job *job) {
        _cleanup_close_ int store = store_open(job->store, false);
        time_t t = 0;

        if (store < 0 || store_read_checked(store, &t) < 0)
                return 0;
        return (usec_t) t * USEC_PER_SEC;
}

/* The state of a job the daemon has not run yet: what its store says. */
static JobState *job_state_new(Manager *m, const Job *job) {
        JobState *js;

        js = calloc(1, sizeof(*js));
        if (!js)
                return NULL;
        js->name = strdup(job->name);
        if (!js->name) {
                free(js);
                return NULL;
        }
        js->manager = m;
        /* A restart counts as a change: the daemon could not see.  Leftovers
         * of a cancelled or interrupted run are removed by the job's next
         * run, under the store lock in the worker, not here in the loop. */
        js->changed = true;
        js->last = newest_snapshot(job, js->last_name);
        js->last_verified = MAX(js->last, store_checked(job));
        return js;
}

/* The state kept for a job of the same name; with take, it leaves m->jobs. */
static JobState *job_state_find(Manager *m, const char *name, bool take) {
        for (size_t k = 0; k < m->n_jobs; k++)
                if (m->jobs[k] && strcmp(m->jobs[k]->name, name) == 0) {
                        JobState *js = m->jobs[k];

                        if (take)
                                m->jobs[k] = NULL;
                        return js;
                }
        return NULL;
}

/*
 * Watch the job's source: its filesystem's group (shared), and the
 * source's identity.  An unwatched job counts as changed at every due
 * time: on_change never skips what nobody watched.
 */
static void job_watch(JobState *js) {
        Manager *m = js->manager;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        js->watched = false;
        js->fs = NULL;
        js->source_mnt = 0;
        manager_update_sources(m);
        if (!m->watch)
                return;
        fd = open_source(js->job);
        r = fd < 0 ? fd : fstat(fd, &st) < 0 ? -errno : 0;
        if (r >= 0)
                r = fd_mount_id(fd, &js->source_mnt);
        if (r >= 0)
                r = watch_add(m->watch, fd, js->job->source, &js->fs);
        if (r < 0) {
                js->fs = NULL;
                if (js->job->on_change)
                        log_job(LOG_WARNING, js->name,
                                "cannot watch %s (%s): on_change cannot skip anything, every due snapshot will be taken",
                                js->job->source, strerror(-r));
                return;
        }
        js->source_id = file_id(&st);
        js->watched = true;
        log_job(LOG_DEBUG, js->name, "watching %s through %s", js->job->source, watch_fs_how(js->fs));
        manager_update_sources(m);      /* and forget what was cached */
}

/* Missed a due time (downtime, suspend)?  One snapshot now. */
static void job_schedule_first(JobState *js, usec_t now) {
        if (js->child)
                return;
        if (schedule_missed(js->job->interval, js->last, now))
                job_schedule(js, now);
        else
                job_schedule(js, schedule_next(js->job->interval, now));
}

/* Keep watching only the filesystems the jobs are on. */
static void manager_retain_watches(Manager *m) {
        _cleanup_free_ WatchFs **keep = NULL;
        size_t n = 0;

        if (!m->watch)
                return;
        keep = calloc(m->n_jobs + 1, sizeof(*keep));
        if (!keep)
                return;
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->fs)
                        keep[n++] = m->jobs[i]->fs;
        watch_retain(m->watch, keep, n);
}

/*
 * The mount table changed: a job whose source is now on another mount
 * (its filesystem unmounted, mounted anew, or covered) is watched anew,
 * and counts as changed, since what happened meanwhile was not seen.  A
 * filesystem comes back as a new one to the kernel, and so is marked
 * again.
 */
static int on_mounts(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        bool any = false;

        for (size_t i = 0; i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];
                _cleanup_close_ int dir = -EBADF;
                uint64_t mnt = 0;

                if (!js->job)
                        continue;
                dir = open_source(js->job);
                if (dir >= 0 && fd_mount_id(dir, &mnt) >= 0 && mnt == js->source_mnt && js->watched)
                        continue;
                dir = safe_close(dir);
                job_mark_changed(js, LOG_INFO, "the mounts of its source changed");
                job_watch(js);
                any = true;
        }
        if (any)
                manager_retain_watches(m);
        return 0;
}

/* Do a and b snapshot the same tree into the same store? */
static bool job_same_tree(const Job *a, const Job *b) {
        if (strcmp(a->source, b->source) != 0 || strcmp(a->store, b->store) != 0 || a->n_exclude != b->n_exclude)
                return false;
        for (size_t i = 0; i < a->n_exclude; i++)
                if (strcmp(a->exclude[i], b->exclude[i]) != 0)
                        return false;
        return true;
}

/* Bring the job states in line with m->config, keeping what is known. */
static int manager_apply_config(Manager *m) {
        JobState **jobs = calloc(m->config->n_jobs + 1, sizeof(*jobs));
        usec_t now = now_realtime();

        if (!jobs)
                return -ENOMEM;
        /* New jobs first: when that fails, nothing has changed yet. */
        for (size_t i = 0; i < m->config->n_jobs; i++) {
                const Job *job = m->config->jobs[i];

                if (job_state_find(m, job->name, false))
                        continue;
                jobs[i] = job_state_new(m, job);
                if (!jobs[i]) {
                        for (size_t k = 0; k < i; k++)
                                job_state_free(jobs[k]);
                        free(jobs);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < m->config->n_jobs; i++) {
                const Job *job = m->config->jobs[i];
                JobState *js = jobs[i] ? jobs[i] : job_state_find(m, job->name, true);

                /*
                 * Another source, store or exclusion makes another job for
                 * watching and scheduling: what was seen of the old tree
                 * says nothing of the new one.
                 */
                if (js->job && !job_same_tree(js->job, job)) {
                        js->changed = true;
                        js->last = newest_snapshot(job, js->last_name);
                        js->last_verified = MAX(js->last, store_checked(job));
                        js->last_skip = 0;
                }
                js->job = job;
                job_watch(js);
                job_read_paused(js);    /* its store's word: a new job's, or another store's */
                jobs[i] = js;
                job_schedule_first(js, now);
        }
        /* Jobs no longer configured: stop their timers; a running worker is cancelled. */
        for (size_t k = 0; k < m->n_jobs; k++)
                if (m->jobs[k]) {
                        if (m->jobs[k]->child)
                                manager_adopt_worker(m, m->jobs[k]);
                        job_state_free(m->jobs[k]);
                }
        free(m->jobs);
        m->jobs = jobs;
        m->n_jobs = m->config->n_jobs;
        manager_update_sources(m);      /* the jobs' indices changed */
        manager_retain_watches(m);
        if (m->listener.jobs_changed)
                m->listener.jobs_changed(m->listener.userdata);
        return 0;
}

static void log_errors(int level, const char *errors) {
        _cleanup_free_ char *copy = strdup(errors ? errors : "");

        for (char *line = copy ? strtok(copy, "\n") : NULL; line; line = strtok(NULL, "\n"))
                log_job(level, NULL, "%s", line);
}

int manager_load_config(const char *path, const char *dropins, Config **ret, char **ret_errors) {
        _cleanup_free_ char *errors = NULL, *warnings = NULL;
        Config *c = NULL;
        int r;

        /* A job's missing or replaced source fails that job when it runs, never the start or a reload. */
        r = config_load_checked(path, dropins, &c, &errors, &warnings);
        log_errors(LOG_WARNING, warnings);
        if (r < 0) {
                log_errors(LOG_ERR, errors);
                if (ret_errors)
                        *ret_errors = TAKE_PTR(errors);
                return r;
        }
        *ret = c;
        return 0;
}

int manager_reload(Manager *m, char **errors) {
        struct timespec ts;
        Config *c = NULL;
        int r;

        /* MONOTONIC_USEC: how systemd tells this reload from an earlier one. */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading the configuration",
                   (unsigned long long) ts.tv_sec * USEC_PER_SEC + (unsigned long long) ts.tv_nsec / 1000);
        r = manager_load_config(m->config_path, m->dropins, &c, errors);
        if (r < 0)
                log_event(LOG_ERR, MESSAGE_ID_RELOAD_FAILED, NULL, &(EventFields) { .error = r },
                          "reload: the configuration above has errors; still running the previous one");
        else {
                Config *old = m->config;

                m->config = c;
                r = manager_apply_config(m);
                if (r < 0) {
                        log_event(LOG_ERR, MESSAGE_ID_RELOAD_FAILED, NULL, &(EventFields) { .error = r },
                                  "reload: %s", strerror(-r));
                        m->config = old;
                        config_free(c);
                        if (errors)
                                *errors = strdup(strerror(-r));
                } else {
                        if (m->watch && watch_is_bounded(m->watch) != c->watch_queue_bounded)
                                log_notice("reload: watch_queue = %s takes effect at the next start",
                                           c->watch_queue_bounded ? "bounded" : "unlimited");
                        config_free(old);
                        log_set_max_level(m->config->log_level);
                        log_info("reloaded: %zu job%s", m->n_jobs, m->n_jobs == 1 ? "" : "s");
                }
        }
        sd_notify(false, "READY=1");
        manager_update_status(m);
        manager_write_metrics(m);
        return r;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) manager_reload(userdata, NULL);
        return 0;
}

int manager_cancel(JobState *js) {
        if (!js->child)
                return -ESRCH;
        log_job(LOG_NOTICE, js->name, "cancelling the running snapshot (asked over D-Bus)");
        /* As at stop: the worker ends at the next entry, its partial tree stays hidden. */
        if (kill(js->child, SIGTERM) < 0)
                return -errno;
        return 0;
}

static int on_kill_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->child) {
                        log_job(LOG_WARNING, m->jobs[i]->name, "snapshot did not stop in time, killing it");
                        kill(m->jobs[i]->child, SIGKILL);
                }
        for (size_t i = 0; i < m->n_others; i++)
                kill(m->others[i], SIGKILL);
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        bool waiting = false;

        if (m->stopping)
                return 0;
        m->stopping = true;
        sd_notify(false, "STOPPING=1\nSTATUS=stopping");
        if (m->listener.stopping)
                m->listener.stopping(m->listener.userdata);
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->child) {
                        kill(m->jobs[i]->child, SIGTERM);
                        waiting = true;
                }
        /* A prune ends at once: what it retired stays hidden for the next run. */
        for (size_t i = 0; i < m->n_others; i++) {
                kill(m->others[i], SIGTERM);
                waiting = true;
        }
        if (!waiting)
                return sd_event_exit(m->event, 0);
        /*
         * Cancelled workers stop at the next entry.  One in a pre hook needs
         * at most HOOK_CANCEL_GRACE for it, then its post hook as much again
         * plus HOOK_KILL_GRACE (hook.h): 4 s, within systemd's stop timeout.
         */
        return sd_event_add_time_relative(m->event, &m->kill_timer, CLOCK_MONOTONIC,
                                          2 * HOOK_CANCEL_GRACE + HOOK_KILL_GRACE + USEC_PER_SEC / 2, 0,
                                          on_kill_timer, m);
}

int manager_init(Manager *m) {
        sigset_t mask;
        int r;

        m->mountinfo_fd = -EBADF;
        r = manager_load_config(m->config_path, m->dropins, &m->config, NULL);
        if (r < 0) {
                log_error("%s: configuration has errors, not starting", m->config_path);
                return r;
        }
        log_set_max_level(m->config->log_level);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        if ((r = sd_event_add_signal(m->event, NULL, SIGTERM, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGINT, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(m->event, NULL, SIGHUP, on_sighup, m)) < 0)
                return r;
        (void) sd_event_set_watchdog(m->event, true);

        r = attribution_new(ATTR_MAX_DEPTH, &m->attribution);
        if (r < 0)
                return r;
        r = watch_new(m->config->watch_queue_bounded, &m->watch);
        if (r < 0) {
                log_warning("cannot watch for changes (fanotify: %s): every due snapshot will be taken",
                            strerror(-r));
                return 0;
        }
        r = sd_event_add_io(m->event, &m->watch_source, watch_fd(m->watch), EPOLLIN, on_watch, m);
        if (r < 0)
                return r;
        /* Mounts and unmounts: /proc/self/mountinfo polls EPOLLPRI at each. */
        m->mountinfo_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (m->mountinfo_fd < 0)
                log_warning("cannot open /proc/self/mountinfo (%m): a filesystem mounted anew is not watched anew");
        else if ((r = sd_event_add_io(m->event, &m->mounts_source, m->mountinfo_fd, EPOLLPRI, on_mounts, m)) < 0)
                return r;
        /* Changes wait for timers, signals and the bus: a busy filesystem never starves them. */
        return sd_event_source_set_priority(m->watch_source, SD_EVENT_PRIORITY_IDLE);
}

int manager_start(Manager *m) {
        int r;

        r = manager_apply_config(m);
        if (r < 0)
                return r;
        log_info("started: %zu job%s", m->n_jobs, m->n_jobs == 1 ? "" : "s");
        sd_notify(false, "READY=1");
        manager_update_status(m);
        manager_write_metrics(m);
        return 0;
}

void manager_done(Manager *m) {
        for (size_t i = 0; i < m->n_jobs; i++)
                job_state_free(m->jobs[i]);
        m->jobs = mfree(m->jobs);
        m->n_jobs = 0;
        m->watch_source = sd_event_source_disable_unref(m->watch_source);
        m->mounts_source = sd_event_source_disable_unref(m->mounts_source);
        m->mountinfo_fd = safe_close(m->mountinfo_fd);
        m->kill_timer = sd_event_source_disable_unref(m->kill_timer);
        m->watch = watch_free(m->watch);
        m->attribution = attribution_free(m->attribution);
        m->status = mfree(m->status);
        m->others = mfree(m->others);
        m->n_others = 0;
        config_free(m->config);
        m->config = NULL;
        m->event = sd_event_unref(m->event);
}
