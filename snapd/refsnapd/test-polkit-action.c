/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The polkit action of each member of org.refsnap1.Manager: those that
 * change anything have one, those that read have none (root's alone),
 * and every action named is one the shipped policy file defines.
 *
 *   test-polkit-action POLICY
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "refsnapd-polkit.h"
#include "tests.h"

static char *policy;

/* The policy file defines action id. */
static int defined(const char *id) {
        char want[128];

        if (!id || !policy)
                return 0;
        snprintf(want, sizeof(want), "<action id=\"%s\">", id);
        return strstr(policy, want) != NULL;
}

int main(int argc, char *argv[]) {
        FILE *f = argc > 1 ? fopen(argv[1], "re") : NULL;
        size_t n = 0;

        if (f) {
                policy = calloc(1, 65536);
                if (policy)
                        n = fread(policy, 1, 65535, f);
                fclose(f);
        }
        CHECK(n > 0);

        CHECK_STREQ(polkit_action_for("Snapshot"), POLKIT_ACTION_SNAPSHOT);
        CHECK_STREQ(polkit_action_for("SnapshotFull"), POLKIT_ACTION_SNAPSHOT);
        CHECK_STREQ(polkit_action_for("SnapshotWithOptions"), POLKIT_ACTION_SNAPSHOT);
        CHECK_STREQ(polkit_action_for("SnapshotIfChanged"), POLKIT_ACTION_SNAPSHOT);
        CHECK_STREQ(polkit_action_for("Prune"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Cancel"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Reload"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Pin"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Unpin"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("DeleteSnapshot"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Purge"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Pause"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Resume"), POLKIT_ACTION_MANAGE);
        CHECK_STREQ(polkit_action_for("Versions"), POLKIT_ACTION_SELF_SERVICE);
        CHECK_STREQ(polkit_action_for("RestoreMine"), POLKIT_ACTION_SELF_SERVICE);

        /* Reading, and anything unknown: no action, so root's alone. */
        CHECK(polkit_action_for("GetStatus") == NULL);
        CHECK(polkit_action_for("ListJobs") == NULL);
        CHECK(polkit_action_for("ListSnapshots") == NULL);
        CHECK(polkit_action_for("GetJob") == NULL);
        CHECK(polkit_action_for("snapshot") == NULL);
        CHECK(polkit_action_for("Snapshot ") == NULL);
        CHECK(polkit_action_for("") == NULL);
        CHECK(polkit_action_for(NULL) == NULL);

        CHECK(defined(POLKIT_ACTION_SNAPSHOT));
        CHECK(defined(POLKIT_ACTION_MANAGE));
        CHECK(defined(POLKIT_ACTION_SELF_SERVICE));
        CHECK(!defined("org.refsnap1.nothing"));
        free(policy);
        return tests_end();
}
