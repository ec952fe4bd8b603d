/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The watch on a tmpfs of its own, in a mount namespace of its own, so that
 * nothing else on the host makes events on it (skipped where that cannot
 * be had, or where fanotify marks no tmpfs, before Linux 6.7): what reaches the
 * callbacks, that a directory move is told whoever made it and whether or
 * not it is decoded, the drain and its backlog, that nothing on the
 * watched filesystem is held open between batches, and that a bounded
 * queue overflows into one "lost" unknown.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "refsnapd-watch.h"
#include "rm-rf.h"
#include "tests.h"

static char top[PATH_MAX];

typedef struct Seen {
        bool own_all, wanted;
        unsigned changed, moved, unknown, lost, cost;
        char name[NAME_MAX + 1], why[128];
        ino_t dir_ino;
} Seen;

static bool on_own(pid_t pid, void *userdata) {
        return ((Seen *) userdata)->own_all;
}

static bool on_wanted(const WatchFs *fs, void *userdata) {
        return ((Seen *) userdata)->wanted;
}

static void on_moved(const WatchFs *fs, void *userdata) {
        ((Seen *) userdata)->moved++;
}

static unsigned on_changed(const WatchFs *fs, int dir_fd, const char *name, void *userdata) {
        Seen *s = userdata;
        struct stat st;

        s->changed++;
        snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
        s->dir_ino = fstat(dir_fd, &st) == 0 ? st.st_ino : 0;
        return s->cost;         /* 0: taken as 1 */
}

static void on_unknown(const WatchFs *fs, const char *why, bool lost, void *userdata) {
        Seen *s = userdata;

        s->unknown++;
        s->lost += lost;
        snprintf(s->why, sizeof(s->why), "%s", why);
        /* As the manager: every job on it changed, nothing more is wanted. */
        if (lost)
                s->wanted = false;
}

static const WatchCallbacks cb = {
        .own = on_own, .wanted = on_wanted, .moved = on_moved, .changed = on_changed, .unknown = on_unknown,
};

static void reset(Seen *s, bool own_all, bool wanted) {
        *s = (Seen) { .own_all = own_all, .wanted = wanted };
}

/* top/rel, in one of two buffers (rename(at(a), at(b))). */
static const char *at(const char *rel) {
        static char p[2][PATH_MAX * 2];
        static unsigned k;

        k ^= 1;
        snprintf(p[k], sizeof(p[k]), "%s/%s", top, rel);
        return p[k];
}

