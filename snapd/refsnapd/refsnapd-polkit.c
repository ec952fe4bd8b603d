/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polkit, asked asynchronously: the call is parked while polkit thinks
 * (it may be waiting for a user to type a password), the event loop goes
 * on, and polkit's answer puts the call back in the bus's read queue, so
 * that the method's handler runs again from the start and finds the
 * answer here.  The design is systemd's (src/shared/bus-polkit.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "bus-names.h"
#include "log.h"
#include "macro.h"
#include "refsnapd-polkit.h"
#include "refsnapd-self-log.h"
#include "timespan.h"

/* How long polkit may take: a user typing a password, or polkit alone. */
#define POLKIT_INTERACTIVE_TIMEOUT_USEC (5 * USEC_PER_MIN)
#define POLKIT_TIMEOUT_USEC (25 * USEC_PER_SEC)

static const struct {
        const char *member;
        const char *action;
} member_actions[] = {
        { "Snapshot",           POLKIT_ACTION_SNAPSHOT },
        { "SnapshotFull",       POLKIT_ACTION_SNAPSHOT },
        { "SnapshotWithOptions", POLKIT_ACTION_SNAPSHOT },
        { "SnapshotIfChanged",  POLKIT_ACTION_SNAPSHOT },
        { "Prune",              POLKIT_ACTION_MANAGE },
        { "Cancel",             POLKIT_ACTION_MANAGE },
        { "Reload",             POLKIT_ACTION_MANAGE },
        /* Managing snapshots (issue #24): pinned, deleted, a job paused, a path purged. */
        { "Pin",                POLKIT_ACTION_MANAGE },
        { "Unpin",              POLKIT_ACTION_MANAGE },
        { "DeleteSnapshot",     POLKIT_ACTION_MANAGE },
        { "Pause",              POLKIT_ACTION_MANAGE },
        { "Resume",             POLKIT_ACTION_MANAGE },
        { "Purge",              POLKIT_ACTION_MANAGE },
        /* Self-service (issue #24): a user's own files, looked up as her. */
        { "Versions",           POLKIT_ACTION_SELF_SERVICE },
        { "RestoreMine",        POLKIT_ACTION_SELF_SERVICE },
};

const char *polkit_action_for(const char *member) {
        if (!member)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(member_actions); i++)
                if (strcmp(member_actions[i].member, member) == 0)
                        return member_actions[i].action;
        return NULL;
}

typedef enum Verdict {
        VERDICT_PENDING,        /* polkit is asked */
        VERDICT_ALLOWED,
        VERDICT_DENIED,
        VERDICT_CHALLENGE,      /* allowed only after authentication, which the call did not allow */
        VERDICT_FAILED,         /* polkit is not on the bus, or answered with an error */
} Verdict;

typedef struct PolkitQuery {
        ParkedCall parked;              /* first: the call, parked, then dispatched again */
        sd_bus_slot *slot;              /* CheckAuthorization, while it is asked */
        sd_event_source *defer;         /* frees the query after the call's second dispatch */
        const char *action;
        uid_t uid;
        Verdict verdict;
        char *why;                      /* VERDICT_FAILED: what polkit's answer was */
        char caller[256];
} PolkitQuery;

static PolkitQuery *query_free(PolkitQuery *q) {
        if (!q)
                return NULL;
        parked_remove(&q->parked);
        sd_bus_slot_unref(q->slot);
        sd_event_source_disable_unref(q->defer);
        free(q->why);
        free(q);
        return NULL;
}

static void query_free_parked(ParkedCall *p) {
        query_free((PolkitQuery *) p);
}

static PolkitQuery *registry_find(PolkitRegistry *r, sd_bus_message *call) {
        return (PolkitQuery *) parked_find(r, call);
}

/*
 * "uid U, pid P, unit UNIT (:1.N)" of a call's sender, for the log only:
 * the pid as the bus says it, the unit read from /proc by that pid (which
 * may be another process's by now), so never for a decision.
 */
static void format_caller(sd_bus_message *call, sd_bus_creds *creds, uid_t euid, char *buf, size_t size) {
        const char *unit = NULL, *sender = sd_bus_message_get_sender(call);
        pid_t pid = 0;

        (void) sd_bus_creds_get_pid(creds, &pid);
        if (sd_bus_creds_get_unit(creds, &unit) < 0)
                unit = NULL;
        snprintf(buf, size, "uid %u, pid %d, unit %s (%s)", (unsigned) euid, (int) pid, unit ? unit : "-",
                 sender ? sender : "-");
}

void polkit_describe_caller(sd_bus_message *call, char *buf, size_t size) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t euid;

        if (sd_bus_query_sender_creds(call, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID | SD_BUS_CREDS_UNIT |
                                      SD_BUS_CREDS_AUGMENT, &creds) < 0 ||
            sd_bus_creds_get_euid(creds, &euid) < 0) {
                snprintf(buf, size, "a caller the bus did not name");
                return;
        }
        format_caller(call, creds, euid, buf, size);
}

static int on_defer(sd_event_source *s, void *userdata) {
        query_free(userdata);
        return 0;
}

