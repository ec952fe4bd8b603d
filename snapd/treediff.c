/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "strv.h"
#include "treediff.h"

char diff_mark(DiffKind kind) {
        return kind == DIFF_ADDED ? '+' : kind == DIFF_REMOVED ? '-' : '~';
}

int names_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int dir_names_sorted(int dirfd, const char *skip_prefix, char ***ret, size_t *n) {
        DIR *dir;
        struct dirent *de;
        int r = 0;

        *ret = NULL;
        *n = 0;
        if (dirfd < 0)
                return 0;
        dir = opendir_fd(dirfd);
        if (!dir)
                return -errno;
        for (;;) {
                errno = 0;
                de = readdir(dir);
                if (!de) {
                        r = errno ? -errno : 0;
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    (skip_prefix && strncmp(de->d_name, skip_prefix, strlen(skip_prefix)) == 0))
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

static bool same_link_target(int a_dir, int b_dir, const char *name, const struct stat *st) {
        _cleanup_free_ char *a = malloc(st->st_size + 1), *b = malloc(st->st_size + 1);
        ssize_t na, nb;

        if (!a || !b)
                return false;
        na = readlinkat(a_dir, name, a, st->st_size + 1);
        nb = readlinkat(b_dir, name, b, st->st_size + 1);
        return na >= 0 && na == nb && memcmp(a, b, na) == 0;
}

static bool entries_differ(int a_dir, int b_dir, const char *name, const struct stat *a,
                           const struct stat *b) {
        if ((a->st_mode & S_IFMT) != (b->st_mode & S_IFMT) || a->st_mode != b->st_mode ||
            a->st_uid != b->st_uid || a->st_gid != b->st_gid)
                return true;
        if (S_ISDIR(a->st_mode))
                return false;
        if (a->st_size != b->st_size || a->st_mtim.tv_sec != b->st_mtim.tv_sec ||
            a->st_mtim.tv_nsec != b->st_mtim.tv_nsec)
                return true;
        if ((S_ISCHR(a->st_mode) || S_ISBLK(a->st_mode)) && a->st_rdev != b->st_rdev)
                return true;
        if (S_ISLNK(a->st_mode))
                return !same_link_target(a_dir, b_dir, name, a);
        return false;
}

static int diff_dir(const TreeDiff *d, int a_fd, int b_fd, const char *prefix, dev_t a_dev, dev_t b_dev);

static int diff_entry(const TreeDiff *d, int a_dir, int b_dir, const char *name, const char *path,
                      dev_t a_dev, dev_t b_dev) {
        _cleanup_close_ int a_fd = -EBADF, b_fd = -EBADF;
        struct stat as, bs;
        bool in_a, in_b;
        int r;

        in_a = a_dir >= 0 && fstatat(a_dir, name, &as, AT_SYMLINK_NOFOLLOW) == 0;
        if (a_dir >= 0 && !in_a && errno != ENOENT)
                return -errno;
        in_b = fstatat(b_dir, name, &bs, AT_SYMLINK_NOFOLLOW) == 0;
        if (!in_b && errno != ENOENT)
                return -errno;
        if (in_a && as.st_ino == d->skip_ino && as.st_dev == d->skip_dev)
                in_a = false;
        if (in_b && bs.st_ino == d->skip_ino && bs.st_dev == d->skip_dev)
                in_b = false;
        /* Another mount inside a tree is not part of it. */
        if (in_a && S_ISDIR(as.st_mode) && as.st_dev != a_dev)
                in_a = false;
        if (in_b && S_ISDIR(bs.st_mode) && bs.st_dev != b_dev)
                in_b = false;
        if (!in_a && !in_b)
                return 0;
        if (!in_a)
                return d->fn(DIFF_ADDED, path, NULL, &bs, d->userdata);
        if (!in_b)
                return d->fn(DIFF_REMOVED, path, &as, NULL, d->userdata);
        if (entries_differ(a_dir, b_dir, name, &as, &bs) &&
            (!S_ISDIR(as.st_mode) || !S_ISDIR(bs.st_mode) || d->report_dirs)) {
                r = d->fn(DIFF_CHANGED, path, &as, &bs, d->userdata);
                if (r != 0)
                        return r;
        }
        if (!S_ISDIR(as.st_mode) || !S_ISDIR(bs.st_mode))
                return 0;
        a_fd = openat(a_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        b_fd = openat(b_dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (a_fd < 0 || b_fd < 0)
                return -errno;
        return diff_dir(d, a_fd, b_fd, path, a_dev, b_dev);
}

static int diff_dir(const TreeDiff *d, int a_fd, int b_fd, const char *prefix, dev_t a_dev, dev_t b_dev) {
        char **a = NULL, **b = NULL;
        size_t na = 0, nb = 0, i = 0, k = 0;
        int r;

        r = dir_names_sorted(a_fd, d->skip_prefix, &a, &na);
        if (r >= 0)
                r = dir_names_sorted(b_fd, d->skip_prefix, &b, &nb);
        while (r == 0 && (i < na || k < nb)) {
                _cleanup_free_ char *path = NULL;
                const char *name;
                int c;

                c = i >= na ? 1 : k >= nb ? -1 : strcmp(a[i], b[k]);
                name = c <= 0 ? a[i] : b[k];
                if (asprintf(&path, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = diff_entry(d, a_fd, b_fd, name, path, a_dev, b_dev);
                if (c <= 0)
                        i++;
                if (c >= 0)
                        k++;
        }
        strv_free(a);
        strv_free(b);
        return r;
}

int tree_diff(const TreeDiff *d, int a_dir, int b_dir, const char *name, const char *path) {
        struct stat as = {}, bs;

        if ((a_dir >= 0 && fstat(a_dir, &as) < 0) || fstat(b_dir, &bs) < 0)
                return -errno;
        if (!name)
                return diff_dir(d, a_dir, b_dir, "", as.st_dev, bs.st_dev);
        return diff_entry(d, a_dir, b_dir, name, path, as.st_dev, bs.st_dev);
}

int tree_open_dir(int root, const char *rel) {
        _cleanup_free_ char *copy = strdup(rel);
        _cleanup_close_ int fd = -EBADF;
        char *p, *next;

        if (!copy)
                return -ENOMEM;
        fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        for (p = copy; *p; p = next) {
                int c;

                next = p + strcspn(p, "/");
                if (*next)
                        *next++ = '\0';
                c = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (c < 0)
                        return -errno;
                safe_close(fd);
                fd = c;
        }
        return TAKE_FD(fd);
}
