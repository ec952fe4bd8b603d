/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "refsnapd-manager.h"

/*
 * refsnapd on the system bus: BUS_NAME at BUS_PATH, interface
 * BUS_INTERFACE (shared/bus-names.h).  Methods that read answer root
 * only; those that change anything answer root, and whom polkit allows
 * (refsnapd-polkit.h).  See org.refsnap1(5).  The bus listens to the
 * manager (ManagerListener) and keeps the Snapshot() calls waiting for
 * a worker to end.
 */
typedef struct Bus Bus;

/* Connect, publish the object, take the name, listen to m.  Returns 0 or -errno. */
int bus_new(Manager *m, Bus **ret);

/* Answer what still waits, and disconnect.  NULL-safe; returns NULL. */
Bus *bus_free(Bus *b);
