/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The manifest: written in segments and merged, read back directory by
 * directory; a damaged, truncated or foreign one is refused; and the
 * decision "unchanged" against files changed in each way a user can.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "clone-double.h"
#include "macro.h"
#include "manifest.h"
#include "mirror.h"
#include "stat-util.h"
#include "tests.h"
#include "tests-fs.h"

static void sh(const char *cmd) {
        if (system(cmd) != 0) {
                fprintf(stderr, "failed: %s\n", cmd);
                exit(2);
        }
}

static ManifestEntry entry(const char *name, uint64_t ino, mode_t mode) {
        ManifestEntry e = { .dev = 42, .ino = ino, .ctime_sec = 1000 + ino, .ctime_nsec = 7, .mode = mode,
                            .nlink = 1, .size = ino * 10 };

        snprintf(e.name, sizeof(e.name), "%s", name);
        return e;
}

typedef struct Gone {
        char names[16][256];
        int n;
} Gone;

static int note_gone(const ManifestEntry *e, void *userdata) {
        Gone *g = userdata;

        if (g->n < 16)
                snprintf(g->names[g->n++], 256, "%s", e->name);
        return 0;
}

/* The filesystem identity the records of test_decision() are taken with. */
#define TEST_FS UINT64_C(0x5eed)

/* The record of dir/name now, taken past the tick of its last change. */
static int record(int dir, const char *name, ManifestEntry *e) {
        struct statx x;
        struct timespec now;

        next_tick();
        if (statx(dir, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) < 0)
                return -errno;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        return manifest_entry_from_statx(e, name, &x, TEST_FS, &now);
}

static bool unchanged(int dir, const char *name, const ManifestEntry *e) {
        struct statx x;

        if (statx(dir, name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) < 0)
                return false;
        return manifest_entry_unchanged(e, &x, TEST_FS);
}

/* Write a manifest of a small tree in two segments, as two threads would. */
static int write_sample(int facts, const char *snap, uint64_t key) {
        ManifestWriter *w = NULL;
        ManifestSegment *a = NULL, *b = NULL;
        ManifestEntry e;
        uint64_t t1, t2;
        int r;

        r = manifest_writer_new(facts, snap, key, 1234, &w);
        if (r < 0)
                return r;
        if ((r = manifest_writer_segment(w, &a)) < 0 || (r = manifest_writer_segment(w, &b)) < 0)
                goto done;
        /* Segment a: the root's files "a" and "z"; b: the directories "d" and "m\nx", ascending each. */
        e = entry("a", 1, S_IFREG | 0644);
        if ((r = manifest_segment_add(a, &e)) < 0)
                goto done;
        e = entry("z", 2, S_IFREG | 0600);
        if ((r = manifest_segment_add(a, &e)) < 0)
                goto done;
        e = entry("d", 3, S_IFDIR | 0755);
        if ((r = manifest_segment_dir_begin(b, &e, &t1)) < 0)
                goto done;
        e = entry("f", 4, S_IFREG | 0644);
        if ((r = manifest_segment_add(b, &e)) < 0)
                goto done;
        e = entry("sub", 5, S_IFDIR | 0700);
        if ((r = manifest_segment_dir_begin(b, &e, &t2)) < 0)
                goto done;
        e = entry("deep", 6, S_IFREG | 0644);
        if ((r = manifest_segment_add(b, &e)) < 0)
                goto done;
        if ((r = manifest_segment_dir_end(b, t2)) < 0)
                goto done;
        e = entry("g", 7, S_IFLNK | 0777);
        if ((r = manifest_segment_add(b, &e)) < 0)
                goto done;
        if ((r = manifest_segment_dir_end(b, t1)) < 0)
                goto done;
        e = entry("m\nx", 8, S_IFDIR | 0755);
        if ((r = manifest_segment_dir_begin(b, &e, &t1)) < 0 || (r = manifest_segment_dir_end(b, t1)) < 0)
                goto done;
        if ((r = manifest_writer_finish(w)) < 0)
                goto done;
        r = manifest_writer_publish(w);
done:
        manifest_writer_free(w);
        return r;
}

