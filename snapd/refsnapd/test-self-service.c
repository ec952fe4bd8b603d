/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Self-service as the caller, on the host (as root; skipped otherwise):
 * a child becomes uid 65534 with the groups it is given
 * (caller_become()): no capability left, no other group, no new
 * privileges; and then the kernel judges its lookups
 * (shared/self-service.h) in a tree of plain files: root's 0600 file is
 * not openable, a file in a directory it cannot search is not reached, a
 * group's directory is reached only with that group, a file readable in
 * the snapshot whose live ancestor is private now is not visible, and
 * the versions' listing says which differ.
 *
 *   test-self-service
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "macro.h"
#include "reflink.h"
#include "refsnapd-caller.h"
#include "rm-rf.h"
#include "self-service.h"
#include "tests.h"

#define NOBODY 65534
#define GROUP 4242

/* The checks made in a child, reported by the parent (one TAP stream). */
typedef struct Result {
        char what[200];
        bool ok;
} Result;
static struct {
        size_t n;
        Result r[256];
} *shared;                      /* MAP_SHARED: written by the child, read by the parent */
#define C(expr) do {                                                    \
                if (shared->n < ELEMENTSOF(shared->r)) {                \
                        snprintf(shared->r[shared->n].what, sizeof(shared->r[0].what), "%s", #expr); \
                        shared->r[shared->n++].ok = (expr);             \
                }                                                       \
        } while (0)

static char tmp[] = "/tmp/test-self-service.XXXXXX";
static int snap1 = -EBADF, snap2 = -EBADF, live = -EBADF, gone1 = -EBADF, gone2 = -EBADF;

static void mk(const char *path, mode_t mode, uid_t uid, gid_t gid, const char *content) {
        char p[512];
        int fd;

        snprintf(p, sizeof(p), "%s/%s", tmp, path);
        if (!content) {
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        abort();
        } else {
                fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
                if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t) strlen(content))
                        abort();
                close(fd);
        }
        if (chmod(p, mode) < 0 || chown(p, uid, gid) < 0)
                abort();
}

/* Run fn in a child that has become c; its checks land in results. */
static void as_caller(const Caller *c, void (*fn)(void)) {
        pid_t pid = fork();
        int status;

        if (pid == 0) {
                int r = caller_become(c);

                C(r == 0);
                if (r == 0)
                        fn();
                _exit(0);
        }
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void report(void) {
        for (size_t i = 0; i < shared->n; i++) {
                tests_run++;
                if (shared->r[i].ok)
                        printf("ok %d - (as the caller) %s\n", tests_run, shared->r[i].what);
                else {
                        tests_failed++;
                        printf("not ok %d - (as the caller) %s\n", tests_run, shared->r[i].what);
                }
        }
        shared->n = 0;
}

static void identity(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};
        uid_t ru, eu, su;
        gid_t rg, eg, sg, groups[8];
        int n;

        C(getresuid(&ru, &eu, &su) == 0 && ru == NOBODY && eu == NOBODY && su == NOBODY);
        C(getresgid(&rg, &eg, &sg) == 0 && rg == NOBODY && eg == NOBODY && sg == NOBODY);
        n = getgroups(8, groups);
        /* Exactly those given (the kernel keeps them sorted). */
        C(n == 2 && ((groups[0] == NOBODY && groups[1] == GROUP) || (groups[0] == GROUP && groups[1] == NOBODY)));
        C(syscall(SYS_capget, &h, d) == 0);
        C(d[0].effective == 0 && d[0].permitted == 0 && d[0].inheritable == 0);
        C(d[1].effective == 0 && d[1].permitted == 0 && d[1].inheritable == 0);
        C(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
        C(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0);
        C(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SYS_ADMIN, 0, 0) == 0);
        C(caller_check_dropped() == 0);
        /* What root could: the kernel says no now. */
        C(setresuid(0, 0, 0) < 0 && errno == EPERM);
        C(setgroups(0, NULL) < 0 && errno == EPERM);
        C(chown(tmp, NOBODY, NOBODY) < 0 && errno == EPERM);
}

