/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "prune.h"
#include "retention.h"
#include "store.h"
#include "strv.h"

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
