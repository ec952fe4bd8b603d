/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl check [JOB...] [-w SPAN] [-c SPAN]: a monitoring plugin in
 * the Nagios convention (exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN; the
 * first line the summary with performance data, then one line per job).
 * The daemon says each job's last result and newest snapshot (ListJobs),
 * the configuration its interval, the store its newest snapshot's facts
 * and when the job was last found unchanged (.checked).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus-names.h"
#include "exit-status.h"
#include "macro.h"
#include "refsnapctl-check-state.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "store.h"
#include "strv.h"
#include "time-util.h"

typedef struct CheckLine {
        char *name;
        CheckState state;
        usec_t age, warn, crit;
        char why[256];
} CheckLine;

/* What the store adds: the newest snapshot's facts, and .checked.  Best effort: a store it cannot read adds nothing. */
static void read_store(const Job *job, CheckJob *j, char *why, size_t size) {
        _cleanup_close_ int store = store_open(job->store, false);
        char newest[SNAPSHOT_NAME_MAX];
        SnapshotFacts f = {};
        time_t checked, t;
        uint64_t until = 0;

        if (store < 0) {
                snprintf(why, size, "; store not readable here (%s): its facts left out", strerror(-store));
                return;
        }
        /* Paused: a pause whose end is past is over, whether or not the daemon has said so yet. */
        if (store_read_paused(store, &until) == 0 && (until == 0 || until > now_realtime())) {
                j->paused = true;
                j->paused_until = until;
        }
        if (store_newest(store, newest) < 0)
                return;
        if (snapshot_name_time(newest, &t) == 0 && j->last == 0)
                j->last = (usec_t) t * USEC_PER_SEC;
        if (store_read_facts(store, newest, &f) == 0)
                j->newest_partial = f.skipped > 0;
        /* As refsnapctl list: a check before the newest snapshot says nothing newer. */
        if (store_read_checked(store, &checked) == 0 && snapshot_name_time(newest, &t) == 0 && checked >= t)
                j->checked = (usec_t) checked * USEC_PER_SEC;
}

/* A span of -w or -c. */
static int parse_span(const char *opt, const char *s, usec_t *ret) {
        if (timespan_parse(s, ret) < 0 || *ret == 0) {
                fprintf(stderr, "refsnapctl: check %s: '%s' is not a time span (such as 2h or 90min)\n", opt, s);
                printf("REFSNAP UNKNOWN: %s is not a time span\n", opt);
                return -EINVAL;
        }
        return 0;
}

/* The perfdata label of a job: quoted, a quote doubled (the plugin guidelines). */
static void print_label(const char *name, const char *what) {
        putchar('\'');
        for (const char *p = name; *p; p++) {
                if (*p == '\'')
                        putchar('\'');
                putchar(*p == '=' ? '_' : *p);
        }
        printf("_%s'", what);
}

/* Room for one more line after the n there are. */
static int grow(CheckLine **lines, size_t n, size_t *cap) {
        CheckLine *p;

        if (n < *cap)
                return 0;
        p = reallocarray(*lines, *cap * 2 + 8, sizeof(*p));
        if (!p)
                return -ENOMEM;
        *lines = p;
        *cap = *cap * 2 + 8;
        return 0;
}

