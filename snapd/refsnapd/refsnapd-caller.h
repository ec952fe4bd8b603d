/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <systemd/sd-bus.h>

#include "refsnapd-parked.h"

/*
 * Who is calling, from the bus alone, and a process that becomes her.
 *
 * The identity of a self-service call (org.refsnap1(5), SECURITY): the
 * uid is the sender's effective uid as the bus says it
 * (sd_bus_query_sender_creds(), refused when sd-bus had to augment it
 * from /proc: a PID may be another process's by now); the groups are the
 * bus driver's UnixGroupIDs for the sender's connection
 * (org.freedesktop.DBus.GetConnectionCredentials, asked asynchronously,
 * the call parked meanwhile as refsnapd-polkit.c parks): the groups the
 * process had when it connected, which is what the kernel would judge it
 * by, so `setpriv --clear-groups` drops them here too.  Never /proc,
 * never the group database.  Absent (a bus that does not say them), the
 * call is refused with org.refsnap1.CredentialsUnavailable.
 */
typedef struct Caller {
        uid_t uid;
        /*
         * Her own (primary) group: the sender's egid as sd-bus has it.
         * dbus-daemon's UnixGroupIDs do not say which group is the
         * primary one (SO_PEERGROUPS and the primary group in one sorted
         * list, so the first is merely the lowest-numbered, say cdrom),
         * and sd-bus fills the egid in from /proc/PID/status of the
         * connection's PID: it is taken only when it is one of groups
         * (refused otherwise), so a PID reused since chooses at most
         * which of her own groups a file made anew gets, and grants
         * nothing.  Absent: refused.
         */
        gid_t gid;
        /* Every one counts in the kernel's permission checks, as the fsgid does. */
        gid_t *groups;
        size_t n_groups;
        char sender[256];       /* the unique bus name, for the log */
} Caller;

Caller *caller_free(Caller *c);
Caller *caller_dup(const Caller *c);

/* The calls parked for the bus driver's answer, and the answers not yet forgotten. */
typedef ParkedRegistry CallerRegistry;

/*
 * Whether a new call of uid may be parked (for the bus driver, then
 * polkit): 0, or -errno with error set (org.refsnap1.Busy), the call then
 * refused before anything is asked.
 */
typedef int (*CallerAdmit)(uid_t uid, void *userdata, sd_bus_error *error);

/*
 * The caller of call.  Returns 1 and *ret (the registry's, valid until
 * caller_forget(); copy what outlives the handler); 0: the bus driver was
 * asked, the handler returns 1 at once and is called again with the same
 * message (rewound) when it has answered; or -errno with error set
 * (org.refsnap1.CredentialsUnavailable, AccessDenied for an augmented
 * uid, or what admit said).  admit (may be NULL) is asked first, for a
 * call not yet known, with the sender's euid.  *registry is made when
 * needed.
 */
int caller_identify(sd_bus_message *call, CallerRegistry **registry, CallerAdmit admit, void *userdata,
                    const Caller **ret, sd_bus_error *error);

/* How many calls of uid the registry holds: parked, or known and not yet forgotten (waiting for polkit). */
size_t caller_registry_count(const CallerRegistry *registry, uid_t uid);

/* The handler is done with call (answered, or handed on): its entry freed.  NULL-safe. */
void caller_forget(CallerRegistry *registry, sd_bus_message *call);

/* Every entry freed; calls still waiting for the bus driver answered org.refsnap1.Stopping.  NULL-safe. */
CallerRegistry *caller_registry_free(CallerRegistry *r);

/*
 * In a child of the daemon (root, full capabilities), after it has
 * closed every descriptor it must not keep: become c for good.  Not
 * dumpable (the caller may not trace it nor reach its memory or
 * descriptors through /proc), the capability bounding set emptied, setgroups(c's groups), setresgid()
 * to c's gid (-EINVAL unless it is one of c's groups) and setresuid() to c, the capability sets cleared (a caller that is
 * root keeps uid 0 and nothing more), the ambient set cleared,
 * PR_SET_NO_NEW_PRIVS, and then caller_check_dropped().  Returns 0, or
 * -errno: the child must then end without doing anything.
 */
int caller_become(const Caller *c);

/*
 * 0 when this process holds no capability (effective, permitted and
 * inheritable sets empty, ambient set empty), has no_new_privs and is
 * not dumpable; -EPERM
 * otherwise, -errno when it cannot tell.
 */
int caller_check_dropped(void);
