/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuse-stall: a FUSE mount whose server never answers, for the VM tests.
 *
 *   fuse-stall --hang DIR UID GID [allow_other]
 *       mounts at DIR a FUSE filesystem owned by UID:GID (as fusermount
 *       mounts a user's sshfs: user_id, group_id; allow_other only when
 *       asked) and keeps /dev/fuse open without ever reading it: every
 *       request to the mount waits.  Prints the pid of the process that
 *       holds it (kill it to end the wait: the connection is aborted).
 *   fuse-stall --close DIR UID GID [allow_other]
 *       mounts the same and closes /dev/fuse at once: no server (ENOTCONN).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

int main(int argc, char *argv[]) {
        char opts[256];
        bool hang;
        pid_t pid;
        int fd;

        if (argc < 5 || argc > 6 || (strcmp(argv[1], "--hang") != 0 && strcmp(argv[1], "--close") != 0) ||
            (argc == 6 && strcmp(argv[5], "allow_other") != 0)) {
                fprintf(stderr, "usage: fuse-stall --hang|--close DIR UID GID [allow_other]\n");
                return 2;
        }
        hang = strcmp(argv[1], "--hang") == 0;
        fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "fuse-stall: /dev/fuse: %s\n", strerror(errno));
                return 1;
        }
        snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=%s,group_id=%s%s", fd, argv[3], argv[4],
                 argc == 6 ? ",allow_other" : "");
        if (mount("fuse-stall", argv[2], "fuse.fuse-stall", MS_NOSUID | MS_NODEV, opts) < 0) {
                fprintf(stderr, "fuse-stall: mount %s: %s\n", argv[2], strerror(errno));
                return 1;
        }
        if (!hang) {
                close(fd);
                return 0;
        }
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "fuse-stall: fork: %s\n", strerror(errno));
                return 1;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR);

                /* Let the caller's $(...) end: nothing of its pipe stays open here. */
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
                setsid();
                for (;;)
                        pause();
        }
        printf("%d\n", (int) pid);
        return 0;
}
