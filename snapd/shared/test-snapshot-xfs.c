/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Incremental snapshots into a store on XFS (a loop device, in a mount
 * namespace of the test's own; only where XFS and the loop driver are in
 * the kernel already and we are root), with the clone test double:
 * xfs_bulkstat_inodes() gives what statx gives, by inode number, and
 * leaves out inodes removed since; an incremental snapshot finds the
 * unchanged files by a bulk look of each directory (facts.bulk) and links
 * them to the previous snapshot's inodes, while every kind of change is
 * taken anew (data, a same-size rewrite, mode, owner, an xattr, a new
 * file, a file replaced by another of the same name, size and times, a
 * rename, a hard link made), and the snapshot equals the source by
 * rsync; with something mounted in the source, no bulk look at all.
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

#include "clone-double.h"
#include "fd-util.h"
#include "macro.h"
#include "snapshot.h"
#include "tests.h"
#include "tests-fs.h"
#include "xfs-util.h"

static char base[] = "/run/refsnap-test-snapshot-xfs.XXXXXX";

static ino_t ino_of(const char *dir, const char *path) {
        char p[PATH_MAX * 3];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", dir, path);
        return lstat(p, &st) < 0 ? 0 : st.st_ino;
}

static int cmp_u64(const void *p, const void *q) {
        uint64_t u = *(const uint64_t *) p, v = *(const uint64_t *) q;

        return u < v ? -1 : u > v;
}

static void test_bulkstat(const char *mnt) {
        char d[PATH_MAX + 8];
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ XfsStat *s = NULL;
        uint64_t inos[4];
        size_t n = 0;
        struct statx x[3];
        const char *names[] = { "a", "b", "c" };

        snprintf(d, sizeof(d), "%s/bulk", mnt);
        CHECK(run("mkdir '%s' && cd '%s' && echo one > a && printf 22 > b && echo three > c && chmod 0640 b && "
                  "ln c c2 && echo gone > gone && sync", d, d) == 0);
        fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0 && fd_is_xfs(fd) == 1);
        for (int i = 0; i < 3; i++)
                CHECK(statx(fd, names[i], AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x[i]) == 0);
        inos[0] = x[0].stx_ino;
        inos[1] = x[1].stx_ino;
        inos[2] = ino_of(d, "gone");
        inos[3] = x[2].stx_ino;
        CHECK(run("rm '%s/gone'", d) == 0);
        qsort(inos, 4, sizeof(uint64_t), cmp_u64);
        CHECK(xfs_bulkstat_inodes(fd, inos, 4, &s, &n) == 0);
        /* The three there, not the one removed since. */
        CHECK(n == 3);
        for (int i = 0; i < 3; i++) {
                const XfsStat *b = xfs_stat_find(s, n, x[i].stx_ino);

                CHECK(b && b->ctime_sec == x[i].stx_ctime.tv_sec && b->ctime_nsec == x[i].stx_ctime.tv_nsec &&
                      b->mode == x[i].stx_mode && b->nlink == x[i].stx_nlink && b->size == x[i].stx_size &&
                      b->uid == x[i].stx_uid && b->gid == x[i].stx_gid);
        }
        CHECK(xfs_stat_find(s, n, ino_of(d, "c"))->nlink == 2);
        CHECK(xfs_stat_find(s, n, 1) == NULL);
        /* Not XFS: refused, nothing given. */
        {
                _cleanup_close_ int run_fd = open("/run", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_free_ XfsStat *t = NULL;
                size_t m = 7;

                CHECK(fd_is_xfs(run_fd) == 0);
                CHECK(xfs_bulkstat_inodes(run_fd, inos, 1, &t, &m) == -ENOTTY && t == NULL && m == 0);
        }
}

/* A file moved while the walk is in a directory before it (mover's userdata: the source). */
static bool moved;
static void mover(int dir_fd, void *userdata) {
        char link[64], path[PATH_MAX];
        ssize_t n;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", dir_fd);
        n = readlink(link, path, sizeof(path) - 1);
        if (n < 0 || moved)
                return;
        path[n] = '\0';
        /* The walk enters T/a: T's files after a and m are not taken yet. */
        if (n >= 4 && strcmp(path + n - 4, "/T/a") == 0)
                moved = run("mv '%s/T/z' '%s/T/m/z'", (const char *) userdata, (const char *) userdata) == 0;
}

