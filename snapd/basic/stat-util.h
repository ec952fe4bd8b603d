/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A file's identity: the same inode of the same filesystem. */
typedef struct FileId {
        dev_t dev;
        ino_t ino;
} FileId;

static inline FileId file_id(const struct stat *st) {
        return (FileId) { .dev = st->st_dev, .ino = st->st_ino };
}

static inline bool file_id_is(const struct stat *st, FileId id) {
        return id.ino != 0 && st->st_dev == id.dev && st->st_ino == id.ino;
}

static inline bool file_id_equal(FileId a, FileId b) {
        return a.dev == b.dev && a.ino == b.ino;
}

static inline bool stat_inode_same(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* struct stat from what statx(2) returned. */
void stat_from_statx(struct stat *st, const struct statx *x);
