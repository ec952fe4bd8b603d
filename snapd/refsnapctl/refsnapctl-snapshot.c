/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl snapshot JOB: one now, taken by refsnapd, waited for.  With
 * --if-changed, the daemon's due-time decision made now: one is taken
 * only when on_change would not skip the job.  With --full, a full one
 * (SnapshotFull), whatever the previous one's manifest.  With
 * --description, SnapshotWithOptions() with "description" (and "full").
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "bus-names.h"
#include "exit-status.h"
#include "fd-util.h"
#include "macro.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "store.h"
#include "timespan.h"

/* How long to wait for the answer, which comes when the snapshot is complete. */
#define SNAPSHOT_TIMEOUT_USEC (24 * 3600 * USEC_PER_SEC)

/* Was the snapshot made partial (some files skipped)?  Its facts say, in the store. */
static bool snapshot_partial(const char *job_name, const char *name) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int store = -EBADF;
        SnapshotFacts f = {};
        const Job *job;

        if (load_config(&c) < 0 || !(job = find_job(c, job_name)))
                return false;
        store = store_open(job->store, false);
        if (store < 0 || store_read_facts(store, name, &f) < 0 || f.skipped == 0)
                return false;
        printf("%s: partial: %llu file%s the kernel would not reflink skipped (refsnapctl list %s)\n",
               job_name, (unsigned long long) f.skipped, f.skipped == 1 ? " was" : "s were", job_name);
        return true;
}

/* Is the job paused, as its object's Paused says?  false when that cannot be had. */
static bool job_paused(sd_bus *bus, const char *job) {
        _cleanup_free_ char *path = NULL;
        int paused = false;

        if (sd_bus_path_encode(BUS_JOB_PREFIX, job, &path) < 0 ||
            sd_bus_get_property_trivial(bus, BUS_NAME, path, BUS_JOB_INTERFACE, "Paused", NULL, 'b', &paused) < 0)
                return false;
        return paused;
}

int verb_snapshot(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *name;
        int taken = true, r;

        if (argc != 2 || (arg_if_changed && arg_full) || (arg_if_changed && arg_description)) {
                fprintf(stderr, "refsnapctl: usage: snapshot JOB [--if-changed|--full] [--description TEXT] "
                        "[--pin]\n");
                return EXIT_USAGE;
        }
        r = arg_description ? snapshot_description_check(arg_description) : 0;
        if (r < 0) {
                fprintf(stderr, "refsnapctl: --description: %s; one line of 1 to %d bytes of UTF-8, with no "
                        "control character\n", r == -E2BIG ? "too long" : "not a description",
                        SNAPSHOT_DESCRIPTION_MAX);
                return EXIT_USAGE;
        }
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, BUS_PATH, BUS_INTERFACE,
                                           arg_if_changed ? "SnapshotIfChanged" :
                                           arg_description ? "SnapshotWithOptions" :
                                           arg_full ? "SnapshotFull" : "Snapshot");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", argv[1]);
        if (r >= 0 && arg_description)
                r = arg_full ? sd_bus_message_append(call, "a{sv}", 2, "description", "s", arg_description, "full",
                                                     "b", 1) :
                               sd_bus_message_append(call, "a{sv}", 1, "description", "s", arg_description);
        if (r < 0)
                return bus_exit(NULL, r);
        r = sd_bus_call(bus, call, SNAPSHOT_TIMEOUT_USEC, &e, &reply);
        if (r < 0)
                return bus_exit(&e, r);
        r = arg_if_changed ? sd_bus_message_read(reply, "bs", &taken, &name) : sd_bus_message_read(reply, "s", &name);
        if (r < 0)
                return bus_exit(NULL, r);
        if (!taken) {
                if (job_paused(bus, argv[1]))
                        printf("%s: skipped: the job is paused (refsnapctl resume %s)\n", argv[1], argv[1]);
                else
                        printf("%s: skipped: unchanged since the last snapshot\n", argv[1]);
                return EXIT_UNCHANGED;
        }
        printf("%s: snapshot %s\n", argv[1], name);
        if (arg_pin) {
                r = pin_snapshot(argv[1], name);
                if (r != EXIT_OK)
                        return r;
                printf("%s: %s pinned\n", argv[1], name);
        }
        return snapshot_partial(argv[1], name) ? EXIT_PARTIAL : EXIT_OK;
}
