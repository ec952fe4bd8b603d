/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "btrfs-util.h"
#include "fd-util.h"
#include "macro.h"
#include "strv.h"
#include "vouch.h"

/* The inode numbers asked about: open addressing. */
typedef struct InoSet {
        uint64_t *slots;        /* 0: free (no inode is 0) */
        size_t n, cap;
} InoSet;

struct Vouch {
        char **paths;
        size_t n, cap;
        bool sealed;
        bool has_inodes;        /* inodes: every inode that changed (vouch_add_inode()) */
        InoSet inodes;
        bool root_unchanged;    /* vouch_root_unchanged() */
};

int vouch_new(Vouch **ret) {
        Vouch *v = calloc(1, sizeof(*v));

        if (!v)
                return -ENOMEM;
        *ret = v;
        return vouch_add_changed(v, "");
}

Vouch *vouch_free(Vouch *v) {
        if (!v)
                return NULL;
        for (size_t i = 0; i < v->n; i++)
                free(v->paths[i]);
        free(v->paths);
        free(v->inodes.slots);
        free(v);
        return NULL;
}

static int push(Vouch *v, const char *p, size_t len) {
        char *s;

        if (v->n == v->cap) {
                size_t cap = v->cap ? 2 * v->cap : 64;
                char **m = reallocarray(v->paths, cap, sizeof(char *));

                if (!m)
                        return -ENOMEM;
                v->paths = m;
                v->cap = cap;
        }
        s = strndup(p, len);
        if (!s)
                return -ENOMEM;
        v->paths[v->n++] = s;
        return 0;
}

int vouch_add_changed(Vouch *v, const char *path) {
        size_t len = strlen(path);
        int r;

        if (v->sealed)
                return -EINVAL;
        /* The path, then each directory above it ("" always is: vouch_new()). */
        while (len > 0) {
                const char *slash;

                r = push(v, path, len);
                if (r < 0)
                        return r;
                slash = memrchr(path, '/', len);
                len = slash ? (size_t) (slash - path) : 0;
        }
        return v->n == 0 ? push(v, "", 0) : 0;
}

static int cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void vouch_seal(Vouch *v) {
        size_t k = 0;

        qsort(v->paths, v->n, sizeof(char *), cmp);
        for (size_t i = 0; i < v->n; i++) {
                if (k > 0 && strcmp(v->paths[k - 1], v->paths[i]) == 0) {
                        free(v->paths[i]);
                        continue;
                }
                v->paths[k++] = v->paths[i];
        }
        v->n = k;
        v->sealed = true;
}

bool vouch_covers(const Vouch *v, const char *path) {
        if (!v || !v->sealed)
                return false;
        return !bsearch(&path, v->paths, v->n, sizeof(char *), cmp);
}

size_t vouch_n_changed(const Vouch *v) {
        return v ? v->n : 0;
}

/* 1: added, 0: there already. */
static int ino_set_add(InoSet *s, uint64_t ino) {
        size_t h;

        if (2 * (s->n + 1) > s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 1024;
                uint64_t *m = calloc(cap, sizeof(uint64_t));

                if (!m)
                        return -ENOMEM;
                for (size_t i = 0; i < s->cap; i++)
                        if (s->slots[i]) {
                                for (h = (s->slots[i] * 0x9e3779b97f4a7c15ULL) & (cap - 1); m[h]; h = (h + 1) & (cap - 1))
                                        ;
                                m[h] = s->slots[i];
                        }
                free(s->slots);
                s->slots = m;
                s->cap = cap;
        }
        for (h = (ino * 0x9e3779b97f4a7c15ULL) & (s->cap - 1); s->slots[h]; h = (h + 1) & (s->cap - 1))
                if (s->slots[h] == ino)
                        return 0;
        s->slots[h] = ino;
        s->n++;
        return 1;
}

static bool ino_set_has(const InoSet *s, uint64_t ino) {
        if (s->cap == 0)
                return false;
        for (size_t h = (ino * 0x9e3779b97f4a7c15ULL) & (s->cap - 1); s->slots[h]; h = (h + 1) & (s->cap - 1))
                if (s->slots[h] == ino)
                        return true;
        return false;
}

