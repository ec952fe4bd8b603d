/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Snapshots into a store and pruning, with the clone step replaced by a
 * copying test double (the host has no reflinks).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "copy-meta.h"
#include "fd-util.h"
#include "macro.h"
#include "prune.h"
#include "restore.h"
#include "snapshot.h"
#include "clone-double.h"
#include "strv.h"
#include "tests.h"
#include "tests-fs.h"

/* The kernel refuses files named swap* for a reason of their own (an active swap file). */
static int refusing_clone(int src, int dst_dir, const char *name, void *userdata) {
        if (strncmp(name, "swap", 4) == 0)
                return -ETXTBSY;
        if (strncmp(name, "realtime", 8) == 0)
                return -EOPNOTSUPP;
        if (strncmp(name, "broken", 6) == 0)
                return -EIO;
        return clone_double(src, dst_dir, name, NULL);
}

static int failing_clone(int src, int dst_dir, const char *name, void *userdata) {
        /* The third file hits a full disk. */
        return ++*(int *) userdata >= 3 ? -ENOSPC : clone_double(src, dst_dir, name, NULL);
}

/* Run the shell command fmt with each "%s" replaced by base. */
static void sh(const char *fmt, const char *base) {
        char cmd[PATH_MAX * 4];
        size_t len = 0;

        for (const char *p = fmt; *p && len < sizeof(cmd) - PATH_MAX; p++) {
                if (p[0] == '%' && p[1] == 's') {
                        len += snprintf(cmd + len, sizeof(cmd) - len, "%s", base);
                        p++;
                } else
                        cmd[len++] = *p;
        }
        cmd[len] = '\0';
        if (system(cmd) != 0) {
                fprintf(stderr, "failed: %s\n", cmd);
                exit(2);
        }
}

static bool exists(const char *dir, const char *name) {
        char p[PATH_MAX * 2];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        return lstat(p, &st) == 0;
}

/* snapshot_prune() with what it says in *ret_out (a new string, NULL when it could not be had). */
static int prune_said(const Job *job, time_t now, bool dry_run, char **ret_out) {
        size_t size = 0;
        FILE *o;
        int r;

        *ret_out = NULL;
        o = open_memstream(ret_out, &size);
        r = snapshot_prune(job, now, dry_run, o);
        if (o)
                fclose(o);
        return r;
}

static size_t count_snapshots(const char *store) {
        _cleanup_close_ int fd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char **names = NULL;
        size_t n = 0;

        if (fd < 0 || store_list(fd, &names, &n) < 0)
                return (size_t) -1;
        strv_free(names);
        return n;
}

static ino_t ino_in(const char *store, const char *snap, const char *path) {
        char p[PATH_MAX * 3];
        struct stat st;

        snprintf(p, sizeof(p), "%s/%s/%s", store, snap, path);
        return lstat(p, &st) == 0 ? st.st_ino : 0;
}

/*
 * Names are never reused, even when the clock steps back: a snapshot
 * started before the newest one's name (the clock set back an hour) is
 * named after it, and so is one taken after the newest was deleted.
 */
static void test_clock_back(const char *base) {
        char src[PATH_MAX], store[PATH_MAX + 16], p[PATH_MAX * 3], ahead[SNAPSHOT_NAME_MAX],
                n1[SNAPSHOT_NAME_MAX], n2[SNAPSHOT_NAME_MAX], n3[SNAPSHOT_NAME_MAX];
        SnapshotFacts f;
        Job job;

        snprintf(src, sizeof(src), "%s/src", base);
        snprintf(store, sizeof(store), "%s/.refsnap/back", base);
        job = (Job) { .name = "back", .source = src, .store = store };

        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n1, &f) == 0);
        /* Taken an hour ahead, before the clock was set back. */
        snapshot_name_format(time(NULL) + 3600, 0, ahead);
        snprintf(p, sizeof(p), "%s/%s", store, ahead);
        CHECK(mkdir(p, 0700) == 0);

        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n2, &f) == 0);
        printf("# newest %s, then %s\n", ahead, n2);
        CHECK(strcmp(n2, ahead) > 0);
        CHECK(exists(store, n2));
        /* Within the second of the newest, the next suffix: not an hour on. */
        CHECK(strncmp(n2, ahead, 20) == 0);

        /* A description: stored with the snapshot; one no snapshot may carry fails it, nothing made. */
        {
                SnapshotPre pre = { .description = "before the upgrade" };
                char n[SNAPSHOT_NAME_MAX], *d = NULL;
                _cleanup_close_ int fd = -EBADF;

                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, n, &f) == 0);
                fd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                CHECK(fd >= 0 && store_read_description(fd, n, &d) == 0);
                CHECK_STREQ(d, "before the upgrade");
                free(d);
                CHECK(store_read_description(fd, n1, &d) == -ENOENT);
                pre.description = "two\nlines";
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, n, &f) == -EINVAL);
                snprintf(p, sizeof(p), "rm -rf '%s/%s'", store, n);
                CHECK(system(p) == 0);  /* out of the way of what follows */
        }

        /* The newest two deleted (as `refsnapctl delete` does): their names stay spent. */
        snprintf(p, sizeof(p), "rm -rf '%s/%s' '%s/%s'", store, ahead, store, n2);
        CHECK(system(p) == 0);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n3, &f) == 0);
        printf("# after deleting them: %s\n", n3);
        CHECK(strcmp(n3, n2) > 0);
        CHECK(strcmp(n3, n1) > 0);
}

/*
 * Is every entry of the store dir one Samba's shadow:format
 * ("%Y-%m-%dT%H:%M:%SZ") reads as exactly one snapshot (a name of whole
 * seconds), "latest" (which it cannot read, so ignores), or hidden (a
 * name beginning with '.', which it cannot read either)?  The count of
 * snapshots in *ret_n; false, and the entry said, at the first other.
 */
