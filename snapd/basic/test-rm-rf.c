/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dirent-util.h"
#include "macro.h"
#include "rm-rf.h"
#include "strv.h"
#include "tests.h"

/* The temporary tree: every relative path below is beneath it. */
static int root_fd = -EBADF;
static char root_path[256];

static void make_dir(const char *rel) {
        if (mkdirat(root_fd, rel, 0755) < 0) {
                printf("Bail out! mkdir %s: %s\n", rel, strerror(errno));
                exit(1);
        }
}

static void make_file(const char *rel) {
        int fd = openat(root_fd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        if (fd < 0 || write(fd, "data\n", 5) != 5) {
                printf("Bail out! create %s: %s\n", rel, strerror(errno));
                exit(1);
        }
        close(fd);
}

static void make_link(const char *target, const char *rel) {
        if (symlinkat(target, root_fd, rel) < 0) {
                printf("Bail out! symlink %s: %s\n", rel, strerror(errno));
                exit(1);
        }
}

static bool exists(const char *rel) {
        struct stat st;

        return fstatat(root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Whether rel is a directory holding exactly the names want (sorted, space separated). */
static bool dir_holds(const char *rel, const char *want) {
        _cleanup_close_ int fd = openat(root_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char **names = NULL, buf[512] = "";
        size_t n = 0;
        bool ok;

        if (fd < 0 || dir_names_sorted(fd, &names, &n) < 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        strncat(buf, " ", sizeof(buf) - strlen(buf) - 1);
                strncat(buf, names[i], sizeof(buf) - strlen(buf) - 1);
        }
        strv_free(names);
        ok = strcmp(buf, want) == 0;
        if (!ok)
                printf("# %s holds \"%s\", wanted \"%s\"\n", rel, buf, want);
        return ok;
}

/* Whether text is want; if not, both shown as TAP comments, a line each. */
static bool text_is(const char *text, const char *want) {
        if (text && strcmp(text, want) == 0)
                return true;
        printf("# got:\n");
        for (const char *p = text ? text : "(null)\n"; *p; p += strcspn(p, "\n") + !!p[strcspn(p, "\n")])
                printf("#   %.*s\n", (int) strcspn(p, "\n"), p);
        printf("# wanted:\n");
        for (const char *p = want; *p; p += strcspn(p, "\n") + !!p[strcspn(p, "\n")])
                printf("#   %.*s\n", (int) strcspn(p, "\n"), p);
        return false;
}

static void test_rm_rf_tree(void) {
        _cleanup_close_ int fd = -EBADF;

        /* Files, empty and deep directories, links of every kind, a fifo. */
        make_dir("t1");
        make_file("t1/f");
        make_dir("t1/empty");
        make_dir("t1/d");
        make_dir("t1/d/e");
        make_file("t1/d/e/g");
        make_file("t1/d/.hidden");
        make_dir("t1/x");
        make_dir("t1/x/y");
        make_dir("t1/x/y/z");
        make_dir("t1/x/y/z/w");
        make_file("t1/x/y/z/w/deep");
        make_link("d", "t1/ln");
        make_link("nowhere", "t1/dangling");
        make_link("/", "t1/toroot");
        make_link("..", "t1/d/up");
        CHECK(mkfifoat(root_fd, "t1/fifo", 0600) == 0);
        CHECK(linkat(root_fd, "t1/f", root_fd, "t1/d/hardlink", 0) == 0);

        CHECK(rm_rf_at(root_fd, "t1") == 0);
        CHECK(!exists("t1"));

        /* dir_fd other than the tree's root; name below another directory. */
        make_dir("t2");
        make_dir("t2/sub");
        make_dir("t2/sub/a");
        make_file("t2/sub/a/b");
        make_file("t2/other");
        fd = openat(root_fd, "t2", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK(rm_rf_at(fd, "sub") == 0);
        CHECK(!exists("t2/sub"));
        CHECK(dir_holds("t2", "other"));
        make_dir("t2/sub2");
        make_file("t2/sub2/c");
        CHECK(rm_rf_at(root_fd, "t2/sub2") == 0);
        CHECK(dir_holds("t2", "other"));
        /* An absolute name. */
        {
                char abs[PATH_MAX];

                snprintf(abs, sizeof(abs), "%s/t2", root_path);
                CHECK(rm_rf_at(-EBADF, abs) == 0);
                CHECK(!exists("t2"));
        }
}

static void test_rm_rf_links(void) {
        char abs[PATH_MAX];

        /* A link to a directory outside: the link goes, the target and its files stay. */
        make_dir("out");
        make_file("out/keep1");
        make_dir("out/sub");
        make_file("out/sub/keep2");
        make_dir("t3");
        make_dir("t3/in");
        snprintf(abs, sizeof(abs), "%s/out", root_path);
        make_link(abs, "t3/abslink");
        make_link("../out", "t3/rellink");
        make_link("../../out/sub", "t3/in/deeplink");
        make_link("../out/keep1", "t3/filelink");
        CHECK(linkat(root_fd, "out/keep1", root_fd, "t3/hard", 0) == 0);

        CHECK(rm_rf_at(root_fd, "t3") == 0);
        CHECK(!exists("t3"));
        CHECK(dir_holds("out", "keep1 sub"));
        CHECK(dir_holds("out/sub", "keep2"));

        /* The name itself a link to a directory: only the link goes. */
        make_link("out", "outlink");
        CHECK(rm_rf_at(root_fd, "outlink") == 0);
        CHECK(!exists("outlink"));
        CHECK(dir_holds("out", "keep1 sub"));
        CHECK(dir_holds("out/sub", "keep2"));

        /* Nor is a link in the middle of name followed. */
        make_link("out", "midlink");
        CHECK(rm_rf_at(root_fd, "midlink/sub") < 0);
        CHECK(dir_holds("out/sub", "keep2"));
        CHECK(rm_rf_at(root_fd, "midlink/keep1") < 0 && exists("out/keep1"));
        if (!exists("out/keep1"))
                make_file("out/keep1");
        CHECK(unlinkat(root_fd, "midlink", 0) == 0);
}

static void test_rm_rf_simple(void) {
        struct stat st;

        /* Already gone. */
        CHECK(rm_rf_at(root_fd, "missing") == 0);
        CHECK(rm_rf_at(root_fd, "missing/below") == 0);

        /* A plain file is unlinked; another hard link to it stays. */
        make_file("plain");
        CHECK(rm_rf_at(root_fd, "plain") == 0);
        CHECK(!exists("plain"));
        make_file("plain");
        CHECK(linkat(root_fd, "plain", root_fd, "plain2", 0) == 0);
        CHECK(rm_rf_at(root_fd, "plain2") == 0);
        CHECK(!exists("plain2"));
        CHECK(fstatat(root_fd, "plain", &st, 0) == 0 && st.st_nlink == 1 && st.st_size == 5);
        CHECK(rm_rf_at(root_fd, "plain") == 0);

        /* An empty directory. */
        make_dir("emptydir");
        CHECK(rm_rf_at(root_fd, "emptydir") == 0);
        CHECK(!exists("emptydir"));

        /* A path through a file. */
        make_file("plain");
        CHECK(rm_rf_at(root_fd, "plain/x") == -ENOTDIR);
        CHECK(exists("plain"));
        CHECK(rm_rf_at(root_fd, "plain") == 0);
}

static bool starts_with_partial(const char *name, void *userdata) {
        unsigned *calls = userdata;

        (*calls)++;
        return strncmp(name, ".partial-", strlen(".partial-")) == 0;
}

static void test_rm_leftovers(void) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        unsigned calls = 0;
        size_t size = 0;
        FILE *log;

        make_dir("lo");
        make_dir("lo/.partial-a");
        make_dir("lo/.partial-a/inner");
        make_file("lo/.partial-a/inner/f");
        make_file("lo/.partial-b");
        make_link("../out", "lo/.partial-c");
        make_file("lo/keep");
        make_file("lo/.partialx");
        make_file("lo/x.partial-y");
        make_dir("lo/.partial");
        make_dir("lo/kept-dir");
        make_file("lo/kept-dir/.partial-z");   /* not an entry of lo */

        fd = openat(root_fd, "lo", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0);
        log = open_memstream(&text, &size);
        CHECK(log);
        if (!log)
                return;
        CHECK(rm_leftovers(fd, starts_with_partial, &calls, NULL, log) == 0);
        CHECK(fclose(log) == 0);
        CHECK(calls == 8);
        CHECK(text_is(text,
                      "removed leftover .partial-a\n"
                      "removed leftover .partial-b\n"
                      "removed leftover .partial-c\n"));
        CHECK(dir_holds("lo", ".partial .partialx keep kept-dir x.partial-y"));
        CHECK(dir_holds("lo/kept-dir", ".partial-z"));
        /* .partial-c was a link: what it pointed to stays. */
        CHECK(dir_holds("out", "keep1 sub"));
        CHECK(dir_holds("out/sub", "keep2"));

        /* Nothing left over: nothing written, nothing removed. */
        free(TAKE_PTR(text));
        log = open_memstream(&text, &size);
        CHECK(log);
        if (!log)
                return;
        calls = 0;
        CHECK(rm_leftovers(fd, starts_with_partial, &calls, NULL, log) == 0);
        CHECK(fclose(log) == 0);
        CHECK(calls == 5);
        CHECK(text_is(text, ""));

        /* No log. */
        make_file("lo/.partial-again");
        CHECK(rm_leftovers(fd, starts_with_partial, &calls, NULL, NULL) == 0);
        CHECK(dir_holds("lo", ".partial .partialx keep kept-dir x.partial-y"));

        /* Cancelled (a stop): nothing more is removed, the rest is left for later. */
        {
                volatile sig_atomic_t cancel = 1;

                CHECK(mkdirat(root_fd, "lo/.partial-big", 0700) == 0);
                make_file("lo/.partial-big/f1");
                make_file("lo/.partial-big/f2");
                free(TAKE_PTR(text));
                log = open_memstream(&text, &size);
                CHECK(log);
                if (!log)
                        return;
                CHECK(rm_leftovers(fd, starts_with_partial, &calls, &cancel, log) == -ECANCELED);
                CHECK(fclose(log) == 0);
                CHECK(text_is(text, "cancelled while removing leftover .partial-big\n"));
                CHECK(dir_holds("lo/.partial-big", "f1 f2"));
                cancel = 0;
                CHECK(rm_leftovers(fd, starts_with_partial, &calls, &cancel, NULL) == 0);
                CHECK(dir_holds("lo", ".partial .partialx keep kept-dir x.partial-y"));
        }
}

/* The checks of the mount namespace child, in the order of its results. */
static const struct {
        const char *what;
} mount_checks[] = {
        { "bind mount of the tree's own filesystem: same st_dev as its parent" },
        { "rm_rf_at over a tmpfs and a bind mount inside: -EXDEV" },
        { "the tmpfs's contents survive" },
        { "the bind mount's contents (its source's) survive" },
        { "the directories holding the mounts stay, nothing else in them" },
        { "the rest of the tree is removed" },
        { "rm_rf_at on the mount point itself: -EXDEV, contents intact" },
        { "after umount, rm_rf_at removes what was left" },
        { "a file bind mount inside: left, rm_rf_at fails" },
        { "a file bind mount inside: -EXDEV" },
        { "rm_leftovers: a leftover holding a mount is -EXDEV" },
        { "rm_leftovers: the other leftovers are still removed, the mount stays" },
        { "rm_leftovers: each leftover described on log, the failure with its error" },
};

static bool do_mount(const char *src, const char *rel, const char *type, unsigned long flags) {
        char target[PATH_MAX];

        snprintf(target, sizeof(target), "%s/%s", root_path, rel);
        return mount(src, target, type, flags, NULL) == 0;
}

static bool do_umount(const char *rel) {
        char target[PATH_MAX];

        snprintf(target, sizeof(target), "%s/%s", root_path, rel);
        return umount2(target, MNT_DETACH) == 0;
}

/* Hand the results so far to the parent, and exit: 0 when all were run. */
static _noreturn_ void mount_child_end(int wfd, const bool *res, size_t n, int code) {
        fflush(stdout);
        if (write(wfd, res, n) != (ssize_t) n)
                _exit(2);
        _exit(code);
}

static _noreturn_ void mount_child(int wfd) {
        bool res[ELEMENTSOF(mount_checks)] = {};
        char src[PATH_MAX], line[PATH_MAX + 64];
        _cleanup_free_ char *text = NULL;
        struct stat a, b;
        unsigned i = 0, calls = 0;
        size_t size = 0;
        FILE *log;
        int r;

        if (unshare(CLONE_NEWNS) < 0)
                _exit(77);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                _exit(78);
        /* A descriptor opened before unshare() still resolves in the old namespace. */
        safe_close(root_fd);
        root_fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                _exit(2);

        make_dir("bsrc");
        make_file("bsrc/precious");
        make_dir("bsrc/pdir");
        make_file("bsrc/pdir/p2");
        make_dir("t5");
        make_file("t5/f");
        make_dir("t5/d");
        make_dir("t5/d/e");
        make_file("t5/d/e/g");
        make_link("../bsrc", "t5/tobsrc");
        make_dir("t5/keep");
        make_file("t5/keep/sibling");
        make_dir("t5/keep/sibdir");
        make_file("t5/keep/sibdir/x");
        make_dir("t5/keep/mnt");
        make_dir("t5/keep/deeper");
        make_dir("t5/keep/deeper/bind");
        make_file("t5/keep/deeper/zz");
        if (!do_mount("tmpfs", "t5/keep/mnt", "tmpfs", 0))
                _exit(79);
        make_file("t5/keep/mnt/inside");
        make_dir("t5/keep/mnt/insidedir");
        make_file("t5/keep/mnt/insidedir/file");
        snprintf(src, sizeof(src), "%s/bsrc", root_path);
        if (!do_mount(src, "t5/keep/deeper/bind", NULL, MS_BIND))
                _exit(79);

        res[i++] = fstatat(root_fd, "t5/keep/deeper", &a, 0) == 0 &&
                fstatat(root_fd, "t5/keep/deeper/bind", &b, 0) == 0 && a.st_dev == b.st_dev;
        res[i++] = rm_rf_at(root_fd, "t5") == -EXDEV;
        res[i++] = dir_holds("t5/keep/mnt", "inside insidedir") &&
                dir_holds("t5/keep/mnt/insidedir", "file");
        res[i++] = dir_holds("bsrc", "pdir precious") && dir_holds("bsrc/pdir", "p2") &&
                dir_holds("t5/keep/deeper/bind", "pdir precious");
        res[i++] = dir_holds("t5", "keep") && dir_holds("t5/keep", "deeper mnt") &&
                dir_holds("t5/keep/deeper", "bind");
        res[i++] = !exists("t5/f") && !exists("t5/d") && !exists("t5/tobsrc") &&
                !exists("t5/keep/sibling") && !exists("t5/keep/sibdir") && !exists("t5/keep/deeper/zz");
        res[i++] = rm_rf_at(root_fd, "t5/keep/mnt") == -EXDEV &&
                dir_holds("t5/keep/mnt", "inside insidedir") &&
                dir_holds("t5/keep/mnt/insidedir", "file");
        res[i++] = do_umount("t5/keep/mnt") && do_umount("t5/keep/deeper/bind") &&
                rm_rf_at(root_fd, "t5") == 0 && !exists("t5") && dir_holds("bsrc", "pdir precious");

        /* A file bind mount. */
        make_dir("t6");
        make_file("t6/fm");
        make_file("t6/other");
        snprintf(src, sizeof(src), "%s/bsrc/precious", root_path);
        if (!do_mount(src, "t6/fm", NULL, MS_BIND))
                mount_child_end(wfd, res, sizeof(res), 2);
        r = rm_rf_at(root_fd, "t6");
        res[i++] = r < 0 && exists("t6/fm") && !exists("t6/other") && exists("bsrc/precious");
        res[i++] = r == -EXDEV;
        if (!do_umount("t6/fm") || rm_rf_at(root_fd, "t6") != 0)
                mount_child_end(wfd, res, sizeof(res), 2);

        /* rm_leftovers with a mount in one leftover. */
        make_dir("lm");
        make_dir("lm/.partial-1");
        make_file("lm/.partial-1/f");
        make_dir("lm/.partial-2");
        make_dir("lm/.partial-2/m");
        make_file("lm/.partial-2/gone");
        make_dir("lm/.partial-3");
        make_file("lm/keep");
        if (!do_mount("tmpfs", "lm/.partial-2/m", "tmpfs", 0))
                mount_child_end(wfd, res, sizeof(res), 2);
        make_file("lm/.partial-2/m/stays");
        log = open_memstream(&text, &size);
        if (!log)
                mount_child_end(wfd, res, sizeof(res), 2);
        {
                _cleanup_close_ int fd = openat(root_fd, "lm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                r = rm_leftovers(fd, starts_with_partial, &calls, NULL, log);
        }
        if (fclose(log) != 0)
                mount_child_end(wfd, res, sizeof(res), 2);
        res[i++] = r == -EXDEV;
        res[i++] = dir_holds("lm", ".partial-2 keep") && dir_holds("lm/.partial-2", "m") &&
                dir_holds("lm/.partial-2/m", "stays");
        snprintf(line, sizeof(line), "removed leftover .partial-1\n"
                 "cannot remove leftover .partial-2: %s\n"
                 "removed leftover .partial-3\n", strerror(EXDEV));
        res[i++] = text_is(text, line);
        if (!do_umount("lm/.partial-2/m") || rm_rf_at(root_fd, "lm") != 0 || rm_rf_at(root_fd, "bsrc") != 0)
                mount_child_end(wfd, res, sizeof(res), 2);
        mount_child_end(wfd, res, sizeof(res), i == ELEMENTSOF(res) ? 0 : 2);
}

static void test_rm_rf_mounts(void) {
        bool res[ELEMENTSOF(mount_checks)] = {};
        const char *skip = NULL;
        int pfd[2], status = 0;
        ssize_t got = 0;
        pid_t pid;

        if (geteuid() != 0)
                skip = "mounts: not root";
        else {
                if (pipe2(pfd, O_CLOEXEC) < 0) {
                        CHECK(!"pipe2() failed");
                        return;
                }
                fflush(stdout);
                pid = fork();
                if (pid == 0) {
                        close(pfd[0]);
                        mount_child(pfd[1]);      /* never returns */
                }
                CHECK(pid >= 0);
                if (pid < 0)
                        return;
                close(pfd[1]);
                got = read(pfd[0], res, sizeof(res));
                close(pfd[0]);
                CHECK(waitpid(pid, &status, 0) == pid);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                        skip = "mounts: unshare(CLONE_NEWNS) failed";
                else if (WIFEXITED(status) && WEXITSTATUS(status) == 78)
                        skip = "mounts: cannot make / private in the new mount namespace";
                else if (WIFEXITED(status) && WEXITSTATUS(status) == 79)
                        skip = "mounts: mounting tmpfs or a bind mount failed";
        }
        if (skip) {
                for (size_t i = 0; i < ELEMENTSOF(mount_checks); i++)
                        SKIP(skip);
                return;
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(got == (ssize_t) sizeof(res));
        for (size_t i = 0; i < ELEMENTSOF(mount_checks); i++) {
                printf("# %s\n", mount_checks[i].what);
                CHECK(got == (ssize_t) sizeof(res) && res[i]);
        }
        /* The child cleaned up after itself. */
        CHECK(!exists("bsrc") && !exists("t5") && !exists("t6") && !exists("lm"));
}

int main(void) {
        char tmpl[] = "/tmp/test-rm-rf-XXXXXX", real[PATH_MAX];

        umask(022);
        if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof(root_path)) {
                printf("Bail out! mkdtemp: %s\n", strerror(errno));
                return 1;
        }
        strcpy(root_path, real);
        root_fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0) {
                printf("Bail out! open %s: %s\n", root_path, strerror(errno));
                return 1;
        }

        test_rm_rf_tree();
        test_rm_rf_links();
        test_rm_rf_simple();
        test_rm_leftovers();
        test_rm_rf_mounts();

        /* What is left: out/ and lo/. */
        CHECK(dir_holds(".", "lo out"));
        CHECK(rm_rf_at(-EBADF, root_path) == 0);
        CHECK(access(root_path, F_OK) < 0 && errno == ENOENT);
        safe_close(root_fd);
        return tests_end();
}
