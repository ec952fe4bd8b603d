/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "reflink.h"
#include "retention.h"
#include "snapshot.h"
#include "strv.h"

static int reflink_clone(int src_dir, const char *name, int dst_dir, void *userdata) {
        return reflinkat(src_dir, name, dst_dir, name, REFLINK_ATTR_ALL, 0) < 0 ? -errno : 0;
}

const WalkOps snapshot_reflink_ops = { .clone = reflink_clone };

unsigned snapshot_workers(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        return n < 1 ? 1 : n > SNAPSHOT_WORKERS_MAX ? SNAPSHOT_WORKERS_MAX : (unsigned) n;
}

int snapshot_take(const Job *job, const WalkOps *ops, const volatile sig_atomic_t *cancel,
                  FILE *log, char name[static SNAPSHOT_NAME_MAX], SnapshotFacts *facts) {
        _cleanup_close_ int src = -EBADF, store = -EBADF, dst = -EBADF;
        char partial[SNAPSHOT_NAME_MAX + 16];
        struct statx sx, tx;
        struct stat st;
        time_t start = time(NULL);
        int r;

        if (!ops && reflink_supported() <= 0) {
                fprintf(log, "this kernel has no reflinkat(2): nothing is copied instead\n");
                return -ENOSYS;
        }
        src = open(job->source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0) {
                r = -errno;
                fprintf(log, "source %s: %s\n", job->source, strerror(-r));
                return r;
        }
        store = store_open(job->store, true);
        if (store < 0) {
                fprintf(log, "store %s: %s\n", job->store, strerror(-store));
                return store;
        }
        if (statx(src, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) < 0 ||
            statx(store, "", AT_EMPTY_PATH, STATX_MNT_ID, &tx) < 0)
                return -errno;
        if (sx.stx_mnt_id != tx.stx_mnt_id) {
                fprintf(log, "store %s is not on the mount of source %s\n", job->store, job->source);
                return -EXDEV;
        }
        if (fstat(store, &st) < 0)
                return -errno;
        r = store_lock(store, false);
        if (r < 0) {
                fprintf(log, "store %s: %s\n", job->store,
                        r == -EBUSY ? "another snapshot or prune of this job is running" : strerror(-r));
                return r;
        }
        r = store_remove_leftovers(store, log);
        if (r < 0)
                fprintf(log, "store %s: cannot remove leftovers: %s\n", job->store, strerror(-r));

        /* A name not taken yet, by a snapshot or a partial one. */
        for (unsigned seq = 0;; seq++) {
                struct stat ignored;

                if (seq >= 100)
                        return -EEXIST;
                snapshot_name_format(start, seq, name);
                snprintf(partial, sizeof(partial), ".partial-%s", name);
                if (fstatat(store, name, &ignored, AT_SYMLINK_NOFOLLOW) == 0)
                        continue;
                if (errno != ENOENT)
                        return -errno;
                if (mkdirat(store, partial, 0700) == 0)
                        break;
                if (errno != EEXIST)
                        return -errno;
        }
        dst = openat(store, partial, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dst < 0) {
                r = -errno;
                goto fail;
        }

        {
                Walk w = {
                        .ops = ops ? ops : &snapshot_reflink_ops,
                        .exclude = job->exclude,
                        .skip_dev = st.st_dev,
                        .skip_ino = st.st_ino,
                        .cancel = cancel,
                        .log = log,
                        .workers = snapshot_workers(),
                };

                r = walk_tree(&w, src, dst);
                if (r < 0)
                        goto fail;
                *facts = (SnapshotFacts) {
                        .start = start,
                        .end = time(NULL),
                        .files = w.stats.files,
                        .dirs = w.stats.dirs,
                        .symlinks = w.stats.symlinks,
                        .specials = w.stats.specials,
                        .hardlinks = w.stats.hardlinks,
                        .bytes = w.stats.bytes,
                        .vanished = w.stats.vanished,
                        .excluded = w.stats.excluded,
                };
        }
        if (syncfs(dst) < 0) {
                r = -errno;
                goto fail;
        }
        r = store_write_facts(store, name, facts);
        if (r < 0)
                goto fail;
        if (renameat(store, partial, store, name) < 0) {
                r = -errno;
                goto fail;
        }
        r = store_set_latest(store, name);
        if (r < 0)
                fprintf(log, "cannot point latest at %s: %s\n", name, strerror(-r));
        fsync(store);
        return 0;

fail:
        dst = safe_close(dst);
        {
                int k = rm_rf_at(store, partial);
                if (k < 0)
                        fprintf(log, "cannot remove partial snapshot %s: %s\n", partial, strerror(-k));
        }
        return r;
}

int snapshot_prune(const Job *job, time_t now, bool dry_run, FILE *out) {
        _cleanup_close_ int store = -EBADF;
        _cleanup_free_ time_t *times = NULL;
        _cleanup_free_ unsigned *reasons = NULL;
        char **names = NULL;
        size_t n = 0;
        int r, gone = 0;

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
        if (!times || !reasons) {
                strv_free(names);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                (void) snapshot_name_time(names[i], &times[i]);
        retention_apply(&job->retention, times, n, now, reasons);
        for (size_t i = 0; i < n; i++) {
                char why[128];

                if (reasons[i]) {
                        if (out)
                                fprintf(out, "keep   %s  (%s)\n", names[i],
                                        retention_reasons(reasons[i], why, sizeof(why)));
                        continue;
                }
                gone++;
                if (dry_run) {
                        if (out)
                                fprintf(out, "remove %s  (no rule keeps it)\n", names[i]);
                        continue;
                }
                r = store_remove_snapshot(store, names[i]);
                if (out)
                        fprintf(out, "remove %s%s%s\n", names[i], r < 0 ? ": " : "",
                                r < 0 ? strerror(-r) : "");
                if (r < 0) {
                        strv_free(names);
                        return r;
                }
        }
        strv_free(names);
        return gone;
}
