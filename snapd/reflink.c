/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <unistd.h>

#include "reflink.h"

int reflinkat(int olddirfd, const char *oldpath,
              int newdirfd, const char *newpath,
              unsigned int preserve, unsigned int flags) {
        return (int) syscall(__NR_reflinkat, olddirfd, oldpath, newdirfd,
                             newpath, preserve, flags);
}

int reflink(const char *oldpath, const char *newpath, unsigned int preserve) {
        return reflinkat(AT_FDCWD, oldpath, AT_FDCWD, newpath, preserve, 0);
}
