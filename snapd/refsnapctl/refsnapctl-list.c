/* SPDX-License-Identifier: GPL-2.0-or-later */
/* refsnapctl list [JOB]: each job's snapshots, from the stores directly. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "exit-status.h"
#include "fd-util.h"
#include "format-util.h"
#include "json-util.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "store.h"
#include "strv.h"
#include "time-util.h"

/* "  description: TEXT", escaped (it was checked when written, but the file is read back as it is). */
static void print_description(const char *description) {
        if (!description)
                return;
        fputs("  description: ", stdout);
        fputs_cescaped(description, stdout);
}

static void print_snapshot(const Job *job, const char *name, const SnapshotFacts *f, bool pinned,
                           const char *description, bool first) {
        char size[16];

        if (arg_json) {
                printf("%s{\"job\":", first ? "" : ",");
                json_string(stdout, job->name);
                printf(",\"snapshot\":");
                json_string(stdout, name);
                printf(",\"pinned\":%s,\"description\":", pinned ? "true" : "false");
                if (description)
                        json_string(stdout, description);
                else
                        printf("null");
                if (f) {
                        printf(",\"start\":%lld,\"end\":%lld,\"files\":%llu,\"bytes\":%llu,\"skipped\":%llu,"
                               "\"guard\":%s",
                               (long long) f->start, (long long) f->end,
                               (unsigned long long) f->files, (unsigned long long) f->bytes,
                               (unsigned long long) f->skipped, f->guard ? "true" : "false");
                        /* How it was made; null for a snapshot of before manifests, which does not say. */
                        if (f->kind_known)
                                printf(",\"kind\":\"%s\",\"reused\":%llu,\"made\":%llu,\"compared\":%llu}",
                                       f->incremental ? "incremental" : "full", (unsigned long long) f->reused,
                                       (unsigned long long) f->made, (unsigned long long) f->compared);
                        else
                                printf(",\"kind\":null}");
                } else
                        printf("}");
        } else if (f) {
                printf("%-16s %-24s %8llu %8s %6llds", job->name, name,
                       (unsigned long long) f->files, format_bytes(f->bytes, size, sizeof(size)),
                       (long long) (f->end - f->start));
                if (pinned)
                        printf("  pinned");
                if (f->guard)
                        printf("  guard");
                if (f->kind_known && f->incremental)
                        printf("  incremental: %llu reused, %llu made", (unsigned long long) f->reused,
                               (unsigned long long) f->made);
                else if (f->kind_known)
                        printf("  full: %llu made", (unsigned long long) f->made);
                if (f->skipped)
                        printf("  partial: %llu skipped", (unsigned long long) f->skipped);
                print_description(description);
                putchar('\n');
        } else {
                printf("%-16s %-24s %8s %8s %7s%s", job->name, name, "-", "-", "-", pinned ? "  pinned" : "");
                print_description(description);
                putchar('\n');
        }
}

/*
 * When on_change last skipped the job after its newest snapshot, so that
 * an unchanged job is not taken for a broken one.
 */
static void print_checked(const Job *job, int store, const char *newest) {
        char a[TIMESTAMP_MAX], b[TIMESTAMP_MAX];
        time_t checked, t;

        if (arg_json || !newest || store < 0 || store_read_checked(store, &checked) < 0 ||
            snapshot_name_time(newest, &t) < 0 || checked < t)
                return;
        printf("  %s: unchanged since %s, last checked %s\n", job->name,
               format_timestamp_human(t, arg_utc, a, sizeof(a)),
               format_timestamp_human(checked, arg_utc, b, sizeof(b)));
}

/* The job's snapshots; a store not made yet has none.  Returns an exit status. */
static int list_job(const Job *job, bool *first) {
        _cleanup_close_ int store = store_open(job->store, false);
        char **names = NULL;
        size_t n = 0;

        if (store < 0 && store != -ENOENT) {
                fprintf(stderr, "refsnapctl: %s: store %s: %s\n", job->name, job->store, strerror(-store));
                return exit_status_from_errno(store);
        }
        if (store >= 0 && store_list(store, &names, &n) < 0) {
                fprintf(stderr, "refsnapctl: %s: cannot list %s\n", job->name, job->store);
                return EXIT_FAILED;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *description = NULL;
                SnapshotFacts f = {};
                bool known = store_read_facts(store, names[i], &f) == 0;
                int r = store_read_description(store, names[i], &description);

                if (r < 0 && r != -ENOENT)
                        fprintf(stderr, "refsnapctl: %s: snapshot %s: cannot read its description: %s\n",
                                job->name, names[i], strerror(-r));
                print_snapshot(job, names[i], known ? &f : NULL, store_is_pinned(store, names[i]) > 0, description,
                               *first);
                *first = false;
        }
        print_checked(job, store, n ? names[n - 1] : NULL);
        strv_free(names);
        return EXIT_OK;
}

int verb_list(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        bool first = true;
        int ret = EXIT_OK, r;

        r = require_root("list");
        if (r != EXIT_OK)
                return r;
        r = load_config(&c);
        if (r < 0)
                return exit_status_from_errno(r);
        if (argc > 1 && !find_job(c, argv[1]))
                return EXIT_NOT_FOUND;
        if (arg_json)
                printf("[");
        else if (arg_legend)
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
