/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The store's side of the snapshots one manages: pins (kept by retention
 * and prune whatever the rules say, written atomically, dropped with
 * their snapshot and kept as facts by the leftover removal), the job's
 * pause file, and snapshot_delete(): one snapshot out of the listing in
 * one rename, "latest" moved first, refused while the store is locked
 * and for a pinned one without force, names that are not a snapshot's
 * (a '/', a hidden name, a symbolic link) refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "prune.h"
#include "store.h"
#include "strv.h"
#include "tests.h"

static char base[] = "/var/tmp/refsnap-test-store-manage.XXXXXX";
static char store_path[PATH_MAX];

static void sh(const char *cmd) {
        char full[PATH_MAX * 4];

        snprintf(full, sizeof(full), "cd '%s' && %s", store_path, cmd);
        if (system(full) != 0) {
                fprintf(stderr, "failed: %s\n", full);
                exit(2);
        }
}

static bool exists(const char *name) {
        char p[PATH_MAX * 2];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", store_path, name);
        return lstat(p, &st) == 0;
}

static const char *latest(char buf[static PATH_MAX]) {
        char p[PATH_MAX * 2];
        ssize_t n;

        snprintf(p, sizeof(p), "%s/latest", store_path);
        n = readlink(p, buf, PATH_MAX - 1);
        if (n < 0)
                return NULL;
        buf[n] = '\0';
        return buf;
}

/* Each on a descriptor of its own: the store's lock (flock) is held until that is closed. */
static int leftovers(void) {
        _cleanup_close_ int fd = store_open(store_path, false);

        return fd < 0 ? fd : store_remove_leftovers(fd, NULL, NULL);
}

static int delete(const char *name, bool force, FILE *out) {
        _cleanup_close_ int fd = store_open(store_path, false);

        return fd < 0 ? fd : snapshot_delete(fd, "job", name, force, out);
}

static size_t listed(int store) {
        char **names = NULL;
        size_t n = 0;

        if (store_list(store, &names, &n) < 0)
                return (size_t) -1;
        strv_free(names);
        return n;
}

