/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dirent-util.h"
#include "fd-util.h"
#include "strv.h"

int names_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

bool names_contain(char *const *names, size_t n, const char *name) {
        return n > 0 && bsearch(&name, names, n, sizeof(char *), names_cmp);
}

int dir_names_sorted(int dir_fd, char ***ret, size_t *n) {
        struct dirent *de;
        DIR *dir;
        int r = 0;

        *ret = NULL;
        *n = 0;
        if (dir_fd < 0)
                return 0;
        dir = opendir_fd(dir_fd);
        if (!dir)
                return -errno;
        for (;;) {
                errno = 0;
                de = readdir(dir);
                if (!de) {
                        r = errno ? -errno : 0;
                        break;
                }
                if (dot_or_dot_dot(de->d_name))
                        continue;
                r = strv_push(ret, n, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(dir);
        if (r < 0) {
                *ret = strv_free(*ret);
                *n = 0;
                return r;
        }
        if (*n > 1)
                qsort(*ret, *n, sizeof(char *), names_cmp);
        return 0;
}
