/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>

#include "macro.h"

/* "/proc/self/fd/N": reaches the file of an O_PATH descriptor. */
#define PROC_FD_PATH_MAX (sizeof("/proc/self/fd/") + 12)
static inline char *proc_fd_path(int fd, char buf[static PROC_FD_PATH_MAX]) {
        snprintf(buf, PROC_FD_PATH_MAX, "/proc/self/fd/%d", fd);
        return buf;
}
#define PROC_FD(fd) proc_fd_path((fd), (char[PROC_FD_PATH_MAX]) {})

/*
 * A DIR stream over a duplicate of fd, from its first entry.  The
 * duplicate shares fd's offset: one reader at a time.
 */
static inline DIR *opendir_fd(int fd) {
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        DIR *dir;

        if (d < 0)
                return NULL;
        dir = fdopendir(d);
        if (!dir) {
                safe_close(d);
                return NULL;
        }
        rewinddir(dir);
        return dir;
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)
