/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "chase.h"
#include "dirent-util.h"
#include "exclude.h"
#include "rm-rf.h"
#include "strv.h"
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

/* One line of the report: MARK, the path (relative to the destination) in hex, why (may be NULL). */
static void say(SelfTree *t, char mark, const char *shown, bool dir, const char *why) {
        if (!t->out)
                return;
        fprintf(t->out, "%c ", mark);
        for (const unsigned char *p = (const unsigned char *) shown; *p; p++)
                fprintf(t->out, "%02x", *p);
        if (dir)
                fprintf(t->out, "2f");
        fprintf(t->out, "%s%s\n", why ? " " : "", why ? why : "");
}

static void refuse(SelfTree *t, const char *shown, bool dir, const char *why, int error) {
        say(t, '!', shown, dir, why);
        t->refused++;
        if (t->error == 0)
                t->error = error < 0 ? error : -EPERM;
}

static char *path_add(const char *a, const char *b) {
        return *a ? path_join(a, b) : strdup(b);
}

/* The mode a restored entry st gets (self_restored_mode(), directories too). */
static mode_t restored_mode(const struct statx *st) {
        unsigned p = preserve_for(st);

        return (p & REFLINK_ATTR_OWNER) ? st->stx_mode & 07777 : self_restored_mode(st->stx_mode, p);
}

/*
 * Is the live entry lst (at rel of the job) in the newest snapshot as it
 * is: there with the same type, size, modification time, mode and
 * owner, and not changed since that snapshot began (its status change
 * time before it)?  Then replacing it loses nothing.
 */
static bool kept_already(SelfTree *t, const char *rel, const struct statx *lst) {
        struct statx ns;

        if (t->newest < 0 || self_find_version(t->newest, rel, &ns) < 0)
                return false;
        return (ns.stx_mode & S_IFMT) == (lst->stx_mode & S_IFMT) && ns.stx_size == lst->stx_size &&
               ns.stx_mtime.tv_sec == lst->stx_mtime.tv_sec && ns.stx_mtime.tv_nsec == lst->stx_mtime.tv_nsec &&
               ns.stx_mode == lst->stx_mode && ns.stx_uid == lst->stx_uid && ns.stx_gid == lst->stx_gid &&
               !S_ISDIR(lst->stx_mode) && (time_t) lst->stx_ctime.tv_sec < t->newest_time;
}

/* Is the live entry (dir_fd/name, lst) what restoring src (st) would make?  Then it is left alone. */
static bool same_as_restored(int src, const struct statx *st, int dir_fd, const char *name, const struct statx *lst) {
        char a[PATH_MAX + 1], b[PATH_MAX + 1];
        ssize_t la, lb;

        if ((st->stx_mode & S_IFMT) != (lst->stx_mode & S_IFMT))
                return false;
        if (S_ISLNK(st->stx_mode)) {
                la = readlinkat(src, "", a, sizeof(a) - 1);
                lb = readlinkat(dir_fd, name, b, sizeof(b) - 1);
                return la >= 0 && la == lb && memcmp(a, b, la) == 0;
        }
        return S_ISREG(st->stx_mode) && st->stx_size == lst->stx_size &&
               st->stx_mtime.tv_sec == lst->stx_mtime.tv_sec && st->stx_mtime.tv_nsec == lst->stx_mtime.tv_nsec &&
               (lst->stx_mode & 07777) == restored_mode(st) && lst->stx_uid == geteuid();
}

/*
 * Make the file or link src (st) in dest under a hidden name, *tmp: a
 * regular file by reflinkat(2), keeping what she may keep, a link as
 * the link.  -errno, and nothing left, on failure.
 */
