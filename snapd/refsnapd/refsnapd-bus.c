/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "escape.h"
#include "log.h"
#include "macro.h"
#include "reflink.h"
#include "prune.h"
#include "purge.h"
#include "refsnapd-bus.h"
#include "refsnapd-bus-options.h"
#include "refsnapd-bus-child.h"
#include "refsnapd-log-control.h"
#include "refsnapd-polkit.h"
#include "refsnapd-self.h"
#include "stat-util.h"
#include "store.h"
#include "strv.h"
#include "time-util.h"

typedef enum WaitKind {
        WAIT_SNAPSHOT,          /* Snapshot(), SnapshotFull(): answered (s snapshot) */
        WAIT_IF_CHANGED,        /* SnapshotIfChanged(): answered (b taken, s snapshot) */
        WAIT_CANCEL,            /* Cancel(): answered (s result) */
} WaitKind;

/* A call answered when the worker of its job ends. */
typedef struct Waiting {
        JobState *js;
        sd_bus_message *call;
        WaitKind kind;
} Waiting;

struct Bus {
        Manager *manager;
        sd_bus *bus;
        Waiting *waiting;
        size_t n_waiting;
        /*
         * PropertiesChanged, coalesced: what changed is marked here, and
         * said once, from a deferred source at idle priority, however
         * often it changed in between.
         */
        sd_event_source *emit;
        JobState **dirty;
        size_t n_dirty;
        bool manager_dirty;
        /* The job objects announced (InterfacesAdded), by name. */
        char **published;
        size_t n_published;
        /* A job being dropped: still found, so that InterfacesRemoved can name its interfaces. */
        JobState *dropping;
        /* The calls waiting for polkit's answer (refsnapd-polkit.h). */
        PolkitRegistry *polkit;
        /* Self-service: the callers being identified, the workers per user (refsnapd-self.h). */
        SelfService *self;
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

/*
 * The options of SnapshotWithOptions(): "full" (b) and "description" (s,
 * checked by snapshot_description_check()); any other is InvalidArgs.
 */
static int read_snapshot_options(sd_bus_message *msg, bool *full, const char **description, sd_bus_error *error) {
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(msg, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, "full") == 0) {
                        int v;

                        r = sd_bus_message_read(msg, "v", "b", &v);
                        *full = v;
                } else if (strcmp(key, "description") == 0) {
                        r = sd_bus_message_read(msg, "v", "s", description);
                        if (r >= 0 && snapshot_description_check(*description) < 0)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "A description is one line of 1 to %d bytes of UTF-8 "
                                                         "with no control character", SNAPSHOT_DESCRIPTION_MAX);
                } else
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option '%s'", key);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(msg);
}

/*
 * Snapshot(), SnapshotFull(), SnapshotIfChanged() and
 * SnapshotWithOptions() (with_options: its a{sv}): the reply waits for
 * the worker.
 */
static int snapshot_call(sd_bus_message *msg, Bus *b, bool if_changed, bool full, bool with_options,
                         sd_bus_error *error) {
        const char *description = NULL;
        Manager *m = b->manager;
        Waiting *w;
        const char *name;
        JobState *js;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        if (with_options) {
                r = read_snapshot_options(msg, &full, &description, error);
                if (r < 0)
                        return r;
        }
        js = find_or_error(m, name, error);
        if (!js)
                return -ENOENT;
        if (m->stopping)
                return sd_bus_error_set(error, BUS_ERROR_STOPPING, "refsnapd is stopping");
        w = realloc(b->waiting, (b->n_waiting + 1) * sizeof(*w));
        if (!w)
                return -ENOMEM;
        b->waiting = w;
        r = if_changed ? manager_job_decide(js, 0) : manager_snapshot_now(js, full, description);
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
                .kind = if_changed ? WAIT_IF_CHANGED : WAIT_SNAPSHOT,
        };
        return 1;
}

/* Cancel(s job, a{sv} options) -> (s result): answered when the worker has ended. */
static int method_cancel(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        Waiting *w;
        const char *name;
        JobState *js;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        r = bus_read_no_options(msg, error);
        if (r < 0)
                return r;
        js = find_or_error(b->manager, name, error);
        if (!js)
                return -ENOENT;
        w = reallocarray(b->waiting, b->n_waiting + 1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        b->waiting = w;
        r = manager_cancel(js);
        if (r == -ESRCH)
                return sd_bus_error_setf(error, BUS_ERROR_NOT_RUNNING, "No snapshot of %s is running", name);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot cancel the snapshot of %s: %m", name);
        b->waiting[b->n_waiting++] = (Waiting) {
                .js = js,
                .call = sd_bus_message_ref(msg),
                .kind = WAIT_CANCEL,
        };
        return 1;
}

/* Reload(a{sv} options): answered once the configuration is in force, or BadConfig with the old one kept. */
static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *errors = NULL;
        Bus *b = userdata;
        size_t n;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = bus_read_no_options(msg, error);
        if (r < 0)
                return r;
        if (b->manager->stopping)
                return sd_bus_error_set(error, BUS_ERROR_STOPPING, "refsnapd is stopping");
        r = manager_reload(b->manager, &errors);
        if (r == -EINVAL) {
                n = errors ? strlen(errors) : 0;
                while (n > 0 && errors[n - 1] == '\n')
                        errors[--n] = '\0';
                return sd_bus_error_setf(error, BUS_ERROR_BAD_CONFIG,
                                         "The configuration has errors, the previous one stays in force:\n%s",
                                         n ? errors : "(no detail)");
        }
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot reload: %m");
        return sd_bus_reply_method_return(msg, NULL);
}

