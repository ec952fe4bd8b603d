/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bus-names.h"
#include "chase.h"
#include "escape.h"
#include "log.h"
#include "log-event.h"
#include "macro.h"
#include "path-util.h"
#include "refsnapd-bus-child.h"
#include "refsnapd-bus-options.h"
#include "refsnapd-caller.h"
#include "refsnapd-self.h"
#include "refsnapd-self-log.h"
#include "self-service.h"
#include "snapshot-name.h"
#include "store.h"
#include "strv.h"

struct SelfService {
        Manager *manager;
        CallerRegistry *callers;
        /* The uid of each worker running. */
        uid_t running[SELF_WORKERS_MAX];
        size_t n_running;
};

int self_service_new(Manager *m, SelfService **ret) {
        SelfService *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->manager = m;
        *ret = s;
        return 0;
}

void self_service_stopping(SelfService *s) {
        if (s)
                s->callers = caller_registry_free(s->callers);
}

SelfService *self_service_free(SelfService *s) {
        if (!s)
                return NULL;
        caller_registry_free(s->callers);
        free(s);
        return NULL;
}

static size_t running_of(SelfService *s, uid_t uid) {
        size_t k = 0;

        for (size_t i = 0; i < s->n_running; i++)
                k += s->running[i] == uid;
        return k;
}

static void running_remove(SelfService *s, uid_t uid) {
        for (size_t i = 0; i < s->n_running; i++)
                if (s->running[i] == uid) {
                        s->running[i] = s->running[--s->n_running];
                        return;
                }
}

/* The worker's exit statuses. */
enum {
        SELF_OK = 0,
        SELF_NONE = 1,          /* nothing the caller may see: missing and forbidden alike */
        SELF_IDENTITY = 2,      /* it could not become the caller: nothing was done */
        SELF_NOT_MADE = 3,      /* RestoreMine(): visible, but not made (the report says why) */
        SELF_ERROR = 255,
};

typedef struct VersionsArgs {
        SelfService *service;
        Caller *caller;
        const Job *job;         /* read in the child, in its copy of the daemon's memory */
        char *job_name;
        char *rel;
        /* RestoreMine() */
        char *snapshot;         /* a name, or "latest" */
        const char *base;       /* the name made, in rel */
        int dest;               /* the caller's directory (the call's, closed with it) */
        bool dry_run;
} VersionsArgs;

static void versions_args_free(void *p) {
        VersionsArgs *a = p;

        if (!a)
                return;
        caller_free(a->caller);
        free(a->job_name);
        free(a->rel);
        free(a->snapshot);
        free(a);
}

/* Lines about the worker (killed) count in the caller's rate limit. */
static bool versions_may_log(void *p) {
        VersionsArgs *a = p;

        return self_log_allow(a->caller->uid);
}

static int cmp_int(const void *a, const void *b) {
        int x = *(const int *) a, y = *(const int *) b;

        return x < y ? -1 : x > y;
}

/*
 * Close every descriptor but keep[] (standard input, output and error
 * become /dev/null): what the worker holds once it is the caller is what
 * it was given, nothing of the daemon's (the bus, the watch, a store).
 */
static int close_all_but(int *keep, size_t n) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        int from = 3;

        if (null < 0)
                return -errno;
        for (int fd = 0; fd < 3; fd++)
                if (dup2(null, fd) < 0)
                        return -errno;
        qsort(keep, n, sizeof(int), cmp_int);
        for (size_t i = 0; i < n; i++) {
                if (keep[i] < from)
                        continue;
                if (keep[i] > from && syscall(SYS_close_range, (unsigned) from, (unsigned) keep[i] - 1, 0) < 0)
                        return -errno;
                from = keep[i] + 1;
        }
        if (syscall(SYS_close_range, (unsigned) from, ~0U, 0) < 0)
                return -errno;
        return 0;
}

/*
 * In the child: as root, the job's snapshot roots (O_PATH) and its live
 * source (O_PATH, or none when it is gone), the store closed again; then
 * everything else closed, the caller become, and the lookups made as
 * her.
 */