/* Equal by rsync's judge, with its options OPTS besides; what differs is printed. */
static bool same_tree_by(const char *opts, const char *a, const char *b) {
        return run("d=$(rsync -aHAXn %s --checksum --itemize-changes --delete '%s/' '%s/' 2>&1); "
                   "test -z \"$d\" || { echo \"$d\" | sed 's/^/# /'; false; }", opts, a, b) == 0;
}

static bool same_tree(const char *a, const char *b) {
        return same_tree_by("", a, b);
}

static void test_incremental(const char *mnt) {
        char src[PATH_MAX + 8], store[PATH_MAX + 32], s1[PATH_MAX * 2], s2[PATH_MAX * 2], s3[PATH_MAX * 2];
        char n1[SNAPSHOT_NAME_MAX], n2[SNAPSHOT_NAME_MAX], n3[SNAPSHOT_NAME_MAX];
        Job job;
        SnapshotFacts f = {}, g = {};

        snprintf(src, sizeof(src), "%s/src", mnt);
        snprintf(store, sizeof(store), "%s/.refsnap/job", mnt);
        job = (Job) { .name = "job", .source = src, .store = store };
        CHECK(run("mkdir -p '%s/.refsnap' '%s' && cd '%s' && for d in 1 2 3; do mkdir d$d; for i in $(seq 20); do "
                  "echo $d.$i > d$d/f$i; done; done && echo data > d1/chg && echo same > d1/same-size && "
                  "echo m > d1/mode && echo o > d1/owner && echo x > d1/xattr && echo r > d2/replaced && "
                  "echo mv > d2/moved && echo h > d3/hl && touch -d '2001-01-01 00:00' d2/replaced && sync", mnt,
                  src, src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n1, &f) == 0);
        CHECK(!f.incremental && f.bulk == 0);
        snprintf(s1, sizeof(s1), "%s/%s", store, n1);

        /* Each kind of change; everything else as it was. */
        CHECK(run("cd '%s' && echo more >> d1/chg && echo SAME > d1/same-size && chmod 0600 d1/mode && "
                  "chown 1234:1234 d1/owner && setfattr -n user.k -v v d1/xattr && echo new > d3/new && "
                  "echo r > d2/replaced.new && touch -d '2001-01-01 00:00' d2/replaced.new && "
                  "mv d2/replaced.new d2/replaced && mv d2/moved d3/moved && ln d3/hl d1/hl2", src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n2, &g) == 0);
        snprintf(s2, sizeof(s2), "%s/%s", store, n2);
        printf("# xfs incremental: %llu files, %llu reused, %llu by a bulk look\n", (unsigned long long) g.files,
               (unsigned long long) g.reused, (unsigned long long) g.bulk);
        CHECK(g.incremental);
        /*
         * The 60 files of one link nothing touched are all taken from the
         * previous snapshot, and the bulk look finds them: at least a
         * directory's run of 20 (a run whose inodes lie far apart among
         * others, as XFS's background freeing of the snapshots'
         * temporary inodes can leave them, is looked at by name, which
         * is the same judge).
         */
        CHECK(g.bulk >= 20 && g.bulk <= 60 && g.reused == 60);
        CHECK(same_tree(src, s2));
        CHECK(ino_of(s2, "d1/f1") == ino_of(s1, "d1/f1") && ino_of(s2, "d3/f20") == ino_of(s1, "d3/f20"));
        for (const char *const *p = (const char *const[]) { "d1/chg", "d1/same-size", "d1/mode", "d1/owner",
                                                           "d1/xattr", "d2/replaced", "d3/moved", "d3/hl", NULL };
             *p; p++) {
                bool differs = ino_of(s2, *p) != 0 && ino_of(s2, *p) != ino_of(s1, *p);

                if (!differs)
                        printf("# %s: the previous snapshot's inode\n", *p);
                CHECK(differs);
        }
        CHECK(ino_of(s2, "d3/hl") == ino_of(s2, "d1/hl2"));
        /* The previous snapshot as it was. */
        CHECK(run("grep -qx data '%s/d1/chg' && grep -qx same '%s/d1/same-size'", s1, s1) == 0);

        /*
         * A file moved from T to T/m while the walk is in T/a (before it,
         * by name): taken once, at T/m/z, not also as T/z from what a look
         * at T's files before T/a's walk said (bulk looks a run of files at
         * a time, just before they are taken).
         */
        {
                char n5[SNAPSHOT_NAME_MAX], s5[PATH_MAX * 2];
                SnapshotFacts h = {};

                CHECK(run("cd '%s' && mkdir -p T/a T/m && echo x > T/a/x && echo z > T/z && echo y > T/y && "
                          "echo m > T/m/m", src) == 0);
                next_tick();
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n5, &h) == 0);
                next_tick();
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr,
                                    &(SnapshotPre) { .dir_hook = mover, .dir_hook_userdata = src }, n5, &h) == 0);
                snprintf(s5, sizeof(s5), "%s/%s", store, n5);
                CHECK(moved && h.bulk > 0);
                CHECK(ino_of(s5, "T/m/z") != 0 && ino_of(s5, "T/z") == 0);
                /*
                 * The rest as the source, but for T's and T/m's times: a
                 * directory keeps the times it had when the walk came to it,
                 * before this move (and rsync's judge tells them apart once a
                 * second has turned in between).
                 */
                CHECK(same_tree_by("--omit-dir-times", src, s5));
        }

        /* The source the root of a mount of its own (a bind mount): nothing inside it, the bulk look as before. */
        {
                char vsrc[PATH_MAX + 16], vstore[PATH_MAX + 32], n4[SNAPSHOT_NAME_MAX];
                SnapshotFacts h = {};
                Job vjob;

                snprintf(vsrc, sizeof(vsrc), "%s/vmnt", base);
                snprintf(vstore, sizeof(vstore), "%s/.refsnap/v", vsrc);
                vjob = (Job) { .name = "v", .source = vsrc, .store = vstore };
                CHECK(run("mkdir -p '%s/vol/.refsnap' '%s' && cd '%s/vol' && for d in 1 2; do mkdir d$d; "
                          "for i in $(seq 30); do echo $d.$i > d$d/f$i; done; done && mount --bind '%s/vol' '%s'",
                          mnt, vsrc, mnt, mnt, vsrc) == 0);
                next_tick();
                CHECK(snapshot_take(&vjob, &clone_double_ops, NULL, stderr, NULL, n4, &h) == 0 && !h.incremental);
                CHECK(run("echo again >> '%s/d1/f1'", vsrc) == 0);
                next_tick();
                CHECK(snapshot_take(&vjob, &clone_double_ops, NULL, stderr, NULL, n4, &h) == 0);
                CHECK(h.incremental && h.bulk >= 29 && h.reused == 59);
                CHECK(run("umount '%s'", vsrc) == 0);
        }

        /* Something mounted in the source: no bulk look, every file looked at by name. */
        CHECK(run("mkdir '%s/mnt' && mount -t tmpfs none '%s/mnt'", src, src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n3, &g) == 0);
        snprintf(s3, sizeof(s3), "%s/%s", store, n3);
        CHECK(g.incremental && g.bulk == 0 && g.reused >= 60);
        CHECK(ino_of(s3, "d1/f1") == ino_of(s1, "d1/f1"));
        CHECK(run("umount '%s/mnt'", src) == 0);
}

int main(void) {
        char mnt[PATH_MAX];

        if (geteuid() != 0) {
                SKIP("an XFS of its own needs root");
                return tests_end();
        }
        /* Never make the host's kernel load a module for a test (as test-qgroup). */
        if (!fs_and_loop_here("xfs")) {
                SKIP("XFS or the loop driver not in this kernel already");
                return tests_end();
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                SKIP("no mount namespace of our own");
                return tests_end();
        }
        if (!mkdtemp(base))
                return 2;
        snprintf(mnt, sizeof(mnt), "%s/mnt", base);
        if (run("cd '%s' && mkdir mnt && truncate -s 512M img && mkfs.xfs -q -f -m reflink=1 img >/dev/null 2>&1 && "
                "mount -o loop img mnt 2>/dev/null", base) != 0) {
                SKIP("no loop-mounted XFS here");
                run("rm -rf '%s'", base);
                return tests_end();
        }
        test_bulkstat(mnt);
        test_incremental(mnt);
        run("umount -l '%s/mnt'; rm -rf '%s'", base, base);
        return tests_end();
}
