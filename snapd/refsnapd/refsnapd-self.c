/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bus-names.h"
#include "chase.h"
#include "escape.h"
#include "fd-util.h"
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
#include "snapshot.h"
#include "snapshot-name.h"
#include "store.h"
#include "strv.h"
#include "time-util.h"

struct SelfService {
        Manager *manager;
        CallerRegistry *callers;
        /* The uid of each worker running. */
        uid_t running[SELF_WORKERS_MAX];
        size_t n_running;
        /* The guard snapshots asked for by each uid in the last hour (SELF_GUARDS_PER_HOUR). */
        struct {
                uid_t uid;
                usec_t times[SELF_GUARDS_PER_HOUR];
        } guards[SELF_GUARD_UIDS];
        size_t n_guards;
};

/*
 * Whether uid may have one more guard snapshot now (fewer than
 * SELF_GUARDS_PER_HOUR in the last hour); if so, it is counted.
 */
static bool guard_admit(SelfService *s, uid_t uid) {
        usec_t now = now_monotonic();
        size_t i, k = 0, oldest = 0;

        for (i = 0; i < s->n_guards && s->guards[i].uid != uid; i++)
                ;
        if (i == s->n_guards) {
                if (s->n_guards < SELF_GUARD_UIDS)
                        s->n_guards++;
                else {
                        /* The table is full: the uid whose newest guard is oldest makes room. */
                        usec_t best = UINT64_MAX;

                        for (size_t j = 0; j < s->n_guards; j++) {
                                usec_t newest = 0;

                                for (size_t g = 0; g < SELF_GUARDS_PER_HOUR; g++)
                                        newest = MAX(newest, s->guards[j].times[g]);
                                if (newest < best) {
                                        best = newest;
                                        i = j;
                                }
                        }
                }
                memset(&s->guards[i], 0, sizeof(s->guards[i]));
                s->guards[i].uid = uid;
        }
        for (size_t g = 0; g < SELF_GUARDS_PER_HOUR; g++) {
                usec_t t = s->guards[i].times[g];

                if (t != 0 && now < t + USEC_PER_HOUR)
                        k++;
                if (t < s->guards[i].times[oldest])
                        oldest = g;
        }
        if (k >= SELF_GUARDS_PER_HOUR)
                return false;
        s->guards[i].times[oldest] = now;
        return true;
}

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
        SELF_JOB_RUNNING = 4,   /* RestoreMine()'s guard: the job's store is locked */
        SELF_ERROR = 255,
};

/* RestoreMine()'s stages: the plan (as her, nothing done), the guard snapshot (root), the restore (as her). */
typedef enum RestoreStage { STAGE_PLAN, STAGE_GUARD, STAGE_RESTORE } RestoreStage;

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
        bool dry_run, delete;
        /*
         * The guard: the job whose source holds the destination as the
         * daemon sees it (the directory holding PATH, or the "to" option's,
         * checked in the worker to be the very directory of her
         * descriptor), and that directory relative to its source.
         */
        const Job *gjob;
        char *gjob_name;
        char *grel;
        RestoreStage stage;
        bool replace;           /* the restore stage may replace: a guard holds what is there, or the newest snapshot */
        char guard[SNAPSHOT_NAME_MAX];  /* the guard snapshot taken, "" none */
        char kept_in[SNAPSHOT_NAME_MAX]; /* no guard: what is replaced is this snapshot's already */
        bool would_guard;       /* the dry run: a guard would be taken */
        char *plan;             /* the plan's "P ..." lines: the live entries the restore may replace or remove, as seen */
        char who[320];          /* "uid U, pid P, unit UNIT (:1.N)", for the log */
        bool handed_on;         /* the next stage's now: not freed with this one */
        bool finished;          /* the running count dropped */
} VersionsArgs;

