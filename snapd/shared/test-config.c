/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Configuration: every key, every error, drop-in order, and the
 * file:line: key form of each message.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "macro.h"
#include "tests.h"

static char dir[] = "/tmp/refsnap-test-config.XXXXXX";

static char *write_file(const char *name, const char *content) {
        char *path;
        FILE *f;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                abort();
        f = fopen(path, "we");
        if (!f)
                abort();
        fputs(content, f);
        fclose(f);
        return path;
}

/* Load content as the main file; return the errors (or NULL on success). */
static char *load(const char *content, Config **ret) {
        _cleanup_free_ char *path = write_file("main.conf", content);
        char *errors = NULL;
        Config *c = NULL;
        int r = config_load(path, NULL, &c, &errors);

        if (r == 0 && ret)
                *ret = c;
        else
                config_free(c);
        if (r < 0 && !errors)
                errors = strdup("(no message)");
        return errors;
}

static void expect_error(const char *content, const char *want) {
        _cleanup_free_ char *e = load(content, NULL);

        tests_run++;
        if (e && strstr(e, want))
                printf("ok %d - error contains \"%s\"\n", tests_run, want);
        else {
                tests_failed++;
                printf("not ok %d - wanted an error containing \"%s\", got: %s\n", tests_run, want,
                       e ? e : "(success)");
        }
}

#define JOB "[home]\nsource = /srv/data/home\nstore = /srv/data/.refsnap/home\ninterval = 1h\n"