/* GetJob(s job, a{sv} options) -> (o path) */
static int method_get_job(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_free_ char *path = NULL;
        Bus *b = userdata;
        const char *name;
        int r;

        r = sd_bus_message_read(msg, "s", &name);
        if (r < 0)
                return r;
        r = bus_read_no_options(msg, error);
        if (r < 0)
                return r;
        if (!find_or_error(b->manager, name, error))
                return -ENOENT;
        r = sd_bus_path_encode(BUS_JOB_PREFIX, name, &path);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "o", path);
}

static int method_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return snapshot_call(msg, userdata, false, false, false, error);
}

static int method_snapshot_full(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return snapshot_call(msg, userdata, false, true, false, error);
}

static int method_snapshot_if_changed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return snapshot_call(msg, userdata, true, false, false, error);
}

/* SnapshotWithOptions(s job, a{sv} options) -> (s snapshot): Snapshot() with "full" and "description". */
static int method_snapshot_with_options(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return snapshot_call(msg, userdata, false, false, true, error);
}

typedef struct PruneArgs {
        const Job *job;
        bool dry_run;
} PruneArgs;

/* In the child: the exit status is how many were removed (at most 250), the report what prune said. */
static int prune_work(FILE *report, void *userdata) {
        PruneArgs *a = userdata;
        int r;

        r = snapshot_prune(a->job, time(NULL), a->dry_run, report);
        if (r < 0)
                fprintf(report, "%s", strerror(-r));
        return r < 0 ? 255 : MIN(r, 250);
}

static void prune_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata) {
        if (code < 0 || code == 255)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Prune failed: %s",
                                                  *report ? report : "killed");
        else
                (void) sd_bus_reply_method_return(call, "us", (uint32_t) code, report);
}

/*
 * Prune in a child: removing big trees must not stall the loop or the
 * watchdog.  SIGTERM (the daemon stopping) ends the prune at once: what
 * it retired stays hidden, for the next run to remove.
 */
static int method_prune(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        Manager *m = b->manager;
        PruneArgs *a;
        const char *name;
        JobState *js;
        int dry_run, r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "sb", &name, &dry_run);
        if (r < 0)
                return r;
        js = find_or_error(m, name, error);
        if (!js)
                return -ENOENT;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        /* Read by the child in its copy of the daemon's memory: a reload in the parent changes nothing of it. */
        a->job = js->job;
        a->dry_run = dry_run;
        r = bus_child_spawn(m, msg, "refsnap-prune", &(BusChildOptions) { .free_userdata = free }, prune_work,
                            prune_done, a);
        if (r < 0) {
                free(a);
                return r;
        }
        return 1;
}

/*
 * The snapshot a client names, of store: "latest" (the newest that is not
 * a guard), or a snapshot's name (no '/', no hidden name) that is a
 * directory there, never a symbolic link.  Into name, or NoSuchSnapshot.
 */
static int resolve_snapshot(int store, const char *job, const char *arg, char name[static SNAPSHOT_NAME_MAX],
                            sd_bus_error *error) {
        int r;

        if (strcmp(arg, "latest") == 0) {
                r = store_latest(store, name);
                if (r == -ENOENT)
                        return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_SNAPSHOT, "%s has no snapshots", job);
                if (r < 0)
                        return sd_bus_error_set_errnof(error, -r, "Cannot list the snapshots of %s: %m", job);
                return 0;
        }
        r = store_snapshot_exists(store, arg);
        if (r == -EINVAL)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_SNAPSHOT,
                                         "Not a snapshot name (YYYY-MM-DDTHH:MM:SSZ or latest)");
        if (r == -ENOENT)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_SNAPSHOT, "%s has no snapshot %s", job, arg);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot look at snapshot %s of %s: %m", arg, job);
        snprintf(name, SNAPSHOT_NAME_MAX, "%s", arg);
        return 0;
}

/* The store of js, for a call about its snapshots: NoSuchSnapshot when it has none yet. */
static int open_job_store(JobState *js, sd_bus_error *error) {
        int fd = store_open(js->job->store, false);

        if (fd == -ENOENT)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_SNAPSHOT, "%s has no store yet, so no snapshots",
                                         js->name);
        if (fd < 0)
                return sd_bus_error_set_errnof(error, -fd, "Cannot open the store of %s: %m", js->name);
        return fd;
}

/*
 * Pin(s job, s snapshot, a{sv} options), Unpin(...): the mark in the
 * store, under the store's lock taken without waiting (a prune holding
 * it may have chosen the snapshot already): JobRunning while a
 * snapshot, prune or restore of the job holds it.  An unpin needs no
 * lock (a prune keeps what it read as pinned a round longer, no more).
 */
