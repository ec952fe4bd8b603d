/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl: look at and manage refsnap's snapshots.  list, diff,
 * restore, prune and check-config work on the configuration and the
 * stores directly (the daemon may be stopped); status and snapshot ask
 * the daemon over D-Bus.  See refsnapctl(8).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>
#include <unistd.h>

#include "bus-names.h"
#include "config.h"
#include "format-util.h"
#include "json-util.h"
#include "path-util.h"
#include "chase.h"
#include "macro.h"
#include "reflink.h"
#include "restore.h"
#include "prune.h"
#include "snapshot.h"
#include "store.h"
#include "strv.h"
#include "tree-diff.h"

#define DEFAULT_CONFIG "/etc/refsnap/refsnapd.conf"
#define DEFAULT_DROPINS "/etc/refsnap/conf.d"

enum {
        EXIT_OK = 0,
        EXIT_FAIL = 1,          /* the operation failed */
        EXIT_USAGE = 2,
        EXIT_NOT_RUNNING = 3,   /* status, snapshot: refsnapd is not running */
        EXIT_NO_JOB = 4,        /* no such job or snapshot */
        EXIT_DENIED = 5,        /* not permitted */
};

static const char *arg_config = DEFAULT_CONFIG;
static const char *arg_dropins = DEFAULT_DROPINS;
static bool arg_json = false;
static bool arg_dry_run = false;
static bool arg_delete = false;
static const char *arg_to = NULL;

static int load(Config **ret) {
        _cleanup_free_ char *errors = NULL;
        int r = config_load(arg_config, arg_dropins, ret, &errors);

        if (r < 0) {
                fputs(errors ? errors : "", stderr);
                fprintf(stderr, "refsnapctl: %s: the configuration has errors\n", arg_config);
        }
        return r;
}

/* 5 for "not permitted", 1 for any other failure. */
static int exit_for(int r) {
        return r == -EACCES || r == -EPERM ? EXIT_DENIED : EXIT_FAIL;
}

static int list_job(const Job *job, bool *first) {
        _cleanup_close_ int store = store_open(job->store, false);
        char **names = NULL;
        size_t n = 0;

        if (store < 0 && store != -ENOENT) {
                fprintf(stderr, "refsnapctl: %s: store %s: %s\n", job->name, job->store, strerror(-store));
                return exit_for(store);
        }
        if (store >= 0 && store_list(store, &names, &n) < 0) {
                fprintf(stderr, "refsnapctl: %s: cannot list %s\n", job->name, job->store);
                return EXIT_FAIL;
        }
        for (size_t i = 0; i < n; i++) {
                SnapshotFacts f = {};
                bool known = store_read_facts(store, names[i], &f) == 0;
                char size[16];

                if (arg_json) {
                        printf("%s{\"job\":", *first ? "" : ",");
                        json_string(stdout, job->name);
                        printf(",\"snapshot\":");
                        json_string(stdout, names[i]);
                        if (known)
                                printf(",\"start\":%lld,\"end\":%lld,\"files\":%llu,\"bytes\":%llu}",
                                       (long long) f.start, (long long) f.end,
                                       (unsigned long long) f.files, (unsigned long long) f.bytes);
                        else
                                printf("}");
                } else if (known)
                        printf("%-16s %-24s %8llu %8s %6llds\n", job->name, names[i],
                               (unsigned long long) f.files, format_bytes(f.bytes, size, sizeof(size)),
                               (long long) (f.end - f.start));
                else
                        printf("%-16s %-24s %8s %8s %7s\n", job->name, names[i], "-", "-", "-");
                *first = false;
        }
        strv_free(names);
        return EXIT_OK;
}

