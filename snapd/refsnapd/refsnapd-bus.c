/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "macro.h"
#include "reflink.h"
#include "prune.h"
#include "refsnapd-bus.h"
#include "store.h"
#include "strv.h"

/* A Snapshot() or SnapshotIfChanged() call, answered when the worker of its job ends. */
typedef struct Waiting {
        JobState *js;
        sd_bus_message *call;
        bool if_changed;        /* answered (b taken, s snapshot) */
} Waiting;

struct Bus {
        Manager *manager;
        sd_bus *bus;
        Waiting *waiting;
        size_t n_waiting;
};

static JobState *find_or_error(Manager *m, const char *name, sd_bus_error *error) {
        JobState *js = manager_find_job(m, name);

        if (!js)
                sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_JOB, "No job '%s' in the configuration", name);
        return js;
}

static int method_list_jobs(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        Bus *b = userdata;
        Manager *m = b->manager;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(sssttsb)");
        for (size_t i = 0; r >= 0 && i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];

                if (!js->job)
                        continue;
                r = sd_bus_message_append(reply, "(sssttsb)", js->name, js->job->source, js->job->store,
                                          (uint64_t) js->last, (uint64_t) (js->child ? 0 : js->next),
                                          js->result[0] ? js->result : "-", js->child != 0);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_snapshots(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_close_ int store = -EBADF;
        Bus *b = userdata;
        Manager *m = b->manager;
        const char *name;
        char **names = NULL;
        size_t n = 0;
        JobState *js;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        js = find_or_error(m, name, error);
        if (!js)
                return -ENOENT;
        store = store_open(js->job->store, false);
        if (store >= 0 && store_list(store, &names, &n) < 0)
                return sd_bus_error_set_errnof(error, errno, "Cannot list %s: %m", js->job->store);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sxxttt)");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                SnapshotFacts f = {};

                (void) store_read_facts(store, names[i], &f);
                r = sd_bus_message_append(reply, "(sxxttt)", names[i], (int64_t) f.start, (int64_t) f.end,
                                          f.files, f.bytes, f.skipped);
        }
        strv_free(names);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* Snapshot(), SnapshotFull() and SnapshotIfChanged(): the reply waits for the worker. */
static int snapshot_call(sd_bus_message *msg, Bus *b, bool if_changed, bool full, sd_bus_error *error) {
        Manager *m = b->manager;
        Waiting *w;
        const char *name;
        JobState *js;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        js = find_or_error(m, name, error);
        if (!js)
                return -ENOENT;
        if (m->stopping)
                return sd_bus_error_set(error, BUS_ERROR_STOPPING, "refsnapd is stopping");
        w = realloc(b->waiting, (b->n_waiting + 1) * sizeof(*w));
        if (!w)
                return -ENOMEM;
        b->waiting = w;
        r = if_changed ? manager_job_decide(js, 0) : manager_snapshot_now(js, full);
        if (r == -EBUSY)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY, "A snapshot of %s is running", name);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot start a snapshot of %s: %m", name);
        if (r == JOB_SKIPPED)
                return sd_bus_reply_method_return(msg, "bs", false, "");
        /* Answered when the snapshot ends. */
        b->waiting[b->n_waiting++] = (Waiting) {
                .js = js,
                .call = sd_bus_message_ref(msg),
                .if_changed = if_changed,
        };
        return 1;
}

static int method_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return snapshot_call(msg, userdata, false, false, error);
}

static int method_snapshot_full(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return snapshot_call(msg, userdata, false, true, error);
}

static int method_snapshot_if_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return snapshot_call(msg, userdata, true, false, error);
}

typedef struct PruneTask {
        Manager *manager;
        sd_bus_message *call;
        int memfd;
        pid_t pid;
        sd_event_source *source;
} PruneTask;

static PruneTask *prune_task_free(PruneTask *t) {
        if (!t)
                return NULL;
        if (t->pid > 0)
                manager_child_gone(t->manager, t->pid);
        sd_bus_message_unref(t->call);
        safe_close(t->memfd);
        sd_event_source_disable_unref(t->source);
        free(t);
        return NULL;
}

