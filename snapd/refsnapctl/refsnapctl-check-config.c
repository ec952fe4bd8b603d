/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl check-config [FILE]: every error of the configuration, or OK;
 * then, for each job whose source cannot be restored in place, why (a
 * note, not an error: its snapshots are taken all the same).
 */
#include <errno.h>
#include <stdio.h>

#include "chase.h"
#include "config.h"
#include "fd-util.h"
#include "macro.h"
#include "refsnapctl.h"
#include "mountpoint-util.h"
#include "restore.h"
#include "store.h"

static void restore_notes(const char *file) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_free_ char *errors = NULL;

        if (config_load(file, arg_dropins, &c, &errors) < 0)
                return;
        for (size_t i = 0; i < c->n_jobs; i++) {
                const Job *j = c->jobs[i];
                _cleanup_close_ int store = store_open(j->store, false);
                _cleanup_close_ int src = -EBADF;
                const char *why;

                /* Covered by a FUSE mount: said above, and never asked anything. */
                if (store < 0 || path_under_fuse(NULL, j->source, NULL, NULL) != 0)
                        continue;
                src = chase_dir(AT_FDCWD, j->source, &(Chase) { .flags = CHASE_NO_FUSE });
                if (src < 0)
                        continue;
                why = restore_stage_refusal(store, src);
                if (why)
                        printf("%s: note: restore into %s: %s\n", j->name, j->source, why);
        }
}

int verb_check_config(int argc, char *argv[]) {
        const char *file = argc > 1 ? argv[1] : arg_config;
        int r;

        r = config_check_command("refsnapctl", file, arg_dropins);
        if (r == 0)
                restore_notes(file);
        return r;
}