static int make_file(int src, const struct statx *st, int dest, char tmp[static 64]) {
        char target[PATH_MAX + 1];
        ssize_t len;
        int r;

        snprintf(tmp, 64, SELF_TEMP_PREFIX "%d-%08x", (int) getpid(), (unsigned) (random() ^ (unsigned) time(NULL)));
        /*
         * What is not preserved (another user's file) gets the source's
         * permission bits less this: never a file others may write, where
         * she did not say so herself; and what her group may not have
         * (self_restored_mode()), from the start.
         */
        umask(022);
        if (!S_ISLNK(st->stx_mode))
                umask(022 | (~self_restored_mode(st->stx_mode, preserve_for(st)) & 0070));
        if (S_ISLNK(st->stx_mode)) {
                len = readlinkat(src, "", target, sizeof(target) - 1);
                if (len < 0)
                        return -errno;
                target[len] = '\0';
                return symlinkat(target, dest, tmp) < 0 ? -errno : 0;
        }
        r = reflinkat(src, "", dest, tmp, preserve_for(st), AT_EMPTY_PATH) < 0 ? -errno : 0;
        /*
         * Another mount: her descriptor is of her mount namespace, the
         * snapshot of the daemon's (a private one), and reflinkat(2) wants
         * one mount as link(2) does.  The stock path wants one filesystem
         * only (FICLONE): the unnamed inode made in her directory, its
         * extents shared with the snapshot's file, what preserve asks kept
         * or the call failed, then named in her directory; never a copy.
         */
        if (r == -EXDEV)
                r = reflinkat_stock(src, "", dest, tmp, preserve_for(st), AT_EMPTY_PATH) < 0 ? -errno : 0;
        if (r < 0)
                return r;
        /*
         * Not her file's owner kept: it is in her own group, not the
         * file's, and what the file gave its group is not her group's.
         * Never following a link (someone who may write dest could put one
         * there meanwhile).
         */
        if (!(preserve_for(st) & REFLINK_ATTR_OWNER) &&
            fchmodat(dest, tmp, self_restored_mode(st->stx_mode, preserve_for(st)), AT_SYMLINK_NOFOLLOW) < 0) {
                r = -errno;
                (void) unlinkat(dest, tmp, 0);
                return r;
        }
        return 0;
}

/* A live entry the plan will replace or remove, as it saw it. */
typedef struct SelfPlanEntry {
        char *key;              /* the path shown, in hex */
        uint64_t dev, ino, size;
        int64_t ctime_sec;
        uint32_t ctime_nsec, mode;
} SelfPlanEntry;

/* What a live entry's identity is made of (the plan's record of it, its check). */
#define IDENT_MASK (STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | STATX_CTIME | STATX_MTIME | STATX_UID | \
                    STATX_GID)

static char *hex_of(const char *shown) {
        size_t len = strlen(shown);
        char *h = malloc(2 * len + 1);

        if (!h)
                return NULL;
        for (size_t i = 0; i < len; i++)
                sprintf(h + 2 * i, "%02x", (unsigned char) shown[i]);
        h[2 * len] = '\0';
        return h;
}

static uint64_t dev_of(const struct statx *st) {
        return (uint64_t) makedev(st->stx_dev_major, st->stx_dev_minor);
}

/* The plan: the live entry shown (st) will be replaced or removed. */
static void plan_record(SelfTree *t, const char *shown, const struct statx *st) {
        _cleanup_free_ char *h = NULL;

        if (!t->record || !t->out)
                return;
        h = hex_of(shown);
        if (!h) {
                t->error = -ENOMEM;
                return;
        }
        fprintf(t->out, "P %s %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRIu32 " %" PRIu64 " %" PRIu32 "\n", h,
                dev_of(st), (uint64_t) st->stx_ino, (int64_t) st->stx_ctime.tv_sec, st->stx_ctime.tv_nsec,
                (uint64_t) st->stx_size, (uint32_t) st->stx_mode);
}

static int plan_cmp(const void *a, const void *b) {
        return strcmp(((const SelfPlanEntry *) a)->key, ((const SelfPlanEntry *) b)->key);
}

static void plan_free(SelfTree *t) {
        for (size_t i = 0; i < t->n_planned; i++)
                free(t->planned[i].key);
        t->planned = mfree(t->planned);
        t->n_planned = 0;
}

/* t->plan's "P ..." lines, sorted by path; other lines ignored.  0 or -ENOMEM. */
static int plan_load(SelfTree *t) {
        size_t cap = 0;

        for (const char *p = t->plan; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
                SelfPlanEntry e = {};
                char *key = NULL;

                if (strncmp(p, "P ", 2) != 0)
                        continue;
                if (sscanf(p, "P %ms %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNu32 " %" SCNu64 " %" SCNu32, &key,
                           &e.dev, &e.ino, &e.ctime_sec, &e.ctime_nsec, &e.size, &e.mode) != 7) {
                        free(key);
                        continue;       /* never matched: what it names is not replaced */
                }
                e.key = key;
                if (t->n_planned == cap) {
                        SelfPlanEntry *m = reallocarray(t->planned, cap ? cap * 2 : 16, sizeof(SelfPlanEntry));

                        if (!m) {
                                free(key);
                                return -ENOMEM;
                        }
                        t->planned = m;
                        cap = cap ? cap * 2 : 16;
                }
                t->planned[t->n_planned++] = e;
        }
        if (t->n_planned > 0)
                qsort(t->planned, t->n_planned, sizeof(SelfPlanEntry), plan_cmp);
        return 0;
}

