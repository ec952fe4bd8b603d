/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "store.h"
#include "strv.h"

bool snapshot_name_valid(const char *name) {
        time_t t;

        return snapshot_name_time(name, &t) == 0;
}

int snapshot_name_time(const char *name, time_t *ret) {
        struct tm tm = {};
        const char *end;

        /* YYYY-MM-DDTHH:MM:SSZ, optionally -NN */
        if (strlen(name) != 20 && strlen(name) != 23)
                return -EINVAL;
        end = strptime(name, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (!end || end != name + 20)
                return -EINVAL;
        if (*end && !(end[0] == '-' && isdigit((unsigned char) end[1]) &&
                      isdigit((unsigned char) end[2])))
                return -EINVAL;
        *ret = timegm(&tm);
        return 0;
}

void snapshot_name_format(time_t t, unsigned seq, char buf[static SNAPSHOT_NAME_MAX]) {
        struct tm tm;
        size_t n;

        gmtime_r(&t, &tm);
        n = strftime(buf, SNAPSHOT_NAME_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (seq > 0)
                snprintf(buf + n, SNAPSHOT_NAME_MAX - n, "-%02u", seq % 100);
}

int store_open(const char *path, bool create) {
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int fd = -EBADF;
        char *p, *slash;

        if (!copy)
                return -ENOMEM;
        if (path[0] != '/')
                return -EINVAL;
        fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (p = copy + 1; p && *p; p = slash ? slash + 1 : NULL) {
                int next;

                slash = strchr(p, '/');
                if (slash)
                        *slash = '\0';
                next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0 && errno == ENOENT && create) {
                        if (mkdirat(fd, p, 0700) < 0 && errno != EEXIST)
                                return -errno;
                        next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                }
                if (next < 0)
                        return -errno;
                safe_close(fd);
                fd = next;
        }
        /* Snapshots keep every owner and mode: only root may look in. */
        if (create && fchmod(fd, 0700) < 0)
                return -errno;
        return TAKE_FD(fd);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int store_list(int store, char ***ret, size_t *n) {
        char **l = NULL;
        size_t count = 0;
        struct dirent *de;
        DIR *d = opendir_fd(store);
        int r = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                struct stat st;

                if (!snapshot_name_valid(de->d_name))
                        continue;
                if (fstatat(store, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                r = strv_push(&l, &count, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r < 0) {
                strv_free(l);
                return r;
        }
        if (count)
                qsort(l, count, sizeof(*l), cmp_str);
        *ret = l;
        *n = count;
        return 0;
}

int rm_rf_at(int dirfd, const char *name) {
        _cleanup_close_ int fd = -EBADF;
        struct stat top, st;
        struct dirent *de;
        DIR *d;
        int r = 0;

        if (fstatat(dirfd, name, &top, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(top.st_mode))
                return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;

        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_ino != top.st_ino)
                return -ESTALE;         /* swapped under us: leave it */
        d = opendir_fd(fd);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                struct stat cs;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(fd, de->d_name, &cs, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(cs.st_mode)) {
                        if (cs.st_dev != st.st_dev) {
                                r = -EXDEV;     /* a mount inside: not ours */
                                continue;
                        }
                        int k = rm_rf_at(fd, de->d_name);
                        if (k < 0 && r == 0)
                                r = k;
                } else if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT && r == 0)
                        r = -errno;
        }
        closedir(d);
        if (r < 0)
                return r;
        return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int store_lock(int store, bool wait) {
        if (flock(store, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : -errno;
        return 0;
}

int store_remove_leftovers(int store, FILE *log) {
        struct dirent *de;
        DIR *d;
        int r;

        r = store_lock(store, false);
        if (r == -EBUSY)
                return 0;       /* a snapshot is being made: not leftovers */
        if (r < 0)
                return r;
        d = opendir_fd(store);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                if (strncmp(de->d_name, ".partial-", 9) != 0 && strcmp(de->d_name, ".latest.tmp") != 0)
                        continue;
                int k = rm_rf_at(store, de->d_name);
                if (log)
                        fprintf(log, "removed leftover %s%s%s\n", de->d_name, k < 0 ? ": " : "",
                                k < 0 ? strerror(-k) : "");
                if (k < 0 && r == 0)
                        r = k;
        }
        closedir(d);
        return r;
}

static int facts_dir(int store, bool create) {
        int fd = openat(store, ".facts", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0 && errno == ENOENT && create) {
                if (mkdirat(store, ".facts", 0700) < 0 && errno != EEXIST)
                        return -errno;
                fd = openat(store, ".facts", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        return fd < 0 ? -errno : fd;
}

int store_write_facts(int store, const char *name, const SnapshotFacts *f) {
        _cleanup_close_ int dir = facts_dir(store, true);
        char tmp[SNAPSHOT_NAME_MAX + 8];
        FILE *out;
        int fd;

        if (dir < 0)
                return dir;
        snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
        fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        out = fdopen(fd, "w");
        if (!out) {
                safe_close(fd);
                return -errno;
        }
        fprintf(out, "start=%lld\nend=%lld\nfiles=%" PRIu64 "\ndirs=%" PRIu64 "\nsymlinks=%" PRIu64
                "\nspecials=%" PRIu64 "\nhardlinks=%" PRIu64 "\nbytes=%" PRIu64 "\nvanished=%" PRIu64
                "\nexcluded=%" PRIu64 "\nerrors=%u\n",
                (long long) f->start, (long long) f->end, f->files, f->dirs, f->symlinks, f->specials,
                f->hardlinks, f->bytes, f->vanished, f->excluded, f->errors);
        if (fflush(out) != 0 || fsync(fileno(out)) < 0) {
                fclose(out);
                return -EIO;
        }
        fclose(out);
        return renameat(dir, tmp, dir, name) < 0 ? -errno : 0;
}

int store_read_facts(int store, const char *name, SnapshotFacts *f) {
        _cleanup_close_ int dir = facts_dir(store, false);
        char key[32];
        unsigned long long v;
        FILE *in;
        int fd;

        if (dir < 0)
                return dir;
        fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        in = fdopen(fd, "r");
        if (!in) {
                safe_close(fd);
                return -errno;
        }
        *f = (SnapshotFacts) {};
        while (fscanf(in, "%31[a-z]=%llu\n", key, &v) == 2) {
                if (!strcmp(key, "start")) f->start = (time_t) v;
                else if (!strcmp(key, "end")) f->end = (time_t) v;
                else if (!strcmp(key, "files")) f->files = v;
                else if (!strcmp(key, "dirs")) f->dirs = v;
                else if (!strcmp(key, "symlinks")) f->symlinks = v;
                else if (!strcmp(key, "specials")) f->specials = v;
                else if (!strcmp(key, "hardlinks")) f->hardlinks = v;
                else if (!strcmp(key, "bytes")) f->bytes = v;
                else if (!strcmp(key, "vanished")) f->vanished = v;
                else if (!strcmp(key, "excluded")) f->excluded = v;
                else if (!strcmp(key, "errors")) f->errors = (unsigned) v;
        }
        fclose(in);
        return 0;
}

int store_set_latest(int store, const char *name) {
        (void) unlinkat(store, ".latest.tmp", 0);
        if (symlinkat(name, store, ".latest.tmp") < 0)
                return -errno;
        if (renameat(store, ".latest.tmp", store, "latest") < 0)
                return -errno;
        return 0;
}

int store_remove_snapshot(int store, const char *name) {
        _cleanup_close_ int dir = -EBADF;
        int r;

        if (!snapshot_name_valid(name))
                return -EINVAL;
        r = rm_rf_at(store, name);
        if (r < 0)
                return r;
        dir = facts_dir(store, false);
        if (dir >= 0)
                (void) unlinkat(dir, name, 0);
        return 0;
}
