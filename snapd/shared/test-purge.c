/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * snapshot_purge(): one path removed from every snapshot of a store that
 * holds it (refsnapctl purge, the per-file answer to a leaked file), on
 * plain-directory snapshots whose unchanged files are hard links shared
 * between snapshots (an incremental store on XFS or ext4): the name goes
 * from each, the shared inode with its last name; every other entry is
 * as it was (the same inode, the same bytes), the directory that held it
 * keeps its times; a pinned snapshot is purged too; a dry run lists the
 * snapshots and changes nothing; the path is the source's (relative, or
 * absolute beneath it; ".." and the root refused), never followed through
 * a symbolic link of a snapshot; the store's lock held (a snapshot
 * running) refuses it; a path in no snapshot is -ENOENT.  The manifests
 * of the purged snapshots go, so the next snapshot never reuses a purged
 * entry: the file still in the source comes back as a new inode with the
 * source's bytes.  An interrupted purge (its intent left in the store, a
 * hidden copy left) is finished by the next purge or snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clone-double.h"
#include "fd-util.h"
#include "macro.h"
#include "purge.h"
#include "snapshot.h"
#include "store.h"
#include "strv.h"
#include "tests.h"

static char base[] = "/var/tmp/refsnap-test-purge.XXXXXX";
static char store_path[PATH_MAX];

#define S1 "2026-12-03T07:00:00Z"
#define S2 "2026-12-03T08:00:00Z"
#define S3 "2026-12-03T09:00:00Z"
#define S4 "2026-12-03T10:00:00Z"

static void sh(const char *cmd) {
        char full[PATH_MAX * 4];

        snprintf(full, sizeof(full), "cd '%s' && %s", store_path, cmd);
        if (system(full) != 0) {
                fprintf(stderr, "failed: %s\n", full);
                exit(2);
        }
}

static bool exists(const char *name) {
        char p[PATH_MAX * 2];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", store_path, name);
        return lstat(p, &st) == 0;
}

static struct stat stat_of(const char *name) {
        char p[PATH_MAX * 2];
        struct stat st = {};

        snprintf(p, sizeof(p), "%s/%s", store_path, name);
        (void) lstat(p, &st);
        return st;
}

static bool same_bytes(const char *name, const char *want) {
        char p[PATH_MAX * 2], got[256] = "";
        _cleanup_close_ int fd = -EBADF;
        ssize_t n;

        snprintf(p, sizeof(p), "%s/%s", store_path, name);
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return false;
        n = read(fd, got, sizeof(got) - 1);
        return n >= 0 && strcmp(got, want) == 0;
}

static size_t count(char **l) {
        size_t n = 0;

        while (l && l[n])
                n++;
        return n;
}

/* Each on a descriptor of its own: the store's lock (flock) is held until that is closed. */
static int purge(const char *path, bool dry_run, char ***ret) {
        _cleanup_close_ int fd = store_open(store_path, false);

        return fd < 0 ? fd : snapshot_purge(fd, "job", path, dry_run, NULL, ret);
}