int main(void) {
        char buf[PATH_MAX], *out = NULL;
        _cleanup_close_ int store = -EBADF;
        uint64_t until = 0;
        size_t size = 0;
        time_t now;
        FILE *o;
        Job job;
        int r;

        if (!mkdtemp(base))
                return 2;
        snprintf(store_path, sizeof(store_path), "%s/store", base);
        if (mkdir(store_path, 0700) < 0)
                return 2;
        store = store_open(store_path, false);
        CHECK(store >= 0);
        sh("mkdir 2026-12-03T07:00:00Z 2026-12-03T08:00:00Z 2026-12-03T09:00:00Z 2026-12-03T10:00:00Z && "
           "touch 2026-12-03T08:00:00Z/f && mkdir outside && ln -s outside 2026-12-03T06:00:00Z && "
           "ln -s 2026-12-03T10:00:00Z latest");

        /* Names: only a snapshot's, only one that is there, never through a symbolic link. */
        CHECK(store_snapshot_exists(store, "2026-12-03T07:00:00Z") == 0);
        CHECK(store_snapshot_exists(store, "2026-12-03T05:00:00Z") == -ENOENT);
        CHECK(store_snapshot_exists(store, "2026-12-03T06:00:00Z") == -ENOENT);        /* a symlink */
        CHECK(store_snapshot_exists(store, "../store/2026-12-03T07:00:00Z") == -EINVAL);
        CHECK(store_snapshot_exists(store, ".facts") == -EINVAL);
        CHECK(store_snapshot_exists(store, "latest") == -EINVAL);
        CHECK(store_snapshot_exists(store, "") == -EINVAL);
        CHECK(store_set_pinned(store, "2026-12-03T06:00:00Z", true) == -ENOENT);
        CHECK(store_set_pinned(store, "outside", true) == -EINVAL);
        CHECK(!exists(".facts/2026-12-03T06:00:00Z.pinned"));

        /* A pin: made once, kept by the leftover removal, removed by unpin. */
        CHECK(store_is_pinned(store, "2026-12-03T07:00:00Z") == 0);
        CHECK(store_set_pinned(store, "2026-12-03T07:00:00Z", true) == 1);
        CHECK(store_set_pinned(store, "2026-12-03T07:00:00Z", true) == 0);
        CHECK(store_is_pinned(store, "2026-12-03T07:00:00Z") == 1);
        CHECK(exists(".facts/2026-12-03T07:00:00Z.pinned"));
        CHECK(!exists(".facts/.2026-12-03T07:00:00Z.pinned.tmp"));
        CHECK(leftovers() == 0);
        CHECK(store_is_pinned(store, "2026-12-03T07:00:00Z") == 1);
        CHECK(store_set_pinned(store, "2026-12-03T09:00:00Z", true) == 1);
        CHECK(store_set_pinned(store, "2026-12-03T09:00:00Z", false) == 1);
        CHECK(store_set_pinned(store, "2026-12-03T09:00:00Z", false) == 0);
        CHECK(store_is_pinned(store, "2026-12-03T09:00:00Z") == 0);

        /*
         * A description: checked (length, UTF-8, no control character),
         * written whole, read back, kept by the leftover removal; a file
         * that holds what no description may is refused when read.
         */
        {
                char longer[SNAPSHOT_DESCRIPTION_MAX + 2];
                _cleanup_free_ char *d = NULL;

                memset(longer, 'x', sizeof(longer) - 1);
                longer[sizeof(longer) - 1] = '\0';
                CHECK(snapshot_description_check("before the upgrade to 13 – Grüße") == 0);
                CHECK(snapshot_description_check("") == -EINVAL);
                CHECK(snapshot_description_check("two\nlines") == -EINVAL);
                CHECK(snapshot_description_check("\x1b[31mred") == -EINVAL);
                CHECK(snapshot_description_check("c1 \xc2\x9b") == -EINVAL);
                CHECK(snapshot_description_check("latin1 \xe9") == -EINVAL);
                CHECK(snapshot_description_check("del \x7f") == -EINVAL);
                CHECK(snapshot_description_check(longer) == -E2BIG);
                longer[SNAPSHOT_DESCRIPTION_MAX] = '\0';
                CHECK(snapshot_description_check(longer) == 0);
                CHECK(store_read_description(store, "2026-12-03T07:00:00Z", &d) == -ENOENT);
                CHECK(store_write_description(store, "2026-12-03T07:00:00Z", "a\nb") == -EINVAL);
                CHECK(store_write_description(store, "../x", "fine") == -EINVAL);
                CHECK(!exists(".facts/2026-12-03T07:00:00Z.description"));
                CHECK(store_write_description(store, "2026-12-03T07:00:00Z", "before the upgrade") == 0);
                CHECK(store_write_description(store, "2026-12-03T07:00:00Z", longer) == 0);
                CHECK(store_read_description(store, "2026-12-03T07:00:00Z", &d) == 0);
                CHECK(d && strlen(d) == SNAPSHOT_DESCRIPTION_MAX);
                d = mfree(d);
                CHECK(store_write_description(store, "2026-12-03T07:00:00Z", "before the upgrade") == 0);
                CHECK(!exists(".facts/.2026-12-03T07:00:00Z.description.tmp"));
                CHECK(leftovers() == 0);
                CHECK(store_read_description(store, "2026-12-03T07:00:00Z", &d) == 0);
                CHECK_STREQ(d, "before the upgrade");
                d = mfree(d);
                sh("printf 'a\\033[2Jb\\n' > .facts/2026-12-03T09:00:00Z.description");
                CHECK(store_read_description(store, "2026-12-03T09:00:00Z", &d) == -EBADMSG);
                CHECK(d == NULL);
                sh("rm .facts/2026-12-03T09:00:00Z.description");
        }

        /* Retention never chooses a pinned one, and prune --dry-run says why it stays. */
        job = (Job) { .name = "job", .store = store_path, .retention = { .hourly = 1 } };
        snapshot_name_time("2026-12-03T11:00:00Z", &now);
        o = open_memstream(&out, &size);
        r = snapshot_prune(&job, now, true, o);
        fclose(o);
        CHECK(r == 2);
        CHECK(out && strstr(out, "keep   2026-12-03T07:00:00Z  (pinned)"));
        CHECK(out && strstr(out, "remove 2026-12-03T08:00:00Z"));
        CHECK(out && strstr(out, "remove 2026-12-03T09:00:00Z"));
        out = mfree(out);
        CHECK(snapshot_prune(&job, now, false, NULL) == 2);
        CHECK(exists("2026-12-03T07:00:00Z"));
        CHECK(!exists("2026-12-03T08:00:00Z"));
        CHECK(!exists(".facts/2026-12-03T08:00:00Z.pinned"));
        CHECK(store_is_pinned(store, "2026-12-03T07:00:00Z") == 1);
        sh("mkdir 2026-12-03T08:30:00Z");

        /* Delete: pinned refused without force; the store's lock held refuses it (a snapshot runs). */
        CHECK(delete("2026-12-03T07:00:00Z", false, NULL) == -EPERM);
        CHECK(exists("2026-12-03T07:00:00Z"));
        CHECK(delete("2026-12-03T06:00:00Z", false, NULL) == -ENOENT);
        CHECK(exists("outside"));
        CHECK(delete("../store/x", false, NULL) == -EINVAL);
        CHECK(delete(".facts", false, NULL) == -EINVAL);
        {
                _cleanup_close_ int holder = open(store_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_close_ int other = open(store_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                CHECK(store_lock(holder, false) == 0);
                CHECK(snapshot_delete(other, "job", "2026-12-03T08:30:00Z", false, NULL) == -EBUSY);
                CHECK(exists("2026-12-03T08:30:00Z"));
        }
        /* One not latest: gone from the listing, latest untouched. */
        CHECK(listed(store) == 3);
        CHECK(delete("2026-12-03T08:30:00Z", false, NULL) == 0);
        CHECK(!exists("2026-12-03T08:30:00Z"));
        CHECK(!exists(".removing-2026-12-03T08:30:00Z"));
        CHECK(listed(store) == 2);
        CHECK_STREQ(latest(buf), "2026-12-03T10:00:00Z");
        /* The latest: latest moved to the newest left first. */
        o = open_memstream(&out, &size);
        CHECK(delete("2026-12-03T10:00:00Z", false, o) == 0);
        fclose(o);
        CHECK(out && strstr(out, "deleted 2026-12-03T10:00:00Z"));
        out = mfree(out);
        CHECK(!exists("2026-12-03T10:00:00Z"));
        CHECK_STREQ(latest(buf), "2026-12-03T07:00:00Z");
        /* The pinned one with force: its pin goes with it, latest with the last one. */
        CHECK(delete("2026-12-03T07:00:00Z", true, NULL) == 0);
        CHECK(!exists("2026-12-03T07:00:00Z"));
        CHECK(!exists(".facts/2026-12-03T07:00:00Z.pinned"));
        CHECK(!exists(".facts/2026-12-03T07:00:00Z.description"));
        CHECK(!exists("latest"));
        CHECK(listed(store) == 0);
        CHECK(exists("outside"));

        /* The pause: written whole, read back, removed; nonsense is not a pause. */
        CHECK(store_read_paused(store, &until) == -ENOENT);
        CHECK(store_write_paused(store, 0) == 0);
        CHECK(store_read_paused(store, &until) == 0 && until == 0);
        CHECK(store_write_paused(store, UINT64_C(1796281200000000)) == 0);
        CHECK(store_read_paused(store, &until) == 0 && until == UINT64_C(1796281200000000));
        CHECK(!exists("..paused.tmp"));
        CHECK(leftovers() == 0);
        CHECK(exists(".paused"));
        sh("echo -5 > .paused");
        CHECK(store_read_paused(store, &until) == -EINVAL);
        sh("echo 12x > .paused");
        CHECK(store_read_paused(store, &until) == -EINVAL);
        sh("rm .paused && ln -s outside .paused");
        CHECK(store_read_paused(store, &until) == -ELOOP);
        sh("rm .paused");
        CHECK(store_write_paused(store, 5) == 0);
        CHECK(store_remove_paused(store) == 0);
        CHECK(store_remove_paused(store) == 0);
        CHECK(!exists(".paused"));
        sh("touch ..paused.tmp");
        CHECK(leftovers() == 0);
        CHECK(!exists("..paused.tmp"));

        snprintf(buf, sizeof(buf), "rm -rf '%s'", base);
        if (system(buf) != 0)
                fprintf(stderr, "could not remove %s\n", base);
        return tests_end();
}
