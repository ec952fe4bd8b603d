/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>

/*
 * Self-service lookups (refsnap's specification, "Self-service for
 * users"), made by a process that already is the caller (refsnapd's
 * self-service worker, refsnapd-caller.h): every check here is the
 * kernel's, made with the process's own credentials, ACLs included.
 * The process holds descriptors only (a snapshot's root, the job's live
 * source) and resolves beneath them with chase_dir() and open_no_xdev():
 * no symbolic link followed, no ".." and no other mount entered.
 *
 * rel is a path relative to the job's source, normalized (no ".", "..",
 * doubled or trailing '/'), "" for the source itself.
 */

/* rel is such a path, and no longer than PATH_MAX. */
bool self_path_valid(const char *rel);

/*
 * rel in the snapshot whose root is root: reached (each directory on the
 * way searchable by this process) and readable by it (a directory:
 * listable; a symbolic link: reached is enough, it is the link that is
 * shown).  0 and its statx in *ret; else -errno, which the caller of this
 * function must not tell apart (missing and forbidden look the same).
 */
int self_find_version(int root, const char *rel, struct statx *ret);

/*
 * The live tree now, beneath live (the job's source): the source and
 * each directory above rel that still exists are searchable by this
 * process, and rel itself, where it still exists, is readable by it
 * (the stricter of the snapshot and the live tree: what its owner has
 * closed since is closed in every snapshot too).  0: visible; a
 * directory above rel missing ends this check there (the live tree
 * alone: self_visible_now() goes on in the snapshots).  -EACCES: not visible, also for an ancestor that is now a
 * symbolic link, not a directory, or another mount.
 */
int self_live_visible(int live, const char *rel);

/*
 * Visible now, as far as anything still says: the live tree where it
 * still has rel's components (self_live_visible()); from the first
 * component missing there (deleted, or renamed away by whoever may
 * write its parent: live < 0 when the source itself is gone) on, the
 * newest of the snapshots roots[] (oldest first; < 0: skipped) that
 * still has that component, and so on down: the most recent known
 * permissions apply, so an owner's closing is not undone by a rename.
 * One this process cannot search there: not visible.  0: visible (or
 * nothing says otherwise: each snapshot's own check decides); -EACCES.
 */
int self_visible_now(int live, const int *roots, size_t n, const char *rel);

/*
 * The versions of rel in the snapshots roots[i] named names[i] (oldest
 * first), written to out, newest first, one line each:
 *   NAME SIZE MTIME_USEC MODE DIFFERS
 * (MODE in octal with the type bits; DIFFERS 1 when size, modification
 * time, mode or owner differ from the previous (older) version listed, or
 * there is none); none unless self_visible_now().  live < 0: the source
 * is gone.
 * Returns how many were listed (0 when none is visible), or -errno.
 */
int self_list_versions(int live, const int *roots, char *const *names, size_t n, const char *rel, FILE *out);

/*
 * The mode a restored regular file of mode gets, with preserve what
 * reflinkat(2) kept of it (self_restore()): mode itself where its owner
 * is kept; otherwise it is hers in her own group, a group that is not the
 * file's, so group and ACL mask may grant no more than the file gave
 * others (other's bits, less write unless its mode is kept: another
 * user's file is never one others may write), owner's bits as they were,
 * set-group-ID dropped, set-user-ID and sticky only where the mode is
 * kept (her own file).
 */
mode_t self_restored_mode(mode_t mode, unsigned preserve);

/*
 * Restore rel of the snapshot roots[which] (of roots[n], oldest first, as
 * self_visible_now() takes them) as this process (the caller) into the
 * directory dest, as name: made there under a hidden temporary name,
 * then renamed to name only where name is not there
 * (RENAME_NOREPLACE: no guard snapshot is taken, so a live entry is
 * never replaced; -EEXIST, *what "exists", the dry run too).  A regular file is made with
 * reflinkat(2) keeping what she may keep (her own file: owner, when its
 * group is one of hers, mode with set-id bits, ACL; another user's
 * readable file: none, so it is hers, without set-id bits); a symbolic
 * link comes back as the link; a directory is not restored here; a
 * device node, FIFO or socket never.  dry_run: the checks alone.  Returns
 * 0, -ENOENT when rel is not visible to her (self_visible_now(),
 * self_find_version(): whatever the reason), -EISDIR, -EMEDIUMTYPE (a
 * type never made), or the -errno of the making (why said in *what:
 * "make", "rename", "exists" or "destination").
 */
int self_restore(int live, const int *roots, size_t n, size_t which, const char *rel, int dest, const char *name,
                 bool dry_run, const char **what);