static void versions_args_free(void *p) {
        VersionsArgs *a = p;

        if (!a)
                return;
        if (a->handed_on) {
                a->handed_on = false;
                return;
        }
        caller_free(a->caller);
        free(a->job_name);
        free(a->rel);
        free(a->snapshot);
        free(a->gjob_name);
        free(a->grel);
        free(a->plan);
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
        char **guarded = NULL, **skipped = NULL;
        bool delete_limited = false;
        int store, live, gdir = -EBADF, r;

        store = store_open(a->job->store, false);
        if (store >= 0 && store_list(store, &names, &n) < 0) {
                fprintf(report, "cannot list the snapshots: %m");
                return SELF_ERROR;
        }
        if (store < 0 && store != -ENOENT) {
                fprintf(report, "cannot open the store: %s", strerror(-store));
                return SELF_ERROR;
        }
        /* One descriptor per snapshot, three per level of a directory restored, and a few more. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n + 64 + 3 * SELF_RESTORE_DEPTH_MAX &&
            rl.rlim_cur < rl.rlim_max) {
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
        /*
         * --delete from a guard of some paths: only at or below them (it
         * holds nothing else; a list it cannot read: nowhere).
         */
        if (a->snapshot && a->delete && which < n) {
                r = store_read_guarded(store, names[which], &guarded);
                delete_limited = r != 0;
                /* What it skipped is left alone; a list that cannot be read: nothing removed. */
                if (store_read_skipped(store, names[which], &skipped) < 0) {
                        delete_limited = true;
                        guarded = strv_free(guarded);
                }
        }
        safe_close(store);
        live = chase_dir(AT_FDCWD, a->job->source, &(Chase) { .flags = CHASE_NO_FUSE });
        if (live == -ENOENT || live == -ENOTDIR)
                live = -EBADF;          /* no live tree: the snapshots alone decide */
        else if (live < 0) {
                fprintf(report, "cannot open the source: %s", strerror(-live));
                return SELF_ERROR;
        }

        /*
         * RestoreMine(): the directory a guard snapshot would be of (the
         * destination as the daemon sees it), to be compared, as her, with
         * her descriptor.
         */
        if (a->snapshot && a->gjob)
                gdir = chase_dir(AT_FDCWD, a->gjob->source, &(Chase) { .flags = CHASE_NO_FUSE });

        {
                _cleanup_free_ int *keep = calloc(n + 4, sizeof(int));     /* the roots, live, dest, gdir, the report */

                if (!keep)
                        return SELF_ERROR;
                for (size_t i = 0; i < n; i++)
                        if (fds[i] >= 0)
                                keep[k++] = fds[i];
                if (live >= 0)
                        keep[k++] = live;
                if (a->snapshot)
                        keep[k++] = a->dest;
                if (gdir >= 0)
                        keep[k++] = gdir;
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
                SelfTree t = {
                        .dry_run = a->stage == STAGE_PLAN || a->dry_run,
                        .replace = a->stage == STAGE_PLAN || a->replace,
                        .delete = a->delete,
                        .delete_limited = delete_limited,
                        .delete_below = guarded,
                        .exclude = a->job->exclude,
                        .keep = skipped,
                        .newest = -EBADF,
                        .out = report,
                        /* The plan records what it would replace or remove; the restore touches only that. */
                        .record = a->stage == STAGE_PLAN,
                        .plan = a->stage == STAGE_RESTORE ? (a->plan ? a->plan : "") : NULL,
                };
                _cleanup_free_ char *dest_rel = NULL;
                struct stat gs, ds;
                bool guardable;

                if (which >= n || fds[which] < 0)
                        return SELF_NONE;
                /*
                 * A guard can keep what is there only where her descriptor
                 * is the directory the daemon would guard: its path below
                 * the source followed as her (what she may not search
                 * tells her nothing), no link, no other mount.
                 */
                if (gdir >= 0) {
                        int g = chase_dir(gdir, a->grel, &(Chase) { .flags = CHASE_NO_XDEV });

                        safe_close(gdir);
                        gdir = g;
                }
                guardable = gdir >= 0 && fstat(gdir, &gs) == 0 && fstat(a->dest, &ds) == 0 && stat_inode_same(&gs, &ds);
                safe_close(gdir);
                /*
                 * What is replaced is already the newest snapshot's, as it
                 * is: only where that snapshot is of the same job and path.
                 */
                if (guardable && a->gjob == a->job && n > 0 && fds[n - 1] >= 0 &&
                    snapshot_name_time(names[n - 1], &t.newest_time) >= 0) {
                        const char *slash = strrchr(a->rel, '/');

                        if (slash ? strlen(a->grel) == (size_t) (slash - a->rel) &&
                                    strncmp(a->grel, a->rel, slash - a->rel) == 0 : !*a->grel) {
                                t.newest = fds[n - 1];
                                snprintf(a->kept_in, sizeof(a->kept_in), "%s", names[n - 1]);
                        }
                }
                /*
                 * What --delete leaves alone is judged where it is: the
                 * excludes of the job holding the destination, at its path
                 * there (--to elsewhere, or into another job).
                 */
                if (a->gjob) {
                        dest_rel = *a->grel ? path_join(a->grel, a->base) : strdup(a->base);
                        if (!dest_rel)
                                return SELF_ERROR;
                        t.exclude = a->gjob->exclude;
                        t.dest_rel = dest_rel;
                }
                r = self_restore_tree(live, fds, n, which, a->rel, a->dest, a->base, &t);
                if (r == -ENOENT)
                        return SELF_NONE;
                if (r == -EMEDIUMTYPE)
                        fprintf(report, "E it is neither a file nor a symbolic link nor a directory: never made "
                                "for a user\n");
                else if (r == -EEXIST) {
                        _cleanup_free_ char *e = cescape(a->base);

                        fprintf(report, "E %s exists in the destination: move it away or give --to DIR\n",
                                e ? e : "it");
                } else if (r == -EISDIR)
                        fprintf(report, "E a directory is where it would go: not replaced by a file\n");
                else if (r == -ENOTDIR)
                        fprintf(report, "E it is a directory, and where it would go is not one\n");
                else if (r == -ESTALE)
                        fprintf(report, "E what is where it would go changed since the plan: nothing replaced\n");
                else if (r == -EPERM && t.refused > 0)
                        fprintf(report, "E a directory of another user's is where it would go: not merged into\n");
                else if (r < 0)
                        fprintf(report, "E cannot %s: %s\n", t.made + t.replaced > 0 || r == -EOPNOTSUPP ? "make it" :
                                "use the destination", strerror(-r));
                fprintf(report, "S %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %s\n",
                        names[which], t.made, t.replaced, t.removed, t.kept, t.refused, t.unkept, guardable,
                        t.newest >= 0 ? a->kept_in : "-");
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

static void restore_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata);

/* The call is answered: the worker's place is free again (once). */
static void restore_finish(VersionsArgs *a) {
        if (a->finished)
                return;
        a->finished = true;
        running_remove(a->service, a->caller->uid);
}

/* The report's summary line ("S ..."): 0, or -EBADMSG. */
typedef struct RestoreSummary {
        char snapshot[SNAPSHOT_NAME_MAX + 1];
        uint64_t made, replaced, removed, kept, refused, unkept;
        int guardable;
        char newest[SNAPSHOT_NAME_MAX + 1];
} RestoreSummary;

static int parse_summary(const char *report, RestoreSummary *ret) {
        const char *p = report;

        for (;;) {
                if (strncmp(p, "S ", 2) == 0)
                        return sscanf(p, "S %32s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                                      " %d %32s", ret->snapshot, &ret->made, &ret->replaced, &ret->removed, &ret->kept,
                                      &ret->refused, &ret->unkept, &ret->guardable, ret->newest) == 9 ? 0 : -EBADMSG;
                p = strchr(p, '\n');
                if (!p)
                        return -EBADMSG;
                p++;
        }
}

/* The plan's "P ..." lines (what the restore may replace or remove, as the plan saw it), in *ret. */
static int plan_lines(const char *report, char **ret) {
        size_t size = 0;
        char *buf = NULL;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        for (const char *p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "P ", 2) == 0)
                        fprintf(f, "%.*s\n", (int) strcspn(p, "\n"), p);
        if (fclose(f) != 0 || !buf) {
                free(buf);
                return -ENOMEM;
        }
        free(*ret);
        *ret = buf;
        return 0;
}