static bool store_names_exact(const char *dir, unsigned *ret_n) {
        DIR *d = opendir(dir);
        struct dirent *de;
        bool ok = d != NULL;

        *ret_n = 0;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.' || strcmp(de->d_name, "latest") == 0)
                        continue;
                if (strlen(de->d_name) == 20 && snapshot_name_valid(de->d_name)) {
                        (*ret_n)++;
                        continue;
                }
                printf("# %s: %s is neither a whole-second snapshot name, latest, nor hidden\n", dir, de->d_name);
                ok = false;
        }
        if (d)
                closedir(d);
        return ok;
}

typedef struct ViewWatch {
        const char *store;
        unsigned calls, bad;
} ViewWatch;

/* Mirror.dir_hook: the store as Samba would list it while a snapshot is made. */
static void view_watch(int dir_fd, void *userdata) {
        ViewWatch *w = userdata;
        unsigned n;

        (void) dir_fd;
        w->calls++;
        if (!store_names_exact(w->store, &n))
                w->bad++;
}

/*
 * A job with smb_view, which Samba shows as previous versions: whole-second
 * names, never a -NN suffix (vfs_shadow_copy2 would read "...Z-01" as
 * "...Z"), the next free second instead, still never a name given twice
 * when the clock steps back or the newest is deleted; every name the
 * store holds while a snapshot is made and after it either such a name,
 * "latest" or hidden; the store listable (0755) only while its parent is
 * closed to other users.
 */
static void test_smb_view(const char *base) {
        char src[PATH_MAX], store[PATH_MAX + 32], parent[PATH_MAX + 16], p[PATH_MAX * 3],
                ahead[SNAPSHOT_NAME_MAX], n[4][SNAPSHOT_NAME_MAX];
        ViewWatch w = {};
        SnapshotPre pre = { .dir_hook = view_watch, .dir_hook_userdata = &w };
        SnapshotFacts f;
        unsigned count;
        struct stat st;
        time_t t, t2;
        Job job;

        snprintf(src, sizeof(src), "%s/src", base);
        snprintf(parent, sizeof(parent), "%s/.refsnap-view", base);
        snprintf(store, sizeof(store), "%s/view", parent);
        CHECK(mkdir(parent, 0755) == 0);
        job = (Job) { .name = "view", .source = src, .store = store, .smb_view = "/srv/refsnap-view/view" };
        w.store = store;

        /* Three at once: within one second, or nearly; each a whole second of its own, in order. */
        for (int i = 0; i < 3; i++)
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, n[i], &f) == 0);
        printf("# three at once: %s %s %s\n", n[0], n[1], n[2]);
        for (int i = 0; i < 3; i++)
                CHECK(strlen(n[i]) == 20 && snapshot_name_valid(n[i]) && exists(store, n[i]));
        CHECK(strcmp(n[0], n[1]) < 0 && strcmp(n[1], n[2]) < 0);
        CHECK(w.calls > 0 && w.bad == 0);
        CHECK(store_names_exact(store, &count) && count == 3);

        /* An hour ahead (the clock set back since), a suffixed name of before smb_view: the second after it. */
        snapshot_name_format(time(NULL) + 3600, 3, ahead);
        snprintf(p, sizeof(p), "%s/%s", store, ahead);
        CHECK(mkdir(p, 0700) == 0);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n[3], &f) == 0);
        printf("# newest %s, then %s\n", ahead, n[3]);
        CHECK(snapshot_name_time(ahead, &t) == 0 && snapshot_name_time(n[3], &t2) == 0 && t2 == t + 1);
        CHECK(strlen(n[3]) == 20);
        /* Both deleted: their names stay spent. */
        snprintf(p, sizeof(p), "rm -rf '%s/%s' '%s/%s'", store, ahead, store, n[3]);
        CHECK(system(p) == 0);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n[0], &f) == 0);
        CHECK(strlen(n[0]) == 20 && strcmp(n[0], n[3]) > 0);
        CHECK(store_names_exact(store, &count) && count == 4);

        /* The names themselves. */
        CHECK(snapshot_name_after_whole(1796281200, NULL, n[0]) == 0);
        CHECK_STREQ(n[0], "2026-12-03T07:00:00Z");
        CHECK(snapshot_name_after_whole(1796281200, "2026-12-03T06:59:59Z-05", n[0]) == 0);
        CHECK_STREQ(n[0], "2026-12-03T07:00:00Z");
        CHECK(snapshot_name_after_whole(1796281200, "2026-12-03T07:00:00Z", n[0]) == 0);
        CHECK_STREQ(n[0], "2026-12-03T07:00:01Z");
        CHECK(snapshot_name_after_whole(1796281200 - 3600, "2026-12-03T07:00:00Z-07", n[0]) == 0);
        CHECK_STREQ(n[0], "2026-12-03T07:00:01Z");
        CHECK(snapshot_name_after_whole(1796281200, "latest", n[0]) == -EINVAL);

        /* The store's mode: 0700 while its parent is open to others, 0755 once it is closed. */
        CHECK(stat(store, &st) == 0 && (st.st_mode & 07777) == 0700);
        if (geteuid() == 0) {
                CHECK(chmod(parent, 0700) == 0);
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n[1], &f) == 0);
                CHECK(stat(store, &st) == 0 && (st.st_mode & 07777) == 0755);
                CHECK(chmod(parent, 0711) == 0);
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n[1], &f) == 0);
                CHECK(stat(store, &st) == 0 && (st.st_mode & 07777) == 0700);
                /* A job without smb_view makes it 0700 again, whatever its parent. */
                CHECK(chmod(parent, 0700) == 0);
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n[1], &f) == 0);
                CHECK(stat(store, &st) == 0 && (st.st_mode & 07777) == 0755);
                job.smb_view = NULL;
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n[1], &f) == 0);
                CHECK(stat(store, &st) == 0 && (st.st_mode & 07777) == 0700);
        } else
                SKIP("the store's mode for smb_view: not root");
}

