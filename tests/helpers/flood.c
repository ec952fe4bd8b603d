/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flood: a flood of change events, for the VM tests.
 *
 *   flood DIR N SECONDS
 *
 * Creates and at once unlinks up to N files of distinct 250-byte names in
 * DIR (each name a change event of its own, which the kernel cannot merge
 * with another, and as large as a name gets), stopping early after
 * SECONDS; prints how many it made and how long it took ("N files in MS
 * ms").  Leaves DIR as it found it.  Exits 1 when a create or unlink
 * fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv) {
        char name[251];
        long long start, end;
        unsigned long n, i;
        int dir;

        if (argc != 4) {
                fprintf(stderr, "usage: flood DIR N SECONDS\n");
                return 2;
        }
        n = strtoul(argv[2], NULL, 10);
        dir = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) {
                fprintf(stderr, "flood: %s: %s\n", argv[1], strerror(errno));
                return 1;
        }
        start = now_ms();
        end = start + atoll(argv[3]) * 1000;
        memset(name, 'x', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        for (i = 0; i < n; i++) {
                char num[24];
                int fd;

                snprintf(num, sizeof(num), "%020lu", i);
                memcpy(name, num, 20);
                fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
                if (fd < 0 || close(fd) < 0 || unlinkat(dir, name, 0) < 0) {
                        fprintf(stderr, "flood: %s/%.20s...: %s\n", argv[1], name, strerror(errno));
                        return 1;
                }
                if ((i & 255) == 255 && now_ms() >= end) {
                        i++;
                        break;
                }
        }
        printf("%lu files in %lld ms\n", i, now_ms() - start);
        return 0;
}
