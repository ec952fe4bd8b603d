/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "copy-meta.h"
#include "exclude.h"
#include "fd-util.h"
#include "macro.h"
#include "walk.h"

/* Files with more than one link, by (dev, ino): where the first went. */
typedef struct Link {
        dev_t dev;
        ino_t ino;
        char *path;             /* relative to the snapshot root */
} Link;

typedef struct State {
        Walk *w;
        uint64_t root_mnt;
        int dst_root;
        char *path;             /* relative path of the entry at hand */
        size_t len, cap;
        Link *links;            /* open addressing, cap_links a power of 2 */
        size_t n_links, cap_links;
} State;

static void state_done(State *s) {
        for (size_t i = 0; i < s->cap_links; i++)
                free(s->links[i].path);
        free(s->links);
        free(s->path);
}

static int path_push(State *s, const char *name, size_t *saved) {
        size_t n = strlen(name), need = s->len + 1 + n + 1;

        if (need > s->cap) {
                size_t cap = need * 2;
                char *p = realloc(s->path, cap);

                if (!p)
                        return -ENOMEM;
                s->path = p;
                s->cap = cap;
        }
        *saved = s->len;
        if (s->len > 0)
                s->path[s->len++] = '/';
        memcpy(s->path + s->len, name, n + 1);
        s->len += n;
        return 0;
}

static void path_pop(State *s, size_t saved) {
        s->len = saved;
        if (s->path)
                s->path[saved] = '\0';
}

static size_t link_slot(const State *s, dev_t dev, ino_t ino) {
        size_t h = (size_t) (ino * 0x9e3779b97f4a7c15ULL) ^ (size_t) dev;

        for (h &= s->cap_links - 1;; h = (h + 1) & (s->cap_links - 1))
                if (!s->links[h].path || (s->links[h].dev == dev && s->links[h].ino == ino))
                        return h;
}

static int link_add(State *s, dev_t dev, ino_t ino) {
        size_t h;

        if (2 * (s->n_links + 1) > s->cap_links) {
                State grown = { .cap_links = s->cap_links ? 2 * s->cap_links : 256 };

                grown.links = calloc(grown.cap_links, sizeof(Link));
                if (!grown.links)
                        return -ENOMEM;
                for (size_t i = 0; i < s->cap_links; i++)
                        if (s->links[i].path)
                                grown.links[link_slot(&grown, s->links[i].dev, s->links[i].ino)] = s->links[i];
                free(s->links);
                s->links = grown.links;
                s->cap_links = grown.cap_links;
        }
        h = link_slot(s, dev, ino);
        s->links[h].path = strdup(s->path);
        if (!s->links[h].path)
                return -ENOMEM;
        s->links[h].dev = dev;
        s->links[h].ino = ino;
        s->n_links++;
        return 0;
}

static const char *link_find(const State *s, dev_t dev, ino_t ino) {
        return s->cap_links ? s->links[link_slot(s, dev, ino)].path : NULL;
}

/* Open the directory holding rel under root, component by component. */
static int open_parent(int root, const char *rel, const char **base) {
        _cleanup_free_ char *copy = strdup(rel);
        int fd = -EBADF;
        char *p, *slash;

        if (!copy)
                return -ENOMEM;
        fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        for (p = copy; (slash = strchr(p, '/')); p = slash + 1) {
                int next;

                *slash = '\0';
                next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                safe_close(fd);
                if (next < 0)
                        return -errno;
                fd = next;
        }
        *base = rel + (p - copy);
        return fd;
}

static void stat_from_statx(struct stat *st, const struct statx *x) {
        *st = (struct stat) {
                .st_dev = makedev(x->stx_dev_major, x->stx_dev_minor),
                .st_ino = x->stx_ino,
                .st_mode = x->stx_mode,
                .st_nlink = x->stx_nlink,
                .st_uid = x->stx_uid,
                .st_gid = x->stx_gid,
                .st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor),
                .st_size = x->stx_size,
                .st_atim = { x->stx_atime.tv_sec, x->stx_atime.tv_nsec },
                .st_mtim = { x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec },
                .st_ctim = { x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec },
        };
}

