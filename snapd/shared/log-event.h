/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include "macro.h"

/*
 * The journal's events: one MESSAGE_ID each, with an entry in the catalog
 * (refsnapd/refsnapd.catalog, installed to /usr/lib/systemd/catalog/;
 * `journalctl -x` shows it).  An ID never changes once released; a new
 * event gets a new one (`systemd-id128 new`) and its catalog entry.
 */
#define MESSAGE_ID_SNAPSHOT_COMPLETE       "fcedb556bb7b4c47b34a692e1970a1c0"
#define MESSAGE_ID_SNAPSHOT_PARTIAL        "cf5ae8e8382c4980ac14fb43d35faccc"
#define MESSAGE_ID_SNAPSHOT_FAILED         "7a9afbaae10f4be6b252a6f4350a1f71"
#define MESSAGE_ID_SNAPSHOT_UNCHANGED      "a84c074995ba4b1a954364cef3547fc0"
#define MESSAGE_ID_SNAPSHOT_PRUNED         "60dfdb70889e4a66bdf4a1506bbb8a55"
#define MESSAGE_ID_PRUNE_FAILED            "1ae5ff55c2484e6ebd01c3246d71db9e"
#define MESSAGE_ID_RESTORED                "e033698d0e2e4f999110e4ef22a98b4b"
#define MESSAGE_ID_RELOAD_FAILED           "e6218b0abef242c5b20262b1657c27e2"
#define MESSAGE_ID_SNAPSHOT_DELETED       "47398cb04154488fb76d2053c86cf403"
/* Reserved, with its catalog entry, for the self-service restore. */
#define MESSAGE_ID_SELF_SERVICE_RESTORED   "03d32527f7964e908669d9ee8def8d50"
/* refsnapctl purge: a path purged from a job's snapshots (or one that could not be, with ERRNO=). */
#define MESSAGE_ID_PURGED                  "5a6dad52deb841b2a38d718e57a27ae2"

/*
 * The fields of an event beside its message; each is sent only when set
 * (a NULL string, has_counts false, a zero duration or error).
 */
typedef struct EventFields {
        const char *snapshot;           /* REFSNAP_SNAPSHOT= */
        const char *path;               /* REFSNAP_PATH= (relative to the source; its bytes, unescaped) */
        bool has_counts;
        uint64_t files, bytes;          /* REFSNAP_FILES=, REFSNAP_BYTES= */
        uint64_t duration_usec;         /* REFSNAP_DURATION_USEC= */
        int error;                      /* ERRNO= (positive or negative errno) */
} EventFields;

/*
 * Events follow the log's target (log_set_target(), LogControl1's
 * LogTarget) as log_job() does: null says nothing, console writes the line
 * on stderr, journal (or auto with stderr the journal's stream) sends the
 * event with its fields.  Where events go when stderr is not the journal: LOG_EVENTS_STDERR (the
 * default: a line on stderr, as log_job() writes) or LOG_EVENTS_JOURNAL
 * (the journal only, nothing printed when it cannot be reached:
 * refsnapctl, whose own output says what happened).
 */
typedef enum LogEventsTarget { LOG_EVENTS_STDERR, LOG_EVENTS_JOURNAL } LogEventsTarget;
void log_events_set_target(LogEventsTarget t);

/*
 * An event of job (NULL: the daemon's) at level, with MESSAGE_ID id and
 * fields f (may be NULL); the message is "JOB: TEXT" as log_job() makes
 * it.  CODE_FILE, CODE_LINE and CODE_FUNC are the caller's (log_event()
 * passes them).  Returns 0, or -errno when it could be said nowhere.
 */
#define log_event(level, id, job, f, ...) \
        log_event_at(__FILE__, __LINE__, __func__, level, id, job, f, __VA_ARGS__)

_printf_(8, 9)
int log_event_at(const char *file, int line, const char *func, int level, const char *id, const char *job,
                 const EventFields *f, const char *fmt, ...);
