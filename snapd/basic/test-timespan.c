/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "macro.h"
#include "tests.h"
#include "timespan.h"

int main(void) {
        static const struct {
                const char *in;
                int ret;
                usec_t want;
        } cases[] = {
                { "30s", 0, 30 * USEC_PER_SEC },
                { "30", 0, 30 * USEC_PER_SEC },
                { "15min", 0, 15 * USEC_PER_MIN },
                { "15m", 0, 15 * USEC_PER_MIN },
                { "1h", 0, USEC_PER_HOUR },
                { "1d", 0, USEC_PER_DAY },
                { "1w", 0, USEC_PER_WEEK },
                { "2 weeks", 0, 2 * USEC_PER_WEEK },
                { "1h 30min", 0, USEC_PER_HOUR + 30 * USEC_PER_MIN },
                { "2h30m", 0, 2 * USEC_PER_HOUR + 30 * USEC_PER_MIN },
                { "  5 sec  ", 0, 5 * USEC_PER_SEC },
                { "500ms", 0, 500000 },
                { "1hour", 0, USEC_PER_HOUR },
                { "3days", 0, 3 * USEC_PER_DAY },
                { "0", 0, 0 },
                { "", -EINVAL, 0 },
                { "   ", -EINVAL, 0 },
                { "h", -EINVAL, 0 },
                { "1y", -EINVAL, 0 },
                { "1 fortnight", -EINVAL, 0 },
                { "-1h", -EINVAL, 0 },
                { "1.5h", -EINVAL, 0 },
                { "1hx", -EINVAL, 0 },
                { "99999999999999999999", -ERANGE, 0 },
                { "99999999999999w", -ERANGE, 0 },
        };
        char buf[64];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                usec_t t = 12345;
                int r = timespan_parse(cases[i].in, &t);

                CHECK(r == cases[i].ret);
                CHECK(t == (r == 0 ? cases[i].want : 12345));
        }
        CHECK(timespan_parse(NULL, &(usec_t){0}) == -EINVAL);

        CHECK_STREQ(timespan_format(0, buf, sizeof(buf)), "0");
        CHECK_STREQ(timespan_format(USEC_PER_HOUR + 30 * USEC_PER_MIN, buf, sizeof(buf)), "1h 30min");
        CHECK_STREQ(timespan_format(USEC_PER_WEEK + USEC_PER_DAY + 5 * USEC_PER_SEC, buf, sizeof(buf)),
                    "1w 1d 5s");
        CHECK_STREQ(timespan_format(1500, buf, sizeof(buf)), "1ms 500us");
        CHECK(timespan_format(USEC_PER_HOUR, buf, 2) == NULL);
        return tests_end();
}