/* The report's "E ..." line, its text (a new string), or NULL. */
static char *report_error(const char *report) {
        for (const char *p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "E ", 2) == 0)
                        return strndup(p + 2, strcspn(p + 2, "\n"));
        return NULL;
}

static int unhex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The reply: (s job, s snapshot, a(yays) entries, a{sv} info), the entries from the report's lines. */
static int restore_reply(sd_bus_message *call, VersionsArgs *a, const char *report, const RestoreSummary *sum) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "ss", a->job_name, sum->snapshot);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(yays)");
        for (const char *p = report; r >= 0 && p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                char path[PATH_MAX + 2];
                size_t len = 0;
                const char *q = p + 2, *why = "";

                if (!strchr("+~-=!", p[0]) || p[1] != ' ')
                        continue;
                while (unhex(q[0]) >= 0 && unhex(q[1]) >= 0 && len < sizeof(path) - 1) {
                        path[len++] = (char) (unhex(q[0]) << 4 | unhex(q[1]));
                        q += 2;
                }
                if (*q == ' ')
                        why = q + 1;
                r = sd_bus_message_open_container(reply, 'r', "yays");
                if (r >= 0)
                        r = sd_bus_message_append(reply, "y", (uint8_t) p[0]);
                if (r >= 0)
                        r = sd_bus_message_append_array(reply, 'y', path, len);
                if (r >= 0) {
                        _cleanup_free_ char *w = strndup(why, strcspn(why, "\n"));

                        r = w ? sd_bus_message_append(reply, "s", w) : -ENOMEM;
                }
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "a{sv}", 5,
                                          "guard", "s", a->guard,
                                          "guard_job", "s", a->gjob_name ? a->gjob_name : "",
                                          "would_guard", "b", a->would_guard,
                                          "kept_in", "s", a->kept_in,
                                          "refused", "t", sum->refused);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

