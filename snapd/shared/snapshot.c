/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "chase.h"
#include "copy-meta.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "manifest.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "purge.h"
#include "reflink.h"
#include "restore.h"
#include "rm-rf.h"
#include "stat-util.h"
#include "strv.h"
#include "snapshot.h"
#include "time-util.h"
#include "store.h"
#include "vouch.h"

/*
 * The steps of snapshot_take(), in order: open (source, store, both on
 * one mount), lock (and clear what an interrupted run left), the pre
 * hook, name (a fresh .partial-NAME), mirror, sync, publish (facts,
 * rename, latest).
 */

typedef struct Take {
        const Job *job;
        const MirrorOps *ops;
        FILE *log;
        bool guard;
        char *const *paths;     /* a guard of these only; NULL: the whole tree */
        char **guarded;         /* of those, the ones there, mirrored */
        size_t n_guarded;
        char *skipped;          /* the skipped files, "ERRNO PATH" lines */
        size_t skipped_size;
        int src, store, dst;
        bool subvol;            /* the store is on btrfs: each snapshot a subvolume of its own */
        struct stat store_st;
        time_t start;
        char *name;             /* SNAPSHOT_NAME_MAX */
        char partial[SNAPSHOT_NAME_MAX + 16];
        bool partial_made;      /* ... is there (removed by take_done() unless published) */
        bool full;              /* asked for a full one */
        const char *description; /* what the one who asked for it says of it; NULL: none */
        void (*dir_hook)(int dir_fd, void *userdata);
        void *dir_hook_userdata;
        ManifestWriter *manifest;       /* this one's */
        Manifest *prev;         /* the previous snapshot's, when this one reuses it */
        char prev_name[SNAPSHOT_NAME_MAX];
        int prev_root;
        Vouch *vouch;           /* in place: the directories that changed since it (vouch.h) */
        usec_t mark;            /* the end of the last step timed */
        char times[256];        /* "step N ms, ...": where the time went, logged at the end (debug) */
} Take;

/* The step that ended now took since the last mark: noted for the log's "took" line. */
static void take_time(Take *t, const char *step) {
        usec_t now = now_monotonic();
        size_t len = strlen(t->times);

        if (len < sizeof(t->times))
                snprintf(t->times + len, sizeof(t->times) - len, "%s%s %llu ms", len ? ", " : "", step,
                         (unsigned long long) ((now - t->mark) / USEC_PER_MSEC));
        t->mark = now;
}

