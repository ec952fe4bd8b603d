/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "config.h"

/*
 * Samba's view of a job's snapshots (smb_view, refsnapd.conf(5)): one
 * bind mount of the job's store, read-only, nosuid, nodev and noexec,
 * that Samba's vfs_shadow_copy2 lists as shadow:snapdir.  Samba reaches
 * the snapshots as each user, so the kernel judges every file by the
 * owner and mode it had when the snapshot was taken; nobody writes
 * through a read-only mount, root included.  The store stays out of
 * other users' reach by its own path: its parent is closed to them
 * (store_parent_closed()), and refsnapd then keeps the store 0755, so
 * that they may list the view.
 *
 * Is job j's smb_view such a mount?  Looked at as a store is: no
 * symbolic link followed, no FUSE mount entered, no ancestor a user other
 * than root could change.  0 when it is; 1 and *ret_why (a new string
 * naming the path and what to do) when not; -errno (-ENOMEM).  The mount
 * table is mountinfo's (NULL: /proc/self/mountinfo).
 */
int smb_view_check(const Job *j, const char *mountinfo, char **ret_why);
