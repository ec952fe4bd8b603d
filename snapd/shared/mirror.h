/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "manifest.h"
#include "stat-util.h"
#include "vouch.h"

/*
 * The snapshot engine: mirrors the tree under src_root into
 * dst_root (an empty directory).  Regular files are made by ops->clone
 * (reflinkat(REFLINK_ATTR_ALL) in the daemon); directories, symbolic
 * links, FIFOs, sockets and device nodes are made here with their
 * metadata; hard links inside the tree stay hard links.
 *
 * It works on descriptors only, opened with O_NOFOLLOW: it never follows
 * a symbolic link, never leaves src_root's mount, and never enters a
 * directory that is skip (the store).  A directory that is
 * swapped for a symbolic link while the walk runs is refused, not
 * followed.  Entries that vanish during the walk are counted and skipped.
 *
 * A mount inside the tree (a bind mount, a user's FUSE mount, a network
 * mount) is left out, counted in stats.other_mounts and said on log, and
 * never entered, not even by a stat (open_no_xdev()): the snapshot is not
 * partial for it.  A file another process holds a lease on is opened
 * without waiting, which begins the lease's break, and put off to the end
 * of the walk, where it is opened again waiting for the break: the
 * breaks of many files run at once, not one after the other
 * (fs.lease-break-time, 45 s, each).  The hard link table's lock is never
 * held across a clone.
 */

typedef struct MirrorOps {
        /* Make dst_dir/name sharing the data and attributes of src, a regular file open for reading. */
        int (*clone)(int src, int dst_dir, const char *name, void *userdata);
        void *userdata;
} MirrorOps;

/*
 * Reuse of the previous snapshot of the same source (the hook of
 * incremental snapshots).  The walk compares each directory with the
 * previous manifest (merge-join, see manifest.h); an entry is unchanged
 * when manifest_entry_unchanged() says so.
 *
 * REUSE_LINK (any filesystem; XFS): dst_root is empty, as for a full
 * snapshot; an unchanged regular file becomes a hard link (linkat) to the
 * previous snapshot's inode at the same path, once that is seen to be a
 * regular file of the same size, mode and owner (else, or at EMLINK, it
 * is made anew).  Changed and new files are made by ops->clone;
 * directories, symbolic links and special files are made as always.  A
 * hard link group of the source is linked whole to the previous inode
 * when unchanged (its link count is part of the comparison, and ctime
 * moves on link and unlink), else made anew once and linked within the
 * snapshot as always: nothing else is ever linked within one snapshot.
 *
 * REUSE_INPLACE (btrfs): dst_root is already a copy of the previous
 * snapshot (a writable subvolume snapshot of it, O(1)), and prev_root is
 * dst_root: it is brought up to date in place.  In each directory, first
 * the names the source no longer has go (with everything below them);
 * then each entry of the source: one the manifest says is unchanged
 * stays as the copy has it, once seen to be of the type, mode, owner
 * (and size, or device number) the source has; anything else at that
 * name goes (rm_rf_at()) and the entry is made as always (a changed or
 * new regular file by ops->clone, a new inode, never written through);
 * a directory of the copy is kept and walked, a directory that is not
 * there is made; an entry left out (excluded, vanished, a mount, our own
 * store, a file skipped or put off) leaves nothing at its name.  Every
 * directory's metadata is set after its entries, the extended attributes
 * the source no longer has removed.  A hard link group: a member kept in
 * place is the group's inode in the snapshot, the others linked to it
 * (kept when they are already), so hard links stay exact.
 */
typedef enum MirrorReuseMode {
        REUSE_NONE,
        REUSE_LINK,
        REUSE_INPLACE,
} MirrorReuseMode;

typedef struct MirrorReuse {
        int prev_root;          /* the previous snapshot's root directory */
        Manifest *prev;         /* its manifest, checked (manifest_open()) */
        MirrorReuseMode mode;
        /*
         * REUSE_INPLACE: the directories that changed since the previous
         * snapshot, as the filesystem says (vouch.h), or NULL: every
         * directory is compared.  A directory the set covers, whose own
         * record is unchanged, on the source root's filesystem (not a
         * subvolume inside it) and with no file of more than one link
         * below it (its group's other members may be elsewhere), stays
         * as the copy has it, not walked: its records are copied from
         * the previous manifest (stats.vouched).  Neither it nor its
         * copy is opened or looked at: readdir's type says it is a
         * directory, the set and its record say the rest.  In a
         * directory that changed, a regular file of one link whose inode
         * the set vouches for (vouch_inode_unchanged()), still at the
         * name (readdir's inode number), is kept from its record too,
         * without a statx.
         */
        const Vouch *vouch;
} MirrorReuse;

