/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "walk.h"

/*
 * Tests only: the walker's clone step done by copying, for the host,
 * whose filesystem has no reflinks (the daemon itself never copies).  It
 * gives what reflinkat(REFLINK_ATTR_ALL) gives: data with holes kept,
 * owner, mode, ACL, xattrs, times.  Counts its calls in test_clones.
 */
extern int test_clones;
int test_copy_clone(int src_dir, const char *name, int dst_dir, void *userdata);
extern const WalkOps test_copy_ops;
