/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "copy-meta.h"
#include "fd-util.h"
#include "macro.h"
#include "restore.h"
#include "snapshot.h"
#include "store.h"
#include "strv.h"
#include "treediff.h"
#include "walk.h"

int restore_path_normalize(const char *in, char **ret) {
        _cleanup_free_ char *out = malloc(strlen(in) + 1);
        size_t len = 0;

        if (!out)
                return -ENOMEM;
        for (const char *p = in; *p;) {
                size_t n = strcspn(p, "/");

                if (n == 2 && strncmp(p, "..", 2) == 0)
                        return -EINVAL;
                if (n > 0 && !(n == 1 && *p == '.')) {
                        if (len > 0)
                                out[len++] = '/';
                        memcpy(out + len, p, n);
                        len += n;
                }
                p += n;
                p += strspn(p, "/");
        }
        out[len] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

static int fail(Restore *o, const char *path, int r, const char *what) {
        fprintf(o->log, "%s: %s: %s\n", *path ? path : ".", what, strerror(-r));
        return r;
}

static char *join(const char *prefix, const char *name) {
        char *p = NULL;

        return asprintf(&p, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0 ? NULL : p;
}

static int merge_contents(Restore *o, int sfd, int lfd, dev_t dev, const char *prefix, int staging);

/* Put staged sdir/name in place of ldir/name. */
static int merge_entry(Restore *o, int sdir, int ldir, const char *name, dev_t dev, const char *path) {
        struct stat ss, ls, now;
        bool live;

        if (fstatat(sdir, name, &ss, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : fail(o, path, -errno, "cannot stat the staged copy");
        live = fstatat(ldir, name, &ls, AT_SYMLINK_NOFOLLOW) == 0;
        if (!live && errno != ENOENT)
                return fail(o, path, -errno, "cannot stat");
        if (live && S_ISDIR(ls.st_mode) && ls.st_dev != dev)
                return fail(o, path, -EXDEV, "another filesystem is mounted here; not restoring over it");

        if (live && S_ISDIR(ls.st_mode) && S_ISDIR(ss.st_mode)) {
                _cleanup_close_ int cs = -EBADF, cl = -EBADF;
                int r;

                cs = openat(sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cs < 0)
                        return fail(o, path, -errno, "cannot open the staged copy");
                cl = openat(ldir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (cl < 0 || fstat(cl, &now) < 0)
                        return fail(o, path, -errno, "cannot open");
                if (now.st_ino != ls.st_ino || now.st_dev != ls.st_dev)
                        return fail(o, path, -ESTALE, "replaced while restoring");
                r = merge_contents(o, cs, cl, dev, path, -1);
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

static bool in_sorted(char **names, size_t n, const char *name) {
        return n > 0 && bsearch(&name, names, n, sizeof(char *), names_cmp);
}

static int merge_contents(Restore *o, int sfd, int lfd, dev_t dev, const char *prefix, int staging) {
        struct stat stg = {};
        char **names = NULL, **live = NULL;
        size_t n = 0, nl = 0;
        int r;

        if (staging >= 0 && fstat(staging, &stg) < 0)
                return -errno;
        r = dir_names_sorted(sfd, NULL, &names, &n);
        if (r < 0)
                return fail(o, prefix, r, "cannot read the staged copy");
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *path = join(prefix, names[i]);

                r = path ? merge_entry(o, sfd, lfd, names[i], dev, path) : -ENOMEM;
        }
        if (r >= 0 && o->delete) {
                r = dir_names_sorted(lfd, NULL, &live, &nl);
                if (r < 0)
                        fail(o, prefix, r, "cannot read directory");
        }
        for (size_t i = 0; r >= 0 && o->delete && i < nl; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (in_sorted(names, n, live[i]) ||
                    fstatat(lfd, live[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if ((st.st_dev == o->skip_dev && st.st_ino == o->skip_ino) ||
                    (staging >= 0 && st.st_dev == stg.st_dev && st.st_ino == stg.st_ino) ||
                    (S_ISDIR(st.st_mode) && st.st_dev != dev))
                        continue;       /* the store, the staging area, a mount */
                path = join(prefix, live[i]);
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

/*
 * Open the directory rel (a normalized relative path) under root, one
 * component at a time, never following a symbolic link.  With snap >= 0,
 * missing directories are made with the metadata of their twins under
 * snap.  Returns a descriptor or -errno.
 */
static int open_dirs(Restore *o, int root, int snap, const char *rel) {
        _cleanup_free_ char *copy = strdup(rel), *done = NULL;
        _cleanup_close_ int fd = -EBADF, sfd = -EBADF;
        struct stat rs;
        char *p, *next;

        if (!copy || !(done = strdup("")))
                return -ENOMEM;
        if (fstat(root, &rs) < 0)
                return -errno;
        fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (snap >= 0)
                sfd = fcntl(snap, F_DUPFD_CLOEXEC, 3);
        if (fd < 0 || (snap >= 0 && sfd < 0))
                return -errno;
        for (p = copy; *p; p = next) {
                _cleanup_free_ char *path = NULL;
                struct stat st;
                int c;

                next = p + strcspn(p, "/");
                if (*next)
                        *next++ = '\0';
                path = join(done, p);
                if (!path)
                        return -ENOMEM;
                free(done);
                done = TAKE_PTR(path);

                if (sfd >= 0) {
                        c = openat(sfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (c < 0)
                                return fail(o, done, -errno, "cannot open in the snapshot");
                        safe_close(sfd);
                        sfd = c;
                }
                c = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (c < 0 && errno == ENOENT && sfd >= 0) {
                        if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST)
                                return fail(o, done, -errno, "cannot make directory");
                        c = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (c >= 0 && fstat(sfd, &st) == 0) {
                                int r = copy_meta_fd(sfd, c, &st);
                                if (r < 0) {
                                        safe_close(c);
                                        return fail(o, done, r, "cannot set the directory's attributes");
                                }
                        }
                }
                if (c < 0) {
                        if (errno == ELOOP || errno == ENOTDIR)
                                return fail(o, done, -ENOTDIR,
                                            "not a directory in the live tree (a symbolic link?), not following it");
                        if (errno == ENOENT && sfd < 0)
                                return -ENOENT;
                        return fail(o, done, -errno, "cannot open");
                }
                safe_close(fd);
                fd = c;
                if (fstat(fd, &st) < 0)
                        return -errno;
                if (st.st_dev != rs.st_dev)
                        return fail(o, done, -EXDEV, "another filesystem is mounted here, not entering it");
        }
        return TAKE_FD(fd);
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

int restore_remove_leftovers(int live_root) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = dir_names_sorted(live_root, NULL, &names, &n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *p = names[i] + strlen(RESTORE_STAGING_PREFIX);
                char *end;
                long pid;

                if (strncmp(names[i], RESTORE_STAGING_PREFIX, strlen(RESTORE_STAGING_PREFIX)) != 0)
                        continue;
                /* Another restore into this tree, still running: its own. */
                pid = strtol(p, &end, 10);
                if (*p && !*end && pid > 0 && pid != getpid() && (kill(pid, 0) == 0 || errno == EPERM))
                        continue;
                r = rm_rf_at(live_root, names[i]);
        }
        strv_free(names);
        return r;
}

int restore_run(Restore *o, int snap_root, int live_root, const char *path) {
        _cleanup_close_ int snap_dir = -EBADF, live_dir = -EBADF, staging = -EBADF;
        _cleanup_free_ char *dir = NULL;
        const char *base = NULL;
        char stg_name[sizeof(RESTORE_STAGING_PREFIX) + 12];
        struct stat st, live_st;
        Walk w = { .ops = o->ops ? o->ops : &snapshot_reflink_ops, .log = o->log };
        int r, k;

        if (!path)
                path = "";
        if (fstat(live_root, &live_st) < 0)
                return -errno;
        if (*path) {
                const char *slash = strrchr(path, '/');

                dir = slash ? strndup(path, slash - path) : strdup("");
                if (!dir)
                        return -ENOMEM;
                base = slash ? slash + 1 : path;
                snap_dir = open_dirs(o, snap_root, -1, dir);
                if (snap_dir == -ENOENT || snap_dir == -ENOTDIR ||
                    (snap_dir >= 0 && fstatat(snap_dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0)) {
                        fprintf(o->log, "%s: not in the snapshot\n", path);
                        return -ENOENT;
                }
                if (snap_dir < 0)
                        return snap_dir;
        }

        if (o->dry_run) {
                TreeDiff d = {
                        .fn = print_change,
                        .userdata = o,
                        .report_dirs = true,
                        .skip_prefix = RESTORE_STAGING_PREFIX,
                        .skip_dev = o->skip_dev,
                        .skip_ino = o->skip_ino,
                };

                if (!*path)
                        r = tree_diff(&d, live_root, snap_root, NULL, "");
                else {
                        live_dir = open_dirs(o, live_root, -1, dir);
                        if (live_dir < 0 && live_dir != -ENOENT)
                                return live_dir;
                        r = tree_diff(&d, live_dir, snap_dir, base, path);
                }
                return r < 0 ? fail(o, path, r, "cannot compare") : 0;
        }

        if (*path) {
                live_dir = open_dirs(o, live_root, snap_root, dir);
                if (live_dir < 0)
                        return live_dir;
        }
        (void) restore_remove_leftovers(live_root);
        snprintf(stg_name, sizeof(stg_name), RESTORE_STAGING_PREFIX "%d", (int) getpid());
        if (mkdirat(live_root, stg_name, 0700) < 0)
                return fail(o, stg_name, -errno, "cannot make the staging directory");
        staging = openat(live_root, stg_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (staging < 0) {
                r = fail(o, stg_name, -errno, "cannot open the staging directory");
                goto out;
        }
        if (*path) {
                r = walk_entry(&w, snap_dir, base, staging);
                if (r >= 0)
                        r = merge_entry(o, staging, live_dir, base, live_st.st_dev, path);
        } else {
                r = walk_tree(&w, snap_root, staging);
                if (r >= 0)
                        r = merge_contents(o, staging, live_root, live_st.st_dev, "", staging);
                if (r >= 0 && fstat(snap_root, &st) == 0) {
                        r = copy_meta_fd(snap_root, live_root, &st);
                        if (r < 0)
                                fail(o, ".", r, "cannot set the root directory's attributes");
                }
        }
        if (r < 0 && r == -EXDEV && w.stats.files == 0)
                fprintf(o->log, "the live tree is not on the snapshot's filesystem: reflinks cannot cross filesystems\n");
out:
        staging = safe_close(staging);
        k = rm_rf_at(live_root, stg_name);
        if (k < 0)
                fprintf(o->log, "%s: cannot remove the staging directory: %s\n", stg_name, strerror(-k));
        /* Removing the staging directory touched the root: its times again. */
        if (r >= 0 && !*path && fstat(snap_root, &st) == 0) {
                r = copy_times_fd(live_root, &st);
                if (r < 0)
                        fail(o, ".", r, "cannot set the root directory's times");
        }
        return r;
}
