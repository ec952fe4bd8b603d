/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The verbs that manage a job's snapshots through refsnapd: pin, unpin,
 * delete, pause, resume, cancel and purge.  Each is one call on
 * org.refsnap1.Manager; the daemon checks who asks, the names and the
 * store (org.refsnap1(5)).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus-names.h"
#include "escape.h"
#include "exit-status.h"
#include "json-util.h"
#include "macro.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "time-util.h"
#include "timespan.h"

/* How long a delete may take to answer: it removes a whole tree (a btrfs one at once). */
#define DELETE_TIMEOUT_USEC (3600 * USEC_PER_SEC)

/* Call member with "ss" + options (force when asked), no answer expected.  Returns an exit status. */
static int call_job_snapshot(const char *member, const char *job, const char *snap, bool force, uint64_t timeout) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, BUS_PATH, BUS_INTERFACE, member);
        if (r >= 0)
                r = sd_bus_message_append(call, "ss", job, snap);
        if (r >= 0)
                r = force ? sd_bus_message_append(call, "a{sv}", 1, "force", "b", 1) :
                            sd_bus_message_append(call, "a{sv}", 0);
        if (r < 0)
                return bus_exit(NULL, r);
        r = sd_bus_call(bus, call, timeout, &e, &reply);
        if (r < 0)
                return bus_exit(&e, r);
        return EXIT_OK;
}

int pin_snapshot(const char *job, const char *snap) {
        return call_job_snapshot("Pin", job, snap, false, 0);
}

int verb_pin(int argc, char *argv[]) {
        int r;

        if (argc != 3) {
                fprintf(stderr, "refsnapctl: usage: %s JOB SNAP\n", argv[0]);
                return EXIT_USAGE;
        }
        r = call_job_snapshot(strcmp(argv[0], "pin") == 0 ? "Pin" : "Unpin", argv[1], argv[2], false, 0);
        if (r == EXIT_OK)
                printf("%s: %s %sned\n", argv[1], argv[2], argv[0]);
        return r;
}

int verb_delete(int argc, char *argv[]) {
        int r;

        if (argc != 3) {
                fprintf(stderr, "refsnapctl: usage: delete JOB SNAP [--force]\n");
                return EXIT_USAGE;
        }
        r = call_job_snapshot("DeleteSnapshot", argv[1], argv[2], arg_force, DELETE_TIMEOUT_USEC);
        if (r == EXIT_OK)
                printf("%s: %s deleted\n", argv[1], argv[2]);
        return r;
}

/*
 * --until TIME: "YYYY-MM-DD HH:MM[:SS]" or "YYYY-MM-DDTHH:MM[:SS]" in local
 * time, the same with a final "Z" in UTC, or "@SECONDS" since the epoch.
 */
static int parse_time(const char *s, usec_t *ret) {
        static const char *const formats[] = { "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S",
                                               "%Y-%m-%dT%H:%M" };
        char *end;

        if (s[0] == '@') {
                unsigned long long v;

                errno = 0;
                v = strtoull(s + 1, &end, 10);
                if (errno != 0 || end == s + 1 || *end || s[1] == '-' || v > UINT64_MAX / USEC_PER_SEC)
                        return -EINVAL;
                *ret = (usec_t) v * USEC_PER_SEC;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                struct tm tm = {};
                time_t t;

                end = strptime(s, formats[i], &tm);
                if (!end || (*end && strcmp(end, "Z") != 0))
                        continue;
                tm.tm_isdst = -1;
                t = *end == 'Z' ? timegm(&tm) : mktime(&tm);
                if (t == (time_t) -1 || t < 0)
                        return -EINVAL;
                *ret = (usec_t) t * USEC_PER_SEC;
                return 0;
        }
        return -EINVAL;
}

int verb_pause(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        usec_t until = 0, now = now_realtime(), span;
        char a[TIMESTAMP_MAX];
        int r;

        if (argc != 2 || (arg_pause_for && arg_pause_until)) {
                fprintf(stderr, "refsnapctl: usage: pause JOB [--for SPAN|--until TIME]\n");
                return EXIT_USAGE;
        }
        if (arg_pause_for) {
                if (timespan_parse(arg_pause_for, &span) < 0 || span == 0 || span > UINT64_MAX - now) {
                        fprintf(stderr, "refsnapctl: pause --for: '%s' is not a time span (such as 2h or 3d)\n",
                                arg_pause_for);
                        return EXIT_USAGE;
                }
                until = now + span;
        } else if (arg_pause_until) {
                if (parse_time(arg_pause_until, &until) < 0) {
                        fprintf(stderr, "refsnapctl: pause --until: '%s' is not a time (\"YYYY-MM-DD HH:MM[:SS]\", "
                                "local, or with a final Z in UTC, or @SECONDS)\n", arg_pause_until);
                        return EXIT_USAGE;
                }
                if (until <= now) {
                        fprintf(stderr, "refsnapctl: pause --until: %s is past\n", arg_pause_until);
                        return EXIT_USAGE;
                }
        }
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Pause", &e, &reply, "sta{sv}", argv[1],
                               (uint64_t) until, 0);
        if (r < 0)
                return bus_exit(&e, r);
        if (until)
                printf("%s: paused until %s\n", argv[1], format_usec_human(until, arg_utc, "-", a, sizeof(a)));
        else
                printf("%s: paused until resumed\n", argv[1]);
        return EXIT_OK;
}