static int pin_call(sd_bus_message *msg, Bus *b, bool pin, sd_bus_error *error) {
        _cleanup_close_ int store = -EBADF;
        char name[SNAPSHOT_NAME_MAX];
        const char *job, *arg;
        JobState *js;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "ss", &job, &arg);
        if (r < 0)
                return r;
        r = bus_read_no_options(msg, error);
        if (r < 0)
                return r;
        js = find_or_error(b->manager, job, error);
        if (!js)
                return -ENOENT;
        store = open_job_store(js, error);
        if (store < 0)
                return store;
        if (pin) {
                r = store_lock(store, false);
                if (r == -EBUSY)
                        return sd_bus_error_setf(error, BUS_ERROR_JOB_RUNNING,
                                                 "A snapshot, prune or restore of %s is running: pin when it ends",
                                                 job);
                if (r < 0)
                        return sd_bus_error_set_errnof(error, -r, "Cannot lock the store of %s: %m", job);
        }
        r = resolve_snapshot(store, job, arg, name, error);
        if (r < 0)
                return r;
        r = store_set_pinned(store, name, pin);
        if (r == -ENOENT)
                return sd_bus_error_setf(error, BUS_ERROR_NO_SUCH_SNAPSHOT, "%s has no snapshot %s", job, name);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot %s snapshot %s of %s: %m", pin ? "pin" : "unpin",
                                               name, job);
        log_job(LOG_INFO, js->name, "snapshot %s %s%s", name, pin ? "pinned" : "unpinned",
                r == 0 ? " (it was so already)" : "");
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_pin(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return pin_call(msg, userdata, true, error);
}

static int method_unpin(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return pin_call(msg, userdata, false, error);
}

/* A DeleteSnapshot() being done by a child of the daemon. */
typedef struct DeleteArgs {
        Manager *manager;
        int store;
        bool force;
        char *job;
        char name[SNAPSHOT_NAME_MAX];
} DeleteArgs;

static void delete_args_free(void *p) {
        DeleteArgs *a = p;

        if (!a)
                return;
        safe_close(a->store);
        free(a->job);
        free(a);
}

/* The child's exit statuses. */
enum { DELETE_OK = 0, DELETE_NO_SUCH = 1, DELETE_LOCKED = 2, DELETE_PINNED = 3, DELETE_ERROR = 255 };

static int delete_work(FILE *report, void *userdata) {
        DeleteArgs *a = userdata;
        int r;

        r = snapshot_delete(a->store, a->job, a->name, a->force, NULL);
        if (r < 0)
                fprintf(report, "%s", strerror(-r));
        return r >= 0 ? DELETE_OK : r == -ENOENT || r == -EINVAL ? DELETE_NO_SUCH :
               r == -EBUSY ? DELETE_LOCKED : r == -EPERM ? DELETE_PINNED : DELETE_ERROR;
}

static void delete_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata) {
        DeleteArgs *a = userdata;
        JobState *js;

        if (code == DELETE_OK)
                (void) sd_bus_reply_method_return(call, NULL);
        else if (code == DELETE_NO_SUCH)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_NO_SUCH_SNAPSHOT, "%s has no snapshot %s",
                                                  a->job, a->name);
        else if (code == DELETE_LOCKED)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_JOB_RUNNING,
                                                  "A snapshot, prune or restore of %s is running: delete when it ends",
                                                  a->job);
        else if (code == DELETE_PINNED)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_PINNED,
                                                  "Snapshot %s of %s is pinned: unpin it, or delete with force",
                                                  a->name, a->job);
        else
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Cannot delete snapshot %s of %s: %s",
                                                  a->name, a->job, *report ? report : "killed");
        /* Its newest snapshot may be another now. */
        js = code == DELETE_OK ? manager_find_job(a->manager, a->job) : NULL;
        if (js)
                manager_job_store_changed(js);
}

/*
 * DeleteSnapshot(s job, s snapshot, a{sv} options): one snapshot removed
 * as prune removes one (snapshot_delete()), in a child (removing a big
 * tree must not stall the loop), answered when it is gone.  options:
 * force (b) deletes a pinned one too.
 */
static int method_delete_snapshot(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_close_ int store = -EBADF;
        Bus *b = userdata;
        Manager *m = b->manager;
        const char *job, *arg;
        DeleteArgs *a;
        JobState *js;
        bool force;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "ss", &job, &arg);
        if (r < 0)
                return r;
        r = bus_read_bool_option(msg, "force", &force, error);
        if (r < 0)
                return r;
        js = find_or_error(m, job, error);
        if (!js)
                return -ENOENT;
        if (m->stopping)
                return sd_bus_error_set(error, BUS_ERROR_STOPPING, "refsnapd is stopping");
        if (js->child)
                return sd_bus_error_setf(error, BUS_ERROR_JOB_RUNNING,
                                         "A snapshot of %s is running: delete when it ends", job);
        store = open_job_store(js, error);
        if (store < 0)
                return store;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *a = (DeleteArgs) { .manager = m, .store = TAKE_FD(store), .force = force };
        r = resolve_snapshot(a->store, job, arg, a->name, error);
        if (r >= 0) {
                a->job = strdup(job);
                r = a->job ? 0 : -ENOMEM;
        }
        /* SIGTERM (the daemon stopping) ends it at once: what it retired is removed by the next run. */
        if (r >= 0)
                r = bus_child_spawn(m, msg, "refsnap-delete", &(BusChildOptions) { .free_userdata = delete_args_free },
                                    delete_work, delete_done, a);
        if (r < 0) {
                delete_args_free(a);
                return r;
        }
        return 1;
}

/* A Purge() being done by a child of the daemon. */
typedef struct PurgeArgs {
        Manager *manager;
        const Job *job;         /* the child's copy of the daemon's memory: read there only */
        int store;
        bool dry_run;
        char *job_name, *path, *escaped;
        char asked_by[256];
} PurgeArgs;

static void purge_args_free(void *p) {
        PurgeArgs *a = p;

        if (!a)
                return;
        safe_close(a->store);
        free(a->job_name);
        free(a->path);
        free(a->escaped);
        free(a);
}

/* The child's exit statuses. */
enum { PURGE_OK = 0, PURGE_NONE = 1, PURGE_LOCKED = 2, PURGE_ERROR = 255 };

