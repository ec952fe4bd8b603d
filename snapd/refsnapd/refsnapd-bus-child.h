/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>
#include <sys/types.h>

#include <systemd/sd-bus.h>

#include "refsnapd-manager.h"

/*
 * A D-Bus call carried out by a child of the daemon (a prune, a delete, a
 * self-service request): the call is parked, the child does the work
 * (the event loop never waits on it), writes what it has to say into a
 * report (a memfd), and exits with a status; the parent's done() then
 * answers the parked call from the status and the report.  The child is
 * counted among the manager's children (SIGTERM at stop, waited for).
 */
typedef struct BusChild BusChild;

/*
 * In the child, after fork(): the work.  report is where it writes what
 * the parent reads back.  Returns the exit status (0...254); 255 and a
 * death by a signal are the parent's "failed".
 */
typedef int (*bus_child_work_t)(FILE *report, void *userdata);

/*
 * In the parent, when the child has ended: code is its exit status, or -1
 * when a signal ended it (killed: the time limit, the caller gone, the
 * daemon stopping) or its report was too big to be read (over 16 MiB:
 * then empty); report holds size bytes and a NUL after them.  It
 * answers call (the reply may fail: the caller may be gone).  userdata is
 * freed by the free_userdata given to bus_child_spawn() right after.
 */
typedef void (*bus_child_done_t)(sd_bus_message *call, int code, const char *report, size_t size,
                                 void *userdata);

typedef struct BusChildOptions {
        /* Killed (SIGKILL) this long after it started; 0: no limit. */
        uint64_t timeout_usec;
        /* Killed when the caller's connection leaves the bus. */
        bool kill_on_disconnect;
        /* Called in the parent once the child is gone, after done(); NULL-safe. */
        void (*free_userdata)(void *userdata);
        /*
         * Whether a line about it (killed, its report refused) may be
         * written now: a rate limit where any user may start one
         * (refsnapd-self-log.h); NULL: always.
         */
        bool (*may_log)(void *userdata);
} BusChildOptions;

/*
 * Fork the child for call (referenced until it is answered).  On success
 * the handler returns 1 (the call is answered later, by done()); on
 * failure (< 0) nothing was started, userdata is not freed, and the call
 * is the handler's to answer.
 */
int bus_child_spawn(Manager *m, sd_bus_message *call, const char *name, const BusChildOptions *options,
                    bus_child_work_t work, bus_child_done_t done, void *userdata);