int main(void) {
        Config *c = NULL;
        char *e;

        if (!mkdtemp(dir))
                abort();

        /* Every key. */
        e = load("; a comment\n"
                 "[daemon]\nlog_level = debug\nwatch_queue = unlimited\nself_service_timeout = 5min\n\n"
                 "[home]\n"
                 "source = /srv/data/home\n"
                 "store = /srv/data/.refsnap/home\n"
                 "interval = 1h 30min\n"
                 "on_change = yes\n"
                 "keep_hourly = 24\nkeep_daily = 7\nkeep_weekly = 4\nkeep_monthly = 12\n"
                 "keep_yearly = 3\nkeep_min_age = 2h\nkeep_guard = 2w\n"
                 "exclude = *.tmp ; inline comment\n"
                 "exclude = /cache/\n"
                 "pre_snapshot = /usr/local/sbin/flush-db\n"
                 "post_snapshot =\n"
                 "hook_timeout = 90s\n"
                 "accept_quota_charges = yes\n"
                 "public = yes\n", &c);
        CHECK(e == NULL);
        free(e);
        CHECK(c && c->n_jobs == 1);
        if (c && c->n_jobs == 1) {
                const Job *j = config_find_job(c, "home");

                CHECK(c->log_level == LOG_DEBUG);
                CHECK(!c->watch_queue_bounded);
                CHECK(c->self_service_timeout == 300 * USEC_PER_SEC);
                CHECK(j != NULL);
                CHECK_STREQ(j->source, "/srv/data/home");
                CHECK_STREQ(j->store, "/srv/data/.refsnap/home");
                CHECK(j->interval == USEC_PER_HOUR + 30 * USEC_PER_MIN);
                CHECK(j->on_change);
                CHECK(j->retention.hourly == 24 && j->retention.daily == 7 &&
                      j->retention.weekly == 4 && j->retention.monthly == 12 &&
                      j->retention.yearly == 3);
                CHECK(j->retention.min_age == 2 * USEC_PER_HOUR);
                CHECK(j->retention.keep_guard == 14 * 24 * USEC_PER_HOUR);
                CHECK(j->n_exclude == 2);
                CHECK_STREQ(j->exclude[0], "*.tmp");
                CHECK_STREQ(j->exclude[1], "/cache/");
                CHECK(j->exclude[2] == NULL);
                CHECK_STREQ(j->pre_snapshot, "/usr/local/sbin/flush-db");
                CHECK(j->post_snapshot == NULL);
                CHECK(j->accept_quota_charges);
                CHECK(j->public);
                CHECK(j->hook_timeout == 90 * USEC_PER_SEC);
                CHECK(j->line == 7);
                CHECK(config_find_job(c, "nope") == NULL);
        }
        c = config_free(c);

        /* Defaults. */
        e = load(JOB, &c);
        CHECK(e == NULL);
        free(e);
        if (c) {
                CHECK(c->log_level == LOG_INFO);
                CHECK(c->watch_queue_bounded);
                CHECK(c->self_service_timeout == 60 * USEC_PER_SEC);
                CHECK_STREQ(c->metrics_file, "/var/lib/prometheus/node-exporter/refsnap.prom");
                CHECK(!c->jobs[0]->on_change);
                CHECK(!c->jobs[0]->public);
                CHECK(c->jobs[0]->retention.hourly == 0 && c->jobs[0]->retention.min_age == 0);
                CHECK(c->jobs[0]->retention.keep_guard == 7 * 24 * USEC_PER_HOUR);
                CHECK(c->jobs[0]->n_exclude == 0);
        }
        c = config_free(c);

        /* metrics_file: another path, or none. */
        e = load("[daemon]\nmetrics_file = /srv/metrics/refsnap.prom\n" JOB, &c);
        CHECK(e == NULL);
        free(e);
        CHECK(c && c->metrics_file && strcmp(c->metrics_file, "/srv/metrics/refsnap.prom") == 0);
        c = config_free(c);
        e = load("[daemon]\nmetrics_file =\n" JOB, &c);
        CHECK(e == NULL);
        free(e);
        CHECK(c && c->metrics_file == NULL);
        c = config_free(c);
        expect_error("[daemon]\nmetrics_file = metrics/refsnap.prom\n",
                     "main.conf:2: metrics_file: 'metrics/refsnap.prom' is not an absolute, normalized path ending in .prom");
        expect_error("[daemon]\nmetrics_file = /srv/../refsnap.prom\n", "main.conf:2: metrics_file: '/srv/../refsnap.prom' is not");
        expect_error("[daemon]\nmetrics_file = /srv/refsnap.txt\n", "main.conf:2: metrics_file: '/srv/refsnap.txt' is not");

        /* Every error, with its file, line and key. */
        expect_error("[daemon]\nlog_level = loud\n", "main.conf:2: log_level: 'loud' is not one of");
        expect_error("[daemon]\nwatch_queue = 100\n", "main.conf:2: watch_queue: '100' is not one of unlimited, bounded");
        expect_error("[daemon]\nself_service_timeout = 0\n",
                     "main.conf:2: self_service_timeout: '0' is not a time span from 1s to 1h");
        expect_error("[daemon]\nverbose = 1\n", "main.conf:2: verbose: unknown key in [daemon]");
        expect_error("source = /x\n", "main.conf:1: source: not in a section");
        /* A job's section twice in one file; reserved names, [daemon] in another case among them. */
        expect_error(JOB "[other]\nsource = /o\nstore = /p\ninterval = 1h\n[home]\nkeep_daily = 3\n",
                     "main.conf:9: (section): [home]: the job is already defined at ");
        expect_error(JOB "[home]\n", "main.conf:5: (section): [home]: the job is already defined at ");
        expect_error("[Daemon]\nlog_level = debug\n", "main.conf:1: (section): [Daemon]: a reserved name, not a job name");
        expect_error("[all]\nsource = /a\nstore = /b\ninterval = 1h\n", "main.conf:1: (section): [all]: a reserved name");
        expect_error("[defaults]\n", "main.conf:1: (section): [defaults]: a reserved name");
        expect_error("[daemon]\nlog_level = debug\n[daemon]\nfoo = 1\n", "main.conf:4: foo: unknown key in [daemon]");
        expect_error("[bad name]\nsource = /x\n", "main.conf:2: source: [bad name]: a job name");
        expect_error("[.hidden]\nsource = /x\n", "[.hidden]: a job name");
        expect_error(JOB "colour = blue\n", "main.conf:5: colour: unknown key");
        expect_error(JOB "keep_secondly = 1\n", "main.conf:5: keep_secondly: unknown key");
        expect_error(JOB "keep_daily = -1\n", "main.conf:5: keep_daily: '-1' is not a count");
        expect_error(JOB "keep_daily = 7days\n", "keep_daily: '7days' is not a count");
        expect_error(JOB "keep_daily = 99999999\n", "keep_daily: '99999999' is not a count");
        expect_error(JOB "interval = soon\n", "main.conf:5: interval: 'soon' is not a time span");
        expect_error(JOB "interval = 0\n", "main.conf:5: interval: '0': the interval must be at least 1s");
        expect_error(JOB "on_change_max_skip = often\n", "main.conf:5: on_change_max_skip: 'often' is not a time span");
        expect_error(JOB "hook_timeout = forever\n", "main.conf:5: hook_timeout: 'forever' is not a time span");
        {
                Config *d = NULL;
                _cleanup_free_ char *e2 = load(JOB, &d);

                CHECK(e2 == NULL && d && d->jobs[0]->hook_timeout == 5 * USEC_PER_MIN);
                CHECK(d && d->jobs[0]->on_change_max_skip == 7 * 24 * USEC_PER_HOUR);
                config_free(d);
                d = NULL;
                free(e2);
                e2 = load(JOB "hook_timeout = 0\non_change_max_skip = 1d\n", &d);
                CHECK(e2 == NULL && d && d->jobs[0]->hook_timeout == 0);
                CHECK(d && d->jobs[0]->on_change_max_skip == 24 * USEC_PER_HOUR);
                config_free(d);
        }
        /* smb_view: a path outside every source and store, of one job only; empty clears it. */
        {
                Config *d = NULL;
                _cleanup_free_ char *e2 = load(JOB "smb_view = /srv/refsnap-view/home\n", &d);

                CHECK(e2 == NULL && d && d->jobs[0]->smb_view &&
                      strcmp(d->jobs[0]->smb_view, "/srv/refsnap-view/home") == 0 && d->jobs[0]->smb_view_at.line == 5);
                config_free(d);
                d = NULL;
                free(e2);
                e2 = load(JOB "smb_view = /srv/refsnap-view/home\nsmb_view =\n", &d);
                CHECK(e2 == NULL && d && d->jobs[0]->smb_view == NULL);
                config_free(d);
                d = NULL;
                free(e2);
                e2 = load(JOB, &d);
                CHECK(e2 == NULL && d && d->jobs[0]->smb_view == NULL);
                config_free(d);
        }
        expect_error(JOB "smb_view = view\n", "main.conf:5: smb_view: 'view' is not an absolute, normalized path");
        expect_error(JOB "smb_view = /srv/../view\n", "main.conf:5: smb_view: '/srv/../view' is not an absolute");
        expect_error(JOB "smb_view = /\n", "main.conf:5: smb_view: '/' is not an absolute, normalized path below /");
        expect_error(JOB "smb_view = /srv/data/home/.view\n",
                     "main.conf:5: [home]: smb_view /srv/data/home/.view lies inside the source of job home "
                     "(/srv/data/home)");
        expect_error(JOB "smb_view = /srv/data/.refsnap/home\n",
                     "main.conf:5: [home]: smb_view /srv/data/.refsnap/home lies inside the store of job home");
        expect_error(JOB "smb_view = /srv\n",
                     "main.conf:5: [home]: smb_view /srv holds the source of job home (/srv/data/home), which "
                     "its mount would hide");
        expect_error(JOB "smb_view = /srv/view\n[other]\nsource = /o\nstore = /p/store\ninterval = 1h\n"
                     "smb_view = /p/store/x\n",
                     "main.conf:10: [other]: smb_view /p/store/x lies inside the store of job other");
        expect_error(JOB "smb_view = /srv/view\n[other]\nsource = /srv/view/o\nstore = /p/store\ninterval = 1h\n",
                     "main.conf:5: [home]: smb_view /srv/view holds the source of job other");
        expect_error(JOB "smb_view = /srv/view\n[other]\nsource = /o\nstore = /p/store\ninterval = 1h\n"
                     "smb_view = /srv/view\n",
                     "main.conf:10: [other]: smb_view /srv/view is also the smb_view of job home");
        /* full_every: off unless set. */
        expect_error(JOB "full_every = weekly\n", "main.conf:5: full_every: 'weekly' is not a time span");
        {
                Config *d = NULL;
                _cleanup_free_ char *e2 = load(JOB, &d);

                CHECK(e2 == NULL && d && d->jobs[0]->full_every == 0);
                config_free(d);
                d = NULL;
                free(e2);
                e2 = load(JOB "full_every = 1w\n", &d);
                CHECK(e2 == NULL && d && d->jobs[0]->full_every == USEC_PER_WEEK);
                config_free(d);
        }
        expect_error(JOB "keep_min_age = 1y\n", "main.conf:5: keep_min_age: '1y' is not a time span");
        expect_error(JOB "keep_guard = soon\n", "main.conf:5: keep_guard: 'soon' is not a time span");
        expect_error(JOB "on_change = maybe\n", "main.conf:5: on_change: 'maybe' is not a boolean");
        expect_error(JOB "accept_quota_charges = maybe\n", "main.conf:5: accept_quota_charges: 'maybe' is not a boolean");
        expect_error(JOB "public = maybe\n", "main.conf:5: public: 'maybe' is not a boolean");
        expect_error(JOB "public =\n", "main.conf:5: public: '' is not a boolean");
        expect_error("[j]\nsource = relative/path\n", "main.conf:2: source: 'relative/path' is not an absolute");
        expect_error("[j]\nstore = /a/../b\n", "main.conf:2: store: '/a/../b' is not an absolute, normalized");
        expect_error("[j]\nstore = /a//b\n", "store: '/a//b' is not");
        expect_error("[j]\nstore = /a/b/\n", "store: '/a/b/' is not");
        expect_error(JOB "pre_snapshot = flush-db\n", "main.conf:5: pre_snapshot: 'flush-db' is not an absolute");
        expect_error("[j]\nstore = /s\ninterval = 1h\n", "main.conf:1: [j]: source is not set");
        expect_error("[j]\nsource = /s\ninterval = 1h\n", "main.conf:1: [j]: store is not set");
        expect_error("[j]\nsource = /s\nstore = /t\n", "main.conf:1: [j]: interval is not set");
        expect_error("[j]\nsource = /s\nstore = /s\ninterval = 1h\n", "[j]: store is the source itself");
        expect_error("[j]\nsource = /s/t\nstore = /s\ninterval = 1h\n", "[j]: store /s contains the source");
        expect_error(JOB "[other]\nsource = /srv/o\nstore = /srv/data/.refsnap/home\ninterval = 1h\n",
                     "[other]: store /srv/data/.refsnap/home is also the store of job home");
        expect_error("[j\nsource = /s\n", "main.conf:1: syntax error");
        expect_error(JOB "just words\n", "main.conf:5: syntax error");
        {
                char line[400];

                snprintf(line, sizeof(line), JOB "exclude = %0300d\n", 7);
                expect_error(line, "main.conf:5: (line): longer than");
        }
        /* Several errors are all reported. */
        {
                _cleanup_free_ char *all = load("[j]\ninterval = x\non_change = x\n", NULL);

                CHECK(all && strstr(all, "main.conf:2: interval") && strstr(all, "main.conf:3: on_change") &&
                      strstr(all, "source is not set"));
        }
        /* A missing main file. */
        {
                char *errors = NULL;
                Config *cc = NULL;

                CHECK(config_load("/nonexistent/refsnapd.conf", NULL, &cc, &errors) < 0);
                CHECK(errors && strstr(errors, "/nonexistent/refsnapd.conf: cannot open: No such file"));
                CHECK(cc == NULL);
                free(errors);
        }

        /*
         * Drop-ins in lexical order; [daemon] may be given again (the last
         * assignment wins), a job only once; "exclude =" clears.
         */
        {
                _cleanup_free_ char *main_path = write_file("main.conf", "[daemon]\nlog_level = err\n" JOB
                                                            "exclude = *.a\nexclude =\nexclude = *.c\n");
                _cleanup_free_ char *dd = NULL;
                _cleanup_free_ char *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL;
                char *errors = NULL;

                if (asprintf(&dd, "%s/conf.d", dir) < 0 || mkdir(dd, 0755) < 0)
                        abort();
                p1 = write_file("conf.d/20-b.conf", "[daemon]\nlog_level = notice\n");
                p2 = write_file("conf.d/10-a.conf", "[daemon]\nlog_level = debug\n");
                p3 = write_file("conf.d/30-c.conf.disabled", "[home]\ninterval = nonsense\n");
                p4 = write_file("conf.d/40-new.conf", "[new]\nsource = /n\nstore = /m\ninterval = 1d\n");
                CHECK(config_load(main_path, dd, &c, &errors) == 0);
                CHECK(errors == NULL);
                free(errors);
                if (c) {
                        const Job *j = config_find_job(c, "home");

                        CHECK(c->n_jobs == 2);
                        CHECK(c->log_level == LOG_NOTICE);
                        CHECK(j && j->interval == USEC_PER_HOUR);
                        CHECK(j && j->n_exclude == 1 && strcmp(j->exclude[0], "*.c") == 0);
                        CHECK(config_find_job(c, "new") != NULL);
                }
                c = config_free(c);

                /* A job's section again in a drop-in: an error where it is, naming the first. */
                free(p2);
                p2 = write_file("conf.d/10-a.conf", "# again\n[home]\ninterval = 3h\n");
                errors = NULL;
                CHECK(config_load(main_path, dd, &c, &errors) == -EINVAL);
                CHECK(errors && strstr(errors, "conf.d/10-a.conf:2: (section): [home]: the job is already defined at "));
                CHECK(errors && strstr(errors, "main.conf:3; give each job one section"));
                free(errors);
                CHECK(c == NULL);
                /* An empty one too. */
                free(p2);
                p2 = write_file("conf.d/10-a.conf", "[new]\n");
                errors = NULL;
                CHECK(config_load(main_path, dd, &c, &errors) == -EINVAL);
                CHECK(errors && strstr(errors, "conf.d/40-new.conf:1: (section): [new]: the job is already defined at "));
                free(errors);
                CHECK(c == NULL);
                free(p2);
                p2 = write_file("conf.d/10-a.conf", "\n");

        /* An error in a drop-in names the drop-in. */
                free(p4);
                p4 = write_file("conf.d/40-new.conf", "[new]\nsource = /n\nstore = /m\ninterval = 1d\nx = 1\n");
                CHECK(config_load(main_path, dd, &c, &errors) == -EINVAL);
                CHECK(errors && strstr(errors, "conf.d/40-new.conf:5: x: unknown key"));
                free(errors);
                CHECK(c == NULL);
                unlink(p1);
                unlink(p2);
                unlink(p3);
                unlink(p4);
                rmdir(dd);
        }

        /*
         * Paths on disk, in /run: not under /tmp, which the daemon's unit
         * makes private and check-config refuses, and reached through
         * root's directories whatever folder the tests run from.
         */
        if (geteuid() == 0) {
                _cleanup_free_ char *conf = NULL, *path = NULL, *cmd = NULL;
                char *errors = NULL, *warnings = NULL;
                char t[] = "/run/refsnap-test-config.XXXXXX";

                if (!mkdtemp(t) || chmod(t, 0755) < 0)
                        abort();
                if (asprintf(&cmd, "cd '%s' && mkdir -p src real/src u/src w/src o/src && ln -s real link && "
                             "mkdir -p u/store && chown 65534 u/store && chown 65534 w && mkdir -p o/store && "
                             "chmod 0777 o && mkdir -p store && printf '#!/bin/sh\\n' > hook-open && chmod 0777 hook-open && "
                             "cp hook-open hook-user && chmod 0755 hook-user && chown 65534 hook-user", t) < 0 ||
                    system(cmd) != 0)
                        abort();
                if (asprintf(&conf, "[a]\nsource = %s/src\nstore = %s/store/a\ninterval = 1h\n"
                             "[b]\nsource = %s/missing\nstore = %s/store/b\ninterval = 1h\n"
                             "[c]\nsource = %s/src\nstore = /proc/x\ninterval = 1h\n"
                             "[d]\nsource = %s/link/src\nstore = %s/store/d\ninterval = 1h\n"
                             "pre_snapshot = /nonexistent/hook\n"
                             "[e]\nsource = /tmp\nstore = /var/tmp/x\ninterval = 1h\n"
                             "[f]\nsource = %s/u/src\nstore = %s/src/inner\ninterval = 1h\n"
                             "[g]\nsource = %s/u/src\nstore = %s/u/store\ninterval = 1h\n"
                             "[h]\nsource = %s/w/src\nstore = %s/w/store\ninterval = 1h\n"
                             "[i]\nsource = %s/o/src\nstore = %s/o/store\ninterval = 1h\n"
                             "[j]\nsource = %s/o/src\nstore = %s/link/store\ninterval = 1h\n"
                             "[k]\nsource = %s/src\nstore = %s/nowhere/k\ninterval = 1h\n"
                             "[l]\nsource = %s/src\nstore = %s/store/l\ninterval = 1h\npre_snapshot = %s/hook-open\n"
                             "[m]\nsource = %s/src\nstore = %s/store/m\ninterval = 1h\npost_snapshot = %s/hook-user\n",
                             t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t, t) < 0)
                        abort();
                path = write_file("paths.conf", conf);
                CHECK(config_load(path, NULL, &c, &errors) == 0);
                CHECK(config_check_paths(c, &errors, &warnings) == -EINVAL);
                fprintf(stderr, "%s%s", errors ? errors : "", warnings ? warnings : "");
                CHECK(errors && !strstr(errors, "[a]"));
                CHECK(warnings && !strstr(warnings, "[a]"));
                /* The state of the disk: a warning each, naming the line of the key at fault. */
                CHECK(warnings && strstr(warnings, "warning: ") &&
                      strstr(warnings, "paths.conf:6: [b]: source") &&
                      strstr(warnings, "No such file or directory"));
                CHECK(warnings && strstr(warnings, "paths.conf:11: [c]: store /proc/x is not on the mount of source"));
                CHECK(warnings && strstr(warnings, "[d]: source") && strstr(warnings, "is not canonical") &&
                      strstr(warnings, "its canonical path is ") && strstr(warnings, "/real/src"));
                CHECK(warnings && strstr(warnings, "paths.conf:17: [d]: pre_snapshot /nonexistent/hook: No such file"));
                CHECK(warnings && strstr(warnings, "[g]: store") && strstr(warnings, "/u/store is owned by uid 65534"));
                CHECK(warnings && strstr(warnings, "[h]: store") &&
                      strstr(warnings, "/w is owned by or writable by a user other than root"));
                CHECK(warnings && strstr(warnings, "[i]: store") &&
                      strstr(warnings, "/o is owned by or writable by a user other than root"));
                CHECK(warnings && strstr(warnings, "[j]: store") && strstr(warnings, "/link is a symbolic link"));
                CHECK(warnings && strstr(warnings, "[a]") == NULL && strstr(warnings, "[k]: store") &&
                      strstr(warnings, "its parent directory does not exist"));
                CHECK(warnings && strstr(warnings, "[l]: pre_snapshot") &&
                      strstr(warnings, "writable by users other than root (mode 0777)"));
                CHECK(warnings && strstr(warnings, "[m]: post_snapshot") &&
                      strstr(warnings, "owned by uid 65534; a hook must be root's"));
                /* The configuration's own: errors. */
                CHECK(errors && strstr(errors, "[e]: source /tmp is under /tmp, which refsnapd.service"));
                CHECK(errors && strstr(errors, "[e]: store /var/tmp/x is under /var/tmp"));
                CHECK(errors && strstr(errors, "[f]: store") &&
                      strstr(errors, "lies inside the source of job a"));
                CHECK(errors && !strstr(errors, "[b]") && !strstr(errors, "[g]") && !strstr(errors, "warning"));
                errors = mfree(errors);
                warnings = mfree(warnings);
                c = config_free(c);
                /* Only the state of the disk: no error, the daemon starts; each job fails on its own. */
                free(conf);
                if (asprintf(&conf, "[a]\nsource = %s/src\nstore = %s/store/a\ninterval = 1h\n"
                             "[b]\nsource = %s/missing\nstore = %s/store/b\ninterval = 1h\n", t, t, t, t) < 0)
                        abort();
                unlink(path);
                free(path);
                path = write_file("paths.conf", conf);
                CHECK(config_load(path, NULL, &c, &errors) == 0);
                CHECK(config_check_paths(c, &errors, &warnings) == 0);
                CHECK(!errors);
                CHECK(warnings && strstr(warnings, "[b]: source") && !strstr(warnings, "[a]"));
                warnings = mfree(warnings);
                free(errors);
                c = config_free(c);
                free(cmd);
                if (asprintf(&cmd, "rm -rf '%s'", t) < 0 || system(cmd) != 0)
                        abort();
                unlink(path);
        } else
                SKIP("paths on disk: not root, cannot make root's and users' trees");
        {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/main.conf", dir) >= 0)
                        unlink(p);
        }
        rmdir(dir);
        return tests_end();
}