/*
 * In the child: the report is one line per snapshot that held the path,
 * "NAME 0|1" (pinned), then "in_source 0|1"; or the error's text.
 */
static int purge_work(FILE *report, void *userdata) {
        PurgeArgs *a = userdata;
        char **names = NULL;
        int r, live;

        r = snapshot_purge(a->store, a->job_name, a->path, a->dry_run, a->asked_by, &names);
        if (r < 0) {
                fprintf(report, "%s", strerror(-r));
                return r == -ENOENT ? PURGE_NONE : r == -EBUSY ? PURGE_LOCKED : PURGE_ERROR;
        }
        for (char **s = names; s && *s; s++)
                fprintf(report, "%s %d\n", *s, store_is_pinned(a->store, *s) > 0);
        strv_free(names);
        live = purge_in_source(a->job, a->path);
        fprintf(report, "in_source %d\n", live > 0);
        return PURGE_OK;
}

static void purge_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        PurgeArgs *a = userdata;
        bool live = false;
        JobState *js;
        int r;

        if (code == PURGE_NONE) {
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_NO_SUCH_PATH, "No snapshot of %s holds %s",
                                                  a->job_name, a->escaped);
                return;
        }
        if (code == PURGE_LOCKED) {
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_JOB_RUNNING,
                                                  "A snapshot, prune or restore of %s is running: purge when it ends",
                                                  a->job_name);
                return;
        }
        if (code != PURGE_OK) {
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED,
                                                  "Cannot purge %s from the snapshots of %s (what is left is finished "
                                                  "by the next purge or snapshot): %s", a->escaped, a->job_name,
                                                  *report ? report : "killed");
                return;
        }
        /* The newest snapshot may lack what the source holds now: the next due time is not skipped. */
        js = a->dry_run ? NULL : manager_find_job(a->manager, a->job_name);
        if (js)
                manager_job_purged(js);
        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = sd_bus_message_append_array(reply, 'y', a->path, strlen(a->path));
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sb)");
        /* Lines the child wrote: snapshot names (checked again), "in_source N". */
        for (const char *p = report; r >= 0 && p < report + size && *p;) {
                const char *nl = memchr(p, '\n', report + size - p);
                char name[SNAPSHOT_NAME_MAX + 16];
                int pinned;

                if (!nl)
                        break;
                snprintf(name, sizeof(name), "%.*s", (int) (nl - p), p);
                if (sscanf(name, "in_source %d", &pinned) == 1)
                        live = pinned;
                else {
                        char *sp = strrchr(name, ' ');

                        if (sp && (sp[1] == '0' || sp[1] == '1') && !sp[2]) {
                                pinned = sp[1] == '1';
                                *sp = '\0';
                                if (snapshot_name_valid(name))
                                        r = sd_bus_message_append(reply, "(sb)", name, pinned);
                        }
                }
                p = nl + 1;
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "b", live);
        if (r >= 0)
                (void) sd_bus_send(NULL, reply, NULL);
        else
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Cannot answer: %s", strerror(-r));
}

/*
 * Purge(s job, ay path, a{sv} options) -> (ay path, a(sb) snapshots, b
 * in_source): path (relative to the job's source, or absolute beneath
 * it; bytes) removed from every snapshot that holds it
 * (snapshot_purge(), purge.h), in a child, answered when done: the path
 * as the source's relative path, the snapshots that held it (oldest
 * first) and whether each is pinned, and whether the next snapshot takes
 * it again (in the source, not excluded).  options: dry_run (b) only
 * finds them.  NoSuchPath when no snapshot holds it, JobRunning while a
 * snapshot, prune or restore holds the store.
 */
static int method_purge(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_close_ int store = -EBADF;
        _cleanup_free_ char *arg = NULL;
        Bus *b = userdata;
        Manager *m = b->manager;
        const void *bytes;
        const char *job;
        PurgeArgs *a;
        JobState *js;
        size_t size;
        bool dry_run;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "s", &job);
        if (r < 0)
                return r;
        r = sd_bus_message_read_array(msg, 'y', &bytes, &size);
        if (r < 0)
                return r;
        r = bus_read_bool_option(msg, "dry_run", &dry_run, error);
        if (r < 0)
                return r;
        if (size == 0 || size >= PATH_MAX || memchr(bytes, '\0', size))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "Not a path");
        arg = strndup(bytes, size);
        if (!arg)
                return -ENOMEM;
        js = find_or_error(m, job, error);
        if (!js)
                return -ENOENT;
        if (m->stopping)
                return sd_bus_error_set(error, BUS_ERROR_STOPPING, "refsnapd is stopping");
        if (js->child)
                return sd_bus_error_setf(error, BUS_ERROR_JOB_RUNNING,
                                         "A snapshot of %s is running: purge when it ends", job);
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *a = (PurgeArgs) { .manager = m, .job = js->job, .store = -EBADF, .dry_run = dry_run };
        r = purge_path_normalize(js->job->source, arg, &a->path);
        if (r == -EINVAL) {
                _cleanup_free_ char *e = cescape(arg);

                purge_args_free(a);
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%s is not a path of the source of %s (relative to it, or absolute "
                                         "beneath it; no '..'; not the source itself)", e ? e : "path", job);
        }
        if (r >= 0) {
                a->escaped = cescape(a->path);
                a->job_name = strdup(job);
                r = a->escaped && a->job_name ? 0 : -ENOMEM;
        }
        if (r >= 0) {
                store = open_job_store(js, error);
                r = store;
        }
        if (r >= 0) {
                a->store = TAKE_FD(store);
                polkit_describe_caller(msg, a->asked_by, sizeof(a->asked_by));
                /* SIGTERM (the daemon stopping) ends it at once: what is left is finished by the next run. */
                r = bus_child_spawn(m, msg, "refsnap-purge", &(BusChildOptions) { .free_userdata = purge_args_free },
                                    purge_work, purge_done, a);
        }
        if (r < 0) {
                purge_args_free(a);
                return r;
        }
        return 1;
}

