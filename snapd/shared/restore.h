/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "mirror.h"
#include "stat-util.h"

/*
 * Bring a path of a snapshot back into a live tree.
 *
 * The snapshot's entry is first mirrored with the snapshot engine (one
 * reflinkat(REFLINK_ATTR_ALL) per regular file, everything else rebuilt
 * with its metadata, hard links kept) into a staging directory,
 * STORE_RESTORE_PREFIX<pid>, inside the store (root's, 0700, so nobody
 * else can touch what is staged), and synced; then each entry is renamed
 * over its live twin (renameat2 RENAME_EXCHANGE), so a reader, or a power
 * cut, sees the old or the new entry, never a partial one.  Live
 * directories are entered, never replaced, and get the snapshot's
 * metadata back.  Nothing is created in the live tree but the restored
 * entries themselves (and, on another subvolume, see below, a staging
 * directory).
 *
 * Nothing in the live tree is followed: every path is opened with
 * chase_dir().  Where the snapshot has a directory and the live tree has a
 * symbolic link (or any other file), the link is swapped out for the
 * restored directory, not followed.  A symbolic link among the parent
 * directories of a restored path refuses the restore.  Other mounts
 * inside the live tree (mount ID: bind mounts of the same filesystem and
 * btrfs subvolumes' mounts too) are neither entered, replaced nor emptied.
 *
 * Live directories are other users' too.  One is merged into (entered,
 * given the snapshot's metadata) or replaced by a non-directory only when
 * it is root's or its snapshot twin's owner's, and never when entering it
 * goes from a directory of one user other than root into one of another
 * (tmpfiles' unsafe transition): a user who renames her neighbour's
 * directory to her own name in a shared directory (no right on the
 * directory moved is needed for that) does not get it handed over, entered
 * or emptied.  The same holds for the existing parents of a restored path.
 * A refused or failed entry is said on log with its path and the rest is
 * restored; restore_run() then returns the first such error.
 *
 * With delete, what the job excludes (exclude) and what the snapshot
 * skipped (keep) is left alone, as rsync --delete leaves excluded names
 * alone; so is a user's directory that another user could have renamed
 * to the name being deleted.
 *
 * A rename cannot cross btrfs subvolumes.  Where the live directory
 * entries are renamed into is on another subvolume than the staged copy
 * (a source that is a subvolume of its own, a subvolume nested inside
 * one), the entries are staged again, by reflink, in a directory of
 * root's, mode 0700, made in that live directory, and merged from there;
 * only in a live directory no user but root can change (root's, and not
 * writable by group or others, or sticky), since its owner could
 * otherwise rename the staging directory or what is put in it.  Where
 * there is none, that part is refused (restore_stage_refusal() says so
 * beforehand).  The staging directory is removed afterwards and never
 * deleted or compared as a live entry.
 */

/* How deeply btrfs subvolumes may nest inside one restore. */
#define RESTORE_STAGES_MAX 16
/* A staging directory made on a live subvolume: RESTORE_STAGE_PREFIX PID.N */
#define RESTORE_STAGE_PREFIX ".refsnap-restore-stage."

typedef struct RestoreStats {
        uint64_t replaced;      /* entries renamed into place */
        uint64_t dirs;          /* live directories given their metadata back */
        uint64_t deleted;       /* with delete: live entries the snapshot does not have */
        uint64_t kept;          /* with delete: of those, left alone (excluded, skipped, another user's) */
        uint64_t failed;        /* problems said on log: entries refused or not restored */
} RestoreStats;

typedef struct Restore {
        bool delete;            /* remove what the snapshot does not have */
        bool dry_run;           /* only list what would change, on out */
        FILE *out;              /* dry run: "+ path", "~ path", "- path" */
        bool json;              /* dry run: on out, one JSON object a line instead (restore.c's print_entry()) */
        FILE *log;              /* problems, with the path */
        const MirrorOps *ops;     /* NULL: reflinkat(REFLINK_ATTR_ALL); tests use a double */
        FileId skip;            /* never delete or compare this directory (the store) */
        char *const *exclude;   /* with delete: never delete what these patterns match (the job's exclude) */
        char *const *keep;      /* with delete: never delete these paths (the snapshot's skipped files) */
        /*
         * The snapshot links no file within itself (its facts say
         * hardlinks=0): its files are restored without the hard link
         * table (Mirror.no_links), which an XFS incremental snapshot's
         * files, all of more than one link (into older snapshots), would
         * otherwise each go through.
         */
        bool no_links;
        int error;              /* out: the first problem's -errno, 0 when none */
        RestoreStats stats;
        /* Internal: the staging directories made in the live tree, never deleted or compared. */
        FileId stages[RESTORE_STAGES_MAX];
        unsigned n_stages;
} Restore;

/*
 * Is path (normalized, relative, not "") in the snapshot snap_root?  Its
 * directory there, opened, with its directory's name (*ret_dir, a new
 * string) and last component (*ret_base, a pointer into path), each when
 * not NULL; -ENOENT, said on log, when it is not in the snapshot.
 */
int restore_find(int snap_root, const char *path, char **ret_dir, const char **ret_base, FILE *log);

/*
 * Restore snap_root/path into live_root/path (path "" or NULL: the whole
 * tree, and the root directory's metadata), staging in stage_root (the
 * store, which the caller has locked; on live_root's mount, since entries
 * are renamed from one to the other).  path is normalized.  Returns 0 or
 * -errno (described on log).
 */
int restore_run(Restore *o, int snap_root, int live_root, int stage_root, const char *path);

/*
 * Remove from the live directory dir_fd each staging directory an
 * interrupted restore left there: only in a directory no user but root
 * can change (where stage_make() makes them), and only one that is really
 * one: named RESTORE_STAGE_PREFIX PID.N, a directory of root's, mode
 * 0700, its PID no live process's, and not locked (a restore holds its
 * staging directory locked).  Removed beneath dir_fd with rm_rf_at()
 * (never following a symbolic link, never entering a mount), each said
 * on log when not NULL.  Returns how many were removed, or -errno.
 */
int restore_remove_stale_stages(int dir_fd, FILE *log);

/*
 * Can entries staged in stage_root be put into the live directory dir?
 * NULL when on the same subvolume or when a staging directory can be made
 * in dir; else why not.
 */
const char *restore_stage_refusal(int stage_root, int dir);

/*
 * One entry of the dry run on o->out: "M path[/]" (M: diff_mark(), '='
 * kept, '!' refused, why after it), or with o->json one JSON object a
 * line, {"change": "added|changed|removed|kept|refused", "path", "dir",
 * "why" (null but for kept and refused)}.
 */
void restore_print_entry(Restore *o, char mark, const char *path, bool dir, const char *why);