static int fail(State *s, int r, const char *what) {
        fprintf(s->w->log, "%s: %s: %s\n", s->len ? s->path : ".", what, strerror(-r));
        return r;
}

static int open_dir_noatime(int dirfd, const char *name) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);

        if (fd < 0 && errno == EPERM)
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static bool vanished(int r) {
        /* Gone, or replaced by something of another type. */
        return r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EINVAL;
}

static int walk_dir(State *s, int sfd, int dfd);

static int do_dir(State *s, int sfd, int dfd, const char *name, const struct stat *st) {
        _cleanup_close_ int cs = -EBADF, cd = -EBADF;
        struct stat now;
        int r;

        if (st->st_dev == s->w->skip_dev && st->st_ino == s->w->skip_ino)
                return 0;       /* our own store */
        cs = open_dir_noatime(sfd, name);
        if (cs < 0) {
                if (vanished(cs)) {
                        s->w->stats.vanished++;
                        return 0;
                }
                return fail(s, cs, "cannot open directory");
        }
        /* The directory we looked at, not what replaced it since. */
        if (fstat(cs, &now) < 0)
                return fail(s, -errno, "cannot stat directory");
        if (now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
                s->w->stats.vanished++;
                return 0;
        }
        if (mkdirat(dfd, name, 0700) < 0)
                return fail(s, -errno, "cannot make directory");
        cd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cd < 0)
                return fail(s, -errno, "cannot open new directory");
        r = walk_dir(s, cs, cd);
        if (r < 0)
                return r;
        r = copy_meta_fd(cs, cd, st);
        if (r < 0)
                return fail(s, r, "cannot set directory attributes");
        s->w->stats.dirs++;
        return 0;
}

static int do_hardlink(State *s, int dfd, const char *name, const char *first) {
        _cleanup_close_ int parent = -EBADF;
        const char *base = NULL;

        parent = open_parent(s->dst_root, first, &base);
        if (parent < 0)
                return fail(s, parent, "cannot open the first link's directory");
        if (linkat(parent, base, dfd, name, 0) < 0)
                return fail(s, -errno, "cannot make hard link");
        s->w->stats.hardlinks++;
        return 0;
}

/* These return 1 when the entry vanished and was skipped. */
static int do_symlink(State *s, int sfd, int dfd, const char *name, const struct stat *st) {
        _cleanup_free_ char *target = NULL;
        size_t size = st->st_size + 1;
        ssize_t n;
        int r;

        for (;;) {
                free(target);
                target = malloc(size);
                if (!target)
                        return -ENOMEM;
                n = readlinkat(sfd, name, target, size);
                if (n < 0) {
                        if (vanished(-errno)) {
                                s->w->stats.vanished++;
                                return 1;
                        }
                        return fail(s, -errno, "cannot read symbolic link");
                }
                if ((size_t) n < size)
                        break;
                size *= 2;
        }
        target[n] = '\0';
        if (symlinkat(target, dfd, name) < 0)
                return fail(s, -errno, "cannot make symbolic link");
        r = copy_meta_symlink(dfd, name, st);
        if (r < 0)
                return fail(s, r, "cannot set symbolic link attributes");
        s->w->stats.symlinks++;
        return 0;
}