static int versions_work(FILE *report, void *userdata) {
        VersionsArgs *a = userdata;
        _cleanup_free_ int *fds = NULL;
        char **names = NULL;
        size_t n = 0, k = 0, which = SIZE_MAX;
        struct rlimit rl;
        int store, live, r;

        store = store_open(a->job->store, false);
        if (store >= 0 && store_list(store, &names, &n) < 0) {
                fprintf(report, "cannot list the snapshots: %m");
                return SELF_ERROR;
        }
        if (store < 0 && store != -ENOENT) {
                fprintf(report, "cannot open the store: %s", strerror(-store));
                return SELF_ERROR;
        }
        /* One descriptor per snapshot, and a few more. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n + 64 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        fds = calloc(n + 2, sizeof(int));
        if (!fds)
                return SELF_ERROR;
        /*
         * RestoreMine(): the one snapshot asked for ("latest": the newest
         * that is not a guard), among all of them (the newer ones say
         * what is visible now where the live tree no longer has it).
         */
        if (a->snapshot) {
                char name[SNAPSHOT_NAME_MAX] = "";

                if (strcmp(a->snapshot, "latest") == 0) {
                        if (store >= 0 && store_latest(store, name) < 0)
                                name[0] = '\0';
                } else if (snapshot_name_valid(a->snapshot))
                        snprintf(name, sizeof(name), "%s", a->snapshot);
                for (size_t i = 0; name[0] && i < n; i++)
                        if (strcmp(names[i], name) == 0)
                                which = i;
        }
        for (size_t i = 0; i < n; i++) {
                fds[i] = openat(store, names[i], O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fds[i] < 0)
                        fds[i] = -EBADF;        /* gone since the listing: no version there */
        }
        safe_close(store);
        live = chase_dir(AT_FDCWD, a->job->source, &(Chase) { .flags = CHASE_NO_FUSE });
        if (live == -ENOENT || live == -ENOTDIR)
                live = -EBADF;          /* no live tree: the snapshots alone decide */
        else if (live < 0) {
                fprintf(report, "cannot open the source: %s", strerror(-live));
                return SELF_ERROR;
        }

        {
                _cleanup_free_ int *keep = calloc(n + 3, sizeof(int));     /* the roots, live, dest, the report */

                if (!keep)
                        return SELF_ERROR;
                for (size_t i = 0; i < n; i++)
                        if (fds[i] >= 0)
                                keep[k++] = fds[i];
                if (live >= 0)
                        keep[k++] = live;
                if (a->snapshot)
                        keep[k++] = a->dest;
                keep[k++] = fileno(report);
                r = close_all_but(keep, k);
        }
        if (r < 0) {
                fprintf(report, "cannot close the daemon's descriptors: %s", strerror(-r));
                return SELF_ERROR;
        }
        r = caller_become(a->caller);
        if (r < 0) {
                fprintf(report, "cannot become uid %u: %s", (unsigned) a->caller->uid, strerror(-r));
                return SELF_IDENTITY;
        }
        /* Tests only (test-self-service-bus): a worker that takes its time, to see the limits. */
        if (getenv("REFSNAP_TEST_SELF_SLEEP"))
                sleep(atoi(getenv("REFSNAP_TEST_SELF_SLEEP")));
        if (a->snapshot) {
                const char *what = NULL;

                if (which >= n || fds[which] < 0)
                        return SELF_NONE;
                r = self_restore(live, fds, n, which, a->rel, a->dest, a->base, a->dry_run, &what);
                if (r == -ENOENT)
                        return SELF_NONE;
                if (r == -EISDIR)
                        fprintf(report, "it is a directory: restore --mine brings back files and symbolic links");
                else if (r == -EMEDIUMTYPE)
                        fprintf(report, "it is neither a file nor a symbolic link: never made for a user");
                else if (r == -EEXIST) {
                        _cleanup_free_ char *e = cescape(a->base);

                        fprintf(report, "%s exists in the destination: move it away or give --to DIR "
                                "(restore --mine never replaces a live entry)", e ? e : "it");
                }
                else if (r < 0)
                        fprintf(report, "cannot %s: %s", what && strcmp(what, "make") == 0 ? "make it" :
                                what && strcmp(what, "rename") == 0 ? "rename it over its twin" :
                                "use the destination", strerror(-r));
                else
                        fprintf(report, "%s", names[which]);
                return r < 0 ? SELF_NOT_MADE : SELF_OK;
        }
        r = self_list_versions(live, fds, names, n, a->rel, report);
        if (r < 0)
                return SELF_ERROR;
        return r > 0 ? SELF_OK : SELF_NONE;
}