/*
 * Incremental snapshots: the first full, with a manifest; the next
 * reusing the unchanged files; full again when asked, when full_every is
 * due, when the excludes changed, when the manifest is damaged or
 * missing (a store of before manifests); the manifest goes with its
 * snapshot.
 */
static void test_incremental(const char *base) {
        char src[PATH_MAX], store[PATH_MAX + 16], n1[SNAPSHOT_NAME_MAX], n2[SNAPSHOT_NAME_MAX],
             n3[SNAPSHOT_NAME_MAX], p[PATH_MAX * 2];
        Job job;
        SnapshotFacts f, g;
        SnapshotPre full = { .full = true };
        char *ex[] = { "*.tmp", NULL };
        _cleanup_close_ int s = -EBADF;
        char *msg = NULL;
        size_t size = 0;
        FILE *log;

        snprintf(src, sizeof(src), "%s/isrc", base);
        snprintf(store, sizeof(store), "%s/.refsnap/incr", base);
        sh("mkdir -p '%s/isrc/d' && echo a > '%s/isrc/a' && echo b > '%s/isrc/d/b' && echo c > '%s/isrc/d/c' && "
           "echo t > '%s/isrc/x.tmp'", base);
        job = (Job) { .name = "incr", .source = src, .store = store, .exclude = ex, .n_exclude = 1 };
        next_tick();

        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n1, &f) == 0);
        CHECK(!f.incremental && f.reused == 0 && f.made == 4 && f.files == 3);
        snprintf(p, sizeof(p), ".facts/%s.manifest", n1);
        CHECK(exists(store, p));
        s = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        /* One file changed: the others are the first snapshot's inodes. */
        sh("echo more >> '%s/isrc/d/c'", base);
        next_tick();
        log = open_memstream(&msg, &size);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, log, NULL, n2, &f) == 0);
        fclose(log);
        CHECK(msg && !strstr(msg, "a full snapshot"));       /* the log is for what is worth a warning */
        free(msg);
        printf("# incremental: files %llu reused %llu made %llu compared %llu\n", (unsigned long long) f.files,
               (unsigned long long) f.reused, (unsigned long long) f.made, (unsigned long long) f.compared);
        CHECK(f.incremental && f.reused == 2 && f.made == 2 && f.compared == 2 && f.files == 3);
        CHECK(store_read_facts(s, n2, &g) == 0 && g.incremental && g.reused == 2 && g.made == 2 &&
              g.compared == 2);
        CHECK(ino_in(store, n1, "a") == ino_in(store, n2, "a") && ino_in(store, n1, "d/b") == ino_in(store, n2, "d/b"));
        CHECK(ino_in(store, n1, "d/c") != ino_in(store, n2, "d/c"));
        snprintf(p, sizeof(p), "%s/%s/d/c", store, n2);
        {
                _cleanup_fclose_ FILE *in = fopen(p, "re");
                char line[32] = "";

                CHECK(in && fgets(line, sizeof(line), in) && fgets(line, sizeof(line), in) && strcmp(line, "more\n") == 0);
        }

        /* Asked for a full one: new inodes for all. */
        log = open_memstream(&msg, &size);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, log, &full, n3, &f) == 0);
        fclose(log);
        CHECK(msg && strstr(msg, "a full snapshot, as asked"));
        free(msg);
        CHECK(!f.incremental && f.reused == 0 && ino_in(store, n2, "a") != ino_in(store, n3, "a"));
        CHECK(store_retire(s, n3) == 0 && store_remove_retired(s, NULL) == 0);
        /* Its manifest went with it. */
        snprintf(p, sizeof(p), ".facts/%s.manifest", n3);
        CHECK(!exists(store, p));

        /* full_every: due when the last full one is that old (n1's start, at most a few seconds ago). */
        job.full_every = USEC_PER_SEC * 3600;
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n3, &f) == 0);
        CHECK(f.incremental);
        CHECK(store_retire(s, n3) == 0 && store_remove_retired(s, NULL) == 0);
        {
                SnapshotFacts old;

                /* The first one's facts say it is a day old. */
                CHECK(store_read_facts(s, n1, &old) == 0);
                old.start -= 86400;
                CHECK(store_write_facts(s, n1, &old, NULL) == 0);
        }
        log = open_memstream(&msg, &size);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, log, NULL, n3, &f) == 0);
        fclose(log);
        CHECK(msg && strstr(msg, "(full_every)"));
        free(msg);
        CHECK(!f.incremental);
        CHECK(store_retire(s, n3) == 0 && store_remove_retired(s, NULL) == 0);
        job.full_every = 0;

        /* Other excludes: the manifest is not this job's any more. */
        job.exclude = NULL;
        job.n_exclude = 0;
        log = open_memstream(&msg, &size);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, log, NULL, n3, &f) == 0);
        fclose(log);
        CHECK(msg && strstr(msg, "with other exclude patterns"));
        free(msg);
        CHECK(!f.incremental && f.files == 4);
        CHECK(store_retire(s, n3) == 0 && store_remove_retired(s, NULL) == 0);
        job.exclude = ex;
        job.n_exclude = 1;

        /* A damaged manifest, then none (a store of before manifests): full, no error. */
        sh("for m in '%s/.refsnap/incr/.facts/'*.manifest; do printf 'X' | dd of=\"$m\" bs=1 seek=70 conv=notrunc "
           "status=none; done", base);
        log = open_memstream(&msg, &size);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, log, NULL, n3, &f) == 0);
        fclose(log);
        CHECK(msg && strstr(msg, "has a damaged manifest"));
        free(msg);
        CHECK(!f.incremental && f.reused == 0);
        CHECK(store_retire(s, n3) == 0 && store_remove_retired(s, NULL) == 0);
        sh("rm '%s/.refsnap/incr/.facts/'*.manifest", base);
        log = open_memstream(&msg, &size);
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, log, NULL, n3, &f) == 0);
        fclose(log);
        CHECK(msg && strstr(msg, "has no manifest"));
        free(msg);
        CHECK(!f.incremental && f.reused == 0);
        /* And the one after that reuses it. */
        next_tick();
        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, n1, &f) == 0);
        CHECK(f.incremental && f.reused == 3);

        /*
         * A restore out of an incremental snapshot makes new inodes: the
         * snapshot's, shared with older ones, are never linked out nor
         * written through.
         */
        {
                _cleanup_close_ int snap = -EBADF, live = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                Restore o = { .ops = &clone_double_ops, .log = stderr };
                struct stat before, after, lst;
                SnapshotFacts nf = {};

                /*
                 * Its facts count no link within it (its files' links are
                 * into older snapshots only): restored without the hard link
                 * table, as refsnapctl restore does then (review-incr MEDIUM 3).
                 */
                CHECK(store_read_facts(s, n1, &nf) == 0 && nf.kind_known && nf.hardlinks == 0);
                o.no_links = true;
                snprintf(p, sizeof(p), "%s/%s", store, n1);
                snap = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                snprintf(p, sizeof(p), "%s/%s/a", store, n1);
                CHECK(stat(p, &before) == 0 && before.st_nlink >= 2);
                sh("echo changed > '%s/isrc/a' && echo changed > '%s/isrc/d/b'", base);
                CHECK(store_lock(s, false) == 0);
                CHECK(restore_run(&o, snap, live, s, "a") == 0);
                CHECK(restore_run(&o, snap, live, s, "") == 0);
                CHECK(stat(p, &after) == 0 && after.st_ino == before.st_ino && after.st_nlink == before.st_nlink);
                snprintf(p, sizeof(p), "%s/a", src);
                CHECK(stat(p, &lst) == 0 && lst.st_ino != before.st_ino && lst.st_nlink == 1);
                snprintf(p, sizeof(p), "%s/d/b", src);
                CHECK(stat(p, &lst) == 0 && lst.st_ino != ino_in(store, n1, "d/b") && lst.st_nlink == 1);
                sh("grep -qx a '%s/isrc/a' && grep -qx b '%s/isrc/d/b' && grep -qx a '%s/.refsnap/incr/latest/a'", base);
                CHECK(flock(s, LOCK_UN) == 0);
        }

        /* A manifest of a snapshot never published, and its temporary name, are leftovers. */
        sh("cd '%s/.refsnap/incr/.facts' && echo x > 2026-01-01T00:00:00Z.manifest && "
           "echo x > .2026-01-01T00:00:01Z.manifest.tmp", base);
        CHECK(store_remove_leftovers(s, NULL, NULL) == 0);
        CHECK(!exists(store, ".facts/2026-01-01T00:00:00Z.manifest"));
        CHECK(!exists(store, ".facts/.2026-01-01T00:00:01Z.manifest.tmp"));
        snprintf(p, sizeof(p), ".facts/%s.manifest", n1);
        CHECK(exists(store, p));
}