static void touch(const char *rel) {
        int fd = open(at(rel), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        if (fd < 0 || write(fd, "x", 1) != 1)
                perror(at(rel));
        safe_close(fd);
}

/* Does any descriptor of this process name something under top? */
static bool holds_something_there(void) {
        DIR *d = opendir("/proc/self/fd");
        bool found = false;
        struct dirent *de;

        if (!d)
                return true;
        while ((de = readdir(d))) {
                char link[PATH_MAX + 1], name[300];
                ssize_t n;

                snprintf(name, sizeof(name), "/proc/self/fd/%s", de->d_name);
                n = readlink(name, link, sizeof(link) - 1);
                if (n <= 0)
                        continue;
                link[n] = '\0';
                if (strncmp(link, top, strlen(top)) == 0)
                        found = true;
        }
        closedir(d);
        return found;
}

int main(void) {
        const char *tmp = getenv("TMPDIR");
        _cleanup_close_ int dir = -EBADF;
        bool mounted = false;
        struct stat st;
        WatchFs *fs = NULL;
        Watch *w = NULL;
        Seen s = {};
        int r;

        snprintf(top, sizeof(top), "%s/test-watch-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(top)) {
                perror("mkdtemp");
                return 1;
        }
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", top, "tmpfs", 0, "size=256m,mode=0755") < 0) {
                SKIP("no tmpfs of its own here (run as root)");
                goto done;
        }
        mounted = true;
        CHECK(mkdir(at("d"), 0755) == 0 && mkdir(at("d/sub"), 0755) == 0 && mkdir(at("many"), 0755) == 0);
        dir = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(watch_new(false, &w) == 0);
        r = dir >= 0 && w ? watch_add(w, dir, top, &fs) : -EBADF;
        if (r == -EPERM || r == -ENODEV || r == -EXDEV || r == -EOPNOTSUPP || r == -ENOSYS || r == -EINVAL) {
                SKIP("fanotify marks no tmpfs here (Linux 6.7 or later)");
                goto done;
        }
        CHECK(r == 0);
        CHECK_STREQ(watch_fs_how(fs), "the source's mount");
        dir = safe_close(dir);
        CHECK(!holds_something_there());

        /* A write: the directory and the name, once read. */
        touch("d/f");
        reset(&s, false, true);
        CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
        CHECK(s.changed >= 1 && s.unknown == 0 && s.moved == 0);
        CHECK_STREQ(s.name, "f");
        CHECK(stat(at("d"), &st) == 0 && s.dir_ino == st.st_ino);
        /* Nothing held between batches. */
        CHECK(!holds_something_there());

        /* A directory moved by the daemon's own: told, not decoded. */
        CHECK(rename(at("d/sub"), at("d/sub2")) == 0);
        reset(&s, true, true);
        CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
        CHECK(s.moved >= 1 && s.changed == 0);
        /* Moved while nothing is wanted (every job changed already): told, not decoded. */
        CHECK(rename(at("d/sub2"), at("d/sub")) == 0);
        reset(&s, false, false);
        CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
        CHECK(s.moved >= 1 && s.changed == 0);
        /* Removed: told too; a file's removal is no directory's move. */
        touch("d/g");
        CHECK(unlink(at("d/g")) == 0);
        reset(&s, false, true);
        CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
        CHECK(s.moved == 0 && s.changed >= 1);
        CHECK(rmdir(at("d/sub")) == 0);
        reset(&s, false, true);
        CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
        CHECK(s.moved >= 1);

        /*
         * The daemon's own worker quiets each directory of the snapshot it
         * writes: nothing made or changed in one (a file, its data and
         * mode, a directory) is queued; a directory below it not quieted
         * itself, and any other, still count; after the end, it counts
         * again.
         */
        CHECK(mkdir(at("q"), 0755) == 0 && mkdir(at("q/below"), 0755) == 0);
        reset(&s, false, true);
        CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
        {
                _cleanup_close_ int q = open(at("q"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                r = q >= 0 ? watch_quiet_dir(watch_fs_group(fs), q) : -EBADF;
        }
        if (r == -EINVAL)
                printf("# no FAN_MARK_IGNORE here (Linux 6.0 or later): directories are not quieted\n");
        else {
                CHECK(r == 0);
                touch("q/f");
                CHECK(chmod(at("q/f"), 0600) == 0 && mkdir(at("q/d"), 0755) == 0);
                reset(&s, false, true);
                CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
                CHECK(s.changed == 0 && s.unknown == 0 && s.moved == 0);
                touch("q/below/f");
                reset(&s, false, true);
                CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
                CHECK(s.changed >= 1);
                CHECK_STREQ(s.name, "f");
                CHECK(stat(at("q/below"), &st) == 0 && s.dir_ino == st.st_ino);
                touch("d/h");
                reset(&s, false, true);
                CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
                CHECK(s.changed >= 1);
                CHECK_STREQ(s.name, "h");
                CHECK(watch_quiet_end(watch_fs_group(fs)) == 0);
                touch("q/g");
                reset(&s, false, true);
                CHECK(watch_drain(w, USEC_PER_SEC, true, &cb, &s) == 0);
                CHECK(s.changed >= 1);
                CHECK_STREQ(s.name, "g");
                CHECK(stat(at("q"), &st) == 0 && s.dir_ino == st.st_ino);
        }

        /* An empty queue is no backlog, whatever the budget. */
        reset(&s, false, true);
        CHECK(watch_drain(w, 0, true, &cb, &s) == 0);
        CHECK(s.unknown == 0);
        /* More than one read's worth with no time to read it: a backlog, said when asked. */
        for (int i = 0; i < 2000; i++) {
                char name[32];

                snprintf(name, sizeof(name), "many/f%d", i);
                touch(name);
        }
        reset(&s, false, true);
        CHECK(watch_drain(w, 0, false, &cb, &s) == 1);
        CHECK(s.unknown == 0);
        CHECK(watch_drain(w, 0, true, &cb, &s) == 1);
        CHECK(s.lost == 1);
        CHECK(watch_drain(w, 10 * USEC_PER_SEC, true, &cb, &s) == 0);
        CHECK(!holds_something_there());

        /* Past 10,000 decoded at once: unknown once, the rest left undecoded by the caller's wanted(). */
        for (int i = 0; i < 10100; i++) {
                char name[32];

                snprintf(name, sizeof(name), "many/g%d", i);
                touch(name);
        }
        reset(&s, false, true);
        CHECK(watch_drain(w, 60 * USEC_PER_SEC, true, &cb, &s) == 0);
        printf("# %u decoded, %u unknown (%u lost)\n", s.changed, s.unknown, s.lost);
        CHECK(s.lost == 1 && s.changed == 10000);

        /*
         * Past 100,000 directories walked to attribute what was queued at
         * once (changes deep in a tree whose cache was just forgotten, a
         * walk of up to 1,024 each): unknown once, after the third of
         * these 40,000-directory walks, the rest left undecoded.
         */
        for (int i = 0; i < 5; i++) {
                char name[32];

                snprintf(name, sizeof(name), "many/k%d", i);
                touch(name);
        }
        reset(&s, false, true);
        s.cost = 40000;
        CHECK(watch_drain(w, 60 * USEC_PER_SEC, true, &cb, &s) == 0);
        CHECK(s.lost == 1 && s.changed == 3);
        CHECK_STREQ(s.why, "more than 100000 directories walked to attribute queued changes");
        w = watch_free(w);

        /*
         * A bounded queue (the default): past fs.fanotify.max_queued_events
         * (a distinct name each, so that no event merges with another) the
         * kernel drops events, and the overflow is one unknown, lost.
         */
        CHECK(watch_new(true, &w) == 0 && watch_is_bounded(w));
        dir = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        CHECK(dir >= 0 && w && watch_add(w, dir, top, &fs) == 0);
        dir = safe_close(dir);
        {
                _cleanup_fclose_ FILE *f = fopen("/proc/sys/fs/fanotify/max_queued_events", "re");
                unsigned max = 0;

                if (!f || fscanf(f, "%u", &max) != 1 || max > 200000)
                        SKIP("fs.fanotify.max_queued_events unreadable or above 200000");
                else {
                        for (unsigned i = 0; i < max + 100; i++) {
                                char name[32];

                                snprintf(name, sizeof(name), "many/h%u", i);
                                touch(name);
                                if (unlink(at(name)) < 0)
                                        perror(at(name));
                        }
                        /* Nothing wanted (as when every job there is changed already): the overflow is told anyway. */
                        reset(&s, false, false);
                        CHECK(watch_drain(w, 60 * USEC_PER_SEC, true, &cb, &s) == 0);
                        printf("# bounded to %u: %u decoded, %u unknown (%u lost): %s\n", max, s.changed,
                               s.unknown, s.lost, s.why);
                        CHECK(s.lost == 1 && s.changed == 0);
                        CHECK_STREQ(s.why, "the change queue overflowed");
                }
        }

done:
        watch_free(w);
        dir = safe_close(dir);
        if (mounted)
                (void) umount2(top, MNT_DETACH);
        (void) rm_rf_at(AT_FDCWD, top);
        return tests_end();
}
