/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "refsnapd-manager.h"
#include "refsnapd-metrics.h"
#include "snapshot-name.h"
#include "store.h"
#include "strv.h"
#include "time-util.h"

const char *const metrics_results[] = { "ok", "partial", "failed", "skipped", "cancelled", "running", "none", NULL };

static bool word(const char *s, const char *w) {
        size_t n = strlen(w);

        return strncmp(s, w, n) == 0 && (s[n] == '\0' || s[n] == ' ');
}

const char *metrics_result(const char *r) {
        if (!r || !*r || strcmp(r, "-") == 0)
                return "none";
        if (word(r, "ok") || word(r, "partial") || word(r, "failed") || word(r, "cancelled") || word(r, "running"))
                for (size_t i = 0; metrics_results[i]; i++)
                        if (word(r, metrics_results[i]))
                                return metrics_results[i];
        /* "unchanged since ..., checked ..." (on_change) and "skipped by pre_snapshot". */
        if (word(r, "unchanged") || word(r, "skipped"))
                return "skipped";
        return "none";
}

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s) {
        size_t n;
        unsigned cp;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xe0) == 0xc0)
                n = 2, cp = s[0] & 0x1f;
        else if ((s[0] & 0xf0) == 0xe0)
                n = 3, cp = s[0] & 0x0f;
        else if ((s[0] & 0xf8) == 0xf0)
                n = 4, cp = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[i] & 0x3f);
        }
        /* Overlong forms, surrogates and what is past U+10FFFF are not UTF-8. */
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

void metrics_label_value(FILE *f, const char *s) {
        const unsigned char *p = (const unsigned char *) s;

        fputc('"', f);
        while (*p) {
                size_t n;

                if (*p == '\\' || *p == '"') {
                        fputc('\\', f);
                        fputc(*p++, f);
                        continue;
                }
                if (*p == '\n') {
                        fputs("\\n", f);
                        p++;
                        continue;
                }
                n = utf8_len(p);
                if (n == 0) {
                        fputs("\xef\xbf\xbd", f);
                        p++;
                        continue;
                }
                fwrite(p, 1, n, f);
                p += n;
        }
        fputc('"', f);
}

/* HELP and TYPE of a metric, then one sample per job from value(). */
static void family(FILE *f, const JobMetrics *jobs, size_t n, const char *name, const char *type, const char *help,
                   bool (*value)(const JobMetrics *j, unsigned long long *v)) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
        for (size_t i = 0; i < n; i++) {
                unsigned long long v;

                if (!value(&jobs[i], &v))
                        continue;
                fprintf(f, "%s{job=", name);
                metrics_label_value(f, jobs[i].job);
                fprintf(f, "} %llu\n", v);
        }
}

#define VALUE(fn, cond, expr)                                                           \
        static bool fn(const JobMetrics *j, unsigned long long *v) {                    \
                if (!(cond))                                                            \
                        return false;                                                   \
                *v = (expr);                                                            \
                return true;                                                            \
        }
VALUE(v_newest, j->newest > 0, j->newest / USEC_PER_SEC)
VALUE(v_oldest, j->oldest > 0, j->oldest / USEC_PER_SEC)
VALUE(v_verified, j->verified > 0, j->verified / USEC_PER_SEC)
VALUE(v_duration, j->has_facts, j->duration_sec)
VALUE(v_files, j->has_facts, j->files)
VALUE(v_bytes, j->has_facts, j->bytes)
VALUE(v_kept, true, j->kept)
VALUE(v_running, true, j->running)
VALUE(v_paused, true, j->paused)
VALUE(v_failed, true, j->failed)
VALUE(v_partial, true, j->partial)
#undef VALUE

