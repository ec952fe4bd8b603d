/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "refsnapd-parked.h"

/*
 * Who may call a method that changes anything, decided in code with
 * polkit (the actions of etc/polkit-1/actions/org.refsnap1.policy), the
 * way systemd's daemons do it: root (the sender's effective uid as the
 * bus says it, never augmented from /proc) is allowed without asking;
 * anyone else is allowed only when polkit says so for the member's
 * action, asked asynchronously about the subject "system-bus-name" (the
 * sender's unique name, never a PID), with interaction only when the
 * call allows it.  No polkit on the bus, an error from it, or a member
 * without an action means refused.
 */
#define POLKIT_ACTION_SELF_SERVICE "org.refsnap1.self-service"
#define POLKIT_ACTION_SNAPSHOT "org.refsnap1.snapshot"
#define POLKIT_ACTION_MANAGE "org.refsnap1.manage"

/* The action a member of org.refsnap1.Manager needs, or NULL: root's alone. */
const char *polkit_action_for(const char *member);

/* The calls waiting for polkit's answer, and the answers not yet used. */
typedef ParkedRegistry PolkitRegistry;

/*
 * May the sender of call (a method call of org.refsnap1.Manager) do what
 * it asks?  Call it first in the method's handler, before reading the
 * arguments.  Returns 1: allowed, go on; 0: polkit was asked, the handler
 * returns 1 at once, and is called again with the same message (rewound)
 * once polkit has answered; or a negative errno with error set
 * (org.freedesktop.DBus.Error.AccessDenied, or
 * org.freedesktop.DBus.Error.InteractiveAuthorizationRequired when
 * polkit would allow it after authentication).  Every decision is logged
 * with the caller's uid, pid and unit.  *registry is made when needed.
 */
int polkit_check_caller(sd_bus_message *call, PolkitRegistry **registry, sd_bus_error *error);

/*
 * "uid U, pid P, unit UNIT (:1.N)": the sender of call as the log names
 * it, for the log only (the unit is read by the pid); into buf.
 */
void polkit_describe_caller(sd_bus_message *call, char *buf, size_t size);

/* Each call still waiting is answered org.refsnap1.Stopping.  NULL-safe; returns NULL. */
PolkitRegistry *polkit_registry_free(PolkitRegistry *r);
