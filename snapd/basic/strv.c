/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

char **strv_free(char **l) {
        for (char **i = l; i && *i; i++)
                free(*i);
        free(l);
        return NULL;
}

int strv_push(char ***l, size_t *n, const char *s) {
        char **nl;
        char *c = strdup(s);

        if (!c)
                return -ENOMEM;
        nl = reallocarray(*l, *n + 2, sizeof(char *));
        if (!nl) {
                free(c);
                return -ENOMEM;
        }
        nl[(*n)++] = c;
        nl[*n] = NULL;
        *l = nl;
        return 0;
}
