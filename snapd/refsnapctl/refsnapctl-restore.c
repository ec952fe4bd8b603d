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
#include "dirent-util.h"
#include "escape.h"
#include "exit-status.h"
#include "fd-util.h"
#include "json-util.h"
#include "mountpoint-util.h"
#include "log-event.h"
#include "macro.h"
#include "path-util.h"
#include "reflink.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "restore.h"
#include "snapshot.h"
#include "store.h"
#include "strv.h"

/* Where what the restore says beside its entries goes: stdout, or stderr under --json (stdout is the JSON). */
static FILE *info(void) {
        return arg_json ? stderr : stdout;
}

/* Explain a refusal of chase_dir() on target; failed is the prefix that failed. */
static void target_error(const char *target, int r, const Chase *c) {
        int len = (int) c->failed_len;

        if (r == -ELOOP)
                fprintf(stderr, "refsnapctl: %.*s: a symbolic link; restore never follows one (name the real directory)\n",
                        len, target);
        else if (r == -EREMOTE)
                fprintf(stderr, "refsnapctl: %.*s: a fuse mount; not restoring there\n", len, target);
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
        Chase c = { .flags = CHASE_SAFE | CHASE_NO_FUSE | (arg_to && !arg_dry_run ? CHASE_MKDIR : 0) };
        _cleanup_free_ char *where = NULL, *type = NULL;
        int fd;

        /* A user's FUSE mount over it is never asked anything (its server may never answer). */
        fd = path_under_fuse(NULL, target, &where, &type);
        if (fd < 0) {
                fprintf(stderr, "refsnapctl: %s: cannot tell whether a fuse mount covers it (%s); not restoring "
                        "there\n", target, strerror(-fd));
                return EXIT_FAILED;
        }
        if (fd > 0) {
                fprintf(stderr, "refsnapctl: %s is covered by a fuse mount (%s on %s); not restoring there\n",
                        target, type, where);
                return EXIT_FAILED;
        }
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
static int take_guard(const Job *job, int store, char *const *paths) {
        SnapshotPre opts = { .guard = true, .paths = paths };
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
        fprintf(info(), "guard snapshot %s%s of what the restore replaces%s: \"refsnapctl restore %s %s\" undoes it\n", name,
               f.skipped ? " (partial)" : "", paths ? " (those paths only)" : "", job->name, name);
        return EXIT_OK;
}

static void strv_freep(char ***l) {
        strv_free(*l);
}

/*
 * The --to target as an absolute, normalized path (relative: to the
 * working directory), the one name every check, the open and every
 * message use: a name the checks read one way (a string) and the open
 * another ("//", ".") could slip past them.  A name with ".." is refused.
 * Returns an exit status.
 */
static int to_normalized(const char *to, char **ret) {
        _cleanup_free_ char *cwd = NULL, *joined = NULL, *rel = NULL;
        const char *abs = to;
        int r;

        if (to[0] != '/') {
                cwd = getcwd(NULL, 0);
                if (!cwd)
                        return exit_status_from_errno(-errno);
                joined = path_join(cwd, to);
                if (!joined)
                        return exit_status_from_errno(-ENOMEM);
                abs = joined;
        }
        r = path_normalize_relative(abs + 1, &rel);
        if (r == -EINVAL) {
                fprintf(stderr, "refsnapctl: --to %s names ..: name the directory itself\n", to);
                return EXIT_USAGE;
        }
        if (r < 0 || asprintf(ret, "/%s", rel) < 0)
                return exit_status_from_errno(r < 0 ? r : -ENOMEM);
        return EXIT_OK;
}

/*
 * The job whose source holds the directory live, named target (absolute,
 * normalized): the one with the longest source that is a prefix of
 * target, if live is reached beneath that source without crossing a
 * mount (its guard never crosses one, so could not hold what is there);
 * else NULL.
 */
static const Job *job_holding(const Config *c, const char *target, int live) {
        _cleanup_close_ int src = -EBADF, dir = -EBADF;
        const Job *best = NULL;
        const char *rel;
        struct stat a, b;

        for (size_t i = 0; i < c->n_jobs; i++)
                if (path_startswith(target, c->jobs[i]->source) &&
                    (!best || strlen(c->jobs[i]->source) > strlen(best->source)))
                        best = c->jobs[i];
        if (!best || path_under_fuse(NULL, best->source, NULL, NULL) != 0)
                return NULL;
        rel = path_startswith(target, best->source);
        rel += *rel == '/';
        src = chase_dir(AT_FDCWD, best->source, &(Chase) { .flags = CHASE_NO_FUSE });
        if (src < 0)
                return NULL;
        dir = chase_dir(src, rel, &(Chase) { .flags = CHASE_NO_XDEV });
        if (dir < 0 || fstat(dir, &a) < 0 || fstat(live, &b) < 0 || !stat_inode_same(&a, &b))
                return NULL;
        return best;
}

/*
 * A --to target that already holds something is guarded too: by a guard
 * snapshot of the job whose source holds it (*ret_guard).  Outside every
 * job's source nothing can guard it, so --delete into it needs
 * --no-guard; without --delete, entries the snapshot has still replace
 * their namesakes there, which is said.  Said by the dry run too.
 * Returns an exit status.
 */
static int to_guard(const Config *c, int live, const char *target, const char *shown, const Job **ret_guard) {
        char **names = NULL;
        size_t n = 0;
        int r;

        *ret_guard = NULL;
        if (live < 0)
                return EXIT_OK;         /* a dry run into a directory not made yet */
        r = dir_names_sorted(live, &names, &n);
        strv_free(names);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: %s: %s\n", shown, strerror(-r));
                return exit_status_from_errno(r);
        }
        if (n == 0)
                return EXIT_OK;         /* empty: nothing to replace */
        *ret_guard = job_holding(c, target, live);
        if (*ret_guard) {
                if (arg_dry_run && !arg_no_guard)
                        fprintf(info(), "%s is not empty: a guard snapshot of job %s, whose source holds it, is "
                                "taken first\n", shown, (*ret_guard)->name);
                return EXIT_OK;
        }
        if (arg_no_guard)
                return EXIT_OK;
        /*
         * Another job's source below it: what the restore writes there is
         * that job's, and no guard is taken of it.
         */
        for (size_t i = 0; i < c->n_jobs; i++) {
                const char *below = path_startswith(c->jobs[i]->source, target);

                if (!below || !*below)
                        continue;
                if (arg_dry_run && !arg_json)
                        printf("! %s: not empty, in no job's source, and holds the source of job %s: no guard "
                               "would keep what the restore replaces there (--no-guard restores without one)\n",
                               shown, c->jobs[i]->name);
                fprintf(stderr, "refsnapctl: %s is not empty, lies in no job's source and holds the source of job "
                        "%s (%s), whose files the restore may replace with no guard snapshot to keep them; "
                        "nothing restored (--no-guard restores without one)\n", shown, c->jobs[i]->name,
                        c->jobs[i]->source);
                return EXIT_FAILED;
        }
        if (arg_delete) {
                if (arg_dry_run && !arg_json)
                        printf("! %s: not empty, and in no job's source: nothing could guard what --delete "
                               "removes there (--no-guard restores without a guard)\n", shown);
                fprintf(stderr, "refsnapctl: %s is not empty and lies in no job's source, so no guard snapshot "
                        "can keep what --delete would remove there; nothing restored (--no-guard restores "
                        "without one)\n", shown);
                return EXIT_FAILED;
        }
        fprintf(stderr, "refsnapctl: note: %s is not empty and lies in no job's source: what the snapshot has "
                "replaces its namesakes there without a guard snapshot\n", shown);
        return EXIT_OK;
}

