/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "path-util.h"

bool path_is_normalized_absolute(const char *s) {
        if (s[0] != '/' || strlen(s) >= PATH_MAX)
                return false;
        for (const char *p = s; *p; ) {
                size_t n;

                p++;                            /* the slash */
                n = strcspn(p, "/");
                if (n == 0 && p[0] == '/')
                        return false;           /* "//" */
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += n;
                if (*p == '/' && p[1] == '\0')
                        return false;           /* trailing slash */
        }
        return true;
}

bool path_has_dotdot(const char *path) {
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, "/");

                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return true;
                p += n;
                p += strspn(p, "/");
        }
        return false;
}

int path_normalize_relative(const char *in, char **ret) {
        _cleanup_free_ char *out = malloc(strlen(in) + 1);
        size_t len = 0;

        if (!out)
                return -ENOMEM;
        for (const char *p = in; *p;) {
                size_t n = strcspn(p, "/");

                if (n == 2 && strncmp(p, "..", 2) == 0)
                        return -EINVAL;
                if (n > 0 && !(n == 1 && *p == '.')) {
                        if (len > 0)
                                out[len++] = '/';
                        memcpy(out + len, p, n);
                        len += n;
                }
                p += n;
                p += strspn(p, "/");
        }
        out[len] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

const char *path_startswith(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        if (strcmp(prefix, "/") == 0)
                return path[0] == '/' ? path : NULL;
        if (strncmp(path, prefix, n) != 0 || (path[n] != '/' && path[n] != '\0'))
                return NULL;
        return path + n;
}

int path_split(const char *path, char **ret_dir, const char **ret_base) {
        const char *slash = strrchr(path, '/');
        char *dir;

        if (!*path || (slash && !slash[1]))
                return -EINVAL;
        dir = slash ? strndup(path, slash - path) : strdup("");
        if (!dir)
                return -ENOMEM;
        *ret_dir = dir;
        *ret_base = slash ? slash + 1 : path;
        return 0;
}

char *path_join(const char *prefix, const char *name) {
        char *p = NULL;

        return asprintf(&p, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0 ? NULL : p;
}
