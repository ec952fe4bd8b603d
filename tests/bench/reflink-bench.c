/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * reflink-bench DIR [N]: time making N small-file snapshots two ways, in
 * one run on the same filesystem:
 *   reflinkat   one reflinkat(REFLINK_ATTR_ALL) per file;
 *   userspace   what a tool must do today for the same result (as
 *               cp -a --reflink=always): open, create, FICLONE, fchown,
 *               fchmod, ACL and xattr copy, futimens, close;
 *   stock       libreflink's stock-kernel path (reflinkat_stock(): the same
 *               file from O_TMPFILE, FICLONE, attributes and linkat), what
 *               refsnap does on a kernel without reflinkat(2).
 * Prints the three times, the ratio userspace/reflinkat ("ratio") and the
 * ratio stock/reflinkat ("stock-ratio").
 *
 * The source files carry an ACL with a named user (1001), a user.* xattr,
 * and belong to uid and gid 1000, so that keeping the owner
 * changes it; REFLINK_BENCH_OWNER=ID gives them another (0: the caller's
 * own, which costs the copy no owner change).  REFLINK_BENCH_JOBS=N makes
 * the reflinkat snapshots with N processes into the one directory, each
 * taking every Nth file: how the whole call contends in one directory
 * (with files of a few bytes the clone is short; the unlocked directory
 * during a long clone is what the kselftests assert).
 *
 * With XFS in the kernel, also prints the transactions committed per file
 * by each way (XFS's own counters, /sys/fs/xfs/stats/stats, "trans": sync
 * and async commits, for all XFS filesystems, so only meaningful on XFS
 * with nothing else writing one), each phase followed by sync(2).
 *
 * Then, untimed, the same three ways once more from the same sources
 * (by then shared by all three, as a snapshot's source is after the first
 * one: on XFS marked reflink) into directories of their own, with ftrace's
 * function profiler counting the transactions each starts: btrfs's
 * start_transaction() (every handle, joins included) and XFS's
 * xfs_trans_alloc() (every transaction, its rolls not counted again), and
 * on XFS the commits as above; and the calls of security_inode_setxattr(),
 * the security modules' consent to an xattr (one a file for reflinkat,
 * whichever way the filesystem makes it).  Prints "trans-per-file WAY
 * STARTED COMMITTED FN" (COMMITTED -1 off XFS) and "setxattr-hooks-per-file
 * WAY N" for each; nothing where tracefs has no function profiler (mounted
 * on /sys/kernel/tracing, CONFIG_FUNCTION_PROFILER).
 */