static int verb_list(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        bool first = true;
        int ret = EXIT_OK, r;

        r = load(&c);
        if (r < 0)
                return exit_for(r);
        if (argc > 1 && !config_find_job(c, argv[1])) {
                fprintf(stderr, "refsnapctl: no job '%s' in the configuration\n", argv[1]);
                return EXIT_NO_JOB;
        }
        if (arg_json)
                printf("[");
        else
                printf("%-16s %-24s %8s %8s %7s\n", "JOB", "SNAPSHOT", "FILES", "SIZE", "TOOK");
        for (size_t i = 0; i < c->n_jobs; i++)
                if (argc < 2 || strcmp(argv[1], c->jobs[i]->name) == 0) {
                        r = list_job(c->jobs[i], &first);
                        if (r != EXIT_OK)
                                ret = r;
                }
        if (arg_json)
                printf("]\n");
        return ret;
}

/* The daemon over D-Bus. */
static int bus_exit(const sd_bus_error *e, int r) {
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
            r == -ENOENT || r == -ECONNREFUSED) {
                fprintf(stderr, "refsnapctl: refsnapd is not running\n");
                return EXIT_NOT_RUNNING;
        }
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED) || r == -EACCES || r == -EPERM) {
                fprintf(stderr, "refsnapctl: permission denied: refsnapd answers root only\n");
                return EXIT_DENIED;
        }
        if (e && e->name)
                fprintf(stderr, "refsnapctl: %s (%s)\n", e->message ? e->message : strerror(-r), e->name);
        else
                fprintf(stderr, "refsnapctl: %s\n", strerror(-r));
        if (sd_bus_error_has_names(e, BUS_ERROR_NO_SUCH_JOB))
                return EXIT_NO_JOB;
        return EXIT_FAIL;
}

static int bus_open(sd_bus **ret) {
        int r = sd_bus_open_system(ret);

        if (r < 0) {
                fprintf(stderr, "refsnapctl: cannot reach the system bus (%s): refsnapd is not running\n",
                        strerror(-r));
                return EXIT_NOT_RUNNING;
        }
        return EXIT_OK;
}

static const char *format_usec(uint64_t t, char *buf, size_t size) {
        time_t s = (time_t) (t / 1000000);
        struct tm tm;

        if (t == 0)
                snprintf(buf, size, "-");
        else
                strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&s, &tm));
        return buf;
}

static int verb_status(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *jobs = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *version, *state, *status;
        bool first = true;
        int r;

        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "GetStatus", &e, &reply, "");
        if (r < 0)
                return bus_exit(&e, r);
        r = sd_bus_message_read(reply, "sss", &version, &state, &status);
        if (r >= 0)
                r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "ListJobs", &e, &jobs, "");
        if (r < 0)
                return bus_exit(&e, r);
        if (arg_json) {
                printf("{\"daemon\":");
                json_string(stdout, state);
                printf(",\"version\":");
                json_string(stdout, version);
                printf(",\"jobs\":[");
        } else {
                printf("refsnapd %s: %s\n", version, state);
                printf("%-16s %-21s %-21s %s\n", "JOB", "LAST", "NEXT", "RESULT");
        }
        r = sd_bus_message_enter_container(jobs, 'a', "(sssttsb)");
        while (r >= 0) {
                const char *name, *source, *store, *result;
                uint64_t last, next;
                int running;
                char a[32], b[32];

                r = sd_bus_message_read(jobs, "(sssttsb)", &name, &source, &store, &last, &next, &result,
                                        &running);
                if (r <= 0)
                        break;
                if (arg_json) {
                        printf("%s{\"job\":", first ? "" : ",");
                        json_string(stdout, name);
                        printf(",\"source\":");
                        json_string(stdout, source);
                        printf(",\"store\":");
                        json_string(stdout, store);
                        printf(",\"last\":%llu,\"next\":%llu,\"running\":%s,\"result\":",
                               (unsigned long long) (last / 1000000), (unsigned long long) (next / 1000000),
                               running ? "true" : "false");
                        json_string(stdout, result);
                        printf("}");
                } else
                        printf("%-16s %-21s %-21s %s\n", name, format_usec(last, a, sizeof(a)),
                               running ? "running" : format_usec(next, b, sizeof(b)), result);
                first = false;
        }
        if (arg_json)
                printf("]}\n");
        if (r < 0) {
                fprintf(stderr, "refsnapctl: bad answer from refsnapd: %s\n", strerror(-r));
                return EXIT_FAIL;
        }
        return EXIT_OK;
}

