/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "timespan.h"

/*
 * Which snapshots to keep.  A snapshot is kept when any rule keeps it:
 * the newest one always, any younger than min_age, and for each bucket
 * rule with N > 0 the oldest snapshot of each of the N most recent UTC
 * hours (days, ISO weeks, months, years) that hold one.  All bucket
 * counts zero keeps everything.
 */
typedef struct RetentionPolicy {
        unsigned hourly, daily, weekly, monthly, yearly;
        usec_t min_age;
        usec_t keep_guard;      /* guard snapshots younger than this are kept, whatever the rest says */
} RetentionPolicy;

#define RETENTION_KEEP_GUARD_DEFAULT (7 * 24 * USEC_PER_HOUR)

enum {
        KEEP_NEWEST  = 1 << 0,
        KEEP_MIN_AGE = 1 << 1,
        KEEP_HOURLY  = 1 << 2,
        KEEP_DAILY   = 1 << 3,
        KEEP_WEEKLY  = 1 << 4,
        KEEP_MONTHLY = 1 << 5,
        KEEP_YEARLY  = 1 << 6,
        KEEP_ALL     = 1 << 7,  /* every bucket count is zero */
        KEEP_GUARD   = 1 << 8,  /* a guard younger than keep_guard */
        KEEP_WHOLE   = 1 << 9,  /* the newest whole snapshot (not partial): snapshot_prune() */
        KEEP_UNKNOWN = 1 << 10, /* its facts cannot be read, so what it is is not known: snapshot_prune() */
        KEEP_PINNED  = 1 << 11, /* pinned (refsnapctl pin): kept whatever the rules say: snapshot_prune() */
};

/*
 * times[0..n) are the snapshots' times, in any order, UTC seconds; of
 * two equal times the one with the higher index is the newer (the order
 * of store_list(), where a same-second suffix sorts last).  Sets
 * reasons[i] to the KEEP_* bits that keep snapshot i, 0 when it goes.
 */
void retention_apply(const RetentionPolicy *p, const time_t *times, size_t n,
                     time_t now, unsigned *reasons);

/*
 * The same, where guard[i] says snapshot i is a guard snapshot (taken by
 * a restore of what it replaced): the rules apply to the other snapshots
 * only, so a guard never takes a bucket's or the newest's place, and a
 * guard is kept while younger than keep_guard (KEEP_GUARD), or when every
 * bucket count is zero (KEEP_ALL).  guard may be NULL: none is.
 */
void retention_apply_guards(const RetentionPolicy *p, const time_t *times, const bool *guard, size_t n,
                            time_t now, unsigned *reasons);

/* "newest,hourly" for the bits set; buf of at least 128 bytes. */
const char *retention_reasons(unsigned reasons, char *buf, size_t size);

/* Bucket keys, exposed for the tests. */
long retention_iso_week(time_t t);
