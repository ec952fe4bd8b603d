/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "timespan.h"

static const struct {
        const char *suffix;
        usec_t usec;
} units[] = {
        /* Longer suffixes first, so that "min" is not read as "m". */
        { "seconds", USEC_PER_SEC },
        { "second",  USEC_PER_SEC },
        { "minutes", USEC_PER_MIN },
        { "minute",  USEC_PER_MIN },
        { "hours",   USEC_PER_HOUR },
        { "hour",    USEC_PER_HOUR },
        { "days",    USEC_PER_DAY },
        { "day",     USEC_PER_DAY },
        { "weeks",   USEC_PER_WEEK },
        { "week",    USEC_PER_WEEK },
        { "msec",    1000 },
        { "usec",    1 },
        { "sec",     USEC_PER_SEC },
        { "min",     USEC_PER_MIN },
        { "hr",      USEC_PER_HOUR },
        { "ms",      1000 },
        { "us",      1 },
        { "s",       USEC_PER_SEC },
        { "m",       USEC_PER_MIN },
        { "h",       USEC_PER_HOUR },
        { "d",       USEC_PER_DAY },
        { "w",       USEC_PER_WEEK },
};

int timespan_parse(const char *s, usec_t *ret) {
        usec_t total = 0;
        bool any = false;

        if (!s)
                return -EINVAL;
        for (const char *p = s;;) {
                unsigned long long n = 0;
                usec_t unit = USEC_PER_SEC;
                size_t i;

                while (isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++) {
                        if (n > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        n = n * 10 + (*p - '0');
                }
                while (isspace((unsigned char) *p))
                        p++;
                for (i = 0; i < ELEMENTSOF(units); i++) {
                        size_t l = strlen(units[i].suffix);

                        if (strncmp(p, units[i].suffix, l) == 0 &&
                            !isalpha((unsigned char) p[l])) {
                                unit = units[i].usec;
                                p += l;
                                break;
                        }
                }
                if (i == ELEMENTSOF(units) && isalpha((unsigned char) *p))
                        return -EINVAL;
                if (n > UINT64_MAX / unit || total > UINT64_MAX - n * unit)
                        return -ERANGE;
                total += n * unit;
                any = true;
        }
        if (!any)
                return -EINVAL;
        *ret = total;
        return 0;
}

const char *timespan_format(usec_t t, char *buf, unsigned long size) {
        static const struct {
                const char *suffix;
                usec_t usec;
        } parts[] = {
                { "w", USEC_PER_WEEK }, { "d", USEC_PER_DAY }, { "h", USEC_PER_HOUR },
                { "min", USEC_PER_MIN }, { "s", USEC_PER_SEC }, { "ms", 1000 }, { "us", 1 },
        };
        size_t len = 0;

        if (size == 0)
                return NULL;
        buf[0] = '\0';
        if (t == 0) {
                snprintf(buf, size, "0");
                return buf;
        }
        for (size_t i = 0; i < ELEMENTSOF(parts) && t > 0; i++) {
                usec_t n = t / parts[i].usec;
                int w;

                if (n == 0)
                        continue;
                w = snprintf(buf + len, size - len, "%s%llu%s", len ? " " : "",
                             (unsigned long long) n, parts[i].suffix);
                if (w < 0 || (size_t) w >= size - len)
                        return NULL;
                len += w;
                t -= n * parts[i].usec;
        }
        return buf;
}
