/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl: look at and manage refsnap's snapshots.  This version has
 * the verbs that work on the configuration and the stores directly:
 * list, prune and check-config.  See refsnapctl(8).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "format.h"
#include "macro.h"
#include "snapshot.h"
#include "store.h"
#include "strv.h"

#define DEFAULT_CONFIG "/etc/refsnap/refsnapd.conf"
#define DEFAULT_DROPINS "/etc/refsnap/conf.d"

enum {
        EXIT_OK = 0,
        EXIT_FAIL = 1,          /* the operation failed */
        EXIT_USAGE = 2,
        EXIT_NO_JOB = 4,        /* no such job */
};

static const char *arg_config = DEFAULT_CONFIG;
static const char *arg_dropins = DEFAULT_DROPINS;
static bool arg_json = false;
static bool arg_dry_run = false;

static int load(Config **ret) {
        _cleanup_free_ char *errors = NULL;
        int r = config_load(arg_config, arg_dropins, ret, &errors);

        if (r < 0) {
                fputs(errors ? errors : "", stderr);
                fprintf(stderr, "refsnapctl: %s: the configuration has errors\n", arg_config);
        }
        return r;
}

static int list_job(const Job *job, bool *first) {
        _cleanup_close_ int store = store_open(job->store, false);
        char **names = NULL;
        size_t n = 0;

        if (store < 0 && store != -ENOENT) {
                fprintf(stderr, "refsnapctl: %s: store %s: %s\n", job->name, job->store, strerror(-store));
                return EXIT_FAIL;
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
        int ret = EXIT_OK;

        if (load(&c) < 0)
                return EXIT_FAIL;
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
                        int r = list_job(c->jobs[i], &first);
                        if (r != EXIT_OK)
                                ret = r;
                }
        if (arg_json)
                printf("]\n");
        return ret;
}

static int verb_prune(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        const Job *job;
        int r;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: prune JOB [--dry-run]\n");
                return EXIT_USAGE;
        }
        if (load(&c) < 0)
                return EXIT_FAIL;
        job = config_find_job(c, argv[1]);
        if (!job) {
                fprintf(stderr, "refsnapctl: no job '%s' in the configuration\n", argv[1]);
                return EXIT_NO_JOB;
        }
        r = snapshot_prune(job, time(NULL), arg_dry_run, stdout);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: prune failed: %s\n", job->name, strerror(-r));
                return EXIT_FAIL;
        }
        printf("%d snapshot%s %s\n", r, r == 1 ? "" : "s", arg_dry_run ? "would be removed" : "removed");
        return EXIT_OK;
}

static int verb_check_config(int argc, char *argv[]) {
        return config_check_command("refsnapctl", argc > 1 ? argv[1] : arg_config, arg_dropins);
}

static void help(void) {
        printf("Usage: refsnapctl [OPTION]... VERB [ARG]...\n\n"
               "  list [JOB]               snapshots with time, files, size\n"
               "  prune JOB [--dry-run]    apply the job's retention now\n"
               "  check-config [FILE]      check the configuration, print every error\n\n"
               "  -c, --config=FILE        main configuration (default " DEFAULT_CONFIG ")\n"
               "      --conf-dir=DIR       drop-ins (default " DEFAULT_DROPINS ")\n"
               "      --json               machine-readable output for list\n"
               "  -n, --dry-run            prune: say what would go, remove nothing\n"
               "  -h, --help               show this help\n"
               "Exit status: 0 done, 1 failed, 2 usage, 4 no such job.\n");
}

int main(int argc, char *argv[]) {
        enum { ARG_CONF_DIR = 0x100, ARG_JSON, ARG_VERSION };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "conf-dir", required_argument, NULL, ARG_CONF_DIR },
                { "json", no_argument, NULL, ARG_JSON },
                { "dry-run", no_argument, NULL, 'n' },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        static const struct {
                const char *name;
                int (*run)(int argc, char *argv[]);
        } verbs[] = {
                { "list", verb_list },
                { "prune", verb_prune },
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