static int append_versions(sd_bus_message *reply, const char *report) {
        const char *p = report;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(stttub)");
        while (r >= 0 && *p) {
                char name[SNAPSHOT_NAME_MAX + 1];
                uint64_t size, mtime;
                unsigned mode;
                int differs, used = 0;
                time_t t = 0;

                if (sscanf(p, "%32s %" SCNu64 " %" SCNu64 " %o %d\n%n", name, &size, &mtime, &mode, &differs,
                           &used) != 5 || used == 0)
                        return -EBADMSG;
                p += used;
                (void) snapshot_name_time(name, &t);
                r = sd_bus_message_append(reply, "(stttub)", name, (uint64_t) t * 1000000ULL, size, mtime,
                                          (uint32_t) mode, differs != 0);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

static void versions_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        VersionsArgs *a = userdata;
        int r;

        running_remove(a->service, a->caller->uid);
        if (code == SELF_OK) {
                r = sd_bus_message_new_method_return(call, &reply);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "s", a->job_name);
                if (r >= 0)
                        r = append_versions(reply, report);
                if (r >= 0)
                        r = sd_bus_send(NULL, reply, NULL);
                if (r < 0)
                        (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Cannot answer: %s",
                                                          strerror(-r));
        } else if (code == SELF_NONE)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_NO_SUCH_VERSION,
                                                  "No version of this path that you may read");
        else {
                if (self_log_allow(a->caller->uid))
                        log_error("Versions() for uid %u (%s): the worker %s: %s", (unsigned) a->caller->uid,
                                  a->caller->sender, code < 0 ? "was killed" : "failed", *report ? report : "-");
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "The lookup failed%s",
                                                  code < 0 ? ": it took too long, or refsnapd is stopping" : "");
        }
}

static void restore_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata) {
        VersionsArgs *a = userdata;

        running_remove(a->service, a->caller->uid);
        if (code == SELF_OK) {
                if (!a->dry_run && self_log_allow(a->caller->uid))
                        (void) log_event(LOG_INFO, MESSAGE_ID_SELF_SERVICE_RESTORED, a->job_name,
                                         &(EventFields) { .snapshot = report, .has_counts = true, .files = 1 },
                                         "uid %u (%s) restored one entry of her own from %s", (unsigned) a->caller->uid,
                                         a->caller->sender, report);
                (void) sd_bus_reply_method_return(call, "ss", a->job_name, report);
        } else if (code == SELF_NONE)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_NO_SUCH_VERSION,
                                                  "No version of this path that you may read");
        else if (code == SELF_NOT_MADE)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Not restored: %s", report);
        else {
                if (self_log_allow(a->caller->uid))
                        log_error("RestoreMine() for uid %u (%s): the worker %s: %s", (unsigned) a->caller->uid,
                                  a->caller->sender, code < 0 ? "was killed" : "failed", *report ? report : "-");
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "The restore failed%s",
                                                  code < 0 ? ": it took too long, or refsnapd is stopping" : "");
        }
}

/* The job whose source holds path (the longest source, where one job's is inside another's), and the rest. */
static JobState *job_of_path(Manager *m, const char *path, const char **ret_rel) {
        JobState *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];
                const char *rest;

                if (!js->job || !js->job->source)
                        continue;
                rest = path_startswith(path, js->job->source);
                if (!rest || (best && strlen(js->job->source) <= best_len))
                        continue;
                best = js;
                best_len = strlen(js->job->source);
                *ret_rel = rest + strspn(rest, "/");
        }
        return best;
}

