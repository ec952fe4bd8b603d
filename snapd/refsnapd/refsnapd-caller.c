/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-names.h"
#include "log.h"
#include "macro.h"
#include "refsnapd-caller.h"
#include "refsnapd-self-log.h"

/* How long the bus driver may take to say a connection's credentials. */
#define CREDENTIALS_TIMEOUT_USEC (25ULL * 1000000ULL)
/* More groups than the kernel's NGROUPS_MAX is not a connection's. */
#define CALLER_GROUPS_MAX 65536

Caller *caller_free(Caller *c) {
        if (!c)
                return NULL;
        free(c->groups);
        free(c);
        return NULL;
}

Caller *caller_dup(const Caller *c) {
        Caller *d = calloc(1, sizeof(*d));

        if (!d)
                return NULL;
        *d = *c;
        d->groups = c->n_groups ? calloc(c->n_groups, sizeof(gid_t)) : NULL;
        if (c->n_groups && !d->groups)
                return caller_free(d);
        if (c->n_groups)
                memcpy(d->groups, c->groups, c->n_groups * sizeof(gid_t));
        return d;
}

typedef enum CredState {
        CRED_PENDING,           /* the bus driver is asked */
        CRED_KNOWN,
        CRED_UNAVAILABLE,       /* no UnixGroupIDs, another uid, or an error */
} CredState;

typedef struct CredQuery {
        ParkedCall parked;      /* first: the call, parked, then dispatched again */
        sd_bus_slot *slot;
        CredState state;
        char *why;              /* CRED_UNAVAILABLE */
        Caller caller;
} CredQuery;

static CredQuery *query_free(CredQuery *q) {
        if (!q)
                return NULL;
        parked_remove(&q->parked);
        sd_bus_slot_unref(q->slot);
        free(q->caller.groups);
        free(q->why);
        free(q);
        return NULL;
}

static void query_free_parked(ParkedCall *p) {
        query_free((CredQuery *) p);
}

static CredQuery *registry_find(CallerRegistry *r, sd_bus_message *call) {
        return (CredQuery *) parked_find(r, call);
}

/* GetConnectionCredentials' a{sv}: UnixUserID (u) and UnixGroupIDs (au); the rest skipped. */
static int read_credentials(sd_bus_message *reply, CredQuery *q) {
        bool have_uid = false, have_groups = false;
        uint32_t uid = 0;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(reply, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, "UnixUserID") == 0) {
                        r = sd_bus_message_read(reply, "v", "u", &uid);
                        have_uid = r >= 0;
                } else if (strcmp(key, "UnixGroupIDs") == 0) {
                        const void *a;
                        size_t size;

                        r = sd_bus_message_enter_container(reply, 'v', "au");
                        if (r >= 0)
                                r = sd_bus_message_read_array(reply, 'u', &a, &size);
                        if (r >= 0 && (size % sizeof(uint32_t) != 0 ||
                                       size / sizeof(uint32_t) > CALLER_GROUPS_MAX))
                                r = -EBADMSG;
                        if (r >= 0 && size > 0) {
                                q->caller.groups = malloc(size);
                                if (!q->caller.groups)
                                        return -ENOMEM;
                                memcpy(q->caller.groups, a, size);
                                q->caller.n_groups = size / sizeof(uint32_t);
                        }
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply);
                        have_groups = r >= 0;
                } else
                        r = sd_bus_message_skip(reply, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!have_uid)
                return -ENODATA;
        if (!have_groups) {
                q->why = strdup("the bus does not say the caller's groups (no UnixGroupIDs)");
                return -ENODATA;
        }
        /* A connection with no group at all: the kernel would give it one; the bus said none. */
        if (q->caller.n_groups == 0) {
                q->why = strdup("the bus says the caller has no group");
                return -ENODATA;
        }
        if (uid != q->caller.uid) {
                q->why = strdup("the bus driver names another uid than the message's credentials");
                return -EBADMSG;
        }
        /* Her own group, as sd-bus said it: one of those the bus driver says, or nothing. */
        for (size_t i = 0; i < q->caller.n_groups; i++)
                if (q->caller.groups[i] == q->caller.gid)
                        return 0;
        if (asprintf(&q->why, "the caller's group (egid %u) is not one of the groups the bus says",
                     (unsigned) q->caller.gid) < 0)
                q->why = NULL;
        return -EBADMSG;
}