#include <acl/libacl.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "reflink.h"
#include "stat-util.h"

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* XFS transactions committed so far on all XFS filesystems, or -1 if FD is not on XFS. */
static long long xfs_transactions(int on) {
        _cleanup_close_ int fd = -EBADF;
        char buf[4096], *p;
        unsigned long long sync_commits, async_commits;
        ssize_t len;

        if (fd_is_fs_type(on, XFS_SUPER_MAGIC) <= 0)
                return -1;
        fd = open("/sys/fs/xfs/stats/stats", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        len = read(fd, buf, sizeof(buf) - 1);
        if (len <= 0)
                return -1;
        buf[len] = 0;
        p = strstr(buf, "\ntrans ");
        if (!p || sscanf(p, "\ntrans %llu %llu", &sync_commits, &async_commits) != 2)
                return -1;
        return (long long) (sync_commits + async_commits);
}

#define TRACEFS "/sys/kernel/tracing/"

/*
 * Write S to the tracefs file NAME, replacing what it held; 0 or -errno.
 * A filter file takes one name per write(2) and says so with a short count.
 */
static int tracefs_write(const char *name, const char *s) {
        _cleanup_close_ int fd = -EBADF;
        size_t len = strlen(s);

        fd = open(name, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while (len > 0) {
                ssize_t n = write(fd, s, len);

                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                s += n;
                len -= n;
        }
        return 0;
}

/* The function profiler counts the functions that start transactions, from 0. */
static int profile_start(void) {
        int r;

        r = tracefs_write(TRACEFS "set_ftrace_filter",
                          "start_transaction\nxfs_trans_alloc\nsecurity_inode_setxattr\n");
        if (r < 0)
                return r;
        /* Turning it on clears what it counted, if it was off: off first (a run killed meanwhile). */
        r = tracefs_write(TRACEFS "function_profile_enabled", "0");
        if (r < 0)
                return r;
        return tracefs_write(TRACEFS "function_profile_enabled", "1");
}

/* Stop counting; what was counted stays readable with profile_count(). */
static int profile_stop(void) {
        int r;

        r = tracefs_write(TRACEFS "function_profile_enabled", "0");
        (void) tracefs_write(TRACEFS "set_ftrace_filter", "");
        return r;
}

/*
 * The calls of FN counted on all CPUs between profile_start() and
 * profile_stop(), or -errno: -ENOTUNIQ when two functions of that name were
 * counted (a static function of another file of the same name, acpi's EC
 * has a start_transaction(): the count would mix them), -ENODATA when none
 * was.
 */
static long long profile_count(const char *fn) {
        long long hits = 0;
        char path[64], line[512], name[128];
        unsigned long long h;
        int cpus = 0, lines = 0;

        for (int cpu = 0;; cpu++) {
                FILE *f;
                int here = 0;

                snprintf(path, sizeof(path), TRACEFS "trace_stat/function%d", cpu);
                f = fopen(path, "re");
                if (!f)
                        break;
                cpus++;
                while (fgets(line, sizeof(line), f))
                        if (sscanf(line, " %127s %llu", name, &h) == 2 && strcmp(name, fn) == 0) {
                                hits += h;
                                here++;
                        }
                fclose(f);
                if (here > 1)
                        return -ENOTUNIQ;
                lines += here;
        }
        if (cpus == 0)
                return -ENOENT;
        if (lines == 0)
                return -ENODATA;
        return hits;
}

static int userspace_clone(int sdir, int ddir, const char *name) {
        _cleanup_close_ int in = -EBADF, out = -EBADF;
        char names[1024], value[4096];
        struct timespec ts[2];
        struct stat st;
        ssize_t len;
        acl_t acl;

        in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0 || fstat(in, &st) < 0)
                return -errno;
        out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        if (ioctl(out, FICLONE, in) < 0)
                return -errno;
        if (fchown(out, st.st_uid, st.st_gid) < 0 || fchmod(out, st.st_mode & 07777) < 0)
                return -errno;
        acl = acl_get_fd(in);
        if (acl) {
                if (acl_set_fd(out, acl) < 0) {
                        acl_free(acl);
                        return -errno;
                }
                acl_free(acl);
        }
        len = flistxattr(in, names, sizeof(names));
        for (char *n = names; len > 0 && n < names + len; n += strlen(n) + 1) {
                ssize_t vl;

                if (strncmp(n, "system.", 7) == 0)
                        continue;
                vl = fgetxattr(in, n, value, sizeof(value));
                if (vl >= 0 && fsetxattr(out, n, value, vl, 0) < 0)
                        return -errno;
        }
        ts[0] = st.st_atim;
        ts[1] = st.st_mtim;
        if (futimens(out, ts) < 0)
                return -errno;
        return 0;
}

/* The three ways of making the copy, by the names the output gives them. */
enum { WAY_REFLINKAT, WAY_USERSPACE, WAY_STOCK, _WAY_MAX };
static const char *const way_names[_WAY_MAX] = { "reflinkat", "userspace", "stock" };

/* One copy of NAME from SDIR into DDIR the way WAY makes it; 0 or -errno. */
static int copy_one(int way, int sdir, int ddir, const char *name) {
        switch (way) {
        case WAY_REFLINKAT:
                return reflinkat(sdir, name, ddir, name, REFLINK_ATTR_ALL, 0) < 0 ? -errno : 0;
        case WAY_USERSPACE:
                return userspace_clone(sdir, ddir, name);
        default:
                return reflinkat_stock(sdir, name, ddir, name, REFLINK_ATTR_ALL, 0) < 0 ? -errno : 0;
        }
}

/* Snapshot files j, j + jobs, j + 2 * jobs, ... of N. */
static int reflink_share(int src, int dst, int n, int j, int jobs) {
        char name[32];

        for (int i = j; i < n; i += jobs) {
                int r;

                snprintf(name, sizeof(name), "f%d", i);
                r = copy_one(WAY_REFLINKAT, src, dst, name);
                if (r < 0)
                        return r;
        }
        return 0;
}

/*
 * The snapshots by JOBS processes at once; 0, or a negative errno (a
 * child's, which it exits with).  A failed fork stops the children
 * already started.
 */
static int reflink_all(int src, int dst, int n, int jobs) {
        pid_t pids[64];
        int r = 0, status, started = 0;

        if (jobs <= 1)
                return reflink_share(src, dst, n, 0, 1);
        if (jobs > (int) ELEMENTSOF(pids))
                return -E2BIG;
        for (int j = 0; j < jobs; j++) {
                pids[j] = fork();
                if (pids[j] < 0) {
                        r = -errno;
                        break;
                }
                if (pids[j] == 0)
                        _exit(-reflink_share(src, dst, n, j, jobs));
                started++;
        }
        for (int j = 0; j < started; j++) {
                if (r < 0)
                        (void) kill(pids[j], SIGKILL);
                if (waitpid(pids[j], &status, 0) < 0)
                        r = r < 0 ? r : -errno;
                else if (r == 0 && !WIFEXITED(status))
                        r = -EINTR;
                else if (r == 0 && WEXITSTATUS(status) != 0)
                        r = -WEXITSTATUS(status);
        }
        return r;
}

int main(int argc, char *argv[]) {
        int n = argc > 2 ? atoi(argv[2]) : 10000;
        _cleanup_close_ int base = -EBADF, src = -EBADF, a = -EBADF, b = -EBADF, c = -EBADF;
        double t0, t_reflinkat, t_user, t_stock;
        long long x0, x_reflinkat, x_user;
        const char *owner_env = getenv("REFLINK_BENCH_OWNER");
        const char *jobs_env = getenv("REFLINK_BENCH_JOBS");
        int owner = owner_env ? atoi(owner_env) : 1000;
        int jobs = jobs_env ? atoi(jobs_env) : 1;
        char name[32];
        int r;

        if (argc < 2) {
                fprintf(stderr, "usage: reflink-bench DIR [N]\n");
                return 2;
        }
        base = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (base < 0 || mkdirat(base, "src", 0755) < 0 || mkdirat(base, "a", 0755) < 0 ||
            mkdirat(base, "b", 0755) < 0 || mkdirat(base, "c", 0755) < 0) {
                perror(argv[1]);
                return 1;
        }
        src = openat(base, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        a = openat(base, "a", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        b = openat(base, "b", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        c = openat(base, "c", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* Each file: a named user in its ACL, a user.* xattr, an owner of its own. */
        acl_t file_acl = acl_from_text("u::rw-,u:1001:r--,g::r--,m::r--,o::---");
        if (!file_acl) {
                perror("acl_from_text");
                return 1;
        }
        for (int i = 0; i < n; i++) {
                int fd;

                snprintf(name, sizeof(name), "f%d", i);
                fd = openat(src, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
                if (fd < 0 || write(fd, name, strlen(name)) < 0 ||
                    fsetxattr(fd, "user.bench", "v", 1, 0) < 0 || fchown(fd, owner, owner) < 0 ||
                    acl_set_fd(fd, file_acl) < 0) {
                        perror("setup");
                        return 1;
                }
                close(fd);
        }
        acl_free(file_acl);
        sync();

        x0 = xfs_transactions(base);
        t0 = now();
        r = reflink_all(src, a, n, jobs);
        if (r < 0) {
                fprintf(stderr, "reflinkat: %s\n", strerror(-r));
                return 1;
        }
        t_reflinkat = now() - t0;
        sync();
        x_reflinkat = xfs_transactions(base) - x0;

        x0 = xfs_transactions(base);
        t0 = now();
        for (int i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "f%d", i);
                r = copy_one(WAY_USERSPACE, src, b, name);
                if (r < 0) {
                        fprintf(stderr, "userspace clone: %s\n", strerror(-r));
                        return 1;
                }
        }
        t_user = now() - t0;
        sync();
        x_user = xfs_transactions(base) - x0;

        t0 = now();
        for (int i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "f%d", i);
                r = copy_one(WAY_STOCK, src, c, name);
                if (r < 0) {
                        fprintf(stderr, "stock path: %s\n", strerror(-r));
                        return 1;
                }
        }
        t_stock = now() - t0;

        printf("owner %d\njobs %d\nfiles %d\nreflinkat %.3f s\nuserspace %.3f s\nratio %.2f\n", owner, jobs, n,
               t_reflinkat, t_user, t_user / t_reflinkat);
        if (x0 >= 0)
                printf("xfs-trans-per-file reflinkat %.2f userspace %.2f\n", (double) x_reflinkat / n,
                       (double) x_user / n);
        printf("stock %.3f s\nstock-ratio %.2f\n", t_stock, t_stock / t_reflinkat);

        /* The untimed counting pass: each way once more, into directories of its own. */
        {
                const char *fn = fd_is_fs_type(base, XFS_SUPER_MAGIC) > 0 ? "xfs_trans_alloc" : "start_transaction";

                for (int w = 0; w < _WAY_MAX; w++) {
                        _cleanup_close_ int d = -EBADF;
                        long long started, committed, hooks;
                        char dname[32];

                        snprintf(dname, sizeof(dname), "count-%s", way_names[w]);
                        if (mkdirat(base, dname, 0755) < 0 ||
                            (d = openat(base, dname, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
                                perror(dname);
                                return 1;
                        }
                        sync();
                        r = profile_start();
                        if (r < 0) {
                                /* No function profiler: no counts, said once. */
                                fprintf(stderr, "no transaction counts: function profiler (%s): %s\n",
                                        TRACEFS, strerror(-r));
                                break;
                        }
                        x0 = xfs_transactions(base);
                        for (int i = 0; i < n; i++) {
                                snprintf(name, sizeof(name), "f%d", i);
                                r = copy_one(w, src, d, name);
                                if (r < 0) {
                                        (void) profile_stop();
                                        fprintf(stderr, "%s (counting): %s\n", way_names[w], strerror(-r));
                                        return 1;
                                }
                        }
                        r = profile_stop();
                        started = r < 0 ? r : profile_count(fn);
                        /* Not called at all is a count of 0 here. */
                        hooks = r < 0 ? r : profile_count("security_inode_setxattr");
                        if (hooks == -ENODATA)
                                hooks = 0;
                        if (started < 0 || hooks < 0) {
                                started = started < 0 ? started : hooks;
                                fprintf(stderr, "function profiler: %s\n", strerror((int) -started));
                                return 1;
                        }
                        sync();
                        committed = x0 >= 0 ? xfs_transactions(base) - x0 : -1;
                        printf("trans-per-file %s %.2f %.2f %s\n", way_names[w], (double) started / n,
                               committed < 0 ? -1.0 : (double) committed / n, fn);
                        printf("setxattr-hooks-per-file %s %.2f\n", way_names[w], (double) hooks / n);
                }
        }
        return 0;
}