/* Versions() (restore false) and RestoreMine() (restore true), once the caller is known and allowed. */
static int self_call(sd_bus_message *msg, SelfService *s, const Caller *caller, bool restore, sd_bus_error *error) {
        Manager *m = s->manager;
        _cleanup_free_ char *path = NULL;
        const char *rel = NULL, *snapshot = NULL, *member = restore ? "RestoreMine" : "Versions";
        const void *bytes;
        bool dry_run = false;
        VersionsArgs *a;
        JobState *js;
        int dest = -EBADF;
        size_t size;
        int r;

        r = sd_bus_message_read_array(msg, 'y', &bytes, &size);
        if (r < 0)
                return r;
        if (restore) {
                r = sd_bus_message_read(msg, "sh", &snapshot, &dest);
                if (r < 0)
                        return r;
                r = bus_read_bool_option(msg, "dry_run", &dry_run, error);
        } else
                r = bus_read_no_options(msg, error);
        if (r < 0)
                return r;
        if (size == 0 || size >= PATH_MAX || memchr(bytes, 0, size))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "Not an absolute, normalized path");
        path = strndup(bytes, size);
        if (!path)
                return -ENOMEM;
        if (!path_is_normalized_absolute(path))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "Not an absolute, normalized path");
        if (m->stopping)
                return sd_bus_error_set(error, BUS_ERROR_STOPPING, "refsnapd is stopping");
        /* No job holds it: the same answer as a path no snapshot holds, or one she may not see. */
        js = job_of_path(m, path, &rel);
        if (!js || !self_path_valid(rel) || (restore && !*rel))
                return sd_bus_error_set(error, BUS_ERROR_NO_SUCH_VERSION, "No version of this path that you may read");
        if (s->n_running >= SELF_WORKERS_MAX || running_of(s, caller->uid) >= SELF_WORKERS_PER_USER)
                return sd_bus_error_setf(error, BUS_ERROR_BUSY,
                                         "Too many self-service requests at once (%d per user): try again when one has ended",
                                         SELF_WORKERS_PER_USER);
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *a = (VersionsArgs) {
                .service = s,
                .caller = caller_dup(caller),
                .job = js->job,
                .job_name = strdup(js->name),
                .rel = strdup(rel),
                .snapshot = restore ? strdup(snapshot) : NULL,
                .dest = dest,
                .dry_run = dry_run,
        };
        if (!a->caller || !a->job_name || !a->rel || (restore && !a->snapshot)) {
                versions_args_free(a);
                return -ENOMEM;
        }
        a->base = strrchr(a->rel, '/') ? strrchr(a->rel, '/') + 1 : a->rel;
        r = bus_child_spawn(m, msg, restore ? "refsnap-self-restore" : "refsnap-self", &(BusChildOptions) {
                                .timeout_usec = SELF_TIMEOUT_USEC,
                                .kill_on_disconnect = true,
                                .free_userdata = versions_args_free,
                                .may_log = versions_may_log,
                        }, versions_work, restore ? restore_done : versions_done, a);
        if (r < 0) {
                versions_args_free(a);
                return r;
        }
        s->running[s->n_running++] = caller->uid;
        if (self_log_allow(caller->uid))
                log_job(LOG_INFO, js->name, "%s() for uid %u (%s): %s as the caller%s", member, (unsigned) caller->uid,
                        caller->sender, restore ? "restoring" : "looking it up", dry_run ? " (dry run)" : "");
        return 1;
}

/* A new call of uid: parked only while her calls waiting or running are fewer than SELF_CALLS_PER_USER. */
static int self_admit(uid_t uid, void *userdata, sd_bus_error *error) {
        SelfService *s = userdata;
        size_t k = caller_registry_count(s->callers, uid) + running_of(s, uid);

        if (k < SELF_CALLS_PER_USER)
                return 0;
        log_debug("A self-service call of uid %u refused: %zu waiting or running", (unsigned) uid, k);
        return sd_bus_error_setf(error, BUS_ERROR_BUSY,
                                 "Too many self-service requests at once (%d per user, waiting or running): "
                                 "try again when one has ended", SELF_CALLS_PER_USER);
}

static int self_method(sd_bus_message *msg, SelfService *s, PolkitRegistry **polkit, bool restore,
                       sd_bus_error *error) {
        const Caller *caller;
        int r;

        /* Who: from the bus (parked while the bus driver says the groups), within her bound. */
        r = caller_identify(msg, &s->callers, self_admit, s, &caller, error);
        if (r == 0)
                return 1;
        if (r < 0) {
                caller_forget(s->callers, msg);
                return r;
        }
        /* May she: polkit (parked while it thinks; the caller stays known until then). */
        r = polkit_check_caller(msg, polkit, error);
        if (r == 0)
                return 1;
        if (r > 0)
                r = self_call(msg, s, caller, restore, error);
        caller_forget(s->callers, msg);
        return r;
}

int self_method_versions(sd_bus_message *msg, SelfService *s, PolkitRegistry **polkit, sd_bus_error *error) {
        return self_method(msg, s, polkit, false, error);
}

int self_method_restore_mine(sd_bus_message *msg, SelfService *s, PolkitRegistry **polkit, sd_bus_error *error) {
        return self_method(msg, s, polkit, true, error);
}
