/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "copy-meta.h"
#include "dirent-util.h"
#include "escape.h"
#include "json-util.h"
#include "exclude.h"
#include "log.h"
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
        log_path(o->log, *path ? path : ".", "%s: %s", what, strerror(-r));
        o->stats.failed++;
        if (o->error == 0)
                o->error = r;
        return r;
}

/* An entry refused for safety, and why: said on log, and the restore goes on. */
static int refuse(Restore *o, const char *path, const char *why) {
        log_path(o->log, *path ? path : ".", "not restored: %s", why);
        o->stats.failed++;
        if (o->error == 0)
                o->error = -EPERM;
        return -EPERM;
}

/*
 * May the live directory live (in a directory parent, NULL: not looked
 * at) be entered, given the metadata of, or replaced by a snapshot entry
 * of twin_uid's?  Only when it is root's or twin_uid's, and when entering
 * it is not a step from a directory of one user other than root into one
 * of another (tmpfiles' unsafe transition: the one could have put it
 * there).  NULL, or why not, in buf.
 */
static const char *dir_refusal(const struct stat *parent, const struct stat *live, uid_t twin_uid, char *buf,
                               size_t size) {
        if (live->st_uid != 0 && live->st_uid != twin_uid) {
                snprintf(buf, size, "the live directory is uid %u's where the snapshot has uid %u's: not entering "
                         "it, not changing its owner (another user's directory renamed to this name?)",
                         (unsigned) live->st_uid, (unsigned) twin_uid);
                return buf;
        }
        if (parent && parent->st_uid != 0 && live->st_uid != 0 && live->st_uid != parent->st_uid) {
                snprintf(buf, size, "a directory of uid %u in a directory of uid %u: not entering it (an unsafe "
                         "transition: the one user could have put the other's directory there)",
                         (unsigned) live->st_uid, (unsigned) parent->st_uid);
                return buf;
        }
        return NULL;
}

/*
 * May --delete remove the live entry st, not in the snapshot, from a
 * directory parent?  Not a directory of a user other than root that
 * someone else could have renamed to this name: in a directory of another
 * user's, or one writable by group or others without the sticky bit.
 * NULL, or why not, in buf.
 */
static const char *delete_refusal(const struct stat *parent, const struct stat *st, char *buf, size_t size) {
        if (!S_ISDIR(st->st_mode) || st->st_uid == 0)
                return NULL;
        if ((parent->st_uid != 0 && parent->st_uid != st->st_uid) ||
            ((parent->st_mode & (S_IWGRP | S_IWOTH)) && !(parent->st_mode & S_ISVTX))) {
                snprintf(buf, size, "a directory of uid %u where others may rename entries: not deleting it "
                         "(another user's directory renamed to a name the snapshot does not have?)",
                         (unsigned) st->st_uid);
                return buf;
        }
        return NULL;
}

/*
 * Does --delete leave path alone: excluded by the job (itself, or a
 * directory above it, as a pattern added since the snapshot may say), or
 * skipped by the snapshot?
 */
static bool delete_keeps(const Restore *o, const char *path, bool is_dir) {
        if (exclude_match(o->exclude, path, is_dir))
                return true;
        for (const char *p = strchr(path, '/'); o->exclude && p; p = strchr(p + 1, '/')) {
                _cleanup_free_ char *up = strndup(path, p - path);

                if (up && exclude_match(o->exclude, up, true))
                        return true;
        }
        for (char *const *k = o->keep; k && *k; k++)
                if (strcmp(*k, path) == 0)
                        return true;
        return false;
}

static bool is_own_stage(const Restore *o, const struct stat *st) {
        for (unsigned i = 0; i < o->n_stages; i++)
                if (file_id_is(st, o->stages[i]))
                        return true;
        return false;
}

static bool keeps_any(const Restore *o) {
        return (o->exclude && *o->exclude) || (o->keep && *o->keep);
}

/*
 * Remove ldir/name (path), which the snapshot does not have, on mount mnt.
 * With patterns or paths to keep, a directory is emptied one entry at a
 * time and what is kept stays, with the directories that hold it.
 * Returns 0, 1 when something was kept, or -errno.
 */