static void test_format(const char *base) {
        char path[PATH_MAX], cmd[PATH_MAX * 2];
        _cleanup_close_ int facts = -EBADF;
        const char *snap = "2026-12-03T07:00:00Z";
        uint64_t key = manifest_job_key("/srv/a", NULL);
        Manifest *m = NULL;
        ManifestReader *rd = NULL;
        ManifestCursor root, d, sub, none;
        ManifestEntry e;
        Gone g = {};

        snprintf(path, sizeof(path), "%s/facts", base);
        CHECK(mkdir(path, 0700) == 0);
        facts = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(facts >= 0);

        /* The key: source and excludes. */
        {
                char *ex[] = { "*.tmp", NULL }, *ex2[] = { "*.tmp", "/cache/", NULL };

                CHECK(manifest_job_key("/srv/a", NULL) != manifest_job_key("/srv/b", NULL));
                CHECK(manifest_job_key("/srv/a", ex) != manifest_job_key("/srv/a", NULL));
                CHECK(manifest_job_key("/srv/a", ex) != manifest_job_key("/srv/a", ex2));
                CHECK(manifest_job_key("/srv/a", ex) == manifest_job_key("/srv/a", ex));
        }

        CHECK(manifest_open(facts, snap, key, &m) == -ENOENT);
        CHECK(write_sample(facts, snap, key) == 0);
        /* No temporary name left, no segment file named. */
        snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s/facts')\" = '%s.manifest'", base, snap);
        CHECK(system(cmd) == 0);

        CHECK(manifest_open(facts, snap, key, &m) == 0);
        if (!m)
                return;
        CHECK(manifest_entries(m) == 8);
        CHECK(manifest_started(m) == 1234);
        CHECK(manifest_reader_new(m, &rd) == 0);
        manifest_cursor_root(rd, &root);
        /* Merged by name: a, d (from the other segment), m\nx, z. */
        CHECK(manifest_cursor_find(&root, "a", &e, &none, NULL, NULL) == 1 && e.ino == 1 && e.size == 10 &&
              e.mode == (S_IFREG | 0644) && e.ctime_sec == 1001 && e.ctime_nsec == 7 && e.dev == 42);
        CHECK(none.pos == none.end);
        CHECK(manifest_cursor_find(&root, "b", &e, NULL, NULL, NULL) == 0);
        CHECK(manifest_cursor_find(&root, "d", &e, &d, NULL, NULL) == 1 && S_ISDIR(e.mode));
        /* Inside d: f, sub (deep), g. */
        CHECK(manifest_cursor_find(&d, "f", &e, NULL, NULL, NULL) == 1 && e.ino == 4);
        CHECK(manifest_cursor_find(&d, "sub", &e, &sub, NULL, NULL) == 1 && e.ino == 5);
        CHECK(manifest_cursor_find(&sub, "deep", &e, NULL, NULL, NULL) == 1 && e.ino == 6);
        CHECK(manifest_cursor_rest(&sub, note_gone, &g) == 0 && g.n == 0);
        CHECK(manifest_cursor_rest(&d, note_gone, &g) == 0 && g.n == 1 && strcmp(g.names[0], "g") == 0);
        /* Passed over on the way to "z": the directory with a newline in its name, reported gone. */
        g.n = 0;
        CHECK(manifest_cursor_find(&root, "z", &e, NULL, note_gone, &g) == 1 && e.ino == 2);
        CHECK(g.n == 1 && strcmp(g.names[0], "m\nx") == 0);
        CHECK(manifest_cursor_find(&root, "zz", &e, NULL, NULL, NULL) == 0);
        manifest_reader_free(rd);

        /* A subtree passed over whole: "d" gone with its children, one call. */
        CHECK(manifest_reader_new(m, &rd) == 0);
        manifest_cursor_root(rd, &root);
        g.n = 0;
        CHECK(manifest_cursor_find(&root, "m\nx", &e, NULL, note_gone, &g) == 1 && e.ino == 8);
        CHECK(g.n == 2 && strcmp(g.names[0], "a") == 0 && strcmp(g.names[1], "d") == 0);
        manifest_reader_free(rd);
        manifest_free(m);
        m = NULL;

        /* Another source or other excludes: not this job's. */
        CHECK(manifest_open(facts, snap, manifest_job_key("/srv/b", NULL), &m) == -ESTALE);

        /* A byte changed anywhere, the file cut short, or a trailer missing: no usable manifest. */
        snprintf(cmd, sizeof(cmd), "cp '%s/facts/%s.manifest' '%s/good'", base, snap, base);
        sh(cmd);
        snprintf(cmd, sizeof(cmd), "printf '\\377' | dd of='%s/facts/%s.manifest' bs=1 seek=100 conv=notrunc "
                 "status=none", base, snap);
        sh(cmd);
        CHECK(manifest_open(facts, snap, key, &m) == -EBADMSG);
        snprintf(cmd, sizeof(cmd), "cp '%s/good' '%s/facts/%s.manifest' && truncate -s -1 '%s/facts/%s.manifest'",
                 base, base, snap, base, snap);
        sh(cmd);
        CHECK(manifest_open(facts, snap, key, &m) == -EBADMSG);
        snprintf(cmd, sizeof(cmd), "cp '%s/good' '%s/facts/%s.manifest' && truncate -s -32 '%s/facts/%s.manifest'",
                 base, base, snap, base, snap);
        sh(cmd);
        CHECK(manifest_open(facts, snap, key, &m) == -EBADMSG);
        snprintf(cmd, sizeof(cmd), "truncate -s 10 '%s/facts/%s.manifest'", base, snap);
        sh(cmd);
        CHECK(manifest_open(facts, snap, key, &m) == -EBADMSG);
        snprintf(cmd, sizeof(cmd), ": > '%s/facts/%s.manifest'", base, snap);
        sh(cmd);
        CHECK(manifest_open(facts, snap, key, &m) == -EBADMSG);
        snprintf(cmd, sizeof(cmd), "cp '%s/good' '%s/facts/%s.manifest'", base, base, snap);
        sh(cmd);
        CHECK(manifest_open(facts, snap, key, &m) == 0);
        manifest_free(m);
        m = NULL;
        /*
         * Whole, but of an older format: version 1 (st_dev for the
         * identity) or 2 (summed by FNV-1a a byte at a time), each summed
         * as it was: not used (-EPROTO: the snapshot is a full one), never
         * misread.  The same bytes summed as this format sums, the
         * version said: used.
         */
        for (uint32_t version = 1; version <= 3; version++) {
                char mpath[PATH_MAX + 64];
                _cleanup_free_ unsigned char *buf = NULL;
                uint64_t h = 0xcbf29ce484222325ULL;
                uint32_t v = htole32(version);
                struct stat st;
                int fd;

                snprintf(mpath, sizeof(mpath), "%s/facts/%s.manifest", base, snap);
                fd = open(mpath, O_RDWR | O_CLOEXEC);
                CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 64);
                buf = malloc(st.st_size);
                CHECK(buf && pread(fd, buf, st.st_size, 0) == st.st_size);
                memcpy(buf + 8, &v, 4);
                if (version < 3)
                        for (off_t i = 0; i < st.st_size - 8; i++) {
                                h ^= buf[i];
                                h *= 0x100000001b3ULL;
                        }
                else
                        h = manifest_checksum(buf, st.st_size - 8);
                h = htole64(h);
                memcpy(buf + st.st_size - 8, &h, 8);
                CHECK(pwrite(fd, buf, st.st_size, 0) == st.st_size);
                close(fd);
                CHECK(manifest_open(facts, snap, key, &m) == (version < 3 ? -EPROTO : 0));
                m = manifest_free(m);
                snprintf(cmd, sizeof(cmd), "cp '%s/good' '%s/facts/%s.manifest'", base, base, snap);
                sh(cmd);
        }
        /*
         * The checksum: the same bytes sum alike; any one byte changed, or
         * one byte more or less, sums otherwise.  (Summed in pieces of any
         * size, written and read a buffer at a time: the manifest of
         * 100,000 entries of the memory test below is opened.)
         */
        {
                unsigned char data[300];
                uint64_t whole;

                for (size_t i = 0; i < sizeof(data); i++)
                        data[i] = (unsigned char) (i * 7 + 3);
                whole = manifest_checksum(data, sizeof(data));
                CHECK(whole == manifest_checksum(data, sizeof(data)));
                CHECK(manifest_checksum(data, sizeof(data) - 1) != whole &&
                      manifest_checksum(data, 0) != manifest_checksum(data, 1));
                for (size_t i = 0; i < sizeof(data); i += 13) {
                        data[i] ^= 0x80;
                        CHECK(manifest_checksum(data, sizeof(data)) != whole);
                        data[i] ^= 0x80;
                }
                /* A zero byte more at the end: the length says it. */
                {
                        unsigned char z[33] = {};

                        CHECK(manifest_checksum(z, 32) != manifest_checksum(z, 33) &&
                              manifest_checksum(z, 7) != manifest_checksum(z, 8));
                }
        }

        /*
         * A record whose name runs past its directory's end (here into the
         * trailer's magic, no NUL or '/' in it) with a children's length
         * that makes its whole length wrap to 0: -EBADMSG, never a loop on
         * the same record (review-incr LOW 4; alarm() ends a hang).
         */
        {
                char crafted[PATH_MAX + 64];
                unsigned char b[64 + 56 + 10 + 32] = {};
                uint64_t h, v64;
                uint32_t v32;
                uint16_t v16;
                Manifest *cm = NULL;
                ManifestReader *crd = NULL;
                ManifestCursor croot;
                int cfd;

                memcpy(b, "RFSNPMF1", 8);
                v32 = htole32(3);
                memcpy(b + 8, &v32, 4);
                v32 = htole32(64);
                memcpy(b + 12, &v32, 4);
                v64 = htole64(key);
                memcpy(b + 16, &v64, 8);
                v16 = htole16(18);              /* 10 bytes of name, then 8 of the trailer's magic */
                memcpy(b + 64, &v16, 2);
                v32 = htole32(S_IFDIR | 0755);
                memcpy(b + 64 + 4, &v32, 4);
                v64 = htole64(UINT64_MAX - 56 - 18 + 1);  /* 56 + 18 + this == 0 */
                memcpy(b + 64 + 48, &v64, 8);
                memcpy(b + 64 + 56, "abcdefghij", 10);
                memcpy(b + 130, "RFSNPEND", 8);
                v64 = htole64(1);
                memcpy(b + 138, &v64, 8);
                v64 = htole64(130);
                memcpy(b + 146, &v64, 8);
                h = htole64(manifest_checksum(b, sizeof(b) - 8));
                memcpy(b + 154, &h, 8);
                snprintf(crafted, sizeof(crafted), "%s/facts/2026-12-03T09:00:00Z.manifest", base);
                cfd = open(crafted, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                CHECK(cfd >= 0 && write(cfd, b, sizeof(b)) == (ssize_t) sizeof(b));
                safe_close(cfd);
                CHECK(manifest_open(facts, "2026-12-03T09:00:00Z", key, &cm) == 0);
                if (cm && manifest_reader_new(cm, &crd) == 0) {
                        ManifestEntry ce;

                        manifest_cursor_root(crd, &croot);
                        alarm(10);
                        CHECK(manifest_cursor_find(&croot, "zzz", &ce, NULL, NULL, NULL) == -EBADMSG);
                        alarm(0);
                        manifest_reader_free(crd);
                }
                manifest_free(cm);
                CHECK(unlink(crafted) == 0);
        }

        /*
         * The filesystem's identity: not its device number (which a reboot
         * moves) where it has a UUID (or is btrfs: fsid and subvolume);
         * where it has neither, this boot's only (the device number and
         * the boot's ID).
         */
        {
                uint64_t a = 0, b = 0;
                struct stat st;
                int ka, kb;

                CHECK(fstat(facts, &st) == 0);
                ka = fs_identity(facts, st.st_dev, &a);
                kb = fs_identity(facts, st.st_dev ^ 0x55, &b);
                printf("# the test directory's filesystem identity: %s\n",
                       ka == 1 ? "stable (its UUID, or btrfs's fsid and subvolume)" : "this boot's only");
                CHECK(ka == kb);
                CHECK(ka == 1 ? a == b : a != b);
                CHECK(fs_identity_boot_local(st.st_dev) == fs_identity_boot_local(st.st_dev));
                CHECK(fs_identity_boot_local(1) != fs_identity_boot_local(2));
        }

        /* Not published (a failed snapshot): nothing is left. */
        {
                ManifestWriter *w = NULL;
                ManifestSegment *s = NULL;
                ManifestEntry x = entry("x", 1, S_IFREG | 0644);

                CHECK(manifest_writer_new(facts, "2026-12-03T08:00:00Z", key, 0, &w) == 0);
                CHECK(manifest_writer_segment(w, &s) == 0 && manifest_segment_add(s, &x) == 0);
                CHECK(manifest_writer_finish(w) == 0);
                manifest_writer_free(w);
                snprintf(cmd, sizeof(cmd), "test \"$(ls -A '%s/facts')\" = '%s.manifest'", base, snap);
                CHECK(system(cmd) == 0);
        }
}

