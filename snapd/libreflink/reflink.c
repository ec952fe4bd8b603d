/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reflink.h"

int reflinkat_syscall(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                      unsigned int preserve, unsigned int flags) {
        return (int) syscall(__NR_reflinkat, olddirfd, oldpath, newdirfd,
                             newpath, preserve, flags);
}

ReflinkPath reflink_path(void) {
        /* -1: not decided yet.  Deciding twice at once decides the same. */
        static int path = -1;
        int p = __atomic_load_n(&path, __ATOMIC_RELAXED);
        const char *e;

        if (p >= 0)
                return p;
        e = secure_getenv("REFSNAP_REFLINK_PATH");
        if (e && strcmp(e, "stock") == 0)
                p = REFLINK_PATH_STOCK;
        else if (e && strcmp(e, "syscall") == 0)
                p = REFLINK_PATH_SYSCALL;
        else
                p = reflink_supported() > 0 ? REFLINK_PATH_SYSCALL : REFLINK_PATH_STOCK;
        __atomic_store_n(&path, p, __ATOMIC_RELAXED);
        return p;
}

const char *reflink_path_to_string(ReflinkPath p) {
        return p == REFLINK_PATH_STOCK ? "stock" : "syscall";
}

int reflinkat(int olddirfd, const char *oldpath,
              int newdirfd, const char *newpath,
              unsigned int preserve, unsigned int flags) {
        if (reflink_path() == REFLINK_PATH_STOCK)
                return reflinkat_stock(olddirfd, oldpath, newdirfd, newpath, preserve, flags);
        return reflinkat_syscall(olddirfd, oldpath, newdirfd, newpath, preserve, flags);
}

int reflink(const char *oldpath, const char *newpath, unsigned int preserve) {
        return reflinkat(AT_FDCWD, oldpath, AT_FDCWD, newpath, preserve, 0);
}

int reflink_supported(void) {
        /* An empty oldpath: reflinkat() says ENOENT before touching anything. */
        if (reflinkat_syscall(AT_FDCWD, "", AT_FDCWD, "", REFLINK_ATTR_NONE, 0) == 0)
                return 0;
        return errno == ENOENT ? 1 : 0;
}