int main(void) {
        char base[] = "/var/tmp/refsnap-test-snapshot.XXXXXX";
        char src[PATH_MAX], store[PATH_MAX + 16], name[SNAPSHOT_NAME_MAX], name2[SNAPSHOT_NAME_MAX];
        char link[64];
        SnapshotFacts f, g;
        Job job = {};
        time_t t;
        int r;

        if (!mkdtemp(base))
                return 2;
        snprintf(src, sizeof(src), "%s/src", base);
        snprintf(store, sizeof(store), "%s/.refsnap/job", base);
        sh("mkdir -p '%s/src/a/b' '%s/.refsnap' && echo one > '%s/src/a/f1' && echo two > '%s/src/a/b/f2' && "
           "echo three > '%s/src/f3'", base);
        job = (Job) { .name = "job", .source = src, .store = store };

        /* Names. */
        CHECK(snapshot_name_valid("2026-12-03T07:00:00Z"));
        CHECK(snapshot_name_valid("2026-12-03T07:00:00Z-01"));
        CHECK(!snapshot_name_valid("2026-12-03T07:00:00"));
        CHECK(!snapshot_name_valid("2026-12-03T07:00:00Z-1"));
        CHECK(!snapshot_name_valid("latest"));
        CHECK(!snapshot_name_valid(".partial-2026-12-03T07:00:00Z"));
        CHECK(snapshot_name_time("2026-12-03T07:00:00Z", &t) == 0 && t == 1796281200);
        snapshot_name_format(1796281200, 0, name);
        CHECK_STREQ(name, "2026-12-03T07:00:00Z");
        snapshot_name_format(1796281200, 2, name);
        CHECK_STREQ(name, "2026-12-03T07:00:00Z-02");
        /* The next name: the clock's when later, else after the last one given. */
        CHECK(snapshot_name_after(1796281200, NULL, name) == 0);
        CHECK_STREQ(name, "2026-12-03T07:00:00Z");
        CHECK(snapshot_name_after(1796281200, "2026-12-03T06:59:59Z-05", name) == 0);
        CHECK_STREQ(name, "2026-12-03T07:00:00Z");
        CHECK(snapshot_name_after(1796281200, "2026-12-03T07:00:00Z", name) == 0);
        CHECK_STREQ(name, "2026-12-03T07:00:00Z-01");
        CHECK(snapshot_name_after(1796281200 - 3600, "2026-12-03T07:00:00Z-07", name) == 0);
        CHECK_STREQ(name, "2026-12-03T07:00:00Z-08");
        CHECK(snapshot_name_after(1796281200, "2026-12-03T07:00:00Z-99", name) == 0);
        CHECK_STREQ(name, "2026-12-03T07:00:01Z");
        CHECK(snapshot_name_after(1796281200, "latest", name) == -EINVAL);

        /* A snapshot: complete, named, latest, facts, the store 0700. */
        r = snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, name, &f);
        CHECK(r == 0);
        CHECK(snapshot_name_valid(name));
        CHECK(exists(store, name));
        {
                char p[PATH_MAX * 2];
                struct stat st;
                ssize_t n;

                n = readlinkat(AT_FDCWD, (snprintf(p, sizeof(p), "%s/latest", store), p), link, sizeof(link) - 1);
                CHECK(n > 0 && (link[n] = '\0', strcmp(link, name) == 0));
                CHECK(stat(store, &st) == 0 && (st.st_mode & 07777) == 0700);
                snprintf(p, sizeof(p), "%s/%s/a/b/f2", store, name);
                CHECK(stat(p, &st) == 0 && st.st_size == 4);
        }
        CHECK(f.files == 3 && f.dirs == 2);
        {
                _cleanup_close_ int s = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                _cleanup_close_ int none = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                char newest[SNAPSHOT_NAME_MAX];

                CHECK(store_read_facts(s, name, &g) == 0);
                CHECK(g.files == 3 && g.dirs == 2 && g.start == f.start && g.end == f.end && g.bytes == 14);
                CHECK(store_newest(s, newest) == 0);
                CHECK_STREQ(newest, name);
                /* A directory with no snapshot in it. */
                CHECK(store_newest(none, newest) == -ENOENT);
        }

        /* A guard of some paths only: those there, whole, with the directories above them. */
        {
                char *paths[] = { "a/b", "missing/x", "f3", NULL };
                SnapshotPre pre = { .guard = true, .paths = paths };
                _cleanup_close_ int s = -EBADF;
                char gname[SNAPSHOT_NAME_MAX], p[PATH_MAX * 2];
                char **held = NULL;
                struct stat st;

                sh("chmod 0751 '%s/src/a'", base);
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, gname, &f) == 0);
                CHECK(f.guard && f.guarded == 2 && f.files == 2);
                snprintf(p, sizeof(p), "%s/%s/a/b/f2", store, gname);
                CHECK(stat(p, &st) == 0 && st.st_size == 4);
                snprintf(p, sizeof(p), "%s/%s/a", store, gname);
                CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0751);
                CHECK(exists(p, "b") && !exists(p, "f1"));
                snprintf(p, sizeof(p), "%s/%s", store, gname);
                CHECK(exists(p, "f3") && !exists(p, "missing"));
                s = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                CHECK(store_read_guarded(s, gname, &held) == 1);
                CHECK(held && held[0] && held[1] && !held[2]);
                CHECK(held && strcmp(held[0], "a/b") == 0 && strcmp(held[1], "f3") == 0);
                strv_free(held);
                held = NULL;
                CHECK(store_read_guarded(s, name, &held) == 0 && !held);
                CHECK(store_read_facts(s, gname, &g) == 0 && g.guard && g.guarded == 2);
                /* Said in its facts too, not only by the list beside them. */
                snprintf(p, sizeof(p), "%s/.facts/%s", store, gname);
                {
                        _cleanup_fclose_ FILE *in = fopen(p, "re");
                        char text[1024] = "";

                        CHECK(in && fread(text, 1, sizeof(text) - 1, in) > 0);
                        CHECK(strstr(text, "\npaths=1\n") != NULL);
                }
                sh("chmod 0755 '%s/src/a'", base);
                /* Gone again: the cases below count on the names of this second. */
                CHECK(store_retire(s, gname) == 0 && store_remove_retired(s, NULL) == 0);
                CHECK(store_read_guarded(s, gname, &held) == 0 && !held);
        }

        /*
         * A guard of the whole job excludes nothing: what a restore's
         * --delete removes (the restored job's excludes, or another
         * job's, are not the guard's) is always held.
         */
        {
                char *ex[] = { "/f3", NULL };
                SnapshotPre pre = { .guard = true };
                _cleanup_close_ int s = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                char gname[SNAPSHOT_NAME_MAX], p[PATH_MAX * 2];

                job.exclude = ex;
                job.n_exclude = 1;
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, gname, &f) == 0);
                CHECK(f.guard && f.excluded == 0 && f.files == 3);
                snprintf(p, sizeof(p), "%s/%s", store, gname);
                CHECK(exists(p, "f3") && exists(p, "a/b/f2"));
                CHECK(store_retire(s, gname) == 0 && store_remove_retired(s, NULL) == 0);
                job.exclude = NULL;
                job.n_exclude = 0;
        }

        /*
         * A guard holds each PATH that is there, or fails: only a PATH
         * that is not there (ENOENT, ENOTDIR) is left out.  One reached
         * through a symbolic link, one on another mount below the source
         * and a mount point itself fail the guard (the restore then says
         * --no-guard restores without one), and no guard is published.
         */
        {
                char *absent[] = { "a/none", "f3/x", NULL }, *linked[] = { "lnk/f1", NULL };
                char *below[] = { "mnt/x", NULL }, *point[] = { "mnt", NULL };
                SnapshotPre pre = { .guard = true };
                char gname[SNAPSHOT_NAME_MAX], p[PATH_MAX * 2];
                size_t before;

                sh("ln -s a '%s/src/lnk'", base);
                pre.paths = absent;
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, gname, &f) == 0);
                CHECK(f.guard && f.guarded == 0);
                {
                        _cleanup_close_ int s = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                        CHECK(store_retire(s, gname) == 0 && store_remove_retired(s, NULL) == 0);
                }
                before = count_snapshots(store);
                pre.paths = linked;
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, gname, &f) == -ELOOP);
                CHECK(count_snapshots(store) == before);
                sh("rm '%s/src/lnk'", base);
                snprintf(p, sizeof(p), "%s/mnt", src);
                if (geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
                    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 && mkdir(p, 0755) == 0 &&
                    mount("tmpfs", p, "tmpfs", 0, "mode=0755") == 0) {
                        sh("mkdir '%s/src/mnt/x' && echo y > '%s/src/mnt/x/y'", base);
                        pre.paths = below;
                        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, gname, &f) == -EXDEV);
                        pre.paths = point;
                        CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, &pre, gname, &f) == -EXDEV);
                        CHECK(count_snapshots(store) == before);
                        CHECK(umount2(p, MNT_DETACH) == 0 && rmdir(p) == 0);
                } else
                        SKIP("a mount below the source: no mount namespace of our own");
        }

        /*
         * The same second again: a suffix, after the newest name (here two
         * seconds ahead); then an empty one, without a manifest, newer
         * still, so that the next snapshot is a full one.
         */
        {
                time_t now = time(NULL);
                char n0[SNAPSHOT_NAME_MAX], p[PATH_MAX * 2];

                for (int i = 0; i < 3; i++) {
                        snapshot_name_format(now + i, 0, n0);
                        snprintf(p, sizeof(p), "%s/%s", store, n0);
                        mkdir(p, 0700);
                }
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, name2, &f) == 0);
                snapshot_name_format(now + 2, 1, n0);
                CHECK_STREQ(name2, n0);
                snapshot_name_format(now + 3, 0, n0);
                snprintf(p, sizeof(p), "%s/%s", store, n0);
                CHECK(mkdir(p, 0700) == 0);
        }

        /* A failure mid-way leaves no partial tree and no new snapshot. */
        {
                size_t before = count_snapshots(store);
                int calls = 0;
                MirrorOps ops = { .clone = failing_clone, .userdata = &calls };
                char *msg = NULL;
                size_t size = 0;
                FILE *log = open_memstream(&msg, &size);

                CHECK(snapshot_take(&job, &ops, NULL, log, NULL, name2, &f) == -ENOSPC);
                fclose(log);
                CHECK(msg && strstr(msg, "No space left on device"));
                free(msg);
                CHECK(count_snapshots(store) == before);
                sh("test -z \"$(ls -A '%s/.refsnap/job' | grep partial)\"", base);
        }

        /*
         * Files the kernel will not reflink for a reason of their own are
         * skipped and named; the snapshot is published, partial.  An
         * error of the filesystem (EIO) still fails it whole.
         */
        sh("mkdir -p '%s/src/a/b' '%s/.refsnap' && echo s > '%s/src/swapfile' && echo r > '%s/src/a/realtime\nname' && "
           "echo x > '%s/src/a/b/x'", base);
        {
                MirrorOps ops = { .clone = refusing_clone };
                char *msg = NULL, list[PATH_MAX * 2];
                size_t size = 0;
                FILE *log = open_memstream(&msg, &size);
                SnapshotFacts facts = {};

                CHECK(snapshot_take(&job, &ops, NULL, log, NULL, name2, &f) == 0);
                fclose(log);
                CHECK(f.skipped == 2);
                CHECK(msg && strstr(msg, "swapfile: skipped, the kernel would not reflink it: Text file busy"));
                free(msg);
                CHECK(!exists(store, "latest/swapfile") && exists(store, "latest/a/b/x") && exists(store, "latest/f3"));
                {
                        _cleanup_close_ int st = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                        CHECK(store_read_facts(st, name2, &facts) == 0 && facts.skipped == 2);
                }
                snprintf(list, sizeof(list), ".facts/%s.skipped", name2);
                CHECK(exists(store, list));
                sh("grep -qx 'ETXTBSY swapfile' '%s/.refsnap/job/.facts/'*.skipped && "
                   "grep -qxF 'EOPNOTSUPP a/realtime\\nname' '%s/.refsnap/job/.facts/'*.skipped", base);
                /* Its list goes with it. */
                {
                        _cleanup_close_ int st = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                        CHECK(store_retire(st, name2) == 0);
                        CHECK(!exists(store, list));
                        CHECK(store_remove_leftovers(st, NULL, NULL) == 0);
                }
                sh("echo b > '%s/src/broken'", base);
                CHECK(snapshot_take(&job, &ops, NULL, stderr, NULL, name2, &f) == -EIO);
                sh("rm -f '%s/src/broken' '%s/src/swapfile' '%s/src/a/realtime'*", base);
        }

        /* Cancelled: nothing listed; the hidden partial tree stays for the
         * next run, so that cancelling does not walk the tree. */
        {
                volatile sig_atomic_t cancel = 1;
                size_t before = count_snapshots(store);

                CHECK(snapshot_take(&job, &clone_double_ops, &cancel, stderr, NULL, name2, &f) == -ECANCELED);
                CHECK(count_snapshots(store) == before);
                sh("test -n \"$(ls -A '%s/.refsnap/job' | grep '^\\.partial-')\"", base);
        }

        /* Leftovers of an interrupted run go at start; nothing else does. */
        sh("mkdir -p '%s/.refsnap/job/.partial-2026-01-01T00:00:00Z/x' && "
           "touch '%s/.refsnap/job/.partial-2026-01-01T00:00:00Z/x/f' '%s/.refsnap/job/notes' "
           "'%s/.refsnap/job/.probe-2026-01-01T00:00:00Z' '%s/.refsnap/job/.probe-2026-01-01T00:00:00Z.clone'",
           base);
        {
                _cleanup_close_ int s = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                CHECK(store_remove_leftovers(s, NULL, NULL) == 0);
                CHECK(!exists(store, ".partial-2026-01-01T00:00:00Z"));
                /* A probe a run killed at that moment left (snapshot.c's take_probe()). */
                CHECK(!exists(store, ".probe-2026-01-01T00:00:00Z") &&
                      !exists(store, ".probe-2026-01-01T00:00:00Z.clone"));
                sh("test -z \"$(ls -A '%s/.refsnap/job' | grep partial)\"", base);
                CHECK(exists(store, "notes"));
                CHECK(exists(store, name));
        }

        /* One snapshot of a store at a time; a locked store has no leftovers. */
        {
                _cleanup_close_ int holder = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_close_ int other = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                size_t before = count_snapshots(store);
                char *msg = NULL;
                size_t size = 0;
                FILE *log = open_memstream(&msg, &size);

                sh("mkdir '%s/.refsnap/job/.partial-2026-01-02T00:00:00Z'", base);
                CHECK(store_lock(holder, false) == 0);
                CHECK(store_lock(other, false) == -EBUSY);
                CHECK(store_remove_leftovers(other, NULL, NULL) == 0);
                CHECK(exists(store, ".partial-2026-01-02T00:00:00Z"));
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, log, NULL, name2, &f) == -EBUSY);
                fclose(log);
                CHECK(msg && strstr(msg, "another snapshot or prune of this job is running"));
                free(msg);
                CHECK(count_snapshots(store) == before);
                holder = safe_close(holder);
                /* Free again: the next snapshot clears the leftover first. */
                CHECK(snapshot_take(&job, &clone_double_ops, NULL, stderr, NULL, name2, &f) == 0);
                CHECK(!exists(store, ".partial-2026-01-02T00:00:00Z"));
        }

        /* Pruning: by the retention rules, only its own snapshots. */
        sh("cd '%s/.refsnap/job' && rm -rf 20* && "
           "mkdir 2026-12-03T07:00:00Z 2026-12-03T07:30:00Z 2026-12-03T08:00:00Z 2026-12-03T08:40:00Z && "
           "mkdir -p outside/keep && touch outside/keep/f && ln -s outside/keep 2026-12-03T06:00:00Z && "
           "mkdir 2026-12-03T05:00:00Z && ln -s ../outside/keep 2026-12-03T05:00:00Z/escape", base);
        job.retention = (RetentionPolicy) { .hourly = 2 };
        snapshot_name_time("2026-12-03T09:00:00Z", &t);
        {
                char *out;

                r = prune_said(&job, t, true, &out);
                /* hourly=2 at 09:00: 08:00 and 07:00 (the oldest of hours 8 and 7), 08:40 newest */
                CHECK(r == 2);
                CHECK(out && strstr(out, "remove 2026-12-03T07:30:00Z") &&
                      strstr(out, "remove 2026-12-03T05:00:00Z") &&
                      strstr(out, "keep   2026-12-03T07:00:00Z  (hourly)") &&
                      strstr(out, "keep   2026-12-03T08:00:00Z  (hourly)") &&
                      strstr(out, "keep   2026-12-03T08:40:00Z  (newest)"));
                free(out);
                CHECK(exists(store, "2026-12-03T07:30:00Z"));   /* dry run */
        }
        CHECK(snapshot_prune(&job, t, false, NULL) == 2);
        CHECK(!exists(store, "2026-12-03T07:30:00Z"));
        CHECK(!exists(store, "2026-12-03T05:00:00Z"));
        CHECK(exists(store, "2026-12-03T07:00:00Z"));
        CHECK(exists(store, "2026-12-03T08:00:00Z"));
        CHECK(exists(store, "2026-12-03T06:00:00Z"));           /* a symlink: not a snapshot */
        CHECK(exists(store, "outside/keep/f"));                 /* never followed */
        CHECK(exists(store, "notes"));

        /*
         * One snapshot that cannot be retired (a stray file holds its
         * hidden name) does not stop the others going; it stays listed,
         * whole, and the failure is reported.
         */
        sh("cd '%s/.refsnap/job' && mkdir -p 2026-12-03T01:00:00Z/d 2026-12-03T02:00:00Z/d && "
           "touch 2026-12-03T01:00:00Z/d/f 2026-12-03T02:00:00Z/d/f .removing-2026-12-03T01:00:00Z", base);
        {
                char *out;

                r = prune_said(&job, t, false, &out);
                CHECK(r == -EEXIST);
                CHECK(out && strstr(out, "remove 2026-12-03T01:00:00Z: File exists"));
                CHECK(out && strstr(out, "remove 2026-12-03T02:00:00Z\n"));
                free(out);
                CHECK(exists(store, "2026-12-03T01:00:00Z/d/f"));
                CHECK(!exists(store, "2026-12-03T02:00:00Z"));
                CHECK(!exists(store, ".removing-2026-12-03T02:00:00Z"));
        }

        /*
         * Retired but not removed (killed, or the power went): not listed,
         * and the next run's leftovers take it, with facts of a snapshot
         * never published and a restore's staging; real facts stay.
         */
        sh("cd '%s/.refsnap/job' && rm -f .removing-* && mkdir -p .facts .restore-4242/x && "
           "echo files=1 > .facts/2026-12-03T01:00:00Z && echo files=1 > .facts/2026-01-09T00:00:00Z && "
           "touch .facts/.2026-01-10T00:00:00Z.tmp && echo files=1 > .facts/2026-12-03T08:40:00Z", base);
        {
                _cleanup_close_ int s = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                size_t before = count_snapshots(store);

                CHECK(store_retire(s, "2026-12-03T01:00:00Z") == 0);
                CHECK(count_snapshots(store) == before - 1);
                CHECK(exists(store, ".removing-2026-12-03T01:00:00Z/d/f"));
                CHECK(!exists(store, ".facts/2026-12-03T01:00:00Z"));
                CHECK(store_retire(s, "../etc") == -EINVAL);
                CHECK(store_remove_leftovers(s, NULL, NULL) == 0);
                CHECK(!exists(store, ".removing-2026-12-03T01:00:00Z"));
                CHECK(!exists(store, ".restore-4242"));
                CHECK(!exists(store, ".facts/2026-01-09T00:00:00Z"));
                CHECK(!exists(store, ".facts/.2026-01-10T00:00:00Z.tmp"));
                CHECK(exists(store, ".facts/2026-12-03T08:40:00Z"));
                CHECK(exists(store, "notes"));
        }

        /*
         * The newest whole snapshot is always kept: a partial one (its
         * facts say files were skipped), however new, does not count as it.
         */
        {
                char store2[PATH_MAX + 16];
                Job job2 = { .name = "job2", .source = src, .store = store2,
                             .retention = { .hourly = 1 } };
                char *out;

                snprintf(store2, sizeof(store2), "%s/.refsnap/job2", base);
                sh("mkdir -p '%s/.refsnap/job2/.facts' && cd '%s/.refsnap/job2' && chmod 0700 . && "
                   "mkdir 2026-12-02T07:00:00Z 2026-12-03T08:10:00Z 2026-12-03T08:20:00Z 2026-12-03T08:30:00Z && "
                   "printf 'files=1\\nskipped=1\\n' > .facts/2026-12-03T08:10:00Z && "
                   "printf 'files=1\\nskipped=0\\n' > .facts/2026-12-03T08:20:00Z && "
                   "printf 'files=1\\nskipped=2\\n' > .facts/2026-12-03T08:30:00Z", base);
                snapshot_name_time("2026-12-03T09:00:00Z", &t);
                /* hourly=1 keeps 08:10, the oldest of hour 8, and 08:30, the newest: both partial. */
                r = prune_said(&job2, t, false, &out);
                CHECK(r == 1);
                CHECK(out && strstr(out, "keep   2026-12-03T08:20:00Z  (newest-whole)") &&
                      strstr(out, "keep   2026-12-03T08:30:00Z  (newest)") &&
                      strstr(out, "keep   2026-12-03T08:10:00Z  (hourly)") &&
                      strstr(out, "remove 2026-12-02T07:00:00Z"));
                free(out);
                CHECK(exists(store2, "2026-12-03T08:20:00Z"));
                CHECK(!exists(store2, "2026-12-02T07:00:00Z"));
        }

        /*
         * A guard whose facts were lost (only its list of paths is left),
         * or whose facts cannot be read, is never "latest" and never the
         * newest whole snapshot; one with neither facts nor a list is a
         * snapshot older than facts: whole.
         */
        {
                char store3[PATH_MAX + 16], l[SNAPSHOT_NAME_MAX];
                Job job3 = { .name = "job3", .source = src, .store = store3,
                             .retention = { .hourly = 1 } };
                _cleanup_close_ int s = -EBADF;
                char *out;

                snprintf(store3, sizeof(store3), "%s/.refsnap/job3", base);
                sh("mkdir -p '%s/.refsnap/job3/.facts' && cd '%s/.refsnap/job3' && chmod 0700 . && "
                   "mkdir 2026-12-02T07:00:00Z 2026-12-03T08:10:00Z 2026-12-03T08:20:00Z 2026-12-03T08:30:00Z && "
                   "printf 'files=1\\n' > .facts/2026-12-03T08:10:00Z && "
                   "echo '0 a/b' > .facts/2026-12-03T08:20:00Z.guarded && "
                   "ln -s /nonexistent .facts/2026-12-03T08:30:00Z", base);
                s = open(store3, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                CHECK(store_latest(s, l) == 0);
                CHECK_STREQ(l, "2026-12-03T08:10:00Z");
                snapshot_name_time("2026-12-03T09:00:00Z", &t);
                r = prune_said(&job3, t, true, &out);
                /* The newest that is not a guard, and the one of unreadable facts is kept too. */
                CHECK(out && strstr(out, "keep   2026-12-03T08:10:00Z  (newest,hourly)") &&
                      strstr(out, "keep   2026-12-03T08:30:00Z  (facts-unreadable)") &&
                      strstr(out, "remove 2026-12-03T08:20:00Z"));
                free(out);
                /* Without facts and without a list: older than facts, whole. */
                sh("cd '%s/.refsnap/job3' && rm .facts/2026-12-03T08:10:00Z", base);
                CHECK(store_latest(s, l) == 0);
                CHECK_STREQ(l, "2026-12-03T08:10:00Z");
        }

        /*
         * The store is root's, reached through root's directories: not
         * one owned by a user, nor one under a directory a user may
         * change, nor one through a symbolic link.
         */
        if (geteuid() == 0) {
                char path[PATH_MAX * 2];

                snprintf(path, sizeof(path), "%s/.refsnap/job", base);
                CHECK(store_open(path, false) >= 0 && close(store_open(path, false)) == 0);
                sh("chown 65534 '%s/.refsnap/job'", base);
                CHECK(store_open(path, false) == -EPERM);
                CHECK(store_open(path, true) == -EPERM);
                sh("chown 0 '%s/.refsnap/job' && chmod 0777 '%s/.refsnap/job'", base);
                CHECK(store_open(path, false) == -EPERM);      /* others could plant names */
                CHECK(store_open(path, true) >= 0);             /* made 0700 again */
                sh("chmod 0777 '%s/.refsnap'", base);
                CHECK(store_open(path, false) == -EPERM);
                sh("chmod 0755 '%s/.refsnap' && chown 65534 '%s/.refsnap'", base);
                CHECK(store_open(path, false) == -EPERM);
                sh("chown 0 '%s/.refsnap' && ln -s .refsnap '%s/link'", base);
                /* Only the last component is made: a missing parent is a filesystem not mounted. */
                snprintf(path, sizeof(path), "%s/.refsnap/unmounted/job", base);
                CHECK(store_open(path, true) == -ENOENT);
                CHECK(!exists(base, ".refsnap/unmounted"));
                snprintf(path, sizeof(path), "%s/.refsnap/job", base);
                snprintf(path, sizeof(path), "%s/link/job", base);
                CHECK(store_open(path, false) == -ELOOP);
        } else
                SKIP("store ownership: not root");

        test_incremental(base);
        test_clock_back(base);
        test_smb_view(base);

        sh("rm -rf '%s'", base);
        return tests_end();
}
