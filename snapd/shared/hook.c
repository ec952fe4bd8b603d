/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "hook.h"
#include "macro.h"

static usec_t now_monotonic(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}

/* In the child: a process as the hook should find it, then the hook. */
_noreturn_ static void hook_exec(const char *path, const char *arg, char *const env[]) {
        static const int sigs[] = { SIGHUP, SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2 };
        sigset_t none;
        int null;

        (void) setpgid(0, 0);
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                signal(sigs[i], SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        umask(0022);
        null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0)
                _exit(127);
        /* Nothing of the daemon's: its store lock, its bus, its watch. */
        if (syscall(SYS_close_range, 3U, ~0U, 0) < 0)
                for (int fd = 3; fd < 1024; fd++)
                        (void) close(fd);
        execve(path, (char *const[]) { (char *) path, (char *) arg, NULL }, env);
        _exit(127);
}

/*
 * Wait for pid to exit, until deadline (0: none) or *cancel; 1 when it
 * did.  It is left a zombie (WNOWAIT): while it is, its process group
 * cannot be taken by another, so the group can still be killed safely.
 */
static int hook_wait(pid_t pid, int pidfd, usec_t deadline, const volatile sig_atomic_t *cancel,
                     siginfo_t *si) {
        for (;;) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                usec_t now = now_monotonic();
                int ms = 100;   /* a cancel flag set between two checks waits at most this */

                *si = (siginfo_t) {};
                if (waitid(P_PID, pid, si, WEXITED | WNOHANG | WNOWAIT) == 0 && si->si_pid == pid)
                        return 1;
                if (cancel && *cancel)
                        return -ECANCELED;
                if (deadline && now >= deadline)
                        return -ETIME;
                if (deadline && (deadline - now) / 1000 < (usec_t) ms)
                        ms = (int) ((deadline - now) / 1000) + 1;
                if (pidfd >= 0)
                        (void) poll(&p, 1, ms);
                else
                        (void) poll(NULL, 0, ms);
        }
}

int hook_run(const char *path, const char *arg, char *const env[], usec_t timeout,
             const volatile sig_atomic_t *cancel) {
        _cleanup_close_ int pidfd = -EBADF;
        siginfo_t si;
        int r;
        pid_t pid;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                hook_exec(path, arg, env);
        /* Also here, so the group exists before any kill(-pid) below. */
        (void) setpgid(pid, pid);
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);

        r = hook_wait(pid, pidfd, timeout ? now_monotonic() + timeout : 0, cancel, &si);
        if (r < 0) {
                /* Out of time or cancelled: the whole group, politely first. */
                kill(-pid, SIGTERM);
                if (hook_wait(pid, pidfd, now_monotonic() + (r == -ECANCELED ? HOOK_CANCEL_GRACE : HOOK_KILL_GRACE),
                              NULL, &si) < 0)
                        kill(-pid, SIGKILL);
        }
        /* What the hook left in its group goes with it, while its zombie still holds the group. */
        kill(-pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (r < 0)
                return r;
        if (si.si_code == CLD_EXITED)
                return si.si_status;
        return 128 + si.si_status;
}
