/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>

#include "stat-util.h"

/*
 * Compare two trees the way rsync's quick check does: entries added,
 * removed, or changed (type, mode, owner, size, modification time, device
 * number or link target; for directories mode and owner).  The trees are
 * read through descriptors, never following a symbolic link and never
 * entering another mount.  A removed or added directory is reported once,
 * not its contents.
 */

typedef enum DiffKind {
        DIFF_ADDED,     /* only in b */
        DIFF_REMOVED,   /* only in a */
        DIFF_CHANGED,
} DiffKind;

/* path is relative to the compared roots; a or b is NULL where absent. */
typedef int (*diff_fn)(DiffKind kind, const char *path, const struct stat *a, const struct stat *b,
                       void *userdata);

typedef struct TreeDiff {
        diff_fn fn;
        void *userdata;
        bool report_dirs;       /* also report directories whose mode or owner differ */
        FileId skip;                    /* nor this directory (a store inside the tree) */
        /*
         * When not NULL: each directory in both trees, before it is
         * entered, with a's directory holding it; < 0 stops the
         * comparison, > 0 skips what is below it.
         */
        int (*dir_fn)(const char *path, int a_parent, const struct stat *a, const struct stat *b, void *userdata);
} TreeDiff;

/*
 * Compare the entry name (a single component) in a_dir and b_dir, shown
 * as path; name NULL compares the contents of a_dir and b_dir themselves.
 * a_dir may be -1: nothing there.  Returns 0, a negative errno, or the
 * first non-zero return of fn.
 */
int tree_diff(const TreeDiff *d, int a_dir, int b_dir, const char *name, const char *path);

/* The one-character mark of kind: '+', '-', '~'. */
char diff_mark(DiffKind kind);
