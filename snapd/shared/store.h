/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "snapshot-name.h"

/*
 * A job's versioned tree:
 *   STORE/2026-12-03T07:00:00Z/      complete snapshots, named by UTC start
 *   STORE/2026-12-03T07:00:00Z-01/   a second one within the same second
 *   STORE/latest -> 2026-12-03T07:00:00Z
 *   STORE/.partial-NAME/             a snapshot being made
 *   STORE/.probe-NAME, .probe-NAME.clone   its test of the filesystem's extent sharing, for a moment
 *   STORE/.removing-NAME/            a snapshot being removed (pruned)
 *   STORE/.restore-PID/              a restore's staging directory
 *   STORE/.facts/NAME                what refsnapctl list shows, per snapshot
 *   STORE/.facts/NAME.skipped        a partial snapshot's skipped files, "ERRNO PATH", PATH escaped (cescape)
 *   STORE/.facts/NAME.guarded        a guard of some paths only: they, "0 PATH", PATH escaped likewise
 *   STORE/.facts/NAME.manifest       the source as NAME took it (manifest.h): what the next one compares with
 *   STORE/.facts/NAME.pinned         NAME is pinned: no retention or prune removes it (an empty file)
 *   STORE/.facts/NAME.description    what the one who took NAME said of it (snapshot --description): one line
 *   STORE/.paused                    the job is paused: "UNTIL\n", µs of CLOCK_REALTIME, 0 until resumed
 *   STORE/.last-name                 the last snapshot name given: "NAME\n" (no name is given twice)
 *   STORE/.purge                     a purge under way (purge.h): the path it removes, its bytes alone
 *   STORE/.purging-NAME/             a purge's copy of snapshot NAME, on btrfs (purge.h)
 * On btrfs (the store's filesystem, fstatfs) each snapshot made is a
 * subvolume of its own, made read-only before it is published: a
 * .partial- or .removing- subvolume is destroyed whole (never walked),
 * and so is a pruned snapshot; plain-directory snapshots of before stay
 * as they are, listed and pruned alike.
 * The store is root's, mode 0700 (0755 for Samba's view, smb_view, under a
 * parent closed to others: store_open_on()), reached through root's directories
 * only.  A file of a snapshot may be the inode of an older one too (an
 * incremental snapshot links what did not change): nothing writes
 * through a snapshot's files.  The hidden names are never listed; whatever of them a run leaves
 * (killed, power cut) the next run removes, under the store's lock.
 */

#define STORE_PARTIAL_PREFIX ".partial-"
#define STORE_REMOVING_PREFIX ".removing-"
#define STORE_RESTORE_PREFIX ".restore-"
#define STORE_PURGING_PREFIX ".purging-"
#define STORE_PROBE_PREFIX ".probe-"


typedef struct SnapshotFacts {
        time_t start, end;
        uint64_t files, dirs, symlinks, specials, hardlinks, bytes, vanished, excluded;
        uint64_t skipped;       /* > 0: a partial snapshot (the files are in .facts/NAME.skipped) */
        bool guard;             /* taken by a restore, of what it was about to replace */
        uint64_t guarded;       /* how many paths a guard of some paths holds (in .facts/NAME.guarded) */
        bool paths;             /* a guard of some paths only, not the whole job (even one that held none) */
        bool kind_known;        /* the facts say full or incremental (written since manifests are kept) */
        bool incremental;       /* made from the previous snapshot, sharing with it the files that had not changed */
        uint64_t reused;        /* files that are the previous snapshot's inodes */
        uint64_t made;          /* entries made anew: files, directories, symbolic links, special files */
        uint64_t compared;      /* directories compared with the previous snapshot's manifest */
        uint64_t bulk;          /* of reused: found unchanged by a bulk look (XFS, mirror.h); not stored */
        unsigned errors;
} SnapshotFacts;

/* Where the skipped files of a partial snapshot are listed, beside its facts. */
#define STORE_SKIPPED_SUFFIX ".skipped"
/* Where a guard of some paths only lists them. */
#define STORE_GUARDED_SUFFIX ".guarded"
/* A pinned snapshot's mark, beside its facts. */
#define STORE_PINNED_SUFFIX ".pinned"
/* A snapshot's description, beside its facts. */
#define STORE_DESCRIPTION_SUFFIX ".description"
/* The longest description, in bytes. */
#define SNAPSHOT_DESCRIPTION_MAX 256