static void test_normalize(void) {
        char *p = NULL;

        CHECK(purge_path_normalize("/src", "secret", &p) == 0);
        CHECK_STREQ(p, "secret");
        p = mfree(p);
        CHECK(purge_path_normalize("/src", "/src/a//b/./c/", &p) == 0);
        CHECK_STREQ(p, "a/b/c");
        p = mfree(p);
        CHECK(purge_path_normalize("/src/", "./a\nb", &p) == 0);
        CHECK_STREQ(p, "a\nb");
        p = mfree(p);
        CHECK(purge_path_normalize("/src", "/srcx/a", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", "/other/a", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", "/src", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", "/src/", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", ".", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", "", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", "a/../b", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", "../src/a", &p) == -EINVAL);
        CHECK(purge_path_normalize("/src", "/src/..", &p) == -EINVAL);
        CHECK(p == NULL);
}

static void test_store(void) {
        _cleanup_close_ int store = -EBADF;
        char **names = NULL;
        struct stat secret, keep, root2, leakdir;
        int r;

        /*
         * As an incremental store on XFS: S2 and S3 link S1's unchanged
         * files (one inode, secret, in three snapshots), S4 no longer has
         * it; S3 pinned; each with a manifest (any bytes: only its name
         * counts here).
         */
        sh("mkdir -p outside " S1 "/d/leak " S1 "/e && echo secret > " S1 "/secret && echo keep > " S1 "/keep && "
           "echo x > " S1 "/d/leak/x && echo y > " S1 "/d/y && echo v > outside/victim && "
           "ln -s ../outside " S1 "/e/link && ln -s ../outside " S1 "/link && "
           "cp -al " S1 " " S2 " && cp -al " S1 " " S3 " && cp -al " S1 " " S4 " && rm " S4 "/secret && "
           "rm -r " S3 "/d/leak && mkdir .facts && "
           "for s in " S1 " " S2 " " S3 " " S4 "; do echo m > .facts/$s.manifest; echo f > .facts/$s; done && "
           "touch .facts/" S3 ".pinned && ln -s " S4 " latest && "
           "touch -d '2020-01-01 00:00:00' " S1 " " S2 " " S3 " " S1 "/d");
        store = store_open(store_path, false);
        CHECK(store >= 0);
        secret = stat_of(S1 "/secret");
        keep = stat_of(S1 "/keep");
        root2 = stat_of(S2);
        leakdir = stat_of(S1 "/d");
        CHECK(secret.st_nlink == 3);

        /* A dry run: the snapshots that hold it, oldest first; nothing changed. */
        r = purge("secret", true, &names);
        CHECK(r == 3);
        CHECK(names && count(names) == 3);
        CHECK(names && strcmp(names[0], S1) == 0 && strcmp(names[1], S2) == 0 && strcmp(names[2], S3) == 0);
        names = strv_free(names);
        CHECK(exists(S1 "/secret") && exists(S2 "/secret") && exists(S3 "/secret"));
        CHECK(exists(".facts/" S1 ".manifest"));
        CHECK(!exists(".purge"));

        /* In no snapshot; through a symbolic link of a snapshot (never followed); not the source's. */
        CHECK(purge("nothing-here", false, NULL) == -ENOENT);
        CHECK(purge("nothing-here", true, NULL) == -ENOENT);
        CHECK(purge("link/victim", false, NULL) == -ENOENT);
        CHECK(purge("e/link/victim", false, NULL) == -ENOENT);
        CHECK(exists("outside/victim"));
        CHECK(purge("../outside/victim", false, NULL) == -EINVAL);
        CHECK(purge("", false, NULL) == -EINVAL);
        CHECK(exists("outside/victim"));
        CHECK(exists(".facts/" S1 ".manifest"));

        /* A snapshot (or a prune, a restore) holding the store's lock: refused, nothing changed. */
        {
                _cleanup_close_ int holder = open(store_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                CHECK(store_lock(holder, false) == 0);
                CHECK(purge("secret", false, NULL) == -EBUSY);
                CHECK(exists(S1 "/secret") && exists(S3 "/secret"));
                CHECK(exists(".facts/" S1 ".manifest"));
        }

        /* The purge: gone from all three, the pinned one too; nothing else moved. */
        r = purge("secret", false, &names);
        CHECK(r == 3);
        CHECK(names && count(names) == 3);
        names = strv_free(names);
        CHECK(!exists(S1 "/secret") && !exists(S2 "/secret") && !exists(S3 "/secret"));
        CHECK(exists(S1 "/keep") && stat_of(S1 "/keep").st_ino == keep.st_ino);
        CHECK(stat_of(S2 "/keep").st_ino == keep.st_ino && stat_of(S3 "/keep").st_ino == keep.st_ino &&
              stat_of(S4 "/keep").st_ino == keep.st_ino);
        CHECK(stat_of(S1 "/keep").st_nlink == 4);
        CHECK(same_bytes(S2 "/keep", "keep\n"));
        CHECK(same_bytes(S1 "/d/leak/x", "x\n"));
        CHECK(exists(S3) && exists(".facts/" S3 ".pinned"));
        /* The directory that held it keeps its times. */
        CHECK(stat_of(S2).st_mtim.tv_sec == root2.st_mtim.tv_sec);
        /* The manifests of the three gone (their next snapshot is full), S4's kept; the facts kept. */
        CHECK(!exists(".facts/" S1 ".manifest") && !exists(".facts/" S2 ".manifest") &&
              !exists(".facts/" S3 ".manifest"));
        CHECK(exists(".facts/" S4 ".manifest"));
        CHECK(exists(".facts/" S1) && exists(".facts/" S3));
        /* Nothing hidden left behind, no intent. */
        CHECK(!exists(".purge"));
        sh("! ls -a | grep -q '^\\.removing-\\|^\\.purg'");
        CHECK(purge("secret", false, NULL) == -ENOENT);
        CHECK(secret.st_ino != 0);

        /* A subtree: S3 no longer had it. */
        r = purge("d/leak", false, &names);
        CHECK(r == 3);
        names = strv_free(names);
        CHECK(!exists(S1 "/d/leak") && !exists(S2 "/d/leak") && !exists(S4 "/d/leak"));
        CHECK(exists(S1 "/d/y") && same_bytes(S1 "/d/y", "y\n"));
        CHECK(stat_of(S1 "/d").st_mtim.tv_sec == leakdir.st_mtim.tv_sec);
        CHECK(exists("outside/victim"));

        /*
         * Interrupted (a power cut): the intent in the store, a hidden copy
         * left, one snapshot still holding the path.  The next purge (of
         * anything) finishes it first; so does purge_resume_locked().
         */
        sh("echo k2 > " S2 "/keep2 && printf keep2 > .purge && mkdir .purging-" S2);
        CHECK(purge("nothing-here", false, NULL) == -ENOENT);
        CHECK(!exists(S2 "/keep2"));
        CHECK(!exists(".purge") && !exists(".purging-" S2));
        sh("echo k3 > " S3 "/keep3 && printf keep3 > .purge");
        CHECK(store_lock(store, false) == 0);
        CHECK(purge_resume_locked(store, "job", stderr) == 1);
        CHECK(!exists(S3 "/keep3") && !exists(".purge"));
        CHECK(purge_resume_locked(store, "job", stderr) == 0);
        /* An intent that is no path of a source: removed, nothing else. */
        sh("printf ../outside/victim > .purge");
        CHECK(purge_resume_locked(store, "job", stderr) == -EINVAL);
        CHECK(exists("outside/victim") && !exists(".purge"));
        /* The leftover removal keeps an intent (the purge is not finished) and removes its temp file. */
        CHECK(store_write_purge_intent(store, "d/y") == 0);
        sh("touch ..purge.tmp");
        CHECK(store_remove_leftovers_locked(store, NULL, NULL) == 0);
        CHECK(exists(".purge") && !exists("..purge.tmp"));
        {
                char *p = NULL;

                CHECK(store_read_purge_intent(store, &p) == 0);
                CHECK_STREQ(p, "d/y");
                free(p);
        }
        CHECK(store_remove_purge_intent(store) == 0 && !exists(".purge"));
        CHECK(store_remove_purge_intent(store) == 0);
        sh("printf '' > .purge");
        {
                char *p = NULL;

                CHECK(store_read_purge_intent(store, &p) == -EBADMSG);
        }
        CHECK(store_remove_purge_intent(store) == 0);
}

/*
 * With real snapshots (the clone double): the second links the first's
 * unchanged files; after a purge of a file still in the source, the next
 * snapshot holds it again as a new inode with the source's bytes, never
 * a link to what was purged; an intent left by an interrupted purge is
 * finished by the next snapshot before it is taken.
 */
static void test_next_snapshot(void) {
        char src[128], store[128], cmd[PATH_MAX * 4], n1[SNAPSHOT_NAME_MAX],
             n2[SNAPSHOT_NAME_MAX], n3[SNAPSHOT_NAME_MAX], n4[SNAPSHOT_NAME_MAX];
        _cleanup_close_ int fd = -EBADF;
        char **names = NULL;
        SnapshotFacts f;
        struct stat a, b;
        Job job;

        snprintf(src, sizeof(src), "%s/src", base);
        snprintf(store, sizeof(store), "%s/.refsnap/job", base);
        snprintf(store_path, sizeof(store_path), "%s", store);
        snprintf(cmd, sizeof(cmd), "mkdir -p '%s/d' '%s/.refsnap' && echo secret > '%s/secret' && echo other > '%s/d/other' && "
                 "echo more > '%s/more' && touch -d '2020-01-01 00:00:00' '%s/secret' '%s/d/other' '%s/more'",
                 src, base, src, src, src, src, src, src);
        CHECK(system(cmd) == 0);
        sleep(1);       /* past the coarse clock's tick: not "racy" (manifest.h) */
        job = (Job) { .name = "job", .source = src, .store = store };
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n1, &f) == 0);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n2, &f) == 0);
        CHECK(f.incremental && f.reused > 0);
        snprintf(cmd, sizeof(cmd), "%s/secret", n1);
        a = stat_of(cmd);
        snprintf(cmd, sizeof(cmd), "%s/secret", n2);
        b = stat_of(cmd);
        CHECK(a.st_ino != 0 && a.st_ino == b.st_ino);   /* shared, as on XFS */

        CHECK(purge_in_source(&job, "secret") == 1);
        CHECK(purge_in_source(&job, "gone") == 0);
        CHECK(purge("secret", false, &names) == 2);
        names = strv_free(names);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n3, &f) == 0);
        snprintf(cmd, sizeof(cmd), "%s/secret", n3);
        b = stat_of(cmd);
        CHECK(b.st_ino != 0 && b.st_ino != a.st_ino && b.st_nlink == 1);
        CHECK(same_bytes(cmd, "secret\n"));
        snprintf(cmd, sizeof(cmd), "%s/d/other", n3);
        CHECK(same_bytes(cmd, "other\n"));
        snprintf(cmd, sizeof(cmd), "%s/more", n3);
        CHECK(same_bytes(cmd, "more\n"));
        snprintf(cmd, sizeof(cmd), "%s/secret", n1);
        CHECK(!exists(cmd));

        /* Interrupted: the intent is there, d/other still in n1; the next snapshot finishes it first. */
        fd = store_open(store, false);
        CHECK(fd >= 0 && store_write_purge_intent(fd, "d/other") == 0);
        fd = safe_close(fd);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n4, &f) == 0);
        snprintf(cmd, sizeof(cmd), "%s/d/other", n1);
        CHECK(!exists(cmd));
        snprintf(cmd, sizeof(cmd), "%s/d/other", n3);
        CHECK(!exists(cmd));
        snprintf(cmd, sizeof(cmd), "%s/d/other", n4);
        CHECK(same_bytes(cmd, "other\n"));
        CHECK(!exists(".purge"));
}