/* The next stage of a->stage's, for call: 0, or -errno (nothing started: the caller answers). */
static int restore_next(sd_bus_message *call, VersionsArgs *a, RestoreStage stage);

/* The guard snapshot, in a child of the daemon (root): of the destination's entry only, marked as hers. */
static int guard_work(FILE *report, void *userdata) {
        VersionsArgs *a = userdata;
        _cleanup_free_ char *path = *a->grel ? path_join(a->grel, a->base) : strdup(a->base), *log = NULL;
        _cleanup_fclose_ FILE *logf = NULL;
        char description[128], name[SNAPSHOT_NAME_MAX];
        char *paths[2] = { path, NULL };
        SnapshotFacts f = {};
        size_t log_size = 0;
        int r;

        /* What the snapshot says names her files: kept apart, and only its first line, escaped, said on failure. */
        logf = open_memstream(&log, &log_size);
        if (!path || !logf)
                return SELF_ERROR;
        snprintf(description, sizeof(description), "self-service restore of uid %u", (unsigned) a->caller->uid);
        /* Tests only (test-self-service-bus): a guard that takes its time, to see a due snapshot wait for it. */
        if (getenv("REFSNAP_TEST_GUARD_SLEEP"))
                sleep(atoi(getenv("REFSNAP_TEST_GUARD_SLEEP")));
        r = snapshot_take(a->gjob, NULL, NULL, logf, &(SnapshotPre) { .guard = true, .paths = paths,
                          .description = description }, name, &f);
        if (r == -EBUSY)
                return SELF_JOB_RUNNING;
        if (r < 0 || r == SNAPSHOT_SKIPPED || f.skipped > 0) {
                _cleanup_free_ char *first = NULL, *e = NULL;

                fflush(logf);
                first = strndup(log ? log : "", log ? strcspn(log, "\n") : 0);
                e = first ? cescape(first) : NULL;
                if (r < 0)
                        fprintf(report, "E %s%s%s\n", strerror(-r), e && *e ? ": " : "", e ? e : "");
                else
                        fprintf(report, "E it could not hold everything there (%" PRIu64 " skipped)%s%s\n",
                                (uint64_t) f.skipped, e && *e ? ": " : "", e ? e : "");
                return SELF_ERROR;
        }
        fprintf(report, "G %s\n", name);
        return SELF_OK;
}

