/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A mount inside a tree is never entered, not even by a stat: two FUSE
 * mounts in a source, in a mount namespace of the test's own, one
 * without allow_other owned by another user (which refuses root: EACCES)
 * whose server is gone, one with allow_other whose server never answers
 * (a stat of it waits forever).  The walk, the diff and the removal
 * complete and leave both out; a job whose source is the silent mount
 * fails at once.  An alarm bounds a hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chase.h"
#include "clone-double.h"
#include "fd-util.h"
#include "macro.h"
#include "mirror.h"
#include "mountpoint-util.h"
#include "rm-rf.h"
#include "snapshot.h"
#include "tests.h"
#include "tree-diff.h"

/* A FUSE mount at path owned by uid 65534; the /dev/fuse descriptor, or -errno. */
static int fuse_mount(const char *path, bool allow_other) {
        char opts[128];
        int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=65534,group_id=65534%s", fd,
                 allow_other ? ",allow_other" : "");
        if (mount("test", path, "fuse.test", MS_NOSUID | MS_NODEV, opts) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

static int count(DiffKind kind, const char *path, const struct stat *a, const struct stat *b, void *userdata) {
        printf("# diff: %c %s\n", diff_mark(kind), path);
        ++*(int *) userdata;
        return 0;
}

static bool exists_at(int dir, const char *path) {
        struct stat st;

        return fstatat(dir, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int child(const char *base) {
        char src[256], dst[256], cmd[1024];
        _cleanup_close_ int sfd = -EBADF, dfd = -EBADF, silent = -EBADF, gone = -EBADF;
        _cleanup_free_ char *msg = NULL;
        size_t size = 0;
        int r, n = 0;

        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                SKIP("no mount namespace of our own");
                return tests_end();
        }
        snprintf(src, sizeof(src), "%s/src", base);
        snprintf(dst, sizeof(dst), "%s/dst", base);
        snprintf(cmd, sizeof(cmd), "set -e; cd '%s'; mkdir -p src/alice/sshfs src/bob/net dst; echo a > src/alice/notes; "
                 "echo b > src/bob/plan; echo top > src/top", base);
        if (system(cmd) != 0)
                return 2;
        snprintf(cmd, sizeof(cmd), "%s/alice/sshfs", src);
        gone = fuse_mount(cmd, false);
        snprintf(cmd, sizeof(cmd), "%s/bob/net", src);
        silent = gone < 0 ? gone : fuse_mount(cmd, true);
        if (gone < 0 || silent < 0) {
                SKIP("no FUSE here");
                return tests_end();
        }
        /* No server: every request to it fails; the other's never gets an answer. */
        gone = safe_close(gone);

        sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        {
                Mirror w = { .ops = &clone_double_ops, .log = open_memstream(&msg, &size), .workers = 2 };

                r = mirror_tree(&w, sfd, dfd);
                fclose(w.log);
                CHECK(r == 0);
                CHECK(w.stats.other_mounts == 2 && w.stats.files == 3 && w.stats.skipped == 0);
                CHECK(exists_at(dfd, "alice/notes") && exists_at(dfd, "bob/plan") && exists_at(dfd, "top"));
                CHECK(!exists_at(dfd, "alice/sshfs") && !exists_at(dfd, "bob/net"));
                CHECK(msg && strstr(msg, "alice/sshfs: another filesystem is mounted here: left out, not entered") &&
                      strstr(msg, "bob/net: another filesystem is mounted here"));
        }
        {
                TreeDiff d = { .fn = count, .userdata = &n, .report_dirs = true };

                /* The snapshot against the live tree: the mounts are in neither. */
                CHECK(tree_diff(&d, dfd, sfd, NULL, NULL) == 0);
                CHECK(n == 0);
        }
        {
                /*
                 * A FUSE mount on a job's source itself (the silent one):
                 * the job fails at once, by the mount table, never asking it.
                 */
                char net[300], store[300], *where = NULL, *type = NULL;
                char name[SNAPSHOT_NAME_MAX];
                SnapshotFacts f;
                Job job = { .name = "covered", .source = net, .store = store };

                snprintf(net, sizeof(net), "%s/bob/net", src);
                snprintf(store, sizeof(store), "%s/store", dst);
                CHECK(path_under_fuse(NULL, net, &where, &type) == 1);
                CHECK(where && strcmp(where, net) == 0 && type && strcmp(type, "fuse.test") == 0);
                free(where);
                free(type);
                CHECK(path_under_fuse(NULL, src, NULL, NULL) == 0);
                msg = mfree(msg);
                {
                        FILE *log = open_memstream(&msg, &size);

                        r = snapshot_take(&job, &clone_double_ops, NULL, log, NULL, name, &f);
                        fclose(log);
                }
                CHECK(r == -EREMOTE);
                CHECK(msg && strstr(msg, "is covered by a fuse mount (fuse.test on "));
        }
        {
                /*
                 * CHASE_NO_FUSE decides by the mount the walk reaches, not
                 * by the path: the silent mount, or a path beneath it, is
                 * refused (-EREMOTE) without a request to its server (a
                 * request would hang until the alarm); another mount on
                 * the way (tmpfs) is crossed.
                 */
                char net[300], below[320], tm[300];
                _cleanup_close_ int a = -EBADF, b = -EBADF;
                uint64_t id;

                snprintf(net, sizeof(net), "%s/bob/net", src);
                snprintf(below, sizeof(below), "%s/bob/net/deeper", src);
                snprintf(tm, sizeof(tm), "%s/tm", src);
                CHECK(chase_dir(AT_FDCWD, net, &(Chase) { .flags = CHASE_NO_FUSE }) == -EREMOTE);
                CHECK(chase_dir(AT_FDCWD, below, &(Chase) { .flags = CHASE_NO_FUSE }) == -EREMOTE);
                CHECK(chase_dir(AT_FDCWD, net, &(Chase) { .flags = CHASE_NO_FUSE | CHASE_SAFE }) == -EREMOTE);
                CHECK(chase_dir(sfd, "bob/net", &(Chase) { .flags = CHASE_NO_FUSE }) == -EREMOTE);
                CHECK(chase_dir(sfd, "bob/net", &(Chase) { .flags = CHASE_NO_FUSE | CHASE_NO_XDEV }) == -EXDEV);
                CHECK(mkdir(tm, 0755) == 0 && mount("tmpfs", tm, "tmpfs", 0, "mode=0755") == 0);
                snprintf(cmd, sizeof(cmd), "mkdir '%s/d'", tm);
                CHECK(system(cmd) == 0);
                snprintf(cmd, sizeof(cmd), "%s/d", tm);
                a = chase_dir(AT_FDCWD, cmd, &(Chase) { .flags = CHASE_NO_FUSE });
                CHECK(a >= 0);
                b = chase_dir(AT_FDCWD, src, &(Chase) { .flags = CHASE_NO_FUSE });
                CHECK(b >= 0 && fd_mount_id(b, &id) == 0);
                CHECK(mount_id_is_fuse(NULL, id) == 0);
                CHECK(umount2(tm, MNT_DETACH) == 0 && rmdir(tm) == 0);
        }
        {
                /*
                 * CHASE_SAFE with CHASE_NO_FUSE: in a sticky directory, the
                 * owner of a silent FUSE mount on an entry is read without
                 * asking its server (what the kernel holds of a root never
                 * asked about says root: -EREMOTE then, at the crossing;
                 * else hers: -EPERM), never waiting on it.
                 */
                char sticky[300], her[320];
                _cleanup_close_ int m = -EBADF;

                snprintf(sticky, sizeof(sticky), "%s/sticky", base);
                snprintf(her, sizeof(her), "%s/sticky/her", base);
                CHECK(mkdir(sticky, 0755) == 0 && chmod(sticky, 01777) == 0 && mkdir(her, 0755) == 0);
                m = fuse_mount(her, true);
                CHECK(m >= 0);
                snprintf(cmd, sizeof(cmd), "%s/deeper", her);
                r = chase_dir(AT_FDCWD, cmd, &(Chase) { .flags = CHASE_NO_FUSE | CHASE_SAFE });
                CHECK(r == -EPERM || r == -EREMOTE);
                CHECK(umount2(her, MNT_DETACH) == 0);
        }
        {
                /* Removal: everything but the mounts, and the directories holding them. */
                CHECK(rm_rf_at(sfd, "alice") == -EXDEV);
                CHECK(!exists_at(sfd, "alice/notes"));
        }
        return tests_end();
}

int main(void) {
        char base[] = "/var/tmp/refsnap-test-fuse.XXXXXX";
        char cmd[128];
        int status;
        pid_t pid;

        if (geteuid() != 0) {
                SKIP("mounts need root");
                return tests_end();
        }
        if (!mkdtemp(base))
                return 2;
        fflush(stdout);
        pid = fork();
        if (pid < 0)
                return 2;
        if (pid == 0) {
                /* A hang in any of it fails the test, as the alarm's signal. */
                alarm(60);
                status = child(base);
                fflush(stdout);
                _exit(status);
        }
        if (waitpid(pid, &status, 0) != pid)
                return 2;
        /* The mounts were in the child's namespace alone: gone with it. */
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        if (system(cmd) != 0)
                return 2;
        if (WIFSIGNALED(status)) {
                printf("Bail out! killed by signal %d%s\n", WTERMSIG(status),
                       WTERMSIG(status) == SIGALRM ? " (hung on a FUSE mount)" : "");
                return 1;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
