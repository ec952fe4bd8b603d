/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "log-event.h"
#include "log.h"

static LogEventsTarget events_target = LOG_EVENTS_STDERR;

void log_events_set_target(LogEventsTarget t) {
        events_target = t;
}

#define N_FIELDS 12

int log_event_at(const char *file, int line, const char *func, int level, const char *id, const char *job,
                 const EventFields *f, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *m = NULL, *prio = NULL, *mid = NULL, *j = NULL, *snap = NULL, *path = NULL,
                            *files = NULL, *bytes = NULL, *dur = NULL, *err = NULL, *code_file = NULL,
                            *code_line = NULL;
        struct iovec iov[N_FIELDS];
        int n = 0, r;
        va_list ap;

        /* The log's own target (LogControl1's LogTarget) rules events too: null says nothing. */
        if (level > log_get_max_level() || log_get_target() == LOG_TARGET_NULL)
                return 0;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (!log_stderr_is_journal() && events_target == LOG_EVENTS_STDERR) {
                fprintf(stderr, "<%d>%s%s%s\n", level, job ? job : "", job ? ": " : "", msg);
                return 0;
        }

#define FIELD(var, ...)                                                         \
        do {                                                                    \
                if (asprintf(&var, __VA_ARGS__) < 0)                            \
                        return -ENOMEM;                                         \
                iov[n++] = (struct iovec) { .iov_base = var, .iov_len = strlen(var) }; \
        } while (0)

        FIELD(m, "MESSAGE=%s%s%s", job ? job : "", job ? ": " : "", msg);
        FIELD(prio, "PRIORITY=%i", level);
        FIELD(mid, "MESSAGE_ID=%s", id);
        iov[n++] = (struct iovec) { .iov_base = (char *) "SYSLOG_IDENTIFIER=refsnapd",
                                    .iov_len = strlen("SYSLOG_IDENTIFIER=refsnapd") };
        if (job)
                FIELD(j, "REFSNAP_JOB=%s", job);
        if (f && f->snapshot)
                FIELD(snap, "REFSNAP_SNAPSHOT=%s", f->snapshot);
        if (f && f->path)
                FIELD(path, "REFSNAP_PATH=%s", f->path);
        if (f && f->has_counts) {
                FIELD(files, "REFSNAP_FILES=%llu", (unsigned long long) f->files);
                FIELD(bytes, "REFSNAP_BYTES=%llu", (unsigned long long) f->bytes);
        }
        if (f && f->duration_usec > 0)
                FIELD(dur, "REFSNAP_DURATION_USEC=%llu", (unsigned long long) f->duration_usec);
        if (f && f->error != 0)
                FIELD(err, "ERRNO=%i", abs(f->error));
#undef FIELD
        if (asprintf(&code_file, "CODE_FILE=%s", file) < 0 || asprintf(&code_line, "CODE_LINE=%i", line) < 0)
                return -ENOMEM;
        r = sd_journal_sendv_with_location(code_file, code_line, func, iov, n);
        if (r >= 0 || events_target == LOG_EVENTS_JOURNAL)
                return r;
        /* The journal went away under the daemon: the line on stderr still says it. */
        fprintf(stderr, "<%d>%s%s%s\n", level, job ? job : "", job ? ": " : "", msg);
        return 0;
}
