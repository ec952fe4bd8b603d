/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Snapshots into a store on btrfs (a loop device, in a mount namespace of
 * the test's own; only where btrfs and the loop driver are in the kernel
 * already and we are root), the clone step the copying test double: each
 * new snapshot is a read-only subvolume, unwritable even by root; an old
 * plain-directory snapshot is adopted (listed, pruned); a prune destroys
 * the subvolume; a stale .partial- or .removing- subvolume, read-only, is
 * destroyed at the next run; a failed snapshot leaves no subvolume.  An
 * incremental one is a writable snapshot of the previous subvolume
 * brought up to date in place (REUSE_INPLACE): after a change of each
 * kind it equals the source by rsync -aHAX --checksum, hard links exact,
 * the unchanged files kept (the previous snapshot's inode numbers), the
 * changed ones new, and the previous snapshot unchanged; one cancelled
 * half-way leaves its .partial- subvolume, which the next run destroys.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "clone-double.h"
#include "fd-util.h"
#include "macro.h"
#include "prune.h"
#include "purge.h"
#include "snapshot.h"
#include "strv.h"
#include "tests.h"
#include "tests-fs.h"

static char base[] = "/run/refsnap-test-snapshot-btrfs.XXXXXX";

static int failing_clone(int src, int dst_dir, const char *name, void *userdata) {
        return ++*(int *) userdata >= 2 ? -ENOSPC : clone_double(src, dst_dir, name, NULL);
}

/* The inode number of store/snap/path (0: none). */
static ino_t ino_of(int store, const char *snap, const char *path) {
        char p[PATH_MAX];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", snap, path);
        return fstatat(store, p, &st, AT_SYMLINK_NOFOLLOW) < 0 ? 0 : st.st_ino;
}

/* A stop asked (systemctl stop) while the first file is being made. */
static volatile sig_atomic_t stop;
static int stopping_clone(int src, int dst_dir, const char *name, void *userdata) {
        stop = 1;
        return clone_double(src, dst_dir, name, NULL);
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

/* The ID of subvolume name in store; 0 when it is none. */
static uint64_t subvol_id(int store, const char *name) {
        _cleanup_close_ int fd = openat(store, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        uint64_t id = 0;

        return fd >= 0 && btrfs_subvol_get_id(fd, &id) >= 0 ? id : 0;
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

/*
 * The filesystem vouches (vouch.h): after a full snapshot of 40
 * directories, a change in a few of them (one a write through a shared
 * mapping made before that snapshot, which fanotify never reports; one
 * in a subvolume inside the source, whose tree is not the source's);
 * the next snapshot walks fewer directories than the tree has, keeps the
 * rest as they were, and equals the source.  Something mounted in the
 * source: every directory compared.
 */
static void test_vouch(const char *mnt) {
        char src[PATH_MAX + 8], store_path[PATH_MAX + 32], s1[SNAPSHOT_NAME_MAX], s2[SNAPSHOT_NAME_MAX],
             s3[SNAPSHOT_NAME_MAX], s3full[SNAPSHOT_NAME_MAX], s4[SNAPSHOT_NAME_MAX], mpath[PATH_MAX + 32];
        _cleanup_close_ int store = -EBADF;
        SnapshotFacts f, g;
        Job job;
        char *map;
        int fd;

        snprintf(src, sizeof(src), "%s/v", mnt);
        snprintf(store_path, sizeof(store_path), "%s/.refsnap/v", mnt);
        job = (Job) { .name = "v", .source = src, .store = store_path };
        /*
         * The judge (rsync) reads every file: under relatime the first read
         * after a change moves its atime, an inode update like any other,
         * and the next snapshot would compare those directories (never a
         * miss, only work).
         */
        CHECK(run("mount -o remount,noatime '%s'", mnt) == 0);
        /* 40 directories of 12 files, names long enough to fill a few leaves each (4 KiB nodes). */
        CHECK(run("mkdir -p '%s' && cd '%s' && for i in $(seq -w 40); do mkdir d$i && for j in $(seq -w 12); do "
                  "echo \"$i $j\" > d$i/file-with-a-rather-long-name-$j; done; done && mkdir d05/sub d05/sub/deeper && "
                  "echo s > d05/sub/deeper/s && btrfs subvolume create sv >/dev/null && echo v > sv/f && "
                  "printf 'unmapped' > d23/mapped", src, src) == 0);
        snprintf(mpath, sizeof(mpath), "%s/d23/mapped", src);
        fd = open(mpath, O_RDWR | O_CLOEXEC);
        map = fd >= 0 ? mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
        CHECK(map != MAP_FAILED);
        if (map == MAP_FAILED)
                return;
        map[0] = 'U';   /* dirty at the snapshot's clone */
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s1, &f) == 0);
        store = open(store_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(store >= 0 && !f.incremental);

        /* Nothing changed: the root compared, and the directories next to the store's and the subvolume's. */
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s2, &g) == 0);
        printf("# nothing changed: %llu of %llu directories compared, %llu reused\n", (unsigned long long) g.compared,
               (unsigned long long) g.dirs, (unsigned long long) g.reused);
        CHECK(g.incremental && g.compared < g.dirs / 2 && g.reused == g.files);
        CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete v/ "
                  "'.refsnap/v/%s/' 2>&1)\"", mnt, s2) == 0);

        /*
         * A write through the mapping (no event of any watch), one in d31's
         * depth, one in the subvolume.  Files kept by their inode alone
         * (mirror.c: a file of one link the filesystem vouches for, in a
         * directory that changed): a name taken over by another file (its
         * old inode gone, no item of it left to say so), and a new link of
         * a file that was alone (only one of its names is asked of the
         * filesystem), each beside untouched files of its directory.
         */
        memcpy(map, "MAPPED!!", 8);
        CHECK(msync(map, 8, MS_SYNC) == 0);
        CHECK(run("cd '%s' && echo more >> d31/file-with-a-rather-long-name-07 && echo deeper >> d05/sub/deeper/s && "
                  "echo w >> sv/f && echo new > d12/new && "
                  "mv d07/file-with-a-rather-long-name-02 d07/file-with-a-rather-long-name-01 && "
                  "ln d08/file-with-a-rather-long-name-03 d09/a-new-link", src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s3, &g) == 0);
        printf("# four changes: %llu of %llu directories compared, %llu reused, %llu made\n",
               (unsigned long long) g.compared, (unsigned long long) g.dirs, (unsigned long long) g.reused,
               (unsigned long long) g.made);
        CHECK(g.incremental && g.compared < g.dirs / 2);
        CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete v/ "
                  "'.refsnap/v/%s/' 2>&1)\"", mnt, s3) == 0);
        CHECK(run("grep -q MAPPED '%s/%s/d23/mapped' && grep -q deeper '%s/%s/d05/sub/deeper/s' && "
                  "grep -q w '%s/%s/sv/f'", store_path, s3, store_path, s3, store_path, s3) == 0);
        CHECK(run("grep -qx '07 02' '%s/%s/d07/file-with-a-rather-long-name-01' && "
                  "test ! -e '%s/%s/d07/file-with-a-rather-long-name-02' && "
                  "grep -qx '07 03' '%s/%s/d07/file-with-a-rather-long-name-03'",
                  store_path, s3, store_path, s3, store_path, s3) == 0);
        CHECK(ino_of(store, s3, "d09/a-new-link") != 0 &&
              ino_of(store, s3, "d09/a-new-link") == ino_of(store, s3, "d08/file-with-a-rather-long-name-03"));
        CHECK(run("test \"$(stat -c %%h '%s/%s/d08/file-with-a-rather-long-name-03')\" = 2", store_path, s3) == 0);
        /* The one before as it was. */
        CHECK(run("grep -q '^U' '%s/%s/d23/mapped' && ! grep -q more '%s/%s/d31/file-with-a-rather-long-name-07'",
                  store_path, s2, store_path, s2) == 0);
        CHECK(run("grep -qx '07 01' '%s/%s/d07/file-with-a-rather-long-name-01'", store_path, s2) == 0);
        /*
         * The directories kept were not walked: their records, copied from
         * the previous manifest a block at a time, are byte for byte those
         * a full walk of the same tree writes, record by record (between
         * the header and the trailer, which say when and what was summed).
         */
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &(SnapshotPre) { .full = true }, s3full, &g) == 0);
        CHECK(!g.incremental && g.compared == 0);
        CHECK(run("cd '%s/.facts' && tail -c +65 '%s.manifest' | head -c -32 > '%s/m-vouched' && "
                  "tail -c +65 '%s.manifest' | head -c -32 > '%s/m-full' && test -s '%s/m-full' && "
                  "cmp '%s/m-vouched' '%s/m-full'", store_path, s3, base, s3full, base, base, base, base) == 0);
        munmap(map, 8);
        safe_close(fd);

        /* Something mounted in the source: no vouching, every directory compared. */
        CHECK(run("mount -t tmpfs none '%s/d40'", src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s4, &g) == 0);
        printf("# a mount in the source: %llu of %llu directories compared\n", (unsigned long long) g.compared,
               (unsigned long long) g.dirs);
        CHECK(g.incremental && g.compared + 1 >= g.dirs);
        CHECK(run("umount '%s/d40'", src) == 0);
        /*
         * The source the root of a mount of its own (a bind mount, as a
         * job's source often is): nothing mounted inside it, so the
         * filesystem vouches (mounts_inside_fd(), not mounts_below_fd()).
         */
        {
                char vsrc[PATH_MAX + 16], vstore[PATH_MAX + 32], s5[SNAPSHOT_NAME_MAX];
                Job vjob;

                snprintf(vsrc, sizeof(vsrc), "%s/vmnt", base);
                snprintf(vstore, sizeof(vstore), "%s/.refsnap/v", vsrc);
                vjob = (Job) { .name = "v", .source = vsrc, .store = vstore };
                CHECK(run("mkdir -p '%s/vol/.refsnap' '%s' && cd '%s/vol' && for d in $(seq 10); do mkdir d$d; "
                          "for i in 1 2 3; do echo $d.$i > d$d/f$i; done; done && mount --bind '%s/vol' '%s'",
                          mnt, vsrc, mnt, mnt, vsrc) == 0);
                next_tick();
                CHECK(snapshot_take(&vjob, &clone_double_ops, NULL, stderr, NULL, s5, &g) == 0 && !g.incremental);
                CHECK(run("echo again >> '%s/d1/f1'", vsrc) == 0);
                next_tick();
                CHECK(snapshot_take(&vjob, &clone_double_ops, NULL, stderr, NULL, s5, &g) == 0);
                printf("# the source a mount's root: %llu of %llu directories compared\n",
                       (unsigned long long) g.compared, (unsigned long long) g.dirs);
                CHECK(g.incremental && g.compared < g.dirs / 2);
                CHECK(run("umount '%s'", vsrc) == 0);
        }

        /*
         * A tree of directories and a symbolic link, no regular file:
         * the next snapshot is made from the previous subvolume, so it is
         * incremental though it reused no file (and full_every must not
         * count it as a full one; review-incr LOW 10).
         */
        {
                char src2[PATH_MAX + 8], store2[PATH_MAX + 32], a[SNAPSHOT_NAME_MAX], b[SNAPSHOT_NAME_MAX];
                Job job2;

                snprintf(src2, sizeof(src2), "%s/nofiles", mnt);
                snprintf(store2, sizeof(store2), "%s/.refsnap/nofiles", mnt);
                job2 = (Job) { .name = "nofiles", .source = src2, .store = store2 };
                CHECK(run("mkdir -p '%s/x/y' && ln -s x '%s/l'", src2, src2) == 0);
                next_tick();
                CHECK(snapshot_take(&job2, &clone_double_ops, NULL, stderr, NULL, a, &f) == 0 && !f.incremental);
                next_tick();
                CHECK(snapshot_take(&job2, &clone_double_ops, NULL, stderr, NULL, b, &g) == 0);
                CHECK(g.incremental && g.reused == 0);
        }
}

