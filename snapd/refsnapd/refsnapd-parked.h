/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <systemd/sd-bus.h>

/*
 * Method calls parked while the daemon asks someone else asynchronously
 * (the bus driver for the caller's groups, refsnapd-caller.c; polkit,
 * refsnapd-polkit.c) and dispatched again, rewound, once the answer has
 * come: the handler then runs from the start and finds its answer here,
 * by the message.  Each kind of query embeds a ParkedCall as its first
 * member; the registry holds them in no order.
 */
typedef struct ParkedRegistry ParkedRegistry;

typedef struct ParkedCall {
        ParkedRegistry *registry;       /* set by parked_add(), NULL once removed */
        sd_bus_message *call;           /* a reference, from parked_add() to parked_remove() */
        bool dispatched;                /* the handler has seen the answer */
} ParkedCall;

/* p (not yet in a registry) takes a reference to call and joins *registry, made when needed.  0 or -ENOMEM. */
int parked_add(ParkedRegistry **registry, ParkedCall *p, sd_bus_message *call);

/* p leaves its registry, and its reference to the call is dropped.  NULL-safe. */
void parked_remove(ParkedCall *p);

/* The entry of call, or NULL.  NULL-safe. */
ParkedCall *parked_find(const ParkedRegistry *r, sd_bus_message *call);

/* How many entries, and the i-th (for counting them by their kind's fields).  NULL-safe. */
size_t parked_count(const ParkedRegistry *r);
ParkedCall *parked_get(const ParkedRegistry *r, size_t i);

/* The answer has come: the call, rewound, back in its bus's read queue.  0 or -errno. */
int parked_dispatch_again(ParkedCall *p);

/*
 * Each entry whose call the handler has not seen again answered
 * org.refsnap1.Stopping; each removed, then freed by free_entry (its
 * own parked_remove() of it is then a no-op); the registry freed.
 * NULL-safe; returns NULL.
 */
ParkedRegistry *parked_registry_free(ParkedRegistry *r, void (*free_entry)(ParkedCall *p));
