/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hash-util.h"
#include "macro.h"
#include "manifest.h"
#include "snapshot-name.h"

/*
 * The layout (little endian):
 *   header  (64)  "RFSNPMF1", u32 version, u32 header length, u64 key, s64 started,
 *                 u64 base's filesystem identity, u64 base's generation (0 0: none), zeros
 *   record  (56 + name)  u16 name length, u16 flags, u32 mode, u64 fs identity, u64 ino,
 *                        s64 ctime s, u32 ctime ns, u32 nlink, u64 size,
 *                        u64 children's length, the name
 *   trailer (32)  "RFSNPEND", u64 entries, u64 its own offset, u64 checksum of all before
 *
 * The checksum (manifest_checksum()) takes the bytes a 64-bit word at a
 * time, little endian, in four lanes (word i to lane i % 4, each lane
 * x = (h ^ w) * K, h = x rotated left by 31), then the lanes, the words of
 * the zero-padded tail and the length into one, avalanched.  Each step is
 * a bijection of the lane's state for a given word, so any one word
 * changed always changes it; FNV-1a, a byte at a time (format 2), cost a
 * multiply per byte, twice a snapshot over the whole manifest.
 */
#define HEADER_SIZE 64
#define RECORD_SIZE 56
#define TRAILER_SIZE 32
/*
 * 2: dev is the filesystem's identity (fs_identity()), no longer st_dev.
 * 3: the checksum a word at a time (manifest_checksum()), no longer FNV-1a.
 */
#define VERSION 3
static const char header_magic[8] = "RFSNPMF1", trailer_magic[8] = "RFSNPEND";

static void put16(char *p, uint16_t v) { v = htole16(v); memcpy(p, &v, 2); }
static void put32(char *p, uint32_t v) { v = htole32(v); memcpy(p, &v, 4); }
static void put64(char *p, uint64_t v) { v = htole64(v); memcpy(p, &v, 8); }
static uint16_t get16(const char *p) { uint16_t v; memcpy(&v, p, 2); return le16toh(v); }
static uint32_t get32(const char *p) { uint32_t v; memcpy(&v, p, 4); return le32toh(v); }
static uint64_t get64(const char *p) { uint64_t v; memcpy(&v, p, 8); return le64toh(v); }

int manifest_entry_from_statx(ManifestEntry *e, const char *name, const struct statx *x, uint64_t fs_id,
                              const struct timespec *now) {
        size_t n = strlen(name);

        if (n == 0 || n >= sizeof(e->name))
                return -ENAMETOOLONG;
        *e = (ManifestEntry) {
                .dev = fs_id,
                .ino = x->stx_ino,
                .ctime_sec = x->stx_ctime.tv_sec,
                .ctime_nsec = x->stx_ctime.tv_nsec,
                .mode = x->stx_mode,
                .nlink = x->stx_nlink,
                .size = x->stx_size,
        };
        memcpy(e->name, name, n + 1);
        /*
         * Not older than the clock: a change after the data was taken, in
         * the same tick, may leave ctime as it is.  A filesystem of whole
         * seconds (ns 0) the same, a second wide.
         */
        if (x->stx_ctime.tv_sec > now->tv_sec ||
            (x->stx_ctime.tv_sec == now->tv_sec && (long) x->stx_ctime.tv_nsec >= now->tv_nsec) ||
            (x->stx_ctime.tv_nsec == 0 && x->stx_ctime.tv_sec + 1 >= now->tv_sec))
                e->flags |= MANIFEST_RACY;
        return 0;
}

bool manifest_entry_unchanged(const ManifestEntry *prev, const struct statx *x, uint64_t fs_id) {
        return !(prev->flags & MANIFEST_RACY) &&
                prev->dev == fs_id && prev->ino == x->stx_ino &&
                prev->ctime_sec == x->stx_ctime.tv_sec && prev->ctime_nsec == x->stx_ctime.tv_nsec &&
                prev->size == x->stx_size && prev->mode == x->stx_mode && prev->nlink == x->stx_nlink;
}

#define SUM_K 0x9e3779b97f4a7c15ULL
#define SUM_BLOCK 32

