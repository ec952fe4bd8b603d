/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Restore and tree comparison, with the clone step replaced by a copying
 * test double (the host has no reflinks): single files, subtrees, the
 * whole tree, --delete, --dry-run, another target, hard links, the store
 * inside the tree, and a live directory swapped for a symbolic link.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "path-util.h"
#include "restore.h"
#include "clone-double.h"
#include "tests.h"
#include "tree-diff.h"

static char base[] = "/var/tmp/refsnap-test-restore.XXXXXX";

static void sh(const char *cmd) {
        char full[PATH_MAX * 2];

        snprintf(full, sizeof(full), "cd '%s' && %s", base, cmd);
        if (system(full) != 0) {
                fprintf(stderr, "failed: %s\n", cmd);
                exit(2);
        }
}

static bool sh_ok(const char *cmd) {
        char full[PATH_MAX * 2];

        snprintf(full, sizeof(full), "cd '%s' && %s", base, cmd);
        return system(full) == 0;
}

static int dir(const char *rel) {
        char p[PATH_MAX];

        snprintf(p, sizeof(p), "%s/%s", base, rel);
        return open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int count(DiffKind kind, const char *path, const struct stat *a, const struct stat *b, void *userdata) {
        (*(int *) userdata)++;
        fprintf(stderr, "# differs: %c %s\n", diff_mark(kind), path);
        return 0;
}

/* How many entries differ between base/a and base/b. */
static int differences(const char *a, const char *b, const char *skip) {
        _cleanup_close_ int fa = dir(a), fb = dir(b);
        int n = 0;
        TreeDiff d = { .fn = count, .userdata = &n, .report_dirs = true };
        struct stat st;
        char p[PATH_MAX];

        if (skip) {
                snprintf(p, sizeof(p), "%s/%s", base, skip);
                if (stat(p, &st) == 0) {
                        d.skip = file_id(&st);
                }
        }
        if (fa < 0 || fb < 0 || tree_diff(&d, fa, fb, NULL, "") < 0)
                return -1;
        return n;
}

/* What the next restore() leaves alone with delete, and what it said on its log. */
static char *t_exclude[4], *t_keep[4];
static char *t_log;

static int restore(const char *snap, const char *live, const char *path, bool delete, bool dry_run,
                   char **out) {
        _cleanup_close_ int s = dir(snap), l = dir(live), stage = dir("stage");
        size_t size = 0, lsize = 0;
        Restore o = { .delete = delete, .dry_run = dry_run, .ops = &clone_double_ops,
                      .exclude = t_exclude, .keep = t_keep };
        struct stat st;
        char p[PATH_MAX];
        int r;

        snprintf(p, sizeof(p), "%s/live/.store", base);
        if (stat(p, &st) == 0) {
                o.skip = file_id(&st);
        }
        free(t_log);
        t_log = NULL;
        o.out = open_memstream(out, &size);
        o.log = open_memstream(&t_log, &lsize);
        if (s < 0 || l < 0 || stage < 0 || !o.out || !o.log)
                return -EBADF;
        r = restore_run(&o, s, l, stage, path);
        fclose(o.out);
        fclose(o.log);
        fprintf(stderr, "%s", t_log);
        return r;
}

static void snapshot_of(const char *live, const char *snap) {
        _cleanup_close_ int l = dir(live), s = -EBADF;
        Mirror w = { .ops = &clone_double_ops, .log = stderr };
        char cmd[PATH_MAX];

        snprintf(cmd, sizeof(cmd), "rm -rf %s && mkdir %s", snap, snap);
        sh(cmd);
        s = dir(snap);
        CHECK(l >= 0 && s >= 0 && mirror_tree(&w, l, s) == 0);
}

/*
 * --delete and what the job excludes or the snapshot skipped: left alone,
 * as rsync --delete leaves excluded names, inside a new directory too;
 * said by the dry run.  Without patterns (--delete-excluded), removed.
 */
static void test_excluded(void) {
        char *out = NULL;

        sh("mkdir -p ex/live/d && echo doc > ex/live/doc && echo x > ex/live/d/f");
        snapshot_of("ex/live", "ex/snap");
        sh("mkdir -p ex/live/cache/deep && echo c > ex/live/cache/deep/blob && echo vm > ex/live/vm.img && echo v > ex/live/d/disk.img && "
           "mkdir -p ex/live/newdir && echo y > ex/live/newdir/y.img && echo gone > ex/live/newdir/gone && "
           "echo s > ex/live/d/skipped.bin && echo new > ex/live/new && echo changed > ex/live/doc");
        t_exclude[0] = (char *) "/cache/";
        t_exclude[1] = (char *) "*.img";
        t_keep[0] = (char *) "d/skipped.bin";
        CHECK(restore("ex/snap", "ex/live", "", true, true, &out) == 0);
        fprintf(stderr, "# dry run:\n%s", out);
        CHECK(strstr(out, "- new\n") && strstr(out, "= cache/") && strstr(out, "= vm.img") &&
              strstr(out, "= d/skipped.bin") && !strstr(out, "- cache") && !strstr(out, "- vm.img"));
        free(out);
        CHECK(restore("ex/snap", "ex/live", "", true, false, &out) == 0);
        free(out);
        CHECK(sh_ok("cd ex/live && grep -qx c cache/deep/blob && grep -qx vm vm.img && grep -qx v d/disk.img && "
                    "grep -qx y newdir/y.img && grep -qx s d/skipped.bin"));
        CHECK(sh_ok("cd ex/live && test ! -e new -a ! -e newdir/gone && grep -qx doc doc"));
        /* Inside a directory the snapshot has that a pattern added since excludes: kept too. */
        sh("mkdir -p ex/live/d/sub ex/snap/d/sub && echo k > ex/live/d/sub/k");
        t_exclude[2] = (char *) "d/sub/";
        /* A PATH restore with --delete keeps them too. */
        CHECK(restore("ex/snap", "ex/live", "d", true, false, &out) == 0);
        free(out);
        CHECK(sh_ok("cd ex/live && grep -qx v d/disk.img && grep -qx s d/skipped.bin && grep -qx k d/sub/k"));
        /* No patterns: --delete-excluded. */
        t_exclude[0] = t_exclude[1] = t_exclude[2] = t_keep[0] = NULL;
        sh("rmdir ex/snap/d/sub");
        CHECK(restore("ex/snap", "ex/live", "", true, true, &out) == 0);
        CHECK(strstr(out, "- cache/\n") && strstr(out, "- vm.img\n"));
        free(out);
        CHECK(restore("ex/snap", "ex/live", "", true, false, &out) == 0);
        free(out);
        CHECK(differences("ex/snap", "ex/live", NULL) == 0);
}

/*
 * Users' directories in a shared, non-sticky directory: one renamed to
 * another's name is not entered, re-owned, emptied or deleted, and the
 * rest is restored; a pre-created parent is not filled; a directory of
 * one user inside another's is not entered (unsafe transition).
 */
static void test_other_users(void) {
        char *out = NULL;

        sh("mkdir -p u/live/alice/docs u/live/bob/private u/live/carol/dave && chmod 0777 u/live && "
           "echo a > u/live/alice/docs/a && echo secret > u/live/bob/private/secret && "
           "echo report > u/live/bob/report && echo readme > u/live/readme && echo d > u/live/carol/dave/f && "
           "chown -R 1001:1001 u/live/alice && chown -R 1002:1002 u/live/bob && chown 1003 u/live/carol && "
           "chown -R 1004 u/live/carol/dave && chmod 0700 u/live/alice u/live/bob && chmod 0644 u/live/bob/report");
        snapshot_of("u/live", "u/snap");
        /* Alice renames her directory away and bob's to her name. */
        sh("echo changed > u/live/readme && echo changed > u/live/carol/dave/f && "
           "mv u/live/alice u/live/alice.mine && mv u/live/bob u/live/alice");
        /* The dry run says so, and changes nothing. */
        CHECK(restore("u/snap", "u/live", "", false, true, &out) == -EPERM);
        fprintf(stderr, "# dry run:\n%s", out);
        CHECK(out && strstr(out, "! alice/: ") && strstr(out, "! carol/dave/: ") && strstr(out, "~ readme\n"));
        free(out);
        CHECK(sh_ok("cd u/live && test \"$(stat -c %u:%a alice)\" = 1002:700 && grep -qx changed readme"));
        CHECK(restore("u/snap", "u/live", "", false, false, &out) == -EPERM);
        free(out);
        CHECK(t_log && strstr(t_log, "alice: not restored: ") && strstr(t_log, "carol/dave: not restored: "));
        CHECK(sh_ok("cd u/live && test \"$(stat -c %u:%a alice)\" = 1002:700 && test ! -e alice/docs && "
                    "grep -qx secret alice/private/secret"));
        CHECK(sh_ok("cd u/live && grep -qx readme readme && test \"$(stat -c %u bob)\" = 1002 && "
                    "grep -qx report bob/report && grep -qx changed carol/dave/f"));
        /* With --delete: her directory under a name the snapshot lacks is deleted, bob's is not. */
        sh("mv u/live/alice u/live/junk && mv u/live/alice.mine u/live/alice");
        CHECK(restore("u/snap", "u/live", "", true, false, &out) == -EPERM);
        free(out);
        CHECK(t_log && strstr(t_log, "junk: not restored: "));
        CHECK(sh_ok("cd u/live && grep -qx secret junk/private/secret && test \"$(stat -c %u junk)\" = 1002"));
        /* The pre-created parent. */
        sh("rm -rf u/live/bob u/live/junk && mkdir u/live/bob && chown 1001 u/live/bob");
        CHECK(restore("u/snap", "u/live", "bob/report", false, false, &out) == -EPERM);
        free(out);
        CHECK(t_log && strstr(t_log, "bob: not restored: "));
        CHECK(sh_ok("test ! -e u/live/bob/report && test \"$(stat -c %u u/live/bob)\" = 1001"));
        CHECK(restore("u/snap", "u/live", "bob/private/secret", false, false, &out) == -EPERM);
        free(out);
        CHECK(sh_ok("test ! -e u/live/bob/private"));
        /* Not there: made as bob's. */
        sh("rmdir u/live/bob");
        CHECK(restore("u/snap", "u/live", "bob/private/secret", false, false, &out) == 0);
        free(out);
        CHECK(sh_ok("cd u/live && test \"$(stat -c %u:%a bob)\" = 1002:700 && grep -qx secret bob/private/secret"));
}

/*
 * What an interrupted restore left: only root's 0700 directories named
 * RESTORE_STAGE_PREFIX PID.N whose PID is gone and which no restore holds
 * locked are removed; a look-alike of a user's, a symbolic link, another
 * mode, a live PID's and a locked one stay.
 */
static void test_stale_stages(void) {
        _cleanup_close_ int d = -EBADF, held = -EBADF;
        char cmd[PATH_MAX];
        pid_t dead;

        if (geteuid() != 0) {
                fprintf(stderr, "# stale stages: not root, skipped\n");
                return;
        }
        dead = fork();
        if (dead == 0)
                _exit(0);
        CHECK(dead > 0 && waitpid(dead, NULL, 0) == dead);
        snprintf(cmd, sizeof(cmd),
                 "mkdir -m 0755 stg && cd stg && mkdir -m 0700 .refsnap-restore-stage.%1$d.0 .refsnap-restore-stage.%1$d.2 "
                 ".refsnap-restore-stage.%2$d.0 .refsnap-restore-stage.%1$d.3 .refsnap-restore-stage.%1$d.x target && "
                 "mkdir -m 0755 .refsnap-restore-stage.%1$d.1 && mkdir -p .refsnap-restore-stage.%1$d.0/d/e && "
                 "echo x > .refsnap-restore-stage.%1$d.0/d/e/f && echo keep > target/f && "
                 "ln -s target .refsnap-restore-stage.%1$d.4 && chown 1001 .refsnap-restore-stage.%1$d.3",
                 (int) dead, (int) getpid());
        sh(cmd);
        d = dir("stg");
        snprintf(cmd, sizeof(cmd), "stg/.refsnap-restore-stage.%d.2", (int) dead);
        held = dir(cmd);
        CHECK(d >= 0 && held >= 0 && flock(held, LOCK_EX) == 0);
        CHECK(restore_remove_stale_stages(d, stderr) == 1);
        snprintf(cmd, sizeof(cmd),
                 "cd stg && test ! -e .refsnap-restore-stage.%1$d.0 && test -d .refsnap-restore-stage.%1$d.1 && "
                 "test -d .refsnap-restore-stage.%1$d.2 && test -d .refsnap-restore-stage.%2$d.0 && "
                 "test -d .refsnap-restore-stage.%1$d.3 && test -d .refsnap-restore-stage.%1$d.x && "
                 "test -L .refsnap-restore-stage.%1$d.4 && grep -qx keep target/f",
                 (int) dead, (int) getpid());
        CHECK(sh_ok(cmd));
        /* Unlocked: gone too. */
        held = safe_close(held);
        CHECK(restore_remove_stale_stages(d, stderr) == 1);
        /* In a directory others may write, nothing is: root never stages there. */
        snprintf(cmd, sizeof(cmd), "chmod 0777 stg && mkdir -m 0700 stg/.refsnap-restore-stage.%d.5", (int) dead);
        sh(cmd);
        CHECK(restore_remove_stale_stages(d, stderr) == 0);
}

int main(void) {
        _cleanup_free_ char *norm = NULL;
        char *out = NULL;
        char *o2 = NULL;

        if (!mkdtemp(base))
                return 2;

        /* Normalizing. */
        CHECK(path_normalize_relative("a//b/./c/", &norm) == 0);
        CHECK_STREQ(norm, "a/b/c");
        free(norm);
        CHECK(path_normalize_relative("/./", &norm) == 0);
        CHECK_STREQ(norm, "");
        free(norm);
        norm = NULL;
        CHECK(path_normalize_relative("../x", &norm) == -EINVAL);
        CHECK(path_normalize_relative("a/../b", &norm) == -EINVAL);
        CHECK(path_normalize_relative("a/..", &norm) == -EINVAL);
        CHECK(path_normalize_relative("a/..b", &norm) == 0);
        CHECK_STREQ(norm, "a/..b");

        /* A live tree and its snapshot (made with the same engine). */
        sh("mkdir -m 0700 stage && mkdir -p live/a/b live/.store outside && echo one > live/a/f1 && echo two > live/a/b/f2 && "
           "echo three > live/f3 && echo hl > live/h1 && ln live/h1 live/a/h2 && ln -s f3 live/sym && "
           "chmod 0750 live/a && echo secret > outside/f1 && mkdir -p snap && "
           "touch -d '2020-01-01 00:00' live/f3 live/a/b");
        {
                _cleanup_close_ int l = dir("live"), s = dir("snap");
                Mirror w = { .ops = &clone_double_ops, .log = stderr };
                struct stat st;

                CHECK(fstatat(l, ".store", &st, 0) == 0);
                w.skip = file_id(&st);
                CHECK(mirror_tree(&w, l, s) == 0);
        }
        CHECK(differences("snap", "live", "live/.store") == 0);

        /* Changes in the live tree. */
        sh("echo THREE > live/f3 && rm live/a/b/f2 && echo new > live/n && chmod 0700 live/a && "
           "rm live/a/h2 && echo other > live/a/h2");
        CHECK(differences("snap", "live", "live/.store") == 5);

        /* A dry run lists what would change and changes nothing. */
        CHECK(restore("snap", "live", "", false, true, &out) == 0);
        fprintf(stderr, "# dry run:\n%s", out);
        CHECK(strstr(out, "~ f3\n") && strstr(out, "+ a/b/f2\n") && strstr(out, "~ a/\n") &&
              strstr(out, "~ a/h2\n"));
        CHECK(!strstr(out, "- n"));
        free(out);
        CHECK(restore("snap", "live", "", true, true, &out) == 0);
        CHECK(strstr(out, "- n\n") != NULL);
        CHECK(!strstr(out, ".store"));
        free(out);
        out = NULL;
        CHECK(sh_ok("grep -qx THREE live/f3 && test -e live/n && test ! -e live/a/b/f2"));

        /* One file. */
        CHECK(restore("snap", "live", "a/b/f2", false, false, &out) == 0);
        CHECK(sh_ok("grep -qx two live/a/b/f2 && grep -qx THREE live/f3"));
        free(out);
        /* Not in the snapshot. */
        CHECK(restore("snap", "live", "nope", false, false, &out) == -ENOENT);
        free(out);

        /* The whole tree, without --delete: what is new stays. */
        CHECK(restore("snap", "live", "", false, false, &out) == 0);
        free(out);
        CHECK(sh_ok("grep -qx three live/f3 && test -e live/n && test \"$(stat -c %a live/a)\" = 750"));
        CHECK(sh_ok("test \"$(stat -c %i live/h1)\" = \"$(stat -c %i live/a/h2)\""));
        CHECK(differences("snap", "live", "live/.store") == 1);
        /* With --delete: the same as the snapshot; the store stays. */
        CHECK(restore("snap", "live", "", true, false, &out) == 0);
        free(out);
        CHECK(differences("snap", "live", "live/.store") == 0);
        CHECK(sh_ok("test -d live/.store && test ! -e live/n"));
        CHECK(sh_ok("! ls -A live | grep -q refsnap-restore"));

        /* A directory swapped for a symbolic link to somewhere else. */
        sh("rm -rf live/a && ln -s ../outside live/a");
        CHECK(restore("snap", "live", "a/b/f2", false, false, &out) == -ENOTDIR);
        free(out);
        CHECK(sh_ok("test ! -e outside/b && grep -qx secret outside/f1 && test \"$(ls outside)\" = f1"));
        CHECK(restore("snap", "live", "a", false, false, &out) == 0);
        free(out);
        CHECK(sh_ok("test -d live/a -a ! -L live/a && grep -qx one live/a/f1 && grep -qx two live/a/b/f2"));
        CHECK(sh_ok("grep -qx secret outside/f1 && test \"$(ls outside)\" = f1"));
        CHECK(differences("snap", "live", "live/.store") == 0);

        /* Somewhere else (--to): a new directory becomes the snapshot. */
        sh("mkdir to");
        CHECK(restore("snap", "to", "", false, false, &o2) == 0);
        free(o2);
        CHECK(differences("snap", "to", NULL) == 0);
        CHECK(sh_ok("test \"$(stat -c %.9Y:%a to)\" = \"$(stat -c %.9Y:%a snap)\""));
        CHECK(sh_ok("test \"$(stat -c %i to/h1)\" = \"$(stat -c %i to/a/h2)\""));
        /* A subtree into another target makes its parents. */
        sh("mkdir to2");
        CHECK(restore("snap", "to2", "a/b", false, false, &o2) == 0);
        free(o2);
        CHECK(sh_ok("grep -qx two to2/a/b/f2 && test \"$(stat -c %a to2/a)\" = 750 && test ! -e to2/f3"));
        /*
         * Staging happens in the store: nothing of the restore's own is
         * ever in the live tree, and a user's entry named like an old
         * staging directory is hers, compared and kept like any other.
         */
        sh("mkdir live/.refsnap-restore.99999 && touch live/.refsnap-restore.99999/x");
        CHECK(restore("snap", "live", "f3", false, false, &o2) == 0);
        free(o2);
        CHECK(sh_ok("test -e live/.refsnap-restore.99999/x"));
        CHECK(sh_ok("test -z \"$(ls -A stage)\""));
        CHECK(differences("snap", "live", "live/.store") == 1);
        CHECK(restore("snap", "live", "", false, true, &o2) == 0);
        CHECK(o2 && !strstr(o2, "refsnap-restore"));
        free(o2);
        CHECK(restore("snap", "live", "", true, true, &o2) == 0);
        CHECK(o2 && strstr(o2, "- .refsnap-restore.99999/"));
        free(o2);

        test_excluded();
        test_other_users();
        test_stale_stages();

        {
                char cmd[PATH_MAX];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
                if (system(cmd) != 0)
                        return 2;
        }
        return tests_end();
}
