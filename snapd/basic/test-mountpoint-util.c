/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fstab_unmounted_above(): a job's filesystem that fstab lists, mounted or not. */
#include <errno.h>
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

        unlink(fstab);
        rmdir(unmounted);
        rmdir(dir);
        return tests_end();
}
