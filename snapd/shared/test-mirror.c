/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The tree walker, with the clone step replaced by a test double that
 * copies (the host's filesystem has no reflinks; the daemon itself never
 * copies).  A tree with every kind of entry is mirrored, then judged by
 * rsync -aHAXn --checksum, and the deep part beyond PATH_MAX by hand.
 */
#include <acl/libacl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include "copy-meta.h"
#include "macro.h"
#include "clone-double.h"
#include "tests.h"
#include "mirror.h"



static int eopnotsupp(int src, int dst_dir, const char *name, void *userdata) {
        return -EOPNOTSUPP;
}

static int eio(int src, int dst_dir, const char *name, void *userdata) {
        return -EIO;
}

/*
 * A clone step that meets another: each call waits (10 s at most) until
 * two are running at once.  With the hard link table's lock held across a
 * clone, the clones of two linked files could never overlap.
 */
typedef struct Meet {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int running, met;
} Meet;

static int meeting_clone(int src, int dst_dir, const char *name, void *userdata) {
        Meet *m = userdata;
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&m->lock);
        m->running++;
        pthread_cond_broadcast(&m->cond);
        while (m->running < 2 && pthread_cond_timedwait(&m->cond, &m->lock, &until) == 0)
                ;
        if (m->running >= 2)
                m->met++;
        pthread_mutex_unlock(&m->lock);
        return clone_double(src, dst_dir, name, NULL);
}

/*
 * A process holding write leases on files, which writes "v2" over their
 * first bytes and lets go only once all of them are broken (a server
 * flushing its clients' writes on a break).  Returns its pid, once the
 * leases are held.
 */
static pid_t hold_leases(int dir, char *const names[], size_t n) {
        int ready[2];
        pid_t pid;
        char c;

        if (pipe(ready) < 0)
                exit(2);
        pid = fork();
        if (pid < 0)
                exit(2);
        if (pid == 0) {
                int fds[8];
                sigset_t set;
                size_t broken = 0;

                sigemptyset(&set);
                sigaddset(&set, SIGRTMIN);
                sigprocmask(SIG_BLOCK, &set, NULL);
                for (size_t i = 0; i < n; i++) {
                        fds[i] = openat(dir, names[i], O_RDWR | O_CLOEXEC);
                        if (fds[i] < 0 || fcntl(fds[i], F_SETSIG, SIGRTMIN) < 0 ||
                            fcntl(fds[i], F_SETLEASE, F_WRLCK) < 0)
                                _exit(1);
                }
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                while (broken < n) {
                        siginfo_t si;

                        if (sigwaitinfo(&set, &si) == SIGRTMIN)
                                broken++;
                }
                for (size_t i = 0; i < n; i++)
                        if (pwrite(fds[i], "v2", 2, 0) != 2 || fcntl(fds[i], F_SETLEASE, F_UNLCK) < 0)
                                _exit(1);
                _exit(0);
        }
        close(ready[1]);
        if (read(ready[0], &c, 1) != 1) {
                waitpid(pid, NULL, 0);
                pid = -1;       /* no leases here (a filesystem without them) */
        }
        close(ready[0]);
        return pid;
}

static void sh(const char *cmd) {
        if (system(cmd) != 0) {
                fprintf(stderr, "failed: %s\n", cmd);
                exit(2);
        }
}

static char *run(const char *cmd) {
        char *out = NULL;
        size_t size = 0;
        FILE *m = open_memstream(&out, &size);
        FILE *p = popen(cmd, "r");
        int c;

        while (p && (c = fgetc(p)) != EOF)
                fputc(c, m);
        if (p)
                pclose(p);
        fclose(m);
        return out;
}