static int delete_entry(Restore *o, int ldir, const char *name, const struct stat *parent, uint64_t mnt,
                        const char *path) {
        _cleanup_close_ int fd = -EBADF;
        char why[256];
        struct statx x;
        struct stat st, self;
        char **names = NULL;
        size_t n = 0;
        int r, kept = 0;

        r = statx_no_xdev(ldir, name, STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO | STATX_MNT_ID, &x);
        if (r == -EXDEV)
                return 1;       /* a mount, never entered */
        if (r < 0)
                return r == -ENOENT ? 0 : fail(o, path, r, "cannot stat");
        stat_from_statx(&st, &x);
        if (file_id_is(&st, o->skip) || x.stx_mnt_id != mnt || is_own_stage(o, &st))
                return 1;       /* the store; a mount (a directory or a file); a staging directory */
        if (delete_keeps(o, path, S_ISDIR(st.st_mode))) {
                o->stats.kept++;
                return 1;
        }
        if (delete_refusal(parent, &st, why, sizeof(why))) {
                refuse(o, path, why);
                return 1;
        }
        if (!S_ISDIR(st.st_mode) || !keeps_any(o)) {
                r = rm_rf_at(ldir, name);
                if (r < 0)
                        return fail(o, path, r, "cannot delete");
                o->stats.deleted++;
                return 0;
        }
        fd = chase_dir(ldir, name, &(Chase) { .flags = CHASE_NO_XDEV });
        if (fd < 0)
                return fail(o, path, fd, "cannot open");
        if (fstat(fd, &self) < 0 || !stat_inode_same(&self, &st))
                return fail(o, path, -ESTALE, "replaced while restoring");
        r = dir_names_sorted(fd, &names, &n);
        if (r < 0)
                return fail(o, path, r, "cannot read directory");
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *sub = path_join(path, names[i]);

                if (!sub) {
                        strv_free(names);
                        return -ENOMEM;
                }
                r = delete_entry(o, fd, names[i], &self, mnt, sub);
                if (r == -ENOMEM) {
                        strv_free(names);
                        return r;
                }
                if (r != 0)
                        kept = 1;
        }
        strv_free(names);
        if (kept)
                return 1;       /* it holds what is kept */
        if (unlinkat(ldir, name, AT_REMOVEDIR) < 0)
                return errno == ENOTEMPTY ? 1 : fail(o, path, -errno, "cannot delete");
        o->stats.deleted++;
        return 0;
}

static int merge_contents(Restore *o, int sfd, int lfd, uint64_t mnt, const char *prefix);
static int merge_entry(Restore *o, int sdir, int ldir, const char *name, uint64_t mnt, const char *path);

/* May a staging directory be made in the live directory d: can no user but root change it? */
static bool stage_dir_safe(const struct stat *d) {
        return d->st_uid == 0 && (!(d->st_mode & (S_IWGRP | S_IWOTH)) || (d->st_mode & S_ISVTX));
}

const char *restore_stage_refusal(int stage_root, int dir) {
        struct stat a, b;

        if (fstat(stage_root, &a) < 0 || fstat(dir, &b) < 0)
                return "cannot stat";
        if (a.st_dev == b.st_dev || stage_dir_safe(&b))
                return NULL;
        return "on a btrfs subvolume of its own (not the store's), in a directory that a user other than "
               "root owns or may write, where no staging directory can be made safely: cannot restore there";
}

/*
 * Is name RESTORE_STAGE_PREFIX PID.N?  Its PID, or 0.
 */
static pid_t stage_name_pid(const char *name) {
        const char *p;
        char *end;
        unsigned long pid;

        if (strncmp(name, RESTORE_STAGE_PREFIX, strlen(RESTORE_STAGE_PREFIX)) != 0)
                return 0;
        p = name + strlen(RESTORE_STAGE_PREFIX);
        if (*p < '1' || *p > '9')
                return 0;
        errno = 0;
        pid = strtoul(p, &end, 10);
        if (errno != 0 || *end != '.' || pid > INT32_MAX || end[1] < '0' || end[1] > '9')
                return 0;
        (void) strtoul(end + 1, &end, 10);
        return *end == '\0' ? (pid_t) pid : 0;
}

