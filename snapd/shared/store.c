/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "chase.h"
#include "dirent-util.h"
#include "escape.h"
#include "fd-util.h"
#include "macro.h"
#include "manifest.h"
#include "mountpoint-util.h"
#include "rm-rf.h"
#include "store.h"
#include "strv.h"

/*
 * Make the store's last component, and nothing above it: a missing parent
 * is the job's filesystem not mounted (or a typo), and a store made there
 * would land on the filesystem below the mount point.  With mnt, only on
 * that mount (the source's).
 */
static int store_make(const char *path, const uint64_t *mnt) {
        _cleanup_close_ int parent = -EBADF;
        const char *base;
        uint64_t id;
        int r;

        parent = chase_parent(AT_FDCWD, path, &(Chase) { .flags = CHASE_SAFE }, &base);
        if (parent < 0)
                return parent;
        if (mnt) {
                r = fd_mount_id(parent, &id);
                if (r < 0)
                        return r;
                if (id != *mnt)
                        return -EXDEV;
        }
        if (mkdirat(parent, base, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int store_parent_closed(int store) {
        _cleanup_close_ int parent = openat(store, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat st;

        if (parent < 0 || fstat(parent, &st) < 0)
                return -errno;
        return st.st_uid == 0 && (st.st_mode & (S_IXGRP | S_IXOTH | S_IWGRP | S_IWOTH)) == 0;
}

static int store_open_full(const char *path, bool create, const uint64_t *mnt, bool listable) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        mode_t mode = 0700;
        int r;

        if (path[0] != '/')
                return -EINVAL;
        fd = chase_dir(AT_FDCWD, path, &(Chase) { .flags = CHASE_SAFE | CHASE_NO_FUSE });
        if (fd == -ENOENT && create) {
                r = store_make(path, mnt);
                if (r < 0)
                        return r;
                fd = chase_dir(AT_FDCWD, path, &(Chase) { .flags = CHASE_SAFE | CHASE_NO_FUSE });
        }
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != 0)
                return -EPERM;
        /*
         * Snapshots keep every owner and mode: only root may look in.  For
         * Samba's view (listable), the store itself may be listed once
         * nobody but root can reach it by its own path: the view, a
         * read-only mount, is then the only way in.
         */
        if (listable && create) {
                r = store_parent_closed(fd);
                if (r < 0)
                        return r;
                if (r > 0)
                        mode = 0755;
        }
        if (create && (st.st_mode & 07777) != mode) {
                if (fchmod(fd, mode) < 0)
                        return -errno;
        } else if (st.st_mode & (S_IWGRP | S_IWOTH))
                return -EPERM;          /* others could plant names in it */
        return TAKE_FD(fd);
}

int store_open(const char *path, bool create) {
        return store_open_full(path, create, NULL, false);
}

int store_open_on(const char *path, uint64_t mnt, bool listable) {
        return store_open_full(path, true, &mnt, listable);
}

static bool is_snapshot_dir(int store, const char *name) {
        struct stat st;

        return snapshot_name_valid(name) && fstatat(store, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISDIR(st.st_mode);
}

int store_list(int store, char ***ret, size_t *n) {
        char **all = NULL, **l = NULL;
        size_t count = 0, k = 0;
        int r;

        r = dir_names_sorted(store, &all, &count);
        if (r < 0)
                return r;
        for (size_t i = 0; i < count; i++) {
                if (!is_snapshot_dir(store, all[i]))
                        continue;
                r = strv_push(&l, &k, all[i]);
                if (r < 0)
                        break;
        }
        strv_free(all);
        if (r < 0) {
                strv_free(l);
                return r;
        }
        *ret = l;
        *n = k;
        return 0;
}

int store_newest(int store, char name[static SNAPSHOT_NAME_MAX]) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = store_list(store, &names, &n);
        if (r >= 0 && n == 0)
                r = -ENOENT;
        if (r >= 0)
                snprintf(name, SNAPSHOT_NAME_MAX, "%s", names[n - 1]);
        strv_free(names);
        return r;
}

int store_latest(int store, char name[static SNAPSHOT_NAME_MAX]) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = store_list(store, &names, &n);
        if (r < 0)
                return r;
        r = -ENOENT;
        for (size_t i = n; i > 0; i--) {
                SnapshotFacts f;

                /* A guard, or unreadable facts that may be one's: never latest. */
                if (store_read_kind(store, names[i - 1], &f) < 0 || f.guard)
                        continue;
                snprintf(name, SNAPSHOT_NAME_MAX, "%s", names[i - 1]);
                r = 0;
                break;
        }
        strv_free(names);
        return r;
}

/* Write dir/name through a temp file (synced when sync) and a rename. */
static int write_synced_maybe(int dir, const char *name, const char *content, bool sync) {
        char tmp[SNAPSHOT_NAME_MAX + 32];
        size_t len = strlen(content);
        int fd;

        snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
        fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        for (size_t done = 0; done < len;) {
                ssize_t n = write(fd, content + done, len - done);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        safe_close(fd);
                        return -errno;
                }
                done += n;
        }
        if (sync && fsync(fd) < 0) {
                int r = -errno;

                safe_close(fd);
                return r;
        }
        safe_close(fd);
        return renameat(dir, tmp, dir, name) < 0 ? -errno : 0;
}

