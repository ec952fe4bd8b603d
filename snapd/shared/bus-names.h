/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The names refsnapd answers to on the system bus and refsnapctl calls:
 * the objects, their interfaces and the error names (see org.refsnap1(5)).
 * Only names: the members live in refsnapd/refsnapd-bus.c.
 */
#define BUS_NAME "org.refsnap1"
#define BUS_PATH "/org/refsnap1"
#define BUS_INTERFACE "org.refsnap1.Manager"
/* One object per job: BUS_JOB_PREFIX/<the name, sd_bus_path_encode()d>. */
#define BUS_JOB_PREFIX "/org/refsnap1/job"
#define BUS_JOB_INTERFACE "org.refsnap1.Job"

#define BUS_ERROR_NO_SUCH_JOB "org.refsnap1.NoSuchJob"
#define BUS_ERROR_BUSY "org.refsnap1.Busy"
#define BUS_ERROR_NOT_RUNNING "org.refsnap1.NotRunning"
#define BUS_ERROR_BAD_CONFIG "org.refsnap1.BadConfig"
#define BUS_ERROR_FAILED "org.refsnap1.Failed"
#define BUS_ERROR_STOPPING "org.refsnap1.Stopping"
#define BUS_ERROR_NO_SUCH_SNAPSHOT "org.refsnap1.NoSuchSnapshot"
#define BUS_ERROR_JOB_RUNNING "org.refsnap1.JobRunning"
#define BUS_ERROR_PINNED "org.refsnap1.Pinned"
#define BUS_ERROR_CREDENTIALS_UNAVAILABLE "org.refsnap1.CredentialsUnavailable"
#define BUS_ERROR_NO_SUCH_VERSION "org.refsnap1.NoSuchVersion"
#define BUS_ERROR_NO_SUCH_PATH "org.refsnap1.NoSuchPath"
