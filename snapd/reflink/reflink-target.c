/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "reflink-target.h"

int reflink_target(const char *source, const char *dest, bool dest_is_dir, char **ret) {
        size_t dl = strlen(dest), sl = strlen(source);
        const char *base;
        size_t bl;
        char *t;

        if (sl == 0 || dl == 0)
                return -EINVAL;
        if (!dest_is_dir && dest[dl - 1] != '/') {
                t = strdup(dest);
                if (!t)
                        return -ENOMEM;
                *ret = t;
                return 0;
        }

        /* The last component of SOURCE, trailing slashes ignored. */
        while (sl > 1 && source[sl - 1] == '/')
                sl--;
        base = source + sl;
        while (base > source && base[-1] != '/')
                base--;
        bl = source + sl - base;
        if (bl == 0 || (bl == 1 && base[0] == '/') ||
            (bl == 1 && base[0] == '.') || (bl == 2 && strncmp(base, "..", 2) == 0))
                return -EINVAL;

        while (dl > 1 && dest[dl - 1] == '/')
                dl--;
        if (asprintf(&t, "%.*s%s%.*s", (int) dl, dest,
                     dest[dl - 1] == '/' ? "" : "/", (int) bl, base) < 0)
                return -ENOMEM;
        *ret = t;
        return 0;
}
