/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * What the host tests on a filesystem of their own share (beside tests.h,
 * the harness): a shell command, whether a filesystem and the loop driver
 * are in this kernel already (a test never makes the host's kernel load a
 * module), and a wait for the coarse clock.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* system(3) of a command made like printf's; its status. */
static inline int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int run(const char *fmt, ...) {
        char cmd[PATH_MAX * 4];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(cmd, sizeof(cmd), fmt, ap);
        va_end(ap);
        return system(cmd);
}

/* Are filesystem fs ("btrfs", "xfs") and the loop driver in this kernel already? */
static inline bool fs_and_loop_here(const char *fs) {
        char line[128], want[64];
        bool found = false;
        FILE *f;

        if (access("/dev/loop-control", F_OK) < 0)
                return false;
        snprintf(want, sizeof(want), "\t%s\n", fs);
        f = fopen("/proc/filesystems", "re");
        while (f && !found && fgets(line, sizeof(line), f))
                found = strcmp(line, want) == 0;
        if (f)
                fclose(f);
        return found;
}

/*
 * Wait until the coarse clock is past the time now: a ctime set before
 * (fine-grained ones too, which run ahead of the coarse clock) is then
 * not "racy" (manifest.h).  A tick or two: the clock is the event.
 */
static inline void next_tick(void) {
        struct timespec a, b;

        clock_gettime(CLOCK_REALTIME, &a);
        do
                clock_gettime(CLOCK_REALTIME_COARSE, &b);
        while (b.tv_sec < a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec <= a.tv_nsec));
}
