/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Retention, table-driven; every expectation was worked out by hand from
 * the rule "the oldest snapshot of each of the N most recent buckets".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "retention.h"
#include "tests.h"

static time_t at(const char *iso) {
        struct tm tm = {};

        if (!strptime(iso, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
                fprintf(stderr, "bad time %s\n", iso);
                abort();
        }
        return timegm(&tm);
}

#define MAXS 8

typedef struct Case {
        const char *name;
        RetentionPolicy policy;
        const char *now;
        const char *snaps[MAXS];
        const char *kept;   /* which of snaps stay: 'k' kept, '-' pruned */
} Case;

static const Case cases[] = {
        { "all zero keeps everything", { 0 }, "2026-12-03T12:00:00Z",
          { "2020-01-01T00:00:00Z", "2026-12-03T07:00:00Z", "2026-12-03T08:00:00Z" }, "kkk" },
        { "hourly=2: oldest of the two newest hours",
          { .hourly = 2 }, "2026-12-03T12:30:00Z",
          { "2026-12-03T10:05:00Z", "2026-12-03T10:40:00Z", "2026-12-03T11:10:00Z",
            "2026-12-03T11:50:00Z", "2026-12-03T12:20:00Z" }, "--k-k" },
        { "daily=2 across a month end",
          { .daily = 2 }, "2026-02-02T09:00:00Z",
          { "2026-01-31T23:30:00Z", "2026-02-01T00:10:00Z", "2026-02-01T12:00:00Z",
            "2026-02-02T08:00:00Z" }, "-k-k" },
        { "daily=3 over a leap day",
          { .daily = 3 }, "2024-03-01T06:00:00Z",
          { "2024-02-28T10:00:00Z", "2024-02-29T10:00:00Z", "2024-02-29T20:00:00Z",
            "2024-03-01T05:00:00Z" }, "kk-k" },
        { "monthly=2 with February 29",
          { .monthly = 2 }, "2024-04-01T00:00:00Z",
          { "2024-02-28T10:00:00Z", "2024-02-29T10:00:00Z", "2024-03-01T00:00:00Z",
            "2024-03-31T23:59:00Z" }, "k-kk" },
        { "monthly=1 at the end of a 31-day month",
          { .monthly = 1 }, "2026-02-01T00:00:00Z",
          { "2025-12-31T23:59:59Z", "2026-01-01T00:00:00Z", "2026-01-31T23:59:59Z" }, "-kk" },
        { "weekly=2: ISO week 53 of 2020 spans the new year",
          { .weekly = 2 }, "2021-01-05T10:00:00Z",
          { "2020-12-27T12:00:00Z", "2020-12-28T09:00:00Z", "2021-01-02T09:00:00Z",
            "2021-01-04T09:00:00Z", "2021-01-05T09:00:00Z" }, "-k-kk" },
        { "weekly=1: ISO week 1 of 2026 starts in December 2025",
          { .weekly = 1 }, "2026-01-04T23:00:00Z",
          { "2025-12-28T12:00:00Z", "2025-12-29T00:00:00Z", "2026-01-04T22:00:00Z" }, "-kk" },
        { "yearly=2 across a year change",
          { .yearly = 2 }, "2026-03-02T00:00:00Z",
          { "2024-06-01T00:00:00Z", "2025-12-31T23:59:59Z", "2026-01-01T00:00:00Z",
            "2026-03-01T00:00:00Z" }, "-kkk" },
        { "min age keeps the young ones",
          { .hourly = 1, .min_age = 45 * USEC_PER_MIN }, "2026-12-03T11:30:00Z",
          { "2026-12-03T10:00:00Z", "2026-12-03T10:30:00Z", "2026-12-03T11:00:00Z",
            "2026-12-03T11:20:00Z" }, "--kk" },
        { "a longer min age reaches back further",
          { .hourly = 1, .min_age = 65 * USEC_PER_MIN }, "2026-12-03T11:30:00Z",
          { "2026-12-03T10:00:00Z", "2026-12-03T10:30:00Z", "2026-12-03T11:00:00Z",
            "2026-12-03T11:20:00Z" }, "-kkk" },
        { "rules add up: hourly=1 and daily=2",
          { .hourly = 1, .daily = 2 }, "2026-12-03T12:00:00Z",
          { "2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z", "2026-12-02T09:00:00Z",
            "2026-12-03T10:00:00Z", "2026-12-03T11:00:00Z", "2026-12-03T11:30:00Z" }, "-k-kkk" },
        { "input order does not matter",
          { .daily = 1 }, "2026-12-03T12:00:00Z",
          { "2026-12-03T11:00:00Z", "2026-12-02T08:00:00Z", "2026-12-03T09:00:00Z" }, "k-k" },
        { "same second: the later name is the newest, whatever qsort does",
          { .yearly = 1 }, "2026-12-03T12:00:00Z",
          { "2026-12-03T11:00:00Z", "2026-12-03T11:00:00Z", "2026-12-03T11:00:00Z",
            "2026-12-03T11:00:00Z", "2026-12-03T11:00:00Z", "2026-12-03T11:00:00Z",
            "2026-12-03T11:00:00Z" }, "k-----k" },
        { "the newest is kept when no rule would", { .yearly = 1, .min_age = 0 }, "2030-01-01T00:00:00Z",
          { "2026-05-01T00:00:00Z", "2026-01-01T00:00:00Z" }, "kk" },
};

int main(void) {
        char buf[128];

        /* ISO weeks by hand: 2026-01-01 is a Thursday; 2020 has a week 53. */
        CHECK(retention_iso_week(at("2025-12-29T00:00:00Z")) == 202601);
        CHECK(retention_iso_week(at("2026-01-04T23:59:59Z")) == 202601);
        CHECK(retention_iso_week(at("2025-12-28T23:59:59Z")) == 202552);
        CHECK(retention_iso_week(at("2020-12-28T00:00:00Z")) == 202053);
        CHECK(retention_iso_week(at("2021-01-03T12:00:00Z")) == 202053);
        CHECK(retention_iso_week(at("2021-01-04T00:00:00Z")) == 202101);
        CHECK(retention_iso_week(at("2024-02-29T12:00:00Z")) == 202409);

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                time_t times[MAXS];
                unsigned reasons[MAXS];
                size_t n = strlen(cases[c].kept);
                char got[MAXS + 1] = {};

                for (size_t i = 0; i < n; i++)
                        times[i] = at(cases[c].snaps[i]);
                retention_apply(&cases[c].policy, times, n, at(cases[c].now), reasons);
                for (size_t i = 0; i < n; i++)
                        got[i] = reasons[i] ? 'k' : '-';
                tests_run++;
                if (strcmp(got, cases[c].kept) == 0)
                        printf("ok %d - %s: %s\n", tests_run, cases[c].name, got);
                else {
                        tests_failed++;
                        printf("not ok %d - %s: got %s, wanted %s\n", tests_run,
                               cases[c].name, got, cases[c].kept);
                }
        }

        {
                time_t t[2] = { at("2026-12-03T10:00:00Z"), at("2026-12-03T11:00:00Z") };
                unsigned r[2];
                RetentionPolicy p = { .hourly = 24 };

                retention_apply(&p, t, 2, at("2026-12-03T11:30:00Z"), r);
                CHECK(r[1] == (KEEP_NEWEST | KEEP_HOURLY));
                CHECK(r[0] == KEEP_HOURLY);
                CHECK_STREQ(retention_reasons(r[1], buf, sizeof(buf)), "newest,hourly");
                CHECK_STREQ(retention_reasons(0, buf, sizeof(buf)), "");
        }
        {
                /* Same second: index 2 (the last name) is the newest, index 0 the oldest. */
                time_t t[3] = { at("2026-12-03T11:00:00Z"), at("2026-12-03T11:00:00Z"),
                                at("2026-12-03T11:00:00Z") };
                unsigned r[3];
                RetentionPolicy p = { .hourly = 1 };

                retention_apply(&p, t, 3, at("2026-12-03T11:30:00Z"), r);
                CHECK(r[2] == KEEP_NEWEST);
                CHECK(r[1] == 0);
                CHECK(r[0] == KEEP_HOURLY);
        }
        {
                /*
                 * A guard between the hour's oldest and the next snapshot:
                 * kept for keep_guard apart from the buckets, never the
                 * bucket's or the newest's; then it goes.
                 */
                time_t t[3] = { at("2026-12-03T11:00:00Z"), at("2026-12-03T11:05:00Z"),
                                at("2026-12-03T11:10:00Z") };
                bool g[3] = { false, true, false };
                unsigned r[3];
                RetentionPolicy p = { .hourly = 1, .keep_guard = RETENTION_KEEP_GUARD_DEFAULT };

                retention_apply(&p, t, 3, at("2026-12-03T11:30:00Z"), r);
                CHECK(r[1] == 0);       /* what the guard-blind rules did */
                retention_apply_guards(&p, t, g, 3, at("2026-12-03T11:30:00Z"), r);
                CHECK(r[0] == KEEP_HOURLY && r[1] == KEEP_GUARD && r[2] == KEEP_NEWEST);
                CHECK_STREQ(retention_reasons(r[1], buf, sizeof(buf)), "guard");
                retention_apply_guards(&p, t, g, 3, at("2026-12-10T11:06:00Z"), r);
                CHECK(r[1] == 0 && r[2] == KEEP_NEWEST);
                /* The newest a guard: the newest other one is still kept as the newest. */
                g[2] = true;
                retention_apply_guards(&p, t, g, 3, at("2026-12-03T11:30:00Z"), r);
                CHECK(r[0] == (KEEP_NEWEST | KEEP_HOURLY) && r[2] == KEEP_GUARD);
                /* Every count zero keeps every snapshot, guards too. */
                p = (RetentionPolicy) { .keep_guard = 0 };
                retention_apply_guards(&p, t, g, 3, at("2027-12-03T11:30:00Z"), r);
                CHECK(r[1] == KEEP_ALL && r[2] == KEEP_ALL);
                CHECK_STREQ(retention_reasons(KEEP_ALL | KEEP_GUARD | KEEP_NEWEST | KEEP_MIN_AGE | KEEP_HOURLY |
                                              KEEP_DAILY | KEEP_WEEKLY | KEEP_MONTHLY | KEEP_YEARLY, buf, 80),
                            "newest,min-age,hourly,daily,weekly,monthly,yearly,keep-all,guard");
        }
        return tests_end();
}
