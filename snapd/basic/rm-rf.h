/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * Remove dir_fd/name and everything below it, never following a symbolic
 * link and never entering another mount (mount ID, see
 * mountpoint-util.h).  A mount inside is left with the directories that
 * hold it, and -EXDEV returned after removing everything else; a
 * directory swapped for another while it is being removed is left too
 * (-ESTALE).  A name already gone is 0.  name may be a relative
 * path: its directories are opened with chase_dir().  When cancel is
 * not NULL and becomes non-zero (a signal handler's flag), it stops at the
 * next entry with -ECANCELED, leaving the rest for a later call.
 */
int rm_rf_at_cancellable(int dir_fd, const char *name, const volatile sig_atomic_t *cancel);
static inline int rm_rf_at(int dir_fd, const char *name) {
        return rm_rf_at_cancellable(dir_fd, name, NULL);
}

/*
 * The same for a direct child of dir_fd that may be a btrfs subvolume (a
 * snapshot in a store on btrfs): one that is (btrfs_is_subvol_at(): of
 * dir_fd's own mount, by that name) is destroyed whole, read-only or
 * not, in one call, never walked (a read-only one cannot be emptied, and
 * emptying a writable one file by file would cost what it holds), unless
 * something is mounted inside it (mounts_below_fd()): then it is left and
 * -EXDEV returned, as rm_rf_at() does;
 * anything else goes to rm_rf_at_cancellable().  name is one component.
 */
int rm_rf_or_subvol_at(int dir_fd, const char *name, const volatile sig_atomic_t *cancel);

/*
 * Remove the entries of dir_fd for which is_leftover(name) says so, with
 * rm_rf_or_subvol_at(), each described on log when not NULL ("removed leftover
 * NAME", or "cannot remove leftover NAME: ERROR").  Returns 0 or the first -errno, after trying every entry;
 * -ECANCELED at once when cancel (may be NULL) is set.
 */
int rm_leftovers(int dir_fd, bool (*is_leftover)(const char *name, void *userdata), void *userdata,
                 const volatile sig_atomic_t *cancel, FILE *log);
