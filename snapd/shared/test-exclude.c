/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>

#include "exclude.h"
#include "macro.h"
#include "tests.h"

int main(void) {
        char *patterns[] = { "*.tmp", "/cache/", "build/", "/etc/secret*", "logs/*.log", "core", NULL };
        static const struct {
                const char *path;
                bool dir, excluded;
        } cases[] = {
                { "a.tmp", false, true },
                { "deep/down/a.tmp", false, true },
                { "a.tmp.keep", false, false },
                { "atmp", false, false },
                { "cache", true, true },                /* anchored directory */
                { "cache", false, false },              /* not a directory */
                { "sub/cache", true, false },           /* anchored: only at the root */
                { "build", true, true },                /* unanchored directory pattern */
                { "x/y/build", true, true },
                { "x/y/build", false, false },
                { "etc/secret", false, true },
                { "etc/secrets.d", true, true },
                { "etc/sub/secret", false, false },      /* FNM_PATHNAME: '*' stops at '/' */
                { "x/etc/secret", false, false },
                { "logs/a.log", false, true },
                { "logs/old/a.log", false, false },
                { "x/logs/a.log", false, false },
                { "core", false, true },
                { "d/core", true, true },
                { "core.1", false, false },
                { "name with spaces.tmp", false, true },
                { ".hidden.tmp", false, true },         /* no FNM_PERIOD, as rsync */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                bool got = exclude_match(patterns, cases[i].path, cases[i].dir);

                tests_run++;
                if (got == cases[i].excluded)
                        printf("ok %d - %s%s %s\n", tests_run, cases[i].path, cases[i].dir ? "/" : "",
                               got ? "excluded" : "kept");
                else {
                        tests_failed++;
                        printf("not ok %d - %s%s: got %d\n", tests_run, cases[i].path,
                               cases[i].dir ? "/" : "", got);
                }
        }
        CHECK(!exclude_match(NULL, "a.tmp", false));
        CHECK(!exclude_match((char *[]) { "", NULL }, "a", false));
        return tests_end();
}
