/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "chase.h"
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
        sigset_t none;
        int null;

        (void) setpgid(0, 0);
        /*
         * Every disposition back to the default, an ignored one included
         * (an ignored signal stays ignored across execve): glibc refuses
         * its own two (32, 33), which no program can use, as systemd's
         * reset_all_signal_handlers() leaves them.
         */
        for (int sig = 1; sig < _NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void) sigaction(sig, &(const struct sigaction) { .sa_handler = SIG_DFL }, NULL);
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

_printf_(3, 4)
static int hook_refuse(int r, char **ret_why, const char *fmt, ...) {
        va_list ap;

        if (ret_why) {
                va_start(ap, fmt);
                if (vasprintf(ret_why, fmt, ap) < 0)
                        *ret_why = NULL;
                va_end(ap);
        }
        return r;
}

int hook_check(const char *path, char **ret_why) {
        _cleanup_close_ int dir = -EBADF;
        Chase ch = { .flags = CHASE_SAFE };
        const char *base;
        struct stat d, st;

        if (ret_why)
                *ret_why = NULL;
        if (path[0] != '/')
                return hook_refuse(-EINVAL, ret_why, "not an absolute path");
        dir = chase_parent(AT_FDCWD, path, &ch, &base);
        if (dir == -ELOOP)
                return hook_refuse(dir, ret_why, "%.*s is a symbolic link; name the program itself",
                                   (int) ch.failed_len, path);
        if (dir == -EPERM)
                return hook_refuse(dir, ret_why, "%.*s is owned by or writable by a user other than root, who "
                                   "could put a program of her own in its place", (int) ch.unsafe_len, path);
        if (dir < 0)
                return hook_refuse(dir, ret_why, "%s", strerror(-dir));
        if (fstat(dir, &d) < 0 || fstatat(dir, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return hook_refuse(-errno, ret_why, "%s", strerror(errno));
        /* Its directory, which chase_dir() does not judge as the last one: the same rule. */
        if (d.st_uid != 0 || ((d.st_mode & (S_IWGRP | S_IWOTH)) && !((d.st_mode & S_ISVTX) && st.st_uid == 0)))
                return hook_refuse(-EPERM, ret_why, "its directory is owned by or writable by a user other than "
                                   "root, who could put a program of her own in its place");
        if (S_ISLNK(st.st_mode))
                return hook_refuse(-ELOOP, ret_why, "a symbolic link; name the program itself");
        if (!S_ISREG(st.st_mode))
                return hook_refuse(-EINVAL, ret_why, "not a regular file");
        if (st.st_uid != 0)
                return hook_refuse(-EPERM, ret_why, "owned by uid %u; a hook must be root's", (unsigned) st.st_uid);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return hook_refuse(-EPERM, ret_why, "writable by users other than root (mode %04o)",
                                   (unsigned) (st.st_mode & 07777));
        if (!(st.st_mode & S_IXUSR))
                return hook_refuse(-EACCES, ret_why, "not executable (mode %04o)", (unsigned) (st.st_mode & 07777));
        return 0;
}
