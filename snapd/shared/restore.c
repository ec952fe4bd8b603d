/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "copy-meta.h"
#include "dirent-util.h"
#include "macro.h"
#include "mirror.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "restore.h"
#include "rm-rf.h"
#include "store.h"
#include "stat-util.h"
#include "strv.h"
#include "tree-diff.h"

static int fail(Restore *o, const char *path, int r, const char *what) {
        fprintf(o->log, "%s: %s: %s\n", *path ? path : ".", what, strerror(-r));
        return r;
}

static int merge_contents(Restore *o, int sfd, int lfd, uint64_t mnt, const char *prefix);

/* Put staged sdir/name in place of ldir/name. */
static int merge_entry(Restore *o, int sdir, int ldir, const char *name, uint64_t mnt, const char *path) {
        struct stat ss, ls, now;
        bool live;

        uint64_t live_mnt = 0;
        int r;

        if (fstatat(sdir, name, &ss, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : fail(o, path, -errno, "cannot stat the staged copy");
        r = fstatat_no_xdev(ldir, name, &ls);   /* a mount on name: -EXDEV, never entered */
        if (r == -EXDEV)
                return fail(o, path, r, "another filesystem is mounted here; not restoring over it");
        live = r >= 0;
        if (!live && r != -ENOENT)
                return fail(o, path, r, "cannot stat");
        if (live && S_ISDIR(ls.st_mode)) {
                r = mount_id_at(ldir, name, &live_mnt);
                if (r < 0)
                        return fail(o, path, r, "cannot stat");
                if (live_mnt != mnt)
                        return fail(o, path, -EXDEV,
                                    "another filesystem is mounted here; not restoring over it");
        }

        if (live && S_ISDIR(ls.st_mode) && S_ISDIR(ss.st_mode)) {
                _cleanup_close_ int cs = -EBADF, cl = -EBADF;

                cs = chase_dir(sdir, name, &(Chase) { .flags = CHASE_NO_XDEV });
                if (cs < 0)
                        return fail(o, path, cs, "cannot open the staged copy");
                cl = chase_dir(ldir, name, &(Chase) { .flags = CHASE_NO_XDEV });
                if (cl < 0)
                        return fail(o, path, cl, "cannot open");
                if (fstat(cl, &now) < 0)
                        return fail(o, path, -errno, "cannot open");
                if (!stat_inode_same(&now, &ls))
                        return fail(o, path, -ESTALE, "replaced while restoring");
                r = merge_contents(o, cs, cl, mnt, path);
                if (r < 0)
                        return r;
                r = copy_meta_fd(cs, cl, &ss);
                if (r < 0)
                        return fail(o, path, r, "cannot set the directory's attributes");
                o->stats.dirs++;
                return 0;
        }
        /*
         * Swap the two: the live entry (whatever it is, a symbolic link
         * too) lands in the staging directory and goes with it.
         */
        if (renameat2(sdir, name, ldir, name, live ? RENAME_EXCHANGE : RENAME_NOREPLACE) < 0)
                return fail(o, path, -errno, "cannot rename into place");
        o->stats.replaced++;
        return 0;
}

static int merge_contents(Restore *o, int sfd, int lfd, uint64_t mnt, const char *prefix) {
        char **names = NULL, **live = NULL;
        size_t n = 0, nl = 0;
        int r;

        r = dir_names_sorted(sfd, &names, &n);
        if (r < 0)
                return fail(o, prefix, r, "cannot read the staged copy");
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *path = path_join(prefix, names[i]);

                r = path ? merge_entry(o, sfd, lfd, names[i], mnt, path) : -ENOMEM;
        }
        if (r >= 0 && o->delete) {
                r = dir_names_sorted(lfd, &live, &nl);
                if (r < 0)
                        fail(o, prefix, r, "cannot read directory");
        }
        for (size_t i = 0; r >= 0 && o->delete && i < nl; i++) {
                _cleanup_free_ char *path = NULL;
                struct statx x;
                struct stat st;

                if (names_contain(names, n, live[i]) ||
                    statx_no_xdev(lfd, live[i], STATX_TYPE | STATX_INO | STATX_MNT_ID, &x) < 0)
                        continue;       /* gone; a mount (-EXDEV), never entered */
                stat_from_statx(&st, &x);
                if (file_id_is(&st, o->skip) || x.stx_mnt_id != mnt)
                        continue;       /* the store; a mount (a directory or a file) */
                path = path_join(prefix, live[i]);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                r = rm_rf_at(lfd, live[i]);
                if (r < 0)
                        fail(o, path, r, "cannot delete");
                else
                        o->stats.deleted++;
        }
        strv_free(names);
        strv_free(live);
        return r;
}

/* A directory restore_open_live() made: the metadata of its snapshot twin. */
static int made_from_snapshot(int dir_fd, const char *path, void *userdata) {
        int snap_root = *(int *) userdata;
        _cleanup_close_ int twin = -EBADF;
        struct stat st;

        twin = chase_dir(snap_root, path, &(Chase) { .flags = CHASE_NO_XDEV });
        if (twin < 0)
                return twin;
        if (fstat(twin, &st) < 0)
                return -errno;
        return copy_meta_fd(twin, dir_fd, &st);
}

/*
 * The live directory rel (normalized, relative) under live_root, never
 * through a symbolic link and never into another mount; with snap_root >=
 * 0, missing directories are made with their snapshot twins' metadata.
 */
static int restore_open_live(Restore *o, int live_root, int snap_root, const char *rel) {
        Chase c = {
                .flags = CHASE_NO_XDEV | (snap_root >= 0 ? CHASE_MKDIR : 0),
                .made = made_from_snapshot,
                .userdata = &snap_root,
        };
        _cleanup_free_ char *where = NULL;
        int fd;

        fd = chase_dir(live_root, rel, &c);
        if (fd >= 0 || (fd == -ENOENT && snap_root < 0))
                return fd;
        where = strndup(rel, c.failed_len);
        if (!where)
                return -ENOMEM;
        if (fd == -ELOOP || fd == -ENOTDIR)
                return fail(o, where, -ENOTDIR,
                            "not a directory in the live tree (a symbolic link?), not following it");
        if (fd == -EXDEV)
                return fail(o, where, -EXDEV, "another filesystem is mounted here, not entering it");
        return fail(o, where, fd, "cannot open");
}

static int print_change(DiffKind kind, const char *path, const struct stat *a, const struct stat *b,
                        void *userdata) {
        Restore *o = userdata;

        /* a is the live tree, b the snapshot. */
        if (kind == DIFF_REMOVED && !o->delete)
                return 0;
        fprintf(o->out, "%c %s%s\n", diff_mark(kind), path,
                (b ? S_ISDIR(b->st_mode) : S_ISDIR(a->st_mode)) ? "/" : "");
        if (kind == DIFF_REMOVED)
                o->stats.deleted++;
        else
                o->stats.replaced++;
        return 0;
}

/*
 * The steps of restore_run(): find the path in the snapshot, then either
 * compare (dry run) or stage a copy in the store, sync it and merge it
 * in, then remove the staging directory.
 */
typedef struct Run {
        Restore *o;
        int snap_root, live_root, stage_root;
        const char *path;       /* "" for the whole tree */
        char *dir;              /* path's directory ("" at the top) */
        const char *base;       /* path's last component */
        int snap_dir, live_dir, staging;
        char stg_name[sizeof(STORE_RESTORE_PREFIX) + 12];
} Run;

int restore_find(int snap_root, const char *path, char **ret_dir, const char **ret_base, FILE *log) {
        _cleanup_free_ char *dir = NULL;
        const char *base;
        struct stat st;
        int fd, r;

        r = path_split(path, &dir, &base);
        if (r < 0)
                return r;
        fd = chase_dir(snap_root, dir, &(Chase) { .flags = CHASE_NO_XDEV });
        if (fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ||
            (fd >= 0 && fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)) {
                safe_close(fd);
                fprintf(log, "%s: not in the snapshot\n", path);
                return -ENOENT;
        }
        if (fd >= 0 && ret_dir)
                *ret_dir = TAKE_PTR(dir);
        if (fd >= 0 && ret_base)
                *ret_base = base;
        return fd;
}

static int run_find(Run *u) {
        if (!*u->path)
                return 0;
        u->snap_dir = restore_find(u->snap_root, u->path, &u->dir, &u->base, u->o->log);
        return u->snap_dir < 0 ? u->snap_dir : 0;
}

static int run_dry(Run *u) {
        Restore *o = u->o;
        TreeDiff d = {
                .fn = print_change,
                .userdata = o,
                .report_dirs = true,
                .skip = o->skip,
        };
        int r;

        if (!*u->path)
                r = tree_diff(&d, u->live_root, u->snap_root, NULL, "");
        else {
                u->live_dir = restore_open_live(o, u->live_root, -1, u->dir);
                if (u->live_dir < 0 && u->live_dir != -ENOENT)
                        return u->live_dir;
                r = tree_diff(&d, u->live_dir, u->snap_dir, u->base, u->path);
        }
        return r < 0 ? fail(o, u->path, r, "cannot compare") : 0;
}

static int run_stage(Run *u) {
        if (*u->path) {
                u->live_dir = restore_open_live(u->o, u->live_root, u->snap_root, u->dir);
                if (u->live_dir < 0)
                        return u->live_dir;
        }
        snprintf(u->stg_name, sizeof(u->stg_name), STORE_RESTORE_PREFIX "%d", (int) getpid());
        if (mkdirat(u->stage_root, u->stg_name, 0700) < 0) {
                int r = fail(u->o, u->stg_name, -errno, "cannot make the staging directory");

                u->stg_name[0] = '\0';    /* not ours */
                return r;
        }
        u->staging = chase_dir(u->stage_root, u->stg_name, &(Chase) { .flags = CHASE_NO_XDEV });
        if (u->staging < 0)
                return fail(u->o, u->stg_name, u->staging, "cannot open the staging directory");
        return 0;
}

static int run_merge(Run *u) {
        Restore *o = u->o;
        Mirror w = { .ops = o->ops ? o->ops : &mirror_reflink_ops, .log = o->log };
        uint64_t mnt;
        struct stat st;
        int r;

        r = fd_mount_id(u->live_root, &mnt);
        if (r < 0)
                return r;
        if (*u->path)
                r = mirror_entry(&w, u->snap_dir, u->base, u->staging);
        else
                r = mirror_tree(&w, u->snap_root, u->staging);
        /* What replaces the live entries is on disk before any of them is replaced. */
        if (r >= 0 && syncfs(u->staging) < 0)
                r = fail(o, u->path, -errno, "cannot sync the staged copy");
        if (r >= 0 && *u->path)
                r = merge_entry(o, u->staging, u->live_dir, u->base, mnt, u->path);
        else if (r >= 0) {
                r = merge_contents(o, u->staging, u->live_root, mnt, "");
                if (r >= 0 && fstat(u->snap_root, &st) == 0) {
                        r = copy_meta_fd(u->snap_root, u->live_root, &st);
                        if (r < 0)
                                fail(o, ".", r, "cannot set the root directory's attributes");
                }
        }
        if (r == -EXDEV && w.stats.files == 0)
                fprintf(o->log, "the live tree is not on the snapshot's filesystem: reflinks cannot cross filesystems\n");
        if (r >= 0 && syncfs(u->live_root) < 0)
                r = fail(o, u->path, -errno, "cannot sync the restored entries");
        return r;
}

static int run_done(Run *u, int r) {
        safe_close(u->snap_dir);
        safe_close(u->live_dir);
        safe_close(u->staging);
        free(u->dir);
        if (u->stg_name[0]) {
                /* Holds what the exchanges replaced: in the store, so the live tree is not touched. */
                int k = rm_rf_at(u->stage_root, u->stg_name);

                if (k < 0)
                        fprintf(u->o->log, "%s: cannot remove the staging directory: %s\n", u->stg_name,
                                strerror(-k));
        }
        return r;
}

int restore_run(Restore *o, int snap_root, int live_root, int stage_root, const char *path) {
        Run u = {
                .o = o,
                .snap_root = snap_root,
                .live_root = live_root,
                .stage_root = stage_root,
                .path = path ? path : "",
                .snap_dir = -EBADF,
                .live_dir = -EBADF,
                .staging = -EBADF,
        };
        int r;

        r = run_find(&u);
        if (r >= 0 && o->dry_run)
                r = run_dry(&u);
        else if (r >= 0) {
                r = run_stage(&u);
                if (r >= 0)
                        r = run_merge(&u);
        }
        return run_done(&u, r);
}