int verb_resume(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        int r;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: resume JOB\n");
                return EXIT_USAGE;
        }
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Resume", &e, &reply, "sa{sv}", argv[1], 0);
        if (r < 0)
                return bus_exit(&e, r);
        printf("%s: resumed\n", argv[1]);
        return EXIT_OK;
}

int verb_cancel(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *result;
        int r;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: cancel JOB\n");
                return EXIT_USAGE;
        }
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Cancel");
        if (r >= 0)
                r = sd_bus_message_append(call, "sa{sv}", argv[1], 0);
        if (r < 0)
                return bus_exit(NULL, r);
        /* Answered when the worker has ended: within seconds, whatever the tree. */
        r = sd_bus_call(bus, call, 120 * USEC_PER_SEC, &e, &reply);
        if (r < 0)
                return bus_exit(&e, r);
        r = sd_bus_message_read(reply, "s", &result);
        if (r < 0)
                return bus_exit(NULL, r);
        printf("%s: %s\n", argv[1], result);
        return EXIT_OK;
}

/* How long a purge may take to answer: it goes through every snapshot. */
#define PURGE_TIMEOUT_USEC (3600 * USEC_PER_SEC)

/*
 * purge JOB PATH [--dry-run]: Purge(); what it found or purged, in text
 * (a summary line, the snapshots one a line, oldest first, with
 * "pinned") or with --json one object: {"job", "path", "dry_run",
 * "in_source", "snapshots": [{"snapshot", "pinned"}]}.
 */
int verb_purge(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *escaped = NULL;
        const void *bytes;
        const char *name;
        size_t size;
        unsigned n = 0;
        int pinned, live = 0, r;

        if (argc != 3 || !*argv[2]) {
                fprintf(stderr, "refsnapctl: usage: purge JOB PATH [--dry-run]\n");
                return EXIT_USAGE;
        }
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Purge");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", argv[1]);
        if (r >= 0)
                r = sd_bus_message_append_array(call, 'y', argv[2], strlen(argv[2]));
        if (r >= 0)
                r = arg_dry_run ? sd_bus_message_append(call, "a{sv}", 1, "dry_run", "b", 1) :
                                  sd_bus_message_append(call, "a{sv}", 0);
        if (r < 0)
                return bus_exit(NULL, r);
        r = sd_bus_call(bus, call, PURGE_TIMEOUT_USEC, &e, &reply);
        if (r < 0 && sd_bus_error_has_name(&e, SD_BUS_ERROR_INVALID_ARGS)) {
                /* Not a path of the job's source: the command line's fault, as for restore. */
                fprintf(stderr, "refsnapctl: %s\n", e.message ? e.message : e.name);
                return EXIT_USAGE;
        }
        if (r < 0)
                return bus_exit(&e, r);
        /* The path as the source's (relative), then the snapshots, counted first for the summary line. */
        r = sd_bus_message_read_array(reply, 'y', &bytes, &size);
        if (r >= 0) {
                free(path);
                path = strndup(bytes, size);
                r = path ? 0 : -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(sb)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(sb)", &name, &pinned)) > 0)
                n++;
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_read(reply, "b", &live);
        if (r >= 0)
                r = sd_bus_message_rewind(reply, true);
        if (r >= 0)
                r = sd_bus_message_skip(reply, "ay");
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(sb)");
        if (r >= 0) {
                escaped = cescape(path);
                r = escaped ? 0 : -ENOMEM;
        }
        if (r < 0)
                return bus_exit(NULL, r);
        if (arg_json) {
                printf("{\"job\":");
                json_string(stdout, argv[1]);
                printf(",\"path\":");
                json_string(stdout, path);
                printf(",\"dry_run\":%s,\"in_source\":%s,\"snapshots\":[", arg_dry_run ? "true" : "false",
                       live ? "true" : "false");
        } else if (arg_legend)
                printf(arg_dry_run ? "%s: %s is in %u snapshot%s (a dry run: nothing removed)\n" :
                                     "%s: %s purged from %u snapshot%s\n",
                       argv[1], escaped, n, n == 1 ? "" : "s");
        for (unsigned i = 0; (r = sd_bus_message_read(reply, "(sb)", &name, &pinned)) > 0; i++) {
                if (arg_json) {
                        printf("%s{\"snapshot\":", i > 0 ? "," : "");
                        json_string(stdout, name);
                        printf(",\"pinned\":%s}", pinned ? "true" : "false");
                } else
                        printf("%s%s\n", name, pinned ? "  pinned" : "");
        }
        if (arg_json)
                printf("]}\n");
        else if (live && arg_legend)
                printf("%s: %s is still in the source: the next snapshot takes it again, as it is then (a full "
                       "snapshot); remove it or exclude it first if it must not come back\n", argv[1], escaped);
        return r < 0 ? bus_exit(NULL, r) : EXIT_OK;
}