/*
 * May the live entry shown (st, as it is now) be replaced or removed?
 * With no plan (the plan itself, a dry run): yes.  Else only where the
 * plan saw it, as it is: the same inode (device, number), type, mode,
 * size and status change time (any write, chmod, chown, rename or link
 * since changes it).
 */
static bool planned(SelfTree *t, const char *shown, const struct statx *st) {
        _cleanup_free_ char *h = NULL;
        const SelfPlanEntry *e;

        if (!t->plan)
                return true;
        h = hex_of(shown);
        if (!h)
                return false;
        e = bsearch(&(SelfPlanEntry) { .key = h }, t->planned, t->n_planned, sizeof(SelfPlanEntry), plan_cmp);
        return e && e->dev == dev_of(st) && e->ino == st->stx_ino && e->mode == st->stx_mode &&
               e->size == st->stx_size && e->ctime_sec == (int64_t) st->stx_ctime.tv_sec &&
               e->ctime_nsec == st->stx_ctime.tv_nsec;
}

/* Is dir_fd/name (now) the inode st was (device, number, type)?  A rename changes its ctime, nothing else. */
static bool same_inode_at(int dir_fd, const char *name, const struct statx *st) {
        struct statx now;

        return statx_no_xdev(dir_fd, name, IDENT_MASK, &now) >= 0 && dev_of(&now) == dev_of(st) &&
               now.stx_ino == st->stx_ino && (now.stx_mode & S_IFMT) == (st->stx_mode & S_IFMT);
}

static void temp_name(char tmp[static 64]) {
        snprintf(tmp, 64, SELF_TEMP_PREFIX "%d-%08x", (int) getpid(), (unsigned) (random() ^ (unsigned) time(NULL)));
}

/*
 * Remove dir_fd/name, checked as planned (lst) just before: renamed
 * aside to a hidden name first, removed there only if it is the very
 * inode checked (else put back: someone put another there meanwhile).
 * A directory only when empty (its entries removed one by one before).
 * 0, or -errno (-ESTALE: it changed; nothing removed).
 */
static int remove_planned(SelfTree *t, int dir_fd, const char *name, const struct statx *lst) {
        char tmp[64];

        if (!t->plan)
                return S_ISDIR(lst->stx_mode) ? (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 ? -errno : 0) :
                       rm_rf_at(dir_fd, name);
        temp_name(tmp);
        if (renameat2(dir_fd, name, dir_fd, tmp, RENAME_NOREPLACE) < 0)
                return errno == ENOENT ? -ESTALE : -errno;
        if (!same_inode_at(dir_fd, tmp, lst)) {
                if (renameat2(dir_fd, tmp, dir_fd, name, RENAME_NOREPLACE) < 0)
                        return -EADDRINUSE;     /* left under tmp: said so */
                return -ESTALE;
        }
        if (unlinkat(dir_fd, tmp, S_ISDIR(lst->stx_mode) ? AT_REMOVEDIR : 0) < 0) {
                int r = -errno;

                (void) renameat2(dir_fd, tmp, dir_fd, name, RENAME_NOREPLACE);
                return r == -ENOTEMPTY || r == -EEXIST ? -ESTALE : r;
        }
        return 0;
}

/*
 * Put dest/tmp (just made: mine) where dest/name is, over the live entry
 * checked as planned (lst) just before, and nothing else: the two
 * exchanged (RENAME_EXCHANGE), the one taken out checked to be that very
 * inode and removed, else exchanged back and what was made removed
 * (nothing unplanned is ever lost).  Without a plan (or where the
 * filesystem cannot exchange) renamed over it.  0, or -errno (-ESTALE:
 * it changed; nothing replaced; -EADDRINUSE: and what was there is left
 * under tmp).
 */
