/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>

#include "time-util.h"

usec_t now_realtime(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / 1000;
}

usec_t now_monotonic(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / 1000;
}

const char *format_timestamp_utc(time_t t, TimestampStyle style, char *buf, size_t size) {
        struct tm tm;

        if (!gmtime_r(&t, &tm) ||
            strftime(buf, size, style == TIMESTAMP_ISO ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%d %H:%M:%SZ",
                     &tm) == 0)
                snprintf(buf, size, "?");
        return buf;
}

const char *format_usec_utc(usec_t t, TimestampStyle style, const char *zero_text, char *buf, size_t size) {
        if (t == 0) {
                snprintf(buf, size, "%s", zero_text);
                return buf;
        }
        return format_timestamp_utc((time_t) (t / USEC_PER_SEC), style, buf, size);
}

const char *format_timestamp_human(time_t t, bool utc, char *buf, size_t size) {
        struct tm tm;

        if (utc) {
                if (!gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
                        snprintf(buf, size, "?");
                return buf;
        }
        tzset();
        if (!localtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, size, "?");
        return buf;
}

const char *format_usec_human(usec_t t, bool utc, const char *zero_text, char *buf, size_t size) {
        if (t == 0)
                return format_usec_utc(0, TIMESTAMP_ISO, zero_text, buf, size);
        return format_timestamp_human((time_t) (t / USEC_PER_SEC), utc, buf, size);
}
