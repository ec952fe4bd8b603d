/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The attribution's rules, on a tree in a temporary directory. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"
#include "refsnapd-attribution.h"
#include "rm-rf.h"
#include "tests.h"

static char top[PATH_MAX];

static void mk(const char *rel) {
        char p[PATH_MAX * 2];

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        if (mkdir(p, 0755) < 0)
                perror(p);
}

static void mkfile(const char *rel) {
        char p[PATH_MAX * 2];
        int fd;

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                perror(p);
        safe_close(fd);
}

static int opath(const char *rel) {
        char p[PATH_MAX * 2];

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        return open(p, O_PATH | O_CLOEXEC);
}

static FileId id_of(const char *rel) {
        char p[PATH_MAX * 2];
        struct stat st = {};

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        (void) stat(p, &st);
        return file_id(&st);
}

static bool hits[4];
static const char *why;

/* The verdict for a change of name in directory rel; hits[] says which sources. */
static AttributionVerdict find(Attribution *a, const char *rel, const char *name) {
        _cleanup_close_ int fd = opath(rel);

        memset(hits, 0, sizeof(hits));
        why = NULL;
        return attribution_find(a, fd, name, hits, &why);
}

static bool only(bool h0, bool h1, bool h2, bool h3) {
        return hits[0] == h0 && hits[1] == h1 && hits[2] == h2 && hits[3] == h3;
}

static char *rename_in(const char *from, const char *to) {
        char a[PATH_MAX * 2], b[PATH_MAX * 2];

        snprintf(a, sizeof(a), "%s/%s", top, from);
        snprintf(b, sizeof(b), "%s/%s", top, to);
        return rename(a, b) == 0 ? "ok" : "failed";
}

