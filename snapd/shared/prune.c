/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log-event.h"
#include "macro.h"
#include "prune.h"
#include "retention.h"
#include "store.h"
#include "strv.h"

/*
 * The newest snapshot that is whole (its facts say no file was skipped;
 * one without facts counts as whole) and not a guard is always kept, whatever the rules
 * and whatever the newest is: a partial snapshot never stands in for it.
 */
static void keep_newest_whole(int store, char **names, size_t n, unsigned *reasons) {
        for (size_t i = n; i > 0; i--) {
                SnapshotFacts f = {};

                /*
                 * Partial: not whole.  A guard is kept for keep_guard, and
                 * never stands in for the job's own snapshots (one of some
                 * paths only is not whole either).
                 */
                if (store_read_kind(store, names[i - 1], &f) < 0 || f.skipped > 0 || f.guard)
                        continue;       /* facts that cannot be read: not known to be whole */
                if (!(reasons[i - 1] & KEEP_NEWEST))
                        reasons[i - 1] |= KEEP_WHOLE;
                return;
        }
}

/*
 * Retire (rename to a hidden name) every snapshot that goes, sync, then
 * remove the retired trees: a kill or a power cut at any point leaves
 * each snapshot listed whole or not listed at all, and what was retired
 * is removed by the next run.  A snapshot that cannot be retired or
 * removed is reported and the rest goes on, so one bad tree never stops
 * retention for good.  Guard snapshots are kept for keep_guard, apart
 * from the buckets (retention_apply_guards()).
 */
int snapshot_prune(const Job *job, time_t now, bool dry_run, FILE *out) {
        _cleanup_close_ int store = -EBADF;
        _cleanup_free_ time_t *times = NULL;
        _cleanup_free_ unsigned *reasons = NULL;
        _cleanup_free_ bool *guard = NULL, *unknown = NULL;
        char **names = NULL;
        size_t n = 0;
        int r, first = 0, gone = 0;

        store = store_open(job->store, false);
        if (store < 0)
                return store == -ENOENT ? 0 : store;
        r = store_lock(store, true);
        if (r < 0)
                return r;
        r = store_list(store, &names, &n);
        if (r < 0)
                return r;
        times = calloc(n ? n : 1, sizeof(*times));
        reasons = calloc(n ? n : 1, sizeof(*reasons));
        guard = calloc(n ? n : 1, sizeof(*guard));
        unknown = calloc(n ? n : 1, sizeof(*unknown));
        if (!times || !reasons || !guard || !unknown) {
                strv_free(names);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                SnapshotFacts f;

                (void) snapshot_name_time(names[i], &times[i]);
                /*
                 * A guard whose facts were lost is one still; one whose facts
                 * cannot be read never stands for a bucket of the job's own
                 * (it may be a guard), nor is it removed (it may not).
                 */
                unknown[i] = store_read_kind(store, names[i], &f) < 0;
                guard[i] = unknown[i] || f.guard;
        }
        retention_apply_guards(&job->retention, times, guard, n, now, reasons);
        keep_newest_whole(store, names, n, reasons);
        for (size_t i = 0; i < n; i++) {
                if (unknown[i])
                        reasons[i] |= KEEP_UNKNOWN;
                /* Pinned (read under the lock that a pin takes too): kept, and a pin that cannot be read keeps it as well. */
                if (store_is_pinned(store, names[i]) != 0)
                        reasons[i] |= KEEP_PINNED;
        }
        for (size_t i = 0; i < n; i++) {
                char why[128];

                if (reasons[i]) {
                        if (out)
                                fprintf(out, "keep   %s  (%s)\n", names[i],
                                        retention_reasons(reasons[i], why, sizeof(why)));
                        continue;
                }
                if (dry_run) {
                        gone++;
                        if (out)
                                fprintf(out, "remove %s  (no rule keeps it)\n", names[i]);
                        continue;
                }
                r = store_retire(store, names[i]);
                if (r < 0)
                        log_event(LOG_ERR, MESSAGE_ID_PRUNE_FAILED, job->name,
                                  &(EventFields) { .snapshot = names[i], .error = r },
                                  "retention could not remove snapshot %s: %s", names[i], strerror(-r));
                else
                        log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_PRUNED, job->name,
                                  &(EventFields) { .snapshot = names[i] },
                                  "snapshot %s pruned (%s)", names[i], "no retention rule keeps it");
                if (out)
                        fprintf(out, "remove %s%s%s\n", names[i], r < 0 ? ": " : "",
                                r < 0 ? strerror(-r) : "");
                if (r < 0 && first == 0)
                        first = r;
                if (r >= 0)
                        gone++;
        }
        strv_free(names);
        if (dry_run)
                return first < 0 ? first : gone;
        if (gone > 0) {
                r = store_sync(store);
                if (r < 0 && first == 0)
                        first = r;
        }
        /* These, and what an earlier prune could not remove. */
        r = store_remove_retired(store, out);
        if (r < 0)
                log_event(LOG_ERR, MESSAGE_ID_PRUNE_FAILED, job->name, &(EventFields) { .error = r },
                          "retention could not remove a retired snapshot (left hidden for the next run): %s",
                          strerror(-r));
        if (r < 0 && first == 0)
                first = r;
        return first < 0 ? first : gone;
}

/* Point "latest" at the newest snapshot but name that is not a guard, or remove it with none left. */
static int move_latest_from(int store, const char *name) {
        char target[SNAPSHOT_NAME_MAX + 1];
        char **names = NULL;
        size_t n = 0;
        ssize_t len;
        int r;

        len = readlinkat(store, "latest", target, sizeof(target) - 1);
        if (len < 0)
                return errno == ENOENT || errno == EINVAL ? 0 : -errno;
        target[len] = '\0';
        if (strcmp(target, name) != 0)
                return 0;
        r = store_list(store, &names, &n);
        if (r < 0)
                return r;
        r = -ENOENT;
        for (size_t i = n; i > 0; i--) {
                SnapshotFacts f;

                if (strcmp(names[i - 1], name) == 0 || store_read_kind(store, names[i - 1], &f) < 0 || f.guard)
                        continue;
                r = store_set_latest(store, names[i - 1]);
                break;
        }
        strv_free(names);
        if (r == -ENOENT && unlinkat(store, "latest", 0) < 0 && errno != ENOENT)
                return -errno;
        return r == -ENOENT ? 0 : r;
}

int snapshot_delete(int store, const char *job_name, const char *name, bool force, FILE *out) {
        int r;

        r = store_lock(store, false);
        if (r < 0)
                return r;
        r = store_snapshot_exists(store, name);
        if (r < 0)
                return r;
        r = store_is_pinned(store, name);
        if (r < 0)
                return r;
        if (r > 0 && !force)
                return -EPERM;
        r = move_latest_from(store, name);
        if (r < 0)
                return r;
        r = store_retire(store, name);
        if (r < 0)
                return r;       /* said to the caller */
        log_event(LOG_INFO, MESSAGE_ID_SNAPSHOT_DELETED, job_name, &(EventFields) { .snapshot = name },
                  "snapshot %s deleted (asked for%s)", name, force ? ", pinned, with force" : "");
        if (out)
                fprintf(out, "deleted %s\n", name);
        r = store_sync(store);
        if (r < 0)
                return r;
        r = store_remove_retired(store, out);
        if (r < 0)
                log_event(LOG_ERR, MESSAGE_ID_PRUNE_FAILED, job_name, &(EventFields) { .snapshot = name, .error = r },
                          "could not remove the tree of deleted snapshot %s (left hidden for the next run): %s",
                          name, strerror(-r));
        return 0;
}
