/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "macro.h"
#include "preserve.h"
#include "reflink.h"
#include "tests.h"

int main(void) {
        static const struct {
                const char *in;
                int ret;
                unsigned int bits;
        } cases[] = {
                { "none", 0, REFLINK_ATTR_NONE },
                { "all", 0, REFLINK_ATTR_ALL },
                { "owner", 0, REFLINK_ATTR_OWNER },
                { "mode,acl", 0, REFLINK_ATTR_MODE | REFLINK_ATTR_ACL },
                { "owner,security", 0, REFLINK_ATTR_OWNER | REFLINK_ATTR_SECURITY },
                { "acl,mode,owner,security", 0, REFLINK_ATTR_ALL },
                { "none,mode", 0, REFLINK_ATTR_MODE },
                { "", -EINVAL, 0 },
                { ",", -EINVAL, 0 },
                { "mode,", -EINVAL, 0 },
                { "Mode", -EINVAL, 0 },
                { "ownerx", -EINVAL, 0 },
                { "own", -EINVAL, 0 },
                { "timestamps", -EINVAL, 0 },
        };
        char buf[64];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                unsigned int bits = 0xdead;
                int r = preserve_from_string(cases[i].in, &bits);

                CHECK(r == cases[i].ret);
                if (r == 0)
                        CHECK(bits == cases[i].bits);
                else
                        CHECK(bits == 0xdead);      /* untouched on error */
        }
        CHECK(preserve_from_string(NULL, &(unsigned int){0}) == -EINVAL);

        CHECK_STREQ(preserve_to_string(REFLINK_ATTR_NONE, buf, sizeof(buf)), "none");
        CHECK_STREQ(preserve_to_string(REFLINK_ATTR_ALL, buf, sizeof(buf)), "all");
        CHECK_STREQ(preserve_to_string(REFLINK_ATTR_OWNER | REFLINK_ATTR_MODE, buf, sizeof(buf)),
                    "owner,mode");
        CHECK_STREQ(preserve_to_string(REFLINK_ATTR_MODE | REFLINK_ATTR_ACL, buf, sizeof(buf)),
                    "mode,acl");
        CHECK(preserve_to_string(REFLINK_ATTR_OWNER | REFLINK_ATTR_MODE, buf, 5) == NULL);

        /* Every name round-trips. */
        for (unsigned int b = 0; b <= REFLINK_ATTR_ALL; b++) {
                unsigned int back = 0;
                CHECK(preserve_from_string(preserve_to_string(b, buf, sizeof(buf)), &back) == 0 &&
                      back == b);
        }
        return tests_end();
}
