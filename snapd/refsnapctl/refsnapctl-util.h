/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "config.h"
#include "snapshot-name.h"

/*
 * What the verbs share.  The functions returning an exit status return
 * EXIT_OK, or another exit status after saying why on stderr; those
 * returning -errno have said why too.
 */

/* The configuration of --config and --conf-dir, or -errno after printing its errors. */
int load_config(Config **ret);

/* The job called name, or NULL after saying there is none. */
const Job *find_job(const Config *c, const char *name);

/*
 * Open the snapshot arg ("latest" or a name) of the job's store (a
 * descriptor, or the -errno store_open() gave); its name goes to name.
 * Returns a descriptor, or -errno.
 */
int open_snapshot(const Job *job, int store, const char *arg, char name[static SNAPSHOT_NAME_MAX]);

/* EXIT_NOT_FOUND for a snapshot that is not there or not a name, else as exit_status_from_errno(). */
int exit_status_from_snapshot_errno(int r);

/*
 * The configuration (*c), the job called job_name, its store and its
 * snapshot snap (descriptors, to close), for diff and restore.  Returns
 * an exit status.
 */
int open_job_snapshot(Config **c, const char *job_name, const char *snap, const Job **job, int *store,
                      int *fd, char name[static SNAPSHOT_NAME_MAX]);

/*
 * path relative to the job's source, normalized, into *ret: an absolute
 * path must lie under the source, a relative one is taken from it, ".."
 * is refused.  Returns 0 or -EINVAL.
 */
int job_relative(const Job *job, const char *path, char **ret);

/* The system bus into *ret, bus_allow_interactive().  Returns an exit status: EXIT_NOT_RUNNING without one. */
int bus_open(sd_bus **ret);

/* Calls on bus allow polkit's interactive authorization when standard input is a terminal. */
void bus_allow_interactive(sd_bus *bus);

/* Whether a failed call (error e, or -errno r) means refsnapd is not on the bus. */
bool bus_error_not_running(const sd_bus_error *e, int r);

/* The exit status for a failed call to refsnapd (e may be NULL), after saying why. */
int bus_exit(const sd_bus_error *e, int r);

/*
 * The verbs that read the stores directly (list, diff): root's, as the
 * stores are (0700).  For anyone else EXIT_DENIED, said before anything
 * is read, so that no job's source or store is named to her; else
 * EXIT_OK.
 */
int require_root(const char *verb);
