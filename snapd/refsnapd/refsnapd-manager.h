/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "refsnapd-watch.h"

/* refsnapd's state: the jobs, their timers and snapshot processes. */

typedef struct Manager Manager;

typedef struct JobState {
        Manager *manager;
        char *name;
        const Job *job;         /* in manager->config; NULL once dropped by a reload */
        usec_t last;            /* start of the newest snapshot, 0: none */
        usec_t next;
        bool changed;           /* since the last snapshot began */
        bool watched;
        char result[128];
        pid_t child;
        sd_event_source *timer, *child_source;
        sd_bus_message **waiting;       /* Snapshot() calls answered when the child ends */
        size_t n_waiting;
} JobState;

struct Manager {
        sd_event *event;
        Config *config;
        JobState **jobs;
        size_t n_jobs;
        Watch *watch;
        sd_event_source *watch_source, *kill_timer;
        sd_bus *bus;
        char *status;           /* the last STATUS= line */
        bool stopping;
};

JobState *manager_find_job(Manager *m, const char *name);

/* Start a snapshot of js now, in a child process.  -EBUSY: one is running. */
int manager_snapshot_now(JobState *js);