static int take_open(Take *t) {
        _cleanup_free_ char *where = NULL;
        uint64_t src_mnt, store_mnt;
        char quota[16], qgroup[128];
        int r;

        /*
         * A user's FUSE mount on the source (her own directory) or above
         * it: never entered, not even by a stat, which would ask its
         * server (refusing root, or never answering).
         */
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *type = NULL;
                const char *path = i == 0 ? t->job->source : t->job->store;

                where = mfree(where);
                r = path_under_fuse(NULL, path, &where, &type);
                if (r > 0) {
                        fprintf(t->log, "%s %s is covered by a fuse mount (%s on %s): not entering it, nothing "
                                "is asked of its server\n", i == 0 ? "source" : "store", path, type, where);
                        return -EREMOTE;
                }
        }
        where = mfree(where);
        /*
         * A filesystem fstab lists above the source or the store, not
         * mounted: what is there is the directory below the mount point.
         */
        for (int i = 0; i < 2; i++) {
                const char *path = i == 0 ? t->job->source : t->job->store;

                r = fstab_unmounted_above("/etc/fstab", path, &where);
                if (r > 0) {
                        fprintf(t->log, "%s %s: the filesystem of %s (/etc/fstab) is not mounted\n",
                                i == 0 ? "source" : "store", path, where);
                        return -ENOENT;
                }
        }
        /*
         * No symbolic link at any component: the source is named
         * canonically; and no FUSE mount, by the mount reached (one made
         * since the table was read).
         */
        t->src = chase_dir(AT_FDCWD, t->job->source, &(Chase) { .flags = CHASE_NO_FUSE });
        if (t->src < 0) {
                r = t->src;
                fprintf(t->log, "source %s: %s\n", t->job->source,
                        r == -ELOOP ? "a symbolic link in the path (name the source canonically)" :
                        r == -EREMOTE ? "a fuse mount on the way: not entering it, nothing is asked of its server" :
                        strerror(-r));
                return r;
        }
        r = fd_mount_id(t->src, &src_mnt);
        if (r < 0)
                return r;
        /* Only the store's last component is ever made, and only on the source's mount. */
        t->store = store_open_on(t->job->store, src_mnt, t->job->smb_view != NULL);
        if (t->store < 0) {
                fprintf(t->log, "store %s: %s\n", t->job->store,
                        t->store == -ENOENT ? "its parent directory does not exist (is the job's filesystem "
                        "mounted?); only the store's last component is made" :
                        t->store == -EXDEV ? "it would be made on another mount than the source's "
                        "(is the job's filesystem mounted?)" : strerror(-t->store));
                return t->store;
        }
        r = fd_mount_id(t->store, &store_mnt);
        if (r < 0)
                return r;
        if (src_mnt != store_mnt) {
                fprintf(t->log, "store %s is not on the mount of source %s\n", t->job->store,
                        t->job->source);
                return -EXDEV;
        }
        if (!t->job->accept_quota_charges && store_fs_quota(t->store, quota) > 0) {
                fprintf(t->log, "store %s: its filesystem enforces user or group quotas (%s): a snapshot's "
                        "copies would be charged to their owners; set accept_quota_charges = yes to accept "
                        "that\n", t->job->store, quota);
                return -EPERM;
        }
        r = t->job->accept_quota_charges ? 0 : store_btrfs_qgroup_limit(t->store, qgroup, sizeof(qgroup));
        if (r < 0) {
                fprintf(t->log, "store %s: cannot tell whether a btrfs qgroup limit applies to it: %s; set "
                        "accept_quota_charges = yes to snapshot all the same\n", t->job->store, strerror(-r));
                return r;
        }
        if (r > 0) {
                fprintf(t->log, "store %s: a btrfs qgroup limit applies to it (%s): the data its snapshots keep "
                        "counts against the limit, and once it is reached the snapshots and every write under "
                        "that qgroup fail; set accept_quota_charges = yes to accept that\n", t->job->store,
                        qgroup);
                return -EPERM;
        }
        /* On btrfs every new snapshot is a subvolume (those of before stay directories). */
        r = fd_is_btrfs(t->store);
        if (r < 0)
                return r;
        t->subvol = r > 0;
        return fstat(t->store, &t->store_st) < 0 ? -errno : 0;
}

static int take_lock(Take *t, const volatile sig_atomic_t *cancel) {
        int r;

        r = store_lock(t->store, false);
        if (r < 0) {
                fprintf(t->log, "store %s: %s\n", t->job->store,
                        r == -EBUSY ? "another snapshot or prune of this job is running" : strerror(-r));
                return r;
        }
        /* Cancellable: a stop is never held up by a big leftover, which waits for the next run. */
        r = store_remove_leftovers(t->store, cancel, t->log);
        if (r == -ECANCELED)
                return r;
        if (r < 0)
                fprintf(t->log, "store %s: cannot remove leftovers: %s\n", t->job->store, strerror(-r));
        /* A purge that was interrupted is finished before anything is taken (purge.h). */
        r = purge_resume_locked(t->store, t->job->name, t->log);
        if (r < 0)
                fprintf(t->log, "store %s: cannot finish the purge that was interrupted: %s\n", t->job->store,
                        strerror(-r));
        /*
         * A staging directory a restore killed mid-way left at the top of
         * a source on a subvolume of its own: removed, not snapshotted.
         */
        r = restore_remove_stale_stages(t->src, t->log);
        if (r < 0)
                fprintf(t->log, "source %s: cannot look for what an interrupted restore left: %s\n",
                        t->job->source, strerror(-r));
        return 0;
}