/* Each way a file can change, decided against its record. */
static void test_decision(const char *base) {
        char path[PATH_MAX], cmd[PATH_MAX * 3];
        _cleanup_close_ int dir = -EBADF;
        ManifestEntry e;
        struct timespec t[2];
        int fd;

        snprintf(path, sizeof(path), "%s/d", base);
        CHECK(mkdir(path, 0755) == 0);
        dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(cmd, sizeof(cmd), "cd '%s' && printf 'aaaa' > f && printf 'bbbb' > g && ln g g2 && "
                 "printf 'cccc' > h", path);
        sh(cmd);

        /* Unchanged: read, stat, opened and closed. */
        CHECK(record(dir, "f", &e) == 0);
        CHECK(!(e.flags & MANIFEST_RACY));
        snprintf(cmd, sizeof(cmd), "cat '%s/f' > /dev/null && stat '%s/f' > /dev/null", path, path);
        sh(cmd);
        CHECK(unchanged(dir, "f", &e));

        /* Data, the size kept. */
        snprintf(cmd, sizeof(cmd), "printf 'xxxx' | dd of='%s/f' conv=notrunc status=none", path);
        sh(cmd);
        CHECK(!unchanged(dir, "f", &e));

        /* A rewrite of the same size with its times put back (utimensat): ctime still moves. */
        CHECK(record(dir, "f", &e) == 0);
        {
                struct stat st;

                CHECK(fstatat(dir, "f", &st, 0) == 0);
                t[0] = st.st_atim;
                t[1] = st.st_mtim;
                fd = openat(dir, "f", O_WRONLY | O_CLOEXEC);
                CHECK(fd >= 0 && pwrite(fd, "yyyy", 4, 0) == 4);
                safe_close(fd);
                CHECK(utimensat(dir, "f", t, 0) == 0);
                CHECK(fstatat(dir, "f", &st, 0) == 0 && st.st_mtim.tv_sec == t[1].tv_sec &&
                      st.st_mtim.tv_nsec == t[1].tv_nsec && st.st_size == 4);
                CHECK(!unchanged(dir, "f", &e));
        }

        /* The size (data appended). */
        CHECK(record(dir, "f", &e) == 0);
        snprintf(cmd, sizeof(cmd), "printf 'z' >> '%s/f'", path);
        sh(cmd);
        CHECK(!unchanged(dir, "f", &e));

        /* chmod. */
        CHECK(record(dir, "f", &e) == 0);
        CHECK(fchmodat(dir, "f", 0600, 0) == 0);
        CHECK(!unchanged(dir, "f", &e));

        /* chown. */
        CHECK(record(dir, "f", &e) == 0);
        CHECK(fchownat(dir, "f", 1234, 5678, 0) == 0);
        CHECK(!unchanged(dir, "f", &e));

        /* An xattr. */
        CHECK(record(dir, "f", &e) == 0);
        snprintf(cmd, sizeof(cmd), "%s/f", path);
        if (setxattr(cmd, "user.x", "1", 1, 0) == 0)
                CHECK(!unchanged(dir, "f", &e));
        else
                SKIP("user xattrs: not on this filesystem");

        /* The mtime alone (touch -m -d): ctime moves. */
        CHECK(record(dir, "f", &e) == 0);
        t[0] = (struct timespec) { .tv_nsec = UTIME_OMIT };
        t[1] = (struct timespec) { .tv_sec = 1000000000 };
        CHECK(utimensat(dir, "f", t, 0) == 0);
        CHECK(!unchanged(dir, "f", &e));

        /* A hard link group: a new link, then a link removed (nlink and ctime). */
        CHECK(record(dir, "g", &e) == 0 && e.nlink == 2);
        CHECK(unchanged(dir, "g", &e));
        CHECK(linkat(dir, "g", dir, "g3", 0) == 0);
        CHECK(!unchanged(dir, "g", &e));
        CHECK(record(dir, "g", &e) == 0 && e.nlink == 3);
        CHECK(unlinkat(dir, "g2", 0) == 0);
        CHECK(!unchanged(dir, "g", &e));
        /* A record with only the link count changed (nlink alone tells). */
        {
                ManifestEntry p;
                struct statx x;

                CHECK(record(dir, "g", &p) == 0);
                CHECK(statx(dir, "g", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) == 0);
                p.nlink++;
                CHECK(!manifest_entry_unchanged(&p, &x, TEST_FS));
                p.nlink--;
                CHECK(manifest_entry_unchanged(&p, &x, TEST_FS));
                /* Each field alone. */
                p.ino++;
                CHECK(!manifest_entry_unchanged(&p, &x, TEST_FS));
                p.ino--;
                p.dev++;
                CHECK(!manifest_entry_unchanged(&p, &x, TEST_FS));
                p.dev--;
                /*
                 * The device number alone moved (a reboot numbers devices
                 * anew), the filesystem's identity the same: unchanged; the
                 * same device number on another filesystem: changed.
                 */
                x.stx_dev_minor ^= 0x55;
                CHECK(manifest_entry_unchanged(&p, &x, TEST_FS));
                x.stx_dev_minor ^= 0x55;
                CHECK(!manifest_entry_unchanged(&p, &x, TEST_FS + 1));
                p.ctime_nsec ^= 1;
                CHECK(!manifest_entry_unchanged(&p, &x, TEST_FS));
                p.ctime_nsec ^= 1;
                p.size++;
                CHECK(!manifest_entry_unchanged(&p, &x, TEST_FS));
                p.size--;
                p.flags |= MANIFEST_RACY;
                CHECK(!manifest_entry_unchanged(&p, &x, TEST_FS));
                p.flags = 0;
                CHECK(manifest_entry_unchanged(&p, &x, TEST_FS));
        }

        /* A new file at the same path, whatever inode number it got (reused or not). */
        CHECK(record(dir, "h", &e) == 0);
        CHECK(unlinkat(dir, "h", 0) == 0);
        fd = openat(dir, "h", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        CHECK(fd >= 0 && write(fd, "cccc", 4) == 4);
        safe_close(fd);
        {
                struct statx x;

                CHECK(statx(dir, "h", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) == 0);
                printf("# inode number %s by the new file\n", x.stx_ino == e.ino ? "reused" : "not reused");
                CHECK(!unchanged(dir, "h", &e));
                /* Even were its ctime the same: the inode number reused alone does not pass. */
                e.ino = x.stx_ino == e.ino ? e.ino + 1 : e.ino;
                e.ctime_sec = x.stx_ctime.tv_sec;
                e.ctime_nsec = x.stx_ctime.tv_nsec;
                CHECK(!manifest_entry_unchanged(&e, &x, TEST_FS));
        }

        /* A file replaced by a directory of the same name. */
        CHECK(record(dir, "h", &e) == 0);
        CHECK(unlinkat(dir, "h", 0) == 0 && mkdirat(dir, "h", 0644) == 0);
        CHECK(!unchanged(dir, "h", &e));

        /* Racy: a ctime not older than the clock that looked at it is never unchanged. */
        {
                struct statx x;
                struct timespec now;

                CHECK(statx(dir, "g", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &x) == 0);
                now = (struct timespec) { x.stx_ctime.tv_sec, x.stx_ctime.tv_nsec };
                CHECK(manifest_entry_from_statx(&e, "g", &x, TEST_FS, &now) == 0 && (e.flags & MANIFEST_RACY));
                CHECK(!manifest_entry_unchanged(&e, &x, TEST_FS));
                now.tv_sec++;
                CHECK(manifest_entry_from_statx(&e, "g", &x, TEST_FS, &now) == 0 && !(e.flags & MANIFEST_RACY));
                CHECK(manifest_entry_unchanged(&e, &x, TEST_FS));
        }
}

static char *run_output(const char *cmd) {
        char *out = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&out, &size);
        FILE *p = popen(cmd, "r");
        int c;

        while (p && (c = fgetc(p)) != EOF)
                fputc(c, m);
        if (p)
                pclose(p);
        fclose(m);
        return out;
}

