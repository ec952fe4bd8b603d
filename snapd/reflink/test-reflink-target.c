/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>

#include "macro.h"
#include "reflink-target.h"
#include "tests.h"

int main(void) {
        static const struct {
                const char *source, *dest;
                bool dir;
                int ret;
                const char *want;
        } cases[] = {
                { "a", "b", false, 0, "b" },
                { "a", "b", true, 0, "b/a" },
                { "x/y/a", "d", true, 0, "d/a" },
                { "x/y/a", "d/", false, 0, "d/a" },      /* trailing slash: a directory */
                { "x/y/a", "d//", true, 0, "d/a" },
                { "a/", "d", true, 0, "d/a" },
                { "/abs/file", "/", true, 0, "/file" },
                { "name with spaces", "d", true, 0, "d/name with spaces" },
                { "/", "d", true, -EINVAL, NULL },
                { ".", "d", true, -EINVAL, NULL },
                { "..", "d", true, -EINVAL, NULL },
                { "x/..", "d", true, -EINVAL, NULL },
                { "", "d", true, -EINVAL, NULL },
                { "a", "", false, -EINVAL, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *t = NULL;
                int r = reflink_target(cases[i].source, cases[i].dest, cases[i].dir, &t);

                CHECK(r == cases[i].ret);
                if (cases[i].want)
                        CHECK_STREQ(t, cases[i].want);
                else
                        CHECK(t == NULL);
        }
        return tests_end();
}
