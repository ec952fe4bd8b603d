/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The directories of a source that changed since the previous snapshot,
 * as the filesystem says (not as a watch saw: fanotify reports no write
 * through a shared mapping, and a file may be held open for writing
 * where no scan finds it, in flight in a socket): a directory at a path
 * not in the set that is the directory the previous snapshot took at
 * that path is, with everything below it, as the previous snapshot took
 * it, and an in-place update keeps it without walking it.
 *
 * Which directory a path names now is not in the set: a subvolume made
 * or renamed there is no inode of this tree, and two directories swapped
 * by renames (or the directories above the source's root) keep the
 * inodes below them unchanged, each at the other's path; none of these
 * puts the path in the set.  It is the directory holding the name that
 * vouches for it: one whose own inode did not change (no name in it
 * made, removed or renamed; a subvolume's made or renamed in or out
 * included) holds the names it held, each naming what it named.  So a
 * directory is kept by its path only when the directory holding it is
 * the one the previous snapshot took there (same inode, on the source's
 * subvolume) and unchanged (vouch_inode_unchanged()), from the root down
 * (vouch_root_unchanged()); a file only when readdir's inode number, in
 * a directory of the source's subvolume, is the one recorded.
 *
 * On btrfs: each snapshot commits the source's filesystem before its
 * walk (btrfs_commit(): transaction T, every change before it in the
 * tree, every change after it in a later transaction) and its manifest
 * holds T + 1 (G).  The next snapshot, committed likewise, asks for the
 * inodes with an item in a leaf written in transaction G or later
 * (btrfs_changed_inodes(): leaves older than that are not read), then
 * for the directories holding each one's links and their paths.  A directory holding another subvolume counts as changed (what
 * is in that one is not in this tree); so does every directory above a
 * changed one.
 *
 * Paths are relative to the source's root ("a/b"; "" the root, always
 * changed).
 */
typedef struct Vouch Vouch;

int vouch_new(Vouch **ret);
Vouch *vouch_free(Vouch *v);

/* path changed: it and every directory above it.  Before vouch_seal(). */
int vouch_add_changed(Vouch *v, const char *path);
/* Done adding: the set sorted, duplicates gone. */
void vouch_seal(Vouch *v);

/* Did nothing change at or below path (a directory of the source)?  After vouch_seal(). */
bool vouch_covers(const Vouch *v, const char *path);
/* Directories in the set (the source's root among them). */
size_t vouch_n_changed(const Vouch *v);

/*
 * The inodes that changed, as the filesystem says (on btrfs each inode
 * with an item written since the transaction: its data, its attributes,
 * a link made or removed, wherever it lies); before vouch_seal().  A set
 * given no inode vouches for none.
 */
int vouch_add_inode(Vouch *v, uint64_t ino);
/*
 * Is inode ino of the source's subvolume (not another subvolume's: their
 * numbers are their own) as the previous snapshot took it, its links
 * included?  After vouch_seal(); false for a set given no inode.
 */
bool vouch_inode_unchanged(const Vouch *v, uint64_t ino);

/*
 * Is the source's root the directory the previous snapshot took at its
 * path, holding the same names?  Neither it nor any directory above it
 * in its subvolume changed (a rename above it may have put another
 * directory at its path).  After vouch_seal(); false for a set given no
 * inode.
 */
bool vouch_root_unchanged(const Vouch *v);

/*
 * The set for the source src (its root directory, on btrfs) since
 * transaction since: 0 and *ret; -E2BIG past VOUCH_MAX_CHANGED changed
 * inodes (a full comparison costs about what the set would); -errno.
 * Commits the filesystem first.
 */
#define VOUCH_MAX_CHANGED 200000
int vouch_btrfs(int src, uint64_t since, Vouch **ret);
