/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * The names in dir_fd, sorted (strcmp), without "." and ".."; dir_fd < 0
 * gives none.
 */
int dir_names_sorted(int dir_fd, char ***ret, size_t *n);

/* strcmp for qsort and bsearch over arrays of char *. */
int names_cmp(const void *a, const void *b);

/* Whether the sorted names[0..n) hold name. */
bool names_contain(char *const *names, size_t n, const char *name);

static inline bool dot_or_dot_dot(const char *name) {
        return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}
