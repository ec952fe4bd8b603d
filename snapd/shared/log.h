/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

/*
 * Logging: to the journal with the job name as the field REFSNAP_JOB when
 * stderr is connected to it (JOURNAL_STREAM), to stderr otherwise.
 */
void log_set_max_level(int level);
int log_get_max_level(void);

/*
 * Where log_job() writes (LogControl1's LogTarget): auto decides by
 * JOURNAL_STREAM as at start; get answers journal or console for auto.
 */
typedef enum LogTarget {
        LOG_TARGET_AUTO,
        LOG_TARGET_JOURNAL,
        LOG_TARGET_CONSOLE,
        LOG_TARGET_NULL,
        _LOG_TARGET_INVALID = -EINVAL,
} LogTarget;

void log_set_target(LogTarget t);
LogTarget log_get_target(void);
const char *log_target_to_string(LogTarget t);
LogTarget log_target_from_string(const char *s);

/* Is stderr the journal stream systemd gave this process (JOURNAL_STREAM)? */
bool log_stderr_is_journal(void);

_printf_(3, 4)
int log_job(int level, const char *job, const char *fmt, ...);

#define log_error(...)   log_job(LOG_ERR, NULL, __VA_ARGS__)
#define log_warning(...) log_job(LOG_WARNING, NULL, __VA_ARGS__)
#define log_notice(...)  log_job(LOG_NOTICE, NULL, __VA_ARGS__)
#define log_info(...)    log_job(LOG_INFO, NULL, __VA_ARGS__)
#define log_debug(...)   log_job(LOG_DEBUG, NULL, __VA_ARGS__)

#include <stdio.h>

/*
 * A stream for what a job's run describes line by line (snapshot_take()'s
 * log): each line goes to log_job() at LOG_WARNING, escaped (cescape()),
 * so that no name in it can split it into a forged entry.  NULL on ENOMEM.
 */
FILE *log_job_stream(const char *job);

/*
 * "PATH: MESSAGE" on log, the path escaped (cescape()).  On a stream of
 * log_job_stream(), in the journal, one entry with the path, unescaped, in
 * a field of its own, REFSNAP_PATH=.
 */
_printf_(3, 4)
void log_path(FILE *log, const char *path, const char *fmt, ...);
