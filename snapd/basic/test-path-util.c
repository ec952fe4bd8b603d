/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "path-util.h"
#include "tests.h"

static void test_path_is_normalized_absolute(void) {
        static const struct {
                const char *in;
                bool want;
        } cases[] = {
                { "/", true },
                { "/a", true },
                { "/a/b", true },
                { "/a/b.c/..d/...", true },
                { "/.a/b", true },
                { "", false },
                { "a", false },
                { "a/b", false },
                { "./a", false },
                { "//a", false },
                { "//", false },
                { "/a//b", false },
                { "/a/", false },
                { "/a/b/", false },
                { "/.", false },
                { "/..", false },
                { "/a/.", false },
                { "/a/./b", false },
                { "/a/../b", false },
                { "/a/..", false },
        };
        _cleanup_free_ char *lng = NULL;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                printf("# path_is_normalized_absolute(\"%s\") should be %s\n", cases[i].in,
                       cases[i].want ? "true" : "false");
                CHECK(path_is_normalized_absolute(cases[i].in) == cases[i].want);
        }

        /* PATH_MAX - 1 characters is the longest a path may be. */
        lng = malloc(PATH_MAX + 1);
        CHECK(lng);
        if (!lng)
                return;
        lng[0] = '/';
        memset(lng + 1, 'a', PATH_MAX - 2);
        lng[PATH_MAX - 1] = '\0';
        CHECK(path_is_normalized_absolute(lng));
        lng[PATH_MAX - 1] = 'a';
        lng[PATH_MAX] = '\0';
        CHECK(!path_is_normalized_absolute(lng));
}

static void test_path_has_dotdot(void) {
        static const struct {
                const char *in;
                bool want;
        } cases[] = {
                { "..", true },
                { "../a", true },
                { "a/../b", true },
                { "a/..", true },
                { "a/../", true },
                { "/..", true },
                { "a//..//b", true },
                { "", false },
                { "a", false },
                { ".", false },
                { "a/..b", false },
                { "a/b..", false },
                { "..a", false },
                { "...", false },
                { "a/.../b", false },
                { "./a/.", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                printf("# path_has_dotdot(\"%s\") should be %s\n", cases[i].in,
                       cases[i].want ? "true" : "false");
                CHECK(path_has_dotdot(cases[i].in) == cases[i].want);
        }
}

static void test_path_normalize_relative(void) {
        static const struct {
                const char *in;
                int ret;
                const char *want;
        } cases[] = {
                { "a", 0, "a" },
                { "a/b", 0, "a/b" },
                { "a//b/./c/", 0, "a/b/c" },
                { "./a", 0, "a" },
                { "a/.", 0, "a" },
                { "", 0, "" },
                { ".", 0, "" },
                { "./", 0, "" },
                { "/./", 0, "" },
                { "/", 0, "" },
                { "//a///b//", 0, "a/b" },     /* no leading slash: it is relative */
                { "/a/b", 0, "a/b" },
                { "a/..b", 0, "a/..b" },
                { "...", 0, "..." },
                { ".a/b.", 0, ".a/b." },
                { "..", -EINVAL, NULL },
                { "../x", -EINVAL, NULL },
                { "a/../b", -EINVAL, NULL },
                { "a/..", -EINVAL, NULL },
                { "a/../", -EINVAL, NULL },
                { "./..", -EINVAL, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *out = (char *) "untouched";
                int r = path_normalize_relative(cases[i].in, &out);

                printf("# path_normalize_relative(\"%s\")\n", cases[i].in);
                CHECK(r == cases[i].ret);
                if (r == 0 && cases[i].ret == 0) {
                        CHECK_STREQ(out, cases[i].want);
                        free(out);
                } else if (r < 0)
                        CHECK_STREQ(out, "untouched");     /* nothing handed back on failure */
        }
}

static void test_path_startswith(void) {
        static const struct {
                const char *path, *prefix, *want;
        } cases[] = {
                { "/a/b/c", "/a/b", "/c" },
                { "/a/b", "/a/b", "" },
                { "/a/b/", "/a/b", "/" },
                { "/a/bc", "/a/b", NULL },
                { "/a/b", "/a/bc", NULL },
                { "/a", "/a/b", NULL },
                { "/ab", "/a", NULL },
                { "/a/b", "/x", NULL },
                { "/a/b", "/", "/a/b" },
                { "/", "/", "/" },
                { "a/b", "/", NULL },
                { "a/b/c", "a", "/b/c" },
                { "a/b", "a/b", "" },
                { "ab", "a", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *r = path_startswith(cases[i].path, cases[i].prefix);

                printf("# path_startswith(\"%s\", \"%s\")\n", cases[i].path, cases[i].prefix);
                if (!cases[i].want)
                        CHECK(r == NULL);
                else {
                        CHECK_STREQ(r, cases[i].want);
                        /* The rest is a pointer into path, not a copy. */
                        CHECK(r && r >= cases[i].path &&
                              r + strlen(r) == cases[i].path + strlen(cases[i].path));
                }
        }
}

static void test_path_split(void) {
        static const struct {
                const char *in;
                int ret;
                const char *dir, *base;
        } cases[] = {
                { "a", 0, "", "a" },
                { "a/b", 0, "a", "b" },
                { "a/b/c", 0, "a/b", "c" },
                { "/a", 0, "", "a" },
                { "/a/b", 0, "/a", "b" },
                { "a//b", 0, "a/", "b" },
                { "", -EINVAL, NULL, NULL },
                { "/", -EINVAL, NULL, NULL },
                { "a/", -EINVAL, NULL, NULL },
                { "/a/b/", -EINVAL, NULL, NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *dir = NULL;
                const char *base = NULL;
                int r = path_split(cases[i].in, &dir, &base);

                printf("# path_split(\"%s\")\n", cases[i].in);
                CHECK(r == cases[i].ret);
                if (r == 0 && cases[i].ret == 0) {
                        CHECK_STREQ(dir, cases[i].dir);
                        CHECK_STREQ(base, cases[i].base);
                        /* base points into path. */
                        CHECK(base == cases[i].in + strlen(cases[i].in) - strlen(cases[i].base));
                } else if (r < 0)
                        CHECK(dir == NULL && base == NULL);
                free(dir);
        }
}

static void test_path_join(void) {
        static const struct {
                const char *prefix, *name, *want;
        } cases[] = {
                { "a", "b", "a/b" },
                { "", "b", "b" },
                { "/a/b", "c", "/a/b/c" },
                { "a", "b/c", "a/b/c" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *j = path_join(cases[i].prefix, cases[i].name);

                printf("# path_join(\"%s\", \"%s\")\n", cases[i].prefix, cases[i].name);
                CHECK_STREQ(j, cases[i].want);
        }
}

int main(void) {
        test_path_is_normalized_absolute();
        test_path_has_dotdot();
        test_path_normalize_relative();
        test_path_startswith();
        test_path_split();
        test_path_join();
        return tests_end();
}
