/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "chase.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "reflink.h"
#include "self-service.h"

bool self_path_valid(const char *rel) {
        _cleanup_free_ char *n = NULL;

        if (!rel || strlen(rel) >= PATH_MAX)
                return false;
        if (!*rel)
                return true;
        return path_normalize_relative(rel, &n) >= 0 && strcmp(n, rel) == 0;
}

/* access(2) of the entry fd (an O_PATH descriptor) with this process's effective ids. */
static int access_fd(int fd, int mode) {
        if (syscall(SYS_faccessat2, fd, "", mode, AT_EMPTY_PATH | AT_EACCESS) < 0)
                return -errno;
        return 0;
}

/* rel beneath dir_fd, without entering a link or a mount: an O_PATH descriptor, or -errno. */
static int open_entry(int dir_fd, const char *rel) {
        _cleanup_close_ int parent = -EBADF;
        const char *base;

        if (!*rel) {
                int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);

                return fd < 0 ? -errno : fd;
        }
        parent = chase_parent(dir_fd, rel, &(Chase) { .flags = CHASE_NO_XDEV }, &base);
        if (parent < 0)
                return parent;
        return open_no_xdev(parent, base, O_PATH);
}

int self_find_version(int root, const char *rel, struct statx *ret) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!self_path_valid(rel))
                return -EINVAL;
        fd = open_entry(root, rel);
        if (fd < 0)
                return fd;
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC,
                  STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_MTIME | STATX_UID | STATX_GID, ret) < 0)
                return -errno;
        if (S_ISLNK(ret->stx_mode))
                return 0;
        r = access_fd(fd, R_OK);
        return r;
}

static int search_ok(int dir_fd, const char *path, void *userdata) {
        return access_fd(dir_fd, X_OK);
}

/*
 * rel beneath top (a live source or a snapshot's root, itself there): top
 * and each directory on the way searchable by this process, rel readable
 * by it (a symbolic link: reached).  0: visible; 1: a component is
 * missing, *ret_missing the length of rel's prefix through it; -EACCES:
 * not visible, also for an ancestor that is a symbolic link, not a
 * directory, or another mount, and for any other error (never taken for
 * "missing").
 */
static int walk_visible(int top, const char *rel, size_t *ret_missing) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int fd = -EBADF, entry = -EBADF;
        Chase c = { .flags = CHASE_NO_XDEV, .found = search_ok };
        const char *base;
        struct statx st;
        int r;

        if (!*rel)
                /* The source itself: readable. */
                return access_fd(top, R_OK) < 0 ? -EACCES : 0;
        if (access_fd(top, X_OK) < 0)
                return -EACCES;
        r = path_split(rel, &dir, &base);
        if (r < 0)
                return r;
        /* Each directory on the way, searchable; the walk itself is made as this process. */
        fd = chase_dir(top, dir, &c);
        if (fd == -ENOENT) {
                *ret_missing = c.failed_len;
                return 1;
        }
        if (fd < 0)
                return -EACCES;
        entry = open_no_xdev(fd, base, O_PATH);
        if (entry == -ENOENT) {
                *ret_missing = strlen(rel);
                return 1;
        }
        if (entry < 0)
                return -EACCES;
        if (statx(entry, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE, &st) < 0)
                return -EACCES;
        if (S_ISLNK(st.stx_mode))
                return 0;
        return access_fd(entry, R_OK) < 0 ? -EACCES : 0;
}

int self_live_visible(int live, const char *rel) {
        size_t missing;
        int r;

        if (!self_path_valid(rel))
                return -EINVAL;
        r = walk_visible(live, rel, &missing);
        return r == 1 ? 0 : r;
}