int restore_remove_stale_stages(int dir_fd, FILE *log) {
        char **names = NULL;
        size_t n = 0;
        struct stat d;
        int r, removed = 0;

        /* Only root could have made one here, and only root can swap its name for another inode. */
        if (fstat(dir_fd, &d) < 0)
                return -errno;
        if (!S_ISDIR(d.st_mode) || !stage_dir_safe(&d))
                return 0;
        r = dir_names_sorted(dir_fd, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int fd = -EBADF;
                pid_t pid = stage_name_pid(names[i]);
                struct stat st, now;
                int k;

                if (pid <= 0 || pid == getpid())
                        continue;
                /* Its restore still running (or a process that took its PID since): not ours to remove. */
                if (kill(pid, 0) == 0 || errno != ESRCH)
                        continue;
                /* A directory of root's, 0700, as stage_make() makes them, looked at without entering a mount. */
                if (fstatat_no_xdev(dir_fd, names[i], &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
                    (st.st_mode & 07777) != 0700)
                        continue;
                fd = open_no_xdev(dir_fd, names[i], O_RDONLY | O_DIRECTORY);
                if (fd < 0 || fstat(fd, &now) < 0 || !stat_inode_same(&now, &st))
                        continue;
                /* A restore holds its staging directory locked while it uses it. */
                if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                k = rm_rf_at(dir_fd, names[i]);
                if (log) {
                        if (k < 0)
                                log_path(log, names[i], "cannot remove the staging directory an interrupted "
                                         "restore left: %s", strerror(-k));
                        else
                                log_path(log, names[i], "removed the staging directory an interrupted restore "
                                         "left");
                }
                if (k >= 0)
                        removed++;
        }
        strv_free(names);
        return removed;
}

/* A staging directory, root's and 0700, made in the live directory lfd, never named like any of avoid. */
typedef struct Stage {
        int parent;             /* lfd, not owned */
        int fd;
        bool counted;           /* in o->stages */
        char name[sizeof(RESTORE_STAGE_PREFIX) + 24];
} Stage;

static int stage_make(Restore *o, int lfd, char **avoid, size_t n_avoid, const char *path, Stage *ret) {
        struct stat d, st;

        *ret = (Stage) { .parent = lfd, .fd = -EBADF };
        if (fstat(lfd, &d) < 0)
                return fail(o, path, -errno, "cannot stat");
        if (!stage_dir_safe(&d))
                return fail(o, path, -EXDEV,
                            "on a btrfs subvolume of its own, in a directory that a user other than root owns or "
                            "may write, where no staging directory can be made safely: not restored");
        if (o->n_stages >= RESTORE_STAGES_MAX)
                return fail(o, path, -ELOOP, "btrfs subvolumes nested too deeply: not restored");
        /* One an interrupted restore left here goes first. */
        (void) restore_remove_stale_stages(lfd, o->log);
        for (unsigned i = 0;; i++) {
                snprintf(ret->name, sizeof(ret->name), RESTORE_STAGE_PREFIX "%d.%u", (int) getpid(), i);
                if (names_contain(avoid, n_avoid, ret->name))
                        continue;
                if (mkdirat(lfd, ret->name, 0700) == 0)
                        break;
                if (errno != EEXIST || i >= 1000) {
                        ret->name[0] = '\0';
                        return fail(o, path, -errno, "cannot make a staging directory");
                }
        }
        ret->fd = chase_dir(lfd, ret->name, &(Chase) { .flags = CHASE_NO_XDEV });
        if (ret->fd < 0 || fstat(ret->fd, &st) < 0 || st.st_uid != 0 || (st.st_mode & 07777) != 0700) {
                /* In a directory only root can change: cannot happen. */
                return fail(o, path, ret->fd < 0 ? ret->fd : -ESTALE, "cannot open the staging directory");
        }
        /* Locked while in use: restore_remove_stale_stages() leaves it alone. */
        if (flock(ret->fd, LOCK_EX) < 0)
                return fail(o, path, -errno, "cannot lock the staging directory");
        o->stages[o->n_stages++] = file_id(&st);
        ret->counted = true;
        return 0;
}

static void stage_done(Restore *o, Stage *g, const char *path) {
        int k;

        safe_close(g->fd);
        g->fd = -EBADF;
        if (!g->name[0])
                return;
        k = rm_rf_at(g->parent, g->name);
        if (k < 0)
                fail(o, path, k, "cannot remove the staging directory");
        if (g->counted)
                o->n_stages--;
        g->counted = false;
        g->name[0] = '\0';
}

static const MirrorOps *restore_ops(const Restore *o) {
        return o->ops ? o->ops : &mirror_reflink_ops;
}

/* merge_contents() where sfd is on another subvolume than lfd: staged again in lfd first. */
static int merge_contents_restaged(Restore *o, int sfd, int lfd, char **names, size_t n, uint64_t mnt,
                                   const char *prefix) {
        Mirror w = { .ops = restore_ops(o), .log = o->log };
        _cleanup_close_ int d = -EBADF;
        Stage g;
        int r;

        r = stage_make(o, lfd, names, n, prefix, &g);
        if (r < 0) {
                stage_done(o, &g, prefix);
                return r == -ENOMEM ? r : 0;
        }
        /* A directory of the staged one's metadata in it; the staging directory stays root's. */
        if (mkdirat(g.fd, "d", 0700) < 0)
                r = fail(o, prefix, -errno, "cannot make the staging directory");
        else if ((d = chase_dir(g.fd, "d", &(Chase) { .flags = CHASE_NO_XDEV })) < 0)
                r = fail(o, prefix, d, "cannot open the staging directory");
        else if ((r = mirror_tree(&w, sfd, d)) < 0)
                fail(o, prefix, r, "cannot stage on the live subvolume");
        else if (syncfs(d) < 0)
                r = fail(o, prefix, -errno, "cannot sync the staged copy");
        else
                r = merge_contents(o, d, lfd, mnt, prefix);
        stage_done(o, &g, prefix);
        return r == -ENOMEM ? r : 0;
}

/* merge_entry() where sdir is on another subvolume than ldir: name staged again in ldir first. */
static int merge_entry_restaged(Restore *o, int sdir, int ldir, const char *name, uint64_t mnt, const char *path) {
        Mirror w = { .ops = restore_ops(o), .log = o->log };
        char *avoid[] = { (char *) name, NULL };
        Stage g;
        int r;

        r = stage_make(o, ldir, avoid, 1, path, &g);
        if (r >= 0) {
                r = mirror_entry(&w, sdir, name, g.fd);
                if (r < 0)
                        fail(o, path, r, "cannot stage on the live subvolume");
                else if (syncfs(g.fd) < 0)
                        r = fail(o, path, -errno, "cannot sync the staged copy");
                else
                        r = merge_entry(o, g.fd, ldir, name, mnt, path);
        }
        stage_done(o, &g, path);
        return r;
}

/*
 * Put staged sdir/name in place of ldir/name.  Returns 0 or -errno, said
 * on log; the caller goes on with the next entry but for -ENOMEM.
 */
static int merge_entry(Restore *o, int sdir, int ldir, const char *name, uint64_t mnt, const char *path) {
        struct stat ss, ls, now, ps, back;
        char why[256];
        bool live;

        uint64_t live_mnt = 0;
        int r;

        if (fstatat(sdir, name, &ss, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : fail(o, path, -errno, "cannot stat the staged copy");
        if (fstat(ldir, &ps) < 0)
                return fail(o, path, -errno, "cannot stat its directory");
        if (ps.st_dev != ss.st_dev)
                return merge_entry_restaged(o, sdir, ldir, name, mnt, path);
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
                /* Entered or replaced: either way, only a directory that may be. */
                if (dir_refusal(&ps, &ls, ss.st_uid, why, sizeof(why)))
                        return refuse(o, path, why);
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
                /* The owner of what is open cannot have changed but by root. */
                if (dir_refusal(&ps, &now, ss.st_uid, why, sizeof(why)))
                        return refuse(o, path, why);
                r = merge_contents(o, cs, cl, mnt, path);
                if (r == -ENOMEM)
                        return r;
                r = copy_meta_fd(cs, cl, &ss);
                if (r < 0)
                        return fail(o, path, r, "cannot set the directory's attributes");
                o->stats.dirs++;
                return 0;
        }
        /*
         * Swap the two: the live entry (whatever it is, a symbolic link
         * too) lands in the staging directory and goes with it.  What
         * landed there must be what was looked at: a directory renamed
         * to this name meanwhile is swapped back, untouched.
         */
        if (renameat2(sdir, name, ldir, name, live ? RENAME_EXCHANGE : RENAME_NOREPLACE) < 0)
                return fail(o, path, -errno, "cannot rename into place");
        if (live && (fstatat(sdir, name, &back, AT_SYMLINK_NOFOLLOW) < 0 || !stat_inode_same(&back, &ls))) {
                if (renameat2(sdir, name, ldir, name, RENAME_EXCHANGE) < 0)
                        return fail(o, path, -errno, "replaced while restoring, and cannot be swapped back");
                return fail(o, path, -ESTALE, "replaced while restoring; left as it was");
        }
        o->stats.replaced++;
        return 0;
}

/* Returns 0, or -ENOMEM; every other problem is said on log and counted. */
static int merge_contents(Restore *o, int sfd, int lfd, uint64_t mnt, const char *prefix) {
        char **names = NULL, **live = NULL;
        size_t n = 0, nl = 0;
        struct stat ps, ss;
        int r;

        r = dir_names_sorted(sfd, &names, &n);
        if (r < 0) {
                fail(o, prefix, r, "cannot read the staged copy");
                return r == -ENOMEM ? r : 0;
        }
        if (fstat(sfd, &ss) < 0 || fstat(lfd, &ps) < 0)
                r = fail(o, prefix, -errno, "cannot stat");
        else if (ss.st_dev != ps.st_dev)
                /* A subvolume of its own: renames cannot reach it from here. */
                r = merge_contents_restaged(o, sfd, lfd, names, n, mnt, prefix);
        if (r < 0 || ss.st_dev != ps.st_dev) {
                strv_free(names);
                return r == -ENOMEM ? r : 0;
        }
        for (size_t i = 0; i < n && r != -ENOMEM; i++) {
                _cleanup_free_ char *path = path_join(prefix, names[i]);

                r = path ? merge_entry(o, sfd, lfd, names[i], mnt, path) : -ENOMEM;
        }
        if (r != -ENOMEM && o->delete) {
                r = fstat(lfd, &ps) < 0 ? -errno : dir_names_sorted(lfd, &live, &nl);
                if (r < 0) {
                        fail(o, prefix, r, "cannot read directory");
                        nl = 0;
                }
        }
        for (size_t i = 0; r != -ENOMEM && o->delete && i < nl; i++) {
                _cleanup_free_ char *path = NULL;

                if (names_contain(names, n, live[i]))
                        continue;
                path = path_join(prefix, live[i]);
                r = path ? delete_entry(o, lfd, live[i], &ps, mnt, path) : -ENOMEM;
        }
        strv_free(names);
        strv_free(live);
        return r == -ENOMEM ? r : 0;
}

/*
 * The walk of restore_open_live(): each directory of the path, made (with
 * its snapshot twin's metadata) or found (and then only one that
 * dir_refusal() lets in), with the one above it.
 */
typedef struct LiveWalk {
        int snap_root;
        struct stat parent;
        char why[256];
        bool refused;
} LiveWalk;

static int twin_stat(int snap_root, const char *path, int *ret_fd, struct stat *ret) {
        int fd = chase_dir(snap_root, path, &(Chase) { .flags = CHASE_NO_XDEV });

        if (fd < 0)
                return fd;
        if (fstat(fd, ret) < 0) {
                safe_close(fd);
                return -errno;
        }
        if (ret_fd)
                *ret_fd = fd;
        else
                safe_close(fd);
        return 0;
}

/* A directory restore_open_live() made: the metadata of its snapshot twin. */
static int made_from_snapshot(int dir_fd, const char *path, void *userdata) {
        LiveWalk *w = userdata;
        _cleanup_close_ int twin = -EBADF;
        struct stat st;
        int r;

        r = twin_stat(w->snap_root, path, &twin, &st);
        if (r < 0)
                return r;
        r = copy_meta_fd(twin, dir_fd, &st);
        if (r < 0)
                return r;
        w->parent = st;
        return 0;
}

/* A directory of the path that was there: only one that may be entered. */
static int found_live(int dir_fd, const char *path, void *userdata) {
        LiveWalk *w = userdata;
        struct stat st, twin;
        int r;

        if (fstat(dir_fd, &st) < 0)
                return -errno;
        r = twin_stat(w->snap_root, path, NULL, &twin);
        if (r < 0)
                return r;
        if (dir_refusal(&w->parent, &st, twin.st_uid, w->why, sizeof(w->why))) {
                w->refused = true;
                return -EPERM;
        }
        w->parent = st;
        return 0;
}

/*
 * The live directory rel (normalized, relative) under live_root, never
 * through a symbolic link, never into another mount and never into a
 * directory that is neither root's nor its snapshot twin's owner's; with
 * mkdir, missing directories are made with their snapshot twins' metadata.
 */
static int restore_open_live(Restore *o, int live_root, int snap_root, bool mkdir, const char *rel) {
        LiveWalk w = { .snap_root = snap_root };
        Chase c = {
                .flags = CHASE_NO_XDEV | (mkdir ? CHASE_MKDIR : 0),
                .made = made_from_snapshot,
                .found = found_live,
                .userdata = &w,
        };
        _cleanup_free_ char *where = NULL;
        int fd;

        if (fstat(live_root, &w.parent) < 0)
                return fail(o, ".", -errno, "cannot stat");
        fd = chase_dir(live_root, rel, &c);
        if (fd >= 0 || (fd == -ENOENT && !mkdir))
                return fd;
        where = strndup(rel, c.failed_len);
        if (!where)
                return -ENOMEM;
        if (fd == -EPERM && w.refused)
                return refuse(o, where, w.why);
        if (fd == -ELOOP || fd == -ENOTDIR)
                return fail(o, where, -ENOTDIR,
                            "not a directory in the live tree (a symbolic link?), not following it");
        if (fd == -EXDEV)
                return fail(o, where, -EXDEV, "another filesystem is mounted here, not entering it");
        return fail(o, where, fd, "cannot open");
}

/*
 * (restore.h)
 */
void restore_print_entry(Restore *o, char mark, const char *path, bool dir, const char *why) {
        if (o->json) {
                const char *change = mark == '+' ? "added" : mark == '~' ? "changed" : mark == '-' ? "removed" :
                                     mark == '=' ? "kept" : "refused";

                fprintf(o->out, "{\"change\":\"%s\",\"path\":", change);
                json_string(o->out, path);
                fprintf(o->out, ",\"dir\":%s,\"why\":", dir ? "true" : "false");
                if (why)
                        json_string(o->out, why);
                else
                        fputs("null", o->out);
                fputs("}\n", o->out);
                return;
        }
        fprintf(o->out, "%c ", mark);
        fputs_cescaped(path, o->out);   /* any name, one line, no terminal control */
        fputs(dir ? "/" : "", o->out);
        if (why && mark == '=')
                fprintf(o->out, " (%s)", why);
        else if (why)
                fprintf(o->out, ": %s", why);
        fputc('\n', o->out);
}

/*
 * The dry run's look at each directory in both trees: what the restore
 * would refuse (another user's directory; a subvolume of its own where no
 * staging directory can be made) is said with "!", and not looked into.
 */
static int dry_dir(const char *path, int live_parent, const struct stat *ls, const struct stat *ss,
                   void *userdata) {
        Restore *o = userdata;
        const char *why = NULL;
        struct stat ps;
        char buf[256];

        if (fstat(live_parent, &ps) < 0)
                return -errno;
        why = dir_refusal(&ps, ls, ss->st_uid, buf, sizeof(buf));
        if (!why && ls->st_dev != ps.st_dev && !stage_dir_safe(ls))
                why = "a btrfs subvolume of its own that a user other than root owns or may write, where no "
                      "staging directory can be made safely";
        if (!why)
                return 0;
        restore_print_entry(o, '!', path, true, why);
        o->stats.failed++;
        if (o->error == 0)
                o->error = -EPERM;
        return 1;
}

static int print_change(DiffKind kind, const char *path, const struct stat *a, const struct stat *b,
                        void *userdata) {
        Restore *o = userdata;

        /* a is the live tree, b the snapshot. */
        if (kind == DIFF_REMOVED && !o->delete)
                return 0;
        if (kind == DIFF_REMOVED && delete_keeps(o, path, S_ISDIR(a->st_mode))) {
                restore_print_entry(o, '=', path, S_ISDIR(a->st_mode), "excluded or skipped: --delete leaves it");
                o->stats.kept++;
                return 0;
        }
        restore_print_entry(o, diff_mark(kind), path, b ? S_ISDIR(b->st_mode) : S_ISDIR(a->st_mode), NULL);
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
        Stage live_stage;       /* staging on the live subvolume instead, when not the store's */
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
                log_path(log, path, "not in the snapshot");
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
                .dir_fn = dry_dir,
        };
        int r;

        if (!*u->path)
                r = tree_diff(&d, u->live_root, u->snap_root, NULL, "");
        else {
                u->live_dir = restore_open_live(o, u->live_root, u->snap_root, false, u->dir);
                if (u->live_dir < 0 && u->live_dir != -ENOENT)
                        return u->live_dir;
                r = tree_diff(&d, u->live_dir, u->snap_dir, u->base, u->path);
        }
        return r < 0 ? fail(o, u->path, r, "cannot compare") : 0;
}

/*
 * Where the live entries are renamed into is a subvolume other than the
 * store's: staged there, in a directory of the staging directory's, so
 * that the staging directory keeps root's metadata.
 */
static int run_stage_live(Run *u, int dest) {
        char **names = NULL;
        size_t n = 0;
        int r;

        if (*u->path)
                r = strv_push(&names, &n, u->base);
        else
                r = dir_names_sorted(u->snap_root, &names, &n);
        if (r < 0)
                return fail(u->o, u->path, r, "cannot read the snapshot");
        r = stage_make(u->o, dest, names, n, u->path, &u->live_stage);
        strv_free(names);
        if (r < 0)
                return r;
        if (mkdirat(u->live_stage.fd, "d", 0700) < 0)
                return fail(u->o, u->path, -errno, "cannot make the staging directory");
        u->staging = chase_dir(u->live_stage.fd, "d", &(Chase) { .flags = CHASE_NO_XDEV });
        if (u->staging < 0)
                return fail(u->o, u->path, u->staging, "cannot open the staging directory");
        return 0;
}

static int run_stage(Run *u) {
        struct stat a, b;

        if (*u->path) {
                u->live_dir = restore_open_live(u->o, u->live_root, u->snap_root, true, u->dir);
                if (u->live_dir < 0)
                        return u->live_dir;
        }
        if (fstat(u->stage_root, &a) < 0 || fstat(*u->path ? u->live_dir : u->live_root, &b) < 0)
                return fail(u->o, u->path, -errno, "cannot stat");
        if (a.st_dev != b.st_dev && stage_dir_safe(&b))
                return run_stage_live(u, *u->path ? u->live_dir : u->live_root);
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
        Mirror w = { .ops = o->ops ? o->ops : &mirror_reflink_ops, .log = o->log, .no_links = o->no_links };
        uint64_t mnt;
        struct stat st, ls;
        char why[256];
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
                if (r >= 0 && fstat(u->snap_root, &st) == 0 && fstat(u->live_root, &ls) == 0) {
                        int k;

                        if (dir_refusal(NULL, &ls, st.st_uid, why, sizeof(why)))
                                refuse(o, "", why);
                        else if ((k = copy_meta_fd(u->snap_root, u->live_root, &st)) < 0)
                                fail(o, ".", k, "cannot set the root directory's attributes");
                }
        }
        if (r == -EXDEV && w.stats.files == 0)
                fprintf(o->log, "the live tree is not on the snapshot's filesystem: reflinks cannot cross filesystems\n");
        if (r >= 0 && syncfs(u->live_root) < 0)
                r = fail(o, u->path, -errno, "cannot sync the restored entries");
        return r;
}

static int run_done(Run *u, int r) {
        /* The live stage first: it is in live_dir. */
        safe_close(u->snap_dir);
        safe_close(u->staging);
        stage_done(u->o, &u->live_stage, u->path);
        safe_close(u->live_dir);
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
                .live_stage = { .parent = -EBADF, .fd = -EBADF },
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
        r = run_done(&u, r);
        /* Every entry was tried: the first problem, if any. */
        return r < 0 ? r : o->error;
}