static ino_t ino_of(const char *dir, const char *name) {
        char p[PATH_MAX * 2];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return lstat(p, &st) == 0 ? st.st_ino : 0;
}

/* rsync -aHAX --checksum, a dry run: what it would change, "" when the trees are equal. */
static bool judge(const char *a, const char *b) {
        char cmd[PATH_MAX * 3];
        _cleanup_free_ char *diff = NULL;

        snprintf(cmd, sizeof(cmd), "rsync -aHAXn --checksum --itemize-changes --delete '%s/' '%s/' 2>&1", a, b);
        diff = run_output(cmd);
        if (diff && diff[0])
                printf("# rsync %s %s:\n%s", a, b, diff);
        return diff && diff[0] == '\0';
}

/*
 * One snapshot of src into base/NAME (mirror_tree() with the copying
 * double), its manifest into facts as NAME; with prev (a snapshot name),
 * reusing that one (REUSE_LINK).
 */
static const MirrorOps *take_ops = &clone_double_ops;

static int take(const char *base, int facts, const char *src, const char *name, const char *prev,
                unsigned workers, MirrorStats *stats) {
        char path[PATH_MAX * 2];
        _cleanup_close_ int sfd = -EBADF, dfd = -EBADF, pfd = -EBADF;
        ManifestWriter *mw = NULL;
        Manifest *pm = NULL;
        MirrorReuse reuse = { .mode = REUSE_LINK };
        Mirror w = { .ops = take_ops, .log = stderr, .workers = workers };
        int r;

        snprintf(path, sizeof(path), "%s/%s", base, name);
        if (mkdir(path, 0700) < 0)
                return -errno;
        sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0 || dfd < 0)
                return -errno;
        if (prev) {
                snprintf(path, sizeof(path), "%s/%s", base, prev);
                pfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (pfd < 0)
                        return -errno;
                r = manifest_open(facts, prev, 7, &pm);
                if (r < 0)
                        return r;
                reuse.prev_root = pfd;
                reuse.prev = pm;
                w.reuse = &reuse;
        }
        r = manifest_writer_new(facts, name, 7, 0, &mw);
        if (r >= 0) {
                w.manifest = mw;
                r = mirror_tree(&w, sfd, dfd);
        }
        if (r >= 0)
                r = manifest_writer_finish(mw);
        if (r >= 0)
                r = manifest_writer_publish(mw);
        manifest_writer_free(mw);
        manifest_free(pm);
        *stats = w.stats;
        return r;
}

