/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include "mirror.h"

/*
 * Tests only: the walker's clone step done by copying, for the host,
 * whose filesystem has no reflinks (the daemon itself never copies).  It
 * gives what reflinkat(REFLINK_ATTR_ALL) gives: data with holes kept,
 * owner, mode, ACL, xattrs, times.  Counts its calls in clone_double_calls.
 */
extern int clone_double_calls;
int clone_double(int src, int dst_dir, const char *name, void *userdata);
extern const MirrorOps clone_double_ops;