/*
 * May text describe a snapshot?  1 to SNAPSHOT_DESCRIPTION_MAX bytes of
 * valid UTF-8 with no control character (C0, DEL, C1: no newline, no
 * escape sequence): 0; -EINVAL (empty, a control character, not UTF-8)
 * or -E2BIG (too long).
 */
int snapshot_description_check(const char *text);
/*
 * STORE/.facts/NAME.description := text (checked as above), through a
 * temporary file and a rename, not synced (as the facts below): 0 or
 * -errno.
 */
int store_write_description(int store, const char *name, const char *text);
/*
 * Snapshot name's description into *ret (a new string): 0; -ENOENT when
 * it has none; -EBADMSG when the file holds what no description may.
 */
int store_read_description(int store, const char *name, char **ret);

/*
 * Open the store (an absolute path), never through a symbolic link,
 * making its last component (mode 0700) when missing unless !create, and
 * never a missing parent (-ENOENT: the job's filesystem not mounted?).  Refuses
 * (-EPERM) a store not owned by root, or one whose path goes through a
 * directory a user other than root could change (CHASE_SAFE): such a
 * user could swap the store for a directory of her own.
 */
int store_open(const char *path, bool create);
/*
 * store_open(path, true), making the store only on mount mnt (else
 * -EXDEV).  listable (a job with smb_view, Samba's read-only view of the
 * store): the store is made and kept 0755 instead, so that Samba's users
 * may list the view, when its parent is root's and closed to everyone
 * else (store_parent_closed()); else 0700 all the same.
 */
int store_open_on(const char *path, uint64_t mnt, bool listable);
/*
 * Is the directory above the store root's, with no search or write
 * permission for group or others, so that no other user reaches the
 * store (its snapshots writable where their files are hers) by its own
 * path?  1, 0, or -errno.
 */
int store_parent_closed(int store);

/* The snapshots, oldest first (names only, valid and directories). */
int store_list(int store, char ***ret, size_t *n);

/*
 * STORE/.checked: when refsnapd last found the job unchanged and skipped
 * it (on_change), for refsnapctl list.  Written in place, not synced: a
 * lost one only loses that remark.
 */
int store_write_checked(int store, time_t when);
/* 0 and *ret, or -ENOENT (never skipped), or -errno. */
int store_read_checked(int store, time_t *ret);

/* The newest snapshot's name into name; -ENOENT when there is none. */
int store_newest(int store, char name[static SNAPSHOT_NAME_MAX]);
/*
 * The name the next snapshot's must sort after: the later of the newest
 * snapshot's and STORE/.last-name's (so that a deleted snapshot's name,
 * or one pruned, is not given again when the clock stepped back);
 * -ENOENT when there is neither.  A damaged .last-name is ignored.
 */
int store_name_floor(int store, char name[static SNAPSHOT_NAME_MAX]);
/*
 * STORE/.last-name := name (under the store's lock), not synced: on disk
 * with the snapshot's syncfs(), before its name is published.
 */
int store_write_last_name(int store, const char *name);

/*
 * What "latest" names: the newest snapshot that is not a guard (which
 * STORE/latest points at too); -ENOENT when there is none.
 */
int store_latest(int store, char name[static SNAPSHOT_NAME_MAX]);

/*
 * Take the store's lock (flock on its directory), held until the
 * descriptor is closed: one snapshot or prune of a store at a time, so a
 * snapshot being made is never taken for a leftover.  wait: block until
 * free; else -EBUSY when another holds it.
 */
int store_lock(int store, bool wait);

/*
 * Remove what an interrupted run left: .partial-, .removing- and
 * .restore- trees, stray temp files, and facts whose snapshot is gone.
 * Takes the lock; when another process holds it (a snapshot is being
 * made), removes nothing and returns 0.  Stops with -ECANCELED when
 * cancel (may be NULL) is set: what is left is removed by a later call.
 */
int store_remove_leftovers(int store, const volatile sig_atomic_t *cancel, FILE *log);
/* The same, for a caller that holds the lock. */
int store_remove_leftovers_locked(int store, const volatile sig_atomic_t *cancel, FILE *log);

/* STORE/.facts, made when missing and create (synced before any facts are written in it). */
int store_facts_dir(int store, bool create);

/*
 * Write the facts of snapshot name (and, when skipped_list is not NULL,
 * the list of its skipped files) before the snapshot is published.  Not
 * synced one by one: snapshot_take() writes them, its manifest, its
 * description and its list of guarded paths, then syncs the store's
 * filesystem once (syncfs()) before the rename that publishes it.
 */
