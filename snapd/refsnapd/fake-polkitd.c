/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stand-in for polkitd on a test's private system bus (test-polkit.sh):
 * org.freedesktop.PolicyKit1's CheckAuthorization, answered from a rules
 * file read at each call, every question written to a log.
 *
 *   fake-polkitd RULES LOG
 *
 * RULES: lines "ACTION UID VERDICT", the first that matches decides
 * (none: no).  VERDICT: yes, no, challenge (not authorized, but could be
 * with authentication), error (a D-Bus error instead of an answer), or
 * hold (no answer while the rules say hold: the question waits, read
 * again every 50 ms).  LOG: one line per question, "kind=KIND name=NAME
 * action=ACTION flags=FLAGS uid=UID", the uid the bus gives for NAME.
 * Test code only.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "macro.h"

typedef struct Question {
        sd_bus_message *call;
        char *action;
        uid_t uid;
} Question;

static const char *arg_rules, *arg_log;
static Question *held;
static size_t n_held;

/* The verdict for action and uid: "yes", "no", "challenge", "error" or "hold". */
static void verdict(const char *action, uid_t uid, char out[static 16]) {
        char line[512], a[256], v[16];
        unsigned u;
        FILE *f = fopen(arg_rules, "re");

        strcpy(out, "no");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "%255s %u %15s", a, &u, v) == 3 && strcmp(a, action) == 0 && u == uid) {
                        snprintf(out, 16, "%s", v);
                        break;
                }
        fclose(f);
}

/* Answer q if its verdict is not hold; returns true when answered. */
static bool answer(Question *q) {
        char v[16];

        verdict(q->action, q->uid, v);
        if (strcmp(v, "hold") == 0)
                return false;
        if (strcmp(v, "error") == 0)
                (void) sd_bus_reply_method_errorf(q->call, "org.freedesktop.PolicyKit1.Error.Failed",
                                                  "fake-polkitd: an error, as asked");
        else
                (void) sd_bus_reply_method_return(q->call, "(bba{ss})", strcmp(v, "yes") == 0,
                                                  strcmp(v, "challenge") == 0, 0);
        return true;
}

static int on_check(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const char *kind, *key, *name = NULL, *action;
        uint32_t flags;
        uid_t uid = (uid_t) -1;
        Question q;
        FILE *log;
        int r;

        r = sd_bus_message_enter_container(m, 'r', "sa{sv}");
        if (r >= 0)
                r = sd_bus_message_read(m, "s", &kind);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                r = sd_bus_message_read(m, "s", &key);
                if (r >= 0 && strcmp(key, "name") == 0)
                        r = sd_bus_message_read(m, "v", "s", &name);
                else if (r >= 0)
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_read(m, "s", &action);
        if (r >= 0)
                r = sd_bus_message_skip(m, "a{ss}");
        if (r >= 0)
                r = sd_bus_message_read(m, "u", &flags);
        if (r < 0)
                return r;
        if (name && sd_bus_get_name_creds(sd_bus_message_get_bus(m), name, SD_BUS_CREDS_EUID, &creds) >= 0)
                (void) sd_bus_creds_get_euid(creds, &uid);
        log = fopen(arg_log, "ae");
        if (log) {
                fprintf(log, "kind=%s name=%s action=%s flags=%u uid=%d\n", kind, name ? name : "-", action,
                        (unsigned) flags, (int) uid);
                fclose(log);
        }
        q = (Question) { .call = m, .action = (char *) action, .uid = uid };
        if (answer(&q))
                return 1;
        /* Held: kept, with its own copy of the action (the message's is read again from the rules). */
        Question *h = reallocarray(held, n_held + 1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        held = h;
        held[n_held++] = (Question) { .call = sd_bus_message_ref(m), .action = strdup(action), .uid = uid };
        return 1;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        size_t k = 0;

        for (size_t i = 0; i < n_held; i++)
                if (answer(&held[i])) {
                        sd_bus_message_unref(held[i].call);
                        free(held[i].action);
                } else
                        held[k++] = held[i];
        n_held = k;
        (void) sd_event_source_set_time(s, usec + 50 * 1000);
        (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static const sd_bus_vtable authority_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("CheckAuthorization", "(sa{sv})sa{ss}us", "(bba{ss})", on_check,
                      SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END
};

int main(int argc, char *argv[]) {
        sd_bus *bus = NULL;
        sd_event *event = NULL;
        sigset_t ss;
        uint64_t now;
        int r;

        if (argc != 3) {
                fprintf(stderr, "usage: fake-polkitd RULES LOG\n");
                return 2;
        }
        arg_rules = argv[1];
        arg_log = argv[2];
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_now(event, CLOCK_MONOTONIC, &now);
        if (r >= 0)
                r = sd_event_add_time(event, NULL, CLOCK_MONOTONIC, now + 50 * 1000, 0, on_tick, NULL);
        if (r >= 0)
                r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/PolicyKit1/Authority",
                                             "org.freedesktop.PolicyKit1.Authority", authority_vtable, NULL);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.freedesktop.PolicyKit1", 0);
        if (r >= 0)
                r = sd_event_loop(event);
        if (r < 0)
                fprintf(stderr, "fake-polkitd: %s\n", strerror(-r));
        for (size_t i = 0; i < n_held; i++) {
                sd_bus_message_unref(held[i].call);
                free(held[i].action);
        }
        free(held);
        sd_bus_flush_close_unref(bus);
        sd_event_unref(event);
        return r < 0 ? 1 : 0;
}
