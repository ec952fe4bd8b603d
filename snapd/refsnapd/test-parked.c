/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The registry of parked calls (refsnapd-parked.c), which the caller's
 * identity and polkit share: entries found by their message, counted,
 * removed (their reference to the message dropped, ASan's leak check
 * says whether it was), a removed one not found again; a call put back
 * in its bus's read queue; the registry's free freeing each entry once,
 * whether the handler had seen it again or not.
 */
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "macro.h"
#include "refsnapd-parked.h"
#include "tests.h"

typedef struct Query {
        ParkedCall parked;      /* first, as the daemon's queries have it */
        int id;
} Query;

static int freed;

static void query_free_parked(ParkedCall *p) {
        parked_remove(p);       /* a no-op here: the registry's free removed it */
        freed++;
        free(p);
}

static Query *query_new(ParkedRegistry **r, sd_bus_message *m, int id) {
        Query *q = calloc(1, sizeof(*q));

        if (q && parked_add(r, &q->parked, m) < 0) {
                free(q);
                return NULL;
        }
        if (q)
                q->id = id;
        return q;
}

int main(void) {
        sd_bus_message *m[3] = {};
        ParkedRegistry *r = NULL;
        sd_bus *bus = NULL;
        Query *q[3] = {};
        int pair[2], ids = 0;

        /* A bus on one end of a socket pair: enough to make messages and queue them. */
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
        CHECK(sd_bus_new(&bus) >= 0);
        CHECK(sd_bus_set_fd(bus, pair[0], pair[0]) >= 0);
        CHECK(sd_bus_start(bus) >= 0);
        for (int i = 0; i < 3; i++) {
                CHECK(sd_bus_message_new_method_call(bus, &m[i], "org.refsnap1", "/org/refsnap1",
                                                     "org.refsnap1.Manager", "Versions") >= 0);
                CHECK(sd_bus_message_seal(m[i], 100 + i, 0) >= 0);
        }

        /* Nothing yet: NULL-safe. */
        CHECK(parked_count(NULL) == 0);
        CHECK(parked_get(NULL, 0) == NULL);
        CHECK(parked_find(NULL, m[0]) == NULL);
        parked_remove(NULL);
        CHECK(parked_registry_free(NULL, query_free_parked) == NULL);

        for (int i = 0; i < 3; i++) {
                q[i] = query_new(&r, m[i], i);
                CHECK(q[i] != NULL);
        }
        CHECK(r != NULL);
        CHECK(parked_count(r) == 3);
        for (int i = 0; i < 3; i++) {
                CHECK(parked_find(r, m[i]) == &q[i]->parked);
                CHECK(q[i]->parked.registry == r && q[i]->parked.call == m[i] && !q[i]->parked.dispatched);
        }
        for (size_t i = 0; i < parked_count(r); i++)
                ids |= 1 << ((Query *) parked_get(r, i))->id;
        CHECK(ids == 7);
        CHECK(parked_get(r, 3) == NULL);

        /* Removed: not found again, the others still are; its message is the caller's alone again. */
        parked_remove(&q[1]->parked);
        CHECK(parked_count(r) == 2);
        CHECK(parked_find(r, m[1]) == NULL);
        CHECK(q[1]->parked.registry == NULL && q[1]->parked.call == NULL);
        CHECK(parked_find(r, m[0]) == &q[0]->parked);
        CHECK(parked_find(r, m[2]) == &q[2]->parked);
        parked_remove(&q[1]->parked);   /* twice: nothing */
        CHECK(parked_count(r) == 2);
        free(q[1]);

        /* Dispatched again: rewound and back in the bus's read queue. */
        CHECK(parked_dispatch_again(&q[0]->parked) == 0);

        /* The registry's free frees each entry once, seen again by its handler or not. */
        q[0]->parked.dispatched = true;
        CHECK(parked_registry_free(r, query_free_parked) == NULL);
        CHECK(freed == 2);

        for (int i = 0; i < 3; i++)
                sd_bus_message_unref(m[i]);
        sd_bus_close_unref(bus);
        close(pair[1]);
        return tests_end();
}
