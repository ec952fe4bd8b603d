/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/*
 * Exclude patterns, shell globs as fnmatch(3) reads them:
 *   "*.tmp"     no '/': matches the last component, at any depth;
 *   "/cache/"   a leading '/' anchors at the source root;
 *   "a/b*"      a '/' inside also anchors at the source root;
 *   "build/"    a trailing '/' matches directories only.
 * path is relative to the source root, without a leading '/'.
 */
bool exclude_match(char *const *patterns, const char *path, bool is_dir);
