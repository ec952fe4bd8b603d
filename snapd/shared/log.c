/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "escape.h"
#include "log.h"

static int max_level = LOG_INFO;
static int to_journal = -1;     /* -1: not decided yet (LOG_TARGET_AUTO) */
static bool to_null = false;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

static bool stderr_is_journal(void);

static const char *const target_names[] = {
        [LOG_TARGET_AUTO] = "auto",
        [LOG_TARGET_JOURNAL] = "journal",
        [LOG_TARGET_CONSOLE] = "console",
        [LOG_TARGET_NULL] = "null",
};

void log_set_target(LogTarget t) {
        to_null = t == LOG_TARGET_NULL;
        to_journal = t == LOG_TARGET_JOURNAL ? 1 : t == LOG_TARGET_CONSOLE ? 0 : -1;
}

LogTarget log_get_target(void) {
        if (to_null)
                return LOG_TARGET_NULL;
        if (to_journal < 0)
                to_journal = stderr_is_journal();
        return to_journal ? LOG_TARGET_JOURNAL : LOG_TARGET_CONSOLE;
}

const char *log_target_to_string(LogTarget t) {
        return t >= 0 && (size_t) t < ELEMENTSOF(target_names) ? target_names[t] : NULL;
}

LogTarget log_target_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(target_names); i++)
                if (strcmp(s, target_names[i]) == 0)
                        return (LogTarget) i;
        return _LOG_TARGET_INVALID;
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

bool log_stderr_is_journal(void) {
        if (to_journal < 0)
                to_journal = stderr_is_journal();
        return to_journal;
}

int log_job(int level, const char *job, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        if (level > max_level || to_null)
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

/* The job stream of this process (a worker runs one job), and its unfinished line. */
typedef struct JobStream {
        FILE *f;
        char *job;
        char *line;
        size_t len, cap;
} JobStream;

static JobStream job_stream;

static void job_stream_line(JobStream *js) {
        _cleanup_free_ char *esc = NULL;

        if (!js->line)
                return;
        js->line[js->len] = '\0';
        esc = cescape(js->line);
        (void) log_job(LOG_WARNING, js->job, "%s", esc ? esc : "(out of memory)");
        js->len = 0;
}

static ssize_t job_stream_write(void *cookie, const char *buf, size_t size) {
        JobStream *js = cookie;

        for (size_t i = 0; i < size; i++) {
                if (buf[i] == '\n') {
                        job_stream_line(js);
                        continue;
                }
                if (js->len + 2 > js->cap) {
                        size_t cap = js->cap ? js->cap * 2 : 256;
                        char *p = realloc(js->line, cap);

                        if (!p) {
                                errno = ENOMEM;
                                return -1;
                        }
                        js->line = p;
                        js->cap = cap;
                }
                js->line[js->len++] = buf[i] ? buf[i] : ' ';
        }
        return (ssize_t) size;
}

static int job_stream_close(void *cookie) {
        JobStream *js = cookie;

        if (js->len > 0)
                job_stream_line(js);
        free(js->line);
        free(js->job);
        *js = (JobStream) {};
        return 0;
}

FILE *log_job_stream(const char *job) {
        cookie_io_functions_t io = { .write = job_stream_write, .close = job_stream_close };

        if (job_stream.f)
                return job_stream.f;
        job_stream.job = strdup(job);
        if (!job_stream.job)
                return NULL;
        job_stream.f = fopencookie(&job_stream, "w", io);
        if (!job_stream.f) {
                job_stream.job = mfree(job_stream.job);
                return NULL;
        }
        /* Each fprintf() a write of its own: a line is never held back. */
        setvbuf(job_stream.f, NULL, _IOLBF, 0);
        return job_stream.f;
}

void log_path(FILE *log, const char *path, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *esc = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        esc = cescape(path);
        if (!esc)
                return;
        if (log && log == job_stream.f) {
                if (LOG_WARNING > max_level)
                        return;
                if (to_journal < 0)
                        to_journal = stderr_is_journal();
                if (to_journal &&
                    sd_journal_send("MESSAGE=%s: %s: %s", job_stream.job, esc, msg, "PRIORITY=%i", LOG_WARNING,
                                    "REFSNAP_JOB=%s", job_stream.job, "REFSNAP_PATH=%s", path,
                                    "SYSLOG_IDENTIFIER=refsnapd", NULL) >= 0)
                        return;
                fprintf(stderr, "<%d>%s: %s: %s\n", LOG_WARNING, job_stream.job, esc, msg);
                return;
        }
        if (log)
                fprintf(log, "%s: %s\n", esc, msg);
}