static int replace_planned(SelfTree *t, int dest, const char *tmp, const char *name, const struct statx *lst) {
        struct statx mine;

        if (!t->plan)
                return renameat2(dest, tmp, dest, name, 0) < 0 ? -errno : 0;
        if (statx_no_xdev(dest, tmp, IDENT_MASK, &mine) < 0)
                return -errno;
        if (renameat2(dest, tmp, dest, name, RENAME_EXCHANGE) < 0) {
                if (errno == ENOENT)
                        return -ESTALE;
                if (errno != EINVAL && errno != EOPNOTSUPP)
                        return -errno;
                /* No exchange here: checked once more, then renamed over it. */
                if (!same_inode_at(dest, name, lst))
                        return -ESTALE;
                return renameat2(dest, tmp, dest, name, 0) < 0 ? -errno : 0;
        }
        /* tmp is what was there. */
        if (same_inode_at(dest, tmp, lst))
                return unlinkat(dest, tmp, 0) < 0 ? -errno : 0;
        if (renameat2(dest, tmp, dest, name, RENAME_EXCHANGE) < 0 || !same_inode_at(dest, tmp, &mine))
                return -EADDRINUSE;
        (void) unlinkat(dest, tmp, 0);
        return -ESTALE;
}

static int restore_entry(SelfTree *t, int root, int dest, const char *name, const char *rel, const char *shown,
                         unsigned depth, bool top);

/* Whether rel of root, reached as this process, is a directory (for the report's trailing '/'). */
static bool entry_is_dir(int root, const char *rel) {
        _cleanup_close_ int fd = open_entry(root, rel);
        struct statx st;

        return fd >= 0 &&
               statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_TYPE, &st) == 0 &&
               S_ISDIR(st.stx_mode);
}

/* May --delete remove what the snapshot's directory rel lacks? */
static bool delete_here(const SelfTree *t, const char *rel) {
        if (!t->delete_limited)
                return true;
        for (char *const *g = t->delete_below; g && *g; g++)
                if (path_startswith(rel, *g))
                        return true;
        return false;
}

/* Does delete leave rel alone: excluded (itself, or a directory above it), or skipped by the snapshot? */
static bool delete_keeps(const SelfTree *t, const char *rel, bool is_dir) {
        _cleanup_free_ char *at = NULL;
        const char *x = rel;

        /* The job's excludes at the destination's path (the job holding it), what the snapshot skipped at its own. */
        if (t->dest_rel && t->top_rel && path_startswith(rel, t->top_rel)) {
                if (asprintf(&at, "%s%s", t->dest_rel, rel + strlen(t->top_rel)) < 0)
                        return true;
                x = at;
        }
        if (exclude_match(t->exclude, x, is_dir))
                return true;
        for (const char *p = strchr(x, '/'); t->exclude && p; p = strchr(p + 1, '/')) {
                _cleanup_free_ char *up = strndup(x, p - x);

                if (up && exclude_match(t->exclude, up, true))
                        return true;
        }
        for (char *const *k = t->keep; k && *k; k++)
                if (strcmp(*k, rel) == 0)
                        return true;
        return false;
}

/*
 * Remove dir_fd/name (rel in the job, shown in the report), which the
 * snapshot does not have, as this process: what delete keeps is left
 * (said '='), with the directories that hold it; never a link followed,
 * never a mount entered.  Returns 1 when something was kept.
 */