static int verb_snapshot(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *name;
        int r;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: snapshot JOB\n");
                return EXIT_USAGE;
        }
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Snapshot");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", argv[1]);
        if (r < 0)
                return bus_exit(NULL, r);
        /* The answer comes when the snapshot is complete: wait for it. */
        r = sd_bus_call(bus, call, 24ULL * 3600 * 1000000, &e, &reply);
        if (r < 0)
                return bus_exit(&e, r);
        r = sd_bus_message_read(reply, "s", &name);
        if (r < 0)
                return bus_exit(NULL, r);
        printf("%s: snapshot %s\n", argv[1], name);
        return EXIT_OK;
}

/* Prune through the daemon when it runs; directly when it does not. */
static int prune_through_daemon(const char *job) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *report;
        uint32_t n;
        int r;

        if (sd_bus_open_system(&bus) < 0)
                return -ENOTCONN;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Prune", &e, &reply, "sb", job,
                               (int) arg_dry_run);
        if (r < 0) {
                if (sd_bus_error_has_names(&e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
                    r == -ENOENT || r == -ECONNREFUSED)
                        return -ENOTCONN;
                return bus_exit(&e, r);
        }
        r = sd_bus_message_read(reply, "us", &n, &report);
        if (r < 0)
                return bus_exit(NULL, r);
        fputs(report, stdout);
        printf("%u snapshot%s %s\n", n, n == 1 ? "" : "s", arg_dry_run ? "would be removed" : "removed");
        return EXIT_OK;
}

static int verb_prune(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        const Job *job;
        int r;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: prune JOB [--dry-run]\n");
                return EXIT_USAGE;
        }
        r = prune_through_daemon(argv[1]);
        if (r != -ENOTCONN)
                return r;
        r = load(&c);
        if (r < 0)
                return exit_for(r);
        job = config_find_job(c, argv[1]);
        if (!job) {
                fprintf(stderr, "refsnapctl: no job '%s' in the configuration\n", argv[1]);
                return EXIT_NO_JOB;
        }
        r = snapshot_prune(job, time(NULL), arg_dry_run, stdout);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: prune failed: %s\n", job->name, strerror(-r));
                return exit_for(r);
        }
        printf("%d snapshot%s %s\n", r, r == 1 ? "" : "s", arg_dry_run ? "would be removed" : "removed");
        return EXIT_OK;
}

static const Job *find_job(const Config *c, const char *name) {
        const Job *job = config_find_job(c, name);

        if (!job)
                fprintf(stderr, "refsnapctl: no job '%s' in the configuration\n", name);
        return job;
}

/*
 * Open the snapshot arg ("latest" or a name) of the store; its name goes
 * to name.  Returns a descriptor, or -errno after saying why.
 */
static int open_snapshot(const Job *job, int store, const char *arg, char name[static SNAPSHOT_NAME_MAX]) {
        int fd;

        if (store < 0) {
                fprintf(stderr, "refsnapctl: %s: store %s: %s\n", job->name, job->store, strerror(-store));
                return store;
        }
        if (strcmp(arg, "latest") == 0) {
                char **names = NULL;
                size_t n = 0;
                int r = store_list(store, &names, &n);

                if (r >= 0 && n == 0)
                        r = -ENOENT;
                if (r < 0) {
                        strv_free(names);
                        fprintf(stderr, "refsnapctl: %s: no snapshots\n", job->name);
                        return r;
                }
                snprintf(name, SNAPSHOT_NAME_MAX, "%s", names[n - 1]);
                strv_free(names);
        } else if (!snapshot_name_valid(arg)) {
                fprintf(stderr, "refsnapctl: '%s' is not a snapshot name (YYYY-MM-DDTHH:MM:SSZ or latest)\n", arg);
                return -EINVAL;
        } else
                snprintf(name, SNAPSHOT_NAME_MAX, "%s", arg);
        fd = openat(store, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "refsnapctl: %s: snapshot %s: %s\n", job->name, name,
                        errno == ENOENT ? "no such snapshot" : strerror(errno));
                return -errno;
        }
        return fd;
}

