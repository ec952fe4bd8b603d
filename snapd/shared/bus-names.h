/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The names refsnapd answers to on the system bus and refsnapctl calls:
 * the object, its interface and its error names (see refsnapd(8)).  Only
 * names: the members live in refsnapd/refsnapd-bus.c.
 */
#define BUS_NAME "org.refsnap1"
#define BUS_PATH "/org/refsnap1"
#define BUS_INTERFACE "org.refsnap1.Manager"

#define BUS_ERROR_NO_SUCH_JOB "org.refsnap1.Error.NoSuchJob"
#define BUS_ERROR_BUSY "org.refsnap1.Error.Busy"
#define BUS_ERROR_FAILED "org.refsnap1.Error.Failed"
#define BUS_ERROR_STOPPING "org.refsnap1.Error.Stopping"