/* A tree of every kind of thing the snapshot must keep. */
static void make_tree(const char *src) {
        char cmd[8192];
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        int sock;

        snprintf(cmd, sizeof(cmd),
                 "set -e; cd '%s'; umask 022\n"
                 "printf 'hello\\n' > plain\n"
                 "printf 'suid\\n' > suid && chmod 4755 suid\n"
                 "printf 'sgid\\n' > sgid && chown 1234:5678 sgid && chmod 2750 sgid\n"
                 "printf 'owned\\n' > owned && chown 4321:8765 owned && chmod 640 owned\n"
                 "printf 'x' > 'name with spaces' && printf 'y' > \"$(printf 'new\\nline')\"\n"
                 "printf 'z' > 'ünïcödé ✓'\n"
                 "mkdir -p empty sub/deeper 'dir with space'\n"
                 "printf 'deep\\n' > sub/deeper/file\n"
                 "ln sub/deeper/file hardlink1 && ln sub/deeper/file sub/hardlink2\n"
                 "ln -s plain link && ln -s /etc etc-link && ln -s nowhere dangling\n"
                 "mkfifo fifo && mknod null c 1 3 && mknod blk b 7 0\n"
                 "truncate -s 10M sparse && printf 'data' | dd of=sparse bs=1 seek=5000000 conv=notrunc status=none\n"
                 "setfacl -m u:3000:rw,g:3001:r plain\n"
                 "setfacl -m u:3000:rx sub && setfacl -d -m u:3000:rwx,g:3001:rx sub\n"
                 "setfattr -n user.comment -v 'kept' plain && setfattr -n trusted.t -v 1 plain\n"
                 "setfattr -n user.dir -v d sub\n"
                 "mkdir -p skipme && printf 'tmp' > a.tmp && printf 'tmp' > sub/b.tmp\n"
                 "chmod 1777 empty && chown 99:99 empty && chattr +A +d empty\n"
                 "touch -h -d '2001-02-03 04:05:06' link && touch -d '2002-03-04 05:06:07' plain sub\n",
                 src);
        sh(cmd);
        /* A relative name: the tree's path may not fit in sun_path. */
        strcpy(sun.sun_path, "sock");
        sock = socket(AF_UNIX, SOCK_STREAM, 0);
        if (sock < 0 || chdir(src) < 0 || bind(sock, (struct sockaddr *) &sun, sizeof(sun)) < 0 ||
            chdir("/") < 0)
                exit(2);
        close(sock);
}

/* A chain of directories deeper than PATH_MAX, a file at the bottom. */
#define DEEP_LEVELS 45
#define DEEP_NAME "d123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"

