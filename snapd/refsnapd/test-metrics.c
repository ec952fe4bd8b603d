/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-metrics OUT: the metrics writer.  Label values escaped as the
 * exposition format wants; the result label; the atomic replace (whole
 * file or old file for a reader, never a part; nothing left beside it; a
 * missing directory or one reached through a symbolic link refused; a
 * link planted at the name replaced, not followed).  OUT gets a sample
 * file (a job name with quotes, backslashes, a newline, bytes that are not
 * UTF-8) for test-metrics.sh to check with promcheck.py.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "macro.h"
#include "refsnapd-metrics.h"
#include "tests.h"

static char *label(const char *s) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        metrics_label_value(f, s);
        fclose(f);
        return buf;
}

static char *read_file(const char *path) {
        static char buf[1 << 16];
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return NULL;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return NULL;
        buf[n] = '\0';
        return buf;
}

static int count_entries(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;

        if (!d)
                return -1;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        n++;
        closedir(d);
        return n;
}

int main(int argc, char *argv[]) {
        char tmpl[] = "/tmp/test-metrics.XXXXXX", path[256], sub[256], link[256], target[256], *s;
        const char *out = argc > 1 ? argv[1] : NULL;
        struct stat st;
        char *t;

        /* Escaping: \ " and newline, and nothing else of what is UTF-8. */
        t = label("a\"b\\c\nd");
        CHECK_STREQ(t, "\"a\\\"b\\\\c\\nd\"");
        free(t);
        t = label("plain-job_1.x");
        CHECK_STREQ(t, "\"plain-job_1.x\"");
        free(t);
        t = label("caf\xc3\xa9 \xe2\x82\xac");
        CHECK_STREQ(t, "\"caf\xc3\xa9 \xe2\x82\xac\"");
        free(t);
        /* Bytes that are not UTF-8 (a lone 0xff, a cut sequence, an overlong '/') as U+FFFD. */
        t = label("x\xffy\xc3" "z\xc0\xaf");
        CHECK_STREQ(t, "\"x\xef\xbf\xbdy\xef\xbf\xbdz\xef\xbf\xbd\xef\xbf\xbd\"");
        free(t);
        t = label("");
        CHECK_STREQ(t, "\"\"");
        free(t);

        /* The result label from the daemon's words. */
        CHECK_STREQ(metrics_result("ok"), "ok");
        CHECK_STREQ(metrics_result("partial (3 files skipped)"), "partial");
        CHECK_STREQ(metrics_result("failed"), "failed");
        CHECK_STREQ(metrics_result("unchanged since 2026-12-06T10:00:00Z, checked 2026-12-06T11:00:00Z"), "skipped");
        CHECK_STREQ(metrics_result("skipped by pre_snapshot"), "skipped");
        CHECK_STREQ(metrics_result("cancelled"), "cancelled");
        CHECK_STREQ(metrics_result("running"), "running");
        CHECK_STREQ(metrics_result("-"), "none");
        CHECK_STREQ(metrics_result(""), "none");
        CHECK_STREQ(metrics_result("okay"), "none");

        /* The format: each sample of a job with its escaped label, the result one-hot. */
        {
                JobMetrics jobs[] = {
                        { .job = "home", .newest = 1765000000ULL * USEC_PER_SEC,
                          .oldest = 1764000000ULL * USEC_PER_SEC, .verified = 1765003600ULL * USEC_PER_SEC,
                          .has_facts = true, .duration_sec = 3, .files = 1234, .bytes = 5000000, .kept = 7,
                          .result = "ok", .failed = 1, .partial = 2 },
                        { .job = "we\"ird\\job\nname\xff", .result = "failed", .failed = 4, .paused = true },
                };
                char *text = NULL;
                size_t size = 0;
                FILE *f = open_memstream(&text, &size);

                CHECK(metrics_format(f, jobs, ELEMENTSOF(jobs), 1765007200ULL * USEC_PER_SEC) == 0);
                fclose(f);
                CHECK(strstr(text, "\nrefsnap_snapshot_newest_timestamp_seconds{job=\"home\"} 1765000000\n") != NULL);
                CHECK(strstr(text, "\nrefsnap_last_verified_timestamp_seconds{job=\"home\"} 1765003600\n") != NULL);
                CHECK(strstr(text, "\nrefsnap_snapshots{job=\"home\"} 7\n") != NULL);
                CHECK(strstr(text, "\nrefsnap_last_result{job=\"home\",result=\"ok\"} 1\n") != NULL);
                CHECK(strstr(text, "\nrefsnap_last_result{job=\"home\",result=\"failed\"} 0\n") != NULL);
                CHECK(strstr(text, "\nrefsnap_snapshot_failures_total{job=\"we\\\"ird\\\\job\\nname\xef\xbf\xbd\"} 4\n")
                      != NULL);
                CHECK(strstr(text, "\nrefsnap_last_result{job=\"we\\\"ird\\\\job\\nname\xef\xbf\xbd\",result=\"failed\"} 1\n")
                      != NULL);
                /* A job without a snapshot has no time series, not a zero time. */
                CHECK(strstr(text, "refsnap_snapshot_newest_timestamp_seconds{job=\"we") == NULL);
                CHECK(strstr(text, "# TYPE refsnap_snapshot_failures_total counter\n") != NULL);
                CHECK(strstr(text, "# TYPE refsnap_paused gauge\n") != NULL);
                CHECK(strstr(text, "\nrefsnap_paused{job=\"home\"} 0\n") != NULL);
                CHECK(strstr(text, "\nrefsnap_paused{job=\"we\\\"ird\\\\job\\nname\xef\xbf\xbd\"} 1\n") != NULL);
                CHECK(size > 0 && text[size - 1] == '\n');
                if (out) {
                        FILE *o = fopen(out, "we");

                        CHECK(o && fwrite(text, 1, size, o) == size && fclose(o) == 0);
                }
                free(text);
        }

        /* The atomic replace. */
        CHECK(mkdtemp(tmpl) != NULL);
        snprintf(path, sizeof(path), "%s/refsnap.prom", tmpl);
        umask(077);
        CHECK(metrics_write_file(path, "a 1\n", 4) == 0);
        s = read_file(path);
        CHECK(s && strcmp(s, "a 1\n") == 0);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
        /* Nothing left beside it. */
        CHECK(count_entries(tmpl) == 1);
        {
                /* A reader holding the old file reads it whole after the replace. */
                int old = open(path, O_RDONLY | O_CLOEXEC);
                char b[16] = "";

                CHECK(metrics_write_file(path, "b 22\n", 5) == 0);
                CHECK(old >= 0 && pread(old, b, sizeof(b) - 1, 0) == 4 && strcmp(b, "a 1\n") == 0);
                safe_close(old);
                s = read_file(path);
                CHECK(s && strcmp(s, "b 22\n") == 0);
                CHECK(count_entries(tmpl) == 1);
        }
        /* A missing directory: -ENOENT, nothing made. */
        snprintf(sub, sizeof(sub), "%s/missing/refsnap.prom", tmpl);
        CHECK(metrics_write_file(sub, "x 1\n", 4) == -ENOENT);
        CHECK(count_entries(tmpl) == 1);
        /* A directory reached through a symbolic link: refused. */
        snprintf(link, sizeof(link), "%s/linkdir", tmpl);
        CHECK(symlink(tmpl, link) == 0);
        snprintf(sub, sizeof(sub), "%s/linkdir/other.prom", tmpl);
        CHECK(metrics_write_file(sub, "x 1\n", 4) == -ELOOP);
        CHECK(unlink(link) == 0);
        /* A symbolic link planted at the name is replaced, its target untouched. */
        snprintf(target, sizeof(target), "%s/target", tmpl);
        CHECK(write(open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0600), "keep\n", 5) == 5);
        CHECK(unlink(path) == 0 && symlink(target, path) == 0);
        CHECK(metrics_write_file(path, "c 3\n", 4) == 0);
        CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
        s = read_file(target);
        CHECK(s && strcmp(s, "keep\n") == 0);
        CHECK(unlink(target) == 0);

        /* Replaced 300 times by a child while read 300 times: each read is one whole version. */
        {
                static char big[2][40000];
                int bad = 0, reads = 0;
                pid_t pid;

                memset(big[0], 'x', sizeof(big[0]) - 2);
                big[0][sizeof(big[0]) - 2] = '\n';
                memset(big[1], 'y', 1000);
                big[1][1000] = '\n';
                CHECK(metrics_write_file(path, big[0], strlen(big[0])) == 0);
                pid = fork();
                if (pid == 0) {
                        for (int i = 0; i < 300; i++)
                                if (metrics_write_file(path, big[i % 2], strlen(big[i % 2])) < 0)
                                        _exit(1);
                        _exit(0);
                }
                for (int i = 0; i < 300; i++) {
                        s = read_file(path);
                        if (!s)
                                continue;
                        reads++;
                        if (strcmp(s, big[0]) != 0 && strcmp(s, big[1]) != 0)
                                bad++;
                }
                {
                        int status = -1;

                        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
                }
                printf("# %d reads during the replaces\n", reads);
                CHECK(reads == 300);
                CHECK(bad == 0);
                CHECK(count_entries(tmpl) == 1);
        }
        CHECK(unlink(path) == 0 && rmdir(tmpl) == 0);
        return tests_end();
}