static int on_prune_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        PruneTask *t = userdata;
        _cleanup_free_ char *report = NULL;
        off_t size = lseek(t->memfd, 0, SEEK_END);
        int code = si->si_code == CLD_EXITED ? si->si_status : -1;

        report = calloc(1, size > 0 ? size + 1 : 1);
        if (report && size > 0 && pread(t->memfd, report, size, 0) < 0)
                report[0] = '\0';
        if (code < 0 || code == 255)
                sd_bus_reply_method_errorf(t->call, BUS_ERROR_FAILED, "Prune failed: %s",
                                           report && *report ? report : "killed");
        else
                sd_bus_reply_method_return(t->call, "us", (uint32_t) code, report ? report : "");
        prune_task_free(t);
        return 0;
}

/* Prune in a child: removing big trees must not stall the loop or the watchdog. */
static int method_prune(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        Manager *m = b->manager;
        PruneTask *t;
        const char *name;
        JobState *js;
        int dry_run, r;
        pid_t pid;

        r = sd_bus_message_read(msg, "sb", &name, &dry_run);
        if (r < 0)
                return r;
        js = find_or_error(m, name, error);
        if (!js)
                return -ENOENT;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->manager = m;
        t->memfd = memfd_create("refsnap-prune", MFD_CLOEXEC);
        if (t->memfd < 0) {
                prune_task_free(t);
                return -errno;
        }
        pid = fork();
        if (pid < 0) {
                prune_task_free(t);
                return -errno;
        }
        if (pid == 0) {
                FILE *f;
                sigset_t none;

                /*
                 * SIGTERM (the daemon stopping) ends the prune at once:
                 * what it retired stays hidden, for the next run to remove.
                 */
                sigemptyset(&none);
                signal(SIGTERM, SIG_DFL);
                sigprocmask(SIG_SETMASK, &none, NULL);
                f = fdopen(t->memfd, "w");

                r = f ? snapshot_prune(js->job, time(NULL), dry_run, f) : -ENOMEM;
                if (r < 0 && f)
                        fprintf(f, "%s", strerror(-r));
                if (f)
                        fclose(f);
                _exit(r < 0 ? 255 : MIN(r, 250));
        }
        r = sd_event_add_child(m->event, &t->source, pid, WEXITED, on_prune_exit, t);
        if (r >= 0) {
                r = manager_track_child(m, pid);
                if (r >= 0)
                        t->pid = pid;
        }
        if (r < 0) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                prune_task_free(t);
                return r;
        }
        t->call = sd_bus_message_ref(msg);
        return 1;
}

static int method_get_status(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        Manager *m = b->manager;

        return sd_bus_reply_method_return(msg, "sss", PROJECT_VERSION, m->stopping ? "stopping" : "running",
                                          m->status ? m->status : "");
}

static int property_get_reflink_path(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", reflink_path_to_string(reflink_path()));
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("ReflinkPath", "s", property_get_reflink_path, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_METHOD_WITH_ARGS("GetStatus", SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", version, "s", state, "s", status),
                                method_get_status, 0),
        SD_BUS_METHOD_WITH_ARGS("ListJobs", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sssttsb)", jobs),
                                method_list_jobs, 0),
        SD_BUS_METHOD_WITH_ARGS("ListSnapshots", SD_BUS_ARGS("s", job), SD_BUS_RESULT("a(sxxttt)", snapshots),
                                method_list_snapshots, 0),
        SD_BUS_METHOD_WITH_ARGS("Snapshot", SD_BUS_ARGS("s", job), SD_BUS_RESULT("s", snapshot),
                                method_snapshot, 0),
        SD_BUS_METHOD_WITH_ARGS("SnapshotFull", SD_BUS_ARGS("s", job), SD_BUS_RESULT("s", snapshot),
                                method_snapshot_full, 0),
        SD_BUS_METHOD_WITH_ARGS("SnapshotIfChanged", SD_BUS_ARGS("s", job),
                                SD_BUS_RESULT("b", taken, "s", snapshot), method_snapshot_if_changed, 0),
        SD_BUS_METHOD_WITH_ARGS("Prune", SD_BUS_ARGS("s", job, "b", dry_run),
                                SD_BUS_RESULT("u", removed, "s", report), method_prune, 0),
        SD_BUS_SIGNAL_WITH_ARGS("SnapshotStarted", SD_BUS_ARGS("s", job), 0),
        SD_BUS_SIGNAL_WITH_ARGS("SnapshotFinished",
                                SD_BUS_ARGS("s", job, "s", snapshot, "b", ok, "s", result), 0),
        SD_BUS_VTABLE_END
};