/*
 * The purged entry never lies open in the store: a store kept listable
 * (0755, a job with smb_view) under a reachable parent, a snapshot whose
 * entry only its 0700 parent protects, and a removal that fails after
 * the entry left the snapshot (an immutable directory inside it, as a power
 * cut or a stop would leave it): no other user reads the leftover
 * through the store.
 */
static void test_trash_closed(void) {
        char cmd[PATH_MAX * 4];
        int r;

        snprintf(store_path, sizeof(store_path), "%s/open-store", base);
        CHECK(mkdir(store_path, 0755) == 0 && chmod(base, 0755) == 0 && chmod(store_path, 0755) == 0);
        sh("mkdir -p " S1 "/a/p/q && chmod 0700 " S1 "/a && chmod 0755 " S1 "/a/p " S1 "/a/p/q && "
           "echo secret > " S1 "/a/p/q/s && chmod 0644 " S1 "/a/p/q/s && "
           "mkdir .facts && echo f > .facts/" S1);
        /* An immutable directory: its entries cannot be removed. */
        snprintf(cmd, sizeof(cmd), "chattr +i '%s/" S1 "/a/p/q' 2>/dev/null", store_path);
        if (system(cmd) != 0) {
                SKIP("chattr +i not permitted here (CAP_LINUX_IMMUTABLE, a filesystem with the flag)");
                (void) chmod(base, 0700);
                return;
        }
        /* Before: the secret is hers alone (its snapshot's 0700 directory). */
        snprintf(cmd, sizeof(cmd), "setpriv --reuid=65534 --regid=65534 --clear-groups cat '%s/" S1 "/a/p/q/s' >/dev/null 2>&1",
                 store_path);
        CHECK(system(cmd) != 0);
        r = purge("a/p", false, NULL);
        CHECK(r < 0);                   /* the immutable directory stopped the removal */
        CHECK(!exists(S1 "/a/p"));
        /* The leftover is there (the removal failed), and no other user reads it. */
        snprintf(cmd, sizeof(cmd), "test -n \"$(find '%s'/.removing-* -name s)\"", store_path);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof(cmd), "for f in $(find '%s'/.removing-* -name s); do "
                 "setpriv --reuid=65534 --regid=65534 --clear-groups cat \"$f\" >/dev/null 2>&1 && exit 1; "
                 "done; exit 0", store_path);
        CHECK(system(cmd) == 0);
        snprintf(cmd, sizeof(cmd), "chattr -R -i '%s' 2>/dev/null; true", store_path);
        CHECK(system(cmd) == 0);
        (void) chmod(base, 0700);
}

int main(void) {
        char cmd[PATH_MAX + 16];

        if (!mkdtemp(base))
                return 2;
        snprintf(store_path, sizeof(store_path), "%s/store", base);
        if (mkdir(store_path, 0700) < 0)
                return 2;
        test_normalize();
        test_store();
        test_next_snapshot();
        test_trash_closed();
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", base);
        return tests_end();
}
