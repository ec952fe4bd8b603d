/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl restore JOB SNAP [PATH]... [--to DIR] [--delete [--delete-excluded]]
 * [--dry-run] [--no-guard]: bring files, subtrees or the whole job back
 * from a snapshot, into the job's source or DIR, by reflink only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "exit-status.h"
#include "fd-util.h"
#include "mountpoint-util.h"
#include "macro.h"
#include "path-util.h"
#include "reflink.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "restore.h"
#include "snapshot.h"
#include "store.h"
#include "strv.h"

/* Explain a refusal of chase_dir() on target; failed is the prefix that failed. */
static void target_error(const char *target, int r, const Chase *c) {
        int len = (int) c->failed_len;

        if (r == -ELOOP)
                fprintf(stderr, "refsnapctl: %.*s: a symbolic link; restore never follows one (name the real directory)\n",
                        len, target);
        else if (r == -EPERM)
                fprintf(stderr, "refsnapctl: %s: %.*s is owned by or writable by a user other than root, "
                        "who could swap what is in it for another directory; not restoring there\n",
                        target, (int) c->unsafe_len, target);
        else
                fprintf(stderr, "refsnapctl: %s: %s\n", target, strerror(-r));
}

/*
 * Open the directory to restore into, target (absolute), making --to's
 * when it is not there.  No component is followed if it is a symbolic
 * link, and every directory above the target must be root's and not
 * writable by others (CHASE_SAFE): a user who could rename one of them
 * could otherwise put a directory of her choice where root writes and
 * deletes.  A dry run may name one that does not exist yet: then *ret is
 * -ENOENT.  Returns an exit status.
 */
static int open_target(const char *target, int *ret) {
        Chase c = { .flags = CHASE_SAFE | (arg_to && !arg_dry_run ? CHASE_MKDIR : 0) };
        int fd;

        fd = chase_dir(AT_FDCWD, target, &c);
        if (fd < 0 && !(arg_dry_run && fd == -ENOENT)) {
                target_error(target, fd, &c);
                /* A refusal for safety (-EPERM from CHASE_SAFE) is not a lack of privilege. */
                return fd == -EPERM ? EXIT_FAILED : exit_status_from_errno(fd);
        }
        *ret = fd;
        return EXIT_OK;
}

/*
 * Before a restore into the job's source replaces anything: a snapshot of
 * the job as it is now, marked as a guard, so that restoring the wrong
 * snapshot can itself be undone.  Taken before the restore locks the
 * store (a snapshot locks it itself), waiting for a snapshot of the
 * daemon's to end.  Returns an exit status.
 */
static int take_guard(const Job *job, int store) {
        SnapshotPre opts = { .guard = true };
        char name[SNAPSHOT_NAME_MAX];
        SnapshotFacts f;
        int r;

        for (;;) {
                r = snapshot_take(job, NULL, NULL, stderr, &opts, name, &f);
                if (r != -EBUSY)
                        break;
                fprintf(stderr, "refsnapctl: %s: waiting for the running snapshot to end\n", job->name);
                r = store_lock(store, true);
                if (r >= 0)
                        r = flock(store, LOCK_UN) < 0 ? -errno : 0;
                if (r < 0)
                        break;
        }
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: cannot take the guard snapshot (%s); nothing restored "
                        "(--no-guard restores without one)\n", job->name, strerror(-r));
                return EXIT_FAILED;
        }
        printf("guard snapshot %s%s of what the restore replaces: \"refsnapctl restore %s %s\" undoes it\n", name,
               f.skipped ? " (partial)" : "", job->name, name);
        return EXIT_OK;
}

/*
 * What a restore that changes things needs: reflinkat(2), for it never
 * copies, and the store's lock, so that no snapshot of the job is taken
 * while its tree is being restored.  Returns an exit status.
 */
static int prepare_restore(const Job *job, int store) {
        int r;

        r = store_lock(store, false);
        if (r == -EBUSY) {
                fprintf(stderr, "refsnapctl: %s: waiting for the running snapshot to end\n", job->name);
                r = store_lock(store, true);
        }
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: cannot lock the store: %s\n", job->name, strerror(-r));
                return EXIT_FAILED;
        }
        /* A staging directory an interrupted restore left, among others. */
        (void) store_remove_leftovers_locked(store, NULL, NULL);
        return EXIT_OK;
}