/*
 * .partial-NAME made: a directory, or on btrfs an empty subvolume (made
 * read-only and renamed into place once complete).  0 or -errno.  On
 * btrfs an incremental snapshot makes it instead as a snapshot of the
 * previous subvolume (take_inplace()): an empty one made first would
 * cost a transaction commit of its own, and its deletion another.
 */
static int take_make_partial(Take *t) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!t->subvol)
                r = mkdirat(t->store, t->partial, 0700) < 0 ? -errno : 0;
        else
                r = btrfs_subvol_make(t->store, t->partial);
        if (r < 0) {
                if (t->subvol)
                        fprintf(t->log, "store %s: cannot make the subvolume %s: %s\n", t->job->store,
                                t->partial, strerror(-r));
                return r;
        }
        t->partial_made = true;
        /* Root's alone while it is made, as a .partial- directory is (mirror_tree() sets it last). */
        if (!t->subvol)
                return 0;
        fd = openat(t->store, t->partial, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fchmod(fd, 0700) < 0)
                return -errno;  /* take_done() removes it */
        return 0;
}

/*
 * A name not taken yet, by a snapshot or a partial one, and never given
 * before: after the newest snapshot's and the last one given
 * (store_name_floor()), even when the clock stepped back; the name noted
 * as given.  Its .partial- is made later (take_make_partial(), or
 * take_inplace()): under the store's lock nobody else makes one.  For a
 * job with smb_view, a whole second: the next free one instead of a -NN
 * suffix.
 */
static int take_name(Take *t) {
        char floor[SNAPSHOT_NAME_MAX];
        int r;

        r = store_name_floor(t->store, floor);
        if (r < 0 && r != -ENOENT)
                return r;
        for (unsigned tries = 0; tries < 100; tries++) {
                struct stat ignored;

                /* A job shown through Samba gets whole seconds only (shadow:format). */
                r = (t->job->smb_view ? snapshot_name_after_whole : snapshot_name_after)(
                        t->start, tries > 0 || r >= 0 ? floor : NULL, t->name);
                if (r < 0)
                        return r;
                snprintf(floor, sizeof(floor), "%s", t->name);
                snprintf(t->partial, sizeof(t->partial), ".partial-%s", t->name);
                if (fstatat(t->store, t->name, &ignored, AT_SYMLINK_NOFOLLOW) == 0 ||
                    fstatat(t->store, t->partial, &ignored, AT_SYMLINK_NOFOLLOW) == 0)
                        continue;
                if (errno != ENOENT)
                        return -errno;
                return store_write_last_name(t->store, t->name);
        }
        t->partial[0] = '\0';
        return -EEXIST;
}

/*
 * Can the store's filesystem share extents at all?  Asked once, of an
 * empty file in the store beside the new snapshot (.probe-NAME: a
 * leftover by its name if the run dies here), so that "not on this
 * filesystem" fails the job while "not this file" only skips it.  Beside,
 * not in it: made in place, it holds the previous snapshot's names
 * already.
 */
static int take_probe(Take *t) {
        _cleanup_close_ int fd = -EBADF;
        char probe[SNAPSHOT_NAME_MAX + 16], clone[sizeof(probe) + 8];
        int r;

        snprintf(probe, sizeof(probe), STORE_PROBE_PREFIX "%s", t->name);
        snprintf(clone, sizeof(clone), "%s.clone", probe);
        fd = openat(t->store, probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = reflinkat(t->store, probe, t->store, clone, REFLINK_ATTR_NONE, 0);
        r = r < 0 ? -errno : 0;
        (void) unlinkat(t->store, clone, 0);
        (void) unlinkat(t->store, probe, 0);
        if (r < 0)
                fprintf(t->log, "store %s: reflinkat: %s%s\n", t->job->store, strerror(-r),
                        r == -EOPNOTSUPP ? " (this filesystem cannot share data extents); nothing is copied instead" : "");
        return r;
}

static bool listed(char *const *l, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(l[i], s) == 0)
                        return true;
        return false;
}

/*
 * A guard of some paths only: each path that is there, mirrored whole
 * (below it, nothing excluded), into the directories above it, made in
 * the snapshot and given their live twins' metadata once all is in.
 */