/*
 * What a name in the source names can change without the directory at
 * that path changing in the filesystem's tree, and the next snapshot must
 * take what the name names now (review-int10 HIGH 1):
 * - a plain directory replaced by a new subvolume of the same name
 *   (renamed away, or removed, first), at the top and one level down (the
 *   holder's holder is in the set, the path itself never is), or by an
 *   existing subvolume renamed into place;
 * - in such a new subvolume, a file whose inode number (they restart at
 *   257 there) is that of the old directory's file of the same name, the
 *   old directory holding a file of two links (so it is walked, not
 *   kept whole, and its records are compared with the new subvolume's);
 * - two directories swapped by renames (nothing but their own and their
 *   parent's inodes rewritten): the directories below them unchanged as
 *   inodes, but now at each other's paths;
 * - the same one level up: the source's own root replaced by renames of
 *   the directories above it, the new root unchanged itself.
 * After each, the snapshot equals the source (rsync -aHAX --checksum)
 * and holds the new content.
 */
static void test_vouch_swaps(const char *mnt) {
        char src[PATH_MAX + 8], store_path[PATH_MAX + 32], s1[SNAPSHOT_NAME_MAX], s2[SNAPSHOT_NAME_MAX],
             s3[SNAPSHOT_NAME_MAX];
        SnapshotFacts f, g;
        Job job;

        snprintf(src, sizeof(src), "%s/w", mnt);
        snprintf(store_path, sizeof(store_path), "%s/.refsnap/w", mnt);
        job = (Job) { .name = "w", .source = src, .store = store_path };
        CHECK(run("mount -o remount,noatime '%s'", mnt) == 0);
        /*
         * The source a subvolume of its own, so its inode numbers are
         * known: h is 257, h/x 258 (the first inodes made); h/l1 and h/l2
         * one file of two links.
         */
        CHECK(run("mkdir -p '%s/.refsnap' && btrfs subvolume create '%s' >/dev/null && cd '%s' && "
                  "mkdir h && echo old-x > h/x && echo l > h/l1 && ln h/l1 h/l2 && "
                  "for i in $(seq -w 12); do mkdir d$i && for j in $(seq -w 12); do "
                  "echo \"$i $j\" > d$i/file-with-a-rather-long-name-$j; done; done && "
                  "mkdir -p p/d p/e && echo p-old > p/d/f && echo e > p/e/f && "
                  "btrfs subvolume create sv >/dev/null && echo in-sv > sv/f && "
                  "test \"$(stat -c %%i h/x)\" = 258", mnt, src, src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s1, &f) == 0 && !f.incremental);

        CHECK(run("cd '%s' && "
                  "mv d10 d10.old && btrfs subvolume create d10 >/dev/null && cp -a d10.old/. d10/ && "
                  "echo NEW > d10/file-with-a-rather-long-name-01 && mkdir d10/brand-new && echo X > d10/brand-new/x && "
                  "rm -r d11 && btrfs subvolume create d11 >/dev/null && echo fresh > d11/f && "
                  "rm -r d12 && mv sv d12 && "
                  "mv p/d p/d.old && btrfs subvolume create p/d >/dev/null && echo p-new > p/d/f && "
                  "mv h h.old && btrfs subvolume create h >/dev/null && echo first > h/aaa && echo new-x > h/x && "
                  "test \"$(stat -c %%i h/x)\" = 258", src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s2, &g) == 0);
        printf("# swaps: incremental=%d, %llu of %llu directories compared, %llu reused\n", g.incremental,
               (unsigned long long) g.compared, (unsigned long long) g.dirs, (unsigned long long) g.reused);
        CHECK(g.incremental);
        CHECK(run("cd '%s/%s' && grep -qx NEW d10/file-with-a-rather-long-name-01 && test -e d10/brand-new/x",
                  store_path, s2) == 0);
        CHECK(run("cd '%s/%s' && grep -qx fresh d11/f && test ! -e d11/file-with-a-rather-long-name-01",
                  store_path, s2) == 0);
        CHECK(run("cd '%s/%s' && grep -qx in-sv d12/f && test ! -e d12/file-with-a-rather-long-name-01",
                  store_path, s2) == 0);
        CHECK(run("grep -qx p-new '%s/%s/p/d/f'", store_path, s2) == 0);
        CHECK(run("grep -qx new-x '%s/%s/h/x'", store_path, s2) == 0);
        CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete w/ "
                  "'.refsnap/w/%s/' 2>&1)\"", mnt, s2) == 0);

        /* Once more, nothing changed: what the last one took is kept as it is. */
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s3, &g) == 0);
        CHECK(g.incremental);
        CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete w/ "
                  "'.refsnap/w/%s/' 2>&1)\"", mnt, s3) == 0);

        /*
         * Two directories swapped by renames: sw/a/c is then what sw/b/c
         * was, and sw/a/c/e too, all below a and b unchanged as inodes.  a
         * and b made long before what is in them: their renames rewrite
         * the leaves of their own items, not those of the directories
         * below them (btrfs_changed_inodes() would report those too,
         * unchanged, and nothing there would be kept by its path).
         */
        {
                char src2[PATH_MAX + 16], store2[PATH_MAX + 32], a[SNAPSHOT_NAME_MAX], b[SNAPSHOT_NAME_MAX];
                Job job2;

                snprintf(src2, sizeof(src2), "%s/sw", mnt);
                snprintf(store2, sizeof(store2), "%s/.refsnap/sw", mnt);
                job2 = (Job) { .name = "sw", .source = src2, .store = store2 };
                CHECK(run("btrfs subvolume create '%s' >/dev/null && cd '%s' && mkdir a b && mkdir filler && "
                          "for i in $(seq 200); do echo $i > filler/file-with-a-rather-long-name-$i; done && "
                          "mkdir -p a/c/e b/c/e && echo in-a > a/c/e/f && echo in-b > b/c/e/f", src2, src2) == 0);
                next_tick();
                CHECK(snapshot_take(&job2, &clone_double_ops, NULL, stderr, NULL, a, &f) == 0 && !f.incremental);
                CHECK(run("cd '%s' && mv a t && mv b a && mv t b", src2) == 0);
                next_tick();
                CHECK(snapshot_take(&job2, &clone_double_ops, NULL, stderr, NULL, b, &g) == 0 && g.incremental);
                CHECK(run("grep -qx in-b '%s/%s/a/c/e/f' && grep -qx in-a '%s/%s/b/c/e/f'", store2, b, store2, b) == 0);
                CHECK(run("test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete '%s/' '%s/%s/' 2>&1)\"",
                          src2, store2, b) == 0);
        }

        /* The source's root replaced by renames above it: anc/a/src is then what anc/b/src was. */
        {
                char src2[PATH_MAX + 16], store2[PATH_MAX + 32], a[SNAPSHOT_NAME_MAX], b[SNAPSHOT_NAME_MAX];
                Job job2;

                snprintf(src2, sizeof(src2), "%s/anc/a/src", mnt);
                snprintf(store2, sizeof(store2), "%s/.refsnap/anc", mnt);
                job2 = (Job) { .name = "anc", .source = src2, .store = store2 };
                CHECK(run("cd '%s' && btrfs subvolume create anc >/dev/null && "
                          "mkdir -p anc/a/src/d/e anc/b/src/d/e && echo in-a > anc/a/src/d/e/f && "
                          "echo in-b > anc/b/src/d/e/f", mnt) == 0);
                next_tick();
                CHECK(snapshot_take(&job2, &clone_double_ops, NULL, stderr, NULL, a, &f) == 0 && !f.incremental);
                CHECK(run("cd '%s/anc' && mv a t && mv b a && mv t b", mnt) == 0);
                next_tick();
                CHECK(snapshot_take(&job2, &clone_double_ops, NULL, stderr, NULL, b, &g) == 0 && g.incremental);
                CHECK(run("grep -qx in-b '%s/%s/d/e/f'", store2, b) == 0);
                CHECK(run("test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete '%s/' '%s/%s/' 2>&1)\"",
                          src2, store2, b) == 0);
        }
}