/*
 * Pause(s job, t until_usec, a{sv} options): the job's due times skipped
 * until then (µs of CLOCK_REALTIME; 0: until Resume()), kept in its store.
 */
static int method_pause(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        const char *job;
        uint64_t until;
        JobState *js;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "st", &job, &until);
        if (r < 0)
                return r;
        r = bus_read_no_options(msg, error);
        if (r < 0)
                return r;
        js = find_or_error(b->manager, job, error);
        if (!js)
                return -ENOENT;
        r = manager_pause(js, until);
        if (r == -EINVAL)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "The end of the pause is past");
        if (r == -ENOENT)
                return sd_bus_error_setf(error, BUS_ERROR_FAILED,
                                         "%s has no store yet: its pause has nowhere to be kept", job);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot pause %s: %m", job);
        return sd_bus_reply_method_return(msg, NULL);
}

/* Resume(s job, a{sv} options): the pause ended (none is no error). */
static int method_resume(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        const char *job;
        JobState *js;
        int r;

        r = polkit_check_caller(msg, &b->polkit, error);
        if (r < 0)
                return r;
        if (r == 0)
                return 1;       /* parked: called again with polkit's answer */
        r = sd_bus_message_read(msg, "s", &job);
        if (r < 0)
                return r;
        r = bus_read_no_options(msg, error);
        if (r < 0)
                return r;
        js = find_or_error(b->manager, job, error);
        if (!js)
                return -ENOENT;
        r = manager_resume(js);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot resume %s: %m", job);
        return sd_bus_reply_method_return(msg, NULL);
}

/* Versions(ay path, a{sv} options) -> (s job, a(stttub) versions): refsnapd-self.c, as the caller. */
static int method_versions(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;

        return self_method_versions(msg, b->self, &b->polkit, error);
}

/*
 * RestoreMine(ay path, s snapshot, h directory, a{sv} options)
 *   -> (s job, s snapshot, a(yays) entries, a{sv} info): refsnapd-self.c, as the caller.
 */
static int method_restore_mine(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;

        return self_method_restore_mine(msg, b->self, &b->polkit, error);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface,
                                const char *property, sd_bus_message *reply, void *userdata,
                                sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", PROJECT_VERSION);
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;

        return sd_bus_message_append(reply, "s", b->manager->stopping ? "stopping" : "running");
}

/* Jobs: a(so), each configured job's name and object. */
static int property_get_jobs(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Bus *b = userdata;
        Manager *m = b->manager;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(so)");
        for (size_t i = 0; r >= 0 && i < m->n_jobs; i++) {
                _cleanup_free_ char *p = NULL;

                if (!m->jobs[i]->job)
                        continue;
                r = sd_bus_path_encode(BUS_JOB_PREFIX, m->jobs[i]->name, &p);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "(so)", m->jobs[i]->name, p);
        }
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
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

