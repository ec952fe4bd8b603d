/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

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
 * reflinkat(2) kept of it (self_restore_tree()): mode itself where its owner
 * is kept; otherwise it is hers in her own group, a group that is not the
 * file's, so group and ACL mask may grant no more than the file gave
 * others (other's bits, less write unless its mode is kept: another
 * user's file is never one others may write), owner's bits as they were,
 * set-group-ID dropped, set-user-ID and sticky only where the mode is
 * kept (her own file).
 */
mode_t self_restored_mode(mode_t mode, unsigned preserve);

/* The hidden names a restore makes its entries under, beside their live twins (never deleted by it). */
#define SELF_TEMP_PREFIX ".refsnap-mine-"
/* How deep a restored directory may go. */
#define SELF_RESTORE_DEPTH_MAX 128

typedef struct SelfTree {
        /* In. */
        bool dry_run;           /* what would be done, said, nothing done */
        bool replace;           /* live entries may be replaced and removed (a guard snapshot holds them) */
        bool delete;            /* remove what the snapshot's directories do not have */
        /*
         * delete only in directories at or below these (relative to the
         * job's source; NULL-terminated, may be empty) when delete_limited:
         * a guard snapshot of some paths holds nothing else, and --delete
         * from it elsewhere would remove what it never held.
         */
        bool delete_limited;
        char *const *delete_below;
        /*
         * What delete leaves alone, as root's restore does: what the job
         * excludes (exclude_match() of the path in the snapshot, or of a
         * directory above it) and what the snapshot skipped (keep, paths).
         */
        char *const *exclude;
        char *const *keep;
        /*
         * Where the top entry is at the destination, relative to the
         * source of the job that holds it (exclude is that job's): what
         * --delete keeps is judged at the destination's path (--to
         * another place, or another job's).  NULL: the snapshot's path.
         */
        const char *dest_rel;
        /*
         * The plan (a dry run first): record says, for every live entry it
         * would replace or remove, its identity as a line
         * "P HEXPATH DEV INO CTIME_SEC CTIME_NSEC SIZE MODE" in out.  The
         * restore then: plan is those lines, and a live entry is replaced
         * or removed only where it is still the one the plan saw (checked
         * just before, and the entry taken out checked again after, an
         * exchange undone otherwise): what changed or appeared since the
         * plan is refused ('!' changed since the plan), never lost.
         */
        bool record;
        const char *plan;
        int newest;             /* the newest snapshot's root, for kept_already (-EBADF: none) */
        time_t newest_time;     /* when it began */
        FILE *out;              /* the report: one line an entry, "MARK HEXPATH[ WHY]" */
        /* Out. */
        uint64_t made, replaced, removed, kept, dirs, refused;
        /* Live entries replaced or removed that the newest snapshot does not hold as they are. */
        uint64_t unkept;
        int error;              /* the first refused entry's -errno */
        /* Internal. */
        int live;
        const int *roots;
        size_t n;
        const char *top_rel;
        struct SelfPlanEntry *planned;
        size_t n_planned;
} SelfTree;

/*
 * Restore rel of the snapshot roots[which] (of roots[n], oldest first, as
 * self_visible_now() takes them) as this process (the caller) into the
 * directory dest, as name.  Each entry is checked as Versions() checks
 * one (the stricter of the snapshot and the live tree); a directory is
 * entered only where she may list it (a name in a directory she may
 * search but not list is never read), made or merged into, and given its
 * mode and times back as far as she may set them; a regular file is made
 * with reflinkat(2) keeping what she may keep (her own file: owner, when
 * its group is one of hers, mode with set-id bits, ACL; another user's
 * readable file: none, so it is hers, without set-id bits); a symbolic
 * link comes back as the link; a device node, FIFO or socket never.  Each
 * is made beside its live twin under a hidden name (SELF_TEMP_PREFIX)
 * and put in its place where t->replace says a guard snapshot holds what
 * is there and t->plan saw it as it is (else to a name that is not
 * there: RENAME_NOREPLACE); a live entry that already is what would be
 * made is left alone.  A live directory is merged into only where it is
 * hers (or root's that no group or other may write).  With
 * t->delete, what a directory of the snapshot lacks is removed from its
 * live twin (rm_rf_at(): no link followed, no mount entered, the kernel
 * judging her), only where t->replace.  t->dry_run: said, not done.  The
 * report (t->out) has one line an entry: '+' made, '~' replaced, '-'
 * removed, '=' left alone, '!' refused with why; a name is said only
 * where she could list its directory.
 * Returns 0 (entries refused below the top are in t->refused and
 * t->error), -ENOENT when rel is not visible to her (whatever the
 * reason), -EMEDIUMTYPE (a type never made), -EEXIST (a live entry and
 * not t->replace), -ENOTDIR (the destination), or another -errno.
 */
int self_restore_tree(int live, const int *roots, size_t n, size_t which, const char *rel, int dest,
                      const char *name, SelfTree *t);