/*
 * What the guard of a restore of rels (n of them; none: the whole tree)
 * into target holds, as paths of guard's source: those paths only (a
 * guard protects what is replaced, not the whole job), or the whole tree
 * (*ret NULL).  Returns an exit status.
 */
static int guard_paths(const Job *guard, const char *target, char *const *rels, size_t n, char ***ret) {
        const char *base = "";
        char **l = NULL;
        size_t k = 0;

        *ret = NULL;
        if (arg_to) {
                base = path_startswith(target, guard->source);
                if (!base)
                        return EXIT_OK;         /* cannot happen (job_holding() said so): all of it */
                base += *base == '/';
        }
        if (n == 0 && !*base)
                return EXIT_OK;
        for (size_t i = 0; i < (n ? n : 1); i++) {
                _cleanup_free_ char *p = NULL;

                p = n == 0 ? strdup(base) : *base ? path_join(base, rels[i]) : strdup(rels[i]);
                if (!p || strv_push(&l, &k, p) < 0) {
                        strv_free(l);
                        return exit_status_from_errno(-ENOMEM);
                }
        }
        *ret = l;
        return EXIT_OK;
}

/*
 * A guard of some paths only holds nothing else: restored as a whole, it
 * restores those paths (never the empty rest, which --delete would empty
 * the live tree by), and a PATH outside them is refused.  *rels (n of
 * them) is what is restored.  Returns an exit status.
 */