int verb_check(int argc, char *argv[]) {
        static const struct option options[] = {
                { "warning", required_argument, NULL, 'w' },
                { "critical", required_argument, NULL, 'c' },
                {}
        };
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_free_ CheckLine *lines = NULL;
        usec_t warn = 0, crit = 0, now = now_realtime();
        size_t n = 0, cap = 0, counts[4] = {};
        CheckState worst = CHECK_OK;
        const char *prefix = "REFSNAP";
        int opt, r;

        optind = 0;
        while ((opt = getopt_long(argc, argv, "w:c:", options, NULL)) >= 0)
                switch (opt) {
                case 'w':
                        if (parse_span("-w", optarg, &warn) < 0)
                                return CHECK_UNKNOWN;
                        break;
                case 'c':
                        if (parse_span("-c", optarg, &crit) < 0)
                                return CHECK_UNKNOWN;
                        break;
                default:
                        return CHECK_UNKNOWN;
                }
        if (warn && crit && warn > crit) {
                fprintf(stderr, "refsnapctl: check: -w is longer than -c\n");
                printf("%s UNKNOWN: -w is longer than -c\n", prefix);
                return CHECK_UNKNOWN;
        }
        /* Every failure to learn the state is UNKNOWN, with the reason on the first line. */
        if (bus_open(&bus) != EXIT_OK) {
                printf("%s UNKNOWN: refsnapd is not running (no system bus)\n", prefix);
                return CHECK_UNKNOWN;
        }
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "ListJobs", &e, &reply, "");
        if (r < 0) {
                printf("%s UNKNOWN: %s\n", prefix, bus_error_not_running(&e, r) ? "refsnapd is not running" :
                       e.message ? e.message : strerror(-r));
                return CHECK_UNKNOWN;
        }
        if (load_config(&c) < 0) {
                printf("%s UNKNOWN: the configuration %s cannot be read\n", prefix, arg_config);
                return CHECK_UNKNOWN;
        }
        r = sd_bus_message_enter_container(reply, 'a', "(sssttsb)");
        while (r >= 0) {
                const char *name, *source, *store, *result;
                uint64_t last, next;
                int running;
                const Job *job;
                CheckJob j;
                char more[128] = "";
                bool wanted = optind >= argc;

                r = sd_bus_message_read(reply, "(sssttsb)", &name, &source, &store, &last, &next, &result, &running);
                if (r <= 0)
                        break;
                if (grow(&lines, n, &cap) < 0)
                        return CHECK_UNKNOWN;
                for (int i = optind; i < argc && !wanted; i++)
                        wanted = strcmp(argv[i], name) == 0;
                job = config_find_job(c, name);
                if (!wanted)
                        continue;
                if (!job) {
                        /* The daemon runs it, the file no longer has it: no interval to judge by. */
                        lines[n] = (CheckLine) { .name = (char *) name, .state = CHECK_UNKNOWN };
                        snprintf(lines[n].why, sizeof(lines[n].why), "not in %s (a reload pending?)", arg_config);
                        n++;
                        continue;
                }
                j = (CheckJob) { .result = result, .last = last, .interval = job->interval };
                read_store(job, &j, more, sizeof(more));
                lines[n] = (CheckLine) {
                        .name = (char *) name,
                        .warn = warn ? warn : CHECK_WARN_INTERVALS * job->interval,
                        .crit = crit ? crit : CHECK_CRIT_INTERVALS * job->interval,
                };
                lines[n].state = check_job_state(&j, now, warn, crit, &lines[n].age, lines[n].why,
                                                 sizeof(lines[n].why) - sizeof(more));
                strncat(lines[n].why, more, sizeof(lines[n].why) - strlen(lines[n].why) - 1);
                n++;
        }
        if (r < 0) {
                printf("%s UNKNOWN: bad answer from refsnapd: %s\n", prefix, strerror(-r));
                return CHECK_UNKNOWN;
        }
        /* A job asked for that the daemon does not run: UNKNOWN. */
        for (int i = optind; i < argc; i++) {
                bool found = false;

                for (size_t k = 0; k < n && !found; k++)
                        found = strcmp(lines[k].name, argv[i]) == 0;
                if (found)
                        continue;
                if (grow(&lines, n, &cap) < 0)
                        return CHECK_UNKNOWN;
                lines[n] = (CheckLine) { .name = argv[i], .state = CHECK_UNKNOWN };
                snprintf(lines[n].why, sizeof(lines[n].why), "no such job in refsnapd's configuration");
                n++;
        }
        for (size_t k = 0; k < n; k++) {
                worst = check_state_worst(worst, lines[k].state);
                counts[lines[k].state]++;
        }
        if (n == 0) {
                printf("%s UNKNOWN: no jobs configured\n", prefix);
                return CHECK_UNKNOWN;
        }
        printf("%s %s: %zu job%s: %zu ok, %zu warning, %zu critical, %zu unknown |", prefix,
               check_state_to_string(worst), n, n == 1 ? "" : "s", counts[CHECK_OK], counts[CHECK_WARNING],
               counts[CHECK_CRITICAL], counts[CHECK_UNKNOWN]);
        for (size_t k = 0; k < n; k++) {
                if (lines[k].state == CHECK_UNKNOWN && lines[k].warn == 0)
                        continue;
                putchar(' ');
                print_label(lines[k].name, "age");
                printf("=%llus;%llu;%llu;0", (unsigned long long) (lines[k].age / USEC_PER_SEC),
                       (unsigned long long) (lines[k].warn / USEC_PER_SEC),
                       (unsigned long long) (lines[k].crit / USEC_PER_SEC));
        }
        putchar('\n');
        for (size_t k = 0; k < n; k++)
                printf("%s: %s: %s\n", lines[k].name, check_state_to_string(lines[k].state), lines[k].why);
        return worst;
}