/* Answer the calls waiting for js's worker, ok or with error. */
static void answer_waiting(Bus *b, JobState *js, bool ok, const char *snapshot, const char *error,
                           const char *why) {
        size_t k = 0;

        for (size_t i = 0; i < b->n_waiting; i++) {
                Waiting *w = &b->waiting[i];

                if (w->js != js) {
                        b->waiting[k++] = *w;
                        continue;
                }
                if (ok && w->if_changed)
                        (void) sd_bus_reply_method_return(w->call, "bs", true, snapshot);
                else if (ok)
                        (void) sd_bus_reply_method_return(w->call, "s", snapshot);
                else
                        (void) sd_bus_reply_method_errorf(w->call, error, "%s", why);
                sd_bus_message_unref(w->call);
        }
        b->n_waiting = k;
}

static void on_started(JobState *js, void *userdata) {
        Bus *b = userdata;

        (void) sd_bus_emit_signal(b->bus, BUS_PATH, BUS_INTERFACE, "SnapshotStarted", "s", js->name);
}

static void on_finished(JobState *js, bool ok, const char *snapshot, void *userdata) {
        _cleanup_free_ char *why = NULL;
        Bus *b = userdata;

        if (asprintf(&why, "Snapshot of %s %s", js->name, js->result) < 0)
                why = NULL;
        answer_waiting(b, js, ok, snapshot, b->manager->stopping ? BUS_ERROR_STOPPING : BUS_ERROR_FAILED,
                       why ? why : "Snapshot failed");
        (void) sd_bus_emit_signal(b->bus, BUS_PATH, BUS_INTERFACE, "SnapshotFinished", "ssbs", js->name,
                                  ok ? snapshot : "", ok, js->result);
}

static void on_dropped(JobState *js, void *userdata) {
        _cleanup_free_ char *why = NULL;
        Bus *b = userdata;

        if (asprintf(&why, "The job %s went away", js->name) < 0)
                why = NULL;
        answer_waiting(b, js, false, NULL, BUS_ERROR_STOPPING, why ? why : "The job went away");
}

int bus_new(Manager *m, Bus **ret) {
        Bus *b;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->manager = m;
        r = sd_bus_open_system(&b->bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(b->bus, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, b);
        if (r >= 0)
                r = sd_bus_request_name(b->bus, BUS_NAME, 0);
        if (r >= 0)
                r = sd_bus_attach_event(b->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0) {
                bus_free(b);
                return r;
        }
        m->listener = (ManagerListener) {
                .started = on_started,
                .finished = on_finished,
                .dropped = on_dropped,
                .userdata = b,
        };
        *ret = b;
        return 0;
}

Bus *bus_free(Bus *b) {
        if (!b)
                return NULL;
        if (b->manager->listener.userdata == b)
                b->manager->listener = (ManagerListener) {};
        for (size_t i = 0; i < b->n_waiting; i++) {
                (void) sd_bus_reply_method_errorf(b->waiting[i].call, BUS_ERROR_STOPPING, "refsnapd is stopping");
                sd_bus_message_unref(b->waiting[i].call);
        }
        free(b->waiting);
        sd_bus_flush_close_unref(b->bus);
        free(b);
        return NULL;
}