static int exit_for_snapshot(int r) {
        return r == -ENOENT || r == -EINVAL ? EXIT_NO_JOB : exit_for(r);
}

/* PATH relative to the job's source: absolute ones must lie under it. */
static int job_relative(const Job *job, const char *path, char **ret) {
        size_t n = strlen(job->source);
        int r;

        if (path[0] == '/') {
                if (strncmp(path, job->source, n) != 0 || (path[n] != '/' && path[n] != '\0')) {
                        fprintf(stderr, "refsnapctl: %s is not under %s, the source of %s\n", path,
                                job->source, job->name);
                        return -EINVAL;
                }
                path += n;
        }
        r = path_normalize_relative(path, ret);
        if (r < 0)
                fprintf(stderr, "refsnapctl: %s: \"..\" is not allowed in a path\n", path);
        return r;
}

/*
 * The configuration, JOB, its store and its snapshot SNAP, for diff and
 * restore.  Returns EXIT_OK or the exit status after saying why.
 */
static int open_job_snapshot(Config **c, const char *job_name, const char *snap, const Job **job,
                             int *store, int *fd, char name[static SNAPSHOT_NAME_MAX]) {
        int r = load(c);

        if (r < 0)
                return exit_for(r);
        *job = find_job(*c, job_name);
        if (!*job)
                return EXIT_NO_JOB;
        *store = store_open((*job)->store, false);
        *fd = open_snapshot(*job, *store, snap, name);
        return *fd < 0 ? exit_for_snapshot(*fd) : EXIT_OK;
}

typedef struct DiffOut {
        bool first;
        uint64_t count;
} DiffOut;

static int print_diff(DiffKind kind, const char *path, const struct stat *a, const struct stat *b,
                      void *userdata) {
        static const char *const names[] = {
                [DIFF_ADDED] = "added", [DIFF_REMOVED] = "removed", [DIFF_CHANGED] = "changed",
        };
        bool dir = S_ISDIR((b ? b : a)->st_mode);
        DiffOut *o = userdata;

        if (arg_json) {
                printf("%s{\"change\":\"%s\",\"path\":", o->first ? "" : ",", names[kind]);
                json_string(stdout, path);
                printf(",\"type\":\"%s\"}", dir ? "directory" : S_ISLNK((b ? b : a)->st_mode) ? "symlink" : "file");
        } else
                printf("%c %s%s\n", diff_mark(kind), path, dir ? "/" : "");
        o->first = false;
        o->count++;
        return 0;
}