static void guard_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata) {
        VersionsArgs *a = userdata;
        JobState *js = manager_find_job(a->service->manager, a->gjob_name);
        int r;

        if (js)
                manager_guard_end(js);
        /* The report is the guard child's alone: "G NAME" or "E WHY". */
        if (code == SELF_OK && sscanf(report, "G %31s", a->guard) == 1) {
                log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_COMPLETE, a->gjob_name, &(EventFields) { .snapshot = a->guard },
                          "guard snapshot %s taken for a self-service restore by %s", a->guard, a->who);
                r = restore_next(call, a, STAGE_RESTORE);
                if (r >= 0)
                        return;
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Not restored: %s", strerror(-r));
        } else if (code == SELF_JOB_RUNNING)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_JOB_RUNNING,
                                                  "A snapshot, prune or restore of %s is running, so no guard snapshot "
                                                  "could be taken: nothing restored; try again when it has ended",
                                                  a->gjob_name);
        else {
                _cleanup_free_ char *e = report_error(report);

                log_job(LOG_WARNING, a->gjob_name, "guard snapshot for a self-service restore by %s failed: %s",
                        a->who, e ? e : code < 0 ? "killed" : "-");
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED,
                                                  "Not restored: the guard snapshot failed: nothing restored (%s)",
                                                  e ? e : code < 0 ? "it took too long" : "see the journal");
        }
        restore_finish(a);
}

static int restore_next(sd_bus_message *call, VersionsArgs *a, RestoreStage stage) {
        Manager *m = a->service->manager;
        JobState *js = NULL;
        int r;

        if (m->stopping)
                return -ESHUTDOWN;
        a->stage = stage;
        /* The jobs as they are now (a reload may have replaced them since the last stage). */
        js = manager_find_job(m, a->job_name);
        if (!js || !js->job)
                return -ENOENT;
        a->job = js->job;
        js = a->gjob_name ? manager_find_job(m, a->gjob_name) : NULL;
        a->gjob = js ? js->job : NULL;
        if (stage == STAGE_GUARD && !a->gjob)
                return -ENOENT;
        if (stage != STAGE_GUARD)
                js = NULL;
        a->handed_on = true;
        r = bus_child_spawn(m, call, stage == STAGE_GUARD ? "refsnap-self-guard" : "refsnap-self-restore",
                            &(BusChildOptions) {
                                .timeout_usec = m->config->self_service_timeout,
                                /* A guard is finished even if she leaves (else left partial, for the next run). */
                                .kill_on_disconnect = stage != STAGE_GUARD,
                                .free_userdata = versions_args_free,
                                .may_log = versions_may_log,
                        }, stage == STAGE_GUARD ? guard_work : versions_work,
                        stage == STAGE_GUARD ? guard_done : restore_done, a);
        if (r < 0) {
                a->handed_on = false;
                return r;
        }
        if (js)
                manager_guard_begin(js);
        return 0;
}