int self_visible_now(int live, const int *roots, size_t n, const char *rel) {
        size_t missing = 0;     /* the source itself, when it is gone */
        int r;

        if (!self_path_valid(rel))
                return -EINVAL;
        if (live >= 0) {
                r = walk_visible(live, rel, &missing);
                if (r <= 0)
                        return r;
        }
        /*
         * A component missing live (deleted, or renamed away by whoever
         * may write its parent): the rest of the path as the newest
         * snapshot that still has that component knows it, and so on
         * down for a component missing there too.  What this process
         * cannot search in that snapshot cannot be told apart: closed.
         */
        for (size_t i = n; i > 0; i--) {
                size_t m = 0;

                if (roots[i - 1] < 0)
                        continue;
                r = walk_visible(roots[i - 1], rel, &m);
                if (r <= 0)
                        return r;
                if (m > missing)
                        missing = m;
        }
        /* No snapshot has the rest: each one's own check decides. */
        return 0;
}

static uint64_t mtime_usec(const struct statx *st) {
        return (uint64_t) st->stx_mtime.tv_sec * 1000000ULL + st->stx_mtime.tv_nsec / 1000;
}

static bool same_version(const struct statx *a, const struct statx *b) {
        return a->stx_size == b->stx_size && a->stx_mtime.tv_sec == b->stx_mtime.tv_sec &&
               a->stx_mtime.tv_nsec == b->stx_mtime.tv_nsec && a->stx_mode == b->stx_mode &&
               a->stx_uid == b->stx_uid && a->stx_gid == b->stx_gid;
}

int self_list_versions(int live, const int *roots, char *const *names, size_t n, const char *rel, FILE *out) {
        _cleanup_free_ struct statx *st = NULL;
        _cleanup_free_ bool *found = NULL, *differs = NULL;
        struct statx *prev = NULL;
        int listed = 0;

        if (!self_path_valid(rel))
                return -EINVAL;
        if (self_visible_now(live, roots, n, rel) < 0)
                return 0;
        st = calloc(MAX(n, 1), sizeof(*st));
        found = calloc(MAX(n, 1), sizeof(*found));
        differs = calloc(MAX(n, 1), sizeof(*differs));
        if (!st || !found || !differs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                found[i] = self_find_version(roots[i], rel, &st[i]) >= 0;
                if (!found[i])
                        continue;
                differs[i] = !prev || !same_version(prev, &st[i]);
                prev = &st[i];
        }
        for (size_t i = n; i > 0; i--) {
                if (!found[i - 1])
                        continue;
                fprintf(out, "%s %" PRIu64 " %" PRIu64 " %o %d\n", names[i - 1], (uint64_t) st[i - 1].stx_size,
                        mtime_usec(&st[i - 1]), (unsigned) st[i - 1].stx_mode, differs[i - 1]);
                listed++;
        }
        return listed;
}

/* What reflinkat(2) may keep of st for this process: everything of her own file, nothing of another's. */
static unsigned preserve_for(const struct statx *st) {
        gid_t groups[NGROUPS_MAX];
        int n;

        if (st->stx_uid != geteuid())
                return REFLINK_ATTR_NONE;
        if (st->stx_gid == getegid())
                return REFLINK_ATTR_OWNER | REFLINK_ATTR_MODE | REFLINK_ATTR_ACL;
        n = getgroups(ELEMENTSOF(groups), groups);
        for (int i = 0; i < n; i++)
                if (groups[i] == st->stx_gid)
                        return REFLINK_ATTR_OWNER | REFLINK_ATTR_MODE | REFLINK_ATTR_ACL;
        return REFLINK_ATTR_MODE | REFLINK_ATTR_ACL;
}

mode_t self_restored_mode(mode_t mode, unsigned preserve) {
        mode_t o, g;

        if (preserve & REFLINK_ATTR_OWNER)
                return mode & 07777;
        o = mode & 07;
        if (!(preserve & REFLINK_ATTR_MODE))
                o &= ~(mode_t) 02;
        g = (mode >> 3) & o;
        return (mode & 0700) | (g << 3) | o | ((preserve & REFLINK_ATTR_MODE) ? mode & (S_ISUID | S_ISVTX) : 0);
}

