/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Samba's view of a store (smb_view): smb_view_check() against real bind
 * mounts in a mount namespace of the test's own, each way one can be
 * wrong (missing, not a mount point, a mount of another directory, each
 * option missing, the store's parent open to others), and refsnapctl
 * check-config's error for it (config_check(): FILE:LINE: [JOB]:) while
 * config_load_checked(), as the daemon loads, only warns.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"
#include "smb-view.h"
#include "tests.h"

/* Not under /tmp or /var/tmp, which refsnapd.service sees as private directories (check-config refuses them). */
static char base[] = "/run/refsnap-test-smb-view.XXXXXX";

static void sh(const char *cmd) {
        if (system(cmd) != 0) {
                fprintf(stderr, "failed: %s\n", cmd);
                exit(2);
        }
}

/* smb_view_check() of job j: 0, or 1 with its message containing want. */
static void expect(const Job *j, const char *want) {
        _cleanup_free_ char *why = NULL;
        int r = smb_view_check(j, NULL, &why);

        tests_run++;
        if ((!want && r == 0) || (want && r == 1 && why && strstr(why, want)))
                printf("ok %d - %s\n", tests_run, want ? want : "the view is right");
        else {
                tests_failed++;
                printf("not ok %d - wanted %s%s%s, got %d: %s\n", tests_run, want ? "\"" : "success",
                       want ? want : "", want ? "\"" : "", r, why ? why : "(no message)");
        }
}

int main(void) {
        char src[PATH_MAX], store[PATH_MAX], view[PATH_MAX], other[PATH_MAX], conf[PATH_MAX], cmd[PATH_MAX * 4];
        Job j;

        if (geteuid() != 0) {
                SKIP("bind mounts: not root");
                return tests_end();
        }
        if (!mkdtemp(base))
                return 2;
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                SKIP("no mount namespace of our own");
                rmdir(base);
                return tests_end();
        }
        snprintf(src, sizeof(src), "%s/src", base);
        snprintf(store, sizeof(store), "%s/closed/store", base);
        snprintf(view, sizeof(view), "%s/view", base);
        snprintf(other, sizeof(other), "%s/other", base);
        snprintf(cmd, sizeof(cmd), "set -e; cd '%s'; chmod 0755 .; mkdir -p src closed/store view other; "
                 "chmod 0700 closed; chmod 0755 closed/store", base);
        sh(cmd);
        j = (Job) { .name = "home", .source = src, .store = store, .smb_view = view, .file = "main.conf" };
        j.smb_view_at = (KeyWhere) { .file = (char *) "main.conf", .line = 5 };

        /* None: nothing to check. */
        j.smb_view = NULL;
        expect(&j, NULL);
        j.smb_view = view;

        expect(&j, "is not a mount point (it lies on the mount at /");
        snprintf(cmd, sizeof(cmd), "%s/missing", base);
        j.smb_view = cmd;
        expect(&j, "does not exist: make it, and mount the store");
        j.smb_view = view;

        /* A mount of another directory. */
        CHECK(mount(other, view, NULL, MS_BIND, NULL) == 0);
        expect(&j, "is a mount of another directory, not a bind mount of the store");
        CHECK(umount(view) == 0);

        /* The store, writable and with none of the options; then each one missing. */
        CHECK(mount(store, view, NULL, MS_BIND, NULL) == 0);
        expect(&j, "without ro,nosuid,nodev,noexec: remount it (mount -o remount,bind,ro,nosuid,nodev,noexec");
        CHECK(mount(NULL, view, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) == 0);
        expect(&j, ", without noexec: remount it");
        CHECK(mount(NULL, view, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0);
        expect(&j, ", without ro: remount it");
        CHECK(mount(NULL, view, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NODEV | MS_NOEXEC, NULL) == 0);
        expect(&j, ", without nosuid: remount it");
        CHECK(mount(NULL, view, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0);
        expect(&j, NULL);

        /* The store's parent open to other users: they would reach the store by its own path. */
        snprintf(cmd, sizeof(cmd), "chmod 0711 '%s/closed'", base);
        sh(cmd);
        expect(&j, "the directory above the store");
        snprintf(cmd, sizeof(cmd), "chmod 0700 '%s/closed'", base);
        sh(cmd);

        /* A view under a directory another user may change. */
        snprintf(cmd, sizeof(cmd), "chown 65534 '%s'", base);
        sh(cmd);
        expect(&j, "is owned by or writable by a user other than root, who could swap the view");
        snprintf(cmd, sizeof(cmd), "chown 0 '%s'", base);
        sh(cmd);

        /*
         * Through the configuration: refsnapctl check-config (config_check())
         * says it as an error with its file and line; the daemon's loading
         * (config_load_checked()) as a warning, and loads.
         */
        snprintf(conf, sizeof(conf), "%s/main.conf", base);
        {
                FILE *f = fopen(conf, "we");
                _cleanup_free_ char *errors = NULL, *warnings = NULL;
                Config *c = NULL;

                CHECK(f != NULL);
                if (!f)
                        return 2;
                fprintf(f, "[home]\nsource = %s\nstore = %s\ninterval = 1h\nsmb_view = %s\n", src, store, view);
                fclose(f);
                /* (The host's filesystem shares no data: the reflink probe's error, not the view's.) */
                config_check(conf, NULL, NULL, &errors, &warnings);
                CHECK(!errors || !strstr(errors, "smb_view"));
                CHECK(!warnings || !strstr(warnings, "smb_view"));
                errors = mfree(errors);
                warnings = mfree(warnings);
                CHECK(umount(view) == 0);
                CHECK(config_check(conf, NULL, NULL, &errors, &warnings) == -EINVAL);
                CHECK(errors && strstr(errors, "main.conf:5: [home]: smb_view ") &&
                      strstr(errors, "is not a mount point"));
                errors = mfree(errors);
                warnings = mfree(warnings);
                CHECK(config_load_checked(conf, NULL, &c, &errors, &warnings) == 0 && c && !errors);
                CHECK(warnings && strstr(warnings, "warning: ") && strstr(warnings, "main.conf:5: [home]: smb_view ") &&
                      strstr(warnings, "its snapshots go on"));
                config_free(c);
        }

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        sh(cmd);
        return tests_end();
}
