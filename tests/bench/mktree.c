/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mktree DIR FILES DIRS: make DIR holding FILES small files spread evenly
 * over DIRS directories (d0 .. dDIRS-1, files f0 ..), each a few bytes.
 * The benchmarks' trees; a shell loop forks too much under TCG.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

int main(int argc, char *argv[]) {
        _cleanup_close_ int top = -EBADF;
        long files, dirs;
        char name[64];

        if (argc != 4 || (files = strtol(argv[2], NULL, 10)) <= 0 ||
            (dirs = strtol(argv[3], NULL, 10)) <= 0) {
                fprintf(stderr, "usage: mktree DIR FILES DIRS\n");
                return 2;
        }
        if (mkdir(argv[1], 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "mktree: %s: %m\n", argv[1]);
                return 1;
        }
        top = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top < 0) {
                fprintf(stderr, "mktree: %s: %m\n", argv[1]);
                return 1;
        }
        for (long d = 0; d < dirs; d++) {
                _cleanup_close_ int dfd = -EBADF;
                long first = files * d / dirs, last = files * (d + 1) / dirs;

                snprintf(name, sizeof(name), "d%ld", d);
                if (mkdirat(top, name, 0755) < 0 ||
                    (dfd = openat(top, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
                        fprintf(stderr, "mktree: %s/%s: %m\n", argv[1], name);
                        return 1;
                }
                for (long f = first; f < last; f++) {
                        _cleanup_close_ int fd = -EBADF;
                        int len;

                        snprintf(name, sizeof(name), "f%ld", f);
                        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                        len = snprintf(name, sizeof(name), "%ld.%ld\n", d, f);
                        if (fd < 0 || write(fd, name, len) != len) {
                                fprintf(stderr, "mktree: %s/d%ld/f%ld: %m\n", argv[1], d, f);
                                return 1;
                        }
                }
        }
        return 0;
}