static void restore_done(sd_bus_message *call, int code, const char *report, size_t size, void *userdata) {
        VersionsArgs *a = userdata;
        RestoreSummary sum = {};
        int r;

        if (code == SELF_NONE) {
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_NO_SUCH_VERSION,
                                                  "No version of this path that you may read");
                restore_finish(a);
                return;
        }
        if (code == SELF_NOT_MADE) {
                _cleanup_free_ char *e = report_error(report);

                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Not restored: %s", e ? e : "-");
                restore_finish(a);
                return;
        }
        if (code != SELF_OK || parse_summary(report, &sum) < 0) {
                if (self_log_allow(a->caller->uid))
                        log_error("RestoreMine() for uid %u (%s): the worker %s: %s", (unsigned) a->caller->uid,
                                  a->caller->sender, code < 0 ? "was killed" : "failed", *report ? report : "-");
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "The restore failed%s",
                                                  code < 0 ? ": it took too long, or refsnapd is stopping" : "");
                restore_finish(a);
                return;
        }
        if (a->stage == STAGE_PLAN) {
                bool touches = sum.replaced + sum.removed > 0, needs_guard = touches && sum.unkept > 0;

                if (strcmp(sum.newest, "-") == 0 || needs_guard)
                        a->kept_in[0] = '\0';
                else
                        snprintf(a->kept_in, sizeof(a->kept_in), "%.*s", (int) sizeof(a->kept_in) - 1, sum.newest);
                if (touches && !sum.guardable) {
                        (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED,
                                                          "Not restored: %" PRIu64 " live entr%s would be replaced or "
                                                          "removed where no guard snapshot can keep them (the "
                                                          "destination is in no job's source as refsnapd sees it): "
                                                          "move them away or give --to DIR",
                                                          sum.replaced + sum.removed,
                                                          sum.replaced + sum.removed == 1 ? "y" : "ies");
                        restore_finish(a);
                        return;
                }
                if (a->dry_run) {
                        a->would_guard = needs_guard;
                        if (restore_reply(call, a, report, &sum) < 0)
                                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Cannot answer");
                        restore_finish(a);
                        return;
                }
                a->replace = touches;
                /* The snapshot planned is the one restored ("latest" resolved once, here). */
                free(a->snapshot);
                a->snapshot = strdup(sum.snapshot);
                if (!a->snapshot || plan_lines(report, &a->plan) < 0) {
                        (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Not restored: %s", strerror(ENOMEM));
                        restore_finish(a);
                        return;
                }
                if (needs_guard) {
                        JobState *js = manager_find_job(a->service->manager, a->gjob_name);

                        if (js && js->child) {
                                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_JOB_RUNNING,
                                                                  "A snapshot of %s is running, so no guard snapshot "
                                                                  "could be taken: nothing restored; try again when it "
                                                                  "has ended", a->gjob_name);
                                restore_finish(a);
                                return;
                        }
                        if (!guard_admit(a->service, a->caller->uid)) {
                                if (self_log_allow(a->caller->uid))
                                        log_job(LOG_NOTICE, a->gjob_name, "self-service restore by %s refused: more "
                                                "than %d guard snapshots in an hour", a->who, SELF_GUARDS_PER_HOUR);
                                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_BUSY,
                                                                  "Too many guard snapshots for you in the last hour "
                                                                  "(%d): nothing restored; try again later, or give "
                                                                  "--to a directory where nothing is replaced",
                                                                  SELF_GUARDS_PER_HOUR);
                                restore_finish(a);
                                return;
                        }
                }
                r = restore_next(call, a, needs_guard ? STAGE_GUARD : STAGE_RESTORE);
                if (r < 0) {
                        (void) sd_bus_reply_method_errorf(call, r == -ESHUTDOWN ? BUS_ERROR_STOPPING : BUS_ERROR_FAILED,
                                                          "Not restored: %s", strerror(-r));
                        restore_finish(a);
                }
                return;
        }
        /* STAGE_RESTORE: done. */
        if (self_log_allow(a->caller->uid))
                (void) log_event(sum.refused > 0 ? LOG_WARNING : LOG_INFO, MESSAGE_ID_SELF_SERVICE_RESTORED,
                                 a->job_name, &(EventFields) { .snapshot = sum.snapshot, .has_counts = true,
                                 .files = sum.made + sum.replaced },
                                 "uid %u (%s) restored one entry of her own from %s: %" PRIu64 " made, %" PRIu64
                                 " replaced, %" PRIu64 " removed, %" PRIu64 " refused%s%s", (unsigned) a->caller->uid,
                                 a->caller->sender, sum.snapshot, sum.made, sum.replaced, sum.removed, sum.refused,
                                 *a->guard ? ", guard snapshot " : "", a->guard);
        if (restore_reply(call, a, report, &sum) < 0)
                (void) sd_bus_reply_method_errorf(call, BUS_ERROR_FAILED, "Cannot answer");
        restore_finish(a);
}