/* polkit's answer: kept, and the call dispatched again to find it. */
static int on_answer(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        PolkitQuery *q = userdata;
        sd_bus *bus = sd_bus_message_get_bus(q->parked.call);
        int authorized = false, challenge = false, r;

        q->slot = sd_bus_slot_unref(q->slot);
        if (sd_bus_message_is_method_error(reply, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(reply);

                q->verdict = VERDICT_FAILED;
                if (asprintf(&q->why, "polkit did not answer (%s: %s)", e && e->name ? e->name : "?",
                             e && e->message ? e->message : "") < 0)
                        q->why = NULL;
        } else {
                r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
                if (r >= 0)
                        r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
                q->verdict = r < 0 ? VERDICT_FAILED :
                             authorized ? VERDICT_ALLOWED :
                             challenge ? VERDICT_CHALLENGE : VERDICT_DENIED;
                if (r < 0)
                        q->why = strdup("polkit did not answer (its answer could not be read)");
        }
        /*
         * Dispatched again as if it came now; the query is freed at the
         * next idle turn, after that dispatch (the bus's sources run at a
         * higher priority).
         */
        r = sd_event_add_defer(sd_bus_get_event(bus), &q->defer, on_defer, q);
        if (r >= 0)
                r = sd_event_source_set_priority(q->defer, SD_EVENT_PRIORITY_IDLE);
        if (r >= 0)
                r = parked_dispatch_again(&q->parked);
        if (r < 0) {
                log_error("%s() from %s: cannot go on with polkit's answer: %s",
                          sd_bus_message_get_member(q->parked.call), q->caller, strerror(-r));
                (void) sd_bus_reply_method_errno(q->parked.call, r, NULL);
                query_free(q);
        }
        return 0;
}

/* Self-service's lines are rate limited per user (any user may call); the others are not. */
static bool may_log(const char *action, uid_t uid) {
        return !action || strcmp(action, POLKIT_ACTION_SELF_SERVICE) != 0 || self_log_allow(uid);
}

/* The second dispatch of a parked call: polkit's verdict, said and logged. */
static int query_verdict(PolkitQuery *q, sd_bus_error *error) {
        const char *member = sd_bus_message_get_member(q->parked.call);
        bool log = may_log(q->action, q->uid);

        q->parked.dispatched = true;
        switch (q->verdict) {
        case VERDICT_ALLOWED:
                if (log)
                        log_info("%s() called by %s: %s authorized by polkit", member, q->caller, q->action);
                return 1;
        case VERDICT_CHALLENGE:
                if (log)
                        log_notice("%s() from %s refused: %s: not authorized without authentication", member,
                                   q->caller, q->action);
                return sd_bus_error_setf(error, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                         "Authentication is required for %s", q->action);
        case VERDICT_DENIED:
                if (log)
                        log_notice("%s() from %s refused: %s: not authorized", member, q->caller, q->action);
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED, "Not authorized by polkit for %s",
                                         q->action);
        case VERDICT_FAILED:
        case VERDICT_PENDING:
        default:
                if (log)
                        log_notice("%s() from %s refused: %s: %s", member, q->caller, q->action,
                                   q->why ? q->why : "polkit did not answer");
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Not authorized for %s: polkit did not answer", q->action);
        }
}

int polkit_check_caller(sd_bus_message *call, PolkitRegistry **registry, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *ask = NULL;
        const char *member = sd_bus_message_get_member(call), *action, *sender;
        sd_bus *bus = sd_bus_message_get_bus(call);
        PolkitQuery *q;
        char caller[256];
        int interactive, r;
        uid_t euid;

        q = registry_find(*registry, call);
        if (q)
                return query_verdict(q, error);

        /* The euid from the bus (never augmented: /proc by a PID may be another process's by now). */
        r = sd_bus_query_sender_creds(call, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID | SD_BUS_CREDS_UNIT |
                                      SD_BUS_CREDS_AUGMENT, &creds);
        if (r < 0)
                return r;
        if (sd_bus_creds_get_augmented_mask(creds) & SD_BUS_CREDS_EUID)
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "The bus did not say who is calling");
        r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return r;
        format_caller(call, creds, euid, caller, sizeof(caller));
        action = polkit_action_for(member);
        if (euid == 0) {
                if (may_log(action, euid))
                        log_info("%s() called by %s", member, caller);
                return 1;
        }
        sender = sd_bus_message_get_sender(call);
        if (!action || !sender) {
                log_notice("%s() from %s refused: root only", member, caller);
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "Only root may do this");
        }
        interactive = sd_bus_message_get_allow_interactive_authorization(call);
        if (interactive < 0)
                return interactive;

        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        *q = (PolkitQuery) {
                .action = action,
                .uid = euid,
        };
        snprintf(q->caller, sizeof(q->caller), "%s", caller);
        r = parked_add(registry, &q->parked, call);
        if (r < 0) {
                query_free(q);
                return r;
        }

        /* The subject: the sender's unique name on the bus, never a PID (which may be reused). */
        r = sd_bus_message_new_method_call(bus, &ask, "org.freedesktop.PolicyKit1",
                                           "/org/freedesktop/PolicyKit1/Authority",
                                           "org.freedesktop.PolicyKit1.Authority", "CheckAuthorization");
        if (r >= 0)
                r = sd_bus_message_append(ask, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", sender,
                                          action, 0, (uint32_t) (interactive > 0), "");
        if (r >= 0)
                r = sd_bus_call_async(bus, &q->slot, ask, on_answer, q,
                                      interactive > 0 ? POLKIT_INTERACTIVE_TIMEOUT_USEC : POLKIT_TIMEOUT_USEC);
        if (r < 0) {
                query_free(q);
                if (may_log(action, euid))
                        log_notice("%s() from %s refused: %s: polkit cannot be asked: %s", member, caller, action,
                                   strerror(-r));
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Not authorized for %s: polkit cannot be asked", action);
        }
        log_debug("%s() from %s: asking polkit for %s%s", member, caller, action,
                  interactive > 0 ? ", interactive" : "");
        return 0;
}

PolkitRegistry *polkit_registry_free(PolkitRegistry *r) {
        return parked_registry_free(r, query_free_parked);
}
