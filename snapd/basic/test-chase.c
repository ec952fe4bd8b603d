/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chase.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "rm-rf.h"
#include "stat-util.h"
#include "tests.h"

/* A symbolic link is refused with -ELOOP (RESOLVE_NO_SYMLINKS), never followed. */
#define CHECK_LINK_REFUSED(expr) do {                                   \
                int _r = (expr);                                        \
                printf("# %s: refused with -ELOOP\n", #expr);           \
                CHECK(_r == -ELOOP);                                    \
        } while (0)

/* The temporary tree: every relative path below is beneath it. */
static int root_fd = -EBADF;
static char root_path[256];

static void make_dir(const char *rel, mode_t mode) {
        if (mkdirat(root_fd, rel, mode) < 0 || fchmodat(root_fd, rel, mode, 0) < 0) {
                printf("Bail out! mkdir %s: %s\n", rel, strerror(errno));
                exit(1);
        }
}

static void make_file(const char *rel) {
        int fd = openat(root_fd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

        if (fd < 0) {
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

static void make_owner(const char *rel, uid_t uid) {
        if (fchownat(root_fd, rel, uid, (gid_t) -1, AT_SYMLINK_NOFOLLOW) < 0) {
                printf("Bail out! chown %s: %s\n", rel, strerror(errno));
                exit(1);
        }
}

static bool exists(const char *rel) {
        struct stat st;

        return fstatat(root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static mode_t mode_of(const char *rel) {
        struct stat st;

        if (fstatat(root_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return (mode_t) -1;
        return st.st_mode & 07777;
}

/* Whether fd is the directory dir_fd/rel (an absolute rel ignores dir_fd). */
static bool is_inode_at(int fd, int dir_fd, const char *rel) {
        struct stat a, b;

        if (fd < 0 || fstat(fd, &a) < 0 || fstatat(dir_fd, rel, &b, AT_SYMLINK_NOFOLLOW) < 0)
                return false;
        return S_ISDIR(a.st_mode) && stat_inode_same(&a, &b);
}

static bool is_inode(int fd, const char *rel) {
        return is_inode_at(fd, root_fd, rel);
}

/* chase_dir() and close what it returned: the return value only. */
static int chase_ret(int dir_fd, const char *path, Chase *c) {
        int fd = chase_dir(dir_fd, path, c);

        safe_close(fd);
        return fd < 0 ? fd : 0;
}

static bool is_cloexec_dir(int fd) {
        int fl = fcntl(fd, F_GETFD), st = fcntl(fd, F_GETFL);

        return fl >= 0 && (fl & FD_CLOEXEC) && st >= 0 && (st & O_DIRECTORY);
}

static void test_chase_dir_plain(void) {
        _cleanup_close_ int fd = -EBADF, fd2 = -EBADF, fd3 = -EBADF, fd4 = -EBADF;
        char abs[PATH_MAX];
        Chase c = {};

        make_dir("a", 0755);
        make_dir("a/b", 0755);
        make_dir("a/b/c", 0755);
        make_file("f");
        make_file("a/file");
        make_link("a", "ln");
        make_link("b", "a/ln2");
        make_link("nowhere", "dl");
        make_link("/", "rootln");

        fd = chase_dir(root_fd, "a/b/c", &c);
        CHECK(fd >= 0);
        CHECK(is_inode(fd, "a/b/c"));
        CHECK(is_cloexec_dir(fd));
        CHECK(c.failed_len == 0);
        fd2 = chase_dir(root_fd, "a", NULL);
        CHECK(is_inode(fd2, "a"));
        fd3 = chase_dir(root_fd, "a//b/./c/", NULL);
        CHECK(is_inode(fd3, "a/b/c"));
        /* Relative to another directory than the tree's root. */
        fd4 = chase_dir(fd2, "b", NULL);
        CHECK(is_inode(fd4, "a/b"));

        /* A symbolic link anywhere is refused: last component, middle, dangling, to "/". */
        CHECK_LINK_REFUSED(chase_ret(root_fd, "ln", NULL));
        CHECK(chase_ret(root_fd, "ln/b", NULL) == -ELOOP);
        CHECK(chase_ret(root_fd, "ln/b/c", NULL) == -ELOOP);
        CHECK_LINK_REFUSED(chase_ret(root_fd, "a/ln2", NULL));
        CHECK(chase_ret(root_fd, "a/ln2/c", NULL) == -ELOOP);
        CHECK_LINK_REFUSED(chase_ret(root_fd, "dl", NULL));
        CHECK_LINK_REFUSED(chase_ret(root_fd, "rootln", NULL));
        CHECK_LINK_REFUSED(chase_ret(fd2, "ln2", NULL));

        /* A file where a directory should be. */
        CHECK(chase_ret(root_fd, "f", NULL) == -ENOTDIR);
        CHECK(chase_ret(root_fd, "f/x", NULL) == -ENOTDIR);
        CHECK(chase_ret(root_fd, "a/file", NULL) == -ENOTDIR);
        CHECK(chase_ret(root_fd, "a/file/b", NULL) == -ENOTDIR);

        /* Missing: failed_len covers at least the missing component, and lies within path. */
        c = (Chase) {};
        CHECK(chase_ret(root_fd, "a/missing", &c) == -ENOENT);
        CHECK(c.failed_len == strlen("a/missing"));
        c = (Chase) {};
        CHECK(chase_ret(root_fd, "a/missing/x/y", &c) == -ENOENT);
        CHECK(c.failed_len >= strlen("a/missing") && c.failed_len <= strlen("a/missing/x/y"));
        CHECK(!exists("a/missing"));

        /* ".." is refused, wherever it is. */
        c = (Chase) {};
        CHECK(chase_ret(root_fd, "..", &c) == -EINVAL);
        CHECK(c.failed_len == 2);
        CHECK(chase_ret(root_fd, "a/..", NULL) == -EINVAL);
        CHECK(chase_ret(root_fd, "a/../a", NULL) == -EINVAL);
        CHECK(chase_ret(root_fd, "../x", NULL) == -EINVAL);
        CHECK(chase_ret(fd2, "b/../..", NULL) == -EINVAL);
        snprintf(abs, sizeof(abs), "%s/a/../a", root_path);
        CHECK(chase_ret(-EBADF, abs, NULL) == -EINVAL);
        /* "..." and "..b" are names like any other. */
        make_dir("a/...", 0755);
        make_dir("a/..b", 0755);
        safe_close(fd3);
        fd3 = chase_dir(root_fd, "a/...", NULL);
        CHECK(is_inode(fd3, "a/..."));
        safe_close(fd3);
        fd3 = chase_dir(root_fd, "a/..b", NULL);
        CHECK(is_inode(fd3, "a/..b"));

        /* "" (and ".") is dir_fd itself, as a new descriptor. */
        safe_close(fd3);
        fd3 = chase_dir(fd2, "", NULL);
        CHECK(fd3 >= 0 && fd3 != fd2);
        CHECK(is_inode(fd3, "a"));
        CHECK(is_cloexec_dir(fd3));
        safe_close(fd3);
        fd3 = chase_dir(fd2, ".", NULL);
        CHECK(is_inode(fd3, "a"));

        /* An absolute path starts from "/": dir_fd is not used. */
        safe_close(fd3);
        snprintf(abs, sizeof(abs), "%s/a/b", root_path);
        fd3 = chase_dir(-EBADF, abs, NULL);
        CHECK(is_inode(fd3, "a/b"));
        safe_close(fd3);
        fd3 = chase_dir(fd4, abs, NULL);        /* not relative to fd4 (a/b): no a/b/a/b */
        CHECK(is_inode(fd3, "a/b"));
        safe_close(fd3);
        fd3 = chase_dir(-EBADF, "/", NULL);
        CHECK(is_inode_at(fd3, AT_FDCWD, "/"));
        snprintf(abs, sizeof(abs), "%s/ln/b", root_path);
        CHECK(chase_ret(-EBADF, abs, NULL) == -ELOOP);
        snprintf(abs, sizeof(abs), "%s/a/missing", root_path);
        CHECK(chase_ret(-EBADF, abs, NULL) == -ENOENT);
}

static void test_chase_parent(void) {
        _cleanup_close_ int a_fd = chase_dir(root_fd, "a", NULL);
        char abs[PATH_MAX];
        const char *base, *p;
        int fd;

        p = "a/b/c";
        base = NULL;
        fd = chase_parent(root_fd, p, NULL, &base);
        CHECK(is_inode(fd, "a/b"));
        CHECK(base == p + 4);
        CHECK_STREQ(base, "c");
        safe_close(fd);

        /* The parent of a missing last component is fine: it need not exist. */
        p = "a/b/nothere";
        base = NULL;
        fd = chase_parent(root_fd, p, NULL, &base);
        CHECK(is_inode(fd, "a/b"));
        CHECK_STREQ(base, "nothere");
        safe_close(fd);

        /* No '/': the parent is dir_fd itself. */
        p = "b";
        base = NULL;
        fd = chase_parent(a_fd, p, NULL, &base);
        CHECK(fd >= 0 && fd != a_fd);
        CHECK(is_inode(fd, "a"));
        CHECK(base == p);
        safe_close(fd);

        /* Absolute. */
        snprintf(abs, sizeof(abs), "%s/a/b", root_path);
        base = NULL;
        fd = chase_parent(-EBADF, abs, NULL, &base);
        CHECK(is_inode(fd, "a"));
        CHECK(base == abs + strlen(abs) - 1);
        safe_close(fd);
        p = "/tmp";
        base = NULL;
        fd = chase_parent(-EBADF, p, NULL, &base);
        CHECK(is_inode_at(fd, AT_FDCWD, "/"));
        CHECK(base == p + 1);
        safe_close(fd);

        /* The last component itself may be a link or a file: it is not opened. */
        base = NULL;
        fd = chase_parent(root_fd, "a/ln2", NULL, &base);
        CHECK(is_inode(fd, "a"));
        CHECK_STREQ(base, "ln2");
        safe_close(fd);

        /* No last component; and the errors of chase_dir(). */
        base = "untouched";
        CHECK(chase_parent(root_fd, "", NULL, &base) == -EINVAL);
        CHECK(chase_parent(root_fd, "/", NULL, &base) == -EINVAL);
        CHECK(chase_parent(root_fd, "a/", NULL, &base) == -EINVAL);
        CHECK(chase_parent(root_fd, "a/b/", NULL, &base) == -EINVAL);
        CHECK_LINK_REFUSED(chase_parent(root_fd, "ln/b", NULL, &base));
        CHECK(chase_parent(root_fd, "f/x", NULL, &base) == -ENOTDIR);
        CHECK(chase_parent(root_fd, "missing/x", NULL, &base) == -ENOENT);
        CHECK(chase_parent(root_fd, "../x", NULL, &base) == -EINVAL);
        CHECK_STREQ(base, "untouched");

        /*
         * ".." is refused (chase.h), but as the last component it is only
         * handed back: openat(parent, base) would then leave dir_fd.
         */
        fd = chase_parent(root_fd, "..", NULL, &base);
        CHECK(fd == -EINVAL);
        safe_close(fd);
        fd = chase_parent(root_fd, "a/..", NULL, &base);
        CHECK(fd == -EINVAL);
        safe_close(fd);
}

/* What made() was handed, in order. */
typedef struct Made {
        unsigned n;
        char *path[8];
        bool inode_ok[8];       /* dir_fd was the directory path names */
        mode_t mode[8];
        int ret;                /* what made() returns */
} Made;

static int record_made(int dir_fd, const char *path, void *userdata) {
        Made *m = userdata;
        struct stat st;

        if (m->n < ELEMENTSOF(m->path)) {
                m->path[m->n] = strdup(path);
                m->inode_ok[m->n] = is_inode_at(dir_fd, root_fd, path);
                m->mode[m->n] = fstat(dir_fd, &st) == 0 ? st.st_mode & 07777 : (mode_t) -1;
        }
        m->n++;
        return m->ret;
}

static void made_reset(Made *m) {
        for (unsigned i = 0; i < MIN(m->n, ELEMENTSOF(m->path)); i++)
                free(m->path[i]);
        *m = (Made) {};
}

static void test_chase_mkdir(void) {
        Made m = {};
        Chase c = { .flags = CHASE_MKDIR, .made = record_made, .userdata = &m };
        char abs[PATH_MAX], want[PATH_MAX];
        int fd;

        /* Three made, in order, each with the path so far. */
        fd = chase_dir(root_fd, "x/y/z", &c);
        CHECK(fd >= 0);
        CHECK(is_inode(fd, "x/y/z"));
        CHECK(c.failed_len == 0);
        safe_close(fd);
        CHECK(m.n == 3);
        CHECK_STREQ(m.path[0], "x");
        CHECK_STREQ(m.path[1], "x/y");
        CHECK_STREQ(m.path[2], "x/y/z");
        CHECK(m.inode_ok[0] && m.inode_ok[1] && m.inode_ok[2]);
        CHECK(m.mode[0] == 0700 && m.mode[1] == 0700 && m.mode[2] == 0700);
        CHECK(mode_of("x") == 0700 && mode_of("x/y") == 0700 && mode_of("x/y/z") == 0700);

        /* Only the missing ones are made. */
        made_reset(&m);
        fd = chase_dir(root_fd, "x/y/z/w", &c);
        CHECK(is_inode(fd, "x/y/z/w"));
        safe_close(fd);
        CHECK(m.n == 1);
        CHECK_STREQ(m.path[0], "x/y/z/w");

        made_reset(&m);
        fd = chase_dir(root_fd, "a/b/new", &c);
        CHECK(is_inode(fd, "a/b/new"));
        safe_close(fd);
        CHECK(m.n == 1);
        CHECK_STREQ(m.path[0], "a/b/new");
        CHECK(mode_of("a") == 0755 && mode_of("a/b") == 0755 && mode_of("a/b/new") == 0700);

        /* Nothing missing: nothing made. */
        made_reset(&m);
        fd = chase_dir(root_fd, "x/y", &c);
        CHECK(is_inode(fd, "x/y"));
        safe_close(fd);
        CHECK(m.n == 0);
        fd = chase_dir(root_fd, "", &c);
        CHECK(is_inode(fd, "."));
        safe_close(fd);
        CHECK(m.n == 0);

        /* Absolute: the path so far is absolute too. */
        made_reset(&m);
        snprintf(abs, sizeof(abs), "%s/p/q", root_path);
        fd = chase_dir(-EBADF, abs, &c);
        CHECK(is_inode(fd, "p/q"));
        safe_close(fd);
        CHECK(m.n == 2);
        snprintf(want, sizeof(want), "%s/p", root_path);
        CHECK_STREQ(m.path[0], want);
        CHECK_STREQ(m.path[1], abs);

        /* No made(): the directories are still made. */
        fd = chase_dir(root_fd, "nomade/one", &(Chase) { .flags = CHASE_MKDIR });
        CHECK(is_inode(fd, "nomade/one"));
        CHECK(mode_of("nomade") == 0700);
        safe_close(fd);

        /* What made() returns fails the call, at the directory it was made for. */
        made_reset(&m);
        m.ret = -ENOTRECOVERABLE;
        c.failed_len = 0;
        CHECK(chase_ret(root_fd, "e1/e2", &c) == -ENOTRECOVERABLE);
        CHECK(m.n == 1);
        CHECK_STREQ(m.path[0], "e1");
        CHECK(c.failed_len == strlen("e1"));
        CHECK(exists("e1") && !exists("e1/e2"));
        m.ret = 0;

        /*
         * found(): each directory that was there, in order, never one made;
         * what it returns fails the call there.
         */
        {
                Made f = {};
                Chase cf = { .flags = CHASE_MKDIR, .made = record_made, .found = record_made, .userdata = &f };

                made_reset(&m);
                fd = chase_dir(root_fd, "x/y/found-new", &cf);
                CHECK(is_inode(fd, "x/y/found-new"));
                safe_close(fd);
                CHECK(f.n == 3);
                CHECK_STREQ(f.path[0], "x");
                CHECK_STREQ(f.path[1], "x/y");
                CHECK_STREQ(f.path[2], "x/y/found-new");    /* made() */
                CHECK(f.inode_ok[0] && f.inode_ok[1]);
                made_reset(&f);
                cf.flags = 0;
                fd = chase_dir(root_fd, "x/y", &cf);
                CHECK(is_inode(fd, "x/y"));
                safe_close(fd);
                CHECK(f.n == 2);
                made_reset(&f);
                f.ret = -EPERM;
                CHECK(chase_ret(root_fd, "x/y", &cf) == -EPERM);
                CHECK(f.n == 1 && cf.failed_len == strlen("x"));
                made_reset(&f);
        }

        /* Never through a link, and nothing made beyond it. */
        made_reset(&m);
        CHECK_LINK_REFUSED(chase_ret(root_fd, "ln/new/deeper", &c));
        CHECK(c.failed_len == strlen("ln"));
        CHECK(!exists("a/new"));
        CHECK_LINK_REFUSED(chase_ret(root_fd, "a/ln2/new", &c));
        CHECK(!exists("a/b/new/new"));
        CHECK_LINK_REFUSED(chase_ret(root_fd, "a/ln2", &c));
        make_link("ghost", "tomissing");
        CHECK_LINK_REFUSED(chase_ret(root_fd, "tomissing/sub", &c));
        CHECK_LINK_REFUSED(chase_ret(root_fd, "tomissing", &c));
        CHECK(!exists("ghost"));
        CHECK(m.n == 0);

        /* Nor over a file, nor with "..". */
        CHECK(chase_ret(root_fd, "f/x", &c) == -ENOTDIR);
        CHECK(chase_ret(root_fd, "n1/../n2", &c) == -EINVAL);
        CHECK(!exists("n1") && !exists("n2"));
        CHECK(m.n == 0);
        made_reset(&m);
}

static void test_chase_safe(void) {
        Chase c = { .flags = CHASE_SAFE };
        char abs[PATH_MAX];
        int fd;

        if (geteuid() != 0) {
                SKIP("CHASE_SAFE: not root, cannot make root-owned trees and chown");
                return;
        }

        make_dir("s", 0755);
        make_dir("s/ok", 0755);
        make_dir("s/ok/deep", 0755);
        make_dir("s/w777", 0755);
        make_dir("s/w777/sub", 0755);
        make_dir("s/g775", 0755);
        make_dir("s/g775/sub", 0755);
        make_dir("s/nobody", 0755);
        make_dir("s/nobody/sub", 0755);
        make_dir("s/sticky", 0755);
        make_dir("s/sticky/rootent", 0755);
        make_dir("s/sticky/userent", 0755);
        make_dir("s/sticky/rootent/more", 0755);
        CHECK(fchmodat(root_fd, "s/w777", 0777, 0) == 0);
        CHECK(fchmodat(root_fd, "s/g775", 0775, 0) == 0);
        CHECK(fchmodat(root_fd, "s/sticky", 01777, 0) == 0);
        make_owner("s/nobody", 65534);
        make_owner("s/sticky/userent", 65534);

        /* A root tree, 0755 throughout. */
        fd = chase_dir(root_fd, "s/ok/deep", &c);
        CHECK(is_inode(fd, "s/ok/deep"));
        safe_close(fd);
        snprintf(abs, sizeof(abs), "%s/s/ok/deep", root_path);
        fd = chase_dir(-EBADF, abs, &c);
        CHECK(is_inode(fd, "s/ok/deep"));
        safe_close(fd);

        /* World or group writable, not sticky. */
        c.failed_len = 0;
        CHECK(chase_ret(root_fd, "s/w777/sub", &c) == -EPERM);
        CHECK(c.failed_len == strlen("s/w777/sub"));
        CHECK(c.unsafe_len == strlen("s/w777"));
        CHECK(chase_ret(root_fd, "s/g775/sub", &c) == -EPERM);
        /* Not owned by root. */
        CHECK(chase_ret(root_fd, "s/nobody/sub", &c) == -EPERM);
        /* The last directory is not an ancestor: it is not checked. */
        CHECK(chase_ret(root_fd, "s/w777", &c) == 0);
        CHECK(chase_ret(root_fd, "s/nobody", &c) == 0);

        /* Sticky: fine for an entry of root's, not for another user's. */
        fd = chase_dir(root_fd, "s/sticky/rootent", &c);
        CHECK(is_inode(fd, "s/sticky/rootent"));
        safe_close(fd);
        fd = chase_dir(root_fd, "s/sticky/rootent/more", &c);
        CHECK(is_inode(fd, "s/sticky/rootent/more"));
        safe_close(fd);
        CHECK(chase_ret(root_fd, "s/sticky/userent", &c) == -EPERM);

        /* dir_fd itself is looked in, so it is checked too. */
        fd = chase_dir(root_fd, "s/w777", NULL);
        CHECK(fd >= 0);
        CHECK(chase_ret(fd, "sub", &c) == -EPERM);
        CHECK(chase_ret(fd, "sub", NULL) == 0);
        safe_close(fd);

        /* Without the flag, all of these open. */
        CHECK(chase_ret(root_fd, "s/w777/sub", NULL) == 0);
        CHECK(chase_ret(root_fd, "s/nobody/sub", NULL) == 0);
        CHECK(chase_ret(root_fd, "s/sticky/userent", NULL) == 0);

        /* The one-at-a-time walk refuses what the single openat2() does. */
        c.failed_len = 0;
        CHECK_LINK_REFUSED(chase_ret(root_fd, "ln/b", &c));
        CHECK(c.failed_len == strlen("ln"));
        CHECK_LINK_REFUSED(chase_ret(root_fd, "a/ln2/c", &c));
        CHECK_LINK_REFUSED(chase_ret(root_fd, "a/ln2", &c));
        CHECK(chase_ret(root_fd, "f/x", &c) == -ENOTDIR);
        CHECK(c.failed_len == strlen("f"));
        CHECK(chase_ret(root_fd, "a/missing/x/y", &c) == -ENOENT);
        CHECK(c.failed_len == strlen("a/missing"));
        CHECK(chase_ret(root_fd, "a/b/../b", &c) == -EINVAL);
        fd = chase_dir(root_fd, "a/./b//c", &c);
        CHECK(is_inode(fd, "a/b/c"));
        safe_close(fd);
}

/* The checks of the mount namespace child, in the order of its results. */
static const char *const xdev_checks[] = {
        "bind mount has the st_dev of its parent",
        "bind mount has a mount ID other than its parent's",
        "fd_mount_id of the opened mount is the mount's ID",
        "CHASE_NO_XDEV: the mount point itself is -EXDEV",
        "CHASE_NO_XDEV: a path through the mount is -EXDEV",
        "CHASE_NO_XDEV|CHASE_SAFE: a path through the mount is -EXDEV",
        "CHASE_NO_XDEV|CHASE_MKDIR: -EXDEV, nothing made in the mount",
        "CHASE_NO_XDEV: an absolute path through the mount is -EXDEV",
        "no flag: a path through the mount opens the bound directory",
        "CHASE_NO_XDEV: the bound source, not through the mount, opens",
        "CHASE_NO_XDEV: starting inside the mount opens",
};

static _noreturn_ void xdev_child(int wfd) {
        bool res[ELEMENTSOF(xdev_checks)] = {};
        uint64_t id_m = 0, id_dst = 0, id_fd = 0;
        char abs[PATH_MAX];
        struct stat a, b;
        unsigned i = 0;
        int fd;

        if (unshare(CLONE_NEWNS) < 0)
                _exit(77);
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                _exit(78);
        /* A descriptor opened before unshare() still resolves in the old namespace. */
        safe_close(root_fd);
        root_fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                _exit(2);
        make_dir("m", 0755);
        make_dir("m/src", 0755);
        make_dir("m/src/inner", 0755);
        make_dir("m/dst", 0755);
        make_dir("m/dst/hidden", 0755);
        snprintf(abs, sizeof(abs), "%s/m/dst", root_path);
        {
                char src[PATH_MAX];

                snprintf(src, sizeof(src), "%s/m/src", root_path);
                if (mount(src, abs, NULL, MS_BIND, NULL) < 0)
                        _exit(79);
        }

        res[i++] = fstatat(root_fd, "m", &a, 0) == 0 && fstatat(root_fd, "m/dst", &b, 0) == 0 &&
                a.st_dev == b.st_dev;
        res[i++] = mount_id_at(root_fd, "m", &id_m) == 0 && mount_id_at(root_fd, "m/dst", &id_dst) == 0 &&
                id_m != id_dst;
        fd = chase_dir(root_fd, "m/dst", NULL);
        res[i++] = fd >= 0 && fd_mount_id(fd, &id_fd) == 0 && id_fd == id_dst;
        safe_close(fd);
        res[i++] = chase_ret(root_fd, "m/dst", &(Chase) { .flags = CHASE_NO_XDEV }) == -EXDEV;
        res[i++] = chase_ret(root_fd, "m/dst/inner", &(Chase) { .flags = CHASE_NO_XDEV }) == -EXDEV;
        res[i++] = chase_ret(root_fd, "m/dst/inner",
                             &(Chase) { .flags = CHASE_NO_XDEV | CHASE_SAFE }) == -EXDEV;
        res[i++] = chase_ret(root_fd, "m/dst/made",
                             &(Chase) { .flags = CHASE_NO_XDEV | CHASE_MKDIR }) == -EXDEV &&
                !exists("m/src/made");
        snprintf(abs, sizeof(abs), "%s/m/dst/inner", root_path);
        res[i++] = chase_ret(-EBADF, abs, &(Chase) { .flags = CHASE_NO_XDEV }) == -EXDEV;
        fd = chase_dir(root_fd, "m/dst/inner", NULL);
        res[i++] = is_inode(fd, "m/src/inner");
        safe_close(fd);
        fd = chase_dir(root_fd, "m/src/inner", &(Chase) { .flags = CHASE_NO_XDEV });
        res[i++] = is_inode(fd, "m/src/inner");
        safe_close(fd);
        {
                _cleanup_close_ int dst = chase_dir(root_fd, "m/dst", NULL);

                fd = chase_dir(dst, "inner", &(Chase) { .flags = CHASE_NO_XDEV });
                res[i++] = is_inode(fd, "m/src/inner");
                safe_close(fd);
        }

        if (i != ELEMENTSOF(res) || write(wfd, res, sizeof(res)) != (ssize_t) sizeof(res))
                _exit(2);
        _exit(0);
}

static void test_chase_no_xdev(void) {
        bool res[ELEMENTSOF(xdev_checks)] = {};
        const char *skip = NULL;
        int pfd[2], status = 0;
        ssize_t got = 0;
        pid_t pid;

        if (pipe2(pfd, O_CLOEXEC) < 0) {
                CHECK(!"pipe2() failed");
                return;
        }
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                close(pfd[0]);
                xdev_child(pfd[1]);      /* never returns */
        }
        CHECK(pid >= 0);
        if (pid < 0)
                return;
        close(pfd[1]);
        got = read(pfd[0], res, sizeof(res));
        close(pfd[0]);
        CHECK(waitpid(pid, &status, 0) == pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                skip = "CHASE_NO_XDEV: unshare(CLONE_NEWNS) failed";
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 78)
                skip = "CHASE_NO_XDEV: cannot make / private in the new mount namespace";
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 79)
                skip = "CHASE_NO_XDEV: bind mount failed";
        if (skip) {
                for (size_t i = 0; i < ELEMENTSOF(xdev_checks); i++)
                        SKIP(skip);
                return;
        }
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(got == (ssize_t) sizeof(res));
        for (size_t i = 0; i < ELEMENTSOF(xdev_checks); i++) {
                printf("# %s\n", xdev_checks[i]);
                CHECK(got == (ssize_t) sizeof(res) && res[i]);
        }
        /* The mount went with the child's namespace. */
        CHECK(exists("m/dst/hidden") && !exists("m/dst/inner"));
}

int main(void) {
        char tmpl[] = "/tmp/test-chase-XXXXXX", real[PATH_MAX];
        int r;

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

        test_chase_dir_plain();
        test_chase_parent();
        test_chase_mkdir();
        test_chase_safe();
        test_chase_no_xdev();

        r = rm_rf_at(AT_FDCWD, root_path);
        CHECK(r == 0);
        CHECK(access(root_path, F_OK) < 0 && errno == ENOENT);
        safe_close(root_fd);
        return tests_end();
}