static int delete_entry(SelfTree *t, int dir_fd, const char *name, const char *rel, const char *shown, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        char **names = NULL;
        struct statx lst, ost;
        size_t n = 0;
        int r, kept = 0;

        r = statx_no_xdev(dir_fd, name, IDENT_MASK, &lst);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                refuse(t, shown, false, r == -EXDEV ? "a mount point: never removed" : "cannot look at it", r);
                return 1;
        }
        if (delete_keeps(t, rel, S_ISDIR(lst.stx_mode))) {
                t->kept++;
                say(t, '=', shown, S_ISDIR(lst.stx_mode), "excluded or skipped: --delete leaves it");
                return 1;
        }
        if (!t->replace) {
                refuse(t, shown, S_ISDIR(lst.stx_mode), "not removed without a guard snapshot", -EEXIST);
                return 1;
        }
        /* Only what the plan saw, as it saw it (a directory: nothing made, removed or renamed in it since). */
        if (!planned(t, shown, &lst)) {
                refuse(t, shown, S_ISDIR(lst.stx_mode), "changed since the plan: not removed", -ESTALE);
                return 1;
        }
        plan_record(t, shown, &lst);
        if (S_ISDIR(lst.stx_mode)) {
                if (depth > SELF_RESTORE_DEPTH_MAX) {
                        refuse(t, shown, true, "too deep", -ELOOP);
                        return 1;
                }
                /* Emptied one entry at a time, as her: what is kept, or changed since the plan, stays. */
                fd = open_no_xdev(dir_fd, name, O_RDONLY | O_DIRECTORY);
                if (fd >= 0 && (statx(fd, "", AT_EMPTY_PATH, IDENT_MASK, &ost) < 0 || dev_of(&ost) != dev_of(&lst) ||
                                ost.stx_ino != lst.stx_ino)) {
                        refuse(t, shown, true, "changed since the plan: not removed", -ESTALE);
                        return 1;
                }
                r = fd < 0 ? fd : dir_names_sorted(fd, &names, &n);
                if (r < 0) {
                        refuse(t, shown, true, strerror(-r), r);
                        return 1;
                }
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *crel = path_add(rel, names[i]), *cshown = path_add(shown, names[i]);

                        if (!crel || !cshown) {
                                t->error = -ENOMEM;
                                kept = 1;
                                break;
                        }
                        kept |= delete_entry(t, fd, names[i], crel, cshown, depth + 1);
                }
                strv_free(names);
                if (kept)
                        return 1;
        }
        t->removed++;
        if (!kept_already(t, rel, &lst))
                t->unkept++;
        if (t->dry_run) {
                say(t, '-', shown, S_ISDIR(lst.stx_mode), NULL);
                return 0;
        }
        r = remove_planned(t, dir_fd, name, &lst);
        if (r < 0) {
                refuse(t, shown, S_ISDIR(lst.stx_mode), r == -ESTALE ? "changed since the plan: not removed" :
                       r == -EADDRINUSE ? "changed since the plan: not removed (what is there now is under a "
                       "name beginning " SELF_TEMP_PREFIX ")" : strerror(-r), r);
                return 1;
        }
        say(t, '-', shown, S_ISDIR(lst.stx_mode), NULL);
        return 0;
}

/*
 * The live directory ddir (O_RDONLY; -EBADF in a dry run where it is not
 * made yet): each entry of the snapshot's directory sdir restored into
 * it, then, with delete, what the snapshot's does not have removed.
 */
static void restore_children(SelfTree *t, int root, int sdir, int ddir, const char *rel, const char *shown,
                             unsigned depth) {
        char **names = NULL, **live = NULL;
        size_t n = 0, k = 0;
        int r;

        r = dir_names_sorted(sdir, &names, &n);
        if (r < 0) {
                refuse(t, shown, true, "cannot list it in the snapshot", r);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *crel = path_add(rel, names[i]), *cshown = path_add(shown, names[i]);

                if (!crel || !cshown) {
                        t->error = -ENOMEM;
                        break;
                }
                (void) restore_entry(t, root, ddir, names[i], crel, cshown, depth + 1, false);
        }
        if (t->delete && ddir >= 0 && delete_here(t, rel)) {
                r = dir_names_sorted(ddir, &live, &k);
                if (r < 0)
                        refuse(t, shown, true, "cannot list it to delete what the snapshot lacks", r);
                for (size_t i = 0; r >= 0 && i < k; i++) {
                        _cleanup_free_ char *crel = NULL, *cshown = NULL;

                        if (names_contain(names, n, live[i]) ||
                            strncmp(live[i], SELF_TEMP_PREFIX, strlen(SELF_TEMP_PREFIX)) == 0)
                                continue;
                        crel = path_add(rel, live[i]);
                        cshown = path_add(shown, live[i]);
                        if (!crel || !cshown) {
                                t->error = -ENOMEM;
                                break;
                        }
                        (void) delete_entry(t, ddir, live[i], crel, cshown, depth + 1);
                }
        }
        strv_free(names);
        strv_free(live);
}

/*
 * rel of the snapshot root into dest as name (shown in the report as
 * shown).  Returns 0 or, for the top entry (the only one whose failure
 * is the call's), -ENOENT (not visible), -EMEDIUMTYPE, -EEXIST (a live
 * entry and no replacing), or -errno; below it, problems are refused
 * entries in the report.
 */
