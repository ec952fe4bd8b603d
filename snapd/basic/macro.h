/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Hand a pointer or descriptor over, leaving the variable empty. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -EBADF; _fd; })

static inline void freep(void *p)
{
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

/* free() that returns NULL, for p = mfree(p). */
static inline void *mfree(void *p)
{
        free(p);
        return NULL;
}

/* Closes a descriptor and returns -EBADF, keeping errno. */
static inline int safe_close(int fd)
{
        if (fd >= 0) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd)
{
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* -errno of the last failed call, never 0. */
static inline int negative_errno(void)
{
        return errno > 0 ? -errno : -EIO;
}