/*
 * The walk with REUSE_LINK: an unchanged file is the previous snapshot's
 * inode, a changed one a new inode; the snapshot equals the source and
 * the previous one is untouched.
 */
static void test_reuse(const char *base) {
        char src[PATH_MAX], copy[PATH_MAX], snaps[PATH_MAX], facts_path[PATH_MAX], s1[PATH_MAX * 2],
             s2[PATH_MAX * 2], s3[PATH_MAX * 2], cmd[PATH_MAX * 8];
        _cleanup_close_ int facts = -EBADF;
        MirrorStats st;
        int calls;

        snprintf(src, sizeof(src), "%s/reuse-src", base);
        snprintf(copy, sizeof(copy), "%s/reuse-copy", base);
        snprintf(snaps, sizeof(snaps), "%s/reuse-store", base);
        snprintf(facts_path, sizeof(facts_path), "%s/reuse-store/.facts", base);
        snprintf(s1, sizeof(s1), "%s/2026-12-03T07:00:00Z", snaps);
        snprintf(s2, sizeof(s2), "%s/2026-12-03T08:00:00Z", snaps);
        snprintf(s3, sizeof(s3), "%s/2026-12-03T09:00:00Z", snaps);
        snprintf(cmd, sizeof(cmd), "set -e; mkdir -p '%s' '%s' && chmod 0700 '%s' && cd '%s' && umask 022 && "
                 "mkdir -p d/sub e2 && echo a > a && echo b > b && echo c > d/c && echo e > e && "
                 "echo same > d/sub/same && printf 'n' > \"$(printf 'new\\nline')\" && "
                 "echo h > h1 && ln h1 d/h2 && echo g > g1 && ln g1 e2/g2 && "
                 "ln -s a sym && mkfifo fifo && echo keep > e2/keep && echo dd > d/dd",
                 src, facts_path, snaps, src);
        sh(cmd);
        facts = open(facts_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(facts >= 0);
        next_tick();

        /* The first: full, in three workers (a run of root entries each, merged). */
        CHECK(take(snaps, facts, src, "2026-12-03T07:00:00Z", NULL, 3, &st) == 0);
        CHECK(st.reused == 0 && st.compared == 0);
        CHECK(judge(src, s1));
        snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", s1, copy);
        sh(cmd);

        /* One change of each kind. */
        snprintf(cmd, sizeof(cmd), "set -e; cd '%s' && echo more >> a && rm b && chmod 0600 d/c && "
                 "echo new > d/new && rm e && mkdir e && echo in > e/in && ln g1 g3 && mv d/dd d/dd2",
                 src);
        sh(cmd);
        next_tick();
        calls = clone_double_calls;
        CHECK(take(snaps, facts, src, "2026-12-03T08:00:00Z", "2026-12-03T07:00:00Z", 3, &st) == 0);
        printf("# incremental: files %llu reused %llu compared %llu cloned %d\n", (unsigned long long) st.files,
               (unsigned long long) st.reused, (unsigned long long) st.compared, clone_double_calls - calls);
        CHECK(judge(src, s2));
        /* The previous one as it was. */
        CHECK(judge(copy, s1));
        /* Unchanged: the same inode in both; the multi-link group unchanged, linked whole. */
        CHECK(ino_of(s1, "d/sub/same") == ino_of(s2, "d/sub/same"));
        CHECK(ino_of(s1, "new\nline") == ino_of(s2, "new\nline"));
        CHECK(ino_of(s1, "e2/keep") == ino_of(s2, "e2/keep"));
        CHECK(ino_of(s1, "h1") == ino_of(s2, "h1") && ino_of(s2, "h1") == ino_of(s2, "d/h2"));
        /* Changed: data, mode, a group with a new link, a file renamed (a new path); new inodes. */
        CHECK(ino_of(s1, "a") != ino_of(s2, "a"));
        CHECK(ino_of(s1, "d/c") != ino_of(s2, "d/c"));
        CHECK(ino_of(s1, "g1") != ino_of(s2, "g1"));
        CHECK(ino_of(s2, "g1") == ino_of(s2, "e2/g2") && ino_of(s2, "g1") == ino_of(s2, "g3"));
        CHECK(ino_of(s1, "d/dd") != ino_of(s2, "d/dd2"));
        /* Nothing else linked within the snapshot: the unchanged files are distinct inodes. */
        CHECK(ino_of(s2, "d/sub/same") != ino_of(s2, "e2/keep"));
        /* reused: same, new\nline, keep, h1 (its group, once); made anew: a, c, new, in, g1 (once), dd2. */
        CHECK(st.reused == 4);
        CHECK(clone_double_calls - calls == 6);
        CHECK(st.compared == 4);        /* the root, d, d/sub, e2; e is new */

        /* Nothing changed, one worker: every file reused, none made. */
        next_tick();
        calls = clone_double_calls;
        CHECK(take(snaps, facts, src, "2026-12-03T09:00:00Z", "2026-12-03T08:00:00Z", 1, &st) == 0);
        CHECK(judge(src, s3));
        CHECK(clone_double_calls == calls);
        CHECK(st.reused == 10);       /* every inode: a, c, new, same, new\nline, keep, in, dd2, the two groups */
        CHECK(ino_of(s1, "d/sub/same") == ino_of(s3, "d/sub/same"));
        CHECK(ino_of(s2, "a") == ino_of(s3, "a") && ino_of(s2, "g3") == ino_of(s3, "e2/g2"));

        /*
         * A previous snapshot no link can come from (on another
         * filesystem here; a subvolume of its own on btrfs): every file
         * made anew, nothing fails.
         */
        if (unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0) {
                char s4[PATH_MAX * 2], s5[PATH_MAX * 2];

                snprintf(s4, sizeof(s4), "%s/2026-12-03T10:00:00Z", snaps);
                snprintf(s5, sizeof(s5), "%s/2026-12-03T11:00:00Z", snaps);
                CHECK(mkdir(s4, 0700) == 0 && mount("tmpfs", s4, "tmpfs", 0, "mode=0700") == 0);
                snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/' && cp '%s/2026-12-03T09:00:00Z.manifest' "
                         "'%s/2026-12-03T10:00:00Z.manifest'", s3, s4, facts_path, facts_path);
                sh(cmd);
                next_tick();
                calls = clone_double_calls;
                CHECK(take(snaps, facts, src, "2026-12-03T11:00:00Z", "2026-12-03T10:00:00Z", 2, &st) == 0);
                CHECK(st.reused == 0 && clone_double_calls - calls == 10);
                CHECK(judge(src, s5));
                CHECK(umount2(s4, MNT_DETACH) == 0);
        } else
                SKIP("a previous snapshot on another filesystem: no mount namespace of our own");
}