static int write_synced(int dir, const char *name, const char *content) {
        return write_synced_maybe(dir, name, content, true);
}

int store_write_checked(int store, time_t when) {
        char text[32];

        snprintf(text, sizeof(text), "%lld\n", (long long) when);
        return write_synced_maybe(store, ".checked", text, false);
}

int store_read_checked(int store, time_t *ret) {
        _cleanup_close_ int fd = openat(store, ".checked", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char text[32] = "";
        long long v;

        if (fd < 0)
                return -errno;
        if (read(fd, text, sizeof(text) - 1) < 0)
                return -errno;
        if (sscanf(text, "%lld", &v) != 1)
                return -EINVAL;
        *ret = (time_t) v;
        return 0;
}

#define STORE_LAST_NAME ".last-name"

int store_write_last_name(int store, const char *name) {
        char text[SNAPSHOT_NAME_MAX + 2];

        if (!snapshot_name_valid(name))
                return -EINVAL;
        snprintf(text, sizeof(text), "%s\n", name);
        /* Not synced: on disk with the snapshot's syncfs(), before the name is published. */
        return write_synced_maybe(store, STORE_LAST_NAME, text, false);
}

int store_name_floor(int store, char name[static SNAPSHOT_NAME_MAX]) {
        _cleanup_close_ int fd = -EBADF;
        char text[SNAPSHOT_NAME_MAX] = "";
        ssize_t n;
        int r;

        r = store_newest(store, name);
        if (r < 0 && r != -ENOENT)
                return r;
        fd = openat(store, STORE_LAST_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? r : -errno;
        n = read(fd, text, sizeof(text) - 1);
        if (n < 0)
                return -errno;
        text[n] = '\0';
        text[strcspn(text, "\n")] = '\0';
        if (!snapshot_name_valid(text))
                return r;       /* damaged: the snapshots alone say it */
        if (r == -ENOENT || strcmp(text, name) > 0)
                memcpy(name, text, SNAPSHOT_NAME_MAX);
        return 0;
}

int store_lock(int store, bool wait) {
        if (flock(store, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : -errno;
        return 0;
}

static bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool is_store_leftover(const char *name, void *userdata) {
        return startswith(name, STORE_PARTIAL_PREFIX) || startswith(name, STORE_REMOVING_PREFIX) ||
                startswith(name, STORE_RESTORE_PREFIX) || startswith(name, STORE_PURGING_PREFIX) ||
                startswith(name, STORE_PROBE_PREFIX) ||
                strcmp(name, ".latest.tmp") == 0 || strcmp(name, "..purge.tmp") == 0 ||
                strcmp(name, "..checked.tmp") == 0 || strcmp(name, "..paused.tmp") == 0 ||
                strcmp(name, "..last-name.tmp") == 0;
}


/*
 * Facts are written before the rename that publishes their snapshot: a
 * run stopped in between leaves facts of a snapshot that never was, and
 * a temp file.  Both go.
 */
static int remove_orphan_facts(int store, FILE *log) {
        _cleanup_close_ int dir = store_facts_dir(store, false);
        char **names = NULL;
        size_t n = 0;
        int r;

        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        r = dir_names_sorted(dir, &names, &n);
        for (size_t i = 0; i < n; i++) {
                char snap[SNAPSHOT_NAME_MAX + sizeof(MANIFEST_SUFFIX)];
                size_t len = strlen(names[i]), sl = strlen(STORE_SKIPPED_SUFFIX);
                struct stat st;

                /*
                 * NAME, NAME.skipped, NAME.guarded, NAME.manifest, NAME.pinned or
                 * NAME.description: NAME's, kept while NAME is there.
                 */
                snprintf(snap, sizeof(snap), "%s", names[i]);
                if (len > sl && len - sl < sizeof(snap) && strcmp(names[i] + len - sl, STORE_SKIPPED_SUFFIX) == 0)
                        snap[len - sl] = '\0';
                sl = strlen(STORE_GUARDED_SUFFIX);
                if (len > sl && len - sl < sizeof(snap) && strcmp(names[i] + len - sl, STORE_GUARDED_SUFFIX) == 0)
                        snap[len - sl] = '\0';
                sl = strlen(MANIFEST_SUFFIX);
                if (len > sl && len - sl < sizeof(snap) && strcmp(names[i] + len - sl, MANIFEST_SUFFIX) == 0)
                        snap[len - sl] = '\0';
                sl = strlen(STORE_PINNED_SUFFIX);
                if (len > sl && len - sl < sizeof(snap) && strcmp(names[i] + len - sl, STORE_PINNED_SUFFIX) == 0)
                        snap[len - sl] = '\0';
                sl = strlen(STORE_DESCRIPTION_SUFFIX);
                if (len > sl && len - sl < sizeof(snap) &&
                    strcmp(names[i] + len - sl, STORE_DESCRIPTION_SUFFIX) == 0)
                        snap[len - sl] = '\0';
                if (names[i][0] != '.' && fstatat(store, snap, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        continue;
                if (names[i][0] != '.' && errno != ENOENT)
                        continue;
                if (unlinkat(dir, names[i], 0) < 0 && errno != ENOENT) {
                        if (r == 0)
                                r = -errno;
                } else if (log)
                        fprintf(log, "removed the facts of %s, a snapshot that was never published\n",
                                names[i]);
        }
        strv_free(names);
        return r;
}

int store_remove_leftovers_locked(int store, const volatile sig_atomic_t *cancel, FILE *log) {
        int r, k;

        r = rm_leftovers(store, is_store_leftover, NULL, cancel, log);
        if (r == -ECANCELED)
                return r;
        k = remove_orphan_facts(store, log);
        return r < 0 ? r : k;
}

int store_remove_leftovers(int store, const volatile sig_atomic_t *cancel, FILE *log) {
        int r;

        r = store_lock(store, false);
        if (r == -EBUSY)
                return 0;       /* a snapshot is being made: not leftovers */
        if (r < 0)
                return r;
        return store_remove_leftovers_locked(store, cancel, log);
}

int store_facts_dir(int store, bool create) {
        int fd = openat(store, ".facts", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0 && errno == ENOENT && create) {
                if (mkdirat(store, ".facts", 0700) < 0 && errno != EEXIST)
                        return -errno;
                /* On disk before any facts in it, and so before the snapshot they describe. */
                if (fsync(store) < 0)
                        return -errno;
                fd = openat(store, ".facts", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        return fd < 0 ? -errno : fd;
}

int store_write_facts(int store, const char *name, const SnapshotFacts *f, const char *skipped_list) {
        _cleanup_close_ int dir = store_facts_dir(store, true);
        _cleanup_free_ char *text = NULL;
        char list[SNAPSHOT_NAME_MAX + sizeof(STORE_SKIPPED_SUFFIX)];
        int r;

        if (dir < 0)
                return dir;
        if (asprintf(&text, "start=%lld\nend=%lld\nfiles=%" PRIu64 "\ndirs=%" PRIu64 "\nsymlinks=%" PRIu64
                     "\nspecials=%" PRIu64 "\nhardlinks=%" PRIu64 "\nbytes=%" PRIu64 "\nvanished=%" PRIu64
                     "\nexcluded=%" PRIu64 "\nskipped=%" PRIu64 "\nguard=%d\nguarded=%" PRIu64 "\npaths=%d"
                     "\nincremental=%d\nreused=%" PRIu64 "\nmade=%" PRIu64 "\ncompared=%" PRIu64 "\nerrors=%u\n",
                     (long long) f->start, (long long) f->end, f->files, f->dirs, f->symlinks, f->specials,
                     f->hardlinks, f->bytes, f->vanished, f->excluded, f->skipped, f->guard, f->guarded,
                     f->paths, f->incremental, f->reused, f->made, f->compared, f->errors) < 0)
                return -ENOMEM;
        snprintf(list, sizeof(list), "%s" STORE_SKIPPED_SUFFIX, name);
        if (skipped_list && *skipped_list) {
                r = write_synced_maybe(dir, list, skipped_list, false);
                if (r < 0)
                        return r;
        }
        return write_synced_maybe(dir, name, text, false);
}

int store_read_facts(int store, const char *name, SnapshotFacts *f) {
        _cleanup_close_ int dir = store_facts_dir(store, false);
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
                else if (!strcmp(key, "skipped")) f->skipped = v;
                else if (!strcmp(key, "guard")) f->guard = v != 0;
                else if (!strcmp(key, "guarded")) f->guarded = v;
                else if (!strcmp(key, "paths")) f->paths = v != 0;
                else if (!strcmp(key, "incremental")) f->incremental = v != 0, f->kind_known = true;
                else if (!strcmp(key, "reused")) f->reused = v;
                else if (!strcmp(key, "made")) f->made = v;
                else if (!strcmp(key, "compared")) f->compared = v;
                else if (!strcmp(key, "errors")) f->errors = (unsigned) v;
        }
        fclose(in);
        return 0;
}

int store_read_kind(int store, const char *name, SnapshotFacts *f) {
        char **l = NULL;
        int r;

        r = store_read_facts(store, name, f);
        if (r != -ENOENT)
                return r;
        *f = (SnapshotFacts) {};
        r = store_read_guarded(store, name, &l);
        strv_free(l);
        if (r < 0)
                return r;
        f->guard = f->paths = r > 0;
        return 0;
}

/* A list of paths beside name's facts: "ERRNO PATH" lines, backslashes and newlines in PATH escaped. */
static int read_list(int store, const char *name, const char *suffix, char ***ret) {
        _cleanup_close_ int dir = store_facts_dir(store, false);
        char list[SNAPSHOT_NAME_MAX + 16];
        _cleanup_free_ char *line = NULL, *path = NULL;
        size_t size = 0, k = 0;
        char **l = NULL;
        FILE *in;
        ssize_t len;
        int fd, r = 0;

        *ret = NULL;
        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        snprintf(list, sizeof(list), "%s%s", name, suffix);
        fd = openat(dir, list, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        in = fdopen(fd, "r");
        if (!in) {
                safe_close(fd);
                return -errno;
        }
        /* "ERRNO PATH" lines, the path's backslashes and newlines escaped. */
        while (r >= 0 && (len = getline(&line, &size, in)) > 0) {
                const char *p = strchr(line, ' ');
                char *q;

                if (!p)
                        continue;
                free(path);
                path = q = malloc(len);
                if (!path) {
                        r = -ENOMEM;
                        break;
                }
                for (p++; *p && *p != '\n'; p++)
                        if (*p == '\\' && p[1] == 'n')
                                *q++ = '\n', p++;
                        else if (*p == '\\' && p[1] == '\\')
                                *q++ = '\\', p++;
                        else
                                *q++ = *p;
                *q = '\0';
                r = strv_push(&l, &k, path);
        }
        fclose(in);
        if (r < 0) {
                strv_free(l);
                return r;
        }
        *ret = l;
        return 1;
}

int store_read_skipped(int store, const char *name, char ***ret) {
        int r = read_list(store, name, STORE_SKIPPED_SUFFIX, ret);

        return r < 0 ? r : 0;
}

int store_read_guarded(int store, const char *name, char ***ret) {
        return read_list(store, name, STORE_GUARDED_SUFFIX, ret);
}

int store_write_guarded(int store, const char *name, char *const *paths) {
        _cleanup_close_ int dir = store_facts_dir(store, true);
        _cleanup_free_ char *text = NULL;
        char list[SNAPSHOT_NAME_MAX + sizeof(STORE_GUARDED_SUFFIX)];
        size_t size = 0;
        FILE *f;

        if (dir < 0)
                return dir;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        /* As the skipped list: "0 PATH", the path's backslashes and newlines escaped. */
        for (char *const *p = paths; p && *p; p++) {
                fputs("0 ", f);
                for (const char *c = *p; *c; c++)
                        if (*c == '\n')
                                fputs("\\n", f);
                        else if (*c == '\\')
                                fputs("\\\\", f);
                        else
                                fputc(*c, f);
                fputc('\n', f);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        snprintf(list, sizeof(list), "%s" STORE_GUARDED_SUFFIX, name);
        return write_synced_maybe(dir, list, text ? text : "", false);
}

int store_set_latest(int store, const char *name) {
        (void) unlinkat(store, ".latest.tmp", 0);
        if (symlinkat(name, store, ".latest.tmp") < 0)
                return -errno;
        if (renameat(store, ".latest.tmp", store, "latest") < 0)
                return -errno;
        return 0;
}

int store_retire(int store, const char *name) {
        _cleanup_close_ int dir = -EBADF;
        char hidden[sizeof(STORE_REMOVING_PREFIX) + SNAPSHOT_NAME_MAX];

        if (!snapshot_name_valid(name))
                return -EINVAL;
        snprintf(hidden, sizeof(hidden), STORE_REMOVING_PREFIX "%s", name);
        /* One rename: listed whole, or not at all. */
        if (renameat2(store, name, store, hidden, RENAME_NOREPLACE) < 0)
                return -errno;
        /* Retired now, whatever follows: facts left behind are leftovers of the next run. */
        dir = store_facts_dir(store, false);
        if (dir >= 0) {
                (void) unlinkat(dir, name, 0);
                snprintf(hidden, sizeof(hidden), "%s" STORE_SKIPPED_SUFFIX, name);
                (void) unlinkat(dir, hidden, 0);
                snprintf(hidden, sizeof(hidden), "%s" STORE_GUARDED_SUFFIX, name);
                (void) unlinkat(dir, hidden, 0);
                snprintf(hidden, sizeof(hidden), "%s" MANIFEST_SUFFIX, name);
                (void) unlinkat(dir, hidden, 0);
                snprintf(hidden, sizeof(hidden), "%s" STORE_PINNED_SUFFIX, name);
                (void) unlinkat(dir, hidden, 0);
                snprintf(hidden, sizeof(hidden), "%s" STORE_DESCRIPTION_SUFFIX, name);
                (void) unlinkat(dir, hidden, 0);
        }
        return 0;
}

int store_snapshot_exists(int store, const char *name) {
        struct stat st;

        /* The name rules first: no '/', no hidden name, nothing but a snapshot's name reaches fstatat. */
        if (!name || !snapshot_name_valid(name))
                return -EINVAL;
        if (fstatat(store, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return S_ISDIR(st.st_mode) ? 0 : -ENOENT;
}

int store_is_pinned(int store, const char *name) {
        _cleanup_close_ int dir = -EBADF;
        char mark[SNAPSHOT_NAME_MAX + sizeof(STORE_PINNED_SUFFIX)];
        struct stat st;

        if (!snapshot_name_valid(name))
                return -EINVAL;
        dir = store_facts_dir(store, false);
        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        snprintf(mark, sizeof(mark), "%s" STORE_PINNED_SUFFIX, name);
        if (fstatat(dir, mark, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        return S_ISREG(st.st_mode) ? 1 : 0;
}

int store_set_pinned(int store, const char *name, bool pin) {
        _cleanup_close_ int dir = -EBADF;
        char mark[SNAPSHOT_NAME_MAX + sizeof(STORE_PINNED_SUFFIX)];
        int r;

        r = store_snapshot_exists(store, name);
        if (r < 0)
                return r;
        r = store_is_pinned(store, name);
        if (r < 0)
                return r;
        if (r == pin)
                return 0;
        dir = store_facts_dir(store, pin);
        if (dir < 0)
                return dir;
        snprintf(mark, sizeof(mark), "%s" STORE_PINNED_SUFFIX, name);
        if (pin)
                r = write_synced(dir, mark, "");
        else
                r = unlinkat(dir, mark, 0) < 0 && errno != ENOENT ? -errno : 0;
        if (r < 0)
                return r;
        return fsync(dir) < 0 ? -errno : 1;
}

#define STORE_PAUSED ".paused"

int store_write_paused(int store, uint64_t until) {
        char text[32];
        int r;

        snprintf(text, sizeof(text), "%" PRIu64 "\n", until);
        r = write_synced(store, STORE_PAUSED, text);
        if (r < 0)
                return r;
        return fsync(store) < 0 ? -errno : 0;
}

int store_read_paused(int store, uint64_t *until) {
        _cleanup_close_ int fd = openat(store, STORE_PAUSED, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char text[32] = "", *end;
        unsigned long long v;
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, text, sizeof(text) - 1);
        if (n < 0)
                return -errno;
        text[n] = '\0';
        if (text[0] < '0' || text[0] > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno != 0 || (*end != '\n' && *end != '\0'))
                return -EINVAL;
        *until = v;
        return 0;
}

int store_remove_paused(int store) {
        if (unlinkat(store, STORE_PAUSED, 0) < 0)
                return errno == ENOENT ? 0 : -errno;
        return fsync(store) < 0 ? -errno : 0;
}

#define STORE_PURGE ".purge"

int store_write_purge_intent(int store, const char *path) {
        int r;

        if (!path || !*path)
                return -EINVAL;
        r = write_synced(store, STORE_PURGE, path);
        if (r < 0)
                return r;
        return fsync(store) < 0 ? -errno : 0;
}

int store_read_purge_intent(int store, char **ret) {
        _cleanup_close_ int fd = openat(store, STORE_PURGE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;

        if (fd < 0)
                return -errno;
        text = malloc(PATH_MAX + 1);
        if (!text)
                return -ENOMEM;
        while (len < PATH_MAX) {
                ssize_t n = read(fd, text + len, PATH_MAX - len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += n;
        }
        if (len == 0 || len >= PATH_MAX || memchr(text, '\0', len))
                return -EBADMSG;
        text[len] = '\0';
        *ret = TAKE_PTR(text);
        return 0;
}

int store_remove_purge_intent(int store) {
        if (unlinkat(store, STORE_PURGE, 0) < 0)
                return errno == ENOENT ? 0 : -errno;
        return fsync(store) < 0 ? -errno : 0;
}

int store_sync(int store) {
        _cleanup_close_ int dir = store_facts_dir(store, false);

        if (fsync(store) < 0)
                return -errno;
        if (dir >= 0 && fsync(dir) < 0)
                return -errno;
        return 0;
}

int store_remove_retired(int store, FILE *log) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = dir_names_sorted(store, &names, &n);
        for (size_t i = 0; i < n; i++) {
                int k;

                if (!startswith(names[i], STORE_REMOVING_PREFIX))
                        continue;
                k = rm_rf_or_subvol_at(store, names[i], NULL);
                if (k < 0 && log)
                        fprintf(log, "cannot remove %s (left hidden for the next run): %s\n",
                                names[i] + strlen(STORE_REMOVING_PREFIX), strerror(-k));
                if (k < 0 && r == 0)
                        r = k;
        }
        strv_free(names);
        return r;
}

int store_fs_quota(int fd, char what[static 16]) {
        static const char *const enforcing[] = { "usrquota", "grpquota", "quota", "usrjquota", "grpjquota" };
        _cleanup_free_ char *line = NULL;
        char *tail, *opts, *save = NULL;
        uint64_t id;
        int r;

        r = fd_mount_id(fd, &id);
        if (r < 0)
                return r;
        r = mountinfo_line_by_id(NULL, id, &line, &tail);
        if (r < 0)
                return r;
        /* "FSTYPE SOURCE SUPER-OPTIONS" */
        opts = strrchr(tail - 1, ' ');
        if (!opts)
                return -EINVAL;
        opts[strcspn(opts, "\n")] = '\0';
        for (char *o = strtok_r(opts + 1, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(o, '=');

                if (eq)
                        *eq = '\0';
                for (size_t i = 0; i < ELEMENTSOF(enforcing); i++)
                        if (strcmp(o, enforcing[i]) == 0) {
                                snprintf(what, 16, "%s", o);
                                return 1;
                        }
        }
        return 0;
}

/* A number from a file of sysfs: 0 or -errno. */
static int read_u64_file(const char *path, uint64_t *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        unsigned long long v;

        if (!f)
                return -errno;
        if (fscanf(f, "%llu", &v) != 1)
                return -EINVAL;
        *ret = v;
        return 0;
}

#define QGROUP_LEVEL(q) ((unsigned long long) ((q) >> 48))
#define QGROUP_ID(q) ((unsigned long long) ((q) & ((1ULL << 48) - 1)))

/* Has qgroup q of the filesystem fsid a limit (sysfs)?  1, said in what; 0; -errno. */
static int qgroup_limit(const char *fsid, uint64_t q, char *what, size_t size) {
        static const char *const attrs[] = { "max_referenced", "max_exclusive" };

        for (size_t i = 0; i < ELEMENTSOF(attrs); i++) {
                char path[256];
                uint64_t v = 0;
                int r;

                snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups/%llu_%llu/%s", fsid, QGROUP_LEVEL(q),
                         QGROUP_ID(q), attrs[i]);
                r = read_u64_file(path, &v);
                if (r == -ENOENT)
                        continue;       /* no such qgroup (yet): no limit */
                if (r < 0)
                        return r;
                if (v > 0) {
                        snprintf(what, size, "qgroup %llu/%llu, %s %llu", QGROUP_LEVEL(q), QGROUP_ID(q), attrs[i],
                                 (unsigned long long) v);
                        return 1;
                }
        }
        return 0;
}

typedef struct QgroupParents {
        uint64_t q, *parents;
        size_t max, *n;
} QgroupParents;

static int on_qgroup_relation(const struct btrfs_ioctl_search_header *h, const void *data, void *userdata) {
        QgroupParents *p = userdata;

        if (h->objectid != p->q || h->type != BTRFS_QGROUP_RELATION_KEY || h->offset <= p->q)
                return 0;
        for (size_t j = 0; j < *p->n; j++)
                if (p->parents[j] == h->offset)
                        return 0;
        if (*p->n >= p->max)
                return -E2BIG;
        p->parents[(*p->n)++] = h->offset;
        return 0;
}

/*
 * Add the qgroups q belongs to, from the quota tree's relation items (q,
 * RELATION, parent): a parent's level is higher, so its number larger.
 * Each once; -E2BIG past max rather than leave one out.
 */
static int qgroup_parents(int fd, uint64_t q, uint64_t *parents, size_t max, size_t *n) {
        return btrfs_tree_search(fd, BTRFS_QUOTA_TREE_OBJECTID, &(struct btrfs_ioctl_search_key) {
                                        .min_objectid = q,
                                        .max_objectid = q,
                                        .min_type = BTRFS_QGROUP_RELATION_KEY,
                                        .max_type = BTRFS_QGROUP_RELATION_KEY,
                                        .min_offset = q + 1,
                                        .max_offset = UINT64_MAX,
                                        .max_transid = UINT64_MAX,
                                 },
                                 on_qgroup_relation,
                                 &(QgroupParents) { .q = q, .parents = parents, .max = max, .n = n });
}

int store_btrfs_qgroup_limit(int fd, char *what, size_t size) {
        struct btrfs_ioctl_ino_lookup_args lookup = { .objectid = BTRFS_FIRST_FREE_OBJECTID };
        struct btrfs_ioctl_fs_info_args info = {};
        _cleanup_close_ int dir = -EBADF;
        _cleanup_free_ uint64_t *todo = NULL;
        const size_t max = 4096;
        uint64_t enabled = 0;
        char fsid[40], path[128];
        size_t n = 1;
        struct statfs sf;
        int r;

        if (fstatfs(fd, &sf) < 0)
                return -errno;
        if (sf.f_type != BTRFS_SUPER_MAGIC)
                return 0;
        /* ioctl() needs a descriptor that is not O_PATH. */
        dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return -errno;
        if (ioctl(dir, BTRFS_IOC_FS_INFO, &info) < 0)
                return -errno;
        snprintf(fsid, sizeof(fsid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 info.fsid[0], info.fsid[1], info.fsid[2], info.fsid[3], info.fsid[4], info.fsid[5], info.fsid[6],
                 info.fsid[7], info.fsid[8], info.fsid[9], info.fsid[10], info.fsid[11], info.fsid[12],
                 info.fsid[13], info.fsid[14], info.fsid[15]);
        /*
         * Limits count only while quotas are enabled: sysfs has qgroups/
         * only then (and "enabled" in it, on kernels that have that
         * file).  No directory for the filesystem at all (sysfs not
         * mounted, another layout): it cannot tell, an error.
         */
        snprintf(path, sizeof(path), "/sys/fs/btrfs/%s", fsid);
        if (access(path, F_OK) < 0)
                return -errno;
        snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups", fsid);
        if (access(path, F_OK) < 0)
                return errno == ENOENT ? 0 : -errno;
        snprintf(path, sizeof(path), "/sys/fs/btrfs/%s/qgroups/enabled", fsid);
        r = read_u64_file(path, &enabled);
        if (r >= 0 && enabled == 0)
                return 0;
        if (r < 0 && r != -ENOENT)
                return r;
        /* The subvolume fd is in: its level-0 qgroup, 0/ID. */
        if (ioctl(dir, BTRFS_IOC_INO_LOOKUP, &lookup) < 0)
                return -errno;
        todo = calloc(max, sizeof(*todo));
        if (!todo)
                return -ENOMEM;
        todo[0] = lookup.treeid;
        /* It and every qgroup above it, breadth first. */
        for (size_t i = 0; i < n; i++) {
                r = qgroup_limit(fsid, todo[i], what, size);
                if (r != 0)
                        return r;
                r = qgroup_parents(dir, todo[i], todo, max, &n);
                if (r < 0)
                        return r;
        }
        return 0;
}

int snapshot_description_check(const char *text) {
        size_t len;

        if (!text || !*text)
                return -EINVAL;
        len = strlen(text);
        if (len > SNAPSHOT_DESCRIPTION_MAX)
                return -E2BIG;
        for (const char *p = text; *p;) {
                unsigned char c = (unsigned char) *p;
                size_t n = utf8_char_len(p);

                /* Not UTF-8; C0 and DEL; C1 (U+0080..U+009F, 0xc2 0x80..0x9f). */
                if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7f)) ||
                    (n == 2 && c == 0xc2 && (unsigned char) p[1] <= 0x9f))
                        return -EINVAL;
                p += n;
        }
        return 0;
}

int store_write_description(int store, const char *name, const char *text) {
        _cleanup_close_ int dir = -EBADF;
        char file[SNAPSHOT_NAME_MAX + sizeof(STORE_DESCRIPTION_SUFFIX)];
        _cleanup_free_ char *line = NULL;
        int r;

        if (!snapshot_name_valid(name))
                return -EINVAL;
        r = snapshot_description_check(text);
        if (r < 0)
                return r;
        if (asprintf(&line, "%s\n", text) < 0)
                return -ENOMEM;
        dir = store_facts_dir(store, true);
        if (dir < 0)
                return dir;
        snprintf(file, sizeof(file), "%s" STORE_DESCRIPTION_SUFFIX, name);
        return write_synced_maybe(dir, file, line, false);
}

int store_read_description(int store, const char *name, char **ret) {
        _cleanup_close_ int dir = -EBADF, fd = -EBADF;
        char file[SNAPSHOT_NAME_MAX + sizeof(STORE_DESCRIPTION_SUFFIX)];
        char text[SNAPSHOT_DESCRIPTION_MAX + 2];
        ssize_t n;

        if (!snapshot_name_valid(name))
                return -EINVAL;
        dir = store_facts_dir(store, false);
        if (dir < 0)
                return dir;
        snprintf(file, sizeof(file), "%s" STORE_DESCRIPTION_SUFFIX, name);
        fd = openat(dir, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, text, sizeof(text) - 1);
        if (n < 0)
                return -errno;
        text[n] = '\0';
        if (n > 0 && text[n - 1] == '\n')
                text[n - 1] = '\0';
        if (snapshot_description_check(text) < 0)
                return -EBADMSG;
        *ret = strdup(text);
        return *ret ? 0 : -ENOMEM;
}