/*
 * Restore path ("" for the whole job) of snapshot snap (called name) into
 * live.  Returns an exit status.
 */
static int restore_path(Restore *o, const Job *job, const char *name, int snap, int live, int store,
                        const char *path) {
        _cleanup_free_ char *rel = NULL;
        int r;

        if (job_relative(job, path, &rel) < 0)
                return EXIT_USAGE;
        if (live < 0) {
                /* Dry run into a directory that does not exist yet: all of it is new. */
                printf("+ %s/\n", *rel ? rel : ".");
                return EXIT_OK;
        }
        r = restore_run(o, snap, live, store, rel);
        if (r == -ENOENT && o->stats.failed == 0)
                return EXIT_NOT_FOUND;
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: restore of %s from %s: not all %srestored (said above): %s\n",
                        job->name, *rel ? rel : "the job", name, arg_dry_run ? "would be " : "", strerror(-r));
                /* A refusal for safety is not a lack of privilege. */
                return r == -EPERM ? EXIT_FAILED : exit_status_from_errno(r);
        }
        return EXIT_OK;
}

/* Is PATH under the job's source, and in the snapshot?  Returns an exit status. */
static int check_path(const Job *job, int snap, const char *path) {
        _cleanup_free_ char *rel = NULL;
        _cleanup_close_ int dir = -EBADF;

        if (job_relative(job, path, &rel) < 0)
                return EXIT_USAGE;
        if (!*rel)
                return EXIT_OK;
        dir = restore_find(snap, rel, NULL, NULL, stderr);
        if (dir == -ENOENT)
                return EXIT_NOT_FOUND;
        if (dir < 0) {
                /* As restore_path() would fail on it, before any guard snapshot. */
                fprintf(stderr, "%s: not in the snapshot\n", rel);
                return EXIT_NOT_FOUND;
        }
        return EXIT_OK;
}

/*
 * Entries are staged in the store and renamed into the target: both must
 * be on one mount, which is said now rather than after the staging; on
 * a btrfs subvolume other than the store's they are staged in the target
 * instead, which only a target no user but root can change allows.  Said
 * by the dry run too, and before any guard snapshot.  Returns an exit
 * status.
 */
static int same_mount(const Job *job, int store, int live, const char *target) {
        const char *why;
        uint64_t a, b;

        if (live < 0)
                return EXIT_OK;         /* a dry run into a directory not made yet */
        if (fd_mount_id(store, &a) >= 0 && fd_mount_id(live, &b) >= 0 && a != b) {
                fprintf(stderr, "refsnapctl: %s is not on the mount of %s's store %s: a restore stages its entries "
                        "there and renames them into place, and reflinks do not cross mounts\n", target, job->name,
                        job->store);
                return EXIT_FAILED;
        }
        why = restore_stage_refusal(store, live);
        if (why) {
                if (arg_dry_run)
                        printf("! %s: %s\n", target, why);
                fprintf(stderr, "refsnapctl: %s: %s\n", target, why);
                return EXIT_FAILED;
        }
        return EXIT_OK;
}

/*
 * The snapshot opened before the store's lock was taken may have been
 * pruned while the restore waited for it: restoring an emptied tree with
 * --delete would empty the live one.  Still the store's NAME, and not
 * removed?  Returns an exit status.
 */
