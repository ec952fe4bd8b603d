/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "chase.h"
#include "copy-meta.h"
#include "dirent-util.h"
#include "exclude.h"
#include "fd-util.h"
#include "escape.h"
#include "log.h"
#include "macro.h"
#include "mirror.h"
#include "mountpoint-util.h"
#include "reflink.h"
#include "rm-rf.h"
#include "stat-util.h"
#include "strv.h"
#include "xfs-util.h"

static int reflink_clone(int src, int dst_dir, const char *name, void *userdata) {
        return reflinkat(src, "", dst_dir, name, REFLINK_ATTR_ALL, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

const MirrorOps mirror_reflink_ops = { .clone = reflink_clone };

unsigned mirror_workers(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        return n < 1 ? 1 : n > MIRROR_WORKERS_MAX ? MIRROR_WORKERS_MAX : (unsigned) n;
}

typedef enum LinkState {
        LINK_MAKING,            /* a worker is making it (the lock is not held meanwhile) */
        LINK_MADE,              /* at path */
        LINK_NONE,              /* its maker left it out (vanished, skipped, put off): the next link makes it */
} LinkState;

/* Files with more than one link, by identity: where the first went. */
typedef struct Link {
        FileId id;
        char *path;             /* relative to the snapshot root; NULL: a free slot */
        LinkState state;
        /*
         * The manifest record of the member that was made (taken before its
         * data was): every later member is recorded with it, not with its
         * own later look, which a write in between would have made newer
         * than the data the snapshot holds for the group.
         */
        struct {
                uint64_t dev, ino, size;
                int64_t ctime_sec;
                uint32_t ctime_nsec, mode, nlink, flags;
        } rec;
} Link;

/*
 * Shared by the workers of one walk: the hard link table (under lock,
 * never held across a clone: a link whose file is being made waits on
 * made) and the flag that stops the others when one fails.
 */
typedef struct Links {
        pthread_mutex_t lock;
        pthread_cond_t made;
        Link *slots;            /* open addressing, cap a power of 2 */
        size_t n, cap;
        atomic_bool stop;
        atomic_bool no_links;   /* linkat() into the snapshot refused (another subvolume, read-only): no reuse */
} Links;

/* What the open of a file under another process's lease does. */
typedef enum LeaseMode {
        LEASE_PUT_OFF,          /* the walk: begin the break, put the file off (State.leased) */
        LEASE_WAIT,             /* the files put off: wait for the break */
        LEASE_SKIP,             /* past the time given to leases: skip the file */
} LeaseMode;

typedef struct State {
        Mirror *w;
        Links *links;
        MirrorStats stats;        /* this worker's; summed into w->stats */
        uint64_t root_mnt;
        dev_t root_dev;
        uint64_t root_fs_id;    /* the source root's identity (fs_identity()), as records carry it */
        int dst_root;
        char *path;             /* relative path of the entry at hand */
        size_t len, cap;
        char **leased;          /* files put off because another process holds a lease on them */
        size_t n_leased;
        LeaseMode lease_mode;
        ManifestSegment *seg;   /* this thread's part of the new manifest; NULL: none */
        ManifestReader *prev;   /* this thread's reader of the previous one; NULL: no reuse */
        bool inplace;           /* REUSE_INPLACE: the destination is a copy of the previous snapshot */
        /*
         * REUSE_LINK on XFS with nothing mounted in the source: the
         * regular files of each directory walked are looked at in bulk
         * (XFS_IOC_BULKSTAT, by readdir's inode numbers) instead of one
         * by one; bulk the directory at hand's, ascending by inode.
         */
        bool bulk_ok;
        XfsStat *bulk;
        size_t n_bulk;
        /* The filesystems met, by device: their identity (fs_identity()), asked once per device. */
        struct {
                dev_t dev;
                uint64_t id;
        } fs_ids[8];
        size_t n_fs_ids;
} State;

/* A directory as the previous snapshot had it, for REUSE_LINK. */
typedef struct Level {
        ManifestCursor cur;     /* the previous manifest's entries of this directory */
        int dir;                /* this directory in the previous snapshot (O_PATH) */
        bool on_root;           /* the directory walked is on the source root's subvolume */
        /*
         * In place: the directory walked is the one the previous snapshot
         * took at this path (its inode, on the source root's subvolume) and
         * the filesystem vouches its inode unchanged since (vouch.h): no
         * name in it made, removed or renamed, so each names what it named
         * then.
         */
        bool vouched;
} Level;

/*
 * The identity recorded for an entry on x's device: a directory (dir_fd,
 * any descriptor of it) is asked, anything else takes that of the
 * directory it is in, met before it (a device first met on something
 * that is not a directory gets an identity of this boot only, never
 * remembered).
 */
static uint64_t state_fs_id(State *s, const struct statx *x, int dir_fd) {
        dev_t dev = makedev(x->stx_dev_major, x->stx_dev_minor);
        uint64_t id;

        for (size_t i = 0; i < s->n_fs_ids; i++)
                if (s->fs_ids[i].dev == dev)
                        return s->fs_ids[i].id;
        if (dir_fd < 0)
                return fs_identity_boot_local(dev);
        (void) fs_identity(dir_fd, dev, &id);
        if (s->n_fs_ids < ELEMENTSOF(s->fs_ids)) {
                s->fs_ids[s->n_fs_ids].dev = dev;
                s->fs_ids[s->n_fs_ids++].id = id;
        }
        return id;
}

static void links_done(Links *l) {
        for (size_t i = 0; i < l->cap; i++)
                free(l->slots[i].path);
        free(l->slots);
        pthread_mutex_destroy(&l->lock);
        pthread_cond_destroy(&l->made);
}

static void stats_add(MirrorStats *a, const MirrorStats *b) {
        a->files += b->files;
        a->dirs += b->dirs;
        a->symlinks += b->symlinks;
        a->specials += b->specials;
        a->hardlinks += b->hardlinks;
        a->bytes += b->bytes;
        a->excluded += b->excluded;
        a->vanished += b->vanished;
        a->other_mounts += b->other_mounts;
        a->skipped += b->skipped;
        a->reused += b->reused;
        a->kept += b->kept;
        a->compared += b->compared;
        a->vouched += b->vouched;
        a->bulk += b->bulk;
}

static int path_push(State *s, const char *name, size_t *saved) {
        size_t n = strlen(name), need = s->len + 1 + n + 1;

        if (need > s->cap) {
                size_t cap = need * 2;
                char *p = realloc(s->path, cap);

                if (!p)
                        return -ENOMEM;
                s->path = p;
                s->cap = cap;
        }
        *saved = s->len;
        if (s->len > 0)
                s->path[s->len++] = '/';
        memcpy(s->path + s->len, name, n + 1);
        s->len += n;
        return 0;
}

static void path_pop(State *s, size_t saved) {
        s->len = saved;
        if (s->path)
                s->path[saved] = '\0';
}

static size_t link_slot(const Link *slots, size_t cap, FileId id) {
        size_t h = (size_t) (id.ino * 0x9e3779b97f4a7c15ULL) ^ (size_t) id.dev;

        for (h &= cap - 1;; h = (h + 1) & (cap - 1))
                if (!slots[h].path || (slots[h].id.dev == id.dev && slots[h].id.ino == id.ino))
                        return h;
}

/* These two with l->lock held.  A new entry is LINK_MAKING. */
static Link *link_add(Links *l, FileId id, const char *path) {
        size_t h;

        if (2 * (l->n + 1) > l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 256;
                Link *slots = calloc(cap, sizeof(Link));

                if (!slots)
                        return NULL;
                for (size_t i = 0; i < l->cap; i++)
                        if (l->slots[i].path)
                                slots[link_slot(slots, cap, l->slots[i].id)] = l->slots[i];
                free(l->slots);
                l->slots = slots;
                l->cap = cap;
        }
        h = link_slot(l->slots, l->cap, id);
        l->slots[h].path = strdup(path);
        if (!l->slots[h].path)
                return NULL;
        l->slots[h].id = id;
        l->slots[h].state = LINK_MAKING;
        l->n++;
        return &l->slots[h];
}

static Link *link_find(const Links *l, FileId id) {
        Link *k = l->cap ? &l->slots[link_slot(l->slots, l->cap, id)] : NULL;

        return k && k->path ? k : NULL;
}

static int fail(State *s, int r, const char *what) {
        log_path(s->w->log, s->len ? s->path : ".", "%s: %s", what, strerror(-r));
        return r;
}

static bool vanished(int r) {
        /* Gone, or replaced by something of another type, or by a mount. */
        return r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EINVAL || r == -EXDEV;
}

static int walk_dir(State *s, int sfd, int dfd, Level *prev, char ***defer, size_t *n_defer);
static int read_sorted(State *s, int sfd, char ***ret, size_t *ret_n);

/*
 * REUSE_INPLACE: whatever the copy of the previous snapshot has at
 * dfd/name goes (a directory with everything below it), before something
 * else is made there, or because nothing is (left out, vanished): 0 or
 * -errno.  Nothing there: 0.  A no-op for any other walk.
 */
static int inplace_clear(State *s, int dfd, const char *name) {
        int r;

        if (!s->inplace)
                return 0;
        r = rm_rf_at(dfd, name);
        return r < 0 ? fail(s, r, "cannot remove what the previous snapshot had here") : 0;
}

/*
 * REUSE_INPLACE: an entry the manifest says is unchanged stays as the copy
 * of the previous snapshot has it, once that is seen to be what it should
 * (the type, mode and owner the source has; for a regular file or a
 * symbolic link the size, for a device its number).  0: kept (counted);
 * 1: not (make it anew); -errno.
 */
static int keep_previous(State *s, int dfd, const char *name, const struct stat *st) {
        struct stat p;

        if (fstatat(dfd, name, &p, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 1 : fail(s, -errno, "cannot stat in the previous snapshot's copy");
        if (p.st_mode != st->st_mode || p.st_uid != st->st_uid || p.st_gid != st->st_gid)
                return 1;
        if ((S_ISREG(st->st_mode) || S_ISLNK(st->st_mode)) && p.st_size != st->st_size)
                return 1;
        if ((S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) && p.st_rdev != st->st_rdev)
                return 1;
        if (S_ISREG(st->st_mode)) {
                s->stats.files++;
                s->stats.reused++;
                s->stats.bytes += st->st_size;
        } else {
                if (S_ISLNK(st->st_mode))
                        s->stats.symlinks++;
                else
                        s->stats.specials++;
                s->stats.kept++;
        }
        return 0;
}

/*
 * REUSE_INPLACE: the names of dfd (the copy of the previous snapshot)
 * that src (the source directory's names, each after its d_type byte,
 * sorted by name) does not hold go, each with everything below it.
 */
static int inplace_drop_gone(State *s, int dfd, char **src, size_t n_src) {
        char **dst = NULL;
        size_t n_dst = 0, i = 0;
        int r;

        r = read_sorted(s, dfd, &dst, &n_dst);
        if (r < 0)
                return r;
        for (size_t j = 0; j < n_dst && r >= 0; j++) {
                int c = 1;

                while (i < n_src && (c = strcmp(src[i] + 1, dst[j] + 1)) < 0)
                        i++;
                if (i < n_src && c == 0)
                        continue;
                r = rm_rf_at(dfd, dst[j] + 1);
                if (r < 0)
                        r = fail(s, r, "cannot remove what the source no longer has");
        }
        strv_free(dst);
        return r;
}

/*
 * fd: the directory, O_PATH, as do_entry() found it; e its record; prev
 * and children (or NULL): the previous snapshot's directory holding it,
 * and its own entries in the previous manifest.
 */
/*
 * REUSE_INPLACE, a directory the filesystem vouches for (MirrorReuse.vouch):
 * the copy's cd kept as it is with everything below it, its records those
 * of the previous manifest (children).  0: kept; 1: not (a file of more
 * than one link below it: walk it); -errno.
 */
static int keep_vouched(State *s, const ManifestEntry *e, const ManifestCursor *children) {
        ManifestCounts c;
        uint64_t token = 0;
        int r;

        r = manifest_cursor_count(children, &c);
        if (r < 0)
                return fail(s, r, "cannot read the previous snapshot's manifest");
        if (c.multi_link > 0)
                return 1;
        if ((r = manifest_segment_dir_begin(s->seg, e, &token)) < 0 ||
            (r = manifest_segment_copy(s->seg, children, c.entries)) < 0 ||
            (r = manifest_segment_dir_end(s->seg, token)) < 0)
                return fail(s, r, "cannot write the manifest");
        s->stats.files += c.files;
        s->stats.reused += c.files;
        s->stats.bytes += c.bytes;
        s->stats.symlinks += c.symlinks;
        s->stats.specials += c.specials;
        s->stats.dirs += c.dirs + 1;
        s->stats.kept += c.dirs + 1 + c.symlinks + c.specials;
        s->stats.vouched++;
        return 0;
}

/*
 * fd: the directory, O_PATH, as do_entry() found it; e its record; prev
 * and children (or NULL): the previous snapshot's directory holding it,
 * and its own entries in the previous manifest; same: its own record
 * there is unchanged, and it is on the source root's filesystem.
 */
static int do_dir(State *s, int fd, int dfd, const char *name, const struct stat *st, const ManifestEntry *e,
                  const Level *prev, const ManifestCursor *children, bool same) {
        _cleanup_close_ int cs = -EBADF, cd = -EBADF;
        Level sub = { .dir = -EBADF };
        uint64_t token = 0;
        bool kept = false;
        int r;

        if (file_id_is(st, s->w->skip))
                return inplace_clear(s, dfd, name);     /* our own store */
        /* In place: a directory of the previous snapshot's copy is brought up to date; anything else goes. */
        if (s->inplace) {
                struct stat p;

                kept = fstatat(dfd, name, &p, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(p.st_mode);
        }
        /*
         * Nothing at or below it changed, as the filesystem says: the
         * copy's stays, not walked, and neither the source's directory nor
         * the copy's is opened (the statx of fd found it, unchanged).
         */
        if (children && kept && same && s->seg && s->w->reuse && s->w->reuse->vouch &&
            vouch_covers(s->w->reuse->vouch, s->path)) {
                r = keep_vouched(s, e, children);
                if (r <= 0)
                        return r;
        }
        /* Opened through the descriptor: this directory, not what replaced it since. */
        cs = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOATIME);
        if (cs < 0 && errno == EPERM)
                cs = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cs < 0) {
                if (errno == ENOENT) {
                        s->stats.vanished++;
                        return inplace_clear(s, dfd, name);
                }
                return fail(s, -errno, "cannot open directory");
        }
        if (s->inplace && !kept && (r = inplace_clear(s, dfd, name)) < 0)
                return r;
        if (!kept && mkdirat(dfd, name, 0700) < 0)
                return fail(s, -errno, "cannot make directory");
        cd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cd < 0)
                return fail(s, -errno, "cannot open new directory");
        if (s->w->dir_hook)
                s->w->dir_hook(cd, s->w->dir_hook_userdata);
        if (children) {
                /* In the store, ours: nobody else writes there. */
                sub.dir = openat(prev->dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                sub.cur = *children;
                sub.on_root = st->st_dev == s->root_dev;
                /* same: its record's inode, on the root's subvolume; and unchanged as an inode. */
                sub.vouched = same && s->inplace && s->w->reuse &&
                              vouch_inode_unchanged(s->w->reuse->vouch, st->st_ino);
                if (sub.dir >= 0)
                        s->stats.compared++;
        }
        if (s->seg && (r = manifest_segment_dir_begin(s->seg, e, &token)) < 0) {
                safe_close(sub.dir);
                return fail(s, r, "cannot write the manifest");
        }
        r = walk_dir(s, cs, cd, sub.dir >= 0 ? &sub : NULL, NULL, NULL);
        safe_close(sub.dir);
        if (r < 0)
                return r;
        if (s->seg && (r = manifest_segment_dir_end(s->seg, token)) < 0)
                return fail(s, r, "cannot write the manifest");
        if (kept && (r = drop_extra_xattrs_fd(cs, cd)) < 0)
                return fail(s, r, "cannot set directory attributes");
        r = copy_meta_fd(cs, cd, st);
        if (r < 0)
                return fail(s, r, "cannot set directory attributes");
        s->stats.dirs++;
        s->stats.kept += kept;
        return 0;
}

static int do_hardlink(State *s, int dfd, const char *name, const char *first) {
        _cleanup_close_ int parent = -EBADF;
        const char *base = NULL;

        /* In the snapshot being made: nobody else writes there. */
        parent = chase_parent(s->dst_root, first, NULL, &base);
        if (parent < 0)
                return fail(s, parent, "cannot open the first link's directory");
        if (s->inplace) {
                struct stat a, b;
                int r;

                /* A link the previous snapshot's copy has already: kept. */
                if (fstatat(parent, base, &a, AT_SYMLINK_NOFOLLOW) == 0 &&
                    fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && stat_inode_same(&a, &b)) {
                        s->stats.hardlinks++;
                        return 0;
                }
                r = inplace_clear(s, dfd, name);
                if (r < 0)
                        return r;
        }
        if (linkat(parent, base, dfd, name, 0) < 0)
                return fail(s, -errno, "cannot make hard link");
        s->stats.hardlinks++;
        return 0;
}

/* These return 1 when the entry vanished and was skipped (or was put off). */
static int do_symlink(State *s, int fd, int dfd, const char *name, const struct stat *st) {
        _cleanup_free_ char *target = NULL;
        size_t size = st->st_size + 1;
        ssize_t n;
        int r;

        for (;;) {
                free(target);
                target = malloc(size);
                if (!target)
                        return -ENOMEM;
                n = readlinkat(fd, "", target, size);
                if (n < 0)
                        return fail(s, -errno, "cannot read symbolic link");
                if ((size_t) n < size)
                        break;
                size *= 2;
        }
        target[n] = '\0';
        if (symlinkat(target, dfd, name) < 0)
                return fail(s, -errno, "cannot make symbolic link");
        r = copy_meta_symlink(dfd, name, st);
        if (r < 0)
                return fail(s, r, "cannot set symbolic link attributes");
        s->stats.symlinks++;
        return 0;
}

static int do_special(State *s, int fd, int dfd, const char *name, const struct stat *st) {
        _cleanup_close_ int dn = -EBADF;
        int r;

        if (mknodat(dfd, name, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
                return fail(s, -errno, "cannot make node");
        dn = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (dn < 0)
                return fail(s, -errno, "cannot open new node");
        r = copy_meta_fd(fd, dn, st);
        if (r < 0)
                return fail(s, r, "cannot set attributes");
        s->stats.specials++;
        return 0;
}

bool mirror_skippable(int r) {
        return r == -ETXTBSY || r == -EOPNOTSUPP;
}

/* A file left out for a reason of its own: on the log, and on the list. */
static void skip_file(State *s, int r, const char *why) {
        const char *path = s->len ? s->path : ".";

        s->stats.skipped++;
        log_path(s->w->log, path, "skipped, %s: %s", why, strerror(-r));
        if (!s->w->skipped)
                return;
        flockfile(s->w->skipped);
        fprintf(s->w->skipped, "%s ", strerrorname_np(-r) ?: "?");
        fputs_cescaped(path, s->w->skipped);    /* one line, nothing a terminal acts on */
        putc_unlocked('\n', s->w->skipped);
        funlockfile(s->w->skipped);
}

/*
 * Open the regular file fd (O_PATH) for reading, as the clone needs it.
 * Any open of a file under another process's write lease breaks the
 * lease and waits for its holder, up to fs.lease-break-time (45 s); a
 * read lease is broken by no reader.  So the walk opens with O_NONBLOCK:
 * a leased file answers -EWOULDBLOCK at once with its break begun, and is
 * put off (1) to the end of the walk, when all the breaks run at once
 * (LEASE_PUT_OFF); there the open waits for the break (LEASE_WAIT).
 * Once open, no new write lease can be taken on it (the kernel refuses
 * one on a file others have open), so the clone, through this
 * descriptor, never waits.  Returns 0 (the descriptor in *ret), 1 (put
 * off) or -errno.
 */
static int open_source(State *s, int fd, int *ret) {
        int flags = O_RDONLY | O_NOCTTY | O_CLOEXEC | O_NOATIME | (s->lease_mode == LEASE_WAIT ? 0 : O_NONBLOCK);
        int r;

        *ret = openat(AT_FDCWD, PROC_FD(fd), flags);
        if (*ret < 0 && errno == EPERM)
                *ret = openat(AT_FDCWD, PROC_FD(fd), flags & ~O_NOATIME);
        if (*ret >= 0)
                return 0;
        if (errno == EWOULDBLOCK && s->lease_mode == LEASE_PUT_OFF) {
                r = strv_push(&s->leased, &s->n_leased, s->path);
                if (r < 0)
                        return r;
                fprintf(s->w->log, "%s: another process holds a lease on it: its break begun, "
                        "the file is put off to the end of the walk\n", s->path);
                return 1;
        }
        return -errno;
}

/*
 * An unchanged file: a hard link to prev/name, the previous snapshot's
 * inode made from it, once that is seen to be what it should (a regular
 * file of the size, mode and owner the source has).  0, 1 when it cannot
 * be (make it anew), or -errno.
 */
static int link_previous(State *s, int prev, int dfd, const char *name, const struct stat *st) {
        struct stat p;

        if (atomic_load(&s->links->no_links))
                return 1;
        if (fstatat(prev, name, &p, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 1 : fail(s, -errno, "cannot stat in the previous snapshot");
        if (!S_ISREG(p.st_mode) || p.st_size != st->st_size || p.st_mode != st->st_mode ||
            p.st_uid != st->st_uid || p.st_gid != st->st_gid)
                return 1;
        if (linkat(prev, name, dfd, name, 0) >= 0)
                return 0;
        if (errno == EMLINK)
                return 1;       /* this inode has all the links it may */
        if (errno == EXDEV || errno == EROFS || errno == EPERM) {
                /*
                 * No link from there to here at all (the snapshots are
                 * subvolumes of their own on btrfs, or read-only): every
                 * file made anew, said once.
                 */
                if (!atomic_exchange(&s->links->no_links, true))
                        fprintf(s->w->log, "cannot link to the previous snapshot (%s): every file is made anew\n",
                                strerror(errno));
                return 1;
        }
        return fail(s, -errno, "cannot link to the previous snapshot");
}

/*
 * Make dfd/name like the entry fd (O_PATH, not a directory): 0, 1 when it
 * was skipped or put off, or -errno.  reuse: the previous snapshot's
 * directory, when the file is unchanged since it (else -EBADF).
 */
static int make_entry(State *s, int fd, int dfd, const char *name, const struct stat *st, int reuse) {
        _cleanup_close_ int src = -EBADF;
        int r;

        /* In place: kept when unchanged and seen to be so; else what is there goes first. */
        if (s->inplace) {
                if (reuse >= 0) {
                        r = keep_previous(s, dfd, name, st);
                        if (r <= 0)
                                return r;
                }
                r = inplace_clear(s, dfd, name);
                if (r < 0)
                        return r;
                reuse = -EBADF;
        }
        if (!S_ISREG(st->st_mode))
                return S_ISLNK(st->st_mode) ? do_symlink(s, fd, dfd, name, st) :
                                              do_special(s, fd, dfd, name, st);
        if (reuse >= 0) {
                r = link_previous(s, reuse, dfd, name, st);
                if (r < 0)
                        return r;
                if (r == 0) {
                        s->stats.files++;
                        s->stats.reused++;
                        s->stats.bytes += st->st_size;
                        return 0;
                }
        }
        r = open_source(s, fd, &src);
        if (r == 1)
                return 1;
        if (r == -EINTR && s->w->cancel && *s->w->cancel)
                return -ECANCELED;      /* while waiting for a lease's break */
        if (r == -EWOULDBLOCK && s->w->skip_refused) {
                /* Leased again after its break, past the time given to leases. */
                skip_file(s, r, "another process holds a lease on it past the time given to its break");
                return 1;
        }
        if (r < 0)
                return fail(s, r, "cannot open");
        r = s->w->ops->clone(src, dfd, name, s->w->ops->userdata);
        if (r < 0) {
                if (s->w->skip_refused && mirror_skippable(r)) {
                        skip_file(s, r, "the kernel would not reflink it");
                        return 1;
                }
                return fail(s, r, "cannot reflink");
        }
        s->stats.files++;
        s->stats.bytes += st->st_size;
        return 0;
}

/*
 * A file with more links: the first worker to meet it makes it, and the
 * others link to the whole file.  The table's lock is not held across the
 * clone: a link of a file being made waits for its maker alone.
 */
static void link_record_set(Link *k, const ManifestEntry *e) {
        k->rec.dev = e->dev;
        k->rec.ino = e->ino;
        k->rec.size = e->size;
        k->rec.ctime_sec = e->ctime_sec;
        k->rec.ctime_nsec = e->ctime_nsec;
        k->rec.mode = e->mode;
        k->rec.nlink = e->nlink;
        k->rec.flags = e->flags;
}

/* The first member's record, under e's own name. */
static void link_record_get(const Link *k, ManifestEntry *e) {
        e->dev = k->rec.dev;
        e->ino = k->rec.ino;
        e->size = k->rec.size;
        e->ctime_sec = k->rec.ctime_sec;
        e->ctime_nsec = k->rec.ctime_nsec;
        e->mode = k->rec.mode;
        e->nlink = k->rec.nlink;
        e->flags = k->rec.flags;
}

/*
 * A member of a hard link group: the first one met is made (rec: its
 * manifest record, kept for the others), the others are links to it
 * (*rec, but its name, is then the first's record).
 */
static int make_linked(State *s, int fd, int dfd, const char *name, const struct stat *st, int reuse,
                       ManifestEntry *rec) {
        Links *l = s->links;
        FileId id = file_id(st);
        Link *k;
        int r;

        pthread_mutex_lock(&l->lock);
        for (;;) {
                k = link_find(l, id);
                if (!k || k->state != LINK_MAKING)
                        break;
                pthread_cond_wait(&l->made, &l->lock);
        }
        if (k && k->state == LINK_MADE) {
                _cleanup_free_ char *first = strdup(k->path);

                link_record_get(k, rec);
                pthread_mutex_unlock(&l->lock);
                return first ? do_hardlink(s, dfd, name, first) : -ENOMEM;
        }
        if (k) {
                char *p = strdup(s->path);

                if (p) {
                        free(k->path);
                        k->path = p;
                        k->state = LINK_MAKING;
                }
        } else
                k = link_add(l, id, s->path);
        if (k)
                link_record_set(k, rec);
        pthread_mutex_unlock(&l->lock);
        if (!k || k->state != LINK_MAKING)
                return fail(s, -ENOMEM, "cannot remember hard link");

        r = make_entry(s, fd, dfd, name, st, reuse);

        pthread_mutex_lock(&l->lock);
        k = link_find(l, id);   /* the table may have grown meanwhile */
        k->state = r == 0 ? LINK_MADE : LINK_NONE;
        pthread_cond_broadcast(&l->made);
        pthread_mutex_unlock(&l->lock);
        return r;
}

/*
 * prev: the directory sfd as the previous snapshot had it (REUSE_LINK), or
 * NULL; type and ino: the entry's type and inode number as readdir said
 * them (DT_UNKNOWN and 0: not said).
 */
static int do_entry(State *s, int sfd, int dfd, const char *name, unsigned char type, uint64_t ino,
                    Level *prev) {
        _cleanup_close_ int fd = -EBADF;
        ManifestEntry e = {}, old;
        ManifestCursor children;
        struct timespec now;
        struct statx x;
        struct stat st;
        int r, reuse = -EBADF;
        uint64_t fs_id = 0;
        bool found = false, looked = false;

        /*
         * In place, a directory the filesystem vouches for at this path
         * (vouch.h: neither it nor anything below it changed since the
         * previous snapshot took it), in a directory it vouches names
         * the same as then (prev->vouched: the one the previous snapshot
         * took there, its inode unchanged, so no name in it was made,
         * removed or renamed, and this name is still the directory
         * recorded, not a subvolume made or renamed here since, nor
         * another directory renamed here): kept from its record in the
         * previous manifest, of this filesystem's subvolume (not one
         * inside it) and not racy, as do_dir() would keep it after a
         * statx that could only agree.  The path alone is not enough: a
         * new subvolume is no inode of this tree, and a directory whose
         * parent was renamed keeps its inode unchanged, so neither puts
         * the path in the set.  readdir's inode number, when given, is the
         * one recorded too (a second guard only: for a subvolume it is
         * its ID, which may be any number).  Nothing of it is opened or
         * looked at: the cost of a directory nothing changed under is
         * that of reading its records.
         */
        if (type == DT_DIR && prev && prev->vouched && s->inplace && s->seg && s->w->reuse->vouch &&
            vouch_covers(s->w->reuse->vouch, s->path) && !exclude_match(s->w->exclude, s->path, true)) {
                r = manifest_cursor_find(&prev->cur, name, &old, &children, NULL, NULL);
                if (r < 0)
                        return fail(s, r, "cannot read the previous snapshot's manifest");
                looked = true;
                found = r > 0;
                if (found && S_ISDIR(old.mode) && !(old.flags & MANIFEST_RACY) && old.dev == s->root_fs_id &&
                    (ino == 0 || ino == old.ino)) {
                        r = keep_vouched(s, &old, &children);
                        if (r <= 0)
                                return r;
                }
        }
        /*
         * In place, in a directory that changed, a regular file of one
         * link whose inode the filesystem vouches for (vouch.h: nothing of
         * it changed, no link made or removed, so this is its only name)
         * and which the name is still (readdir's inode number is the one
         * recorded): kept from its record, not looked at, as
         * keep_previous() would keep it after a statx that could only
         * agree.  Of the source root's subvolume only, the record and the
         * directory walked (prev->on_root): another one's inode numbers
         * are its own (a new subvolume's start again at 257), and readdir
         * gives them.
         */
        if (type == DT_REG && ino != 0 && prev && prev->on_root && s->inplace && s->seg &&
            vouch_inode_unchanged(s->w->reuse->vouch, ino) && !exclude_match(s->w->exclude, s->path, false)) {
                r = manifest_cursor_find(&prev->cur, name, &old, &children, NULL, NULL);
                if (r < 0)
                        return fail(s, r, "cannot read the previous snapshot's manifest");
                looked = true;
                found = r > 0;
                if (found && S_ISREG(old.mode) && old.nlink == 1 && old.ino == ino &&
                    !(old.flags & MANIFEST_RACY) && old.dev == s->root_fs_id) {
                        r = manifest_segment_add(s->seg, &old);
                        if (r < 0)
                                return fail(s, r, "cannot write the manifest");
                        s->stats.files++;
                        s->stats.reused++;
                        s->stats.bytes += old.size;
                        return 0;
                }
        }

        /*
         * REUSE_LINK on XFS: a regular file of one link that the bulk look
         * of its directory found as recorded (identity, ctime, size, mode,
         * links: manifest_entry_unchanged()'s judge, with the size on
         * disk: the recorded size is on disk since the snapshot that took
         * it cloned the file, which writes it back first, and a write since
         * moves the ctime) and which the name still is (readdir's inode
         * number): linked to the previous snapshot's inode, without a look
         * by name.  Nothing is mounted in the source (State.bulk_ok), and
         * one mounted on this name since would not be asked anything: the
         * file below it is what is linked.
         */
        if (type == DT_REG && ino != 0 && prev && !looked && s->bulk &&
            !exclude_match(s->w->exclude, s->path, false)) {
                const XfsStat *b = xfs_stat_find(s->bulk, s->n_bulk, ino);

                if (b && S_ISREG(b->mode) && b->nlink == 1) {
                        r = manifest_cursor_find(&prev->cur, name, &old, &children, NULL, NULL);
                        if (r < 0)
                                return fail(s, r, "cannot read the previous snapshot's manifest");
                        looked = true;
                        found = r > 0;
                        /* What statx would say of it, judged as any entry is. */
                        x = (struct statx) { .stx_ino = b->ino, .stx_size = b->size, .stx_mode = b->mode,
                                             .stx_nlink = b->nlink, .stx_uid = b->uid, .stx_gid = b->gid,
                                             .stx_ctime = { .tv_sec = b->ctime_sec, .tv_nsec = b->ctime_nsec } };
                        if (found && manifest_entry_unchanged(&old, &x, s->root_fs_id)) {
                                stat_from_statx(&st, &x);
                                r = link_previous(s, prev->dir, dfd, name, &st);
                                if (r < 0)
                                        return r;
                                if (r == 0) {
                                        s->stats.files++;
                                        s->stats.reused++;
                                        s->stats.bulk++;
                                        s->stats.bytes += b->size;
                                        if (s->seg && (r = manifest_segment_add(s->seg, &old)) < 0)
                                                return fail(s, r, "cannot write the manifest");
                                        return 0;
                                }
                        }
                }
        }

        /*
         * Looked at through an O_PATH descriptor that never crosses into a
         * mount: a mount inside the tree is never entered, not even by a
         * stat (a FUSE mount refusing root, a network mount that hangs).
         */
        fd = open_no_xdev(sfd, name, O_PATH);
        if (fd == -EXDEV) {
                /* A directory but for a mount on a file, which an exclusion of directories then misses. */
                if (exclude_match(s->w->exclude, s->path, true)) {
                        s->stats.excluded++;
                        return inplace_clear(s, dfd, name);
                }
                s->stats.other_mounts++;
                fprintf(s->w->log, "%s: another filesystem is mounted here: left out, not entered\n", s->path);
                return inplace_clear(s, dfd, name);
        }
        if (fd == -ENOENT) {
                s->stats.vanished++;
                return inplace_clear(s, dfd, name);
        }
        if (fd < 0)
                return fail(s, fd, "cannot open");
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_MNT_ID, &x) < 0)
                return fail(s, -errno, "cannot stat");
        stat_from_statx(&st, &x);

        if (exclude_match(s->w->exclude, s->path, S_ISDIR(st.st_mode))) {
                s->stats.excluded++;
                return inplace_clear(s, dfd, name);
        }
        if (x.stx_mnt_id != s->root_mnt) {
                s->stats.other_mounts++;
                return inplace_clear(s, dfd, name);
        }
        if (s->seg || prev)
                fs_id = state_fs_id(s, &x, S_ISDIR(st.st_mode) ? fd : -EBADF);
        if (s->seg) {
                /* After the statx, before the data is taken: see MANIFEST_RACY. */
                clock_gettime(CLOCK_REALTIME_COARSE, &now);
                r = manifest_entry_from_statx(&e, name, &x, fs_id, &now);
                if (r < 0)
                        return fail(s, r, "cannot record");
        }
        if (prev && !looked) {
                r = manifest_cursor_find(&prev->cur, name, &old, &children, NULL, NULL);
                if (r < 0)
                        return fail(s, r, "cannot read the previous snapshot's manifest");
                found = r > 0;
        }
        if (S_ISDIR(st.st_mode))
                return do_dir(s, fd, dfd, name, &st, &e, prev, found && S_ISDIR(old.mode) ? &children : NULL,
                              found && st.st_dev == s->root_dev && manifest_entry_unchanged(&old, &x, fs_id));
        /* Linked to (REUSE_LINK: regular files), or kept in place (REUSE_INPLACE: any type). */
        if (found && (S_ISREG(st.st_mode) || s->inplace) && manifest_entry_unchanged(&old, &x, fs_id))
                reuse = prev->dir;
        r = st.st_nlink == 1 || s->w->no_links ? make_entry(s, fd, dfd, name, &st, reuse) :
                                                 make_linked(s, fd, dfd, name, &st, reuse, &e);
        if (r == 0 && s->seg && (r = manifest_segment_add(s->seg, &e)) < 0)
                return fail(s, r, "cannot write the manifest");
        return r < 0 ? r : 0;
}

/* The inode number readdir gave with a name of read_sorted(). */
static uint64_t typed_name_ino(const char *t) {
        uint64_t ino;

        memcpy(&ino, t + 1 + strlen(t + 1) + 1, sizeof(ino));
        return ino;
}

/* Names each after its d_type byte: by name (strcmp). */
static int typed_name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a + 1, *(char *const *) b + 1);
}

/*
 * The entries of sfd, each its d_type byte, its name, and after the name's
 * NUL its d_ino (8 bytes, typed_name_ino()), sorted by name.
 */
static int read_sorted(State *s, int sfd, char ***ret, size_t *ret_n) {
        DIR *d = opendir_fd(sfd);
        char **l = NULL, *t = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        int r = 0;

        if (!d)
                return fail(s, -errno, "cannot read directory");
        for (;;) {
                size_t len;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno)
                                r = fail(s, -errno, "cannot read directory");
                        break;
                }
                if (dot_or_dot_dot(de->d_name))
                        continue;
                if (n + 1 >= cap) {
                        char **m = realloc(l, (cap = cap ? 2 * cap : 64) * sizeof(char *));

                        if (!m) {
                                r = -ENOMEM;
                                break;
                        }
                        l = m;
                }
                len = strlen(de->d_name);
                t = malloc(len + 2 + sizeof(uint64_t));
                if (!t) {
                        r = -ENOMEM;
                        break;
                }
                t[0] = (char) de->d_type;
                memcpy(t + 1, de->d_name, len + 1);
                memcpy(t + len + 2, &(uint64_t) { de->d_ino }, sizeof(uint64_t));
                l[n++] = t;
                l[n] = NULL;
        }
        closedir(d);
        if (r < 0) {
                strv_free(l);
                return r;
        }
        if (n > 1)
                qsort(l, n, sizeof(char *), typed_name_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/*
 * The run of regular files of names (read_sorted()) from "from": up to
 * the next entry that is not a regular file, a symbolic link or a special
 * file (a directory's walk may take long, and what was looked at would be
 * old after it), at most BULK_RUN of them, looked at in bulk by their inode
 * numbers into s->bulk (the run before freed).  Returns where the run
 * ends.  Whatever it cannot look at, the walk looks at one by one; a
 * refusal (not XFS after all, not root) ends the bulk looks of this thread.
 */
#define BULK_RUN 256
static size_t bulk_gather(State *s, int sfd, char **names, size_t from, size_t n) {
        uint64_t inos[BULK_RUN];
        size_t k = 0, end = from;
        int r;

        s->bulk = mfree(s->bulk);
        s->n_bulk = 0;
        for (; end < n && k < BULK_RUN; end++) {
                unsigned char type = (unsigned char) names[end][0];

                if (type == DT_REG) {
                        if (typed_name_ino(names[end]) != 0)
                                inos[k++] = typed_name_ino(names[end]);
                } else if (type != DT_LNK && type != DT_FIFO && type != DT_SOCK && type != DT_CHR &&
                           type != DT_BLK)
                        break;
        }
        if (k == 0)
                return end;
        qsort(inos, k, sizeof(*inos), cmp_u64);
        /* Unique: a name's inode once (two names of one inode are a hard link group, left to the walk). */
        {
                size_t u = 0;

                for (size_t i = 0; i < k; i++)
                        if (u == 0 || inos[u - 1] != inos[i])
                                inos[u++] = inos[i];
                k = u;
        }
        r = xfs_bulkstat_inodes(sfd, inos, k, &s->bulk, &s->n_bulk);
        if (r < 0 && r != -ENOMEM) {
                s->bulk_ok = false;
                fprintf(s->w->log, "%s: cannot look at files in bulk (%s): each looked at by its name\n",
                        *s->path ? s->path : ".", strerror(-r));
        }
        return end;
}

/*
 * Mirror sfd's entries into dfd, in name order: the order of the
 * manifest, compared with prev (may be NULL).  With defer, directories
 * are not entered but their names pushed there (the parallel root's work
 * list).
 */
static int walk_dir(State *s, int sfd, int dfd, Level *prev, char ***defer, size_t *n_defer) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = read_sorted(s, sfd, &names, &n);
        if (r < 0)
                return r;
        /*
         * Looked at in bulk (State.bulk) a run at a time, below.  The run
         * of the directory above ended at this one: done with.
         */
        s->bulk = mfree(s->bulk);
        s->n_bulk = 0;
        /* In place: first what the source no longer has goes. */
        if (s->inplace && (r = inplace_drop_gone(s, dfd, names, n)) < 0) {
                strv_free(names);
                return r;
        }
        for (size_t i = 0, bulk_end = 0; i < n; i++) {
                const char *name = names[i] + 1;
                size_t saved;

                if ((s->w->cancel && *s->w->cancel) || atomic_load(&s->links->stop)) {
                        r = -ECANCELED;
                        break;
                }
                /*
                 * The next run of regular files, looked at in bulk just
                 * before they are taken: never across an entry whose walk
                 * may take long (a directory), after which what was looked
                 * at would be old.
                 */
                if (s->bulk_ok && prev && names[i][0] == DT_REG && i >= bulk_end)
                        bulk_end = bulk_gather(s, sfd, names, i, n);
                if (defer && names[i][0] == DT_DIR) {
                        r = strv_push(defer, n_defer, name);
                        if (r < 0)
                                break;
                        continue;
                }
                r = path_push(s, name, &saved);
                if (r < 0)
                        break;
                r = do_entry(s, sfd, dfd, name, (unsigned char) names[i][0], typed_name_ino(names[i]), prev);
                path_pop(s, saved);
                if (r < 0)
                        break;
        }
        strv_free(names);
        s->bulk = mfree(s->bulk);
        s->n_bulk = 0;
        return r;
}

static int state_init(State *s, Mirror *w, Links *links, int src, int dst_root, const char *path,
                      struct stat *st) {
        struct statx x;

        *s = (State) { .w = w, .links = links, .dst_root = dst_root,
                       .inplace = w->reuse && w->reuse->mode == REUSE_INPLACE };
        if (statx(src, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_MNT_ID, &x) < 0)
                return -errno;
        s->root_mnt = x.stx_mnt_id;
        s->root_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
        stat_from_statx(st, &x);
        if (S_ISDIR(x.stx_mode))
                s->root_fs_id = state_fs_id(s, &x, src);
        s->path = strdup(path);
        if (!s->path)
                return -ENOMEM;
        s->len = strlen(path);
        s->cap = s->len + 1;
        return 0;
}

/* The kernel's fs.lease-break-time, in seconds. */
static unsigned lease_break_time(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/sys/fs/lease-break-time", "re");
        unsigned t;

        return f && fscanf(f, "%u", &t) == 1 ? t : 45;
}

static time_t monotonic_sec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

/*
 * The files put off for a lease (open_source()), with every break begun:
 * each is looked up again from the roots (src, dst) and made, the open
 * now waiting for its break (the kernel ends the wait when the holder lets
 * go, or at fs.lease-break-time after the break began).  Past that time
 * once more since the first of them here, a file leased again is skipped:
 * however many files are leased, the walk waits about twice the break
 * time at most.
 */
static int make_leased(State *s, int src, int dst) {
        char **leased = TAKE_PTR(s->leased);
        ManifestSegment *seg = TAKE_PTR(s->seg);        /* out of order now: not recorded */
        size_t n = s->n_leased, saved;
        time_t start = monotonic_sec(), limit = (time_t) lease_break_time() + 1;
        int r = 0;

        s->n_leased = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_close_ int sdir = -EBADF, ddir = -EBADF;
                const char *base = NULL, *dbase = NULL;
                struct stat times;
                int k;

                if (s->w->cancel && *s->w->cancel) {
                        r = -ECANCELED;
                        break;
                }
                s->lease_mode = monotonic_sec() - start < limit ? LEASE_WAIT : LEASE_SKIP;
                path_pop(s, 0);
                r = path_push(s, leased[i], &saved);
                if (r < 0)
                        break;
                /* As the walk went: never through a link, never into a mount. */
                sdir = chase_parent(src, leased[i], &(Chase) { .flags = CHASE_NO_XDEV }, &base);
                if (sdir < 0 && vanished(sdir)) {
                        s->stats.vanished++;
                        continue;
                }
                if (sdir < 0) {
                        r = fail(s, sdir, "cannot open its directory again");
                        break;
                }
                ddir = chase_parent(dst, leased[i], NULL, &dbase);
                if (ddir < 0) {
                        r = fail(s, ddir, "cannot open its directory in the snapshot");
                        break;
                }
                if (fstat(ddir, &times) < 0) {
                        r = fail(s, -errno, "cannot stat its directory in the snapshot");
                        break;
                }
                r = do_entry(s, sdir, ddir, base, DT_UNKNOWN, 0, NULL);
                /* The directory's copy has its times already: keep them. */
                if (r >= 0 && (k = copy_times_fd(ddir, &times)) < 0)
                        r = fail(s, k, "cannot set directory attributes");
        }
        s->lease_mode = LEASE_PUT_OFF;
        s->seg = seg;
        path_pop(s, 0);
        strv_free(leased);
        return r;
}

int mirror_entry(Mirror *w, int src_dir, const char *name, int dst_dir) {
        Links links = { .lock = PTHREAD_MUTEX_INITIALIZER, .made = PTHREAD_COND_INITIALIZER };
        State s;
        struct stat st;
        int r;

        r = state_init(&s, w, &links, src_dir, dst_dir, name, &st);
        if (r >= 0)
                r = do_entry(&s, src_dir, dst_dir, name, DT_UNKNOWN, 0, NULL);
        if (r >= 0)
                r = make_leased(&s, src_dir, dst_dir);
        stats_add(&w->stats, &s.stats);
        free(s.path);
        strv_free(s.leased);
        links_done(&links);
        return r;
}

/*
 * The root's directories, shared out among workers: each takes the next
 * one and walks all of it.  The root's other entries are made first.
 */
typedef struct Root {
        State main;
        int src, dst;
        char **dirs;
        size_t n_dirs;
        atomic_size_t next;
} Root;

typedef struct Worker {
        Root *root;
        State s;
        Level level;            /* the root in the previous snapshot, this worker's reader */
        int r;
        pthread_t thread;
} Worker;

static void *worker_run(void *arg) {
        Worker *k = arg;
        Root *root = k->root;

        for (;;) {
                size_t i = atomic_fetch_add(&root->next, 1), saved = k->s.len;
                int r;

                if (i >= root->n_dirs)
                        break;
                r = path_push(&k->s, root->dirs[i], &saved);
                if (r >= 0)
                        r = do_entry(&k->s, root->src, root->dst, root->dirs[i], DT_DIR, 0,
                                     k->s.prev ? &k->level : NULL);
                path_pop(&k->s, saved);
                if (r < 0) {
                        k->r = r;
                        atomic_store(&k->s.links->stop, true);
                        break;
                }
        }
        return NULL;
}

/* A thread's own part of the new manifest and reader of the previous one, as the walk needs them. */
static int state_manifest(State *s, Level *level) {
        const MirrorReuse *reuse = s->w->reuse;
        int r;

        if (s->w->manifest) {
                r = manifest_writer_segment(s->w->manifest, &s->seg);
                if (r < 0)
                        return r;
        }
        if (reuse && (reuse->mode == REUSE_LINK || reuse->mode == REUSE_INPLACE)) {
                r = manifest_reader_new(reuse->prev, &s->prev);
                if (r < 0)
                        return r;
                manifest_cursor_root(s->prev, &level->cur);
                level->dir = reuse->prev_root;
        }
        return 0;
}

static int walk_root_parallel(Root *root, unsigned n_workers, Level *level) {
        State *s = &root->main;
        Worker *workers = NULL;
        int r;

        /* The root's non-directories now; directories for the workers. */
        r = walk_dir(s, root->src, root->dst, level, &root->dirs, &root->n_dirs);
        if (r < 0)
                return r;

        n_workers = MIN(n_workers, MAX(root->n_dirs, (size_t) 1));
        workers = calloc(n_workers, sizeof(Worker));
        if (!workers)
                return -ENOMEM;
        for (unsigned i = 0; i < n_workers; i++) {
                workers[i] = (Worker) { .root = root, .s = *s };
                workers[i].s.stats = (MirrorStats) {};
                workers[i].s.leased = NULL;
                workers[i].s.n_leased = 0;
                workers[i].s.path = strdup("");
                workers[i].s.len = 0;
                workers[i].s.cap = 1;
                workers[i].s.seg = NULL;
                workers[i].s.prev = NULL;
                workers[i].s.bulk = NULL;
                workers[i].s.n_bulk = 0;
                if (!workers[i].s.path)
                        r = -ENOMEM;
                /* Each a run of its own, ascending: it takes the root's directories in order. */
                if (r >= 0)
                        r = state_manifest(&workers[i].s, &workers[i].level);
                if (level) {
                        workers[i].level.on_root = level->on_root;
                        workers[i].level.vouched = level->vouched;
                }
        }
        /* Worker 0 is this thread. */
        for (unsigned i = 1; r >= 0 && i < n_workers; i++)
                if (pthread_create(&workers[i].thread, NULL, worker_run, &workers[i]) != 0) {
                        /* Fewer workers then. */
                        workers[i].thread = 0;
                        break;
                }
        if (r >= 0)
                worker_run(&workers[0]);
        for (unsigned i = 0; i < n_workers; i++) {
                if (i > 0 && workers[i].thread)
                        pthread_join(workers[i].thread, NULL);
                stats_add(&s->stats, &workers[i].s.stats);
                /* The first real failure, not the stop it caused elsewhere. */
                if (workers[i].r < 0 && (r >= 0 || r == -ECANCELED))
                        r = workers[i].r;
                for (size_t k = 0; r >= 0 && k < workers[i].s.n_leased; k++)
                        r = strv_push(&s->leased, &s->n_leased, workers[i].s.leased[k]);
                strv_free(workers[i].s.leased);
                free(workers[i].s.path);
                manifest_reader_free(workers[i].s.prev);
        }
        free(workers);
        if (r >= 0 && s->w->cancel && *s->w->cancel)
                r = -ECANCELED;
        return r;
}

int mirror_tree(Mirror *w, int src_root, int dst_root) {
        Links links = { .lock = PTHREAD_MUTEX_INITIALIZER, .made = PTHREAD_COND_INITIALIZER };
        Root root = { .src = src_root, .dst = dst_root };
        Level level = { .dir = -EBADF };
        struct stat st;
        int r;

        if (w->dir_hook)
                w->dir_hook(dst_root, w->dir_hook_userdata);
        r = state_init(&root.main, w, &links, src_root, dst_root, "", &st);
        /* Bulk looks (State.bulk_ok): REUSE_LINK, on XFS, with nothing mounted in the source now. */
        if (r >= 0 && w->reuse && w->reuse->mode == REUSE_LINK && !w->no_bulk)
                root.main.bulk_ok = fd_is_xfs(src_root) > 0 && mounts_inside_fd(NULL, src_root) == 0;
        if (r >= 0)
                r = state_manifest(&root.main, &level);
        if (r >= 0 && root.main.prev)
                root.main.stats.compared++;
        /* The root: the one the previous snapshot took, its names the same (vouch_root_unchanged()). */
        level.on_root = true;
        level.vouched = root.main.inplace && vouch_root_unchanged(w->reuse->vouch);
        if (r >= 0)
                r = w->workers > 1 ? walk_root_parallel(&root, w->workers, root.main.prev ? &level : NULL) :
                                     walk_dir(&root.main, src_root, dst_root, root.main.prev ? &level : NULL,
                                              NULL, NULL);
        if (r >= 0)
                r = make_leased(&root.main, src_root, dst_root);
        if (r >= 0 && root.main.inplace && (r = drop_extra_xattrs_fd(src_root, dst_root)) < 0)
                fail(&root.main, r, "cannot set attributes of the root");
        if (r >= 0) {
                r = copy_meta_fd(src_root, dst_root, &st);
                if (r < 0)
                        fail(&root.main, r, "cannot set attributes of the root");
        }
        stats_add(&w->stats, &root.main.stats);
        strv_free(root.dirs);
        strv_free(root.main.leased);
        free(root.main.path);
        manifest_reader_free(root.main.prev);
        links_done(&links);
        return r;
}
