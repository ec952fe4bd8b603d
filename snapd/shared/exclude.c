/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fnmatch.h>
#include <string.h>

#include "exclude.h"
#include "macro.h"

static bool match_one(const char *pattern, const char *path, bool is_dir) {
        _cleanup_free_ char *copy = NULL;
        size_t n = strlen(pattern);
        const char *base;
        bool anchored;

        if (n == 0)
                return false;
        if (pattern[n - 1] == '/') {
                if (!is_dir)
                        return false;
                copy = strndup(pattern, n - 1);
                if (!copy)
                        return false;
                pattern = copy;
        }
        anchored = strchr(pattern, '/') != NULL;
        if (!anchored) {
                base = strrchr(path, '/');
                return fnmatch(pattern, base ? base + 1 : path, 0) == 0;
        }
        if (pattern[0] == '/')
                pattern++;
        return fnmatch(pattern, path, FNM_PATHNAME) == 0;
}

bool exclude_match(char *const *patterns, const char *path, bool is_dir) {
        for (char *const *p = patterns; p && *p; p++)
                if (match_one(*p, path, is_dir))
                        return true;
        return false;
}
