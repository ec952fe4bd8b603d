/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stock path of reflinkat(): its refusals anywhere (bad arguments,
 * not a regular file, a taken name), and nothing named after a failure,
 * such as a filesystem that cannot share extents (the host's /var/tmp is
 * usually one).  Where REFSNAP_TEST_REFLINK_DIR names a directory on a
 * filesystem that can (btrfs, XFS), the new file itself: same data,
 * attributes as asked, a taken name refused.  The VM suite "stock" runs
 * the daemon's fidelity cases through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "reflink.h"
#include "rm-rf.h"
#include "tests.h"

static int stock(int dir, const char *from, const char *to, unsigned preserve, unsigned flags) {
        return reflinkat_stock(dir, from, dir, to, preserve, flags) < 0 ? -errno : 0;
}

static int write_file(int dir, const char *name, const char *data, mode_t mode) {
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

        if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t) strlen(data))
                return -1;
        return fchmod(fd, mode);
}

static void refusals(int dir) {
        CHECK(write_file(dir, "src", "data\n", 0640) == 0);
        CHECK(stock(dir, "src", "x", REFLINK_ATTR_SECURITY, 0) == -EINVAL);
        CHECK(stock(dir, "src", "x", REFLINK_ATTR_ACL, 0) == -EINVAL);
        CHECK(stock(dir, "src", "x", 0x10, 0) == -EINVAL);
        CHECK(stock(dir, "src", "x", 0, AT_REMOVEDIR) == -EINVAL);
        CHECK(stock(dir, "", "x", 0, 0) == -ENOENT);
        CHECK(stock(dir, "nonexistent", "x", 0, 0) == -ENOENT);
        CHECK(mkdirat(dir, "d", 0755) == 0);
        CHECK(stock(dir, "d", "x", 0, 0) == -EPERM);
        CHECK(mkfifoat(dir, "fifo", 0644) == 0);
        CHECK(stock(dir, "fifo", "x", 0, 0) == -EINVAL);        /* and not blocked opening it */
        CHECK(symlinkat("src", dir, "link") == 0);
        CHECK(stock(dir, "link", "x", 0, 0) == -EINVAL);
        CHECK(stock(dir, "src", "d", 0, 0) == -EEXIST);
        CHECK(stock(dir, "src", "link", 0, 0) == -EEXIST);
        CHECK(symlinkat("nowhere", dir, "dangling") == 0);
        CHECK(stock(dir, "src", "dangling", 0, 0) == -EEXIST);
        CHECK(stock(dir, "src", ".", 0, 0) == -EEXIST);
        CHECK(stock(dir, "src", "x/", 0, 0) == -ENOENT);
        CHECK(reflinkat_stock(AT_FDCWD, "", dir, "x", 0, AT_EMPTY_PATH) < 0 && errno == EPERM);  /* the cwd: a directory */
        CHECK(stock(dir, "src", "nodir/x", 0, 0) == -ENOENT);
        CHECK(faccessat(dir, "x", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
}

/* On a filesystem without shared extents: EOPNOTSUPP, nothing named, nothing left. */
static void no_sharing(int dir) {
        int r = stock(dir, "src", "new", REFLINK_ATTR_ALL, 0);

        if (r == 0) {
                SKIP("this filesystem shares extents: nothing to refuse");
                return;
        }
        CHECK(r == -EOPNOTSUPP);
        CHECK(faccessat(dir, "new", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
}

static void sharing(const char *path) {
        _cleanup_close_ int dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        struct stat a, b;
        char buf[16] = "", p[PATH_MAX];
        int fd;

        CHECK(dir >= 0);
        (void) unlinkat(dir, "stock-src", 0);
        (void) unlinkat(dir, "stock-new", 0);
        CHECK(write_file(dir, "stock-src", "shared\n", 04751) == 0);
        CHECK(fchownat(dir, "stock-src", 1234, 5678, 0) == 0);
        CHECK(fchmodat(dir, "stock-src", 04751, 0) == 0);
        snprintf(p, sizeof(p), "%s/stock-src", path);
        CHECK(setxattr(p, "user.k", "v", 1, 0) == 0);
        CHECK(stock(dir, "stock-src", "stock-new", REFLINK_ATTR_ALL, 0) == 0);
        CHECK(fstatat(dir, "stock-src", &a, 0) == 0 && fstatat(dir, "stock-new", &b, 0) == 0);
        CHECK(a.st_ino != b.st_ino && b.st_nlink == 1);
        CHECK(b.st_uid == 1234 && b.st_gid == 5678 && (b.st_mode & 07777) == 04751);
        CHECK(b.st_mtim.tv_sec == a.st_mtim.tv_sec && b.st_mtim.tv_nsec == a.st_mtim.tv_nsec);
        snprintf(p, sizeof(p), "%s/stock-new", path);
        CHECK(getxattr(p, "user.k", buf, sizeof(buf)) == 1 && buf[0] == 'v');
        memset(buf, 0, sizeof(buf));
        fd = openat(dir, "stock-new", O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0 && read(fd, buf, sizeof(buf) - 1) == 7 && strcmp(buf, "shared\n") == 0);
        safe_close(fd);
        CHECK(stock(dir, "stock-src", "stock-new", REFLINK_ATTR_NONE, 0) == -EEXIST);
        (void) unlinkat(dir, "stock-src", 0);
        (void) unlinkat(dir, "stock-new", 0);
}

int main(void) {
        char base[] = "/var/tmp/refsnap-test-stock.XXXXXX";
        _cleanup_close_ int dir = -EBADF;
        const char *share = getenv("REFSNAP_TEST_REFLINK_DIR");

        CHECK(mkdtemp(base) != NULL);
        dir = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
        CHECK(dir >= 0);
        refusals(dir);
        no_sharing(dir);
        if (share && geteuid() == 0)
                sharing(share);
        else
                SKIP("no REFSNAP_TEST_REFLINK_DIR (a directory on btrfs or XFS, as root)");
        CHECK(setenv("REFSNAP_REFLINK_PATH", "stock", 1) == 0);
        CHECK(reflink_path() == REFLINK_PATH_STOCK);
        CHECK(strcmp(reflink_path_to_string(reflink_path()), "stock") == 0);
        CHECK(rm_rf_at(AT_FDCWD, base) >= 0);
        return tests_end();
}
