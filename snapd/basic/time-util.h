/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "timespan.h"

#define TIMESTAMP_MAX 64

typedef enum TimestampStyle {
        TIMESTAMP_ISO,          /* 2026-12-03T07:00:00Z: snapshot names, refsnapctl */
        TIMESTAMP_LOG,          /* 2026-12-03 07:00:00Z: the daemon's status line */
} TimestampStyle;

/* The realtime clock in microseconds. */
usec_t now_realtime(void);
/* CLOCK_MONOTONIC in microseconds: for durations. */
usec_t now_monotonic(void);

/*
 * The UTC time t (seconds) in style, into buf (TIMESTAMP_MAX bytes are
 * always enough); returns buf.
 */
const char *format_timestamp_utc(time_t t, TimestampStyle style, char *buf, size_t size);

/* The same for t in microseconds, with zero written as zero_text. */
const char *format_usec_utc(usec_t t, TimestampStyle style, const char *zero_text, char *buf, size_t size);

/*
 * t for a person to read: "2026-12-03 08:00:00 CET", in the local zone
 * (TZ, /etc/localtime) with its abbreviation, or "2026-12-03 07:00:00
 * UTC" when utc (refsnapctl --utc).  Snapshot names stay UTC identifiers;
 * these are the times shown beside them.
 */
const char *format_timestamp_human(time_t t, bool utc, char *buf, size_t size);
/* The same for t in microseconds, with zero written as zero_text. */
const char *format_usec_human(usec_t t, bool utc, const char *zero_text, char *buf, size_t size);
