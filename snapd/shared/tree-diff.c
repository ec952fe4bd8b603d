/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chase.h"
#include "dirent-util.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "stat-util.h"
#include "strv.h"
#include "tree-diff.h"

char diff_mark(DiffKind kind) {
        return kind == DIFF_ADDED ? '+' : kind == DIFF_REMOVED ? '-' : '~';
}

static bool same_link_target(int a_dir, int b_dir, const char *name, const struct stat *st) {
        _cleanup_free_ char *a = malloc(st->st_size + 1), *b = malloc(st->st_size + 1);
        ssize_t na, nb;

        if (!a || !b)
                return false;
        na = readlinkat(a_dir, name, a, st->st_size + 1);
        nb = readlinkat(b_dir, name, b, st->st_size + 1);
        return na >= 0 && na == nb && memcmp(a, b, na) == 0;
}

static bool entries_differ(int a_dir, int b_dir, const char *name, const struct stat *a,
                           const struct stat *b) {
        if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT) || a->st_mode != b->st_mode ||
            a->st_uid != b->st_uid || a->st_gid != b->st_gid)
                return true;
        if (S_ISDIR(a->st_mode))
                return false;
        if (a->st_size != b->st_size || a->st_mtim.tv_sec != b->st_mtim.tv_sec ||
            a->st_mtim.tv_nsec != b->st_mtim.tv_nsec)
                return true;
        if ((S_ISCHR(a->st_mode) || S_ISBLK(a->st_mode)) && a->st_rdev != b->st_rdev)
                return true;
        if (S_ISLNK(a->st_mode))
                return !same_link_target(a_dir, b_dir, name, a);
        return false;
}

static int diff_dir(const TreeDiff *d, int a_fd, int b_fd, const char *prefix, uint64_t a_mnt, uint64_t b_mnt);

/*
 * dir/name not following a link, and whether it is there as part of the
 * tree: not the skipped directory, not another mount (never entered, not
 * even by a stat: a FUSE or network mount may refuse root or hang).
 */
static int entry_stat(const TreeDiff *d, int dir, const char *name, uint64_t mnt, struct stat *st) {
        struct statx x;
        int r;

        if (dir < 0)
                return 0;
        r = statx_no_xdev(dir, name, STATX_BASIC_STATS | STATX_MNT_ID, &x);
        if (r == -ENOENT || r == -EXDEV)
                return 0;
        if (r < 0)
                return r;
        stat_from_statx(st, &x);
        if (file_id_is(st, d->skip))
                return 0;
        /* Another mount inside a tree is not part of it. */
        if (x.stx_mnt_id != mnt)
                return 0;
        return 1;
}

static int diff_entry(const TreeDiff *d, int a_dir, int b_dir, const char *name, const char *path,
                      uint64_t a_mnt, uint64_t b_mnt) {
        _cleanup_close_ int a_fd = -EBADF, b_fd = -EBADF;
        struct stat as, bs;
        bool in_a, in_b;
        int r;

        r = entry_stat(d, a_dir, name, a_mnt, &as);
        if (r < 0)
                return r;
        in_a = r > 0;
        r = entry_stat(d, b_dir, name, b_mnt, &bs);
        if (r < 0)
                return r;
        in_b = r > 0;
        if (!in_a && !in_b)
                return 0;
        if (!in_a)
                return d->fn(DIFF_ADDED, path, NULL, &bs, d->userdata);
        if (!in_b)
                return d->fn(DIFF_REMOVED, path, &as, NULL, d->userdata);
        if (entries_differ(a_dir, b_dir, name, &as, &bs) &&
            (!S_ISDIR(as.st_mode) || !S_ISDIR(bs.st_mode) || d->report_dirs)) {
                r = d->fn(DIFF_CHANGED, path, &as, &bs, d->userdata);
                if (r != 0)
                        return r;
        }
        if (!S_ISDIR(as.st_mode) || !S_ISDIR(bs.st_mode))
                return 0;
        if (d->dir_fn) {
                r = d->dir_fn(path, a_dir, &as, &bs, d->userdata);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        a_fd = chase_dir(a_dir, name, &(Chase) { .flags = CHASE_NO_XDEV });
        if (a_fd < 0)
                return a_fd;
        b_fd = chase_dir(b_dir, name, &(Chase) { .flags = CHASE_NO_XDEV });
        if (b_fd < 0)
                return b_fd;
        return diff_dir(d, a_fd, b_fd, path, a_mnt, b_mnt);
}

static int diff_dir(const TreeDiff *d, int a_fd, int b_fd, const char *prefix, uint64_t a_mnt, uint64_t b_mnt) {
        char **a = NULL, **b = NULL;
        size_t na = 0, nb = 0, i = 0, k = 0;
        int r;

        r = dir_names_sorted(a_fd, &a, &na);
        if (r >= 0)
                r = dir_names_sorted(b_fd, &b, &nb);
        while (r == 0 && (i < na || k < nb)) {
                _cleanup_free_ char *path = NULL;
                const char *name;
                int c;

                c = i >= na ? 1 : k >= nb ? -1 : strcmp(a[i], b[k]);
                name = c <= 0 ? a[i] : b[k];
                path = path_join(prefix, name);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                r = diff_entry(d, a_fd, b_fd, name, path, a_mnt, b_mnt);
                if (c <= 0)
                        i++;
                if (c >= 0)
                        k++;
        }
        strv_free(a);
        strv_free(b);
        return r;
}

int tree_diff(const TreeDiff *d, int a_dir, int b_dir, const char *name, const char *path) {
        uint64_t a_mnt = 0, b_mnt;
        int r;

        if (a_dir >= 0) {
                r = fd_mount_id(a_dir, &a_mnt);
                if (r < 0)
                        return r;
        }
        r = fd_mount_id(b_dir, &b_mnt);
        if (r < 0)
                return r;
        if (!name)
                return diff_dir(d, a_dir, b_dir, "", a_mnt, b_mnt);
        return diff_entry(d, a_dir, b_dir, name, path, a_mnt, b_mnt);
}