static int restore_entry(SelfTree *t, int root, int dest, const char *name, const char *rel, const char *shown,
                         unsigned depth, bool top) {
        _cleanup_close_ int src = -EBADF, sdir = -EBADF, ddir = -EBADF;
        struct statx st, lst;
        bool have_live, made = false;
        char tmp[64];
        int r;

        if (t->error == -ENOMEM)
                return -ENOMEM;
        /* Visible as Versions() says it: the stricter of the snapshot and the live tree. */
        if (self_visible_now(t->live, t->roots, t->n, rel) < 0 || self_find_version(root, rel, &st) < 0) {
                if (top)
                        return -ENOENT;
                /* Its name is in a directory she may list: that much she may be told, and its type. */
                refuse(t, shown, entry_is_dir(root, rel), "not restored: you may not read it", -EACCES);
                return 0;
        }
        if (!S_ISREG(st.stx_mode) && !S_ISLNK(st.stx_mode) && !S_ISDIR(st.stx_mode)) {
                if (top)
                        return -EMEDIUMTYPE;
                refuse(t, shown, false, "neither a file, a directory nor a symbolic link: never made for a user",
                       -EMEDIUMTYPE);
                return 0;
        }
        if (depth > SELF_RESTORE_DEPTH_MAX) {
                refuse(t, shown, S_ISDIR(st.stx_mode), "too deep", -ELOOP);
                return top ? -ELOOP : 0;
        }
        src = open_entry(root, rel);
        if (src < 0) {
                if (top)
                        return -ENOENT;
                refuse(t, shown, false, "not restored: you may not read it", -EACCES);
                return 0;
        }
        /* The live twin, as she sees it (dest < 0: a directory not made, in a dry run). */
        r = dest < 0 ? -ENOENT : statx_no_xdev(dest, name, IDENT_MASK, &lst);
        if (r < 0 && r != -ENOENT) {
                if (top)
                        return r;
                refuse(t, shown, S_ISDIR(st.stx_mode), r == -EXDEV ? "a mount point: never replaced" :
                       "cannot look at it", r);
                return 0;
        }
        have_live = r >= 0;

        if (S_ISDIR(st.stx_mode)) {
                if (have_live && !S_ISDIR(lst.stx_mode)) {
                        refuse(t, shown, true, "not a directory here: not replaced by one", -ENOTDIR);
                        return top ? -ENOTDIR : 0;
                }
                /* Listed as her in the snapshot (visible: she may). */
                sdir = open_no_xdev(src, ".", O_RDONLY | O_DIRECTORY);
                if (sdir < 0) {
                        refuse(t, shown, true, "not restored: you may not read it", sdir);
                        return top ? -ENOENT : 0;
                }
                if (!have_live) {
                        t->made++;
                        if (!t->dry_run) {
                                if (mkdirat(dest, name, 0700) < 0) {
                                        r = -errno;
                                        refuse(t, shown, true, strerror(-r), r);
                                        return top ? r : 0;
                                }
                                made = true;
                        }
                        say(t, '+', shown, true, NULL);
                }
                if (have_live || made) {
                        struct statx dst;
                        const char *why = NULL;

                        ddir = open_no_xdev(dest, name, O_RDONLY | O_DIRECTORY);
                        if (ddir < 0) {
                                refuse(t, shown, true, ddir == -EXDEV ? "a mount point: never entered" :
                                       strerror(-ddir), ddir);
                                return top ? ddir : 0;
                        }
                        /*
                         * Only her own directory is merged into, or root's
                         * that no group or other may write (another user's
                         * may read, move and remove what she puts there),
                         * and one she made only if it is still the one
                         * made: hers, closed, empty.
                         */
                        if (statx(ddir, "", AT_EMPTY_PATH, IDENT_MASK, &dst) < 0)
                                why = "cannot look at it";
                        else if (dst.stx_uid != geteuid() &&
                                 (made || dst.stx_uid != 0 || (dst.stx_mode & (S_IWGRP | S_IWOTH))))
                                why = made ? "replaced by another user's directory while it was made: not entered" :
                                      "a directory of another user's here: not merged into";
                        else if (have_live && (dev_of(&dst) != dev_of(&lst) || dst.stx_ino != lst.stx_ino))
                                why = "changed while it was looked at: not entered";
                        else if (made) {
                                char **in = NULL;
                                size_t k = 0;

                                if ((dst.stx_mode & 077) != 0 || dir_names_sorted(ddir, &in, &k) < 0 || k > 0)
                                        why = "replaced by another directory while it was made: not entered";
                                strv_free(in);
                        }
                        if (why) {
                                refuse(t, shown, true, why, -EPERM);
                                return top ? -EPERM : 0;
                        }
                }
                restore_children(t, root, sdir, ddir, rel, shown, depth);
                /* Its metadata back, as far as she may set it (her own directory: mode and times). */
                if (!t->dry_run && ddir >= 0) {
                        struct timespec ts[2] = {
                                { .tv_sec = st.stx_atime.tv_sec, .tv_nsec = st.stx_atime.tv_nsec },
                                { .tv_sec = st.stx_mtime.tv_sec, .tv_nsec = st.stx_mtime.tv_nsec },
                        };

                        if (fchmod(ddir, restored_mode(&st)) >= 0)
                                t->dirs++;
                        (void) futimens(ddir, ts);
                }
                return 0;
        }

        if (have_live && S_ISDIR(lst.stx_mode)) {
                refuse(t, shown, false, "a directory here: not replaced", -EISDIR);
                return top ? -EISDIR : 0;
        }
        if (have_live && same_as_restored(src, &st, dest, name, &lst)) {
                t->kept++;
                say(t, '=', shown, false, NULL);
                return 0;
        }
        if (have_live && !t->replace) {
                if (top)
                        return -EEXIST;
                refuse(t, shown, false, "exists: not replaced without a guard snapshot", -EEXIST);
                return 0;
        }
        /* Only what the plan saw, as it saw it. */
        if (have_live && !planned(t, shown, &lst)) {
                refuse(t, shown, false, "changed since the plan: not replaced", -ESTALE);
                return top ? -ESTALE : 0;
        }
        if (have_live) {
                plan_record(t, shown, &lst);
                t->replaced++;
                if (!kept_already(t, rel, &lst))
                        t->unkept++;
        } else
                t->made++;
        if (t->dry_run) {
                say(t, have_live ? '~' : '+', shown, false, NULL);
                return 0;
        }
        r = make_file(src, &st, dest, tmp);
        if (r < 0) {
                refuse(t, shown, false, strerror(-r), r);
                return top ? r : 0;
        }
        /*
         * Beside its live twin, put over it (a guard holds it, as the plan
         * saw it: replace_planned()), or renamed to a name that is not there.
         */
        r = have_live ? replace_planned(t, dest, tmp, name, &lst) :
            renameat2(dest, tmp, dest, name, RENAME_NOREPLACE) < 0 ? -errno : 0;
        if (r < 0) {
                if (r != -EADDRINUSE)
                        (void) unlinkat(dest, tmp, 0);
                if (r == -EEXIST && top)
                        return -EEXIST;
                refuse(t, shown, false, r == -EEXIST ? "exists: not replaced without a guard snapshot" :
                       r == -ESTALE ? "changed since the plan: not replaced" :
                       r == -EADDRINUSE ? "changed since the plan: not replaced (left under a name beginning "
                       SELF_TEMP_PREFIX ")" : strerror(-r), r);
                return top ? r : 0;
        }
        say(t, have_live ? '~' : '+', shown, false, NULL);
        return 0;
}

int self_restore_tree(int live, const int *roots, size_t n, size_t which, const char *rel, int dest,
                      const char *name, SelfTree *t) {
        struct statx d;
        int r;

        if (!self_path_valid(rel) || !*rel || !name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 ||
            strcmp(name, "..") == 0)
                return -EINVAL;
        if (which >= n || roots[which] < 0)
                return -ENOENT;
        t->live = live;
        t->roots = roots;
        t->n = n;
        t->top_rel = rel;
        /* Not visible: said before anything about the destination, as Versions() would say it. */
        if (self_visible_now(live, roots, n, rel) < 0 || self_find_version(roots[which], rel, &(struct statx) {}) < 0)
                return -ENOENT;
        /* The destination: a directory (her descriptor; the kernel checks her rights on it when it is written). */
        if (statx(dest, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &d) < 0)
                return -errno;
        if (!S_ISDIR(d.stx_mode))
                return -ENOTDIR;
        r = plan_load(t);
        if (r >= 0)
                r = restore_entry(t, roots[which], dest, name, rel, name, 0, true);
        plan_free(t);
        return r;
}
