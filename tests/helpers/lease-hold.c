/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lease-hold: a lease holder that flushes only when every lease it holds
 * has been broken, for the VM tests.
 *
 *   lease-hold STATUS w:FILE... [r:FILE...]
 *
 * Takes a write lease (F_WRLCK) on each w:FILE, opened read-write, and a
 * read lease (F_RDLCK) on each r:FILE, opened read-only, then prints the
 * pid of the process holding them and leaves it running.  That process
 * appends to STATUS a line "break FILE MS" for each lease break the
 * kernel signals (MS: milliseconds since the first), and once every
 * write lease has been broken it rewrites each w:FILE's first two bytes
 * with "v2" (its cached writes, as a Samba or NFS server flushes on a
 * break), releases the write leases and appends "released".  It keeps
 * the read leases until SIGTERM, then appends "end" and exits.  So a
 * reader that waits out each break in turn (the kernel's
 * fs.lease-break-time each) clones every file but the last before the
 * flush; one that starts all the breaks before it waits for any sees
 * "v2" in all of them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 64

static long long now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char *argv[]) {
        int fds[MAX_FILES];
        bool writing[MAX_FILES], broken[MAX_FILES] = {};
        const char *names[MAX_FILES];
        int n = 0, n_write = 0, n_broken = 0, ready[2];
        long long first = -1;
        FILE *status;
        sigset_t set;
        pid_t pid;

        if (argc < 3 || argc - 2 > MAX_FILES) {
                fprintf(stderr, "usage: lease-hold STATUS w:FILE... [r:FILE...]\n");
                return 2;
        }
        status = fopen(argv[1], "ae");
        if (!status) {
                fprintf(stderr, "lease-hold: %s: %s\n", argv[1], strerror(errno));
                return 1;
        }
        setvbuf(status, NULL, _IOLBF, 0);
        sigemptyset(&set);
        sigaddset(&set, SIGRTMIN);
        sigaddset(&set, SIGTERM);
        sigprocmask(SIG_BLOCK, &set, NULL);
        /*
         * The leases are taken in the process that keeps them: the kernel
         * signals a break to the process that took the lease.
         */
        if (pipe2(ready, O_CLOEXEC) < 0) {
                fprintf(stderr, "lease-hold: pipe: %s\n", strerror(errno));
                return 1;
        }
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "lease-hold: fork: %s\n", strerror(errno));
                return 1;
        }
        if (pid > 0) {
                char msg[512] = "";

                close(ready[1]);
                if (read(ready[0], msg, sizeof(msg) - 1) < 0 || strcmp(msg, "ok") != 0) {
                        fprintf(stderr, "lease-hold: %s\n", msg[0] ? msg : "the holder died");
                        return 1;
                }
                printf("%d\n", (int) pid);
                return 0;
        }
        close(ready[0]);
        for (int i = 2; i < argc; i++, n++) {
                if (strncmp(argv[i], "w:", 2) != 0 && strncmp(argv[i], "r:", 2) != 0) {
                        dprintf(ready[1], "%s: not w:FILE or r:FILE", argv[i]);
                        return 2;
                }
                writing[n] = argv[i][0] == 'w';
                names[n] = argv[i] + 2;
                n_write += writing[n];
                fds[n] = open(names[n], (writing[n] ? O_RDWR : O_RDONLY) | O_CLOEXEC);
                if (fds[n] < 0 || fcntl(fds[n], F_SETSIG, SIGRTMIN) < 0 ||
                    fcntl(fds[n], F_SETLEASE, writing[n] ? F_WRLCK : F_RDLCK) < 0) {
                        dprintf(ready[1], "%s: %s", names[n], strerror(errno));
                        return 1;
                }
        }
        {
                int null = open("/dev/null", O_RDWR);

                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
        }
        setsid();
        if (write(ready[1], "ok", 2) != 2)
                return 1;
        close(ready[1]);
        for (;;) {
                siginfo_t si;
                int sig = sigwaitinfo(&set, &si);

                if (sig == SIGTERM)
                        break;
                if (sig != SIGRTMIN)
                        continue;
                for (int i = 0; i < n; i++) {
                        if (fds[i] != si.si_fd || broken[i])
                                continue;
                        if (first < 0)
                                first = now_ms();
                        broken[i] = true;
                        fprintf(status, "break %s %lld\n", names[i], now_ms() - first);
                        if (writing[i] && ++n_broken == n_write) {
                                for (int k = 0; k < n; k++)
                                        if (writing[k] && (pwrite(fds[k], "v2", 2, 0) != 2 ||
                                                           fcntl(fds[k], F_SETLEASE, F_UNLCK) < 0))
                                                fprintf(status, "error %s %s\n", names[k], strerror(errno));
                                fprintf(status, "released\n");
                        }
                }
        }
        fprintf(status, "end\n");
        return 0;
}
