/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <time.h>

#include "macro.h"
#include "schedule.h"
#include "tests.h"

static usec_t at(int y, int mo, int d, int h, int mi, int s) {
        struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                         .tm_hour = h, .tm_min = mi, .tm_sec = s };
        return (usec_t) timegm(&tm) * USEC_PER_SEC;
}

int main(void) {
        /* Aligned to the UTC clock, not to the start time. */
        CHECK(schedule_next(USEC_PER_HOUR, at(2026, 12, 3, 7, 42, 10)) == at(2026, 12, 3, 8, 0, 0));
        CHECK(schedule_next(15 * USEC_PER_MIN, at(2026, 12, 3, 7, 42, 10)) == at(2026, 12, 3, 7, 45, 0));
        CHECK(schedule_next(USEC_PER_MIN, at(2026, 12, 3, 7, 42, 10)) == at(2026, 12, 3, 7, 43, 0));
        /* Exactly on a due time: the next one is an interval later. */
        CHECK(schedule_next(USEC_PER_HOUR, at(2026, 12, 3, 8, 0, 0)) == at(2026, 12, 3, 9, 0, 0));
        CHECK(schedule_previous(USEC_PER_HOUR, at(2026, 12, 3, 8, 0, 0)) == at(2026, 12, 3, 8, 0, 0));
        /* Days change at UTC midnight; across a month and a year end. */
        CHECK(schedule_next(USEC_PER_DAY, at(2026, 12, 31, 23, 59, 59)) == at(2027, 1, 1, 0, 0, 0));
        CHECK(schedule_next(USEC_PER_DAY, at(2024, 2, 28, 12, 0, 0)) == at(2024, 2, 29, 0, 0, 0));
        /* A week counts from the epoch, a Thursday: due on Thursdays 00:00 UTC. */
        CHECK(schedule_next(USEC_PER_WEEK, at(2026, 12, 3, 0, 0, 1)) == at(2026, 12, 10, 0, 0, 0));
        /* 90 minutes: multiples of 90 min since the epoch. */
        CHECK(schedule_next(90 * USEC_PER_MIN, at(2026, 12, 3, 0, 0, 0)) == at(2026, 12, 3, 1, 30, 0));

        /* Catch-up: one owed after a missed due time, however many. */
        CHECK(schedule_missed(USEC_PER_HOUR, 0, at(2026, 12, 3, 7, 0, 0)));
        CHECK(!schedule_missed(USEC_PER_HOUR, at(2026, 12, 3, 7, 0, 0), at(2026, 12, 3, 7, 59, 59)));
        CHECK(schedule_missed(USEC_PER_HOUR, at(2026, 12, 3, 7, 0, 0), at(2026, 12, 3, 8, 0, 0)));
        CHECK(schedule_missed(USEC_PER_HOUR, at(2026, 12, 1, 7, 0, 0), at(2026, 12, 3, 8, 30, 0)));
        CHECK(!schedule_missed(USEC_PER_HOUR, at(2026, 12, 3, 8, 0, 5), at(2026, 12, 3, 8, 30, 0)));
        return tests_end();
}
