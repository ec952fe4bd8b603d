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
#include "json-util.h"
#include "macro.h"
#include "prune.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"

static void print_count(unsigned n) {
        if (!arg_legend)
                return;
        printf("%u snapshot%s %s\n", n, n == 1 ? "" : "s", arg_dry_run ? "would be removed" : "removed");
}

/* The reasons "newest,hourly" as a JSON array of strings. */
static void json_reasons(const char *list, size_t len) {
        bool first = true;

        putchar('[');
        while (len > 0) {
                size_t k = strcspn(list, ",)");
                _cleanup_free_ char *one = NULL;

                if (k > len)
                        k = len;
                one = strndup(list, k);
                if (one && k > 0) {
                        printf("%s", first ? "" : ",");
                        json_string(stdout, one);
                        first = false;
                }
                if (k >= len || list[k] != ',')
                        break;
                list += k + 1;
                len -= k + 1;
        }
        putchar(']');
}

/*
 * One line of prune's report (snapshot_prune(): "keep   NAME  (REASONS)",
 * "remove NAME  (no rule keeps it)", "remove NAME[: ERROR]", anything
 * else a message) as an element of --json's "snapshots" or "messages".
 */
static void json_report_line(const char *line, bool want_snapshots, bool *first) {
        const char *rest, *paren;
        bool keep = strncmp(line, "keep   ", 7) == 0, remove = strncmp(line, "remove ", 7) == 0, err;
        size_t n;

        if (want_snapshots != (keep || remove))
                return;
        printf("%s", *first ? "" : ",");
        *first = false;
        if (!want_snapshots) {
                json_string(stdout, line);
                return;
        }
        /* A name holds ':' but no space: it ends at the first space, or at the ": " of an error. */
        rest = line + 7;
        n = strcspn(rest, " ");
        err = n > 0 && rest[n - 1] == ':' && rest[n] == ' ';
        if (err)
                n--;
        printf("{\"snapshot\":");
        {
                _cleanup_free_ char *name = strndup(rest, n);

                json_string(stdout, name ? name : "");
        }
        printf(",\"action\":\"%s\",\"kept_by\":", keep ? "keep" : "remove");
        paren = strstr(rest + n, "  (");
        if (keep && paren)
                json_reasons(paren + 3, strlen(paren + 3));
        else
                printf("[]");
        printf(",\"error\":");
        if (remove && err)
                json_string(stdout, rest + n + 2);
        else
                printf("null");
        putchar('}');
}

/*
 * Print prune's report: as it is, or with --json one object:
 * {"job", "dry_run", "removed", "snapshots": [{"snapshot", "action"
 * ("keep" or "remove"), "kept_by" (the rules that keep it), "error"}],
 * "messages": [other lines]}.
 */
static void print_report(const char *job, const char *report, unsigned n) {
        if (!arg_json) {
                fputs(report, stdout);
                print_count(n);
                return;
        }
        printf("{\"job\":");
        json_string(stdout, job);
        printf(",\"dry_run\":%s,\"removed\":%u", arg_dry_run ? "true" : "false", n);
        for (int pass = 0; pass < 2; pass++) {
                bool first = true;

                printf(pass == 0 ? ",\"snapshots\":[" : ",\"messages\":[");
                for (const char *p = report; *p;) {
                        size_t len = strcspn(p, "\n");
                        _cleanup_free_ char *line = strndup(p, len);

                        if (line && len > 0)
                                json_report_line(line, pass == 0, &first);
                        p += len;
                        if (*p == '\n')
                                p++;
                }
                putchar(']');
        }
        printf("}\n");
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
        print_report(job, report, n);
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
        _cleanup_free_ char *report = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&report, &size);

        if (!out)
                return exit_status_from_errno(-ENOMEM);
        r = snapshot_prune(job, time(NULL), arg_dry_run, out);
        if (fclose(out) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0) {
                fputs(report ? report : "", stdout);
                fprintf(stderr, "refsnapctl: %s: prune failed: %s\n", job->name, strerror(-r));
                return exit_status_from_errno(r);
        }
        print_report(job->name, report ? report : "", r);
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