static uint64_t rotl64(uint64_t x, unsigned r) {
        return x << r | x >> (64 - r);
}

static uint64_t sum_step(uint64_t h, uint64_t w) {
        return rotl64((h ^ w) * SUM_K, 31);
}

/* The checksum as a stream: bytes in pieces of any size. */
typedef struct Sum {
        uint64_t lane[4];
        unsigned char pend[SUM_BLOCK];
        size_t n_pend;
        uint64_t total;
} Sum;

static void sum_init(Sum *s) {
        *s = (Sum) { .lane = { SUM_K, 2 * SUM_K, 3 * SUM_K, 4 * SUM_K } };
}

static void sum_blocks(Sum *s, const unsigned char *p, size_t n_blocks) {
        uint64_t a = s->lane[0], b = s->lane[1], c = s->lane[2], d = s->lane[3];

        for (size_t i = 0; i < n_blocks; i++, p += SUM_BLOCK) {
                a = sum_step(a, get64((const char *) p));
                b = sum_step(b, get64((const char *) p + 8));
                c = sum_step(c, get64((const char *) p + 16));
                d = sum_step(d, get64((const char *) p + 24));
        }
        s->lane[0] = a, s->lane[1] = b, s->lane[2] = c, s->lane[3] = d;
}

static void sum_update(Sum *s, const void *data, size_t n) {
        const unsigned char *p = data;

        s->total += n;
        if (s->n_pend > 0) {
                size_t k = MIN(n, SUM_BLOCK - s->n_pend);

                memcpy(s->pend + s->n_pend, p, k);
                s->n_pend += k;
                p += k;
                n -= k;
                if (s->n_pend < SUM_BLOCK)
                        return;
                sum_blocks(s, s->pend, 1);
                s->n_pend = 0;
        }
        sum_blocks(s, p, n / SUM_BLOCK);
        p += n / SUM_BLOCK * SUM_BLOCK;
        n %= SUM_BLOCK;
        memcpy(s->pend, p, n);
        s->n_pend = n;
}

static uint64_t sum_final(const Sum *s) {
        unsigned char tail[SUM_BLOCK] = {};
        uint64_t h = s->total;

        for (size_t i = 0; i < 4; i++)
                h = sum_step(h, s->lane[i]);
        memcpy(tail, s->pend, s->n_pend);
        for (size_t i = 0; i < s->n_pend; i += 8)
                h = sum_step(h, get64((const char *) tail + i));
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        return h ^ h >> 33;
}

uint64_t manifest_checksum(const void *data, size_t n) {
        Sum s;

        sum_init(&s);
        sum_update(&s, data, n);
        return sum_final(&s);
}

uint64_t manifest_job_key(const char *source, char *const *exclude) {
        uint64_t h = fnv(FNV_INIT, "source", 7);

        h = fnv(h, source, strlen(source) + 1);
        for (char *const *p = exclude; p && *p; p++) {
                h = fnv(h, "exclude", 8);
                h = fnv(h, *p, strlen(*p) + 1);
        }
        return h;
}

/* A buffered window on a file, read by pread: forward reads are one call per MANIFEST_BUFFER. */
typedef struct Window {
        int fd;
        uint64_t size;
        char *buf;
        uint64_t start;
        size_t len;
} Window;

