/* SPDX-License-Identifier: GPL-2.0-or-later */
/* refsnapctl purge: one path out of every snapshot of a job.  See purge.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "chase.h"
#include "escape.h"
#include "exclude.h"
#include "fd-util.h"
#include "log-event.h"
#include "macro.h"
#include "manifest.h"
#include "mountpoint-util.h"
#include "purge.h"
#include "rm-rf.h"
#include "store.h"
#include "strv.h"

/* p as a relative path: components joined by one '/', "" and "." dropped; ".." or nothing left: -EINVAL. */
static int normalize_relative(const char *p, char **ret) {
        _cleanup_free_ char *out = malloc(strlen(p) + 1);
        size_t n = 0;

        if (!out)
                return -ENOMEM;
        while (*p) {
                size_t l = strcspn(p, "/");

                if (l == 2 && p[0] == '.' && p[1] == '.')
                        return -EINVAL;
                if (l > 0 && !(l == 1 && p[0] == '.')) {
                        if (n > 0)
                                out[n++] = '/';
                        memcpy(out + n, p, l);
                        n += l;
                }
                p += l;
                if (*p == '/')
                        p++;
        }
        if (n == 0)
                return -EINVAL;
        out[n] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

int purge_path_normalize(const char *source, const char *arg, char **ret) {
        if (!arg || !*arg)
                return -EINVAL;
        if (arg[0] == '/') {
                size_t sl;

                if (!source || source[0] != '/')
                        return -EINVAL;
                sl = strlen(source);
                while (sl > 0 && source[sl - 1] == '/')
                        sl--;
                if (strncmp(arg, source, sl) != 0 || (arg[sl] != '/' && arg[sl] != '\0'))
                        return -EINVAL;
                arg += sl;
        }
        return normalize_relative(arg, ret);
}

/* Is path as purge_path_normalize() makes them? */
static bool path_normalized(const char *path) {
        _cleanup_free_ char *n = NULL;

        return path && path[0] != '/' && normalize_relative(path, &n) >= 0 && strcmp(n, path) == 0;
}

/*
 * Is path beneath root (no symbolic link followed, no mount crossed)?  1,
 * and when ret_parent is not NULL the directory holding it and its name
 * (a pointer into path); 0; -errno.
 */
static int open_entry_parent(int root, const char *path, struct stat *ret_st, int *ret_parent,
                             const char **ret_base) {
        _cleanup_close_ int parent = -EBADF;
        const char *base;
        struct stat st;
        int r;

        parent = chase_parent(root, path, &(Chase) { .flags = CHASE_NO_XDEV }, &base);
        /* Missing, or through a symbolic link or a file: not there as the source's path. */
        if (parent == -ENOENT || parent == -ENOTDIR || parent == -ELOOP)
                return 0;
        if (parent < 0)
                return parent;
        r = fstatat_no_xdev(parent, base, &st);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (ret_st)
                *ret_st = st;
        if (ret_parent) {
                *ret_parent = TAKE_FD(parent);
                *ret_base = base;
        }
        return 1;
}

int purge_in_source(const Job *job, const char *path) {
        _cleanup_close_ int src = -EBADF;
        _cleanup_free_ char *prefix = NULL;
        struct stat st;
        int r;

        if (!path_normalized(path))
                return -EINVAL;
        src = chase_dir(AT_FDCWD, job->source, &(Chase) { .flags = CHASE_NO_FUSE });
        if (src == -ENOENT)
                return 0;
        if (src < 0)
                return src;
        r = open_entry_parent(src, path, &st, NULL, NULL);
        if (r <= 0)
                return r;
        /* Excluded, or below an excluded directory: the next snapshot leaves it out. */
        prefix = strdup(path);
        if (!prefix)
                return -ENOMEM;
        for (char *slash = prefix;; slash++) {
                bool last;

                slash = strchr(slash, '/');
                last = !slash;
                if (slash)
                        *slash = '\0';
                if (exclude_match(job->exclude, prefix, last ? S_ISDIR(st.st_mode) : true))
                        return 0;
                if (last)
                        return 1;
                *slash = '/';
        }
}

/* The snapshots of store that hold path, oldest first: their number, *ret (NULL when none). */
static int find_holders(int store, const char *path, char ***ret) {
        char **names = NULL, **held = NULL;
        size_t n = 0, k = 0;
        int r;

        r = store_list(store, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int root = open_no_xdev(store, names[i], O_RDONLY | O_DIRECTORY);

                if (root == -ENOENT)
                        continue;
                r = root < 0 ? root : open_entry_parent(root, path, NULL, NULL, NULL);
                if (r > 0)
                        r = strv_push(&held, &k, names[i]);
                if (r < 0)
                        break;
        }
        strv_free(names);
        if (r < 0) {
                strv_free(held);
                return r;
        }
        *ret = held;
        return (int) k;
}

/* The manifests of these snapshots removed, synced: their next snapshot is full (purge.h). */
static int drop_manifests(int store, char **names) {
        _cleanup_close_ int dir = store_facts_dir(store, false);

        if (dir == -ENOENT)
                return 0;
        if (dir < 0)
                return dir;
        for (char **s = names; s && *s; s++) {
                char file[SNAPSHOT_NAME_MAX + sizeof(MANIFEST_SUFFIX)];

                snprintf(file, sizeof(file), "%s" MANIFEST_SUFFIX, *s);
                if (unlinkat(dir, file, 0) < 0 && errno != ENOENT)
                        return -errno;
        }
        return fsync(dir) < 0 ? -errno : 0;
}

/* The directory that held the entry gets its times back (its ctime moves, as it must). */
static void restore_times(int dir, const struct stat *st) {
        (void) futimens(dir, (const struct timespec[2]) { st->st_atim, st->st_mtim });
}

/*
 * A plain-directory snapshot: the entry renamed out of it in one step
 * into a hidden directory of the store, made 0700 first, then removed.
 * Never to the store's top: a store may be listable (smb_view), and the
 * entry would then lose the directories that closed it while it is
 * removed, or for good if the removal fails or is cut off.  1: purged,
 * 0: not there.
 */
static int purge_plain(int store, const char *snap, const char *path) {
        _cleanup_close_ int root = -EBADF, parent = -EBADF, trash_fd = -EBADF;
        char trash[sizeof(STORE_REMOVING_PREFIX "purged-") + SNAPSHOT_NAME_MAX];
        const char *base;
        struct stat st;
        int r;

        root = open_no_xdev(store, snap, O_RDONLY | O_DIRECTORY);
        if (root < 0)
                return root == -ENOENT ? 0 : root;
        r = open_entry_parent(root, path, NULL, &parent, &base);
        if (r <= 0)
                return r;
        if (fstat(parent, &st) < 0)
                return -errno;
        snprintf(trash, sizeof(trash), STORE_REMOVING_PREFIX "purged-%s", snap);
        r = rm_rf_at(store, trash);     /* what an interrupted run left */
        if (r < 0)
                return r;
        if (mkdirat(store, trash, 0700) < 0)
                return -errno;
        trash_fd = open_no_xdev(store, trash, O_RDONLY | O_DIRECTORY);
        if (trash_fd < 0)
                return trash_fd;
        if (renameat2(parent, base, trash_fd, "entry", RENAME_NOREPLACE) < 0) {
                if (errno != EXDEV)
                        return -errno;
                /* Not the store's filesystem or subvolume: removed where it is. */
                r = rm_rf_at(parent, base);
                if (r < 0)
                        return r;
        }
        restore_times(parent, &st);
        r = rm_rf_at(store, trash);
        return r < 0 ? r : 1;
}

/*
 * A snapshot that is a btrfs subvolume: never made writable.  A writable
 * snapshot of it, purged, made read-only, exchanged with it in one
 * rename; the old one destroyed.  1: purged, 0: not there.
 */
static int purge_subvol(int store, const char *snap, const char *path) {
        _cleanup_close_ int root = -EBADF, copy = -EBADF, parent = -EBADF;
        char hidden[sizeof(STORE_PURGING_PREFIX) + SNAPSHOT_NAME_MAX];
        const char *base;
        struct stat st;
        int r;

        root = open_no_xdev(store, snap, O_RDONLY | O_DIRECTORY);
        if (root < 0)
                return root == -ENOENT ? 0 : root;
        r = open_entry_parent(root, path, NULL, NULL, NULL);
        if (r <= 0)
                return r;
        snprintf(hidden, sizeof(hidden), STORE_PURGING_PREFIX "%s", snap);
        r = rm_rf_or_subvol_at(store, hidden, NULL);    /* what an interrupted run left */
        if (r < 0)
                return r;
        r = btrfs_subvol_snapshot(root, store, hidden, false);
        if (r < 0)
                return r;
        copy = open_no_xdev(store, hidden, O_RDONLY | O_DIRECTORY);
        r = copy < 0 ? copy : open_entry_parent(copy, path, NULL, &parent, &base);
        if (r == 0)
                r = -ESTALE;    /* in the snapshot, not in its copy */
        if (r > 0)
                r = fstat(parent, &st) < 0 ? -errno : 0;
        if (r >= 0)
                r = rm_rf_at(parent, base);
        if (r >= 0) {
                restore_times(parent, &st);
                r = btrfs_subvol_set_read_only(copy, true);
        }
        /* One step: the snapshot is the old one whole, or the purged one whole. */
        if (r >= 0 && renameat2(store, hidden, store, snap, RENAME_EXCHANGE) < 0)
                r = -errno;
        parent = safe_close(parent);
        copy = safe_close(copy);
        /* The purged copy that failed, or the old snapshot now hidden: destroyed (else by the next run). */
        (void) rm_rf_or_subvol_at(store, hidden, NULL);
        return r < 0 ? r : 1;
}

/* names (they held path): purged, with the intent around it.  How many were purged, or the first -errno. */
static int purge_names(int store, const char *job_name, const char *path, char **names, bool resumed,
                       const char *asked_by) {
        _cleanup_free_ char *escaped = cescape(path), *list = NULL;
        size_t done = 0, len = 0;
        FILE *l;
        int r, first = 0;

        if (!escaped)
                return -ENOMEM;
        if (!resumed) {
                r = store_write_purge_intent(store, path);
                if (r < 0)
                        return r;
        }
        r = drop_manifests(store, names);
        if (r < 0)
                return r;
        l = open_memstream(&list, &len);
        if (!l)
                return -ENOMEM;
        for (char **s = names; s && *s; s++) {
                r = btrfs_is_subvol_at(store, *s);
                if (r > 0)
                        r = purge_subvol(store, *s, path);
                else if (r == 0)
                        r = purge_plain(store, *s, path);
                else if (r == -ENOENT)
                        r = 0;  /* deleted meanwhile: nothing to purge */
                if (r < 0) {
                        log_event(LOG_ERR, MESSAGE_ID_PURGED, job_name,
                                  &(EventFields) { .snapshot = *s, .path = path, .error = r },
                                  "could not purge %s from snapshot %s (left for the next run): %s", escaped, *s,
                                  strerror(-r));
                        if (first == 0)
                                first = r;
                        continue;
                }
                if (r > 0)
                        fprintf(l, "%s%s", done++ > 0 ? " " : "", *s);
        }
        if (fclose(l) != 0)
                return -ENOMEM;
        /* On disk before the intent goes: a power cut after its removal finds every snapshot purged. */
        if (first == 0 && syncfs(store) < 0)
                first = -errno;
        if (first == 0)
                first = store_remove_purge_intent(store);
        if (done > 0)
                log_event(LOG_NOTICE, MESSAGE_ID_PURGED, job_name, &(EventFields) { .path = path },
                          "%s purged from %zu snapshot%s (%s)%s%s", escaped, done, done == 1 ? "" : "s",
                          list ? list : "", resumed ? ", finishing a purge that was interrupted" : ", asked by ",
                          resumed ? "" : asked_by ? asked_by : "root");
        return first < 0 ? first : (int) done;
}

int purge_resume_locked(int store, const char *job_name, FILE *log) {
        _cleanup_free_ char *path = NULL;
        char **names = NULL;
        int r;

        r = store_read_purge_intent(store, &path);
        if (r == -ENOENT)
                return 0;
        if (r >= 0 && !path_normalized(path))
                r = -EINVAL;
        if (r == -EINVAL || r == -EBADMSG) {
                if (log)
                        fprintf(log, "the store's purge intent names no path of a source: removed\n");
                (void) store_remove_purge_intent(store);
                return -EINVAL;
        }
        if (r < 0)
                return r;
        r = find_holders(store, path, &names);
        if (r == 0) {
                r = store_remove_purge_intent(store);
                return r < 0 ? r : 1;
        }
        if (r > 0)
                r = purge_names(store, job_name, path, names, true, NULL);
        strv_free(names);
        if (r < 0 && log)
                fprintf(log, "cannot finish the purge that was interrupted: %s\n", strerror(-r));
        return r < 0 ? r : 1;
}

int snapshot_purge(int store, const char *job_name, const char *path, bool dry_run, const char *asked_by,
                   char ***ret) {
        char **names = NULL;
        int r, n;

        if (!path_normalized(path))
                return -EINVAL;
        r = store_lock(store, false);
        if (r < 0)
                return r;
        if (!dry_run) {
                /* What an interrupted run left, and a purge that was interrupted, first. */
                (void) store_remove_leftovers_locked(store, NULL, NULL);
                r = purge_resume_locked(store, job_name, NULL);
                if (r < 0 && r != -EINVAL)
                        return r;
        }
        n = find_holders(store, path, &names);
        if (n < 0)
                return n;
        if (n == 0)
                return -ENOENT;
        r = dry_run ? n : purge_names(store, job_name, path, names, false, asked_by);
        if (r >= 0 && ret)
                *ret = TAKE_PTR(names);
        strv_free(names);
        return r < 0 ? r : n;
}