int main(void) {
        Attribution *a = NULL;
        const char *tmp = getenv("TMPDIR");
        char deep[256] = "a/src";
        FileId src[4];
        unsigned levels = 0;

        snprintf(top, sizeof(top), "%s/test-attribution-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(top)) {
                perror("mkdtemp");
                return 1;
        }
        mk("a"), mk("a/src"), mk("a/src/x"), mk("a/src/x/y"), mk("a/other");
        mk("b"), mk("b/src"), mk("out"), mk("out/d"), mk("out/d/e"), mk("unwatched");
        mkfile("a/src/f"), mkfile("out/single");
        {
                char p[PATH_MAX * 2], q[PATH_MAX * 2];

                snprintf(p, sizeof(p), "%s/a/src/f", top);
                snprintf(q, sizeof(q), "%s/out/link", top);
                CHECK(link(p, q) == 0);
        }
        /*
         * Eight levels below a/src; the walk limit lets a walk up to / from
         * seven, not from eight.
         */
        for (int i = 0; i < 8; i++) {
                strcat(deep, "/l");
                mk(deep);
        }

        for (const char *c = top; *c; c++)
                levels += *c == '/';
        CHECK(attribution_new(levels + 2 + 7, &a) == 0);
        src[0] = id_of("a/src");
        src[1] = id_of("b/src");
        src[2] = id_of("a/src/x");      /* nested in the first */
        src[3] = (FileId) {};           /* a job not watched */
        CHECK(attribution_set_sources(a, src, 4) == 0);
        CHECK(attribution_n_sources(a) == 4);

        /* Below a source, at any depth within the limit; nested sources both. */
        CHECK(find(a, "a/src", "f") == ATTRIBUTION_UNKNOWN);    /* f has two links: see below */
        CHECK(find(a, "a/src", NULL) == ATTRIBUTION_JOBS && only(true, false, false, false));
        CHECK(find(a, "a/src/x/y", "new") == ATTRIBUTION_JOBS && only(true, false, true, false));
        CHECK(find(a, "a/src/x", ".") == ATTRIBUTION_JOBS && only(true, false, true, false));
        CHECK(find(a, "b/src", "g") == ATTRIBUTION_JOBS && only(false, true, false, false));
        /* Outside every source, and beside one: no job, also once a/ is cached. */
        CHECK(find(a, "a/other", NULL) == ATTRIBUTION_JOBS && only(false, false, false, false));
        CHECK(find(a, "a", "other") == ATTRIBUTION_JOBS && only(false, false, false, false));
        CHECK(find(a, "unwatched", NULL) == ATTRIBUTION_JOBS && only(false, false, false, false));
        /* The cached answers of directories met on the way up are theirs. */
        CHECK(find(a, "a/src/x/y", NULL) == ATTRIBUTION_JOBS && only(true, false, true, false));
        CHECK(find(a, "a/src/x", NULL) == ATTRIBUTION_JOBS && only(true, false, true, false));
        CHECK(find(a, "a/src", NULL) == ATTRIBUTION_JOBS && only(true, false, false, false));

        /*
         * Deeper than the walk limit: unknown, never "no job"; a directory
         * met within the limit whose answer is cached gives it, though.
         */
        CHECK(find(a, deep, "new") == ATTRIBUTION_JOBS && only(true, false, false, false));
        /* Its answer cached now: one directory looked at. */
        CHECK(find(a, deep, "new") == ATTRIBUTION_JOBS && only(true, false, false, false));
        CHECK(attribution_walked(a) == 1);
        attribution_forget(a);
        CHECK(find(a, deep, "new") == ATTRIBUTION_UNKNOWN);
        CHECK_STREQ(why, "a change deeper than the attribution's walk limit");
        printf("# the walk past the limit looked at %u directories\n", attribution_walked(a));
        CHECK(attribution_walked(a) > 2);       /* the whole limit's worth: its cost, told */
        deep[strlen(deep) - 2] = '\0';
        CHECK(find(a, deep, "new") == ATTRIBUTION_JOBS && only(true, false, false, false));
        attribution_forget(a);
        CHECK(find(a, "a/src/x/y", "new") == ATTRIBUTION_JOBS && only(true, false, true, false));
        CHECK(find(a, "a/src", NULL) == ATTRIBUTION_JOBS && only(true, false, false, false));

        /* A file with more than one link: unknown, wherever the name changed. */
        CHECK(find(a, "out", "link") == ATTRIBUTION_UNKNOWN);
        CHECK_STREQ(why, "a change to a file with more than one link");
        CHECK(find(a, "out", "single") == ATTRIBUTION_JOBS && only(false, false, false, false));
        CHECK(find(a, "out", "gone") == ATTRIBUTION_JOBS && only(false, false, false, false));
        CHECK(find(a, "", "out") == ATTRIBUTION_JOBS && only(false, false, false, false));       /* a directory */
        /* The file itself, no directory: unknown; once unlinked, in no tree. */
        CHECK(find(a, "out/single", NULL) == ATTRIBUTION_UNKNOWN);
        CHECK_STREQ(why, "a changed file reported without its directory");
        {
                _cleanup_close_ int fd = opath("out/single");
                char p[PATH_MAX * 2];

                snprintf(p, sizeof(p), "%s/out/single", top);
                CHECK(unlink(p) == 0);
                memset(hits, 0, sizeof(hits));
                CHECK(attribution_find(a, fd, NULL, hits, &why) == ATTRIBUTION_JOBS && only(false, false, false, false));
        }

        /*
         * A directory moved in from outside: its cached "no job" (and its
         * subdirectory's) lasts only until the move is told.
         */
        CHECK(find(a, "out/d/e", NULL) == ATTRIBUTION_JOBS && only(false, false, false, false));
        CHECK_STREQ(rename_in("out/d", "a/src/d"), "ok");
        CHECK(find(a, "a/src/d/e", NULL) == ATTRIBUTION_JOBS && only(false, false, false, false));   /* still cached */
        attribution_forget(a);
        CHECK(find(a, "a/src/d/e", NULL) == ATTRIBUTION_JOBS && only(true, false, false, false));
        CHECK(find(a, "a/src/d", NULL) == ATTRIBUTION_JOBS && only(true, false, false, false));
        /* And moved out again. */
        CHECK_STREQ(rename_in("a/src/d", "out/d"), "ok");
        attribution_forget(a);
        CHECK(find(a, "out/d/e", NULL) == ATTRIBUTION_JOBS && only(false, false, false, false));

        /* New sources: nothing cached survives (the jobs' indices changed). */
        CHECK(find(a, "a/other", NULL) == ATTRIBUTION_JOBS && only(false, false, false, false));
        src[3] = id_of("a/other");
        CHECK(attribution_set_sources(a, src, 4) == 0);
        CHECK(find(a, "a/other", NULL) == ATTRIBUTION_JOBS && only(false, false, false, true));
        CHECK(attribution_set_sources(a, NULL, 0) == 0);
        CHECK(find(a, "a/other", NULL) == ATTRIBUTION_JOBS && only(false, false, false, false));

        /* A descriptor that cannot be examined: unknown. */
        memset(hits, 0, sizeof(hits));
        CHECK(attribution_find(a, -EBADF, NULL, hits, &why) == ATTRIBUTION_UNKNOWN);
        CHECK(attribution_new(0, &(Attribution *) { NULL }) == -EINVAL);

        attribution_free(a);
        (void) rm_rf_at(AT_FDCWD, top);
        return tests_end();
}
