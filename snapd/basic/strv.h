/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>

/* NULL-terminated string arrays. */
char **strv_free(char **l);
int strv_push(char ***l, size_t *n, const char *s);
