/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Snapshots into a store on btrfs (a loop device, in a mount namespace of
 * the test's own; only where btrfs and the loop driver are in the kernel
 * already and we are root), the clone step the copying test double: each
 * new snapshot is a read-only subvolume, unwritable even by root; an old
 * plain-directory snapshot is adopted (listed, pruned); a prune destroys
 * the subvolume; a stale .partial- or .removing- subvolume, read-only, is
 * destroyed at the next run; a failed snapshot leaves no subvolume.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "clone-double.h"
#include "fd-util.h"
#include "macro.h"
#include "prune.h"
#include "snapshot.h"
#include "strv.h"
#include "tests.h"

static char base[] = "/run/refsnap-test-snapshot-btrfs.XXXXXX";

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...) {
        char cmd[PATH_MAX * 4];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        return system(cmd);
}

static bool has_btrfs_and_loop(void) {
        _cleanup_fclose_ FILE *f = NULL;
        char line[128];

        if (access("/dev/loop-control", F_OK) < 0)
                return false;
        f = fopen("/proc/filesystems", "re");
        while (f && fgets(line, sizeof(line), f))
                if (strcmp(line, "\tbtrfs\n") == 0)
                        return true;
        return false;
}

static int failing_clone(int src, int dst_dir, const char *name, void *userdata) {
        return ++*(int *) userdata >= 2 ? -ENOSPC : clone_double(src, dst_dir, name, NULL);
}