static int verb_diff(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int store = -EBADF, a = -EBADF, b = -EBADF, a_dir = -EBADF, b_dir = -EBADF;
        _cleanup_free_ char *rel = NULL, *dir = NULL;
        char an[SNAPSHOT_NAME_MAX], bn[SNAPSHOT_NAME_MAX];
        const char *other = "live", *path = NULL, *base = NULL;
        DiffOut out = { .first = true };
        struct stat st;
        TreeDiff d = { .fn = print_diff, .userdata = &out, .report_dirs = true,
                       .skip_prefix = RESTORE_STAGING_PREFIX };
        const Job *job;
        int r;

        if (argc < 3 || argc > 5) {
                fprintf(stderr, "refsnapctl: usage: diff JOB SNAP [SNAP|live] [PATH]\n");
                return EXIT_USAGE;
        }
        if (argc == 5) {
                other = argv[3];
                path = argv[4];
        } else if (argc == 4) {
                if (strcmp(argv[3], "live") == 0 || strcmp(argv[3], "latest") == 0 ||
                    snapshot_name_valid(argv[3]))
                        other = argv[3];
                else
                        path = argv[3];
        }
        r = open_job_snapshot(&c, argv[1], argv[2], &job, &store, &a, an);
        if (r != EXIT_OK)
                return r;
        if (strcmp(other, "live") == 0) {
                b = open(job->source, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (b < 0) {
                        fprintf(stderr, "refsnapctl: %s: %m\n", job->source);
                        return exit_for(-errno);
                }
                if (fstat(store, &st) == 0) {
                        d.skip = file_id(&st);
                }
        } else {
                b = open_snapshot(job, store, other, bn);
                if (b < 0)
                        return exit_for_snapshot(b);
        }
        r = job_relative(job, path ? path : "", &rel);
        if (r < 0)
                return EXIT_USAGE;
        if (*rel) {
                const char *slash = strrchr(rel, '/');

                dir = slash ? strndup(rel, slash - rel) : strdup("");
                if (!dir)
                        return EXIT_FAIL;
                base = slash ? slash + 1 : rel;
                a_dir = chase_dir(a, dir, &(Chase) { .flags = CHASE_NO_XDEV });
                b_dir = chase_dir(b, dir, &(Chase) { .flags = CHASE_NO_XDEV });
                if (a_dir < 0 && b_dir < 0) {
                        fprintf(stderr, "refsnapctl: %s: in neither tree\n", rel);
                        return EXIT_FAIL;
                }
                if (b_dir < 0) {
                        /* Only in a: compare it with nothing, the other way round. */
                        fprintf(stderr, "refsnapctl: %s: not in %s\n", rel, other);
                        return EXIT_FAIL;
                }
        }
        if (arg_json)
                printf("[");
        r = *rel ? tree_diff(&d, a_dir, b_dir, base, rel) : tree_diff(&d, a, b, NULL, "");
        if (arg_json)
                printf("]\n");
        if (r < 0) {
                fprintf(stderr, "refsnapctl: diff failed: %s\n", strerror(-r));
                return exit_for(r);
        }
        return EXIT_OK;
}

static int verb_restore(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int store = -EBADF, snap = -EBADF, live = -EBADF;
        char name[SNAPSHOT_NAME_MAX];
        Restore o = { .delete = arg_delete, .dry_run = arg_dry_run, .out = stdout, .log = stderr };
        const char *target;
        struct stat st;
        const Job *job;
        int r = 0;

        if (argc < 3) {
                fprintf(stderr, "refsnapctl: usage: restore JOB SNAP [PATH...] [--to DIR] [--delete] [--dry-run]\n");
                return EXIT_USAGE;
        }
        r = open_job_snapshot(&c, argv[1], argv[2], &job, &store, &snap, name);
        if (r != EXIT_OK)
                return r;
        if (fstat(store, &st) == 0) {
                o.skip = file_id(&st);
        }
        target = arg_to ? arg_to : job->source;
        if (arg_to && !arg_dry_run && mkdir(arg_to, 0700) < 0 && errno != EEXIST) {
                fprintf(stderr, "refsnapctl: %s: %m\n", arg_to);
                return exit_for(-errno);
        }
        live = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (live < 0 && !(arg_dry_run && errno == ENOENT)) {
                fprintf(stderr, "refsnapctl: %s: %m\n", target);
                return exit_for(-errno);
        }
        if (!arg_dry_run) {
                if (reflink_supported() <= 0) {
                        fprintf(stderr, "refsnapctl: this kernel has no reflinkat(2); restore never copies\n");
                        return EXIT_FAIL;
                }
                /* No snapshot of the job while its tree is being restored. */
                if (store_lock(store, false) == -EBUSY) {
                        fprintf(stderr, "refsnapctl: %s: waiting for the running snapshot to end\n", job->name);
                        r = store_lock(store, true);
                }
                if (r < 0) {
                        fprintf(stderr, "refsnapctl: %s: cannot lock the store: %s\n", job->name, strerror(-r));
                        return EXIT_FAIL;
                }
        }
        for (int i = 3; i <= argc && r >= 0; i++) {
                _cleanup_free_ char *rel = NULL;

                if (i == argc && argc > 3)
                        break;
                if (job_relative(job, i < argc ? argv[i] : "", &rel) < 0)
                        return EXIT_USAGE;
                if (live < 0) {
                        /* Dry run into a directory that does not exist yet: all of it is new. */
                        printf("+ %s/\n", *rel ? rel : ".");
                        continue;
                }
                r = restore_run(&o, snap, live, rel);
                if (r == -ENOENT)
                        return EXIT_NO_JOB;
        }
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: restore from %s failed: %s\n", job->name, name, strerror(-r));
                return exit_for(r);
        }
        if (arg_dry_run)
                printf("%llu to restore, %llu to delete (dry run, nothing changed)\n",
                       (unsigned long long) o.stats.replaced, (unsigned long long) o.stats.deleted);
        else
                printf("restored from %s into %s: %llu entries replaced, %llu directories updated, %llu deleted\n",
                       name, target, (unsigned long long) o.stats.replaced, (unsigned long long) o.stats.dirs,
                       (unsigned long long) o.stats.deleted);
        return EXIT_OK;
}

