/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store_btrfs_qgroup_limit() on a real btrfs (a loop device, in a mount
 * namespace of the test's own), and on a sysfs that is not what it
 * expects: it fails closed.  A limit on a qgroup far above the store's
 * (past 64 parents) is found; a sysfs without the filesystem's directory
 * is an error ("cannot tell"), not "no limit"; a qgroups directory
 * without an "enabled" file (older kernels) is read all the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "store.h"
#include "tests.h"
#include "tests-fs.h"

static char base[] = "/run/refsnap-test-qgroup.XXXXXX";

int main(void) {
        char mnt[PATH_MAX], what[128], fsid[64] = "";
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (geteuid() != 0) {
                SKIP("a btrfs of its own needs root");
                return tests_end();
        }
        /* Never make the host's kernel load a module for a test: only where
         * btrfs and the loop driver are there already (the VM; a host whose
         * kernel has them built in).  trust-avail's qgroup cases run in the
         * VM either way. */
        if (!fs_and_loop_here("btrfs")) {
                SKIP("btrfs or the loop driver not in this kernel already");
                return tests_end();
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
                SKIP("no mount namespace of our own");
                return tests_end();
        }
        if (!mkdtemp(base))
                return 2;
        snprintf(mnt, sizeof(mnt), "%s/mnt", base);
        if (run("cd '%s' && mkdir mnt && truncate -s 128M img && mkfs.btrfs -q -f img >/dev/null 2>&1 && "
                "mount -o loop img mnt 2>/dev/null && btrfs quota enable mnt", base) != 0) {
                SKIP("no loop-mounted btrfs with quotas here");
                run("umount '%s/mnt' 2>/dev/null; rm -rf '%s'", base, base);
                return tests_end();
        }
        fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(fd >= 0);

        /* Quotas on, no limit: none. */
        r = store_btrfs_qgroup_limit(fd, what, sizeof(what));
        CHECK(r == 0);

        /* A limit on the store's own qgroup, 0/5: found. */
        CHECK(run("btrfs qgroup limit 100M 0/5 '%s'", mnt) == 0);
        r = store_btrfs_qgroup_limit(fd, what, sizeof(what));
        CHECK(r == 1 && strstr(what, "qgroup 0/5, max_referenced 104857600"));
        CHECK(run("btrfs qgroup limit none 0/5 '%s'", mnt) == 0);

        /* 70 qgroups above the store's, the limit on the last: found. */
        CHECK(run("for i in $(seq 1 70); do btrfs qgroup create 1/$i '%s' && "
                  "btrfs qgroup assign --no-rescan 0/5 1/$i '%s' || exit 1; done >/dev/null 2>&1 && "
                  "btrfs qgroup limit 100M 1/70 '%s'", mnt, mnt, mnt) == 0);
        r = store_btrfs_qgroup_limit(fd, what, sizeof(what));
        CHECK(r == 1 && strstr(what, "qgroup 1/70, max_referenced 104857600"));
        if (r == 1)
                printf("# %s\n", what);
        CHECK(run("btrfs qgroup limit none 1/70 '%s'", mnt) == 0);
        CHECK(store_btrfs_qgroup_limit(fd, what, sizeof(what)) == 0);

        /* The filesystem's sysfs directory (FSID) by its uuid, for a sysfs of our own below. */
        {
                char cmd[PATH_MAX + 64], line[256];
                FILE *p;

                snprintf(cmd, sizeof(cmd), "btrfs filesystem show '%s' 2>/dev/null", mnt);
                p = popen(cmd, "r");
                while (p && fgets(line, sizeof(line), p))
                        if (sscanf(line, " Label: %*s uuid: %63s", fsid) == 1)
                                break;
                if (p)
                        pclose(p);
        }
        CHECK(fsid[0] != '\0');

        /* A sysfs without the filesystem: cannot tell, so an error, not "no limit". */
        CHECK(mount("tmpfs", "/sys/fs/btrfs", "tmpfs", 0, "mode=0755") == 0);
        r = store_btrfs_qgroup_limit(fd, what, sizeof(what));
        CHECK(r < 0);
        /* Its qgroups directory without "enabled" (kernels before it): the limits are read. */
        CHECK(run("mkdir -p /sys/fs/btrfs/%s/qgroups/0_5 && echo 4096 > /sys/fs/btrfs/%s/qgroups/0_5/max_referenced "
                  "&& echo 0 > /sys/fs/btrfs/%s/qgroups/0_5/max_exclusive", fsid, fsid, fsid) == 0);
        r = store_btrfs_qgroup_limit(fd, what, sizeof(what));
        CHECK(r == 1 && strstr(what, "qgroup 0/5, max_referenced 4096"));
        /* No qgroups directory: quotas off. */
        CHECK(run("rm -r /sys/fs/btrfs/%s/qgroups", fsid) == 0);
        CHECK(store_btrfs_qgroup_limit(fd, what, sizeof(what)) == 0);
        CHECK(umount2("/sys/fs/btrfs", MNT_DETACH) == 0);

        fd = safe_close(fd);
        run("umount '%s/mnt'; rm -rf '%s'", base, base);
        return tests_end();
}
