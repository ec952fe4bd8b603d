/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/* An absolute, normalized path: no "." or ".." components, no "//", no trailing '/'. */
bool path_is_normalized_absolute(const char *s);

/* Whether any component of path is "..". */
bool path_has_dotdot(const char *path);

/*
 * A relative path made canonical: no leading, trailing or doubled
 * slashes, no "." components.  ".." is refused with -EINVAL.
 */
int path_normalize_relative(const char *in, char **ret);

/*
 * If path is prefix or lies below it (component-wise), the rest of path
 * after prefix (perhaps "", perhaps starting with '/'); else NULL.
 */
const char *path_startswith(const char *path, const char *prefix);

/*
 * Split path at its last '/': *ret_dir a new string ("" when there is no
 * '/' or only the leading one), *ret_base a pointer into path.  -EINVAL
 * when path has no last component ("", or ending in '/').
 */
int path_split(const char *path, char **ret_dir, const char **ret_base);

/* prefix/name, or name when prefix is "": a new string, NULL on ENOMEM. */
char *path_join(const char *prefix, const char *name);
