/* SPDX-License-Identifier: GPL-2.0-or-later */
/* refsnapctl status: the daemon and each job, asked of refsnapd over D-Bus. */
#include <stdio.h>
#include <string.h>

#include "bus-names.h"
#include "escape.h"
#include "exit-status.h"
#include "json-util.h"
#include "macro.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "time-util.h"

typedef struct JobStatus {
        const char *name, *source, *store, *result;
        uint64_t last, next;    /* µs since the epoch; 0: never, none */
        int running;
        int paused;
        uint64_t paused_until;  /* µs; 0: until resumed */
} JobStatus;

static void print_header(const char *version, const char *state, const char *reflink) {
        if (arg_json) {
                printf("{\"daemon\":");
                json_string(stdout, state);
                printf(",\"version\":");
                json_string(stdout, version);
                printf(",\"reflink\":");
                json_string(stdout, reflink);
                printf(",\"jobs\":[");
        } else {
                printf("refsnapd %s: %s\n", version, state);
                printf("reflink path: %s\n", reflink);
                if (arg_legend)
                        printf("%-16s %-23s %-23s %s\n", "JOB", "LAST", "NEXT", "RESULT");
        }
}

static void print_job(const JobStatus *j, bool first) {
        char a[TIMESTAMP_MAX], b[TIMESTAMP_MAX];

        if (arg_json) {
                printf("%s{\"job\":", first ? "" : ",");
                json_string(stdout, j->name);
                printf(",\"source\":");
                json_string(stdout, j->source);
                printf(",\"store\":");
                json_string(stdout, j->store);
                printf(",\"last\":%llu,\"next\":%llu,\"running\":%s,\"result\":",
                       (unsigned long long) (j->last / USEC_PER_SEC),
                       (unsigned long long) (j->next / USEC_PER_SEC), j->running ? "true" : "false");
                json_string(stdout, j->result);
                printf(",\"paused\":%s,\"paused_until\":%llu}", j->paused ? "true" : "false",
                       (unsigned long long) (j->paused_until / USEC_PER_SEC));
        } else {
                fputs_cescaped(j->name, stdout);
                printf("%*s %-23s %-23s ", (int) (16 - MIN(strlen(j->name), 16u)), "",
                       format_usec_human(j->last, arg_utc, "-", a, sizeof(a)),
                       j->running ? "running" : format_usec_human(j->next, arg_utc, "-", b, sizeof(b)));
                fputs_cescaped(j->result, stdout);
                if (j->paused)
                        printf("; paused until %s", format_usec_human(j->paused_until, arg_utc, "resumed", a,
                                                                      sizeof(a)));
                putchar('\n');
        }
}

/* Paused and PausedUntilUSec of the job's object (left false, 0 when they cannot be had). */
static void read_paused(sd_bus *bus, JobStatus *j) {
        _cleanup_free_ char *path = NULL;

        j->paused = false;
        j->paused_until = 0;
        if (sd_bus_path_encode(BUS_JOB_PREFIX, j->name, &path) < 0 ||
            sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_JOB_INTERFACE, "Paused", NULL, 'b', &j->paused) < 0)
                return;
        if (sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_JOB_INTERFACE, "PausedUntilUSec", NULL, 't',
                                        &j->paused_until) < 0)
                j->paused_until = 0;
}

/* The jobs of a ListJobs answer, each printed.  Returns 0 or -errno for a bad answer. */
static int print_jobs(sd_bus *bus, sd_bus_message *jobs) {
        bool first = true;
        int r;

        r = sd_bus_message_enter_container(jobs, 'a', "(sssttsb)");
        while (r >= 0) {
                JobStatus j;

                r = sd_bus_message_read(jobs, "(sssttsb)", &j.name, &j.source, &j.store, &j.last, &j.next,
                                        &j.result, &j.running);
                if (r <= 0)
                        break;
                read_paused(bus, &j);
                print_job(&j, first);
                first = false;
        }
        return r < 0 ? r : 0;
}

int verb_status(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *jobs = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *reflink = NULL;
        const char *version, *state, *status;
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
        if (r >= 0)
                r = sd_bus_get_property_string(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "ReflinkPath", &e,
                                               &reflink);
        if (r < 0)
                return bus_exit(&e, r);
        print_header(version, state, reflink);
        r = print_jobs(bus, jobs);
        if (arg_json)
                printf("]}\n");
        if (r < 0) {
                fprintf(stderr, "refsnapctl: bad answer from refsnapd: %s\n", strerror(-r));
                return EXIT_FAILED;
        }
        return EXIT_OK;
}
