/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * A minimal table-driven test harness for the host unit tests: each
 * CHECK prints "ok" or "not ok" with its location; main returns non-zero
 * when any check failed.
 */
#include <stdio.h>
#include <string.h>

static int tests_failed, tests_run;

#define CHECK(expr) do {                                                \
                tests_run++;                                            \
                if (expr)                                               \
                        printf("ok %d - %s\n", tests_run, #expr);       \
                else {                                                  \
                        tests_failed++;                                 \
                        printf("not ok %d - %s (%s:%d)\n", tests_run,   \
                               #expr, __FILE__, __LINE__);              \
                }                                                       \
        } while (0)

#define CHECK_STREQ(a, b) do {                                          \
                const char *_a = (a), *_b = (b);                        \
                tests_run++;                                            \
                if (_a && _b && strcmp(_a, _b) == 0)                    \
                        printf("ok %d - %s == \"%s\"\n", tests_run, #a, _b); \
                else {                                                  \
                        tests_failed++;                                 \
                        printf("not ok %d - %s is \"%s\", wanted \"%s\" (%s:%d)\n", \
                               tests_run, #a, _a ? _a : "(null)",       \
                               _b ? _b : "(null)", __FILE__, __LINE__); \
                }                                                       \
        } while (0)

/* A check that cannot run here: reported as skipped, never as passed. */
#define SKIP(why) do {                                                  \
                tests_run++;                                            \
                printf("ok %d # SKIP %s\n", tests_run, (why));          \
        } while (0)

static inline int tests_end(void) {
        printf("1..%d\n", tests_run);
        return tests_failed ? 1 : 0;
}