static int take_mirror_paths(Take *t, Mirror *w) {
        char **dirs = NULL;
        size_t n_dirs = 0;
        struct stat st;
        int r = 0;

        w->exclude = NULL;
        w->workers = 0;
        for (char *const *p = t->paths; *p && r >= 0; p++) {
                _cleanup_close_ int sdir = -EBADF, ddir = -EBADF;
                _cleanup_free_ char *dir = NULL;
                const char *base;
                uint64_t before = w->stats.files + w->stats.dirs + w->stats.symlinks + w->stats.specials;
                uint64_t vanished = w->stats.vanished, mounts = w->stats.other_mounts;

                r = path_split(*p, &dir, &base);
                if (r < 0)
                        break;
                sdir = chase_dir(t->src, dir, &(Chase) { .flags = CHASE_NO_XDEV });
                if (sdir == -ENOENT || sdir == -ENOTDIR) {
                        r = 0;
                        continue;       /* not there: nothing it replaces */
                }
                if (sdir < 0) {
                        /*
                         * Reached through a symbolic link or across a mount:
                         * what is there the guard cannot hold, so no guard.
                         */
                        fprintf(t->log, "guard of %s: %s%s: cannot hold what is there\n", *p, strerror(-sdir),
                                sdir == -EXDEV ? " (another filesystem is mounted on the way)" :
                                sdir == -ELOOP ? " (a symbolic link on the way)" : "");
                        r = sdir;
                        break;
                }
                ddir = chase_dir(t->dst, dir, &(Chase) { .flags = CHASE_MKDIR | CHASE_NO_XDEV });
                if (ddir < 0) {
                        r = ddir;
                        break;
                }
                r = mirror_entry(w, sdir, base, ddir);
                if (r < 0)
                        break;
                if (w->stats.files + w->stats.dirs + w->stats.symlinks + w->stats.specials == before) {
                        if (w->stats.vanished > vanished && w->stats.other_mounts == mounts)
                                continue;       /* gone meanwhile: nothing it replaces */
                        /* There, and nothing of it held (a mount point, a file not cloned): no guard. */
                        r = w->stats.other_mounts > mounts ? -EXDEV : -EIO;
                        fprintf(t->log, "guard of %s: %s: it is there, but the guard could not hold it\n", *p,
                                w->stats.other_mounts > mounts ? "another filesystem is mounted on it" :
                                "nothing of it was taken");
                        break;
                }
                r = strv_push(&t->guarded, &t->n_guarded, *p);
                /* The directories above it, deepest last, for their metadata. */
                for (const char *q = strchr(dir, '/'); r >= 0 && *dir; q = strchr(q + 1, '/')) {
                        _cleanup_free_ char *up = q ? strndup(dir, q - dir) : strdup(dir);

                        if (!up) {
                                r = -ENOMEM;
                                break;
                        }
                        if (!listed(dirs, n_dirs, up))
                                r = strv_push(&dirs, &n_dirs, up);
                        if (!q)
                                break;
                }
        }
        /* Deepest first, then the top: times set after everything below is in. */
        for (size_t i = n_dirs; r >= 0 && i > 0; i--) {
                _cleanup_close_ int s = chase_dir(t->src, dirs[i - 1], &(Chase) { .flags = CHASE_NO_XDEV });
                _cleanup_close_ int d = chase_dir(t->dst, dirs[i - 1], &(Chase) { .flags = CHASE_NO_XDEV });

                if (s >= 0 && d >= 0 && fstat(s, &st) == 0)
                        r = copy_meta_fd(s, d, &st);
        }
        if (r >= 0 && fstat(t->src, &st) == 0)
                r = copy_meta_fd(t->src, t->dst, &st);
        strv_free(dirs);
        return r;
}

/*
 * Is a full snapshot due by full_every?  When the newest full one (a
 * snapshot whose facts do not say incremental; a guard never counts) is
 * at least that old, or there is none.
 */
static bool take_full_due(Take *t, char **names, size_t n) {
        if (t->job->full_every == 0)
                return false;
        for (size_t i = n; i > 0; i--) {
                SnapshotFacts f;

                if (store_read_kind(t->store, names[i - 1], &f) < 0 || f.guard || f.incremental)
                        continue;
                return (usec_t) (t->start - f.start) * USEC_PER_SEC >= t->job->full_every;
        }
        return true;
}

