/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * btrfs-util and rm_rf_or_subvol_at(): on a filesystem that is not btrfs
 * (the answers "no", -ENOTTY, and a plain removal), and, where btrfs and
 * the loop driver are in the kernel already and we are root, on a
 * loop-mounted btrfs in a mount namespace of the test's own: a subvolume
 * made, snapshotted read-only (unwritable even by root: -EROFS), renamed
 * within its parent, destroyed by name whole and read-only, by ID; never
 * a plain directory, a symbolic link to a subvolume, a subvolume below a
 * direct child, or a name with a slash; and one with a mount inside is
 * left (-EXDEV).
 */
#include <errno.h>
#include <linux/btrfs_tree.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "fd-util.h"
#include "macro.h"
#include "rm-rf.h"
#include "tests.h"
#include "tests-fs.h"

static bool exists(int dir, const char *name) {
        struct stat st;

        return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int open_dir(int dir, const char *name) {
        return openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

typedef struct Seen {
        unsigned n, stop_after;
        uint64_t objectid, type;
} Seen;

static int on_item(const struct btrfs_ioctl_search_header *h, const void *data, void *userdata) {
        Seen *s = userdata;

        s->objectid = h->objectid;
        s->type = h->type;
        return ++s->n == s->stop_after;
}

/* btrfs_tree_search(): another tree than fd's, a range of one key, and fn stopping it. */
static void test_tree_search(int fd) {
        struct btrfs_ioctl_search_key root_inode = {
                .min_objectid = BTRFS_FIRST_FREE_OBJECTID,
                .max_objectid = BTRFS_FIRST_FREE_OBJECTID,
                .min_type = BTRFS_INODE_ITEM_KEY,
                .max_type = BTRFS_INODE_ITEM_KEY,
                .max_offset = UINT64_MAX,
                .max_transid = UINT64_MAX,
        }, everything = {
                .max_objectid = UINT64_MAX,
                .max_type = UINT8_MAX,
                .max_offset = UINT64_MAX,
                .max_transid = UINT64_MAX,
        };
        Seen s = {};

        CHECK(btrfs_tree_search(fd, BTRFS_FS_TREE_OBJECTID, &root_inode, on_item, &s) == 0);
        CHECK(s.n == 1 && s.objectid == BTRFS_FIRST_FREE_OBJECTID && s.type == BTRFS_INODE_ITEM_KEY);
        s = (Seen) {};
        CHECK(btrfs_tree_search(fd, 0, &everything, on_item, &s) == 0);
        printf("# %u items in the top level's tree\n", s.n);
        CHECK(s.n > 3);
        s = (Seen) { .stop_after = 3 };
        CHECK(btrfs_tree_search(fd, 0, &everything, on_item, &s) == 0 && s.n == 3);
}

static void test_not_btrfs(void) {
        char tmp[] = "/tmp/refsnap-test-btrfs-util.XXXXXX";
        _cleanup_close_ int fd = -EBADF, sub = -EBADF;
        uint64_t id;

        if (!mkdtemp(tmp)) {
                printf("Bail out! mkdtemp: %s\n", strerror(errno));
                exit(1);
        }
        fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0);
        if (fd_is_btrfs(fd) > 0) {
                SKIP("/tmp is on btrfs: the other filesystem's answers are not asked here");
                run("rm -rf '%s'", tmp);
                return;
        }
        CHECK(mkdirat(fd, "d", 0755) == 0 && mkdirat(fd, "d/e", 0755) == 0);
        CHECK(fd_is_btrfs(fd) == 0);
        CHECK(btrfs_is_subvol_fd(fd) == 0);
        CHECK(btrfs_is_subvol_at(fd, "d") == 0);
        CHECK(btrfs_is_subvol_at(fd, "missing") == -ENOENT);
        CHECK(btrfs_is_subvol_at(fd, "d/e") == -EINVAL);
        CHECK(btrfs_is_subvol_at(fd, "..") == -EINVAL);
        CHECK(btrfs_subvol_make(fd, "s") == -ENOTTY && !exists(fd, "s"));
        sub = open_dir(fd, "d");
        CHECK(btrfs_subvol_snapshot(sub, fd, "snap", true) == -ENOTTY && !exists(fd, "snap"));
        CHECK(btrfs_subvol_get_read_only(sub) == -ENOTTY);
        CHECK(btrfs_subvol_set_read_only(sub, true) == -ENOTTY);
        CHECK(btrfs_subvol_get_id(sub, &id) == -ENOTTY);
        /* Not a subvolume: never asked to destroy it. */
        CHECK(btrfs_subvol_destroy(fd, "d") == -ENOTTY && exists(fd, "d/e"));
        CHECK(btrfs_subvol_destroy(fd, "d/e") == -EINVAL && exists(fd, "d/e"));
        /* A plain tree: removed as rm_rf_at() does. */
        CHECK(rm_rf_or_subvol_at(fd, "d", NULL) == 0 && !exists(fd, "d"));
        CHECK(rm_rf_or_subvol_at(fd, "d", NULL) == 0);
        CHECK(rm_rf_or_subvol_at(fd, "a/b", NULL) == -EINVAL);
        run("rm -rf '%s'", tmp);
}

static bool leftover(const char *name, void *userdata) {
        return strncmp(name, ".partial-", 9) == 0;
}

static void test_btrfs(void) {
        char base[] = "/run/refsnap-test-btrfs-util.XXXXXX", mnt[PATH_MAX];
        _cleanup_close_ int fd = -EBADF, sv = -EBADF, ro = -EBADF, f = -EBADF;
        uint64_t id = 0, id2 = 0;

        if (geteuid() != 0) {
                SKIP("a btrfs of its own needs root");
                return;
        }
        /* Never make the host's kernel load a module for a test (as test-qgroup). */
        if (!fs_and_loop_here("btrfs")) {
                SKIP("btrfs or the loop driver not in this kernel already");
                return;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                SKIP("no mount namespace of our own");
                return;
        }
        if (!mkdtemp(base))
                exit(2);
        snprintf(mnt, sizeof(mnt), "%s/mnt", base);
        if (run("cd '%s' && mkdir mnt && truncate -s 128M img && mkfs.btrfs -q -f img >/dev/null 2>&1 && "
                "mount -o loop img mnt 2>/dev/null", base) != 0) {
                SKIP("no loop-mounted btrfs here");
                run("rm -rf '%s'", base);
                return;
        }
        fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK(fd_is_btrfs(fd) == 1);
        /* The top level is a subvolume (5) too. */
        CHECK(btrfs_is_subvol_fd(fd) == 1);

        /* Made, filled, seen as one; a plain directory beside it is not. */
        CHECK(btrfs_subvol_make(fd, "sv") == 0);
        CHECK(btrfs_subvol_make(fd, "sv") == -EEXIST);
        CHECK(mkdirat(fd, "plain", 0755) == 0);
        CHECK(btrfs_is_subvol_at(fd, "sv") == 1);
        CHECK(btrfs_is_subvol_at(fd, "plain") == 0);
        sv = open_dir(fd, "sv");
        CHECK(sv >= 0);
        CHECK(btrfs_is_subvol_fd(sv) == 1);
        CHECK(mkdirat(sv, "dir", 0755) == 0);
        f = openat(sv, "dir/file", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        CHECK(f >= 0 && write(f, "data\n", 5) == 5);
        f = safe_close(f);
        CHECK(btrfs_subvol_get_read_only(sv) == 0);
        CHECK(btrfs_subvol_get_id(sv, &id) == 0 && id >= 256);

        /* A read-only snapshot: the same files, written by nobody, root included. */
        CHECK(btrfs_subvol_snapshot(sv, fd, ".partial-snap", true) == 0);
        ro = open_dir(fd, ".partial-snap");
        CHECK(ro >= 0 && btrfs_is_subvol_fd(ro) == 1);
        CHECK(btrfs_subvol_get_read_only(ro) == 1);
        CHECK(exists(ro, "dir/file"));
        CHECK(openat(ro, "dir/file", O_WRONLY | O_CLOEXEC) == -1 && errno == EROFS);
        CHECK(mkdirat(ro, "new", 0755) == -1 && errno == EROFS);
        CHECK(unlinkat(ro, "dir/file", 0) == -1 && errno == EROFS);
        CHECK(btrfs_subvol_get_id(ro, &id2) == 0 && id2 != id);
        /* Writable again, and read-only once more. */
        CHECK(btrfs_subvol_set_read_only(ro, false) == 0 && btrfs_subvol_get_read_only(ro) == 0);
        CHECK(mkdirat(ro, "new", 0755) == 0);
        CHECK(btrfs_subvol_set_read_only(ro, true) == 0 && btrfs_subvol_get_read_only(ro) == 1);
        ro = safe_close(ro);
        /* Renamed within its parent, read-only as it is (publish and retire). */
        CHECK(renameat(fd, ".partial-snap", fd, ".partial-moved") == 0);

        /* Never a symbolic link to a subvolume, nor one below a direct child. */
        CHECK(symlinkat("sv", fd, "link") == 0);
        CHECK(btrfs_is_subvol_at(fd, "link") == 0);
        CHECK(btrfs_subvol_destroy(fd, "link") == -ENOTTY && exists(fd, "sv/dir/file"));
        CHECK(btrfs_subvol_make(fd, "plain/inner") == -EINVAL);
        CHECK(btrfs_subvol_destroy(fd, "plain") == -ENOTTY && exists(fd, "plain"));

        /* rm_leftovers(): the read-only subvolume destroyed whole, not walked; the rest kept. */
        CHECK(mkdirat(fd, ".partial-dir", 0755) == 0 && mkdirat(fd, ".partial-dir/x", 0755) == 0);
        CHECK(rm_leftovers(fd, leftover, NULL, NULL, NULL) == 0);
        CHECK(!exists(fd, ".partial-moved") && !exists(fd, ".partial-dir"));
        CHECK(exists(fd, "sv/dir/file") && exists(fd, "plain") && exists(fd, "link"));

        /* Something mounted inside a subvolume: never taken down with it (-EXDEV, as rm_rf_at()). */
        {
                char x[PATH_MAX + 32];

                snprintf(x, sizeof(x), "%s/.partial-mnt/x", mnt);
                CHECK(btrfs_subvol_make(fd, ".partial-mnt") == 0 && mkdirat(fd, ".partial-mnt/x", 0755) == 0);
                CHECK(mount("tmpfs", x, "tmpfs", 0, "mode=0755") == 0);
                CHECK(rm_rf_or_subvol_at(fd, ".partial-mnt", NULL) == -EXDEV);
                CHECK(btrfs_is_subvol_at(fd, ".partial-mnt") == 1 && umount2(x, 0) == 0);
                CHECK(rm_rf_or_subvol_at(fd, ".partial-mnt", NULL) == 0 && !exists(fd, ".partial-mnt"));
        }

        /* By name, writable, holding files: gone at once; and by ID. */
        CHECK(btrfs_subvol_snapshot(sv, fd, "writable", false) == 0);
        CHECK(rm_rf_or_subvol_at(fd, "writable", NULL) == 0 && !exists(fd, "writable"));
        CHECK(btrfs_subvol_destroy_by_id(fd, 5) == -EINVAL);
        sv = safe_close(sv);
        CHECK(btrfs_subvol_destroy_by_id(fd, id) == 0 && !exists(fd, "sv"));
        CHECK(btrfs_subvol_destroy_by_id(fd, id) == -ENOENT);
        CHECK(btrfs_sync(fd) == 0);
        test_tree_search(fd);

        fd = safe_close(fd);
        run("umount '%s/mnt'; rm -rf '%s'", base, base);
}

int main(void) {
        test_not_btrfs();
        test_btrfs();
        return tests_end();
}
