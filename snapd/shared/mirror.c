/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "copy-meta.h"
#include "dirent-util.h"
#include "exclude.h"
#include "fd-util.h"
#include "escape.h"
#include "log.h"
#include "macro.h"
#include "mirror.h"
#include "reflink.h"
#include "stat-util.h"
#include "strv.h"

static int reflink_clone(int src_dir, const char *name, int dst_dir, void *userdata) {
        return reflinkat(src_dir, name, dst_dir, name, REFLINK_ATTR_ALL, 0) < 0 ? -errno : 0;
}

const MirrorOps mirror_reflink_ops = { .clone = reflink_clone };

unsigned mirror_workers(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        return n < 1 ? 1 : n > MIRROR_WORKERS_MAX ? MIRROR_WORKERS_MAX : (unsigned) n;
}

/* Files with more than one link, by identity: where the first went. */
typedef struct Link {
        FileId id;
        char *path;             /* relative to the snapshot root */
} Link;

/*
 * Shared by the workers of one walk: the hard link table (under lock) and
 * the flag that stops the others when one fails.
 */
typedef struct Links {
        pthread_mutex_t lock;
        Link *slots;            /* open addressing, cap a power of 2 */
        size_t n, cap;
        atomic_bool stop;
} Links;

typedef struct State {
        Mirror *w;
        Links *links;
        MirrorStats stats;        /* this worker's; summed into w->stats */
        uint64_t root_mnt;
        int dst_root;
        char *path;             /* relative path of the entry at hand */
        size_t len, cap;
} State;

static void links_done(Links *l) {
        for (size_t i = 0; i < l->cap; i++)
                free(l->slots[i].path);
        free(l->slots);
        pthread_mutex_destroy(&l->lock);
}

