/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <syslog.h>

#include "macro.h"

/*
 * Logging: to the journal with the job name as the field REFSNAP_JOB when
 * stderr is connected to it (JOURNAL_STREAM), to stderr otherwise.
 */
void log_set_max_level(int level);
int log_get_max_level(void);

_printf_(3, 4)
int log_job(int level, const char *job, const char *fmt, ...);

#define log_error(...)   log_job(LOG_ERR, NULL, __VA_ARGS__)
#define log_warning(...) log_job(LOG_WARNING, NULL, __VA_ARGS__)
#define log_notice(...)  log_job(LOG_NOTICE, NULL, __VA_ARGS__)
#define log_info(...)    log_job(LOG_INFO, NULL, __VA_ARGS__)
#define log_debug(...)   log_job(LOG_DEBUG, NULL, __VA_ARGS__)