int vouch_add_inode(Vouch *v, uint64_t ino) {
        int r;

        if (v->sealed || ino == 0)
                return -EINVAL;
        v->has_inodes = true;
        r = ino_set_add(&v->inodes, ino);
        return r < 0 ? r : 0;
}

bool vouch_inode_unchanged(const Vouch *v, uint64_t ino) {
        return v && v->sealed && v->has_inodes && ino != 0 && !ino_set_has(&v->inodes, ino);
}

bool vouch_root_unchanged(const Vouch *v) {
        return v && v->sealed && v->root_unchanged;
}

typedef struct Build {
        int src;
        Vouch *v;
        const char *prefix;     /* the source's root from the subvolume's root */
        InoSet asked;           /* inodes whose path was added */
        size_t changed;
        /* The directories above the source's root among those asked (changed or holding a changed inode). */
        uint64_t above[64];
        size_t n_above;
        bool above_overflow;
} Build;

/* The path of inode ino, when it lies in the source: changed. */
static int add_inode_path(Build *b, uint64_t ino) {
        _cleanup_free_ char *p = NULL;
        size_t n = strlen(b->prefix);
        int r;

        r = ino_set_add(&b->asked, ino);
        if (r <= 0)
                return r;
        r = btrfs_inode_path(b->src, ino, &p);
        if (r == -ENOENT)
                return 0;       /* removed since: its directory's change is in the tree too */
        if (r < 0)
                return r;
        if (n == 0)
                return vouch_add_changed(b->v, p);
        if (strlen(p) < n && strncmp(p, b->prefix, strlen(p)) == 0 && (p[0] == '\0' || b->prefix[strlen(p)] == '/')) {
                /* Above the source's root: whether it changed is known once all are given. */
                if (b->n_above < ELEMENTSOF(b->above))
                        b->above[b->n_above++] = ino;
                else
                        b->above_overflow = true;
                return 0;
        }
        if (strncmp(p, b->prefix, n) != 0 || (p[n] != '\0' && p[n] != '/'))
                return 0;       /* outside the source */
        return vouch_add_changed(b->v, p[n] == '/' ? p + n + 1 : "");
}

static int on_parent(uint64_t parent, void *userdata) {
        return add_inode_path(userdata, parent);
}

static int on_changed(uint64_t ino, void *userdata) {
        Build *b = userdata;
        int r;

        if (++b->changed > VOUCH_MAX_CHANGED)
                return -E2BIG;
        /* Whatever it is, wherever it lies (a file's every link: vouch_inode_unchanged()). */
        r = vouch_add_inode(b->v, ino);
        if (r < 0)
                return r;
        /* The inode itself (a directory's own path; a file's first link, harmless) ... */
        r = add_inode_path(b, ino);
        if (r < 0)
                return r;
        /* ... and every directory with a link to it. */
        return btrfs_inode_parents(b->src, ino, on_parent, b);
}

int vouch_btrfs(int src, uint64_t since, Vouch **ret) {
        _cleanup_free_ char *prefix = NULL;
        Build b = { .src = src };
        struct stat st;
        int r;

        if (fstat(src, &st) < 0)
                return -errno;
        r = btrfs_inode_path(src, st.st_ino, &prefix);
        if (r < 0)
                return r;
        r = vouch_new(&b.v);
        if (r < 0)
                return r;
        b.prefix = prefix;
        r = btrfs_changed_inodes(src, since, on_changed, &b);
        /* Every changed inode given (none, when nothing changed): the others vouched for. */
        b.v->has_inodes = r >= 0;
        if (r >= 0)
                r = btrfs_subvol_child_dirs(src, on_parent, &b);
        /*
         * The root is the directory the previous snapshot took at the
         * source's path, with the same names, when neither it nor any
         * directory above it in the subvolume changed: no rename there put
         * another directory at the path, no name in the root was made,
         * removed or renamed.
         */
        b.v->root_unchanged = r >= 0 && b.v->has_inodes && !b.above_overflow &&
                              !ino_set_has(&b.v->inodes, st.st_ino);
        for (size_t i = 0; i < b.n_above; i++)
                if (ino_set_has(&b.v->inodes, b.above[i]))
                        b.v->root_unchanged = false;
        free(b.asked.slots);
        if (r < 0) {
                vouch_free(b.v);
                return r;
        }
        vouch_seal(b.v);
        *ret = b.v;
        return 0;
}