/*
 * The copying double, and once, right after it made the file called
 * "x", a same-size write to the source at write_path (its ctime moves),
 * then a tick: what another process may do between the clone of a hard
 * link group's first member and the statx of the next.
 */
static const char *write_path;

static int clone_then_write(int src, int dst_dir, const char *name, void *userdata) {
        int r = clone_double(src, dst_dir, name, userdata);
        _cleanup_close_ int fd = -EBADF;

        if (r < 0 || !write_path || strcmp(name, "x") != 0)
                return r;
        fd = open(write_path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || pwrite(fd, "new1", 4, 0) != 4)
                return -EIO;
        write_path = NULL;
        next_tick();
        return r;
}

static const MirrorOps clone_then_write_ops = { .clone = clone_then_write };

/*
 * A hard link group written while a snapshot takes it: the snapshot holds
 * the data as its first member (b/x) was taken, but the second (c/x) is
 * looked at after the write.  When the next snapshot meets c/x first (b
 * renamed to d here; the order of parallel workers, or a lease putting
 * b/x off, do the same), c/x must not count as unchanged: the group's
 * data in the previous snapshot is older than c/x's ctime says.  The
 * second snapshot equals the source.
 */
static void test_group_written_during_snapshot(const char *base) {
        char src[PATH_MAX], snaps[PATH_MAX], facts_path[PATH_MAX], bx[PATH_MAX + 8], s2[PATH_MAX * 2],
             cmd[PATH_MAX * 8];
        _cleanup_close_ int facts = -EBADF;
        MirrorStats st;

        snprintf(src, sizeof(src), "%s/group-src", base);
        snprintf(snaps, sizeof(snaps), "%s/group-store", base);
        snprintf(facts_path, sizeof(facts_path), "%s/group-store/.facts", base);
        snprintf(bx, sizeof(bx), "%s/b/x", src);
        snprintf(s2, sizeof(s2), "%s/2026-12-03T08:00:00Z", snaps);
        snprintf(cmd, sizeof(cmd), "set -e; mkdir -p '%s/b' '%s/c' '%s' && chmod 0700 '%s' && "
                 "printf old1 > '%s' && ln '%s' '%s/c/x'", src, src, facts_path, snaps, bx, bx, src);
        sh(cmd);
        facts = open(facts_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(facts >= 0);
        next_tick();

        take_ops = &clone_then_write_ops;
        write_path = bx;
        CHECK(take(snaps, facts, src, "2026-12-03T07:00:00Z", NULL, 1, &st) == 0);
        take_ops = &clone_double_ops;
        CHECK(write_path == NULL);      /* the write happened, between b/x and c/x */

        snprintf(cmd, sizeof(cmd), "mv '%s/b' '%s/d'", src, src);
        sh(cmd);
        next_tick();
        CHECK(take(snaps, facts, src, "2026-12-03T08:00:00Z", "2026-12-03T07:00:00Z", 1, &st) == 0);
        CHECK(judge(src, s2));
        CHECK(ino_of(s2, "c/x") == ino_of(s2, "d/x"));
}

/* Peak memory of writing and reading a manifest of n entries, in a child: its maxrss in KiB. */
static long measure_rss(const char *base, unsigned n, bool work) {
        int status, pipefd[2];
        long rss = -1;
        pid_t pid;

        fflush(stdout);
        if (pipe(pipefd) < 0)
                return -1;
        pid = fork();
        if (pid == 0) {
                char path[PATH_MAX];
                _cleanup_close_ int facts = -EBADF;
                ManifestWriter *w = NULL;
                ManifestSegment *s = NULL;
                Manifest *m = NULL;
                ManifestReader *rd = NULL;
                ManifestCursor root, dir;
                ManifestEntry e;
                struct rusage ru;
                uint64_t tok;
                unsigned found = 0;

                snprintf(path, sizeof(path), "%s/rss", base);
                facts = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (facts < 0)
                        _exit(2);
                if (work) {
                        /* n entries in directories of 1,000 names each. */
                        if (manifest_writer_new(facts, "2026-12-03T07:00:00Z", 1, 0, &w) < 0 ||
                            manifest_writer_segment(w, &s) < 0)
                                _exit(2);
                        for (unsigned d = 0; d < n / 1000; d++) {
                                char name[32];

                                snprintf(name, sizeof(name), "dir%06u", d);
                                e = entry(name, d + 1, S_IFDIR | 0755);
                                if (manifest_segment_dir_begin(s, &e, &tok) < 0)
                                        _exit(2);
                                for (unsigned f = 0; f < 1000; f++) {
                                        snprintf(name, sizeof(name), "file-with-a-longer-name-%06u", f);
                                        e = entry(name, f + 1, S_IFREG | 0644);
                                        if (manifest_segment_add(s, &e) < 0)
                                                _exit(2);
                                }
                                if (manifest_segment_dir_end(s, tok) < 0)
                                        _exit(2);
                        }
                        if (manifest_writer_finish(w) < 0 || manifest_writer_publish(w) < 0)
                                _exit(2);
                        manifest_writer_free(w);
                        if (manifest_open(facts, "2026-12-03T07:00:00Z", 1, &m) < 0 ||
                            manifest_reader_new(m, &rd) < 0)
                                _exit(2);
                        manifest_cursor_root(rd, &root);
                        for (unsigned d = 0; d < n / 1000; d++) {
                                char name[32];

                                snprintf(name, sizeof(name), "dir%06u", d);
                                if (manifest_cursor_find(&root, name, &e, &dir, NULL, NULL) != 1)
                                        _exit(2);
                                for (unsigned f = 0; f < 1000; f += 2) {
                                        snprintf(name, sizeof(name), "file-with-a-longer-name-%06u", f);
                                        found += manifest_cursor_find(&dir, name, &e, NULL, NULL, NULL) == 1;
                                }
                        }
                        manifest_reader_free(rd);
                        manifest_free(m);
                        if (found != n / 2)
                                _exit(3);
                }
                getrusage(RUSAGE_SELF, &ru);
                _exit(write(pipefd[1], &ru.ru_maxrss, sizeof(ru.ru_maxrss)) == sizeof(ru.ru_maxrss) ? 0 : 2);
        }
        close(pipefd[1]);
        if (pid < 0 || read(pipefd[0], &rss, sizeof(rss)) != sizeof(rss))
                rss = -1;
        close(pipefd[0]);
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -1;
        return rss;
}

int main(void) {
        char base[] = "/var/tmp/refsnap-test-manifest.XXXXXX", cmd[PATH_MAX];

        if (!mkdtemp(base))
                return 2;
        test_format(base);
        if (geteuid() == 0)
                test_decision(base);
        else
                SKIP("the decision's cases: not root (chown)");
        if (geteuid() == 0) {
                test_reuse(base);
                test_group_written_during_snapshot(base);
        } else
                SKIP("reuse: not root");
        {
                char path[PATH_MAX + 8];
                long before, after;
                struct stat st;

                snprintf(path, sizeof(path), "%s/rss", base);
                CHECK(mkdir(path, 0700) == 0);
                before = measure_rss(base, 0, false);
                after = measure_rss(base, 100000, true);
                snprintf(path, sizeof(path), "%s/rss/2026-12-03T07:00:00Z.manifest", base);
                CHECK(before > 0 && after > 0);
                CHECK(stat(path, &st) == 0);
                printf("# manifest of 100,000 entries: %lld bytes; peak RSS of a child that wrote and read it: "
                       "%ld KiB, of one that did nothing: %ld KiB (ASan build)\n", (long long) st.st_size, after, before);
                /* Bounded: nothing near the file's size is held (the buffers are 64 KiB each). */
                CHECK(after - before < st.st_size / 1024 / 2);
        }
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        sh(cmd);
        return tests_end();
}
