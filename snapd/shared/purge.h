/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "config.h"

/*
 * refsnapctl purge: one path (a file, or a directory with everything
 * below it) removed from every snapshot of a job that holds it: a file
 * that should never have been kept (a leaked secret; snapshots that keep
 * a file with the permissions it had, HiveNightmare's way).  Pinned
 * snapshots and guards are purged too.  The live source is not touched.
 *
 * How, so that a kill or a power cut never leaves a snapshot half purged
 * for good, nor one listed writable:
 *   - under the store's lock, taken without waiting (-EBUSY: a snapshot,
 *     prune, delete or restore of the job holds it); the leftovers of
 *     an interrupted run removed first, and an interrupted purge
 *     finished first;
 *   - the intent, STORE/.purge (the path), written and synced before any
 *     snapshot is touched, removed once all are purged: one left is
 *     finished by the next purge or snapshot of the job
 *     (purge_resume_locked(), which the snapshot calls under its lock);
 *   - the manifests of the snapshots that hold it removed (synced) before
 *     any snapshot is touched: the next snapshot is a full one, so no
 *     purged entry is ever reused (linked on XFS, kept in place on
 *     btrfs, or passed over as unchanged by the filesystem's own record
 *     of what changed), and a file still in the source (not excluded)
 *     comes back as a new inode with what it holds then;
 *   - a snapshot that is a btrfs subvolume (read-only) is never made
 *     writable: a writable snapshot of it, STORE/.purging-NAME, has the
 *     entry removed, is made read-only, and is exchanged with it in one
 *     rename (RENAME_EXCHANGE); the old one, now hidden, is destroyed.
 *     A crash leaves the snapshot whole before or whole after, and a
 *     .purging- leftover that the next run destroys;
 *   - a plain-directory snapshot (XFS, ext4, or btrfs's of before) has
 *     the entry renamed out of it in one step, to a hidden
 *     STORE/.removing-purged-NAME, then removed; a file whose inode other
 *     snapshots shared (incremental snapshots link what did not change)
 *     goes when its last name does;
 *   - the directory that held the entry keeps its times (atime, mtime);
 *     its ctime moves, as it must.
 * Every lookup is beneath the snapshot's root, with no symbolic link
 * followed and no mount crossed (chase.h): a snapshot whose path to the
 * entry goes through a symbolic link does not hold it.  The snapshots'
 * facts (counts) stay as they were taken.
 */

/*
 * The path a purge is asked for (arg: relative to the job's source, or
 * absolute beneath source), as the source's relative path: no empty
 * or "." component, no '/' first or last.  0 and *ret (a new string);
 * -EINVAL: a ".." component, the source's root itself, a path outside
 * the source, empty.
 */
int purge_path_normalize(const char *source, const char *arg, char **ret);

/*
 * Would the next snapshot of job take path again: is it in the live
 * source (looked at beneath the source, no symbolic link followed) and
 * not excluded (neither it nor a directory above it)?  1, 0, or -errno.
 */
int purge_in_source(const Job *job, const char *path);

/*
 * Purge path (purge_path_normalize()d) from every snapshot of the store
 * (store_open()ed) of job job_name, as described above; with dry_run
 * only find them.  Returns how many snapshots held it (> 0) and, when
 * ret is not NULL, their names (oldest first, NULL-terminated); -ENOENT
 * when none did; -EBUSY (locked); -EINVAL (not such a path); or -errno
 * (what could not be purged is left with the intent, for the next run).
 * The journal's event (MESSAGE_ID_PURGED) says what was purged, and who
 * asked (asked_by, "uid U, pid P, unit UNIT (:1.N)"; may be NULL).
 */
int snapshot_purge(int store, const char *job_name, const char *path, bool dry_run, const char *asked_by,
                   char ***ret);

/*
 * Finish a purge that was interrupted (STORE/.purge there), the store's
 * lock held by the caller.  1: one was finished; 0: none was left;
 * -EINVAL: the intent names no path of a source (removed, nothing
 * else); -errno (the intent is kept).  Problems go to log (may be NULL).
 */
int purge_resume_locked(int store, const char *job_name, FILE *log);
