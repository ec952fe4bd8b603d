/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hooks: exit statuses, the clean environment, the process group, the
 * timeout and cancel (both taking the hook's whole group), and that
 * nothing of the caller's (descriptors, umask, ignored signals) leaks in.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hook.h"
#include "macro.h"
#include "tests.h"

static char dir[PATH_MAX];

static char *script(const char *name, const char *body) {
        static char path[PATH_MAX + 32];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        if (!f)
                abort();
        fprintf(f, "#!/bin/sh\n%s\n", body);
        fclose(f);
        chmod(path, 0755);
        return path;
}

static char *slurp(const char *name) {
        static char buf[4096];
        char path[PATH_MAX + 32];
        FILE *f;
        size_t n;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "re");
        if (!f)
                return NULL;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = '\0';
        fclose(f);
        return buf;
}

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t cancel_flag;

static void on_alarm(int sig) {
        cancel_flag = 1;
}

int main(void) {
        char env_path[PATH_MAX + 16], env_out[PATH_MAX + 16];
        char *env[] = { env_path, env_out, (char *) "REFSNAP_RESULT=partial", NULL };
        char *p, *out;
        double t0;
        int r, keep;

        snprintf(dir, sizeof(dir), "/var/tmp/refsnap-test-hook.XXXXXX");
        if (!mkdtemp(dir))
                return 2;
        snprintf(env_path, sizeof(env_path), "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
        snprintf(env_out, sizeof(env_out), "OUT=%s", dir);

        /* What the caller has that the hook must not: */
        setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
        umask(0077);
        signal(SIGHUP, SIG_IGN);
        keep = open("/dev/null", O_RDONLY);     /* not O_CLOEXEC: the daemon's store lock, say */

        p = script("env", "env > \"$OUT/env.txt\"; umask > \"$OUT/umask.txt\"; echo \"$1\" > \"$OUT/arg.txt\"\n"
                   "ls /proc/self/fd > \"$OUT/fds.txt\"; grep SigIgn /proc/self/status > \"$OUT/sig.txt\"\n"
                   "ps -o pgid= -p $$ | tr -d ' ' > \"$OUT/pgid.txt\"; echo $$ > \"$OUT/pid.txt\"; exit 7");
        /* Signals the daemon ignores, which the hook must not inherit ignored. */
        signal(SIGWINCH, SIG_IGN);
        signal(SIGRTMIN + 3, SIG_IGN);
        CHECK(hook_run(p, "myjob", env, 10 * USEC_PER_SEC, NULL) == 7);
        signal(SIGWINCH, SIG_DFL);
        signal(SIGRTMIN + 3, SIG_DFL);
        out = slurp("env.txt");
        CHECK(out && strstr(out, "REFSNAP_RESULT=partial\n"));
        CHECK(out && !strstr(out, "NOTIFY_SOCKET"));
        CHECK(out && strstr(out, "PATH=/usr/sbin:/usr/bin:/sbin:/bin\n"));
        out = slurp("umask.txt");
        CHECK(out && strcmp(out, "0022\n") == 0);
        out = slurp("arg.txt");
        CHECK(out && strcmp(out, "myjob\n") == 0);
        out = slurp("fds.txt");
        /* 0, 1, 2 and the one ls opened to list them. */
        CHECK(out && strcmp(out, "0\n1\n2\n3\n") == 0);
        out = slurp("sig.txt");
        /* Nothing ignored but glibc's own 32 and 33 (bits 31 and 32), either
         * or both of which a parent such as make(1) may leave ignored, and
         * which no program can change or use. */
        CHECK(out && strncmp(out, "SigIgn:\t", 8) == 0 &&
              (strtoull(out + 8, NULL, 16) & ~UINT64_C(0x180000000)) == 0);
        {
                char pid[32] = "";

                out = slurp("pid.txt");
                snprintf(pid, sizeof(pid), "%s", out ? out : "");
                out = slurp("pgid.txt");
                CHECK(out && pid[0] && strcmp(out, pid) == 0);   /* a group of its own */
        }

        /* Killed by a signal: 128 + N.  Not executable: 127. */
        CHECK(hook_run(script("kill", "kill -USR1 $$"), "j", env, 10 * USEC_PER_SEC, NULL) == 128 + SIGUSR1);
        CHECK(hook_run("/nonexistent/hook", "j", env, 10 * USEC_PER_SEC, NULL) == 127);

        /*
         * A hook that hangs, with a child of its own that ignores SIGTERM:
         * at the timeout both go, SIGKILL after the grace.
         */
        p = script("hang", "(trap '' TERM; exec sh -c 'echo $$ > \"$OUT/grandchild.txt\"; exec sleep 600') &\n"
                   "sleep 600");
        t0 = now();
        r = hook_run(p, "j", env, 1 * USEC_PER_SEC, NULL);
        CHECK(r == -ETIME);
        CHECK(now() - t0 < 1 + HOOK_KILL_GRACE / 1e6 + 1.5);
        out = slurp("grandchild.txt");
        {
                pid_t g = out ? (pid_t) atoi(out) : 0;
                bool gone = false;

                for (int i = 0; i < 50 && g > 0 && !gone; i++) {
                        char st[64], buf[256] = "";
                        FILE *f;

                        snprintf(st, sizeof(st), "/proc/%d/stat", (int) g);
                        f = fopen(st, "re");
                        /* Gone, or a zombie waiting for init. */
                        gone = !f || (fgets(buf, sizeof(buf), f) && strstr(buf, ") Z "));
                        if (f)
                                fclose(f);
                        if (!gone)
                                usleep(100000);
                }
                CHECK(g > 0 && gone);
        }

        /* Cancelled (the daemon stopping): ended at once, not at its timeout. */
        signal(SIGALRM, on_alarm);
        alarm(1);
        t0 = now();
        r = hook_run(script("long", "exec sleep 600"), "j", env, 600 * USEC_PER_SEC, &cancel_flag);
        CHECK(r == -ECANCELED);
        CHECK(now() - t0 < 3);

        close(keep);
        {
                char cmd[PATH_MAX + 16];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
                if (system(cmd) != 0)
                        return 2;
        }
        return tests_end();
}