static void stats_add(MirrorStats *a, const MirrorStats *b) {
        a->files += b->files;
        a->dirs += b->dirs;
        a->symlinks += b->symlinks;
        a->specials += b->specials;
        a->hardlinks += b->hardlinks;
        a->bytes += b->bytes;
        a->excluded += b->excluded;
        a->vanished += b->vanished;
        a->other_mounts += b->other_mounts;
        a->skipped += b->skipped;
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

static size_t link_slot(const Link *slots, size_t cap, FileId id) {
        size_t h = (size_t) (id.ino * 0x9e3779b97f4a7c15ULL) ^ (size_t) id.dev;

        for (h &= cap - 1;; h = (h + 1) & (cap - 1))
                if (!slots[h].path || (slots[h].id.dev == id.dev && slots[h].id.ino == id.ino))
                        return h;
}

/* These two with l->lock held. */
static int link_add(Links *l, FileId id, const char *path) {
        size_t h;

        if (2 * (l->n + 1) > l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 256;
                Link *slots = calloc(cap, sizeof(Link));

                if (!slots)
                        return -ENOMEM;
                for (size_t i = 0; i < l->cap; i++)
                        if (l->slots[i].path)
                                slots[link_slot(slots, cap, l->slots[i].id)] = l->slots[i];
                free(l->slots);
                l->slots = slots;
                l->cap = cap;
        }
        h = link_slot(l->slots, l->cap, id);
        l->slots[h].path = strdup(path);
        if (!l->slots[h].path)
                return -ENOMEM;
        l->slots[h].id = id;
        l->n++;
        return 0;
}

static const char *link_find(const Links *l, FileId id) {
        return l->cap ? l->slots[link_slot(l->slots, l->cap, id)].path : NULL;
}

static int fail(State *s, int r, const char *what) {
        log_path(s->w->log, s->len ? s->path : ".", "%s: %s", what, strerror(-r));
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

static int walk_dir(State *s, int sfd, int dfd, char ***defer, size_t *n_defer);

static int do_dir(State *s, int sfd, int dfd, const char *name, const struct stat *st) {
        _cleanup_close_ int cs = -EBADF, cd = -EBADF;
        struct stat now;
        int r;

        if (file_id_is(st, s->w->skip))
                return 0;       /* our own store */
        cs = open_dir_noatime(sfd, name);
        if (cs < 0) {
                if (vanished(cs)) {
                        s->stats.vanished++;
                        return 0;
                }
                return fail(s, cs, "cannot open directory");
        }
        /* The directory we looked at, not what replaced it since. */
        if (fstat(cs, &now) < 0)
                return fail(s, -errno, "cannot stat directory");
        if (!stat_inode_same(&now, st)) {
                s->stats.vanished++;
                return 0;
        }
        if (mkdirat(dfd, name, 0700) < 0)
                return fail(s, -errno, "cannot make directory");
        cd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cd < 0)
                return fail(s, -errno, "cannot open new directory");
        r = walk_dir(s, cs, cd, NULL, NULL);
        if (r < 0)
                return r;
        r = copy_meta_fd(cs, cd, st);
        if (r < 0)
                return fail(s, r, "cannot set directory attributes");
        s->stats.dirs++;
        return 0;
}

static int do_hardlink(State *s, int dfd, const char *name, const char *first) {
        _cleanup_close_ int parent = -EBADF;
        const char *base = NULL;

        /* In the snapshot being made: nobody else writes there. */
        parent = chase_parent(s->dst_root, first, NULL, &base);
        if (parent < 0)
                return fail(s, parent, "cannot open the first link's directory");
        if (linkat(parent, base, dfd, name, 0) < 0)
                return fail(s, -errno, "cannot make hard link");
        s->stats.hardlinks++;
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
                                s->stats.vanished++;
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
        s->stats.symlinks++;
        return 0;
}

static int do_special(State *s, int sfd, int dfd, const char *name, const struct stat *st) {
        _cleanup_close_ int so = -EBADF, dn = -EBADF;
        struct stat now;
        int r;

        so = openat(sfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (so < 0) {
                if (vanished(-errno)) {
                        s->stats.vanished++;
                        return 1;
                }
                return fail(s, -errno, "cannot open");
        }
        if (fstat(so, &now) < 0)
                return fail(s, -errno, "cannot stat");
        if (!stat_inode_same(&now, st) || (now.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
                s->stats.vanished++;
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
        s->stats.specials++;
        return 0;
}

bool mirror_skippable(int r) {
        return r == -ETXTBSY || r == -EOPNOTSUPP;
}

/* A file left out for a reason of its own: on the log, and on the list. */
static void skip_file(State *s, int r) {
        const char *path = s->len ? s->path : ".";

        s->stats.skipped++;
        log_path(s->w->log, path, "skipped, the kernel would not reflink it: %s", strerror(-r));
        if (!s->w->skipped)
                return;
        flockfile(s->w->skipped);
        fprintf(s->w->skipped, "%s ", strerrorname_np(-r) ?: "?");
        fputs_cescaped(path, s->w->skipped);    /* one line, nothing a terminal acts on */
        putc_unlocked('\n', s->w->skipped);
        funlockfile(s->w->skipped);
}

/* Make dfd/name like sfd/name (not a directory): 0, 1 when it vanished or was skipped, or -errno. */
static int make_entry(State *s, int sfd, int dfd, const char *name, const struct stat *st) {
        int r;

        if (!S_ISREG(st->st_mode))
                return S_ISLNK(st->st_mode) ? do_symlink(s, sfd, dfd, name, st) :
                                              do_special(s, sfd, dfd, name, st);
        r = s->w->ops->clone(sfd, name, dfd, s->w->ops->userdata);
        if (r < 0) {
                struct stat now;

                /*
                 * Gone, or no longer a regular file (EINVAL, or EPERM for a
                 * directory): skipped, never followed.  Still the same
                 * file: a real failure.
                 */
                if ((vanished(r) || r == -EPERM) &&
                    (fstatat(sfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 ||
                     !stat_inode_same(&now, st) || !S_ISREG(now.st_mode))) {
                        s->stats.vanished++;
                        return 1;
                }
                if (s->w->skip_refused && mirror_skippable(r)) {
                        skip_file(s, r);
                        return 1;
                }
                return fail(s, r, "cannot reflink");
        }
        s->stats.files++;
        s->stats.bytes += st->st_size;
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
                        s->stats.vanished++;
                        return 0;
                }
                return fail(s, -errno, "cannot stat");
        }
        stat_from_statx(&st, &x);

        if (exclude_match(s->w->exclude, s->path, S_ISDIR(st.st_mode))) {
                s->stats.excluded++;
                return 0;
        }
        if (x.stx_mnt_id != s->root_mnt) {
                s->stats.other_mounts++;
                return 0;
        }
        if (S_ISDIR(st.st_mode))
                return do_dir(s, sfd, dfd, name, &st);
        if (st.st_nlink == 1) {
                r = make_entry(s, sfd, dfd, name, &st);
                return r < 0 ? r : 0;
        }

        /*
         * A file with more links: the first worker to meet it makes it and
         * notes where, under the lock, so the others link to a whole file.
         */
        pthread_mutex_lock(&s->links->lock);
        first = link_find(s->links, file_id(&st));
        if (first) {
                _cleanup_free_ char *copy = strdup(first);

                pthread_mutex_unlock(&s->links->lock);
                return copy ? do_hardlink(s, dfd, name, copy) : -ENOMEM;
        }
        r = make_entry(s, sfd, dfd, name, &st);
        if (r == 0) {
                r = link_add(s->links, file_id(&st), s->path);
                if (r < 0)
                        fail(s, r, "cannot remember hard link");
        }
        pthread_mutex_unlock(&s->links->lock);
        return r < 0 ? r : 0;
}

/*
 * Mirror sfd's entries into dfd.  With defer, directories are not entered
 * but their names pushed there (the parallel root's work list).
 */
static int walk_dir(State *s, int sfd, int dfd, char ***defer, size_t *n_defer) {
        DIR *d = opendir_fd(sfd);
        struct dirent *de;
        int r = 0;

        if (!d)
                return fail(s, -errno, "cannot read directory");
        for (;;) {
                size_t saved;

                if ((s->w->cancel && *s->w->cancel) || atomic_load(&s->links->stop)) {
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
                if (dot_or_dot_dot(de->d_name))
                        continue;
                if (defer && de->d_type == DT_DIR) {
                        r = strv_push(defer, n_defer, de->d_name);
                        if (r < 0)
                                break;
                        continue;
                }
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

static int state_init(State *s, Mirror *w, Links *links, int src, int dst_root, const char *path,
                      struct stat *st) {
        struct statx x;

        *s = (State) { .w = w, .links = links, .dst_root = dst_root };
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

int mirror_entry(Mirror *w, int src_dir, const char *name, int dst_dir) {
        Links links = { .lock = PTHREAD_MUTEX_INITIALIZER };
        State s;
        struct stat st;
        int r;

        r = state_init(&s, w, &links, src_dir, dst_dir, name, &st);
        if (r >= 0)
                r = do_entry(&s, src_dir, dst_dir, name);
        stats_add(&w->stats, &s.stats);
        free(s.path);
        links_done(&links);
        return r;
}

/*
 * The root's directories, shared out among workers: each takes the next
 * one and walks all of it.  The root's other entries are made first.
 */
typedef struct Root {
        State main;
        int src, dst;
        char **dirs;
        size_t n_dirs;
        atomic_size_t next;
} Root;

typedef struct Worker {
        Root *root;
        State s;
        int r;
        pthread_t thread;
} Worker;

static void *worker_run(void *arg) {
        Worker *k = arg;
        Root *root = k->root;

        for (;;) {
                size_t i = atomic_fetch_add(&root->next, 1), saved = k->s.len;
                int r;

                if (i >= root->n_dirs)
                        break;
                r = path_push(&k->s, root->dirs[i], &saved);
                if (r >= 0)
                        r = do_entry(&k->s, root->src, root->dst, root->dirs[i]);
                path_pop(&k->s, saved);
                if (r < 0) {
                        k->r = r;
                        atomic_store(&k->s.links->stop, true);
                        break;
                }
        }
        return NULL;
}

static int walk_root_parallel(Root *root, unsigned n_workers) {
        State *s = &root->main;
        Worker *workers = NULL;
        int r;

        /* The root's non-directories now; directories for the workers. */
        r = walk_dir(s, root->src, root->dst, &root->dirs, &root->n_dirs);
        if (r < 0)
                return r;

        n_workers = MIN(n_workers, MAX(root->n_dirs, (size_t) 1));
        workers = calloc(n_workers, sizeof(Worker));
        if (!workers)
                return -ENOMEM;
        for (unsigned i = 0; i < n_workers; i++) {
                workers[i] = (Worker) { .root = root, .s = *s };
                workers[i].s.stats = (MirrorStats) {};
                workers[i].s.path = strdup("");
                workers[i].s.len = 0;
                workers[i].s.cap = 1;
                if (!workers[i].s.path)
                        r = -ENOMEM;
        }
        /* Worker 0 is this thread. */
        for (unsigned i = 1; r >= 0 && i < n_workers; i++)
                if (pthread_create(&workers[i].thread, NULL, worker_run, &workers[i]) != 0) {
                        /* Fewer workers then. */
                        workers[i].thread = 0;
                        break;
                }
        if (r >= 0)
                worker_run(&workers[0]);
        for (unsigned i = 0; i < n_workers; i++) {
                if (i > 0 && workers[i].thread)
                        pthread_join(workers[i].thread, NULL);
                stats_add(&s->stats, &workers[i].s.stats);
                /* The first real failure, not the stop it caused elsewhere. */
                if (workers[i].r < 0 && (r >= 0 || r == -ECANCELED))
                        r = workers[i].r;
                free(workers[i].s.path);
        }
        free(workers);
        if (r >= 0 && s->w->cancel && *s->w->cancel)
                r = -ECANCELED;
        return r;
}

int mirror_tree(Mirror *w, int src_root, int dst_root) {
        Links links = { .lock = PTHREAD_MUTEX_INITIALIZER };
        Root root = { .src = src_root, .dst = dst_root };
        struct stat st;
        int r;

        r = state_init(&root.main, w, &links, src_root, dst_root, "", &st);
        if (r >= 0)
                r = w->workers > 1 ? walk_root_parallel(&root, w->workers) :
                                     walk_dir(&root.main, src_root, dst_root, NULL, NULL);
        if (r >= 0) {
                r = copy_meta_fd(src_root, dst_root, &st);
                if (r < 0)
                        fail(&root.main, r, "cannot set attributes of the root");
        }
        stats_add(&w->stats, &root.main.stats);
        strv_free(root.dirs);
        free(root.main.path);
        links_done(&links);
        return r;
}