static int guard_scope(int store, const char *name, char ***rels, size_t *n) {
        _cleanup_(strv_freep) char **g = NULL;
        SnapshotFacts f;
        size_t k = 0;
        int r;

        r = store_read_facts(store, name, &f);
        if (r < 0 && r != -ENOENT) {
                fprintf(stderr, "refsnapctl: snapshot %s: cannot read its facts (%s), so cannot tell whether it "
                        "is a guard of some paths only; not restoring from it\n", name, strerror(-r));
                return EXIT_FAILED;
        }
        if (r == -ENOENT)
                f = (SnapshotFacts) {};         /* older than facts, or they were lost: the list decides */
        r = store_read_guarded(store, name, &g);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: snapshot %s: cannot read what it guards: %s\n", name, strerror(-r));
                return EXIT_FAILED;
        }
        if (r == 0 && f.guard && f.paths) {
                fprintf(stderr, "refsnapctl: snapshot %s is a guard of some paths only, but the list of them is "
                        "missing (.facts/%s" STORE_GUARDED_SUFFIX "); not restoring it as the whole job\n", name,
                        name);
                return EXIT_FAILED;
        }
        if (r == 0)
                return EXIT_OK;         /* not a guard of some paths */
        while (g && g[k])
                k++;
        if (k == 0) {
                fprintf(stderr, "refsnapctl: snapshot %s is a guard of paths that were not there: nothing to "
                        "restore from it\n", name);
                return EXIT_NOT_FOUND;
        }
        if (*n == 0) {
                fprintf(info(), "snapshot %s is a guard of %zu path%s only: restoring %s\n", name, k, k == 1 ? "" : "s",
                       k == 1 ? "it" : "those");
                *rels = TAKE_PTR(g);
                *n = k;
                return EXIT_OK;
        }
        for (size_t i = 0; i < *n; i++) {
                bool in = false;

                for (size_t j = 0; j < k && !in; j++)
                        in = path_startswith((*rels)[i], g[j]) != NULL;
                if (!in) {
                        fprintf(stderr, "refsnapctl: snapshot %s is a guard of some paths only, and %s is not "
                                "one of them nor below one\n", name, (*rels)[i]);
                        return EXIT_NOT_FOUND;
                }
        }
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
                restore_print_entry(o, '+', *rel ? rel : ".", true, NULL);
                o->stats.replaced++;
                return EXIT_OK;
        }
        /* Facts of today's format that count no link within the snapshot: no hard link table. */
        {
                SnapshotFacts f = {};

                o->no_links = store_read_facts(store, name, &f) == 0 && f.kind_known && f.hardlinks == 0;
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
static int same_mount(const Job *job, int store, int live, const char *shown) {
        const char *why;
        uint64_t a, b;

        if (live < 0)
                return EXIT_OK;         /* a dry run into a directory not made yet */
        if (fd_mount_id(store, &a) >= 0 && fd_mount_id(live, &b) >= 0 && a != b) {
                fprintf(stderr, "refsnapctl: %s is not on the mount of %s's store %s: a restore stages its entries "
                        "there and renames them into place, and reflinks do not cross mounts\n", shown, job->name,
                        job->store);
                return EXIT_FAILED;
        }
        why = restore_stage_refusal(store, live);
        if (why) {
                if (arg_dry_run && !arg_json)
                        printf("! %s: %s\n", shown, why);
                fprintf(stderr, "refsnapctl: %s: %s\n", shown, why);
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

static void print_summary(const Restore *o, const char *name, const char *shown) {
        if (!arg_legend)
                return;
        if (arg_dry_run)
                fprintf(info(), "%llu to restore, %llu to delete, %llu left alone (dry run, nothing changed)\n",
                       (unsigned long long) o->stats.replaced, (unsigned long long) o->stats.deleted,
                       (unsigned long long) o->stats.kept);
        else
                printf("restored from %s into %s: %llu entries replaced, %llu directories updated, %llu deleted, "
                       "%llu left alone%s\n",
                       name, shown, (unsigned long long) o->stats.replaced,
                       (unsigned long long) o->stats.dirs, (unsigned long long) o->stats.deleted,
                       (unsigned long long) o->stats.kept, o->stats.failed > 0 ? ", some not restored (said above)" : "");
}

/*
 * restore --dry-run --json: {"job", "snapshot", "target", "delete",
 * "entries": [{"change", "path", "dir", "why"}], "restore", "remove",
 * "kept", "refused"} (the counts of the text's summary line).
 */
static void print_json(const Restore *o, const Job *job, const char *name, const char *target, FILE *f,
                       char **entries) {
        bool first = true;

        fflush(f);
        printf("{\"job\":");
        json_string(stdout, job->name);
        printf(",\"snapshot\":");
        json_string(stdout, name);
        printf(",\"target\":");
        json_string(stdout, target);
        printf(",\"delete\":%s,\"entries\":[", arg_delete ? "true" : "false");
        for (const char *p = *entries ? *entries : ""; *p;) {
                size_t len = strcspn(p, "\n");

                if (len > 0) {
                        printf("%s%.*s", first ? "" : ",", (int) len, p);
                        first = false;
                }
                p += len + (p[len] == '\n');
        }
        printf("],\"restore\":%llu,\"remove\":%llu,\"kept\":%llu,\"refused\":%llu}\n",
               (unsigned long long) o->stats.replaced, (unsigned long long) o->stats.deleted,
               (unsigned long long) o->stats.kept, (unsigned long long) o->stats.failed);
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
                fprintf(info(), "--delete: %s what the job excludes (%zu pattern%s)%s\n",
                       arg_delete_excluded ? "removes" : "leaves alone", job->n_exclude,
                       job->n_exclude == 1 ? "" : "s",
                       arg_delete_excluded ? " (--delete-excluded)" : "; --delete-excluded removes it too");
        if (*skipped)
                fprintf(info(), "--delete: leaves alone what snapshot %s skipped (refsnapctl list says it is partial)\n",
                       name);
        return EXIT_OK;
}

int verb_restore(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int store = -EBADF, snap = -EBADF, live = -EBADF, guard_store = -EBADF;
        _cleanup_free_ char *to = NULL, *shown = NULL, *entries = NULL;
        _cleanup_fclose_ FILE *entries_f = NULL;
        size_t entries_size = 0;
        char **skipped = NULL;
        char name[SNAPSHOT_NAME_MAX];
        Restore o = { .delete = arg_delete, .dry_run = arg_dry_run, .out = stdout, .log = stderr };
        const char *target;
        struct stat st;
        _cleanup_(strv_freep) char **rels = NULL, **gpaths = NULL;
        size_t n_rels = 0;
        const Job *job, *guard;
        int r;

        /* Any user's, through refsnapd, as her: refsnapctl-self.c. */
        if (arg_mine)
                return restore_mine(argc, argv);
        if (argc < 3) {
                fprintf(stderr, "refsnapctl: usage: restore JOB SNAP [PATH...] [--to DIR] [--delete] [--dry-run]\n");
                return EXIT_USAGE;
        }
        if (arg_json && !arg_dry_run) {
                fprintf(stderr, "refsnapctl: restore: --json goes with --dry-run\n");
                return EXIT_USAGE;
        }
        if (arg_json) {
                /* The entries, one JSON object a line, gathered into one array at the end. */
                entries_f = open_memstream(&entries, &entries_size);
                if (!entries_f)
                        return exit_status_from_errno(-ENOMEM);
                o.out = entries_f;
                o.json = true;
        }
        r = open_job_snapshot(&c, argv[1], argv[2], &job, &store, &snap, name);
        if (r != EXIT_OK)
                return r;
        if (strcmp(argv[2], "latest") == 0)
                fprintf(info(), "restoring from %s, the newest snapshot of %s that is not a guard\n", name,
                        job->name);
        /*
         * The PATHs, relative to the source; the source itself is the
         * whole job, and a PATH at or below another is that one (each
         * restored, and guarded, once).
         */
        for (int i = 3; i < argc; i++) {
                _cleanup_free_ char *rel = NULL;

                if (job_relative(job, argv[i], &rel) < 0)
                        return EXIT_USAGE;
                if (strv_push(&rels, &n_rels, rel) < 0)
                        return exit_status_from_errno(-ENOMEM);
        }
        for (size_t i = 0; i < n_rels; i++)
                if (!*rels[i]) {
                        strv_free(TAKE_PTR(rels));
                        n_rels = 0;
                        break;
                }
        for (size_t i = 0; i < n_rels;) {
                bool covered = false;

                for (size_t j = 0; j < n_rels && !covered; j++)
                        covered = j != i && path_startswith(rels[i], rels[j]) &&
                                  (strcmp(rels[i], rels[j]) != 0 || j < i);
                if (!covered) {
                        i++;
                        continue;
                }
                free(rels[i]);
                memmove(rels + i, rels + i + 1, (n_rels - i) * sizeof(*rels));
                n_rels--;
        }
        r = guard_scope(store, name, &rels, &n_rels);
        if (r != EXIT_OK)
                return r;
        /* The store, should it lie inside the tree, is left alone. */
        if (fstat(store, &st) == 0)
                o.skip = file_id(&st);
        if (arg_to) {
                r = to_normalized(arg_to, &to);
                if (r != EXIT_OK)
                        return r;
        }
        target = to ? to : job->source;
        shown = cescape(target);
        if (!shown)
                return exit_status_from_errno(-ENOMEM);
        r = open_target(target, &live);
        if (r != EXIT_OK)
                return r;
        /* Into the job's source, the job is guarded; into --to, the job whose source holds it. */
        guard = job;
        if (arg_to) {
                r = to_guard(c, live, target, shown, &guard);
                if (r != EXIT_OK)
                        return r;
        }
        r = delete_rules(&o, job, store, name, &skipped);
        if (r != EXIT_OK)
                return r;
        /* Every PATH first, so that a mistyped one costs no guard snapshot. */
        for (size_t i = 0; i < n_rels; i++) {
                r = check_path(job, snap, rels[i]);
                if (r != EXIT_OK)
                        return r;
        }
        /* What cannot be restored at all is said before any guard snapshot. */
        r = same_mount(job, store, live, shown);
        if (r != EXIT_OK)
                return r;
        if (!arg_dry_run && guard && !arg_no_guard) {
                /* Only to wait on its lock: the snapshot opens (and makes) the store itself. */
                if (guard != job)
                        guard_store = store_open(guard->store, false);
                r = guard_paths(guard, target, rels, n_rels, &gpaths);
                if (r == EXIT_OK)
                        r = take_guard(guard, guard == job ? store : guard_store, gpaths);
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
        if (n_rels == 0)
                r = restore_path(&o, job, name, snap, live, store, "");
        else
                for (size_t i = 0; i < n_rels; i++) {
                        int k = restore_path(&o, job, name, snap, live, store, rels[i]);

                        if (r == EXIT_OK)
                                r = k;
                }
        strv_free(skipped);
        if (arg_json)
                print_json(&o, job, name, target, entries_f, &entries);
        print_summary(&o, name, shown);
        if (!arg_dry_run) {
                _cleanup_free_ char *esc = cescape(target);

                log_event(r == EXIT_OK ? LOG_INFO : LOG_WARNING, MESSAGE_ID_RESTORED, job->name,
                          &(EventFields) { .snapshot = name, .has_counts = true, .files = o.stats.replaced },
                          "restored from snapshot %s into %s: %llu entries replaced, %llu deleted%s",
                          name, esc ? esc : "(out of memory)", (unsigned long long) o.stats.replaced,
                          (unsigned long long) o.stats.deleted,
                          r == EXIT_OK ? "" : ", some not restored");
        }
        return r;
}
