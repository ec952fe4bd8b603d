/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "timespan.h"

/*
 * The metrics file for node_exporter's textfile collector (metrics_file
 * in [daemon], refsnapd.conf(5)): per job, what its store and its last
 * run say, in the Prometheus text exposition format, replaced atomically
 * after every snapshot, skip, prune and reload.
 */

typedef struct JobMetrics {
        const char *job;
        usec_t newest, oldest;          /* the newest and oldest snapshot's time; 0: none */
        usec_t verified;                /* the newest snapshot, or a later check that found it unchanged */
        bool has_facts;                 /* the newest snapshot's facts were read: */
        uint64_t duration_sec, files, bytes;
        uint64_t kept;                  /* snapshots in the store */
        const char *result;             /* one of metrics_results[] */
        bool running;
        bool paused;            /* its due times skipped (Pause()) */
        uint64_t failed, partial;       /* runs that failed or ended partial since the daemon started */
} JobMetrics;

/* The values of the result label, one series each (1 for the job's, 0 for the others). */
extern const char *const metrics_results[];

/* The result label's value for the daemon's result text of a job ("ok", "partial (3 files skipped)", ...). */
const char *metrics_result(const char *daemon_result);

/* s as a label value between double quotes: \\, \" and \n escaped, bytes that are not UTF-8 as U+FFFD. */
void metrics_label_value(FILE *f, const char *s);

/* The whole file's text for jobs, written at now. */
int metrics_format(FILE *f, const JobMetrics *jobs, size_t n, usec_t now);

/*
 * Replace path with text atomically: an unnamed file (O_TMPFILE) in its
 * directory, or one under a name beginning with '.', written, fsync'ed,
 * named, then renamed over path; a reader sees the old file or the new,
 * never a part.  The directory is not made: -ENOENT when it is missing.
 * Returns 0 or -errno.
 */
int metrics_write_file(const char *path, const char *text, size_t len);

struct Manager;
/* The manager's jobs into its configuration's metrics_file, when one is set and its directory exists. */
void manager_write_metrics(struct Manager *m);