/*
 * The snapshot this one reuses: "latest" (the newest that is not a guard),
 * when it has a usable manifest of this job's source and excludes (key)
 * and no full one is asked for or due.  Otherwise this one is full: why,
 * on the log (nothing for the first one).
 */
static void take_previous(Take *t, int facts, uint64_t key) {
        char prev[SNAPSHOT_NAME_MAX], **names = NULL;
        size_t n = 0;
        Manifest *m = NULL;
        int r;

        if (store_latest(t->store, prev) < 0)
                return;
        if (t->full) {
                fprintf(t->log, "a full snapshot, as asked (--full)\n");
                return;
        }
        r = store_list(t->store, &names, &n);
        if (r >= 0 && take_full_due(t, names, n)) {
                char span[64];

                fprintf(t->log, "a full snapshot: the last full one is %s old or more (full_every)\n",
                        timespan_format(t->job->full_every, span, sizeof(span)));
                strv_free(names);
                return;
        }
        strv_free(names);
        r = manifest_open(facts, prev, key, &m);
        if (r < 0) {
                fprintf(t->log, "a full snapshot: %s %s\n", prev,
                        r == -ENOENT ? "has no manifest (made before manifests were kept, lost, or dropped by a purge)" :
                        r == -ESTALE ? "was taken of another source or with other exclude patterns" :
                        r == -EBADMSG ? "has a damaged manifest" :
                        r == -EPROTO ? "has a manifest of an older format" : "has a manifest that cannot be read");
                return;
        }
        if (manifest_started(m) > (int64_t) t->start) {
                fprintf(t->log, "a full snapshot: the clock is behind %s's start\n", prev);
                manifest_free(m);
                return;
        }
        t->prev_root = openat(t->store, prev, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (t->prev_root < 0) {
                fprintf(t->log, "a full snapshot: cannot open %s: %m\n", prev);
                manifest_free(m);
                return;
        }
        t->prev = m;
        strcpy(t->prev_name, prev);
}

/*
 * On btrfs an incremental snapshot is made in place: the empty subvolume
 * take_name() made gives way to a writable snapshot of the previous one
 * (O(1) whatever its size), which the walk brings up to date
 * (REUSE_INPLACE).  A previous snapshot that is a plain directory (a
 * store of before subvolumes) cannot be linked to from a subvolume: this
 * one is full then.  *ret: how the walk reuses t->prev.
 */
static int take_inplace(Take *t, MirrorReuseMode *ret) {
        int r;

        *ret = REUSE_LINK;
        if (!t->subvol || !t->prev)
                return 0;
        r = btrfs_is_subvol_fd(t->prev_root);
        if (r <= 0) {
                if (r < 0)
                        fprintf(t->log, "a full snapshot after all: cannot tell whether the previous one is a "
                                "subvolume: %s\n", strerror(-r));
                else
                        fprintf(t->log, "a full snapshot after all: the previous one is a plain directory (made "
                                "before snapshots were subvolumes), which a subvolume cannot link to\n");
                t->prev = manifest_free(t->prev);
                t->prev_root = safe_close(t->prev_root);
                return 0;
        }
        /* The .partial- itself, never made empty first (take_make_partial()). */
        r = btrfs_subvol_snapshot(t->prev_root, t->store, t->partial, false);
        if (r < 0) {
                fprintf(t->log, "store %s: cannot make %s a snapshot of the previous subvolume: %s\n",
                        t->job->store, t->partial, strerror(-r));
                return r;
        }
        t->partial_made = true;
        *ret = REUSE_INPLACE;
        return 0;
}

/*
 * On btrfs, what the next snapshot asks the filesystem from (the source's
 * identity and transaction ID now, before the walk), in the manifest;
 * and in place, what changed since the previous snapshot's (vouch.h):
 * the directories it vouches for are kept without being walked.  Any
 * doubt, and every directory is compared (the log says why).
 */
static void take_vouch(Take *t, MirrorReuseMode mode) {
        uint64_t fs = 0, gen = 0, prev_fs = 0, prev_gen = 0;
        SnapshotFacts f = {};
        struct stat st;
        int r;

        /* Committed: what changed before is in the tree; what changes from now on is in gen or later. */
        if (fd_is_btrfs(t->src) <= 0 || fstat(t->src, &st) < 0 || fs_identity(t->src, st.st_dev, &fs) <= 0 ||
            btrfs_commit(t->src, &gen) < 0)
                return;
        gen++;
        manifest_writer_set_base(t->manifest, fs, gen);
        if (mode != REUSE_INPLACE || !t->prev || t->paths)
                return;
        if (!manifest_base(t->prev, &prev_fs, &prev_gen))
                fprintf(t->log, "every directory compared: %s recorded no transaction to ask what changed from\n",
                        t->prev_name);
        else if (prev_fs != fs)
                fprintf(t->log, "every directory compared: the source is not the subvolume %s was taken of\n",
                        t->prev_name);
        else if (prev_gen > gen)
                fprintf(t->log, "every directory compared: the filesystem's transaction ID is behind %s's\n",
                        t->prev_name);
        else if ((r = mounts_inside_fd(NULL, t->src)) != 0)
                fprintf(t->log, "every directory compared: %s\n",
                        r > 0 ? "something is mounted in the source (left out where the walk meets it)" :
                                "cannot tell whether something is mounted in the source");
        else if (store_read_facts(t->store, t->prev_name, &f) < 0 || f.skipped > 0)
                fprintf(t->log, "every directory compared: %s\n",
                        f.skipped > 0 ? "files were skipped from the previous snapshot" :
                                        "cannot read the previous snapshot's facts");
        else if ((r = vouch_btrfs(t->src, prev_gen, &t->vouch)) < 0)
                fprintf(t->log, "every directory compared: %s\n",
                        r == -E2BIG ? "more inodes changed than asking the filesystem pays for" :
                        strerror(-r));
        else
                fprintf(t->log, "the filesystem vouches for what did not change since transaction %llu "
                        "(of %s): %zu directories changed\n", (unsigned long long) prev_gen, t->prev_name,
                        vouch_n_changed(t->vouch));
}

static int take_mirror(Take *t, const MirrorOps *ops, const volatile sig_atomic_t *cancel,
                       SnapshotFacts *facts) {
        _cleanup_fclose_ FILE *skipped = open_memstream(&t->skipped, &t->skipped_size);
        Mirror w = {
                .ops = ops ? ops : &mirror_reflink_ops,
                .skip_refused = true,
                .skipped = skipped,
                /*
                 * A guard excludes nothing: a restore's --delete applies the
                 * restored job's patterns (or none), not this job's, and what
                 * it removes must be held.
                 */
                .exclude = t->guard ? NULL : t->job->exclude,
                .skip = file_id(&t->store_st),
                .cancel = cancel,
                .log = t->log,
                .workers = mirror_workers(),
                .dir_hook = t->dir_hook,
                .dir_hook_userdata = t->dir_hook_userdata,
        };
        MirrorReuse reuse = {};
        MirrorReuseMode mode = REUSE_LINK;
        _cleanup_close_ int facts_dir = -EBADF;
        uint64_t key = manifest_job_key(t->job->source, t->job->exclude);
        int r;

        if (!skipped)
                return -ENOMEM;
        if (!ops) {
                r = take_probe(t);
                if (r < 0)
                        return r;
                take_time(t, "probe");
        }
        /* A guard is never the previous one (never latest): it neither keeps a manifest nor reuses. */
        if (!t->guard) {
                facts_dir = store_facts_dir(t->store, true);
                if (facts_dir < 0)
                        return facts_dir;
                take_previous(t, facts_dir, key);
                take_time(t, "previous");
                r = take_inplace(t, &mode);
                if (r < 0)
                        return r;
                if (mode == REUSE_INPLACE)
                        take_time(t, "subvolume snapshot");
        }
        if (!t->partial_made) {
                r = take_make_partial(t);
                if (r < 0)
                        return r;
        }
        t->dst = openat(t->store, t->partial, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (t->dst < 0)
                return -errno;
        if (!t->guard) {
                r = manifest_writer_new(facts_dir, t->name, key, t->start, &t->manifest);
                if (r < 0)
                        return r;
                w.manifest = t->manifest;
                take_vouch(t, mode);
                take_time(t, "vouch");
                if (t->prev) {
                        /* In place, the previous snapshot's copy is the destination itself. */
                        reuse = (MirrorReuse) { .prev_root = mode == REUSE_INPLACE ? t->dst : t->prev_root,
                                                .prev = t->prev, .mode = mode, .vouch = t->vouch };
                        w.reuse = &reuse;
                }
        }
        r = t->paths ? take_mirror_paths(t, &w) : mirror_tree(&w, t->src, t->dst);
        if (r < 0)
                return r;
        take_time(t, "walk");
        if (t->vouch)
                fprintf(t->log, "%llu directories kept, not walked (the filesystem vouched for them); %llu compared\n",
                        (unsigned long long) w.stats.vouched, (unsigned long long) w.stats.compared);

        if (t->manifest) {
                r = manifest_writer_finish(t->manifest);
                if (r < 0) {
                        fprintf(t->log, "cannot write the manifest: %s\n", strerror(-r));
                        return r;
                }
                take_time(t, "manifest");
        }
        if (fflush(skipped) != 0)
                return -ENOMEM;
        *facts = (SnapshotFacts) {
                .start = t->start,
                .end = time(NULL),
                .files = w.stats.files,
                .dirs = w.stats.dirs,
                .symlinks = w.stats.symlinks,
                .specials = w.stats.specials,
                .hardlinks = w.stats.hardlinks,
                .bytes = w.stats.bytes,
                .vanished = w.stats.vanished,
                .excluded = w.stats.excluded,
                .skipped = w.stats.skipped,
                .guard = t->guard,
                .guarded = t->paths ? t->n_guarded : 0,
                .paths = t->paths != NULL,
                /*
                 * Made from the previous one: in place always (a snapshot of its
                 * subvolume, whatever was kept), else when sharing files with it
                 * (none: every file made anew, full).
                 */
                .incremental = t->prev != NULL && (reuse.mode == REUSE_INPLACE || w.stats.reused > 0),
                .reused = w.stats.reused,
                /* In place, what was kept (directories brought up to date included) was not made. */
                .made = w.stats.files - w.stats.reused + w.stats.dirs + w.stats.symlinks + w.stats.specials -
                        w.stats.kept,
                .compared = w.stats.compared,
                .bulk = w.stats.bulk,
        };
        return 0;
}

/*
 * Read-only (a subvolume), its manifest and facts, one sync of the
 * filesystem for all of them, then the rename that makes the snapshot
 * visible, then latest.
 */
static int take_publish(Take *t, const SnapshotFacts *facts) {
        int r;

        /*
         * A subvolume is made read-only before it is published: written by
         * nobody from then on, root included.
         */
        if (t->subvol) {
                r = btrfs_subvol_set_read_only(t->dst, true);
                if (r < 0) {
                        fprintf(t->log, "store %s: cannot make %s read-only: %s\n", t->job->store, t->partial,
                                strerror(-r));
                        return r;
                }
                take_time(t, "read-only");
        }
        /* A guard of some paths: which, before the facts that say it is one. */
        if (t->paths) {
                r = store_write_guarded(t->store, t->name, t->guarded);
                if (r < 0)
                        return r;
        }
        /* The manifest before the facts: both go with the snapshot, as leftovers when it is never published. */
        if (t->manifest) {
                r = manifest_writer_publish(t->manifest);
                if (r < 0)
                        return r;
        }
        /* Its description, before the facts too: listed with the snapshot from the start. */
        if (t->description) {
                r = store_write_description(t->store, t->name, t->description);
                if (r < 0) {
                        fprintf(t->log, "store %s: cannot write the description of %s: %s\n", t->job->store,
                                t->name, strerror(-r));
                        return r;
                }
        }
        r = store_write_facts(t->store, t->name, facts, t->skipped);
        if (r < 0)
                return r;
        /*
         * One sync for the tree, the read-only flag and all the files
         * above (none of them synced by itself, nor is .last-name): on
         * disk before the rename that publishes the snapshot, never after.
         */
        if (syncfs(t->dst) < 0)
                return -errno;
        take_time(t, "sync");
        if (renameat(t->store, t->partial, t->store, t->name) < 0)
                return -errno;
        t->partial_made = false;
        /* A guard is never "latest": that is what it guards against being restored by mistake. */
        r = facts->guard ? 0 : store_set_latest(t->store, t->name);
        if (r < 0)
                fprintf(t->log, "cannot point latest at %s: %s\n", t->name, strerror(-r));
        /* Reported complete only once the rename is on disk. */
        if (fsync(t->store) < 0) {
                r = -errno;
                fprintf(t->log, "store %s: cannot sync the new snapshot's name: %s\n", t->job->store,
                        strerror(-r));
                return r;
        }
        take_time(t, "publish");
        return 0;
}

/* A cancelled run leaves its hidden .partial- tree for the next run or start
 * to remove: cancelling costs nothing whatever the tree size. */
static void take_done(Take *t, int r) {
        safe_close(t->dst);
        if (t->partial_made && r == -ECANCELED)
                fprintf(t->log, "cancelled: %s is left for the next run to remove\n", t->partial);
        else if (t->partial_made) {
                int k = rm_rf_or_subvol_at(t->store, t->partial, NULL);

                if (k < 0)
                        fprintf(t->log, "cannot remove partial snapshot %s: %s\n", t->partial,
                                strerror(-k));
        }
        manifest_writer_free(t->manifest);
        vouch_free(t->vouch);
        manifest_free(t->prev);
        safe_close(t->prev_root);
        safe_close(t->store);
        safe_close(t->src);
        strv_free(t->guarded);
        free(t->skipped);
}

int snapshot_take(const Job *job, const MirrorOps *ops, const volatile sig_atomic_t *cancel,
                  FILE *log, const SnapshotPre *pre, char name[static SNAPSHOT_NAME_MAX],
                  SnapshotFacts *facts) {
        Take t = {
                .job = job,
                .log = log,
                .src = -EBADF,
                .store = -EBADF,
                .dst = -EBADF,
                .prev_root = -EBADF,
                .full = pre && pre->full,
                .dir_hook = pre ? pre->dir_hook : NULL,
                .dir_hook_userdata = pre ? pre->dir_hook_userdata : NULL,
                .guard = pre && pre->guard,
                .paths = pre && pre->guard ? pre->paths : NULL,
                .description = pre ? pre->description : NULL,
                .start = time(NULL),
                .name = name,
                .mark = now_monotonic(),
        };
        usec_t begin = t.mark;
        int r;

        /* A description no snapshot may carry fails it before anything is made. */
        if (t.description && snapshot_description_check(t.description) < 0) {
                fprintf(log, "a snapshot's description is one line of at most %d bytes of UTF-8, with no "
                        "control character\n", SNAPSHOT_DESCRIPTION_MAX);
                return -EINVAL;
        }
        r = take_open(&t);
        if (r >= 0)
                r = take_lock(&t, cancel);
        if (r >= 0)
                take_time(&t, "open and lock");
        if (r >= 0 && pre && pre->fn && pre->fn(pre->userdata) != 0) {
                take_done(&t, 0);
                return SNAPSHOT_SKIPPED;
        }
        if (r >= 0 && pre && pre->fn)
                take_time(&t, "pre hook");
        if (r >= 0)
                r = take_name(&t);
        if (r >= 0)
                r = take_mirror(&t, ops, cancel, facts);
        if (r >= 0)
                r = take_publish(&t, facts);
        if (r >= 0)
                log_job(LOG_DEBUG, job->name, "took %llu ms: %s; %llu unchanged files found by a bulk look (XFS)",
                        (unsigned long long) ((now_monotonic() - begin) / USEC_PER_MSEC), t.times,
                        (unsigned long long) facts->bulk);
        take_done(&t, r);
        return r;
}
