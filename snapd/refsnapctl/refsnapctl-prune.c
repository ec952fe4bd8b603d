/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl prune JOB [--dry-run]: the job's retention now, through
 * refsnapd when it runs (so it never races a snapshot), directly on the
 * store when it does not.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bus-names.h"
#include "exit-status.h"
#include "macro.h"
#include "prune.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"

static void print_count(unsigned n) {
        if (!arg_legend)
                return;
        printf("%u snapshot%s %s\n", n, n == 1 ? "" : "s", arg_dry_run ? "would be removed" : "removed");
}

/* Returns an exit status, or -ENOTCONN when refsnapd is not running. */
static int prune_through_daemon(const char *job) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *report;
        uint32_t n;
        int r;

        if (sd_bus_open_system(&bus) < 0)
                return -ENOTCONN;
        bus_allow_interactive(bus);
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Prune", &e, &reply, "sb", job,
                               (int) arg_dry_run);
        if (r < 0)
                return bus_error_not_running(&e, r) ? -ENOTCONN : bus_exit(&e, r);
        r = sd_bus_message_read(reply, "us", &n, &report);
        if (r < 0)
                return bus_exit(NULL, r);
        fputs(report, stdout);
        print_count(n);
        return EXIT_OK;
}

/* Returns an exit status. */
static int prune_directly(const char *job_name) {
        _cleanup_config_free_ Config *c = NULL;
        const Job *job;
        int r;

        r = load_config(&c);
        if (r < 0)
                return exit_status_from_errno(r);
        job = find_job(c, job_name);
        if (!job)
                return EXIT_NOT_FOUND;
        r = snapshot_prune(job, time(NULL), arg_dry_run, stdout);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: prune failed: %s\n", job->name, strerror(-r));
                return exit_status_from_errno(r);
        }
        print_count(r);
        return EXIT_OK;
}

int verb_prune(int argc, char *argv[]) {
        int r;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: prune JOB [--dry-run]\n");
                return EXIT_USAGE;
        }
        r = prune_through_daemon(argv[1]);
        if (r != -ENOTCONN)
                return r;
        return prune_directly(argv[1]);
}
