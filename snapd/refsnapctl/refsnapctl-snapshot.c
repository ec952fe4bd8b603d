/* SPDX-License-Identifier: GPL-2.0-or-later */
/* refsnapctl snapshot JOB: one now, taken by refsnapd, waited for. */
#include <stdio.h>

#include "bus-names.h"
#include "exit-status.h"
#include "macro.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "timespan.h"

/* How long to wait for the answer, which comes when the snapshot is complete. */
#define SNAPSHOT_TIMEOUT_USEC (24 * 3600 * USEC_PER_SEC)

int verb_snapshot(int argc, char *argv[]) {
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
        r = sd_bus_call(bus, call, SNAPSHOT_TIMEOUT_USEC, &e, &reply);
        if (r < 0)
                return bus_exit(&e, r);
        r = sd_bus_message_read(reply, "s", &name);
        if (r < 0)
                return bus_exit(NULL, r);
        printf("%s: snapshot %s\n", argv[1], name);
        return EXIT_OK;
}
