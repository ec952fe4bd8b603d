/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "macro.h"
#include "refsnapd-attribution.h"

#define ATTR_CACHE_SIZE 4096

typedef struct AttrSlot {
        FileId id;
        uint64_t jobs;
        unsigned gen;
} AttrSlot;

/* A directory met on the way up, and the sources met below it. */
typedef struct AttrStep {
        FileId id;
        uint64_t below;
} AttrStep;

struct Attribution {
        unsigned max_depth;
        FileId *sources;
        size_t n_sources;
        AttrSlot *cache;        /* NULL: no cache */
        unsigned gen;           /* a slot of another generation is empty */
        AttrStep *steps;        /* max_depth + 1 of them */
        unsigned walked;        /* directories the last attribution_find() looked at */
};

int attribution_new(unsigned max_depth, Attribution **ret) {
        Attribution *a;

        if (max_depth == 0)
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->max_depth = max_depth;
        a->gen = 1;
        a->steps = calloc((size_t) max_depth + 1, sizeof(*a->steps));
        if (!a->steps) {
                free(a);
                return -ENOMEM;
        }
        a->cache = calloc(ATTR_CACHE_SIZE, sizeof(*a->cache));        /* without it: no cache */
        *ret = a;
        return 0;
}

Attribution *attribution_free(Attribution *a) {
        if (!a)
                return NULL;
        free(a->sources);
        free(a->cache);
        free(a->steps);
        free(a);
        return NULL;
}

void attribution_forget(Attribution *a) {
        if (++a->gen == 0) {
                /* Wrapped: a stale slot could look current. */
                if (a->cache)
                        memset(a->cache, 0, ATTR_CACHE_SIZE * sizeof(*a->cache));
                a->gen = 1;
        }
}

int attribution_set_sources(Attribution *a, const FileId *sources, size_t n) {
        FileId *copy = NULL;

        if (n > 0) {
                copy = calloc(n, sizeof(*copy));
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, sources, n * sizeof(*copy));
        }
        free(a->sources);
        a->sources = copy;
        a->n_sources = n;
        attribution_forget(a);
        return 0;
}

size_t attribution_n_sources(const Attribution *a) {
        return a->n_sources;
}

unsigned attribution_walked(const Attribution *a) {
        return a->walked;
}

static size_t attr_slot(FileId id) {
        return (size_t) ((id.ino * 0x9e3779b97f4a7c15ULL) ^ id.dev) % ATTR_CACHE_SIZE;
}

static AttributionVerdict unknown(const char **ret_why, const char *why) {
        if (ret_why)
                *ret_why = why;
        return ATTRIBUTION_UNKNOWN;
}

AttributionVerdict attribution_find(Attribution *a, int dir_fd, const char *name, bool *hits,
                                    const char **ret_why) {
        bool cacheable = a->cache && a->n_sources <= 64;
        _cleanup_close_ int cur = -EBADF;
        uint64_t jobs = 0;
        size_t n_steps = 0;
        struct stat st;

        a->walked = 0;
        if (fstat(dir_fd, &st) < 0)
                return unknown(ret_why, "a changed directory that cannot be examined");
        if (!S_ISDIR(st.st_mode)) {
                /* The kernel named the file itself: it had no directory for it. */
                if (st.st_nlink == 0)
                        return ATTRIBUTION_JOBS;        /* in no tree any more */
                return unknown(ret_why, "a changed file reported without its directory");
        }
        if (name && name[0] && strcmp(name, ".") != 0) {
                struct stat f;

                /* Gone since (ENOENT): the directory's own change is what is left. */
                if (fstatat(dir_fd, name, &f, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(f.st_mode) && f.st_nlink > 1)
                        return unknown(ret_why, "a change to a file with more than one link");
        }
        cur = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return unknown(ret_why, "a changed directory that cannot be examined");
        for (unsigned depth = 0;; depth++) {
                FileId id = file_id(&st);
                struct stat up;
                int next;

                a->walked = depth + 1;
                if (cacheable) {
                        const AttrSlot *slot = &a->cache[attr_slot(id)];

                        if (slot->gen == a->gen && file_id_equal(slot->id, id)) {
                                jobs |= slot->jobs;
                                for (size_t i = 0; i < a->n_sources; i++)
                                        if (slot->jobs & (UINT64_C(1) << i))
                                                hits[i] = true;
                                break;
                        }
                }
                a->steps[n_steps++] = (AttrStep) { .id = id, .below = jobs };
                for (size_t i = 0; i < a->n_sources; i++)
                        if (a->sources[i].ino != 0 && file_id_equal(a->sources[i], id)) {
                                hits[i] = true;
                                if (i < 64)
                                        jobs |= UINT64_C(1) << i;
                        }
                next = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (next < 0)
                        return unknown(ret_why, "a changed directory whose parent cannot be opened");
                if (fstat(next, &up) < 0) {
                        safe_close(next);
                        return unknown(ret_why, "a changed directory whose parent cannot be examined");
                }
                safe_close(cur);
                cur = next;
                if (stat_inode_same(&up, &st))
                        break;  /* the root it was decoded against */
                if (depth + 1 > a->max_depth)
                        return unknown(ret_why, "a change deeper than the attribution's walk limit");
                st = up;
        }
        /* Every directory met holds what was met from it upwards. */
        for (size_t k = 0; cacheable && k < n_steps; k++) {
                AttrSlot *slot = &a->cache[attr_slot(a->steps[k].id)];

                *slot = (AttrSlot) { .id = a->steps[k].id, .jobs = jobs & ~a->steps[k].below, .gen = a->gen };
        }
        return ATTRIBUTION_JOBS;
}