int metrics_format(FILE *f, const JobMetrics *jobs, size_t n, usec_t now) {
        family(f, jobs, n, "refsnap_snapshot_newest_timestamp_seconds", "gauge",
               "When the newest snapshot of the job was taken (its name's time).", v_newest);
        family(f, jobs, n, "refsnap_snapshot_oldest_timestamp_seconds", "gauge",
               "When the oldest snapshot the job keeps was taken.", v_oldest);
        family(f, jobs, n, "refsnap_last_verified_timestamp_seconds", "gauge",
               "When the source was last known to be in a snapshot: the newest one, or a later check that "
               "found it unchanged (on_change).", v_verified);
        family(f, jobs, n, "refsnap_snapshot_duration_seconds", "gauge",
               "How long the newest snapshot took, from its facts.", v_duration);
        family(f, jobs, n, "refsnap_snapshot_files", "gauge", "Files in the newest snapshot.", v_files);
        family(f, jobs, n, "refsnap_snapshot_bytes", "gauge",
               "Bytes of the files in the newest snapshot (shared, not copied).", v_bytes);
        family(f, jobs, n, "refsnap_snapshots", "gauge", "Snapshots the job keeps in its store.", v_kept);
        family(f, jobs, n, "refsnap_running", "gauge", "1 while a snapshot of the job runs.", v_running);
        family(f, jobs, n, "refsnap_paused", "gauge",
               "1 while the job is paused (refsnapctl pause): its scheduled snapshots are skipped.", v_paused);
        fprintf(f, "# HELP refsnap_last_result The job's last result: 1 for it, 0 for the others.\n"
                "# TYPE refsnap_last_result gauge\n");
        for (size_t i = 0; i < n; i++) {
                const char *r = metrics_result(jobs[i].result);

                for (size_t k = 0; metrics_results[k]; k++) {
                        fputs("refsnap_last_result{job=", f);
                        metrics_label_value(f, jobs[i].job);
                        fprintf(f, ",result=\"%s\"} %d\n", metrics_results[k], strcmp(r, metrics_results[k]) == 0);
                }
        }
        family(f, jobs, n, "refsnap_snapshot_failures_total", "counter",
               "Snapshot runs of the job that failed since refsnapd started.", v_failed);
        family(f, jobs, n, "refsnap_snapshot_partial_total", "counter",
               "Snapshot runs of the job that ended partial since refsnapd started.", v_partial);
        fprintf(f, "# HELP refsnap_metrics_timestamp_seconds When refsnapd wrote this file.\n"
                "# TYPE refsnap_metrics_timestamp_seconds gauge\n"
                "refsnap_metrics_timestamp_seconds %llu\n", (unsigned long long) (now / USEC_PER_SEC));
        return ferror(f) ? -EIO : 0;
}

static int write_all(int fd, const char *p, size_t len) {
        while (len > 0) {
                ssize_t k = write(fd, p, len);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                len -= (size_t) k;
        }
        return 0;
}

/* A name for the new file beside base, beginning with '.': node_exporter reads only *.prom, and ls hides it. */
static int temp_name(const char *base, char **ret) {
        uint32_t rnd;

        if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
                rnd = (uint32_t) getpid() ^ (uint32_t) now_realtime();
        return asprintf(ret, ".%s.%08x", base, rnd) < 0 ? -ENOMEM : 0;
}

