/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
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

int reflink_supported(void) {
        /* An empty oldpath: reflinkat() says ENOENT before touching anything. */
        if (reflinkat(AT_FDCWD, "", AT_FDCWD, "", REFLINK_ATTR_NONE, 0) == 0)
                return 0;
        return errno == ENOENT ? 1 : 0;
}
