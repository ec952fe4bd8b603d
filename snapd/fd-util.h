/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>

/* "/proc/self/fd/N": reaches the file of an O_PATH descriptor. */
#define PROC_FD_PATH_MAX (sizeof("/proc/self/fd/") + 12)
static inline char *proc_fd_path(int fd, char buf[static PROC_FD_PATH_MAX]) {
        snprintf(buf, PROC_FD_PATH_MAX, "/proc/self/fd/%d", fd);
        return buf;
}
#define PROC_FD(fd) proc_fd_path((fd), (char[PROC_FD_PATH_MAX]) {})