int metrics_write_file(const char *path, const char *text, size_t len) {
        _cleanup_close_ int dir = -EBADF, fd = -EBADF;
        _cleanup_free_ char *tmp = NULL;
        const char *base;
        bool named = false;
        int r;

        dir = chase_parent(AT_FDCWD, path, &(Chase) {}, &base);
        if (dir < 0)
                return dir;
        fd = openat(dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
                return -errno;
        if (fd < 0)
                /* No O_TMPFILE here: a new hidden name, never one that is there (a link planted in it). */
                for (int i = 0; fd < 0 && i < 16; i++) {
                        tmp = mfree(tmp);
                        r = temp_name(base, &tmp);
                        if (r < 0)
                                return r;
                        fd = openat(dir, tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
                        if (fd < 0 && errno != EEXIST)
                                return -errno;
                        named = fd >= 0;
                }
        if (fd < 0)
                return -EEXIST;
        /* Readable by node_exporter whatever the umask. */
        r = fchmod(fd, 0644) < 0 ? -errno : write_all(fd, text, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        for (int i = 0; r >= 0 && !named && i < 16; i++) {
                char proc[64];

                tmp = mfree(tmp);
                r = temp_name(base, &tmp);
                if (r < 0)
                        break;
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
                if (linkat(AT_FDCWD, proc, dir, tmp, AT_SYMLINK_FOLLOW) == 0)
                        named = true;
                else if (errno != EEXIST)
                        r = -errno;
        }
        if (r >= 0 && !named)
                r = -EEXIST;
        if (r >= 0 && renameat(dir, tmp, dir, base) < 0)
                r = -errno;
        if (r < 0) {
                if (named)
                        (void) unlinkat(dir, tmp, 0);
                return r;
        }
        /* The new name made to last as the data did. */
        (void) fsync(dir);
        return 0;
}

/* What a job's store says: its snapshots, the newest one's facts, its last unchanged check. */
static void job_metrics_store(const Job *job, JobMetrics *jm) {
        _cleanup_close_ int store = store_open(job->store, false);
        char **names = NULL;
        size_t n = 0;
        SnapshotFacts f = {};
        time_t t, checked;

        if (store < 0 || store_list(store, &names, &n) < 0 || n == 0) {
                strv_free(names);
                return;
        }
        jm->kept = n;
        if (snapshot_name_time(names[0], &t) == 0)
                jm->oldest = (usec_t) t * USEC_PER_SEC;
        if (snapshot_name_time(names[n - 1], &t) == 0) {
                jm->newest = jm->verified = (usec_t) t * USEC_PER_SEC;
                if (store_read_checked(store, &checked) == 0 && checked >= t)
                        jm->verified = (usec_t) checked * USEC_PER_SEC;
        }
        if (store_read_facts(store, names[n - 1], &f) == 0) {
                jm->has_facts = true;
                jm->files = f.files;
                jm->bytes = f.bytes;
                jm->duration_sec = f.end > f.start ? (uint64_t) (f.end - f.start) : 0;
        }
        strv_free(names);
}

void manager_write_metrics(Manager *m) {
        static int said = 0;    /* the last error said, so that one failing directory is said once */
        _cleanup_free_ JobMetrics *jobs = NULL;
        _cleanup_free_ char *text = NULL;
        size_t size = 0, n = 0;
        FILE *f;
        int r;

        if (!m->config || !m->config->metrics_file)
                return;
        jobs = calloc(m->n_jobs + 1, sizeof(*jobs));
        if (!jobs)
                return;
        for (size_t i = 0; i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];

                if (!js || !js->job)
                        continue;
                jobs[n] = (JobMetrics) {
                        .job = js->name,
                        .result = js->child ? "running" : js->result,
                        .running = js->child != 0,
                        .paused = js->paused,
                        .failed = js->n_failed,
                        .partial = js->n_partial,
                };
                job_metrics_store(js->job, &jobs[n]);
                n++;
        }
        f = open_memstream(&text, &size);
        if (!f)
                return;
        r = metrics_format(f, jobs, n, now_realtime());
        if (fclose(f) != 0 || r < 0)
                return;
        r = metrics_write_file(m->config->metrics_file, text, size);
        if (r == -ENOENT) {
                /* No node_exporter's directory: nothing is made for it. */
                if (said != r)
                        log_debug("metrics: the directory of %s is missing, not written", m->config->metrics_file);
        } else if (r < 0 && said != r)
                log_warning("metrics: cannot write %s: %s", m->config->metrics_file, strerror(-r));
        else if (r >= 0 && said < 0)
                log_info("metrics: %s written again", m->config->metrics_file);
        said = r;
}