/* RestoreMine()'s options: dry_run (b), delete (b), to (ay: the destination's path as she sees it, absolute). */
static int read_restore_options(sd_bus_message *msg, bool *dry_run, bool *delete, char **to, sd_bus_error *error) {
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *key;

                r = sd_bus_message_enter_container(msg, 'e', "sv");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, "dry_run") == 0 || strcmp(key, "delete") == 0) {
                        int v;

                        r = sd_bus_message_read(msg, "v", "b", &v);
                        if (r < 0)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Option '%s' is a boolean", key);
                        *(strcmp(key, "delete") == 0 ? delete : dry_run) = v;
                } else if (strcmp(key, "to") == 0) {
                        const void *p;
                        size_t size;

                        r = sd_bus_message_enter_container(msg, 'v', "ay");
                        if (r >= 0)
                                r = sd_bus_message_read_array(msg, 'y', &p, &size);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(msg);
                        if (r < 0)
                                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                        "Option 'to' is a byte array");
                        free(*to);
                        *to = size > 0 && size < PATH_MAX && !memchr(p, 0, size) ? strndup(p, size) : NULL;
                        if (!*to || !path_is_normalized_absolute(*to))
                                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                        "Option 'to' is not an absolute, normalized path");
                } else
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option '%s'", key);
                r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_exit_container(msg);
}

/*
 * "uid U, pid P, unit UNIT (:1.N)" of a call's sender, for the log only
 * (the pid as the bus says it, the unit read from /proc by it, so never
 * for a decision).
 */
static void format_who(sd_bus_message *msg, uid_t uid, char *buf, size_t size) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *unit = NULL, *sender = sd_bus_message_get_sender(msg);
        pid_t pid = 0;

        if (sd_bus_query_sender_creds(msg, SD_BUS_CREDS_PID | SD_BUS_CREDS_UNIT | SD_BUS_CREDS_AUGMENT, &creds) >= 0) {
                (void) sd_bus_creds_get_pid(creds, &pid);
                if (sd_bus_creds_get_unit(creds, &unit) < 0)
                        unit = NULL;
        }
        snprintf(buf, size, "uid %u, pid %d, unit %s (%s)", (unsigned) uid, (int) pid, unit ? unit : "-",
                 sender ? sender : "-");
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
        _cleanup_free_ char *path = NULL, *to = NULL;
        const char *rel = NULL, *grel = NULL, *snapshot = NULL, *member = restore ? "RestoreMine" : "Versions";
        const void *bytes;
        bool dry_run = false, delete = false;
        JobState *gjs = NULL;
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
                r = read_restore_options(msg, &dry_run, &delete, &to, error);
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
                .delete = delete,
                .stage = STAGE_PLAN,
        };
        if (!a->caller || !a->job_name || !a->rel || (restore && !a->snapshot)) {
                versions_args_free(a);
                return -ENOMEM;
        }
        a->base = strrchr(a->rel, '/') ? strrchr(a->rel, '/') + 1 : a->rel;
        if (restore) {
                /* What a guard snapshot would be of: the job holding the destination, as the daemon sees it. */
                if (to)
                        gjs = job_of_path(m, to, &grel);
                else {
                        gjs = js;
                        grel = a->rel;
                }
                if (gjs) {
                        a->gjob = gjs->job;
                        a->gjob_name = strdup(gjs->name);
                        a->grel = to ? strdup(grel) : strndup(a->rel, a->base > a->rel ? a->base - a->rel - 1 : 0);
                        if (!a->gjob_name || !a->grel || !self_path_valid(a->grel)) {
                                free(a->gjob_name);
                                a->gjob_name = NULL;
                                a->gjob = NULL;
                        }
                }
                format_who(msg, caller->uid, a->who, sizeof(a->who));
        }
        r = bus_child_spawn(m, msg, restore ? "refsnap-self-restore" : "refsnap-self", &(BusChildOptions) {
                                .timeout_usec = m->config->self_service_timeout,
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
