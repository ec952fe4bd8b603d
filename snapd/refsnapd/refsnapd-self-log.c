/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "log.h"
#include "macro.h"
#include "refsnapd-self-log.h"

/* The uids counted one by one; more at once share one more bucket. */
#define SELF_LOG_UIDS 128

typedef struct Bucket {
        bool used;
        uid_t uid;
        uint64_t start;         /* CLOCK_MONOTONIC, seconds */
        unsigned n;             /* written in this interval */
        unsigned suppressed;    /* not written in it */
} Bucket;

static Bucket buckets[SELF_LOG_UIDS], shared_bucket, total_bucket;

static uint64_t now_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec;
}

static bool expired(const Bucket *b, uint64_t now) {
        return !b->used || now - b->start >= SELF_LOG_INTERVAL_SEC;
}

static void describe(const Bucket *b, char who[static 32]) {
        if (b == &total_bucket)
                snprintf(who, 32, "all users");
        else if (b == &shared_bucket)
                snprintf(who, 32, "other users");
        else
                snprintf(who, 32, "uid %u", (unsigned) b->uid);
}

/* A new interval for b (what the last one suppressed said first). */
static void renew(Bucket *b, uid_t uid, uint64_t now) {
        char who[32];

        if (b->used && b->suppressed > 0) {
                describe(b, who);
                log_notice("%s: %u self-service log lines suppressed in %d s", who, b->suppressed,
                           SELF_LOG_INTERVAL_SEC);
        }
        *b = (Bucket) { .used = true, .uid = uid, .start = now };
}

/* Counts one line in b; true when it may be written. */
static bool take(Bucket *b, unsigned burst) {
        char who[32];

        if (b->n < burst) {
                b->n++;
                return true;
        }
        if (b->suppressed++ == 0) {
                describe(b, who);
                log_notice("%s: more than %u self-service log lines in %d s: the rest suppressed until then", who,
                           burst, SELF_LOG_INTERVAL_SEC);
        }
        return false;
}

bool self_log_allow(uid_t uid) {
        uint64_t now = now_sec();
        Bucket *b = NULL, *free_one = NULL;

        for (size_t i = 0; i < ELEMENTSOF(buckets); i++) {
                if (buckets[i].used && buckets[i].uid == uid) {
                        b = &buckets[i];
                        break;
                }
                if (!free_one && expired(&buckets[i], now))
                        free_one = &buckets[i];
        }
        if (b && expired(b, now))
                renew(b, uid, now);
        if (!b && free_one) {
                b = free_one;
                renew(b, uid, now);
        }
        if (!b) {
                b = &shared_bucket;
                if (expired(b, now))
                        renew(b, (uid_t) -1, now);
        }
        if (expired(&total_bucket, now))
                renew(&total_bucket, (uid_t) -1, now);
        return take(b, SELF_LOG_BURST) && take(&total_bucket, SELF_LOG_TOTAL);
}