static int on_credentials(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        CredQuery *q = userdata;
        int r;

        q->slot = sd_bus_slot_unref(q->slot);
        if (sd_bus_message_is_method_error(reply, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(reply);

                q->state = CRED_UNAVAILABLE;
                if (asprintf(&q->why, "the bus driver did not say (%s)", e && e->name ? e->name : "?") < 0)
                        q->why = NULL;
        } else {
                r = read_credentials(reply, q);
                q->state = r < 0 ? CRED_UNAVAILABLE : CRED_KNOWN;
                if (r < 0 && !q->why && asprintf(&q->why, "its answer could not be read: %s", strerror(-r)) < 0)
                        q->why = NULL;
        }
        r = parked_dispatch_again(&q->parked);
        if (r < 0) {
                log_error("%s() from %s: cannot go on with the caller's credentials: %s",
                          sd_bus_message_get_member(q->parked.call), q->caller.sender, strerror(-r));
                (void) sd_bus_reply_method_errno(q->parked.call, r, NULL);
                query_free(q);
        }
        return 0;
}

size_t caller_registry_count(const CallerRegistry *r, uid_t uid) {
        size_t k = 0;

        for (size_t i = 0; i < parked_count(r); i++)
                k += ((const CredQuery *) parked_get(r, i))->caller.uid == uid;
        return k;
}

int caller_identify(sd_bus_message *call, CallerRegistry **registry, CallerAdmit admit, void *userdata,
                    const Caller **ret, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *sender = sd_bus_message_get_sender(call), *member = sd_bus_message_get_member(call);
        CredQuery *q;
        uid_t euid;
        gid_t egid;
        int r;

        q = registry_find(*registry, call);
        if (q && q->state == CRED_PENDING)
                return -EBUSY;  /* not dispatched while parked */
        if (q && q->state == CRED_UNAVAILABLE) {
                if (!q->parked.dispatched && self_log_allow(q->caller.uid))
                        log_notice("%s() from uid %u (%s) refused: %s", member, (unsigned) q->caller.uid,
                                   q->caller.sender, q->why ? q->why : "no credentials");
                q->parked.dispatched = true;
                return sd_bus_error_setf(error, BUS_ERROR_CREDENTIALS_UNAVAILABLE,
                                         "The bus did not say who is calling: %s",
                                         q->why ? q->why : "no credentials");
        }
        if (q) {
                q->parked.dispatched = true;
                *ret = &q->caller;
                return 1;
        }

        /*
         * The euid from the bus, never augmented from /proc; the egid as
         * sd-bus has it (from /proc with dbus-daemon, so checked against
         * the bus driver's groups once they are known: Caller.gid).
         */
        r = sd_bus_query_sender_creds(call, SD_BUS_CREDS_EUID | SD_BUS_CREDS_EGID | SD_BUS_CREDS_AUGMENT, &creds);
        if (r < 0)
                return sd_bus_error_set_errnof(error, -r, "Cannot ask the bus who is calling: %m");
        if ((sd_bus_creds_get_augmented_mask(creds) & SD_BUS_CREDS_EUID) || !sender)
                return sd_bus_error_set(error, BUS_ERROR_CREDENTIALS_UNAVAILABLE,
                                        "The bus did not say who is calling");
        r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return sd_bus_error_set(error, BUS_ERROR_CREDENTIALS_UNAVAILABLE,
                                        "The bus did not say who is calling");
        r = sd_bus_creds_get_egid(creds, &egid);
        if (r < 0)
                return sd_bus_error_set(error, BUS_ERROR_CREDENTIALS_UNAVAILABLE,
                                        "The bus did not say the caller's group");
        /* Bounded before it is parked: nothing is asked for a call beyond it. */
        if (admit) {
                r = admit(euid, userdata, error);
                if (r < 0)
                        return r;
        }

        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        *q = (CredQuery) {
                .caller.uid = euid,
                .caller.gid = egid,
        };
        snprintf(q->caller.sender, sizeof(q->caller.sender), "%s", sender);
        r = parked_add(registry, &q->parked, call);
        if (r < 0) {
                query_free(q);
                return r;
        }
        r = sd_bus_call_method_async(sd_bus_message_get_bus(call), &q->slot, "org.freedesktop.DBus",
                                     "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionCredentials",
                                     on_credentials, q, "s", sender);
        if (r < 0) {
                query_free(q);
                return sd_bus_error_set_errnof(error, -r, "Cannot ask the bus who is calling: %m");
        }
        return 0;
}

void caller_forget(CallerRegistry *registry, sd_bus_message *call) {
        query_free(registry_find(registry, call));
}

CallerRegistry *caller_registry_free(CallerRegistry *r) {
        return parked_registry_free(r, query_free_parked);
}

static int capget_sets(struct __user_cap_data_struct data[static _LINUX_CAPABILITY_U32S_3]) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

        memset(data, 0, sizeof(struct __user_cap_data_struct) * _LINUX_CAPABILITY_U32S_3);
        return syscall(SYS_capget, &h, data) < 0 ? -errno : 0;
}

