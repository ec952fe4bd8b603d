/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl diff JOB SNAP [SNAP|live] [PATH]: what was added, removed or
 * changed from snapshot SNAP to another or to the live tree, in all of
 * the job or beneath PATH.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "chase.h"
#include "escape.h"
#include "exit-status.h"
#include "fd-util.h"
#include "json-util.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "restore.h"
#include "tree-diff.h"

typedef struct DiffOut {
        bool first;
        uint64_t count;
} DiffOut;

static int print_diff(DiffKind kind, const char *path, const struct stat *a, const struct stat *b,
                      void *userdata) {
        static const char *const names[] = {
                [DIFF_ADDED] = "added", [DIFF_REMOVED] = "removed", [DIFF_CHANGED] = "changed",
        };
        const struct stat *st = b ? b : a;
        bool dir = S_ISDIR(st->st_mode);
        DiffOut *o = userdata;

        if (arg_json) {
                printf("%s{\"change\":\"%s\",\"path\":", o->first ? "" : ",", names[kind]);
                json_string(stdout, path);
                printf(",\"type\":\"%s\"}", dir ? "directory" : S_ISLNK(st->st_mode) ? "symlink" : "file");
        } else {
                /* Any name, one line, nothing a terminal would act on (cescape). */
                printf("%c ", diff_mark(kind));
                fputs_cescaped(path, stdout);
                printf("%s\n", dir ? "/" : "");
        }
        o->first = false;
        o->count++;
        return 0;
}

/*
 * The optional arguments after JOB SNAP: the other tree ("live" unless
 * given) and the path (NULL unless given).  With one, a snapshot name,
 * "latest" or "live" is the other tree, anything else the path.
 */
static void parse_diff_args(int argc, char *argv[], const char **ret_other, const char **ret_path) {
        *ret_other = "live";
        *ret_path = NULL;
        if (argc == 5) {
                *ret_other = argv[3];
                *ret_path = argv[4];
        } else if (argc == 4) {
                if (strcmp(argv[3], "live") == 0 || strcmp(argv[3], "latest") == 0 ||
                    snapshot_name_valid(argv[3]))
                        *ret_other = argv[3];
                else
                        *ret_path = argv[3];
        }
}

/*
 * Open the tree to compare with: the job's source for "live" (then the
 * store, should it lie inside, is skipped), else a snapshot of the
 * store.  Returns an exit status.
 */
static int open_other(const Job *job, int store, const char *other, TreeDiff *d, int *ret) {
        char name[SNAPSHOT_NAME_MAX];
        struct stat st;
        int fd;

        if (strcmp(other, "live") == 0) {
                _cleanup_free_ char *where = NULL, *type = NULL;

                /* A user's FUSE mount over it is never asked anything (its server may never answer). */
                if (path_under_fuse(NULL, job->source, &where, &type) > 0) {
                        fprintf(stderr, "refsnapctl: source %s is covered by a fuse mount (%s on %s); not entering "
                                "it\n", job->source, type, where);
                        return EXIT_FAILED;
                }
                /* Through the one resolver, as a snapshot opens it: no symbolic link at any component. */
                fd = chase_dir(AT_FDCWD, job->source, &(Chase) { .flags = CHASE_NO_FUSE });
                if (fd < 0) {
                        fprintf(stderr, "refsnapctl: source %s: %s\n", job->source,
                                fd == -ELOOP ? "a symbolic link in the path (name the source canonically)" :
                                fd == -EREMOTE ? "a fuse mount on the way; not entering it" :
                                strerror(-fd));
                        return exit_status_from_errno(fd);
                }
                if (fstat(store, &st) == 0)
                        d->skip = file_id(&st);
        } else {
                fd = open_snapshot(job, store, other, name);
                if (fd < 0)
                        return exit_status_from_snapshot_errno(fd);
        }
        *ret = fd;
        return EXIT_OK;
}

/*
 * For a diff beneath rel (not ""): the directories holding it in trees a
 * and b, and its last component.  Returns an exit status.
 */
static int open_parents(int a, int b, const char *rel, const char *other, int *ret_a_dir, int *ret_b_dir,
                        const char **ret_base) {
        _cleanup_free_ char *dir = NULL;

        if (path_split(rel, &dir, ret_base) < 0)
                return EXIT_FAILED;
        *ret_a_dir = chase_dir(a, dir, &(Chase) { .flags = CHASE_NO_XDEV });
        *ret_b_dir = chase_dir(b, dir, &(Chase) { .flags = CHASE_NO_XDEV });
        if (*ret_a_dir < 0 && *ret_b_dir < 0) {
                fprintf(stderr, "refsnapctl: %s: in neither tree\n", rel);
                return EXIT_FAILED;
        }
        if (*ret_b_dir < 0) {
                /* Only in a: compare it with nothing, the other way round. */
                fprintf(stderr, "refsnapctl: %s: not in %s\n", rel, other);
                return EXIT_FAILED;
        }
        return EXIT_OK;
}

int verb_diff(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int store = -EBADF, a = -EBADF, b = -EBADF, a_dir = -EBADF, b_dir = -EBADF;
        _cleanup_free_ char *rel = NULL;
        char an[SNAPSHOT_NAME_MAX];
        const char *other, *path, *base = NULL;
        DiffOut out = { .first = true };
        TreeDiff d = { .fn = print_diff, .userdata = &out, .report_dirs = true };
        const Job *job;
        int r;

        if (argc < 3 || argc > 5) {
                fprintf(stderr, "refsnapctl: usage: diff JOB SNAP [SNAP|live] [PATH]\n");
                return EXIT_USAGE;
        }
        r = require_root("diff");
        if (r != EXIT_OK)
                return r;
        parse_diff_args(argc, argv, &other, &path);
        r = open_job_snapshot(&c, argv[1], argv[2], &job, &store, &a, an);
        if (r != EXIT_OK)
                return r;
        r = open_other(job, store, other, &d, &b);
        if (r != EXIT_OK)
                return r;
        if (job_relative(job, path ? path : "", &rel) < 0)
                return EXIT_USAGE;
        if (*rel) {
                r = open_parents(a, b, rel, other, &a_dir, &b_dir, &base);
                if (r != EXIT_OK)
                        return r;
        }
        if (arg_json)
                printf("[");
        r = *rel ? tree_diff(&d, a_dir, b_dir, base, rel) : tree_diff(&d, a, b, NULL, "");
        if (arg_json)
                printf("]\n");
        if (r < 0) {
                fprintf(stderr, "refsnapctl: diff failed: %s\n", strerror(-r));
                return exit_status_from_errno(r);
        }
        return EXIT_OK;
}
