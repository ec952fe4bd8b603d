/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "bus-names.h"
#include "refsnapd-parked.h"

struct ParkedRegistry {
        ParkedCall **entries;
        size_t n;
};

int parked_add(ParkedRegistry **registry, ParkedCall *p, sd_bus_message *call) {
        ParkedCall **a;

        if (!*registry) {
                *registry = calloc(1, sizeof(**registry));
                if (!*registry)
                        return -ENOMEM;
        }
        a = reallocarray((*registry)->entries, (*registry)->n + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        (*registry)->entries = a;
        p->registry = *registry;
        p->call = sd_bus_message_ref(call);
        a[(*registry)->n++] = p;
        return 0;
}

void parked_remove(ParkedCall *p) {
        ParkedRegistry *r;

        if (!p)
                return;
        r = p->registry;
        for (size_t i = 0; r && i < r->n; i++)
                if (r->entries[i] == p) {
                        r->entries[i] = r->entries[--r->n];
                        break;
                }
        p->registry = NULL;
        p->call = sd_bus_message_unref(p->call);
}

ParkedCall *parked_find(const ParkedRegistry *r, sd_bus_message *call) {
        for (size_t i = 0; r && i < r->n; i++)
                if (r->entries[i]->call == call)
                        return r->entries[i];
        return NULL;
}

size_t parked_count(const ParkedRegistry *r) {
        return r ? r->n : 0;
}

ParkedCall *parked_get(const ParkedRegistry *r, size_t i) {
        return r && i < r->n ? r->entries[i] : NULL;
}

int parked_dispatch_again(ParkedCall *p) {
        int r;

        r = sd_bus_message_rewind(p->call, true);
        if (r < 0)
                return r;
        return sd_bus_enqueue_for_read(sd_bus_message_get_bus(p->call), p->call);
}

ParkedRegistry *parked_registry_free(ParkedRegistry *r, void (*free_entry)(ParkedCall *p)) {
        if (!r)
                return NULL;
        while (r->n > 0) {
                ParkedCall *p = r->entries[r->n - 1];

                if (!p->dispatched)
                        (void) sd_bus_reply_method_errorf(p->call, BUS_ERROR_STOPPING, "refsnapd is stopping");
                parked_remove(p);
                free_entry(p);
        }
        free(r->entries);
        free(r);
        return NULL;
}