static int verb_check_config(int argc, char *argv[]) {
        return config_check_command("refsnapctl", argc > 1 ? argv[1] : arg_config, arg_dropins);
}

static void help(void) {
        printf("Usage: refsnapctl [OPTION]... VERB [ARG]...\n\n"
               "  status                   the daemon and each job: last, next, result\n"
               "  list [JOB]               snapshots with time, files, size\n"
               "  snapshot JOB             take one now, through the daemon, and wait for it\n"
               "  diff JOB SNAP [SNAP|live] [PATH]\n"
               "                           added (+), removed (-) and changed (~) entries\n"
               "  restore JOB SNAP [PATH]... [--to DIR] [--delete] [--dry-run]\n"
               "                           bring files, subtrees or the whole job back\n"
               "  prune JOB [--dry-run]    apply the job's retention now\n"
               "  check-config [FILE]      check the configuration, print every error\n\n"
               "  -c, --config=FILE        main configuration (default " DEFAULT_CONFIG ")\n"
               "      --conf-dir=DIR       drop-ins (default " DEFAULT_DROPINS ")\n"
               "      --json               machine-readable output for status, list and diff\n"
               "  -n, --dry-run            prune, restore: say what would change, change nothing\n"
               "      --to=DIR             restore: into DIR instead of the job's source\n"
               "      --delete             restore: remove what the snapshot does not have\n"
               "  -h, --help               show this help\n"
               "SNAP is a snapshot name or \"latest\".\n"
               "Exit status: 0 done, 1 failed, 2 usage, 3 refsnapd not running,\n"
               "4 no such job or snapshot, 5 permission denied.\n");
}

int main(int argc, char *argv[]) {
        enum { ARG_CONF_DIR = 0x100, ARG_JSON, ARG_VERSION, ARG_TO, ARG_DELETE };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "conf-dir", required_argument, NULL, ARG_CONF_DIR },
                { "json", no_argument, NULL, ARG_JSON },
                { "dry-run", no_argument, NULL, 'n' },
                { "to", required_argument, NULL, ARG_TO },
                { "delete", no_argument, NULL, ARG_DELETE },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        static const struct {
                const char *name;
                int (*run)(int argc, char *argv[]);
        } verbs[] = {
                { "status", verb_status },
                { "snapshot", verb_snapshot },
                { "list", verb_list },
                { "prune", verb_prune },
                { "diff", verb_diff },
                { "restore", verb_restore },
                { "check-config", verb_check_config },
        };
        int c;

        while ((c = getopt_long(argc, argv, "c:nh", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        arg_config = optarg;
                        break;
                case ARG_CONF_DIR:
                        arg_dropins = optarg;
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case 'n':
                        arg_dry_run = true;
                        break;
                case ARG_TO:
                        arg_to = optarg;
                        break;
                case ARG_DELETE:
                        arg_delete = true;
                        break;
                case 'h':
                        help();
                        return EXIT_OK;
                case ARG_VERSION:
                        printf("refsnapctl " PROJECT_VERSION "\n");
                        return EXIT_OK;
                default:
                        return EXIT_USAGE;
                }
        if (optind >= argc) {
                help();
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(argv[optind], verbs[i].name) == 0)
                        return verbs[i].run(argc - optind, argv + optind);
        fprintf(stderr, "refsnapctl: unknown verb '%s' (see refsnapctl --help)\n", argv[optind]);
        return EXIT_USAGE;
}