static int make_deep(const char *root) {
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || mkdirat(fd, "deep", 0755) < 0)
                return -1;
        for (int i = 0, next; i <= DEEP_LEVELS; i++) {
                next = openat(fd, i == 0 ? "deep" : DEEP_NAME, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                close(fd);
                if (next < 0)
                        return -1;
                fd = next;
                if (i < DEEP_LEVELS && mkdirat(fd, DEEP_NAME, 0755) < 0)
                        return -1;
        }
        {
                int f = openat(fd, "bottom", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                bool ok = f >= 0 && write(f, "bottom\n", 7) == 7;

                safe_close(f);
                close(fd);
                return ok ? 0 : -1;
        }
}

/* Read the bottom file of the deep chain under root; its content or NULL. */
static char *read_deep(const char *root, mode_t *mode) {
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        static char buf[64];
        struct stat st;
        ssize_t n;

        for (int i = 0; fd >= 0 && i <= DEEP_LEVELS; i++) {
                int next = openat(fd, i == 0 ? "deep" : DEEP_NAME, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                close(fd);
                fd = next;
        }
        if (fd < 0)
                return NULL;
        n = readlinkat(fd, "bottom", buf, sizeof(buf));     /* must not be a symlink */
        if (n >= 0)
                return NULL;
        int f = openat(fd, "bottom", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        if (f < 0 || fstat(f, &st) < 0)
                return NULL;
        *mode = st.st_mode;
        n = read(f, buf, sizeof(buf) - 1);
        close(f);
        if (n < 0)
                return NULL;
        buf[n] = '\0';
        return buf;
}

int main(void) {
        char base[] = "/var/tmp/refsnap-test-walk.XXXXXX";
        char src[PATH_MAX], dst[PATH_MAX], dst2[PATH_MAX], cmd[PATH_MAX * 3];
        char *exclude[] = { "*.tmp", "/skipme/", NULL };
        _cleanup_close_ int sfd = -EBADF, dfd = -EBADF;
        _cleanup_free_ char *diff = NULL;
        struct stat st, st2;
        mode_t mode = 0;
        FILE *log;
        char *text;
        int r;

        if (geteuid() != 0) {
                printf("not ok 1 - the walker test needs root (owners, device nodes)\n");
                return 1;
        }
        if (!mkdtemp(base))
                return 2;
        snprintf(src, sizeof(src), "%s/src", base);
        snprintf(dst, sizeof(dst), "%s/snap", base);
        snprintf(dst2, sizeof(dst2), "%s/snap2", base);
        if (mkdir(src, 0755) < 0 || mkdir(dst, 0700) < 0 || mkdir(dst2, 0700) < 0)
                return 2;
        make_tree(src);
        CHECK(make_deep(src) == 0);
        /* The store inside the source is never entered. */
        snprintf(cmd, sizeof(cmd), "mkdir -p '%s/.store/old' && echo old > '%s/.store/old/f'", src, src);
        sh(cmd);

        sfd = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        snprintf(cmd, sizeof(cmd), "%s/.store", src);
        CHECK(stat(cmd, &st) == 0);
        {
                Mirror w = { .ops = &clone_double_ops, .exclude = exclude, .skip = file_id(&st), .log = stderr };

                r = mirror_tree(&w, sfd, dfd);
                CHECK(r == 0);
                printf("# files %llu dirs %llu symlinks %llu specials %llu hardlinks %llu excluded %llu\n",
                       (unsigned long long) w.stats.files, (unsigned long long) w.stats.dirs,
                       (unsigned long long) w.stats.symlinks, (unsigned long long) w.stats.specials,
                       (unsigned long long) w.stats.hardlinks, (unsigned long long) w.stats.excluded);
                CHECK(w.stats.hardlinks == 2);
                CHECK(w.stats.symlinks == 3);
                CHECK(w.stats.specials == 4);             /* fifo, null, blk, sock */
                CHECK(w.stats.excluded == 3);             /* a.tmp, sub/b.tmp, skipme */
                CHECK(w.stats.files == (uint64_t) clone_double_calls);
        }

        /* rsync is the independent judge; the deep chain is judged below. */
        snprintf(cmd, sizeof(cmd),
                 "rsync -aHAXn --checksum --itemize-changes --exclude=/deep --exclude=/.store "
                 "--exclude='*.tmp' --exclude=/skipme/ '%s/' '%s/' 2>&1", src, dst);
        diff = run(cmd);
        CHECK(diff && diff[0] == '\0');
        if (diff && diff[0])
                printf("# rsync: %s\n", diff);

        text = read_deep(dst, &mode);
        CHECK(text && strcmp(text, "bottom\n") == 0);
        CHECK(mode == (S_IFREG | 0644));
        snprintf(cmd, sizeof(cmd), "%s/.store", dst);
        CHECK(lstat(cmd, &st2) < 0 && errno == ENOENT);
        snprintf(cmd, sizeof(cmd), "%s/skipme", dst);
        CHECK(lstat(cmd, &st2) < 0 && errno == ENOENT);
        /* A directory's inode flags (here NOATIME and NODUMP, which ext4 has too). */
        {
                char c2[PATH_MAX * 5];

                snprintf(c2, sizeof(c2), "test \"$(lsattr -d '%s/empty' | cut -c1-22)\" = "
                         "\"$(lsattr -d '%s/empty' | cut -c1-22)\" && lsattr -d '%s/empty' | grep -q '^[^ ]*A' && "
                         "lsattr -d '%s/empty' | grep -q '^[^ ]*d'", src, dst, dst, dst);
                CHECK(system(c2) == 0);
        }
        snprintf(cmd, sizeof(cmd), "%s/etc-link", dst);
        CHECK(lstat(cmd, &st2) == 0 && S_ISLNK(st2.st_mode));
        snprintf(cmd, sizeof(cmd), "%s/sparse", dst);
        CHECK(stat(cmd, &st2) == 0 && st2.st_size == 10 * 1024 * 1024 && st2.st_blocks < 1024);
        {
                char a[PATH_MAX + 32], b[PATH_MAX + 32];
                struct stat sa, sb;

                snprintf(a, sizeof(a), "%s/hardlink1", dst);
                snprintf(b, sizeof(b), "%s/sub/deeper/file", dst);
                CHECK(stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_ino == sb.st_ino && sa.st_nlink == 3);
        }

        /*
         * The same with the root's directories shared among three workers:
         * the same counts, the same tree, hard links across workers kept.
         */
        {
                char par[PATH_MAX + 16];
                _cleanup_close_ int pfd = -EBADF;
                int before = clone_double_calls;
                Mirror w = { .ops = &clone_double_ops, .exclude = exclude, .skip = file_id(&st), .log = stderr, .workers = 3 };

                snprintf(cmd, sizeof(cmd), "%s/.store", src);
                CHECK(stat(cmd, &st2) == 0 && st2.st_ino == st.st_ino);
                snprintf(par, sizeof(par), "%s/par", base);
                CHECK(mkdir(par, 0700) == 0);
                pfd = open(par, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                CHECK(mirror_tree(&w, sfd, pfd) == 0);
                CHECK(w.stats.hardlinks == 2 && w.stats.symlinks == 3 && w.stats.specials == 4 &&
                      w.stats.excluded == 3);
                CHECK(w.stats.files == (uint64_t) (clone_double_calls - before));
                snprintf(cmd, sizeof(cmd),
                         "rsync -aHAXn --checksum --itemize-changes --exclude=/deep --exclude=/.store "
                         "--exclude='*.tmp' --exclude=/skipme/ '%s/' '%s/' 2>&1", src, par);
                free(diff);
                diff = run(cmd);
                CHECK(diff && diff[0] == '\0');
                if (diff && diff[0])
                        printf("# rsync (3 workers): %s\n", diff);
                text = read_deep(par, &mode);
                CHECK(text && strcmp(text, "bottom\n") == 0);
                {
                        char a[PATH_MAX + 32], b[PATH_MAX + 32];
                        struct stat sa, sb;

                        snprintf(a, sizeof(a), "%s/hardlink1", par);
                        snprintf(b, sizeof(b), "%s/sub/hardlink2", par);
                        CHECK(stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_ino == sb.st_ino &&
                              sa.st_nlink == 3);
                }
        }

        /* Changing the source later leaves the mirror as it was. */
        snprintf(cmd, sizeof(cmd), "echo changed > '%s/plain' && rm '%s/link'", src, src);
        sh(cmd);
        snprintf(cmd, sizeof(cmd), "%s/plain", dst);
        {
                FILE *f = fopen(cmd, "re");
                char line[32] = "";

                CHECK(f && fgets(line, sizeof(line), f) && strcmp(line, "hello\n") == 0);
                if (f)
                        fclose(f);
        }

        /* Cancelled: stops with -ECANCELED. */
        {
                volatile sig_atomic_t cancel = 1;
                _cleanup_close_ int d2 = open(dst2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                Mirror w = { .ops = &clone_double_ops, .cancel = &cancel, .log = stderr };

                CHECK(mirror_tree(&w, sfd, d2) == -ECANCELED);
        }

        /*
         * A file the kernel will not share (EOPNOTSUPP for that pair) is
         * skipped and counted, not a failure; whether the filesystem can
         * reflink at all is snapshot.c's probe.  An I/O error fails the
         * walk, with the path.
         */
        {
                static const MirrorOps refusing = { .clone = eopnotsupp };
                _cleanup_close_ int d4 = -EBADF;
                char dst4[PATH_MAX];

                snprintf(dst4, sizeof(dst4), "%s/snap4", base);
                CHECK(mkdir(dst4, 0700) == 0);
                d4 = open(dst4, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                {
                        Mirror w = { .ops = &refusing, .log = stderr, .skip_refused = true };

                        CHECK(mirror_tree(&w, sfd, d4) == 0);
                        CHECK(w.stats.skipped > 0 && w.stats.files == 0);
                }
                /* Without skip_refused (a restore): a failure, never a file left out. */
                CHECK(mkdir(dst4, 0700) == 0 || errno == EEXIST);
                {
                        _cleanup_close_ int d5 = -EBADF;
                        char dst5[PATH_MAX];
                        Mirror w = { .ops = &refusing, .log = stderr };

                        snprintf(dst5, sizeof(dst5), "%s/snap5", base);
                        CHECK(mkdir(dst5, 0700) == 0);
                        d5 = open(dst5, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        CHECK(mirror_tree(&w, sfd, d5) == -EOPNOTSUPP);
                }
        }
        {
                static const MirrorOps failing = { .clone = eio };
                _cleanup_close_ int d3 = -EBADF;
                char dst3[PATH_MAX];
                char *msg = NULL;
                size_t size = 0;

                snprintf(dst3, sizeof(dst3), "%s/snap3", base);
                CHECK(mkdir(dst3, 0700) == 0);
                d3 = open(dst3, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                log = open_memstream(&msg, &size);
                {
                        Mirror w = { .ops = &failing, .log = log };

                        CHECK(mirror_tree(&w, sfd, d3) == -EIO);
                }
                fclose(log);
                CHECK(msg && strstr(msg, ": cannot reflink: Input/output error"));
                free(msg);
        }

        /*
         * The hard link table's lock is not held across a clone: two
         * files of two links each, in two directories that two workers
         * walk, are cloned at the same time.
         */
        {
                char hl[PATH_MAX], hd[PATH_MAX];
                _cleanup_close_ int hs = -EBADF, hdd = -EBADF;
                Meet meet = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
                MirrorOps ops = { .clone = meeting_clone, .userdata = &meet };
                Mirror w = { .ops = &ops, .log = stderr, .workers = 2 };
                struct stat a, b;

                snprintf(hl, sizeof(hl), "%s/hl", base);
                snprintf(hd, sizeof(hd), "%s/hl-snap", base);
                snprintf(cmd, sizeof(cmd), "set -e; cd '%s'; mkdir -p hl/a hl/b hl-snap; echo x > hl/a/x; ln hl/a/x hl/a/x2; "
                         "echo y > hl/b/y; ln hl/b/y hl/b/y2", base);
                sh(cmd);
                hs = open(hl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                hdd = open(hd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                CHECK(mirror_tree(&w, hs, hdd) == 0);
                CHECK(meet.met == 2);
                CHECK(w.stats.files == 2 && w.stats.hardlinks == 2);
                CHECK(fstatat(hdd, "a/x", &a, 0) == 0 && fstatat(hdd, "a/x2", &b, 0) == 0 && stat_inode_same(&a, &b));
                CHECK(fstatat(hdd, "b/y", &a, 0) == 0 && fstatat(hdd, "b/y2", &b, 0) == 0 && stat_inode_same(&a, &b));
        }
        /*
         * Write leases on three files (two of them links of one), whose
         * holder flushes only once all are broken: the walk begins every
         * break before it waits for any, and each copy has the flushed
         * data.  One waiting out each break in turn (fs.lease-break-time,
         * 45 s) would copy the first stale.
         */
        {
                char ld[PATH_MAX], lsnap[PATH_MAX];
                _cleanup_close_ int lsrc = -EBADF, ldst = -EBADF;
                char *names[] = { "f1", "f2", "sub/f3" };
                char *msg = NULL;
                size_t size = 0;
                pid_t holder;
                int status;

                snprintf(ld, sizeof(ld), "%s/leased", base);
                snprintf(lsnap, sizeof(lsnap), "%s/leased-snap", base);
                snprintf(cmd, sizeof(cmd), "set -e; cd '%s'; mkdir -p leased/sub leased-snap; echo v1-1 > leased/f1; "
                         "echo v1-2 > leased/f2; echo v1-3 > leased/sub/f3; ln leased/sub/f3 leased/f3-link; "
                         "echo plain > leased/sub/plain", base);
                sh(cmd);
                lsrc = open(ld, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ldst = open(lsnap, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                holder = hold_leases(lsrc, names, ELEMENTSOF(names));
                if (holder < 0)
                        SKIP("no leases on this filesystem");
                else {
                        Mirror w = { .ops = &clone_double_ops, .log = open_memstream(&msg, &size), .skip_refused = true };
                        time_t t0 = time(NULL);

                        CHECK(mirror_tree(&w, lsrc, ldst) == 0);
                        fclose(w.log);
                        printf("# the walk over three leased files: %lld s\n", (long long) (time(NULL) - t0));
                        CHECK(waitpid(holder, &status, 0) == holder && WIFEXITED(status) && WEXITSTATUS(status) == 0);
                        snprintf(cmd, sizeof(cmd), "cd '%s/leased-snap' && cat f1 f2 sub/f3 f3-link sub/plain", base);
                        text = run(cmd);
                        CHECK_STREQ(text, "v2-1\nv2-2\nv2-3\nv2-3\nplain\n");
                        free(text);
                        CHECK(w.stats.files == 4 && w.stats.hardlinks == 1 && w.stats.skipped == 0);
                        CHECK(msg && strstr(msg, "f1: another process holds a lease on it"));
                        free(msg);
                }
        }

        /*
         * no_links (a snapshot whose facts count no link within it): every
         * file made on its own, without the table, whatever its link count;
         * without it a pair linked within the tree stays one inode.
         */
        {
                char nl[PATH_MAX + 16];
                _cleanup_close_ int nfd = -EBADF, o1 = -EBADF, o2 = -EBADF;
                Mirror a = { .ops = &clone_double_ops, .log = stderr, .no_links = true },
                       b = { .ops = &clone_double_ops, .log = stderr };
                struct stat x, y;

                snprintf(nl, sizeof(nl), "%s/nl", base);
                snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cd '%s' && mkdir t o1 o2 && echo x > t/x && ln t/x t/y", nl, nl);
                sh(cmd);
                nfd = open(nl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                o1 = openat(nfd, "o1", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                o2 = openat(nfd, "o2", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                CHECK(mirror_entry(&a, nfd, "t", o1) == 0 && a.stats.hardlinks == 0 && a.stats.files == 2);
                CHECK(fstatat(o1, "t/x", &x, 0) == 0 && fstatat(o1, "t/y", &y, 0) == 0 && x.st_ino != y.st_ino &&
                      x.st_nlink == 1);
                CHECK(mirror_entry(&b, nfd, "t", o2) == 0 && b.stats.hardlinks == 1 && b.stats.files == 1);
                CHECK(fstatat(o2, "t/x", &x, 0) == 0 && fstatat(o2, "t/y", &y, 0) == 0 && x.st_ino == y.st_ino);
        }

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        sh(cmd);
        return tests_end();
}