/* st_mtim of store/snap/path (0 when missing). */
static time_t mtime_of(int store, const char *snap, const char *path) {
        char p[PATH_MAX];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", snap, path);
        return fstatat(store, p, &st, AT_SYMLINK_NOFOLLOW) < 0 ? 0 : st.st_mtim.tv_sec;
}

/*
 * refsnapctl purge on subvolume snapshots (purge.h): three snapshots,
 * the second and third made from the one before in place; a file purged
 * from all three (the pinned one too) is gone, each is still a read-only
 * subvolume with every other file (the same inode numbers, the holding
 * directory's mtime), no subvolume is left over, and the next snapshot
 * (full: the manifests went) holds the file still in the source again; a
 * .purging- subvolume an interrupted purge left is destroyed by the next.
 */
static void test_purge(const char *mnt) {
        char src[PATH_MAX + 8], store_path[PATH_MAX + 32], s[3][SNAPSHOT_NAME_MAX], s4[SNAPSHOT_NAME_MAX];
        _cleanup_close_ int store = -EBADF;
        char **names = NULL;
        ino_t keep[3], secret;
        time_t dtime[3];
        SnapshotFacts f;
        int subvols;
        Job job;

        snprintf(src, sizeof(src), "%s/p", mnt);
        snprintf(store_path, sizeof(store_path), "%s/.refsnap/p", mnt);
        job = (Job) { .name = "p", .source = src, .store = store_path };
        CHECK(run("mkdir -p '%s/d' && cd '%s' && echo secret > d/secret && echo keep > keep && echo other > d/other && "
                  "touch -d '2020-01-01 00:00:00' d", src, src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s[0], &f) == 0);
        CHECK(run("echo more >> '%s/keep'", src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s[1], &f) == 0);
        CHECK(f.incremental);
        CHECK(run("echo more >> '%s/d/other' && touch -d '2020-01-02 00:00:00' '%s/d'", src, src) == 0);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s[2], &f) == 0);
        CHECK(f.incremental);
        store = open(store_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(store >= 0);
        CHECK(store_set_pinned(store, s[2], true) == 1);
        secret = ino_of(store, s[0], "d/secret");
        CHECK(secret != 0 && ino_of(store, s[2], "d/secret") == secret);        /* kept in place */
        for (int i = 0; i < 3; i++) {
                keep[i] = ino_of(store, s[i], "keep");
                dtime[i] = mtime_of(store, s[i], "d");
                CHECK(read_only_subvol(store, s[i]));
        }
        subvols = count_subvols(mnt);

        /* An interrupted purge left a subvolume of its own: the next purge destroys it. */
        CHECK(run("cd '%s' && btrfs subvolume snapshot -r '%s' '.purging-%s' >/dev/null", store_path, s[0], s[0]) == 0);
        CHECK(count_subvols(mnt) == subvols + 1);

        CHECK(snapshot_purge(store, "p", "d/secret", false, NULL, &names) == 3);
        CHECK(names && names[0] && names[1] && names[2] && !names[3]);
        names = strv_free(names);
        for (int i = 0; i < 3; i++) {
                char p[SNAPSHOT_NAME_MAX + 16];

                snprintf(p, sizeof(p), "%s/d/secret", s[i]);
                CHECK(!exists(store, p));
                CHECK(read_only_subvol(store, s[i]));
                CHECK(ino_of(store, s[i], "keep") == keep[i]);
                CHECK(ino_of(store, s[i], "d/other") != 0);
                CHECK(mtime_of(store, s[i], "d") == dtime[i]);
        }
        CHECK(count_subvols(mnt) == subvols);
        CHECK(!exists(store, ".purge"));
        CHECK(run("! ls -a '%s' | grep -q '^\\.purging-\\|^\\.removing-'", store_path) == 0);
        CHECK(store_is_pinned(store, s[2]) == 1);
        CHECK(snapshot_purge(store, "p", "d/secret", false, NULL, NULL) == -ENOENT);

        /* The next snapshot: full, the file there again as the source has it (the lock went with the descriptor). */
        store = safe_close(store);
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s4, &f) == 0);
        CHECK(!f.incremental);
        store = open(store_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(read_only_subvol(store, s4));
        CHECK(run("cd '%s' && diff -r '%s' '.refsnap/p/%s'", mnt, src, s4) == 0);
}

