/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "refsnapd-manager.h"
#include "refsnapd-polkit.h"

/*
 * Self-service (org.refsnap1(5), SELF-SERVICE): a user's own requests
 * about her files in the snapshots, carried out by a worker that has
 * become her (refsnapd-caller.h) and holds only descriptors of the
 * snapshots' roots and of the job's live source; the lookups are
 * shared/self-service.h's.  Bounded: self_service_timeout per worker
 * (refsnapd.conf(5); then killed), SELF_WORKERS_PER_USER at a time per uid and SELF_WORKERS_MAX
 * in all, SELF_CALLS_PER_USER waiting or running per uid
 * (org.refsnap1.Busy beyond them), a worker killed when its caller
 * leaves the bus.  Workers are children: the event loop never waits on
 * one, so scheduled snapshots are never delayed by them.
 */
#define SELF_WORKERS_PER_USER 4
#define SELF_WORKERS_MAX 32
/*
 * A user's calls in flight: parked (for the bus driver or polkit) and
 * running together, Busy beyond, before the bus driver or polkit is
 * asked: many connections of one user cannot fill the daemon's memory,
 * polkitd, or the daemon's pending replies on the bus (which would fail
 * other users' polkit checks).
 */
#define SELF_CALLS_PER_USER 8
/*
 * RestoreMine() over live entries takes a guard snapshot of what it
 * replaces first, unless the job's newest snapshot holds it as it is
 * already; at most this many per uid in an hour (asked for, taken or
 * not: org.refsnap1.Busy beyond, nothing replaced), so that no user
 * floods the store with them.  SELF_GUARD_UIDS uids are counted apart.
 */
#define SELF_GUARDS_PER_HOUR 10
#define SELF_GUARD_UIDS 128

typedef struct SelfService SelfService;

int self_service_new(Manager *m, SelfService **ret);
/* The daemon stops: calls still waiting for the bus driver are answered org.refsnap1.Stopping.  NULL-safe. */
void self_service_stopping(SelfService *s);
/* After the workers have ended (their answers use it).  NULL-safe; returns NULL. */
SelfService *self_service_free(SelfService *s);

/*
 * Versions(ay path, a{sv} options) -> (s job, a(stttub) versions): the
 * method's handler (org.refsnap1(5)).  polkit is the bus's registry
 * (polkit_check_caller() with org.refsnap1.self-service).
 */
int self_method_versions(sd_bus_message *msg, SelfService *s, PolkitRegistry **polkit, sd_bus_error *error);

/*
 * RestoreMine(ay path, s snapshot, h directory, a{sv} options) -> (s job,
 * s snapshot, a(yays) entries, a{sv} info): path of the snapshot
 * ("latest" or a name) made, as the caller, in the directory she passed
 * (org.refsnap1(5)): planned by one worker that is her, then, where it
 * would replace or remove live entries the newest snapshot does not hold
 * as they are, a guard snapshot taken by a child that stays root
 * (SELF_GUARDS_PER_HOUR), then restored by another worker that is her;
 * each step a child of the daemon's, chained from the last one's end.
 */
int self_method_restore_mine(sd_bus_message *msg, SelfService *s, PolkitRegistry **polkit, sd_bus_error *error);