/* n (<= MANIFEST_BUFFER) bytes at off, or NULL (errno: EBADMSG past the end, or the read's). */
static const char *window_at(Window *w, uint64_t off, size_t n) {
        if (off + n > w->size) {
                errno = EBADMSG;
                return NULL;
        }
        if (off >= w->start && off + n <= w->start + w->len)
                return w->buf + (off - w->start);
        w->start = off;
        w->len = 0;
        while (w->len < n) {
                ssize_t k = pread(w->fd, w->buf + w->len, MIN((uint64_t) MANIFEST_BUFFER - w->len,
                                                          w->size - off - w->len), off + w->len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return NULL;
                if (k == 0) {
                        errno = EBADMSG;        /* shorter than it said */
                        return NULL;
                }
                w->len += k;
        }
        return w->buf;
}

/* The record at off of a window holding records up to end: its entry, children's length, and whole length. */
static int record_at(Window *w, uint64_t off, uint64_t end, ManifestEntry *e, uint64_t *children,
                     uint64_t *len) {
        const char *p = window_at(w, off, RECORD_SIZE);
        uint16_t n;

        if (off + RECORD_SIZE > end)
                return -EBADMSG;
        if (!p)
                return -errno;
        n = get16(p);
        if (n == 0 || n >= sizeof(e->name))
                return -EBADMSG;
        *e = (ManifestEntry) {
                .flags = get16(p + 2),
                .mode = get32(p + 4),
                .dev = get64(p + 8),
                .ino = get64(p + 16),
                .ctime_sec = (int64_t) get64(p + 24),
                .ctime_nsec = get32(p + 32),
                .nlink = get32(p + 36),
                .size = get64(p + 40),
        };
        *children = get64(p + 48);
        /* Both bounds, the name's first: end - off - RECORD_SIZE - n must not wrap. */
        if (n > end - off - RECORD_SIZE || *children > end - off - RECORD_SIZE - n)
                return -EBADMSG;
        p = window_at(w, off + RECORD_SIZE, n);
        if (!p)
                return -errno;
        if (memchr(p, '/', n) || memchr(p, '\0', n))
                return -EBADMSG;
        memcpy(e->name, p, n);
        e->name[n] = '\0';
        *len = RECORD_SIZE + n + *children;
        return 0;
}

struct Manifest {
        int fd;
        uint64_t size, body_end, entries;
        int64_t started;
        uint64_t base_fs, base_gen;
};

Manifest *manifest_free(Manifest *m) {
        if (!m)
                return NULL;
        safe_close(m->fd);
        free(m);
        return NULL;
}

uint64_t manifest_entries(const Manifest *m) {
        return m->entries;
}

int64_t manifest_started(const Manifest *m) {
        return m->started;
}

bool manifest_base(const Manifest *m, uint64_t *ret_fs, uint64_t *ret_generation) {
        *ret_fs = m->base_fs;
        *ret_generation = m->base_gen;
        return m->base_fs != 0 || m->base_gen != 0;
}

int manifest_open(int facts_dir, const char *snapshot, uint64_t key, Manifest **ret) {
        char name[SNAPSHOT_NAME_MAX + sizeof(MANIFEST_SUFFIX)];
        _cleanup_free_ char *buf = NULL;
        Manifest *m = NULL;
        Window w = {};
        const char *p;
        uint64_t size;
        struct stat st;
        bool stale;
        Sum sum;
        int fd, r;

        snprintf(name, sizeof(name), "%s" MANIFEST_SUFFIX, snapshot);
        fd = openat(facts_dir, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto fail;
        }
        r = -EBADMSG;
        if (!S_ISREG(st.st_mode) || st.st_size < HEADER_SIZE + TRAILER_SIZE)
                goto fail;
        size = st.st_size;
        buf = malloc(MANIFEST_BUFFER);
        if (!buf) {
                r = -ENOMEM;
                goto fail;
        }
        w = (Window) { .fd = fd, .size = size, .buf = buf };
        m = calloc(1, sizeof(*m));
        if (!m) {
                r = -ENOMEM;
                goto fail;
        }
        /* The header first: another format's is not summed as this one sums (-EPROTO, not "damaged"). */
        p = window_at(&w, 0, HEADER_SIZE);
        if (!p) {
                r = -errno;
                goto fail;
        }
        r = -EBADMSG;
        if (memcmp(p, header_magic, 8) != 0 || get32(p + 12) != HEADER_SIZE)
                goto fail;
        if (get32(p + 8) != VERSION) {
                r = -EPROTO;
                goto fail;
        }
        m->started = (int64_t) get64(p + 24);
        m->base_fs = get64(p + 32);
        m->base_gen = get64(p + 40);
        /* Read before the checksum says the header is whole: said only after it. */
        stale = get64(p + 16) != key;
        /* Every byte but the checksum, once. */
        sum_init(&sum);
        for (uint64_t off = 0; off < size - 8; off += MIN((uint64_t) MANIFEST_BUFFER, size - 8 - off)) {
                size_t n = MIN((uint64_t) MANIFEST_BUFFER, size - 8 - off);

                p = window_at(&w, off, n);
                if (!p) {
                        r = -errno;
                        goto fail;
                }
                sum_update(&sum, p, n);
        }
        p = window_at(&w, size - TRAILER_SIZE, TRAILER_SIZE);
        if (!p) {
                r = -errno;
                goto fail;
        }
        if (memcmp(p, trailer_magic, 8) != 0 || get64(p + 16) != size - TRAILER_SIZE ||
            get64(p + 24) != sum_final(&sum)) {
                r = -EBADMSG;
                goto fail;
        }
        if (stale) {
                r = -ESTALE;
                goto fail;
        }
        m->entries = get64(p + 8);
        m->fd = fd;
        m->size = size;
        m->body_end = size - TRAILER_SIZE;
        *ret = m;
        return 0;
fail:
        free(m);
        safe_close(fd);
        return r;
}

struct ManifestReader {
        Manifest *m;
        Window w;
};

int manifest_reader_new(Manifest *m, ManifestReader **ret) {
        ManifestReader *r = calloc(1, sizeof(*r));

        if (!r)
                return -ENOMEM;
        r->m = m;
        r->w = (Window) { .fd = m->fd, .size = m->size, .buf = malloc(MANIFEST_BUFFER) };
        if (!r->w.buf) {
                free(r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

ManifestReader *manifest_reader_free(ManifestReader *r) {
        if (!r)
                return NULL;
        free(r->w.buf);
        free(r);
        return NULL;
}

void manifest_cursor_root(ManifestReader *r, ManifestCursor *ret) {
        *ret = (ManifestCursor) { .reader = r, .pos = HEADER_SIZE, .end = r->m->body_end };
}

int manifest_cursor_find(ManifestCursor *c, const char *name, ManifestEntry *ret, ManifestCursor *children,
                         ManifestGone gone, void *userdata) {
        ManifestEntry e;

        if (children)
                *children = (ManifestCursor) { .reader = c->reader };
        while (c->pos < c->end) {
                uint64_t sub = 0, len = 0;
                int cmp, r;

                r = record_at(&c->reader->w, c->pos, c->end, &e, &sub, &len);
                if (r < 0)
                        return r;
                cmp = strcmp(e.name, name);
                if (cmp > 0)
                        return 0;
                if (cmp == 0) {
                        if (children) {
                                children->pos = c->pos + len - sub;
                                children->end = c->pos + len;
                        }
                        c->pos += len;
                        *ret = e;
                        return 1;
                }
                if (gone && (r = gone(&e, userdata)) < 0)
                        return r;
                c->pos += len;
        }
        return 0;
}

int manifest_cursor_rest(ManifestCursor *c, ManifestGone gone, void *userdata) {
        ManifestEntry e;

        while (c->pos < c->end) {
                uint64_t sub = 0, len = 0;
                int r;

                r = record_at(&c->reader->w, c->pos, c->end, &e, &sub, &len);
                if (r < 0)
                        return r;
                if (gone && (r = gone(&e, userdata)) < 0)
                        return r;
                c->pos += len;
        }
        return 0;
}

struct ManifestSegment {
        int fd;
        char *buf;
        uint64_t start;         /* file offset of buf[0] */
        size_t len;
        uint64_t entries;
};

struct ManifestWriter {
        int dir;
        char tmp[SNAPSHOT_NAME_MAX + sizeof(MANIFEST_SUFFIX) + 8];
        char final[SNAPSHOT_NAME_MAX + sizeof(MANIFEST_SUFFIX)];
        uint64_t key, entries;
        int64_t started;
        uint64_t base_fs, base_gen;
        pthread_mutex_t lock;
        ManifestSegment **segments;
        size_t n_segments;
        bool made, published;
};

static ManifestSegment *segment_free(ManifestSegment *s) {
        if (!s)
                return NULL;
        safe_close(s->fd);
        free(s->buf);
        free(s);
        return NULL;
}

ManifestWriter *manifest_writer_free(ManifestWriter *w) {
        if (!w)
                return NULL;
        if (w->made && !w->published)
                (void) unlinkat(w->dir, w->tmp, 0);
        for (size_t i = 0; i < w->n_segments; i++)
                segment_free(w->segments[i]);
        free(w->segments);
        pthread_mutex_destroy(&w->lock);
        safe_close(w->dir);
        free(w);
        return NULL;
}

int manifest_writer_new(int facts_dir, const char *snapshot, uint64_t key, int64_t started,
                        ManifestWriter **ret) {
        ManifestWriter *w;

        if (!snapshot_name_valid(snapshot))
                return -EINVAL;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        w->key = key;
        w->started = started;
        snprintf(w->tmp, sizeof(w->tmp), ".%s" MANIFEST_SUFFIX ".tmp", snapshot);
        snprintf(w->final, sizeof(w->final), "%s" MANIFEST_SUFFIX, snapshot);
        w->dir = fcntl(facts_dir, F_DUPFD_CLOEXEC, 3);
        if (w->dir < 0) {
                int r = -errno;

                manifest_writer_free(w);
                return r;
        }
        *ret = w;
        return 0;
}

/* An unnamed file in dir; where O_TMPFILE is not had, a named one unlinked at once. */
static int open_unnamed(int dir, const char *like) {
        char name[SNAPSHOT_NAME_MAX + 64];
        int fd;

        fd = openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
                return fd < 0 ? -errno : fd;
        for (unsigned i = 0; i < 1000; i++) {
                snprintf(name, sizeof(name), "%s.seg%u", like, i);
                fd = openat(dir, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd >= 0) {
                        (void) unlinkat(dir, name, 0);
                        return fd;
                }
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

int manifest_writer_segment(ManifestWriter *w, ManifestSegment **ret) {
        ManifestSegment *s, **l;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->fd = -EBADF;
        s->buf = malloc(MANIFEST_BUFFER);
        if (!s->buf) {
                segment_free(s);
                return -ENOMEM;
        }
        pthread_mutex_lock(&w->lock);
        r = open_unnamed(w->dir, w->tmp);
        if (r >= 0) {
                s->fd = r;
                l = realloc(w->segments, (w->n_segments + 1) * sizeof(*l));
                if (l) {
                        w->segments = l;
                        w->segments[w->n_segments++] = s;
                } else
                        r = -ENOMEM;
        }
        pthread_mutex_unlock(&w->lock);
        if (r < 0) {
                segment_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static int write_all_at(int fd, const char *p, size_t n, uint64_t off) {
        while (n > 0) {
                ssize_t k = pwrite(fd, p, n, off);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                n -= k;
                off += k;
        }
        return 0;
}

static int segment_flush(ManifestSegment *s) {
        int r = write_all_at(s->fd, s->buf, s->len, s->start);

        if (r < 0)
                return r;
        s->start += s->len;
        s->len = 0;
        return 0;
}

static int segment_record(ManifestSegment *s, const ManifestEntry *e, uint64_t children, uint64_t *ret_end) {
        size_t n = strlen(e->name);
        char *p;
        int r;

        if (n == 0 || n >= sizeof(e->name))
                return -EINVAL;
        if (s->len + RECORD_SIZE + n > MANIFEST_BUFFER) {
                r = segment_flush(s);
                if (r < 0)
                        return r;
        }
        p = s->buf + s->len;
        put16(p, n);
        put16(p + 2, e->flags);
        put32(p + 4, e->mode);
        put64(p + 8, e->dev);
        put64(p + 16, e->ino);
        put64(p + 24, (uint64_t) e->ctime_sec);
        put32(p + 32, e->ctime_nsec);
        put32(p + 36, e->nlink);
        put64(p + 40, e->size);
        put64(p + 48, children);
        memcpy(p + RECORD_SIZE, e->name, n);
        s->len += RECORD_SIZE + n;
        s->entries++;
        if (ret_end)
                *ret_end = s->start + s->len;
        return 0;
}

void manifest_writer_set_base(ManifestWriter *w, uint64_t fs, uint64_t generation) {
        w->base_fs = fs;
        w->base_gen = generation;
}

int manifest_cursor_count(const ManifestCursor *c, ManifestCounts *ret) {
        ManifestCounts n = {};

        /*
         * Records nest in place: each one's children follow its name, so
         * every record is met in turn.  Only the fixed part of each is
         * read (the counts need no name), bounds checked as record_at()
         * does; the block is read a window at a time.
         */
        for (uint64_t pos = c->pos; pos < c->end;) {
                const char *p;
                uint64_t sub, size;
                uint32_t mode;
                uint16_t k;

                if (c->end - pos < RECORD_SIZE)
                        return -EBADMSG;
                p = window_at(&c->reader->w, pos, RECORD_SIZE);
                if (!p)
                        return -errno;
                k = get16(p);
                mode = get32(p + 4);
                size = get64(p + 40);
                sub = get64(p + 48);
                if (k == 0 || k >= sizeof(((ManifestEntry *) NULL)->name) || k > c->end - pos - RECORD_SIZE ||
                    sub > c->end - pos - RECORD_SIZE - k)
                        return -EBADMSG;
                n.entries++;
                if (S_ISREG(mode)) {
                        n.files++;
                        n.bytes += size;
                        n.multi_link += get32(p + 36) > 1;
                } else if (S_ISDIR(mode))
                        n.dirs++;
                else if (S_ISLNK(mode))
                        n.symlinks++;
                else
                        n.specials++;
                pos += RECORD_SIZE + k;
        }
        *ret = n;
        return 0;
}

int manifest_segment_copy(ManifestSegment *s, const ManifestCursor *c, uint64_t entries) {
        for (uint64_t pos = c->pos; pos < c->end;) {
                size_t k = MIN((uint64_t) MANIFEST_BUFFER, c->end - pos);
                const char *p;
                int r;

                if (s->len + k > MANIFEST_BUFFER) {
                        r = segment_flush(s);
                        if (r < 0)
                                return r;
                }
                p = window_at(&c->reader->w, pos, k);
                if (!p)
                        return -errno;
                memcpy(s->buf + s->len, p, k);
                s->len += k;
                pos += k;
        }
        s->entries += entries;
        return 0;
}

int manifest_segment_add(ManifestSegment *s, const ManifestEntry *e) {
        return segment_record(s, e, 0, NULL);
}

int manifest_segment_dir_begin(ManifestSegment *s, const ManifestEntry *e, uint64_t *token) {
        uint64_t end;
        int r;

        r = segment_record(s, e, 0, &end);
        if (r < 0)
                return r;
        /* Where the children begin, and the name's length: where the field to set is. */
        *token = end << 8 | strlen(e->name);
        return 0;
}

int manifest_segment_dir_end(ManifestSegment *s, uint64_t token) {
        uint64_t begin = token >> 8, field = begin - (token & 0xff) - 8, len = s->start + s->len - begin;
        char v[8];

        put64(v, len);
        if (field >= s->start) {
                memcpy(s->buf + (field - s->start), v, 8);
                return 0;
        }
        return write_all_at(s->fd, v, 8, field);
}

/* The output of finish(): buffered, summed. */
typedef struct Out {
        int fd;
        char *buf;
        size_t len;
        uint64_t off;
        Sum sum;
} Out;

static int out_write(Out *o, const char *p, size_t n) {
        sum_update(&o->sum, p, n);
        while (n > 0) {
                size_t k = MIN(n, MANIFEST_BUFFER - o->len);

                memcpy(o->buf + o->len, p, k);
                o->len += k;
                p += k;
                n -= k;
                if (o->len == MANIFEST_BUFFER) {
                        int r = write_all_at(o->fd, o->buf, o->len, o->off);

                        if (r < 0)
                                return r;
                        o->off += o->len;
                        o->len = 0;
                }
        }
        return 0;
}

typedef struct Run {
        Window w;
        uint64_t pos;
        ManifestEntry e;        /* the record at pos */
        uint64_t len;
} Run;

static int run_peek(Run *run) {
        uint64_t sub = 0;
        int r;

        if (run->pos >= run->w.size)
                return 0;
        r = record_at(&run->w, run->pos, run->w.size, &run->e, &sub, &run->len);
        return r < 0 ? r : 1;
}

int manifest_writer_finish(ManifestWriter *w) {
        _cleanup_free_ char *obuf = NULL;
        _cleanup_free_ Run *runs = NULL;
        _cleanup_close_ int fd = -EBADF;
        char head[HEADER_SIZE] = {}, tail[TRAILER_SIZE];
        Out o;
        int r = 0;

        for (size_t i = 0; i < w->n_segments; i++) {
                r = segment_flush(w->segments[i]);
                if (r < 0)
                        return r;
                w->entries += w->segments[i]->entries;
        }
        fd = openat(w->dir, w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        w->made = true;
        obuf = malloc(MANIFEST_BUFFER);
        runs = calloc(MAX(w->n_segments, (size_t) 1), sizeof(Run));
        if (!obuf || !runs)
                return -ENOMEM;
        o = (Out) { .fd = fd, .buf = obuf };
        sum_init(&o.sum);
        memcpy(head, header_magic, 8);
        put32(head + 8, VERSION);
        put32(head + 12, HEADER_SIZE);
        put64(head + 16, w->key);
        put64(head + 24, (uint64_t) w->started);
        put64(head + 32, w->base_fs);
        put64(head + 40, w->base_gen);
        r = out_write(&o, head, sizeof(head));
        for (size_t i = 0; r >= 0 && i < w->n_segments; i++) {
                ManifestSegment *s = w->segments[i];

                runs[i].w = (Window) { .fd = s->fd, .size = s->start, .buf = s->buf };
                r = run_peek(&runs[i]);
        }
        /* The runs merged by root-level name: each run ascending, no name in two. */
        while (r >= 0) {
                Run *min = NULL;

                for (size_t i = 0; i < w->n_segments; i++) {
                        int cmp;

                        if (runs[i].pos >= runs[i].w.size)
                                continue;
                        cmp = min ? strcmp(runs[i].e.name, min->e.name) : -1;
                        if (cmp == 0)
                                return -EBADMSG;
                        if (cmp < 0)
                                min = &runs[i];
                }
                if (!min)
                        break;
                for (uint64_t off = min->pos, end = min->pos + min->len; r >= 0 && off < end;) {
                        size_t n = MIN((uint64_t) MANIFEST_BUFFER, end - off);
                        const char *p = window_at(&min->w, off, n);

                        r = p ? out_write(&o, p, n) : -errno;
                        off += n;
                }
                if (r < 0)
                        break;
                min->pos += min->len;
                r = run_peek(min);
        }
        if (r < 0)
                return r;
        memcpy(tail, trailer_magic, 8);
        put64(tail + 8, w->entries);
        put64(tail + 16, o.off + o.len + 0);
        r = out_write(&o, tail, 24);
        if (r < 0)
                return r;
        put64(tail + 24, sum_final(&o.sum));
        r = write_all_at(fd, o.buf, o.len, o.off);
        if (r >= 0)
                r = write_all_at(fd, tail + 24, 8, o.off + o.len);
        if (r < 0)
                return r;
        /*
         * Not synced here: the caller syncs the filesystem before publish()
         * (snapshot.c's syncfs() of the snapshot, on the store's
         * filesystem), which writes it with the tree, one flush for both.
         */
        /* The segments are done with. */
        for (size_t i = 0; i < w->n_segments; i++)
                w->segments[i] = segment_free(w->segments[i]);
        w->n_segments = 0;
        return 0;
}

int manifest_writer_publish(ManifestWriter *w) {
        if (!w->made)
                return -EINVAL;
        if (renameat(w->dir, w->tmp, w->dir, w->final) < 0)
                return -errno;
        w->published = true;
        return 0;
}

uint64_t manifest_writer_entries(const ManifestWriter *w) {
        return w->entries;
}