static void lookups(void) {
        struct statx st;
        char buf[4096] = "";
        FILE *f;
        int fds[2] = { snap1, snap2 }, gone_fds[2] = { gone1, gone2 }, open_fds[2] = { gone1, gone1 };
        char *names[2] = { (char *) "2020-01-01T00:00:00Z", (char *) "2020-01-02T00:00:00Z" };

        /* The kernel is the judge: root's 0600 file is not openable at all. */
        C(openat(snap1, "pub/secret", O_RDONLY | O_CLOEXEC) < 0 && errno == EACCES);
        C(self_find_version(snap1, "pub/secret", &st) < 0);
        C(self_find_version(snap1, "pub/file", &st) == 0 && st.stx_size == 3 && S_ISREG(st.stx_mode));
        C(self_find_version(snap1, "pub", &st) == 0 && S_ISDIR(st.stx_mode));
        C(self_find_version(snap1, "pub/missing", &st) < 0);
        /* Readable, in a directory it cannot search. */
        C(self_find_version(snap1, "closed/readable", &st) < 0);
        /* A group's directory: reached with that group. */
        C(self_find_version(snap1, "grp/file", &st) == 0);
        /* A symbolic link is the link: never followed, never a way through. */
        C(self_find_version(snap1, "pub/link", &st) == 0 && S_ISLNK(st.stx_mode));
        C(self_find_version(snap1, "pub/link/x", &st) < 0);
        C(self_find_version(snap1, "../x", &st) == -EINVAL);
        C(self_find_version(snap1, "pub//file", &st) == -EINVAL);
        /* The live tree: readable in the snapshot, but its directory is private now. */
        C(self_find_version(snap1, "was-open/file", &st) == 0);
        C(self_live_visible(live, "was-open/file") == -EACCES);
        /* ... and a file private now, in place: closed in the snapshots too. */
        C(self_live_visible(live, "pub/now-private") == -EACCES);
        C(self_find_version(snap1, "pub/now-private", &st) == 0);
        /* Gone from the live tree: the snapshot decides. */
        C(self_live_visible(live, "gone/file") == 0);
        C(self_live_visible(live, "pub/file") == 0);
        /* The listing, newest first; the second differs (its size). */
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(live, fds, names, 2, "pub/file", f) == 2);
        if (f)
                fclose(f);
        C(strncmp(buf, "2020-01-02T00:00:00Z 4 ", 23) == 0);
        C(strstr(buf, " 100644 1\n2020-01-01T00:00:00Z 3 ") != NULL);
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(live, fds, names, 2, "was-open/file", f) == 0);
        if (f)
                fclose(f);
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(live, fds, names, 2, "pub/secret", f) == 0);
        if (f)
                fclose(f);
        /* No live tree: the snapshot alone. */
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(-EBADF, fds, names, 2, "was-open/file", f) == 1);
        if (f)
                fclose(f);
        /*
         * A live ancestor renamed away (by whoever may write its parent)
         * after its owner closed it, closed in the newer snapshot: the
         * newest snapshot that has it judges, not nothing.
         */
        C(self_find_version(snap1, "moved/f", &st) == 0);
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(live, fds, names, 2, "moved/f", f) == 0);
        if (f)
                fclose(f);
        /* The same for the entry itself: private in the newer snapshot, renamed away live. */
        C(self_find_version(snap1, "pub/single", &st) == 0);
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(live, fds, names, 2, "pub/single", f) == 0);
        if (f)
                fclose(f);
        /* And the whole source gone: its newest snapshot is closed. */
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(-EBADF, gone_fds, names, 2, "x", f) == 0);
        if (f)
                fclose(f);
        /* Deleted, open in every snapshot that has it: still listed. */
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(live, fds, names, 2, "gone/file", f) == 1);
        if (f)
                fclose(f);
        f = fmemopen(buf, sizeof(buf) - 1, "w");
        C(f && self_list_versions(-EBADF, open_fds, names, 2, "x", f) == 2);
        if (f)
                fclose(f);
}

/*
 * What self_restore_tree() does to a file it made, as the worker (not
 * dumpable): fchmodat() that follows no link works (glibc goes through
 * /proc/self/fd where the kernel has no fchmodat2), and a link is refused.
 */