typedef struct MirrorStats {
        uint64_t files, dirs, symlinks, specials, hardlinks;
        uint64_t reused;        /* of files: linked to the previous snapshot's inode (REUSE_LINK), or kept (REUSE_INPLACE) */
        uint64_t kept;          /* of directories, symbolic links, special files: kept in place (REUSE_INPLACE) */
        uint64_t compared;      /* directories compared with the previous manifest */
        uint64_t vouched;       /* directories kept with everything below them, not walked (MirrorReuse.vouch) */
        uint64_t bulk;          /* of files reused: found unchanged by a bulk look (Mirror.no_bulk), not by name */
        uint64_t bytes;         /* apparent size of the regular files */
        uint64_t excluded, vanished, other_mounts;
        uint64_t skipped;       /* regular files the kernel would not reflink, for a reason of their own */
} MirrorStats;

typedef struct Mirror {
        const MirrorOps *ops;
        char *const *exclude;
        FileId skip;
        const volatile sig_atomic_t *cancel;    /* set: stop with -ECANCELED */
        FILE *log;                              /* where problems are described */
        bool skip_refused;                      /* skip a file the kernel refuses (mirror_skippable) */
        FILE *skipped;                          /* NULL, or: "ERRNO PATH" for each skipped file */
        unsigned workers;                       /* > 1: the root's directories in parallel */
        const MirrorReuse *reuse;               /* NULL: every entry made anew (mirror_tree() only) */
        ManifestWriter *manifest;               /* NULL, or: each entry made is recorded (mirror_tree() only) */
        /*
         * No file of the tree has another link within it (a snapshot whose
         * facts say hardlinks=0): every file is made on its own, without
         * the hard link table, whatever its link count (an XFS incremental
         * snapshot's files have more links, into older snapshots only).
         */
        bool no_links;
        /*
         * REUSE_LINK on XFS, nothing mounted in the source: the regular
         * files of each directory are looked at in bulk by inode number
         * (xfs_bulkstat_inodes()), and one of one link found as recorded
         * is linked to the previous snapshot's inode without a look by
         * name (stats as for any file linked).  no_bulk: never (a test's
         * judge of the two ways).
         */
        bool no_bulk;
        /*
         * NULL, or: called with each directory of the destination the
         * walk writes in (its root included; not one kept unwalked),
         * opened, before anything is made in it (the daemon: its change
         * watch told to ignore what its own worker does there).
         */
        void (*dir_hook)(int dir_fd, void *userdata);
        void *dir_hook_userdata;
        MirrorStats stats;                        /* added to */
} Mirror;

/*
 * With skip_refused (snapshots, never restores: a restore that left a
 * file out would not be one), a regular file whose clone fails for a
 * reason of its own (an active
 * swap file: ETXTBSY; a pair of inodes the filesystem will not share:
 * EOPNOTSUPP; a file leased again after its break, past the time given
 * to leases: EAGAIN) is skipped: counted in stats.skipped, described on log and
 * listed on skipped, its path escaped ("\\" and "\n").  Anything else
 * about a file (EPERM, EACCES: a policy, which may well refuse every
 * file, and a near-empty "partial" snapshot would then count as the
 * newest for retention), and anything about the job or the filesystem
 * (ENOSPC, EIO), fails the walk.  The caller tells "the filesystem cannot reflink at
 * all" apart beforehand (snapshot.c probes the store).
 */
bool mirror_skippable(int r);

/*
 * Returns 0, or -errno of the first failure that makes the snapshot
 * unusable (described on w->log); the caller removes dst_root then.
 * Each directory's entries are taken in name order (strcmp).  With
 * w->manifest, every entry put in the snapshot is recorded there, in
 * the order manifest.h describes (a file put off for a lease is not
 * recorded: the next snapshot makes it anew); the caller then finishes
 * the manifest.
 */
int mirror_tree(Mirror *w, int src_root, int dst_root);

/*
 * The same for one entry: src_dir/name (of any type; a directory with
 * everything below it) becomes dst_dir/name.  An entry that vanished is
 * counted in stats.vanished and 0 is returned.
 */
int mirror_entry(Mirror *w, int src_dir, const char *name, int dst_dir);

/* The engine's clone step: reflinkat(src_dir, name, dst_dir, name, REFLINK_ATTR_ALL). */
extern const MirrorOps mirror_reflink_ops;

/*
 * How many workers share a tree's top-level directories: one per online
 * CPU, at most MIRROR_WORKERS_MAX (more only add lock contention in the
 * filesystem, measured on btrfs and XFS).
 */
#define MIRROR_WORKERS_MAX 4
unsigned mirror_workers(void);