int store_write_facts(int store, const char *name, const SnapshotFacts *f, const char *skipped_list);
int store_read_facts(int store, const char *name, SnapshotFacts *f);
/*
 * What name may stand for, when deciding "latest" and the newest whole
 * snapshot: its facts (0), or, with no facts, a zeroed *f (a snapshot
 * older than facts: whole) unless a list of guarded paths lies there
 * (f->guard and f->paths: a guard whose facts were lost).  -errno when
 * the facts or the list cannot be read: take it for neither.
 */
int store_read_kind(int store, const char *name, SnapshotFacts *f);
/*
 * The paths (relative to the source) a partial snapshot name skipped,
 * from .facts/NAME.skipped: *ret NULL-terminated, or NULL when none.
 */
int store_read_skipped(int store, const char *name, char ***ret);
/*
 * A guard snapshot of some paths only (a restore of those): the paths
 * (relative to the source), written before it is published, and read
 * back: 1 for such a guard (*ret NULL when none of its paths was there:
 * it holds nothing), 0 for any other snapshot (*ret NULL), or -errno.
 */
int store_write_guarded(int store, const char *name, char *const *paths);
int store_read_guarded(int store, const char *name, char ***ret);
int store_set_latest(int store, const char *name);

/*
 * Take the snapshot NAME out of the listing in one step: rename it to
 * .removing-NAME, then drop its facts.  Not synced: store_sync() once
 * after retiring several, then store_remove_retired().
 */
int store_retire(int store, const char *name);

/*
 * Is name a snapshot of the store: a snapshot's name (never a hidden
 * one, never with a '/'), and a directory there, not a symbolic link?
 * 0, -EINVAL (not a snapshot's name), -ENOENT, or -errno.
 */
int store_snapshot_exists(int store, const char *name);

/*
 * Pin (or unpin) the snapshot name: STORE/.facts/NAME.pinned made
 * (written through a temp file, synced) or removed.  The snapshot must
 * exist (store_snapshot_exists()).  Returns 1 when that changed
 * something, 0 when it was so already, or -errno.  A pin keeps the
 * snapshot from retention and prune; take the store's lock around a pin,
 * or a prune running may have chosen it already.
 */
int store_set_pinned(int store, const char *name, bool pin);
/* 1: name is pinned, 0: not, -errno. */
int store_is_pinned(int store, const char *name);

/*
 * The job's pause, STORE/.paused: until, µs of CLOCK_REALTIME (0: until
 * resumed), written through a temp file and a rename, synced.  Read: 0
 * and *until, -ENOENT (not paused), -EINVAL (not a pause's content), or
 * -errno.  Removed: 0 (also when there was none) or -errno.
 */
int store_write_paused(int store, uint64_t until);
int store_read_paused(int store, uint64_t *until);
int store_remove_paused(int store);

/*
 * A purge's intent, STORE/.purge: the path it removes from the snapshots
 * (relative to the source; its bytes, nothing else), written through a
 * temp file and a rename, synced, before any snapshot is touched, and
 * removed (synced) once every snapshot that held it is purged: one left
 * says a purge was interrupted, and the next purge or snapshot of the
 * job finishes it (purge.h).  Read: 0 and *ret (a new string), -ENOENT
 * (none), -EBADMSG (empty, or a NUL in it), or -errno.
 */
int store_write_purge_intent(int store, const char *path);
int store_read_purge_intent(int store, char **ret);
int store_remove_purge_intent(int store);

/* fsync the store directory and its facts. */
int store_sync(int store);

/*
 * Remove the .removing- trees, each described on log when not NULL.
 * Goes on past a failure; returns 0 or the first -errno.
 */
int store_remove_retired(int store, FILE *log);


/*
 * Does the filesystem of fd enforce user or group quotas (its mount's
 * options in /proc/self/mountinfo: usrquota, grpquota, quota, as XFS and
 * ext4 say them)?  Then a snapshot's copies are charged to their owners.
 * 1 (and the option into what, of size at least 16), 0, or -errno.
 */
int store_fs_quota(int fd, char what[static 16]);

/*
 * Is the filesystem of fd a btrfs with quotas enabled and a limit
 * (max_referenced or max_exclusive, /sys/fs/btrfs/FSID/qgroups/) on the
 * qgroup of fd's subvolume, or on a qgroup it belongs to, however high
 * (the quota tree's relations)?  Then the extents snapshots keep count
 * against that limit.  1 (and "qgroup L/ID, ATTR VALUE" into what, of
 * size size), 0, or -errno (-EPERM: not root).
 */
int store_btrfs_qgroup_limit(int fd, char *what, size_t size);