/*
 * Who may call what: a method flagged 0 answers root alone (sd-bus's own
 * check, CAP_SYS_ADMIN or the daemon's uid); one flagged
 * SD_BUS_VTABLE_UNPRIVILEGED changes something and checks its caller
 * itself with polkit_check_caller() (root, or what polkit allows for its
 * action: refsnapd-polkit.c).  The bus policy lets everyone call this
 * interface, and nothing else of ours (org.refsnap1.conf).
 */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Jobs", "a(so)", property_get_jobs, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ReflinkPath", "s", property_get_reflink_path, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_METHOD_WITH_ARGS("GetStatus", SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", version, "s", state, "s", status),
                                method_get_status, 0),
        SD_BUS_METHOD_WITH_ARGS("ListJobs", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sssttsb)", jobs),
                                method_list_jobs, 0),
        SD_BUS_METHOD_WITH_ARGS("ListSnapshots", SD_BUS_ARGS("s", job), SD_BUS_RESULT("a(sxxttt)", snapshots),
                                method_list_snapshots, 0),
        SD_BUS_METHOD_WITH_ARGS("Snapshot", SD_BUS_ARGS("s", job), SD_BUS_RESULT("s", snapshot),
                                method_snapshot, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SnapshotWithOptions", SD_BUS_ARGS("s", job, "a{sv}", options),
                                SD_BUS_RESULT("s", snapshot), method_snapshot_with_options,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SnapshotFull", SD_BUS_ARGS("s", job), SD_BUS_RESULT("s", snapshot),
                                method_snapshot_full, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SnapshotIfChanged", SD_BUS_ARGS("s", job),
                                SD_BUS_RESULT("b", taken, "s", snapshot), method_snapshot_if_changed,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Prune", SD_BUS_ARGS("s", job, "b", dry_run),
                                SD_BUS_RESULT("u", removed, "s", report), method_prune,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetJob", SD_BUS_ARGS("s", job, "a{sv}", options), SD_BUS_RESULT("o", path),
                                method_get_job, 0),
        SD_BUS_METHOD_WITH_ARGS("Cancel", SD_BUS_ARGS("s", job, "a{sv}", options),
                                SD_BUS_RESULT("s", result), method_cancel, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Reload", SD_BUS_ARGS("a{sv}", options), SD_BUS_NO_RESULT, method_reload,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Pin", SD_BUS_ARGS("s", job, "s", snapshot, "a{sv}", options), SD_BUS_NO_RESULT,
                                method_pin, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Unpin", SD_BUS_ARGS("s", job, "s", snapshot, "a{sv}", options), SD_BUS_NO_RESULT,
                                method_unpin, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("DeleteSnapshot", SD_BUS_ARGS("s", job, "s", snapshot, "a{sv}", options),
                                SD_BUS_NO_RESULT, method_delete_snapshot, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Purge", SD_BUS_ARGS("s", job, "ay", path, "a{sv}", options),
                                SD_BUS_RESULT("ay", path, "a(sb)", snapshots, "b", in_source), method_purge,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Pause", SD_BUS_ARGS("s", job, "t", until_usec, "a{sv}", options), SD_BUS_NO_RESULT,
                                method_pause, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Resume", SD_BUS_ARGS("s", job, "a{sv}", options), SD_BUS_NO_RESULT, method_resume,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Versions", SD_BUS_ARGS("ay", path, "a{sv}", options),
                                SD_BUS_RESULT("s", job, "a(stttub)", versions), method_versions,
                                SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RestoreMine",
                                SD_BUS_ARGS("ay", path, "s", snapshot, "h", directory, "a{sv}", options),
                                SD_BUS_RESULT("s", job, "s", snapshot, "a(yays)", entries, "a{sv}", info),
                                method_restore_mine,
                                SD_BUS_VTABLE_UNPRIVILEGED),
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
                if (w->kind == WAIT_CANCEL && strcmp(error, BUS_ERROR_STOPPING) != 0)
                        (void) sd_bus_reply_method_return(w->call, "s", job_result_to_string(js->last_result));
                else if (ok && w->kind == WAIT_IF_CHANGED)
                        (void) sd_bus_reply_method_return(w->call, "bs", true, snapshot);
                else if (ok)
                        (void) sd_bus_reply_method_return(w->call, "s", snapshot);
                else
                        (void) sd_bus_reply_method_errorf(w->call, error, "%s", why);
                sd_bus_message_unref(w->call);
        }
        b->n_waiting = k;
}

/* The job objects: BUS_JOB_PREFIX/<name>, found by their name (userdata: the JobState). */
static int job_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                    sd_bus_error *error) {
        _cleanup_free_ char *name = NULL;
        Bus *b = userdata;
        JobState *js;
        int r;

        r = sd_bus_path_decode(path, BUS_JOB_PREFIX, &name);
        if (r <= 0)
                return r;
        if (b->dropping && strcmp(b->dropping->name, name) == 0)
                js = b->dropping;
        else
                js = manager_find_job(b->manager, name);
        if (!js)
                return 0;
        *found = js;
        return 1;
}

static int job_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        Bus *b = userdata;
        Manager *m = b->manager;
        char **l;
        size_t k = 0;
        int r;

        l = calloc(m->n_jobs + 1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_jobs; i++) {
                if (!m->jobs[i]->job)
                        continue;
                r = sd_bus_path_encode(BUS_JOB_PREFIX, m->jobs[i]->name, &l[k]);
                if (r < 0) {
                        strv_free(l);
                        return r;
                }
                k++;
        }
        *nodes = l;
        return 1;
}

static int job_get_name(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;

        return sd_bus_message_append(reply, "s", js->name);
}

/*
 * Whether the call being answered comes from root: the euid the bus
 * driver says for the sender's connection (never augmented from /proc).
 * A unique name is one connection for its life and never given again,
 * so the last sender's answer is kept: a client reading many properties
 * (GetManagedObjects, a poll) costs one question to the bus driver, not
 * one per property.  Any doubt is "not root".
 */
static bool sender_is_root(sd_bus_message *m) {
        static char last[256];
        static bool last_root;
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *sender = sd_bus_message_get_sender(m);
        uid_t euid;

        if (!sender || strlen(sender) >= sizeof(last))
                return false;
        if (strcmp(sender, last) == 0)
                return last_root;
        if (sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID, &creds) < 0 ||
            (sd_bus_creds_get_augmented_mask(creds) & SD_BUS_CREDS_EUID) ||
            sd_bus_creds_get_euid(creds, &euid) < 0)
                return false;
        snprintf(last, sizeof(last), "%s", sender);
        last_root = euid == 0;
        return last_root;
}

/*
 * Whether a job's paths (Source, Store) go into what is being sent: for
 * a job "public = yes", always; otherwise only into the answer to root's
 * Get, GetAll or GetManagedObjects.  Everything else gets them empty: a
 * user's call (the kernel's check as her would need a worker per read,
 * and a property is answered at once, in the loop), and anything sent
 * unasked, which does not know who reads it (they are invalidated, never
 * sent, in PropertiesChanged, and sd-bus leaves such properties out of
 * InterfacesAdded; this holds should that change).  Nothing here forks,
 * and the one question (to the bus driver) is asked once per client.
 */
