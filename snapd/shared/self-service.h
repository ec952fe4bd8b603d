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
 * directory above rel missing ends the check there (what is gone closes
 * nothing).  -EACCES: not visible, also for an ancestor that is now a
 * symbolic link, not a directory, or another mount.
 */
int self_live_visible(int live, const char *rel);

/*
 * The versions of rel in the snapshots roots[i] named names[i] (oldest
 * first), written to out, newest first, one line each:
 *   NAME SIZE MTIME_USEC MODE DIFFERS
 * (MODE in octal with the type bits; DIFFERS 1 when size, modification
 * time, mode or owner differ from the previous (older) version listed, or
 * there is none).  live < 0: no live tree to check (the source is gone).
 * Returns how many were listed (0 when none is visible), or -errno.
 */
int self_list_versions(int live, const int *roots, char *const *names, size_t n, const char *rel, FILE *out);
