/* SPDX-License-Identifier: GPL-2.0-or-later */
/* refsnapctl check: each state of a job, and the exit status it makes. */
#include <string.h>

#include "refsnapctl-check-state.h"
#include "tests.h"

#define NOW ((usec_t) 1765000000 * USEC_PER_SEC)
#define H USEC_PER_HOUR

static CheckState state(CheckJob j, usec_t warn, usec_t crit, char *why) {
        usec_t age;

        return check_job_state(&j, NOW, warn, crit, &age, why, 256);
}

int main(void) {
        char why[256];
        usec_t age;

        /* Fresh and whole: OK, whatever the result word once it is not failed. */
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - H / 2, .interval = H }, 0, 0, why) == CHECK_OK);
        CHECK(state((CheckJob) { .result = "running", .last = NOW - H / 2, .interval = H }, 0, 0, why) == CHECK_OK);
        CHECK(state((CheckJob) { .result = "-", .last = NOW - H, .interval = H }, 0, 0, why) == CHECK_OK);
        CHECK(state((CheckJob) { .result = "cancelled", .last = NOW - H, .interval = H }, 0, 0, why) == CHECK_OK);

        /* Failed: CRITICAL even with a fresh older snapshot. */
        CHECK(state((CheckJob) { .result = "failed", .last = NOW - 60 * USEC_PER_SEC, .interval = H }, 0, 0, why) ==
              CHECK_CRITICAL);
        CHECK(strstr(why, "failed") != NULL);
        /* A word that only begins like one is not it. */
        CHECK(state((CheckJob) { .result = "failedx", .last = NOW - H / 2, .interval = H }, 0, 0, why) == CHECK_OK);

        /* Partial: WARNING, from the daemon's result or the newest snapshot's facts (after a restart). */
        CHECK(state((CheckJob) { .result = "partial (2 files skipped)", .last = NOW - H / 2, .interval = H }, 0, 0,
                    why) == CHECK_WARNING);
        CHECK(strstr(why, "partial (2 files skipped)") != NULL);
        CHECK(state((CheckJob) { .result = "-", .last = NOW - H / 2, .newest_partial = true, .interval = H }, 0, 0,
                    why) == CHECK_WARNING);
        /* Verified unchanged since a partial snapshot: what it skipped is still missing. */
        CHECK(state((CheckJob) { .result = "unchanged since x, checked y", .last = NOW - 3 * H,
                                 .checked = NOW - 60 * USEC_PER_SEC, .newest_partial = true, .interval = H },
                    0, 0, why) == CHECK_WARNING);

        /* Paused: WARNING, fresh or stale (the pause is meant); failed is still CRITICAL. */
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - H / 2, .interval = H, .paused = true }, 0, 0, why) ==
              CHECK_WARNING);
        CHECK(strstr(why, "paused until resumed") != NULL);
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - 10 * H, .interval = H, .paused = true,
                                 .paused_until = 1796281200 * USEC_PER_SEC }, 0, 0, why) == CHECK_WARNING);
        CHECK(strstr(why, "paused until 2026-12-03T07:00:00Z") != NULL);
        CHECK(state((CheckJob) { .result = "-", .interval = H, .paused = true }, 0, 0, why) == CHECK_WARNING);
        CHECK(state((CheckJob) { .result = "failed", .last = NOW - H / 2, .interval = H, .paused = true }, 0, 0,
                    why) == CHECK_CRITICAL);

        /* Stale: WARNING past 2 intervals, CRITICAL past 4, by default. */
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - 2 * H - USEC_PER_SEC, .interval = H }, 0, 0, why) ==
              CHECK_WARNING);
        CHECK(strstr(why, "more than 2h") != NULL);
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - 4 * H - USEC_PER_SEC, .interval = H }, 0, 0, why) ==
              CHECK_CRITICAL);
        /* Stale beyond critical outranks partial. */
        CHECK(state((CheckJob) { .result = "partial", .last = NOW - 5 * H, .interval = H }, 0, 0, why) ==
              CHECK_CRITICAL);

        /* An unchanged skip counts as verified: an old snapshot checked recently is fresh. */
        CHECK(state((CheckJob) { .result = "unchanged since x, checked y", .last = NOW - 10 * H,
                                 .checked = NOW - H / 2, .interval = H }, 0, 0, why) == CHECK_OK);
        CHECK(strstr(why, "unchanged") != NULL);
        CHECK(state((CheckJob) { .result = "-", .last = NOW - 10 * H, .checked = NOW - 3 * H, .interval = H }, 0, 0,
                    why) == CHECK_WARNING);

        /* -w and -c given: they, not the interval, decide. */
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - 90 * USEC_PER_SEC, .interval = H },
                    60 * USEC_PER_SEC, 120 * USEC_PER_SEC, why) == CHECK_WARNING);
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - 150 * USEC_PER_SEC, .interval = H },
                    60 * USEC_PER_SEC, 120 * USEC_PER_SEC, why) == CHECK_CRITICAL);
        CHECK(state((CheckJob) { .result = "ok", .last = NOW - 30 * USEC_PER_SEC, .interval = H },
                    60 * USEC_PER_SEC, 120 * USEC_PER_SEC, why) == CHECK_OK);

        /* No snapshot yet: WARNING; failed before any: CRITICAL. */
        CHECK(state((CheckJob) { .result = "running", .interval = H }, 0, 0, why) == CHECK_WARNING);
        CHECK(state((CheckJob) { .result = "failed", .interval = H }, 0, 0, why) == CHECK_CRITICAL);

        /* The age reported for perfdata. */
        check_job_state(&(CheckJob) { .result = "ok", .last = NOW - 100 * USEC_PER_SEC, .interval = H }, NOW, 0, 0,
                        &age, why, sizeof(why));
        CHECK(age == 100 * USEC_PER_SEC);

        /* The exit statuses are the plugin convention's, and the worst wins as Nagios ranks it. */
        CHECK(CHECK_OK == 0 && CHECK_WARNING == 1 && CHECK_CRITICAL == 2 && CHECK_UNKNOWN == 3);
        CHECK(check_state_worst(CHECK_OK, CHECK_WARNING) == CHECK_WARNING);
        CHECK(check_state_worst(CHECK_WARNING, CHECK_UNKNOWN) == CHECK_UNKNOWN);
        CHECK(check_state_worst(CHECK_UNKNOWN, CHECK_CRITICAL) == CHECK_CRITICAL);
        CHECK(check_state_worst(CHECK_CRITICAL, CHECK_OK) == CHECK_CRITICAL);
        CHECK_STREQ(check_state_to_string(CHECK_UNKNOWN), "UNKNOWN");
        return tests_end();
}
