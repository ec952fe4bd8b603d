/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>

typedef uint64_t usec_t;

#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define USEC_PER_SEC  ((usec_t) 1000000ULL)
#define USEC_PER_MIN  (60 * USEC_PER_SEC)
#define USEC_PER_HOUR (60 * USEC_PER_MIN)
#define USEC_PER_DAY  (24 * USEC_PER_HOUR)
#define USEC_PER_WEEK (7 * USEC_PER_DAY)

/*
 * Parse a time span as systemd.time(7) writes them: "90s", "15min", "1h",
 * "1d", "1w", "1h 30min", "2h30m"; a bare number is seconds.  Units: us,
 * ms, s/sec/second(s), m/min/minute(s), h/hr/hour(s), d/day(s),
 * w/week(s).  Returns 0 or -EINVAL/-ERANGE.
 */
int timespan_parse(const char *s, usec_t *ret);

/* "1h 30min"; buf of at least 64 bytes. */
const char *timespan_format(usec_t t, char *buf, unsigned long size);
