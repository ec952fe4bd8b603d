/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "log.h"

static int max_level = LOG_INFO;
static int to_journal = -1;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

/* Is stderr the journal stream systemd gave us? */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == dev && st.st_ino == ino;
}

int log_job(int level, const char *job, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        if (level > max_level)
                return 0;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        if (to_journal < 0)
                to_journal = stderr_is_journal();
        if (to_journal) {
                if (job)
                        r = sd_journal_send("MESSAGE=%s: %s", job, msg, "PRIORITY=%i", level,
                                            "REFSNAP_JOB=%s", job, "SYSLOG_IDENTIFIER=refsnapd", NULL);
                else
                        r = sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", level,
                                            "SYSLOG_IDENTIFIER=refsnapd", NULL);
                if (r >= 0)
                        return 0;
        }
        fprintf(stderr, "<%d>%s%s%s\n", level, job ? job : "", job ? ": " : "", msg);
        return 0;
}