static bool exists(int dir, const char *name) {
        struct stat st;

        return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Is store/name a read-only subvolume? */
static bool read_only_subvol(int store, const char *name) {
        _cleanup_close_ int fd = openat(store, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        return fd >= 0 && btrfs_is_subvol_fd(fd) == 1 && btrfs_subvol_get_read_only(fd) == 1;
}

/* How many subvolumes the filesystem at mnt holds (btrfs subvolume list, as an admin sees them). */
static int count_subvols(const char *mnt) {
        char cmd[PATH_MAX + 64], line[512];
        FILE *p;
        int n = 0;

        snprintf(cmd, sizeof(cmd), "btrfs subvolume list '%s' 2>/dev/null", mnt);
        p = popen(cmd, "r");
        while (p && fgets(line, sizeof(line), p))
                n++;
        if (!p || pclose(p) != 0)
                return -1;
        return n;
}

static size_t count_snapshots(int store) {
        char **names = NULL;
        size_t n = 0;

        if (store_list(store, &names, &n) < 0)
                return (size_t) -1;
        strv_free(names);
        return n;
}

int main(void) {
        char mnt[PATH_MAX], src[PATH_MAX + 8], store_path[PATH_MAX + 32], name[SNAPSHOT_NAME_MAX],
             name2[SNAPSHOT_NAME_MAX];
        _cleanup_close_ int store = -EBADF;
        SnapshotFacts f;
        Job job;
        int calls = 0;

        if (geteuid() != 0) {
                SKIP("a btrfs of its own needs root");
                return tests_end();
        }
        /* Never make the host's kernel load a module for a test (as test-qgroup). */
        if (!has_btrfs_and_loop()) {
                SKIP("btrfs or the loop driver not in this kernel already");
                return tests_end();
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                SKIP("no mount namespace of our own");
                return tests_end();
        }
        if (!mkdtemp(base))
                return 2;
        snprintf(mnt, sizeof(mnt), "%s/mnt", base);
        if (run("cd '%s' && mkdir mnt && truncate -s 128M img && mkfs.btrfs -q -f img >/dev/null 2>&1 && "
                "mount -o loop img mnt 2>/dev/null", base) != 0) {
                SKIP("no loop-mounted btrfs here");
                run("rm -rf '%s'", base);
                return tests_end();
        }
        snprintf(src, sizeof(src), "%s/src", mnt);
        snprintf(store_path, sizeof(store_path), "%s/.refsnap/job", mnt);
        job = (Job) { .name = "job", .source = src, .store = store_path };
        /*
         * A store of before: one plain-directory snapshot (a copy of the
         * source), its facts gone with the format of the time.
         */
        CHECK(run("cd '%s' && mkdir -p src/a/b .refsnap/job && echo one > src/a/f1 && echo two > src/a/b/f2 && "
                  "ln src/a/f1 src/hard && ln -s a/f1 src/link && chmod 0750 src/a && "
                  "cp -a src .refsnap/job/2001-01-01T00:00:00Z", mnt) == 0);
        store = open(store_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(store >= 0);
        CHECK(btrfs_is_subvol_at(store, "2001-01-01T00:00:00Z") == 0);

        /* A new snapshot: a read-only subvolume, the source's copy, written by nobody. */
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, name, &f) == 0);
        CHECK(read_only_subvol(store, name));
        CHECK(run("cd '%s' && diff -r src '.refsnap/job/%s' && "
                  "test \"$(stat -c %%a .refsnap/job/%s/a)\" = 750 && "
                  "test \"$(stat -c %%i .refsnap/job/%s/hard)\" = \"$(stat -c %%i .refsnap/job/%s/a/f1)\"",
                  mnt, name, name, name, name) == 0);
        {
                _cleanup_close_ int snap = openat(store, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                CHECK(openat(snap, "a/f1", O_WRONLY | O_CLOEXEC) == -1 && errno == EROFS);
                CHECK(unlinkat(snap, "a/f1", 0) == -1 && errno == EROFS);
                CHECK(fchmod(snap, 0777) == -1 && errno == EROFS);
        }
        /* Both kinds listed; latest the new one. */
        CHECK(count_snapshots(store) == 2);
        CHECK(run("test \"$(readlink '%s/latest')\" = '%s'", store_path, name) == 0);

        /* What a killed run left: a .partial- and a .removing- subvolume, read-only. */
        CHECK(run("cd '%s' && btrfs subvolume create .partial-2026-01-01T00:00:00Z >/dev/null && "
                  "touch .partial-2026-01-01T00:00:00Z/f && "
                  "btrfs property set .partial-2026-01-01T00:00:00Z ro true && "
                  "btrfs subvolume snapshot -r .partial-2026-01-01T00:00:00Z .removing-2026-01-01T00:00:01Z "
                  ">/dev/null", store_path) == 0);
        CHECK(count_subvols(mnt) == 3);
        /* The next snapshot destroys them first, and is a subvolume of its own. */
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, name2, &f) == 0);
        CHECK(!exists(store, ".partial-2026-01-01T00:00:00Z") && !exists(store, ".removing-2026-01-01T00:00:01Z"));
        CHECK(read_only_subvol(store, name2));
        CHECK(count_subvols(mnt) == 2);

        /* A snapshot that fails (a full disk at the second file): no subvolume left. */
        {
                MirrorOps failing = { .clone = failing_clone, .userdata = &calls };
                char name3[SNAPSHOT_NAME_MAX];

                CHECK(snapshot_take(&job, &failing, NULL, stderr, NULL, name3, &f) == -ENOSPC);
                CHECK(count_subvols(mnt) == 2);
                CHECK(run("! ls -A '%s' | grep -q '^\\.partial-'", store_path) == 0);
        }

        /*
         * Prune: the first subvolume renamed into 2001 (read-only as it is)
         * goes with the old directory; one snapshot an hour is kept.
         */
        CHECK(run("cd '%s' && mv '%s' 2001-01-01T00:00:01Z && mv '.facts/%s' .facts/2001-01-01T00:00:01Z",
                  store_path, name, name) == 0);
        job.retention = (RetentionPolicy) { .hourly = 1 };
        CHECK(snapshot_prune(&job, time(NULL), false, NULL) == 2);
        CHECK(!exists(store, "2001-01-01T00:00:00Z") && !exists(store, "2001-01-01T00:00:01Z"));
        CHECK(read_only_subvol(store, name2));
        CHECK(count_snapshots(store) == 1);
        CHECK(count_subvols(mnt) == 1);
        CHECK(run("! ls -A '%s' | grep -q '^\\.removing-'", store_path) == 0);

        store = safe_close(store);
        run("umount '%s/mnt'; rm -rf '%s'", base, base);
        return tests_end();
}