static int snapshot_still_there(const Job *job, int store, int snap, const char *name) {
        struct stat a, b;

        if (fstat(snap, &a) == 0 && a.st_nlink > 0 && fstatat(store, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
            stat_inode_same(&a, &b))
                return EXIT_OK;
        fprintf(stderr, "refsnapctl: %s: snapshot %s went away while the restore waited for the store (pruned?); "
                "nothing restored\n", job->name, name);
        return EXIT_FAILED;
}

static void print_summary(const Restore *o, const char *name, const char *target) {
        if (arg_dry_run)
                printf("%llu to restore, %llu to delete, %llu left alone (dry run, nothing changed)\n",
                       (unsigned long long) o->stats.replaced, (unsigned long long) o->stats.deleted,
                       (unsigned long long) o->stats.kept);
        else
                printf("restored from %s into %s: %llu entries replaced, %llu directories updated, %llu deleted, "
                       "%llu left alone%s\n",
                       name, target, (unsigned long long) o->stats.replaced,
                       (unsigned long long) o->stats.dirs, (unsigned long long) o->stats.deleted,
                       (unsigned long long) o->stats.kept, o->stats.failed > 0 ? ", some not restored (said above)" : "");
}

/*
 * What --delete leaves alone: the job's exclude patterns (unless
 * --delete-excluded) and the files the snapshot skipped (a partial one);
 * said once, so the dry run and the restore say which.  Returns an exit
 * status.
 */
static int delete_rules(Restore *o, const Job *job, int store, const char *name, char ***skipped) {
        int r;

        if (arg_delete_excluded && !arg_delete) {
                fprintf(stderr, "refsnapctl: --delete-excluded goes with --delete\n");
                return EXIT_USAGE;
        }
        if (!arg_delete)
                return EXIT_OK;
        r = store_read_skipped(store, name, skipped);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: cannot read what snapshot %s skipped: %s; not deleting\n",
                        job->name, name, strerror(-r));
                return EXIT_FAILED;
        }
        o->keep = *skipped;
        o->exclude = arg_delete_excluded ? NULL : job->exclude;
        if (job->n_exclude > 0)
                printf("--delete: %s what the job excludes (%zu pattern%s)%s\n",
                       arg_delete_excluded ? "removes" : "leaves alone", job->n_exclude,
                       job->n_exclude == 1 ? "" : "s",
                       arg_delete_excluded ? " (--delete-excluded)" : "; --delete-excluded removes it too");
        if (*skipped)
                printf("--delete: leaves alone what snapshot %s skipped (refsnapctl list says it is partial)\n",
                       name);
        return EXIT_OK;
}

int verb_restore(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int store = -EBADF, snap = -EBADF, live = -EBADF;
        _cleanup_free_ char *to = NULL;
        char **skipped = NULL;
        char name[SNAPSHOT_NAME_MAX];
        Restore o = { .delete = arg_delete, .dry_run = arg_dry_run, .out = stdout, .log = stderr };
        const char *target;
        struct stat st;
        const Job *job;
        int r;

        if (argc < 3) {
                fprintf(stderr, "refsnapctl: usage: restore JOB SNAP [PATH...] [--to DIR] [--delete] [--dry-run]\n");
                return EXIT_USAGE;
        }
        r = open_job_snapshot(&c, argv[1], argv[2], &job, &store, &snap, name);
        if (r != EXIT_OK)
                return r;
        if (strcmp(argv[2], "latest") == 0)
                printf("restoring from %s, the newest snapshot of %s that is not a guard\n", name, job->name);
        /* The store, should it lie inside the tree, is left alone. */
        if (fstat(store, &st) == 0)
                o.skip = file_id(&st);
        if (arg_to && arg_to[0] != '/') {
                _cleanup_free_ char *cwd = getcwd(NULL, 0);

                to = cwd ? path_join(cwd, arg_to) : NULL;
                if (!to)
                        return exit_status_from_errno(-ENOMEM);
        }
        target = to ? to : arg_to ? arg_to : job->source;
        r = open_target(target, &live);
        if (r != EXIT_OK)
                return r;
        r = delete_rules(&o, job, store, name, &skipped);
        if (r != EXIT_OK)
                return r;
        /* Every PATH first, so that a mistyped one costs no guard snapshot. */
        for (int i = 3; i < argc; i++) {
                r = check_path(job, snap, argv[i]);
                if (r != EXIT_OK)
                        return r;
        }
        /* What cannot be restored at all is said before any guard snapshot. */
        r = same_mount(job, store, live, target);
        if (r != EXIT_OK)
                return r;
        if (!arg_dry_run && !arg_to && !arg_no_guard) {
                r = take_guard(job, store);
                if (r != EXIT_OK)
                        return r;
        }
        if (!arg_dry_run) {
                r = prepare_restore(job, store);
                if (r == EXIT_OK)
                        r = snapshot_still_there(job, store, snap, name);
                if (r != EXIT_OK)
                        return r;
        }
        /* Every PATH, whatever one of them did: the first failure's status. */
        if (argc == 3)
                r = restore_path(&o, job, name, snap, live, store, "");
        else
                for (int i = 3; i < argc; i++) {
                        int k = restore_path(&o, job, name, snap, live, store, argv[i]);

                        if (r == EXIT_OK)
                                r = k;
                }
        strv_free(skipped);
        print_summary(&o, name, target);
        return r;
}
