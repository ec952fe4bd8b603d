/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fstab_unmounted_above(): a job's filesystem that fstab lists, mounted or
 * not; path_under_fuse(), mountinfo_mount_by_id(); mounts_below_fd() and
 * mounts_inside_fd() by a mount table of the test's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "mountpoint-util.h"
#include "tests.h"

int main(void) {
        char dir[] = "/var/tmp/refsnap-test-mountpoint.XXXXXX";
        char fstab[PATH_MAX], unmounted[PATH_MAX], below[PATH_MAX + 16];
        char *where = NULL;
        FILE *f;

        if (!mkdtemp(dir))
                return 2;
        snprintf(fstab, sizeof(fstab), "%s/fstab", dir);
        snprintf(unmounted, sizeof(unmounted), "%s/data", dir);
        snprintf(below, sizeof(below), "%s/data/home", dir);
        if (mkdir(unmounted, 0755) < 0)
                return 2;
        f = fopen(fstab, "we");
        if (!f)
                return 2;
        /* /proc is mounted wherever this runs; dir/data is a plain directory. */
        fprintf(f, "# comment\nUUID=1 / ext4 defaults 0 1\n/dev/sdb none swap sw 0 0\n"
                "proc /proc proc defaults 0 0\n/dev/sdc %s xfs noauto 0 0\n", unmounted);
        fclose(f);

        CHECK(fstab_unmounted_above(fstab, below, &where) == 1);
        CHECK_STREQ(where, unmounted);
        where = mfree(where);
        CHECK(fstab_unmounted_above(fstab, unmounted, NULL) == 1);
        /* A path beside it, one under a mounted entry, one under / only. */
        CHECK(fstab_unmounted_above(fstab, "/var/tmp/refsnap-test-mountpoint.other", NULL) == 0);
        CHECK(fstab_unmounted_above(fstab, "/proc/self", NULL) == 0);
        CHECK(fstab_unmounted_above(fstab, "/usr/lib", NULL) == 0);
        /* The prefix is component-wise: data2 is not below data. */
        {
                char beside[PATH_MAX + 16];

                snprintf(beside, sizeof(beside), "%s/data2/x", dir);
                CHECK(fstab_unmounted_above(fstab, beside, NULL) == 0);
        }
        CHECK(fstab_unmounted_above("/nonexistent/fstab", below, NULL) == 0);

        /* FUSE mounts on a path or above it, by the mount table alone. */
        {
                char mi[PATH_MAX];
                char *type = NULL;

                snprintf(mi, sizeof(mi), "%s/mountinfo", dir);
                f = fopen(mi, "we");
                if (!f)
                        return 2;
                fputs("21 1 0:20 / / rw - btrfs /dev/vda rw\n"
                      "30 21 0:30 /@home /home rw,relatime shared:5 - btrfs /dev/vdb rw,subvol=/@home\n"
                      "31 30 0:31 / /home/alice rw,nosuid,nodev shared:7 - fuse.sshfs alice@h: rw,user_id=1000\n"
                      "32 30 0:32 / /home/b\\040c rw - fuse fuse rw\n"
                      "33 21 0:33 / /sys/fs/fuse/connections rw - fusectl fusectl rw\n"
                      "34 30 0:34 / /home/dave/net rw - fuseblk /dev/sdz rw\n", f);
                fclose(f);
                CHECK(path_under_fuse(mi, "/home/alice", &where, &type) == 1);
                CHECK_STREQ(where, "/home/alice");
                CHECK_STREQ(type, "fuse.sshfs");
                where = mfree(where);
                type = mfree(type);
                CHECK(path_under_fuse(mi, "/home/alice/data", NULL, NULL) == 1);
                CHECK(path_under_fuse(mi, "/home/b c/x", &where, NULL) == 1);
                CHECK_STREQ(where, "/home/b c");
                where = mfree(where);
                CHECK(path_under_fuse(mi, "/home/dave/net", NULL, NULL) == 1);
                /* A btrfs subvolume's mount, a neighbour, a mount below the path, fusectl: not FUSE over it. */
                CHECK(path_under_fuse(mi, "/home", NULL, NULL) == 0);
                CHECK(path_under_fuse(mi, "/home/alice2", NULL, NULL) == 0);
                CHECK(path_under_fuse(mi, "/home/dave", NULL, NULL) == 0);
                CHECK(path_under_fuse(mi, "/sys/fs/fuse", NULL, NULL) == 0);
                CHECK(path_under_fuse(mi, "/sys/fs/fuse/connections/1", NULL, NULL) == 0);
                CHECK(path_under_fuse("/nonexistent/mountinfo", "/home", NULL, NULL) == -ENOENT);

                /* A mount's own options and its point, unescaped; not the superblock's options. */
                {
                        char *opts = NULL;

                        CHECK(mountinfo_mount_by_id(mi, 32, &where, &opts) == 0);
                        CHECK_STREQ(where, "/home/b c");
                        CHECK_STREQ(opts, "rw");
                        where = mfree(where);
                        opts = mfree(opts);
                        CHECK(mountinfo_mount_by_id(mi, 31, &where, &opts) == 0);
                        CHECK_STREQ(opts, "rw,nosuid,nodev");
                        CHECK(mount_options_have(opts, "nosuid") && mount_options_have(opts, "nodev"));
                        CHECK(mount_options_have(opts, "rw") && !mount_options_have(opts, "ro"));
                        CHECK(!mount_options_have(opts, "nodevx") && !mount_options_have(opts, "node"));
                        CHECK(!mount_options_have("", "ro") && mount_options_have("ro", "ro"));
                        where = mfree(where);
                        opts = mfree(opts);
                        CHECK(mountinfo_mount_by_id(mi, 99, &where, &opts) == -ENOENT);
                }
                unlink(mi);
        }

        /*
         * Mounts at or below a directory, and strictly inside it: a job's
         * source that is a mount's root has nothing mounted inside it.
         */
        {
                char mi[PATH_MAX];
                int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                CHECK(fd >= 0);
                snprintf(mi, sizeof(mi), "%s/mountinfo", dir);
                for (int k = 0; k < 3; k++) {
                        f = fopen(mi, "we");
                        if (!f)
                                return 2;
                        fputs("21 1 0:20 / / rw - ext4 /dev/vda rw\n", f);
                        /* 0: at the directory; 1: also below it; 2: a neighbour whose name it begins. */
                        fprintf(f, k == 2 ? "40 21 0:40 / %s2 rw - xfs /dev/vdc rw\n" :
                                            "40 21 0:40 / %s rw - xfs /dev/vdc rw\n", dir);
                        if (k == 1)
                                fprintf(f, "41 40 0:41 / %s/data/mnt rw - tmpfs none rw\n", dir);
                        fclose(f);
                        CHECK(mounts_below_fd(mi, fd) == (k < 2));
                        CHECK(mounts_inside_fd(mi, fd) == (k == 1));
                }
                unlink(mi);
                close(fd);
        }

        unlink(fstab);
        rmdir(unmounted);
        rmdir(dir);
        return tests_end();
}