int caller_check_dropped(void) {
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
        int r;

        r = capget_sets(data);
        if (r < 0)
                return r;
        for (size_t i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
                if (data[i].effective || data[i].permitted || data[i].inheritable)
                        return -EPERM;
        /* Ambient: each capability the kernel knows (it says EINVAL past the last). */
        for (unsigned long cap = 0; cap < 64; cap++) {
                r = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
                if (r < 0 && errno == EINVAL)
                        break;
                if (r != 0)
                        return -EPERM;
        }
        r = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
        if (r < 0)
                return -errno;
        if (r != 1)
                return -EPERM;
        /* Not the caller's to trace, nor its memory (the daemon's, copied) or descriptors to read through /proc. */
        r = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        if (r < 0)
                return -errno;
        return r == 0 ? 0 : -EPERM;
}

int caller_become(const Caller *c) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
        gid_t gid;

        if (!c || c->n_groups == 0)
                return -EINVAL;
        /* Her own group, and one the bus says is hers. */
        gid = c->gid;
        for (size_t i = 0;; i++) {
                if (i == c->n_groups)
                        return -EINVAL;
                if (c->groups[i] == gid)
                        break;
        }
        /*
         * Not dumpable, before anything changes and whatever the kernel
         * does on the change of ids: the caller may not ptrace it, read
         * its memory (a copy of the daemon's) or take its descriptors
         * (the snapshots' roots, beside the store that is closed to her)
         * through /proc or pidfd_getfd(2).
         */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return -errno;
        /*
         * The bounding set, while CAP_SETPCAP may still be there: with no
         * new privileges and the other sets empty it grants nothing, so a
         * daemon without CAP_SETPCAP (refsnapd.service) leaves it as is.
         */
        for (unsigned long cap = 0; cap < 64; cap++)
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EPERM)
                        break;
        if (setgroups(c->n_groups, c->groups) < 0)
                return -errno;
        if (setresgid(gid, gid, gid) < 0)
                return -errno;
        if (setresuid(c->uid, c->uid, c->uid) < 0)
                return -errno;
        /* uid 0 keeps its capabilities across setresuid(): cleared here for every caller alike. */
        if (syscall(SYS_capset, &h, none) < 0)
                return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        /* And nothing is left: checked, not assumed. */
        return caller_check_dropped();
}