static void chmod_made(void) {
        char p[512];
        struct stat st;
        int dir, fd;

        snprintf(p, sizeof(p), "%s/mine", tmp);
        dir = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
        C(dir >= 0);
        fd = openat(dir, "made", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        C(fd >= 0);
        if (fd >= 0)
                close(fd);
        C(fchmodat(dir, "made", 0600, AT_SYMLINK_NOFOLLOW) == 0);
        C(fstatat(dir, "made", &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & 07777) == 0600 && st.st_gid == NOBODY);
        C(symlinkat("made", dir, "link") == 0);
        C(fchmodat(dir, "link", 0644, AT_SYMLINK_NOFOLLOW) < 0);
        C(fstatat(dir, "made", &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & 07777) == 0600);
        if (dir >= 0)
                close(dir);
}

static void without_group(void) {
        struct statx st;

        C(self_find_version(snap1, "grp/file", &st) < 0);
        C(self_find_version(snap1, "pub/file", &st) == 0);
}

int main(void) {
        /* Sorted, as the bus says them: her own group (the egid) is not the first. */
        gid_t both[] = { GROUP, NOBODY }, one[] = { NOBODY };
        Caller c = { .uid = NOBODY, .gid = NOBODY, .groups = both, .n_groups = 2 };

        if (geteuid() != 0) {
                printf("1..0 # SKIP needs root\n");
                return 0;
        }
        shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (shared == MAP_FAILED || !mkdtemp(tmp) || chmod(tmp, 0755) < 0)
                return 1;
        mk("s1", 0755, 0, 0, NULL);
        mk("s1/pub", 0755, 0, 0, NULL);
        mk("s1/pub/file", 0644, 0, 0, "one");
        mk("s1/pub/secret", 0600, 0, 0, "root's");
        mk("s1/pub/now-private", 0644, 0, 0, "was open");
        mk("s1/closed", 0700, 0, 0, NULL);
        mk("s1/closed/readable", 0644, 0, 0, "x");
        mk("s1/grp", 0750, 0, GROUP, NULL);
        mk("s1/grp/file", 0644, 0, 0, "g");
        mk("s1/was-open", 0755, 0, 0, NULL);
        mk("s1/was-open/file", 0644, 0, 0, "old");
        mk("s1/gone", 0755, 0, 0, NULL);
        mk("s1/gone/file", 0644, 0, 0, "gone");
        {
                char p[512];

                snprintf(p, sizeof(p), "%s/s1/pub/link", tmp);
                CHECK(symlink("secret", p) == 0);
        }
        mk("s1/moved", 0755, 0, 0, NULL);
        mk("s1/moved/f", 0644, 0, 0, "open then");
        mk("s1/pub/single", 0644, 0, 0, "open then");
        mk("s2", 0755, 0, 0, NULL);
        mk("s2/pub", 0755, 0, 0, NULL);
        mk("s2/pub/file", 0644, 0, 0, "two!");
        mk("s2/moved", 0700, 0, 0, NULL);
        mk("s2/moved/f", 0644, 0, 0, "open then");
        mk("s2/pub/single", 0600, 0, 0, "open then");
        mk("g1", 0755, 0, 0, NULL);
        mk("g1/x", 0644, 0, 0, "x");
        mk("g2", 0700, 0, 0, NULL);
        mk("g2/x", 0644, 0, 0, "x");
        mk("mine", 0755, NOBODY, NOBODY, NULL);
        mk("live", 0755, 0, 0, NULL);
        mk("live/pub", 0755, 0, 0, NULL);
        mk("live/pub/file", 0644, 0, 0, "two!");
        mk("live/pub/now-private", 0600, 0, 0, "was open");
        mk("live/was-open", 0700, 0, 0, NULL);
        mk("live/was-open/file", 0644, 0, 0, "old");
        {
                char p[512];

                snprintf(p, sizeof(p), "%s/s1", tmp);
                snap1 = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                snprintf(p, sizeof(p), "%s/s2", tmp);
                snap2 = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                snprintf(p, sizeof(p), "%s/live", tmp);
                live = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                snprintf(p, sizeof(p), "%s/g1", tmp);
                gone1 = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                snprintf(p, sizeof(p), "%s/g2", tmp);
                gone2 = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
        CHECK(snap1 >= 0 && snap2 >= 0 && live >= 0 && gone1 >= 0 && gone2 >= 0);

        /* Root itself, before: everything open to it (the checks below are the caller's, not the tree's). */
        CHECK(faccessat(snap1, "pub/secret", R_OK, AT_EACCESS) == 0);

        as_caller(&c, identity);
        report();
        as_caller(&c, lookups);
        report();
        as_caller(&c, chmod_made);
        report();
        c.groups = one;
        c.n_groups = 1;
        as_caller(&c, without_group);
        report();
        /* A gid that is not one of her groups: refused before anything changes. */
        c.gid = GROUP;
        CHECK(caller_become(&c) == -EINVAL);
        CHECK(geteuid() == 0 && getegid() == 0);
        c.gid = NOBODY;
        /* No group at all: refused before anything changes. */
        c.n_groups = 0;
        CHECK(caller_become(&c) == -EINVAL);
        CHECK(geteuid() == 0);

        /*
         * The mode of a restored file whose owner is not kept: her group
         * gets no more than others had; another user's loses write for
         * group and others and every set-id bit; her own keeps set-uid.
         */
        CHECK(self_restored_mode(0640, REFLINK_ATTR_NONE) == 0600);
        CHECK(self_restored_mode(0644, REFLINK_ATTR_NONE) == 0644);
        CHECK(self_restored_mode(0664, REFLINK_ATTR_NONE) == 0644);
        CHECK(self_restored_mode(0666, REFLINK_ATTR_NONE) == 0644);
        CHECK(self_restored_mode(0751, REFLINK_ATTR_NONE) == 0711);
        CHECK(self_restored_mode(06755, REFLINK_ATTR_NONE) == 0755);
        CHECK(self_restored_mode(0660, REFLINK_ATTR_MODE | REFLINK_ATTR_ACL) == 0600);
        CHECK(self_restored_mode(0666, REFLINK_ATTR_MODE | REFLINK_ATTR_ACL) == 0666);
        CHECK(self_restored_mode(06770, REFLINK_ATTR_MODE | REFLINK_ATTR_ACL) == 04700);
        CHECK(self_restored_mode(02750, REFLINK_ATTR_OWNER | REFLINK_ATTR_MODE | REFLINK_ATTR_ACL) == 02750);

        (void) rm_rf_at(AT_FDCWD, tmp);
        return tests_end();
}