static bool job_paths_shown(sd_bus *bus, const JobState *js) {
        sd_bus_message *m = sd_bus_get_current_message(bus);

        if (!js->job)
                return false;
        if (js->job->public)
                return true;
        if (!m || !(sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "Get") ||
                    sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "GetAll") ||
                    sd_bus_message_is_method_call(m, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")))
                return false;
        return sender_is_root(m);
}

/*
 * Source, Store: ay, a file name being bytes (a D-Bus string must be
 * UTF-8); empty (the type kept) where job_paths_shown() says no.
 */
static int job_get_path(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;
        const char *p = !job_paths_shown(bus, js) ? "" :
                        strcmp(property, "Source") == 0 ? js->job->source : js->job->store;

        return sd_bus_message_append_array(reply, 'y', p, strlen(p));
}

static int job_get_interval(sd_bus *bus, const char *path, const char *interface, const char *property,
                            sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;

        return sd_bus_message_append(reply, "t", (uint64_t) (js->job ? js->job->interval : 0));
}

static int job_get_bool(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;
        int v = strcmp(property, "Running") == 0 ? js->child != 0 :
                strcmp(property, "Changed") == 0 ? js->changed : false;        /* Paused: no pause yet */

        return sd_bus_message_append(reply, "b", v);
}

static int job_get_last_snapshot(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;

        return sd_bus_message_append(reply, "s", js->last_name);
}

static int job_get_last_result(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;

        return sd_bus_message_append(reply, "s", job_result_to_string(js->last_result));
}

/* The ...USec properties: microseconds of CLOCK_REALTIME, 0 for none. */
static int job_get_usec(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;
        usec_t t = strcmp(property, "LastSnapshotUSec") == 0 ? js->last :
                   strcmp(property, "LastSkipUSec") == 0 ? js->last_skip :
                   strcmp(property, "LastVerifiedUSec") == 0 ? js->last_verified :
                   js->child ? 0 : js->next;    /* NextDueUSec: none while one runs */

        return sd_bus_message_append(reply, "t", (uint64_t) t);
}

/* Paused, PausedUntilUSec (0: until resumed, or not paused). */
static int job_get_paused(sd_bus *bus, const char *path, const char *interface, const char *property,
                          sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;

        return sd_bus_message_append(reply, "b", js->paused);
}

static int job_get_paused_until(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        JobState *js = userdata;

        return sd_bus_message_append(reply, "t", (uint64_t) (js->paused ? js->paused_until : 0));
}

/*
 * SnapshotsKept: the snapshots the store lists now (invalidated, not
 * sent, when it may have changed).  Anyone may read it, and a listing
 * looks at every snapshot: the count is kept (JobState.kept) while the
 * store's directory is the same one with the same modification time,
 * which a snapshot made, renamed or removed changes.  A modification
 * time within KEPT_MTIME_SLACK_USEC of the count is not trusted (the
 * kernel stamps it from a coarse clock: a change in the same tick could
 * leave it as it was), so such a count is made again next time.
 */
#define KEPT_MTIME_SLACK_USEC (100 * USEC_PER_MSEC)

static int job_get_kept(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        _cleanup_close_ int store = -EBADF;
        JobState *js = userdata;
        usec_t now = now_realtime();
        char **names = NULL;
        struct stat st;
        bool stated;
        size_t n = 0;

        store = js->job ? store_open(js->job->store, false) : -EBADF;
        stated = store >= 0 && fstat(store, &st) == 0;
        if (stated && js->kept_known && file_id_is(&st, js->kept_store) &&
            st.st_mtim.tv_sec == js->kept_mtime.tv_sec && st.st_mtim.tv_nsec == js->kept_mtime.tv_nsec)
                return sd_bus_message_append(reply, "u", js->kept);
        js->kept_known = false;
        if (store >= 0 && store_list(store, &names, &n) < 0) {
                n = 0;
                stated = false;
        }
        strv_free(names);
        if (stated && (usec_t) st.st_mtim.tv_sec * USEC_PER_SEC + (usec_t) st.st_mtim.tv_nsec / 1000 +
                      KEPT_MTIME_SLACK_USEC <= now) {
                js->kept_known = true;
                js->kept = (uint32_t) n;
                js->kept_store = file_id(&st);
                js->kept_mtime = st.st_mtim;
        }
        return sd_bus_message_append(reply, "u", (uint32_t) n);
}

#define CHANGE SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE

static const sd_bus_vtable job_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", job_get_name, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        /* Invalidated, never sent: a signal does not know who reads it (job_paths_shown()). */
        SD_BUS_PROPERTY("Source", "ay", job_get_path, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("Store", "ay", job_get_path, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("IntervalUSec", "t", job_get_interval, 0, CHANGE),
        SD_BUS_PROPERTY("Running", "b", job_get_bool, 0, CHANGE),
        SD_BUS_PROPERTY("Changed", "b", job_get_bool, 0, CHANGE),
        SD_BUS_PROPERTY("Paused", "b", job_get_paused, 0, CHANGE),
        SD_BUS_PROPERTY("PausedUntilUSec", "t", job_get_paused_until, 0, CHANGE),
        SD_BUS_PROPERTY("LastSnapshot", "s", job_get_last_snapshot, 0, CHANGE),
        SD_BUS_PROPERTY("LastSnapshotUSec", "t", job_get_usec, 0, CHANGE),
        SD_BUS_PROPERTY("LastResult", "s", job_get_last_result, 0, CHANGE),
        SD_BUS_PROPERTY("LastSkipUSec", "t", job_get_usec, 0, CHANGE),
        SD_BUS_PROPERTY("LastVerifiedUSec", "t", job_get_usec, 0, CHANGE),
        SD_BUS_PROPERTY("NextDueUSec", "t", job_get_usec, 0, CHANGE),
        SD_BUS_PROPERTY("SnapshotsKept", "u", job_get_kept, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_VTABLE_END
};

/* Say what was marked changed: one PropertiesChanged per object, however often it changed. */
static int on_emit(sd_event_source *s, void *userdata) {
        Bus *b = userdata;

        for (size_t i = 0; i < b->n_dirty; i++) {
                _cleanup_free_ char *path = NULL;

                if (sd_bus_path_encode(BUS_JOB_PREFIX, b->dirty[i]->name, &path) >= 0)
                        (void) sd_bus_emit_properties_changed_strv(b->bus, path, BUS_JOB_INTERFACE, NULL);
        }
        b->n_dirty = 0;
        if (b->manager_dirty)
                (void) sd_bus_emit_properties_changed(b->bus, BUS_PATH, BUS_INTERFACE, "State", "Jobs", NULL);
        b->manager_dirty = false;
        return 0;
}

static void mark_dirty(Bus *b, JobState *js) {
        if (js) {
                JobState **d;

                for (size_t i = 0; i < b->n_dirty; i++)
                        if (b->dirty[i] == js)
                                goto arm;
                d = reallocarray(b->dirty, b->n_dirty + 1, sizeof(*d));
                if (!d)
                        return;         /* said at the next change */
                b->dirty = d;
                b->dirty[b->n_dirty++] = js;
        } else
                b->manager_dirty = true;
arm:
        (void) sd_event_source_set_enabled(b->emit, SD_EVENT_ONESHOT);
}

static void on_job_changed(JobState *js, void *userdata) {
        mark_dirty(userdata, js);
}

/* Said at once: the loop may end before it is idle again. */
static void on_stopping(void *userdata) {
        Bus *b = userdata;

        b->manager_dirty = true;        /* State */
        (void) on_emit(b->emit, b);
        /* The calls waiting for polkit are told now, while the bus is still open. */
        b->polkit = polkit_registry_free(b->polkit);
        self_service_stopping(b->self);
}

static bool published(Bus *b, const char *name, size_t *index) {
        for (size_t i = 0; i < b->n_published; i++)
                if (strcmp(b->published[i], name) == 0) {
                        if (index)
                                *index = i;
                        return true;
                }
        return false;
}

/* Jobs came or their configuration changed: new objects announced, every job's properties said. */
static void on_jobs_changed(void *userdata) {
        Bus *b = userdata;
        Manager *m = b->manager;

        for (size_t i = 0; i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];
                _cleanup_free_ char *path = NULL;

                if (!js->job)
                        continue;
                mark_dirty(b, js);
                if (published(b, js->name, NULL) || sd_bus_path_encode(BUS_JOB_PREFIX, js->name, &path) < 0 ||
                    strv_push(&b->published, &b->n_published, js->name) < 0)
                        continue;
                (void) sd_bus_emit_object_added(b->bus, path);
        }
        mark_dirty(b, NULL);
}

static void on_started(JobState *js, void *userdata) {
        Bus *b = userdata;

        mark_dirty(b, js);
        (void) sd_bus_emit_signal(b->bus, BUS_PATH, BUS_INTERFACE, "SnapshotStarted", "s", js->name);
}

static void on_finished(JobState *js, bool ok, const char *snapshot, void *userdata) {
        _cleanup_free_ char *why = NULL;
        Bus *b = userdata;

        mark_dirty(b, js);
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
        size_t k;

        if (asprintf(&why, "The job %s went away", js->name) < 0)
                why = NULL;
        answer_waiting(b, js, false, NULL, BUS_ERROR_STOPPING, why ? why : "The job went away");
        for (size_t i = 0; i < b->n_dirty; i++)
                if (b->dirty[i] == js) {
                        b->dirty[i] = b->dirty[--b->n_dirty];
                        break;
                }
        if (published(b, js->name, &k)) {
                _cleanup_free_ char *path = NULL;

                if (sd_bus_path_encode(BUS_JOB_PREFIX, js->name, &path) >= 0) {
                        b->dropping = js;
                        (void) sd_bus_emit_object_removed(b->bus, path);
                        b->dropping = NULL;
                }
                free(b->published[k]);
                b->published[k] = b->published[--b->n_published];
                b->published[b->n_published] = NULL;
                mark_dirty(b, NULL);
        }
}

int bus_new(Manager *m, Bus **ret) {
        Bus *b;
        int r;

        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->manager = m;
        r = self_service_new(m, &b->self);
        if (r >= 0)
                r = sd_bus_open_system(&b->bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(b->bus, NULL, BUS_PATH, BUS_INTERFACE, manager_vtable, b);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(b->bus, NULL, BUS_JOB_PREFIX, BUS_JOB_INTERFACE, job_vtable,
                                               job_find, b);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(b->bus, NULL, BUS_JOB_PREFIX, job_enumerate, b);
        if (r >= 0)
                r = sd_bus_add_object_manager(b->bus, NULL, BUS_PATH);
        if (r >= 0)
                r = bus_log_control_register(b->bus);
        if (r >= 0)
                r = sd_event_add_defer(m->event, &b->emit, on_emit, b);
        if (r >= 0)
                r = sd_event_source_set_priority(b->emit, SD_EVENT_PRIORITY_IDLE);
        if (r >= 0)
                r = sd_event_source_set_enabled(b->emit, SD_EVENT_OFF);
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
                .job_changed = on_job_changed,
                .jobs_changed = on_jobs_changed,
                .stopping = on_stopping,
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
        polkit_registry_free(b->polkit);
        self_service_free(b->self);
        free(b->dirty);
        strv_free(b->published);
        sd_event_source_disable_unref(b->emit);
        sd_bus_flush_close_unref(b->bus);
        free(b);
        return NULL;
}
