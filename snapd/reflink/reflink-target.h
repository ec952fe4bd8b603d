/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/*
 * Where "reflink SOURCE DEST" makes its file, as ln(1) decides: in DEST
 * when it is a directory (or ends in '/'), under SOURCE's last component;
 * DEST itself otherwise.  Returns 0 and a new string in *ret, or -errno.
 */
int reflink_target(const char *source, const char *dest, bool dest_is_dir, char **ret);
