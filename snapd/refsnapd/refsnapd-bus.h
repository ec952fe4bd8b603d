/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

#include "refsnapd-manager.h"

/*
 * refsnapd on the system bus: org.refsnap1 at /org/refsnap1, interface
 * org.refsnap1.Manager.  Methods answer root only (the D-Bus policy says
 * so too).  See refsnapd(8).
 */
#define BUS_NAME "org.refsnap1"
#define BUS_PATH "/org/refsnap1"
#define BUS_INTERFACE "org.refsnap1.Manager"

#define BUS_ERROR_NO_SUCH_JOB "org.refsnap1.Error.NoSuchJob"
#define BUS_ERROR_BUSY "org.refsnap1.Error.Busy"
#define BUS_ERROR_FAILED "org.refsnap1.Error.Failed"
#define BUS_ERROR_STOPPING "org.refsnap1.Error.Stopping"

/* Connect, publish the object, take the name.  Returns 0 or -errno. */
int bus_setup(Manager *m);

void bus_emit_started(Manager *m, JobState *js);

/*
 * A snapshot child of js ended: signal it and answer the Snapshot() calls
 * waiting for it.  snapshot is the new snapshot's name when ok.
 */
void bus_snapshot_finished(Manager *m, JobState *js, bool ok, const char *snapshot);