static int do_special(State *s, int sfd, int dfd, const char *name, const struct stat *st) {
        _cleanup_close_ int so = -EBADF, dn = -EBADF;
        struct stat now;
        int r;

        so = openat(sfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (so < 0) {
                if (vanished(-errno)) {
                        s->w->stats.vanished++;
                        return 1;
                }
                return fail(s, -errno, "cannot open");
        }
        if (fstat(so, &now) < 0)
                return fail(s, -errno, "cannot stat");
        if (now.st_ino != st->st_ino || (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
                s->w->stats.vanished++;
                return 1;
        }
        if (mknodat(dfd, name, (st->st_mode & S_IFMT) | 0600, st->st_rdev) < 0)
                return fail(s, -errno, "cannot make node");
        dn = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (dn < 0)
                return fail(s, -errno, "cannot open new node");
        r = copy_meta_fd(so, dn, st);
        if (r < 0)
                return fail(s, r, "cannot set attributes");
        s->w->stats.specials++;
        return 0;
}

static int do_entry(State *s, int sfd, int dfd, const char *name) {
        struct statx x;
        struct stat st;
        const char *first;
        int r;

        if (statx(sfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
                  STATX_BASIC_STATS | STATX_MNT_ID, &x) < 0) {
                if (errno == ENOENT) {
                        s->w->stats.vanished++;
                        return 0;
                }
                return fail(s, -errno, "cannot stat");
        }
        stat_from_statx(&st, &x);

        if (exclude_match(s->w->exclude, s->path, S_ISDIR(st.st_mode))) {
                s->w->stats.excluded++;
                return 0;
        }
        if (x.stx_mnt_id != s->root_mnt) {
                s->w->stats.other_mounts++;
                return 0;
        }
        if (S_ISDIR(st.st_mode))
                return do_dir(s, sfd, dfd, name, &st);

        if (st.st_nlink > 1) {
                first = link_find(s, st.st_dev, st.st_ino);
                if (first)
                        return do_hardlink(s, dfd, name, first);
        }

        if (S_ISREG(st.st_mode)) {
                r = s->w->ops->clone(sfd, name, dfd, s->w->ops->userdata);
                if (r < 0) {
                        struct stat now;

                        /*
                         * Gone, or no longer a regular file (EINVAL, or EPERM
                         * for a directory): skipped, never followed.  Still
                         * the same file: a real failure.
                         */
                        if ((vanished(r) || r == -EPERM) &&
                            (fstatat(sfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
                             now.st_ino != st.st_ino || !S_ISREG(now.st_mode))) {
                                s->w->stats.vanished++;
                                return 0;
                        }
                        return fail(s, r, "cannot reflink");
                }
                s->w->stats.files++;
                s->w->stats.bytes += st.st_size;
        } else {
                r = S_ISLNK(st.st_mode) ? do_symlink(s, sfd, dfd, name, &st) :
                                          do_special(s, sfd, dfd, name, &st);
                if (r != 0)
                        return r < 0 ? r : 0;   /* 1: vanished, skipped */
        }

        if (st.st_nlink > 1) {
                r = link_add(s, st.st_dev, st.st_ino);
                if (r < 0)
                        return fail(s, r, "cannot remember hard link");
        }
        return 0;
}

static int walk_dir(State *s, int sfd, int dfd) {
        DIR *d = opendir_fd(sfd);
        struct dirent *de;
        int r = 0;

        if (!d)
                return fail(s, -errno, "cannot read directory");
        for (;;) {
                size_t saved;

                if (s->w->cancel && *s->w->cancel) {
                        r = -ECANCELED;
                        break;
                }
                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno)
                                r = fail(s, -errno, "cannot read directory");
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = path_push(s, de->d_name, &saved);
                if (r < 0)
                        break;
                r = do_entry(s, sfd, dfd, de->d_name);
                path_pop(s, saved);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

static int state_init(State *s, Walk *w, int src, int dst_root, const char *path, struct stat *st) {
        struct statx x;

        *s = (State) { .w = w, .dst_root = dst_root };
        if (statx(src, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_MNT_ID, &x) < 0)
                return -errno;
        s->root_mnt = x.stx_mnt_id;
        stat_from_statx(st, &x);
        s->path = strdup(path);
        if (!s->path)
                return -ENOMEM;
        s->len = strlen(path);
        s->cap = s->len + 1;
        return 0;
}

int walk_entry(Walk *w, int src_dir, const char *name, int dst_dir) {
        State s;
        struct stat st;
        int r;

        r = state_init(&s, w, src_dir, dst_dir, name, &st);
        if (r < 0)
                return r;
        r = do_entry(&s, src_dir, dst_dir, name);
        state_done(&s);
        return r;
}

int walk_tree(Walk *w, int src_root, int dst_root) {
        State s;
        struct stat st;
        int r;

        r = state_init(&s, w, src_root, dst_root, "", &st);
        if (r < 0)
                return r;

        r = walk_dir(&s, src_root, dst_root);
        if (r >= 0) {
                r = copy_meta_fd(src_root, dst_root, &st);
                if (r < 0)
                        fail(&s, r, "cannot set attributes of the root");
        }
        state_done(&s);
        return r;
}
