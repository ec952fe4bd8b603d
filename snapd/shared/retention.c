/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "retention.h"

long retention_iso_week(time_t t) {
        struct tm tm;
        time_t thursday;
        int monday_based;

        gmtime_r(&t, &tm);
        monday_based = (tm.tm_wday + 6) % 7;
        /* An ISO week belongs to the year of its Thursday. */
        thursday = t + (time_t) (3 - monday_based) * 86400;
        gmtime_r(&thursday, &tm);
        return (long) (tm.tm_year + 1900) * 100 + tm.tm_yday / 7 + 1;
}

static long bucket_key(unsigned rule, time_t t) {
        struct tm tm;

        switch (rule) {
        case KEEP_HOURLY:
                return (long) (t / 3600 - (t % 3600 < 0));
        case KEEP_DAILY:
                return (long) (t / 86400 - (t % 86400 < 0));
        case KEEP_WEEKLY:
                return retention_iso_week(t);
        case KEEP_MONTHLY:
                gmtime_r(&t, &tm);
                return (long) (tm.tm_year + 1900) * 12 + tm.tm_mon;
        default: /* KEEP_YEARLY */
                gmtime_r(&t, &tm);
                return tm.tm_year + 1900;
        }
}

static const time_t *sort_times;

/*
 * Newest first.  Two snapshots of the same second differ only by their
 * names' suffix, and the store lists names sorted, so the later index is
 * the newer one: without this tie-break qsort() could call either of them
 * the newest, and the one latest points at could be pruned.
 */
static int by_time_desc(const void *a, const void *b) {
        size_t i = *(const size_t *) a, j = *(const size_t *) b;
        time_t x = sort_times[i], y = sort_times[j];

        if (x != y)
                return x < y ? 1 : -1;
        return i < j ? 1 : i > j ? -1 : 0;
}

void retention_apply(const RetentionPolicy *p, const time_t *times, size_t n,
                     time_t now, unsigned *reasons) {
        const struct {
                unsigned rule, count;
        } rules[] = {
                { KEEP_HOURLY, p->hourly },
                { KEEP_DAILY, p->daily },
                { KEEP_WEEKLY, p->weekly },
                { KEEP_MONTHLY, p->monthly },
                { KEEP_YEARLY, p->yearly },
        };
        bool keep_all = true;
        size_t *order;

        if (n == 0)
                return;
        memset(reasons, 0, n * sizeof(*reasons));
        order = malloc(n * sizeof(*order));
        if (!order) {
                /* Never prune on a failure to decide. */
                for (size_t i = 0; i < n; i++)
                        reasons[i] = KEEP_ALL;
                return;
        }
        for (size_t i = 0; i < n; i++)
                order[i] = i;
        sort_times = times;
        qsort(order, n, sizeof(*order), by_time_desc);

        reasons[order[0]] |= KEEP_NEWEST;
        for (size_t i = 0; i < n; i++)
                if (times[i] > now - (time_t) (p->min_age / USEC_PER_SEC))
                        reasons[i] |= KEEP_MIN_AGE;

        for (size_t r = 0; r < ELEMENTSOF(rules); r++) {
                size_t buckets = 0, oldest = 0;
                long key = 0;

                if (rules[r].count == 0)
                        continue;
                keep_all = false;
                /* Newest first: each change of key starts a bucket. */
                for (size_t k = 0; k < n; k++) {
                        long kk = bucket_key(rules[r].rule, times[order[k]]);

                        if (k == 0 || kk != key) {
                                if (k > 0)
                                        reasons[oldest] |= rules[r].rule;
                                if (++buckets > rules[r].count)
                                        break;
                                key = kk;
                        }
                        oldest = order[k];
                        if (k == n - 1)
                                reasons[oldest] |= rules[r].rule;
                }
        }
        if (keep_all)
                for (size_t i = 0; i < n; i++)
                        reasons[i] |= KEEP_ALL;
        free(order);
}

void retention_apply_guards(const RetentionPolicy *p, const time_t *times, const bool *guard, size_t n,
                            time_t now, unsigned *reasons) {
        _cleanup_free_ time_t *t = NULL;
        _cleanup_free_ size_t *idx = NULL;
        _cleanup_free_ unsigned *rs = NULL;
        bool keep_all = !p->hourly && !p->daily && !p->weekly && !p->monthly && !p->yearly;
        size_t k = 0;

        if (n == 0)
                return;
        if (!guard) {
                retention_apply(p, times, n, now, reasons);
                return;
        }
        t = malloc(n * sizeof(*t));
        idx = malloc(n * sizeof(*idx));
        rs = malloc(n * sizeof(*rs));
        if (!t || !idx || !rs) {
                /* Never prune on a failure to decide. */
                for (size_t i = 0; i < n; i++)
                        reasons[i] = KEEP_ALL;
                return;
        }
        /* The others, in their order (of equal times, the later the newer). */
        for (size_t i = 0; i < n; i++)
                if (!guard[i]) {
                        t[k] = times[i];
                        idx[k++] = i;
                }
        retention_apply(p, t, k, now, rs);
        memset(reasons, 0, n * sizeof(*reasons));
        for (size_t i = 0; i < k; i++)
                reasons[idx[i]] = rs[i];
        for (size_t i = 0; i < n; i++) {
                if (!guard[i])
                        continue;
                if (times[i] > now - (time_t) (p->keep_guard / USEC_PER_SEC))
                        reasons[i] |= KEEP_GUARD;
                if (keep_all)
                        reasons[i] |= KEEP_ALL;
        }
}

const char *retention_reasons(unsigned reasons, char *buf, size_t size) {
        static const char *const names[] = {
                "newest", "min-age", "hourly", "daily", "weekly", "monthly", "yearly", "keep-all", "guard",
                "newest-whole", "facts-unreadable", "pinned",
        };
        size_t len = 0;

        if (size == 0)
                return NULL;
        buf[0] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (reasons & (1u << i)) {
                        int w = snprintf(buf + len, size - len, "%s%s", len ? "," : "", names[i]);
                        if (w < 0 || (size_t) w >= size - len)
                                return NULL;
                        len += w;
                }
        return buf;
}
