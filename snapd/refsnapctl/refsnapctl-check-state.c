/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "refsnapctl-check-state.h"
#include "time-util.h"

static bool startswith_word(const char *s, const char *word) {
        size_t n = strlen(word);

        return s && strncmp(s, word, n) == 0 && (s[n] == '\0' || s[n] == ' ');
}

CheckState check_job_state(const CheckJob *j, usec_t now, usec_t warn, usec_t crit, usec_t *age, char *why,
                           size_t size) {
        char a[64], w[64];
        usec_t verified = MAX(j->last, j->checked);

        if (warn == 0)
                warn = CHECK_WARN_INTERVALS * j->interval;
        if (crit == 0)
                crit = CHECK_CRIT_INTERVALS * j->interval;
        *age = verified > 0 && now > verified ? now - verified : 0;
        timespan_format(*age / USEC_PER_SEC * USEC_PER_SEC, a, sizeof(a));
        if (startswith_word(j->result, "failed")) {
                /* The daemon's words when they say more than "failed". */
                snprintf(why, size, "the last snapshot failed%s%s%s", strcmp(j->result, "failed") ? " (" : "",
                         strcmp(j->result, "failed") ? j->result : "", strcmp(j->result, "failed") ? ")" : "");
                return CHECK_CRITICAL;
        }
        if (j->paused) {
                snprintf(why, size, "paused until %s, last verified %s ago",
                         j->paused_until ? format_usec_utc(j->paused_until, TIMESTAMP_ISO, "-", w, sizeof(w)) :
                         "resumed", j->last ? a : "never");
                return CHECK_WARNING;
        }
        if (j->last == 0) {
                snprintf(why, size, "no snapshot yet%s", j->result && strcmp(j->result, "running") == 0 ?
                         " (the first is running)" : "");
                return CHECK_WARNING;
        }
        if (verified + crit < now) {
                snprintf(why, size, "last verified %s ago, more than %s", a, timespan_format(crit, w, sizeof(w)));
                return CHECK_CRITICAL;
        }
        if (startswith_word(j->result, "partial") || j->newest_partial) {
                snprintf(why, size, "the newest snapshot is partial (%s)",
                         j->result && *j->result && strcmp(j->result, "-") != 0 ? j->result : "files skipped");
                return CHECK_WARNING;
        }
        if (verified + warn < now) {
                snprintf(why, size, "last verified %s ago, more than %s", a, timespan_format(warn, w, sizeof(w)));
                return CHECK_WARNING;
        }
        snprintf(why, size, "last verified %s ago%s", a, j->checked > j->last ? " (unchanged since its snapshot)" : "");
        return CHECK_OK;
}

const char *check_state_to_string(CheckState s) {
        switch (s) {
        case CHECK_OK:
                return "OK";
        case CHECK_WARNING:
                return "WARNING";
        case CHECK_CRITICAL:
                return "CRITICAL";
        default:
                return "UNKNOWN";
        }
}

CheckState check_state_worst(CheckState a, CheckState b) {
        static const int rank[] = { [CHECK_OK] = 0, [CHECK_WARNING] = 1, [CHECK_UNKNOWN] = 2,
                                    [CHECK_CRITICAL] = 3 };

        return rank[a] >= rank[b] ? a : b;
}