typedef struct InoList {
        uint64_t inos[4096];
        size_t n;
} InoList;

static int collect_ino(uint64_t ino, void *userdata) {
        InoList *l = userdata;

        if (l->n < ELEMENTSOF(l->inos))
                l->inos[l->n++] = ino;
        return 0;
}

static bool listed_ino(const InoList *l, uint64_t ino) {
        for (size_t i = 0; i < l->n; i++)
                if (l->inos[i] == ino)
                        return true;
        return false;
}

/*
 * btrfs_changed_inodes(): each inode changed since a commit is reported,
 * whatever the change (data, mode, an xattr, a new link, mtime alone, a
 * write through a shared mapping); its untouched neighbours, whose items
 * share its leaves, are not (their inode items say they were last
 * written before).
 */
static void test_changed_inodes(const char *mnt) {
        char dir[PATH_MAX + 8], path[PATH_MAX + 64];
        _cleanup_close_ int fd = -EBADF;
        InoList l = {};
        uint64_t gen = 0, ino[13] = {}, gino[7] = {};
        struct stat st;
        char *map;
        int mfd;

        snprintf(dir, sizeof(dir), "%s/ci", mnt);
        /*
         * And the changes review-int10 LOW 13 named, each of a file of its
         * own: g1 and g2 exchanged (RENAME_EXCHANGE), an xattr removed
         * (g3), a hole punched (g4), a range cloned into it (g5, from
         * gsrc), a No_COW file overwritten with O_DIRECT (g6).
         */
        CHECK(run("mkdir '%s' && cd '%s' && for i in $(seq 12); do echo $i > f$i; done && "
                  "echo g1 > g1 && echo g2 > g2 && echo g3 > g3 && setfattr -n user.y -v 1 g3 && "
                  "for g in g4 g5 gsrc; do dd if=/dev/urandom of=$g bs=64k count=1 status=none; done && "
                  "touch g6 && chattr +C g6 && dd if=/dev/urandom of=g6 bs=64k count=1 status=none && sync",
                  dir, dir) == 0);
        for (int i = 1; i <= 12; i++) {
                snprintf(path, sizeof(path), "%s/f%d", dir, i);
                CHECK(stat(path, &st) == 0);
                ino[i] = st.st_ino;
        }
        for (int i = 1; i <= 6; i++) {
                snprintf(path, sizeof(path), "%s/g%d", dir, i);
                CHECK(stat(path, &st) == 0);
                gino[i] = st.st_ino;
        }
        snprintf(path, sizeof(path), "%s/f6", dir);
        mfd = open(path, O_RDWR | O_CLOEXEC);
        map = mfd >= 0 ? mmap(NULL, 2, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0) : MAP_FAILED;
        CHECK(map != MAP_FAILED);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0 && btrfs_commit(fd, &gen) == 0);
        CHECK(run("cd '%s' && echo more >> f1 && chmod 0600 f2 && setfattr -n user.x -v 1 f3 && ln f4 f4b && "
                  "touch -m -d @86400 f5", dir) == 0);
        CHECK(renameat2(fd, "g1", fd, "g2", RENAME_EXCHANGE) == 0);
        CHECK(run("cd '%s' && setfattr -x user.y g3 && fallocate -p -o 4096 -l 4096 g4 && "
                  "dd if=/dev/urandom of=g6 bs=4096 count=1 oflag=direct conv=notrunc status=none", dir) == 0);
        {
                _cleanup_close_ int a = openat(fd, "gsrc", O_RDONLY | O_CLOEXEC), b = openat(fd, "g5", O_WRONLY | O_CLOEXEC);

                CHECK(a >= 0 && b >= 0 &&
                      ioctl(b, FICLONERANGE, &(struct file_clone_range) {
                                .src_fd = a, .src_offset = 8192, .src_length = 4096, .dest_offset = 8192 }) == 0);
        }
        if (map != MAP_FAILED) {
                map[0] = 'M';
                munmap(map, 2);
        }
        safe_close(mfd);
        CHECK(btrfs_commit(fd, &(uint64_t) { 0 }) == 0);
        CHECK(btrfs_changed_inodes(fd, gen + 1, collect_ino, &l) == 0);
        for (int i = 1; i <= 6; i++)
                CHECK(listed_ino(&l, ino[i]));
        for (int i = 7; i <= 12; i++)
                CHECK(!listed_ino(&l, ino[i]));
        for (int i = 1; i <= 6; i++)
                CHECK(listed_ino(&l, gino[i]));
        printf("# %zu inodes reported after 12 of 19 files changed\n", l.n);
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
        if (!fs_and_loop_here("btrfs")) {
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
        if (run("cd '%s' && mkdir mnt && truncate -s 128M img && mkfs.btrfs -q -f -n 4096 img >/dev/null 2>&1 && "
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

                /* A full one, so that files are made (an incremental one would keep them all). */
                CHECK(snapshot_take(&job, &failing, NULL, stderr, &(SnapshotPre) { .full = true }, name3, &f) ==
                      -ENOSPC);
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

        /*
         * Incremental, in place.  A tree with a change of each kind to
         * come; the first snapshot is full, the next ones incremental.
         */
        {
                char *exclude[] = { (char *) "*.tmp", NULL };
                char s1[SNAPSHOT_NAME_MAX], s2[SNAPSHOT_NAME_MAX];
                SnapshotFacts g;
                ino_t keep, chg, h1;

                /* From an empty store: no name freed by the prune above taken again within its second. */
                CHECK(store_retire(store, name2) == 0 && store_remove_retired(store, NULL) == 0);
                CHECK(count_snapshots(store) == 0 && count_subvols(mnt) == 0);
                job.exclude = exclude;
                job.retention = (RetentionPolicy) {};
                CHECK(run("cd '%s/src' && mkdir keep chg rm dir2file d-x && "
                          "for i in 1 2 3 4 5; do echo $i > keep/k$i; done && echo c > chg/c1 && echo r > rm/r1 && "
                          "echo in > dir2file/f && echo f > file2dir && echo x > xa && setfattr -n user.a -v 1 xa && "
                          "setfattr -n user.d -v 1 d-x && ln -s x sym && mkfifo fifo && echo h > h1 && ln h1 h2 && "
                          "echo t > old.tmp && mkdir hl hm hz && echo g > hl/a && ln hl/a hm/b && echo z > hz/a && ln hz/a hm/z && "
                          "cp -a . '%s/ref1'", mnt, base) == 0);
                next_tick();
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s1, &f) == 0);
                CHECK(!f.incremental && read_only_subvol(store, s1));
                keep = ino_of(store, s1, "keep/k1");
                chg = ino_of(store, s1, "chg/c1");
                h1 = ino_of(store, s1, "h1");
                CHECK(run("cd '%s/src' && echo more >> chg/c1 && rm rm/r1 && rm -r dir2file && echo now > dir2file && "
                          "rm file2dir && mkdir file2dir && echo in > file2dir/g && setfattr -x user.a xa && "
                          "setfattr -x user.d d-x && chmod 0700 keep && ln -sfn y sym && echo n > new1 && "
                          "ln h1 h3 && echo t > junk.tmp && setfacl -m u:3000:r keep/k2 && "
                          /* A directory renamed: its hard link members at new paths, walked before and after the kept ones. */
                          "mkdir ha hzz && mv hm/b ha/b && mv hm/z hzz/z && rmdir hm", mnt) == 0);
                next_tick();
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s2, &g) == 0);
                CHECK(g.incremental);
                printf("# incremental in place: %llu reused, %llu made, %llu directories compared\n",
                       (unsigned long long) g.reused, (unsigned long long) g.made, (unsigned long long) g.compared);
                CHECK(g.reused >= 4);
                CHECK(read_only_subvol(store, s2));
                /*
                 * Made as the snapshot of s1 at once, not first as an empty
                 * subvolume destroyed again (a commit and a deletion for
                 * nothing): the next subvolume ID, none used in between.
                 */
                CHECK(subvol_id(store, s1) != 0 && subvol_id(store, s2) == subvol_id(store, s1) + 1);
                /* Equal to the source by rsync; the previous snapshot equal to the source as it was. */
                CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete "
                          "--exclude='*.tmp' src/ '.refsnap/job/%s/' 2>&1)\"", mnt, s2) == 0);
                CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete "
                          "--exclude='*.tmp' '%s/ref1/' '.refsnap/job/%s/' 2>&1)\"", mnt, base, s1) == 0);
                CHECK(!exists(store, "junk.tmp") && run("test ! -e '%s/%s/junk.tmp'", store_path, s2) == 0);
                /* Kept: the previous snapshot's inode (its copy in the new subvolume); changed: a new one. */
                CHECK(keep != 0 && ino_of(store, s2, "keep/k1") == keep);
                CHECK(chg != 0 && ino_of(store, s2, "chg/c1") != chg);
                /* A hard link group that changed (a new link): made anew, linked whole. */
                CHECK(ino_of(store, s2, "h1") != h1 && ino_of(store, s2, "h2") == ino_of(store, s2, "h1") &&
                      ino_of(store, s2, "h3") == ino_of(store, s2, "h1"));
                CHECK(run("test \"$(stat -c %%h '%s/%s/h1')\" = 3", store_path, s2) == 0);
                /* Moved members linked to their kept or remade partners: hard links exact. */
                CHECK(ino_of(store, s2, "ha/b") == ino_of(store, s2, "hl/a"));
                CHECK(ino_of(store, s2, "hzz/z") == ino_of(store, s2, "hz/a"));
                /* A third one with nothing changed: everything kept. */
                next_tick();
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, name, &g) == 0);
                CHECK(g.incremental && g.reused == g.files && g.made == 0);
                CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete "
                          "--exclude='*.tmp' src/ '.refsnap/job/%s/' 2>&1)\"", mnt, name) == 0);
                CHECK(ino_of(store, name, "h3") == ino_of(store, s2, "h3"));
                CHECK(count_subvols(mnt) == 3);

                /*
                 * Cancelled in the middle of an update in place: the
                 * .partial- subvolume (a snapshot of the previous one, half
                 * brought up to date) is left, the previous one untouched;
                 * the next run destroys it and is whole.
                 */
                {
                        MirrorOps stopping = { .clone = stopping_clone };
                        char s4[SNAPSHOT_NAME_MAX], partial[SNAPSHOT_NAME_MAX + 16];

                        /* The previous one as it is, to judge it by afterwards. */
                        CHECK(run("cd '%s' && cp -a '%s/.refsnap/job/%s' ref3", base, mnt, name) == 0);
                        CHECK(run("cd '%s/src' && echo again >> chg/c1 && echo again >> keep/k3 && rm -r hz",
                                  mnt) == 0);
                        next_tick();
                        CHECK(snapshot_take(&job, &stopping, &stop, stderr, NULL, s4, &g) == -ECANCELED);
                        snprintf(partial, sizeof(partial), ".partial-%s", s4);
                        CHECK(btrfs_is_subvol_at(store, partial) == 1 && count_subvols(mnt) == 4);
                        CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete "
                                  "ref3/ '%s/.refsnap/job/%s/' 2>&1)\"", base, mnt, name) == 0);
                        stop = 0;
                        next_tick();
                        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, s4, &g) == 0);
                        CHECK(g.incremental && !exists(store, partial) && count_subvols(mnt) == 4);
                        CHECK(run("cd '%s' && test -z \"$(rsync -aHAXn --checksum --itemize-changes --delete "
                                  "--exclude='*.tmp' src/ '.refsnap/job/%s/' 2>&1)\"", mnt, s4) == 0);
                }
        }

        store = safe_close(store);
        test_changed_inodes(mnt);
        test_vouch(mnt);
        test_purge(mnt);
        test_vouch_swaps(mnt);
        run("umount '%s/mnt'; rm -rf '%s'", base, base);
        return tests_end();
}