int self_restore(int live, const int *roots, size_t n, size_t which, const char *rel, int dest, const char *name,
                 bool dry_run, const char **what) {
        _cleanup_close_ int src = -EBADF;
        char tmp[64], target[PATH_MAX + 1];
        struct statx st, d;
        ssize_t len;
        int root, r;

        *what = "destination";
        if (!self_path_valid(rel) || !*rel || !name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
            strcmp(name, "..") == 0)
                return -EINVAL;
        if (which >= n || roots[which] < 0)
                return -ENOENT;
        root = roots[which];
        if (self_visible_now(live, roots, n, rel) < 0)
                return -ENOENT;
        if (self_find_version(root, rel, &st) < 0)
                return -ENOENT;
        if (S_ISDIR(st.stx_mode))
                return -EISDIR;
        if (!S_ISREG(st.stx_mode) && !S_ISLNK(st.stx_mode))
                return -EMEDIUMTYPE;
        /* The destination: a directory (her descriptor; the kernel checks her rights on it when it is written). */
        if (statx(dest, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &d) < 0)
                return -errno;
        if (!S_ISDIR(d.stx_mode))
                return -ENOTDIR;
        /*
         * Never over a live entry: --mine takes no guard snapshot, so
         * what was written since the last snapshot (hers, or a
         * teammate's in a directory they share) would have no way back.
         * Said here for the dry run; the rename below is the guarantee.
         */
        *what = "exists";
        if (fstatat(dest, name, &(struct stat) {}, AT_SYMLINK_NOFOLLOW) == 0)
                return -EEXIST;
        *what = "destination";
        if (dry_run)
                return 0;
        src = open_entry(root, rel);
        if (src < 0)
                return -ENOENT;
        snprintf(tmp, sizeof(tmp), ".refsnap-mine-%d-%08x", (int) getpid(), (unsigned) (random() ^ (unsigned) time(NULL)));
        *what = "make";
        /*
         * What is not preserved (another user's file) gets the source's
         * permission bits less this: never a file others may write, where
         * she did not say so herself.
         */
        umask(022);
        if (!S_ISLNK(st.stx_mode))
                /* ... and what her group may not have (self_restored_mode()), from the start. */
                umask(022 | (~self_restored_mode(st.stx_mode, preserve_for(&st)) & 0070));
        if (S_ISLNK(st.stx_mode)) {
                len = readlinkat(src, "", target, sizeof(target) - 1);
                if (len < 0)
                        return -errno;
                target[len] = '\0';
                r = symlinkat(target, dest, tmp) < 0 ? -errno : 0;
        } else {
                r = reflinkat(src, "", dest, tmp, preserve_for(&st), AT_EMPTY_PATH) < 0 ? -errno : 0;
                /*
                 * Another mount: her descriptor is of her mount namespace,
                 * the snapshot of the daemon's (a private one), and
                 * reflinkat(2) wants one mount as link(2) does.  The stock
                 * path wants one filesystem only (FICLONE): the unnamed
                 * inode made in her directory, its extents shared with the
                 * snapshot's file, what preserve asks kept or the call
                 * failed, then named in her directory; never a copy.
                 */
                if (r == -EXDEV)
                        r = reflinkat_stock(src, "", dest, tmp, preserve_for(&st), AT_EMPTY_PATH) < 0 ? -errno : 0;
        }
        if (r < 0)
                return r;
        /*
         * Not her file's owner kept: it is in her own group, not the
         * file's, and what the file gave its group is not her group's.
         * Never following a link (someone who may write dest could put
         * one there meanwhile).
         */
        if (S_ISREG(st.stx_mode) && !(preserve_for(&st) & REFLINK_ATTR_OWNER) &&
            fchmodat(dest, tmp, self_restored_mode(st.stx_mode, preserve_for(&st)), AT_SYMLINK_NOFOLLOW) < 0) {
                r = -errno;
                (void) unlinkat(dest, tmp, 0);
                return r;
        }
        *what = "rename";
        if (renameat2(dest, tmp, dest, name, RENAME_NOREPLACE) < 0) {
                r = -errno;
                (void) unlinkat(dest, tmp, 0);
                if (r == -EEXIST)
                        *what = "exists";
                return r;
        }
        return 0;
}
