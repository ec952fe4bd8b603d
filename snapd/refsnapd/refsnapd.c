/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapd: takes the configured jobs' snapshots on schedule.  See
 * refsnapd(8) and refsnapd.conf(5).
 *
 * One sd-event loop: a wall-clock timer per job, a fanotify watch for
 * on_change, and the signals (SIGHUP reloads, SIGTERM stops).  Each
 * snapshot runs in a child process, so that the loop, the watchdog and
 * status queries go on during a long snapshot, and a stop can cancel it.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#include "refsnapd-bus.h"
#include "config.h"
#include "log.h"
#include "refsnapd-manager.h"
#include "macro.h"
#include "schedule.h"
#include "prune.h"
#include "snapshot.h"
#include "store.h"
#include "strv.h"
#include "refsnapd-watch.h"

#define DEFAULT_CONFIG "/etc/refsnap/refsnapd.conf"
#define DEFAULT_DROPINS "/etc/refsnap/conf.d"

/* Exit codes of a snapshot child. */
enum {
        CHILD_OK = 0,
        CHILD_FAILED = 1,
        CHILD_SKIPPED = 3,      /* the pre_snapshot hook failed */
        CHILD_CANCELLED = 4,
};

static const char *arg_config = DEFAULT_CONFIG;
static const char *arg_dropins = DEFAULT_DROPINS;
static bool arg_check = false;
static const char *arg_run_once = NULL;

static volatile sig_atomic_t child_cancel = 0;

static usec_t now_realtime(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + ts.tv_nsec / 1000;
}

static const char *format_time(usec_t t, char *buf, size_t size) {
        time_t s = (time_t) (t / USEC_PER_SEC);
        struct tm tm;

        if (t == 0)
                snprintf(buf, size, "never");
        else
                strftime(buf, size, "%Y-%m-%d %H:%M:%SZ", gmtime_r(&s, &tm));
        return buf;
}

static void manager_update_status(Manager *m) {
        _cleanup_free_ char *status = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&status, &size);

        if (!f)
                return;
        if (m->stopping)
                fputs("stopping", f);
        for (size_t i = 0; !m->stopping && i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];
                char a[32], b[32];

                fprintf(f, "%s%s: last %s (%s), next %s", i ? "; " : "", js->name,
                        format_time(js->last, a, sizeof(a)), js->result[0] ? js->result : "-",
                        js->child ? "running" : format_time(js->next, b, sizeof(b)));
        }
        if (!m->stopping && m->n_jobs == 0)
                fputs("no jobs configured", f);
        if (fclose(f) == 0) {
                sd_notifyf(false, "STATUS=%s", status);
                free(m->status);
                m->status = TAKE_PTR(status);
        }
}

/* The newest snapshot in the job's store, as the time it began; its name to name. */
static usec_t newest_snapshot(const Job *job, char name[static SNAPSHOT_NAME_MAX]) {
        _cleanup_close_ int store = store_open(job->store, false);
        char **names = NULL;
        size_t n = 0;
        time_t t = 0;

        name[0] = '\0';
        if (store < 0 || store_list(store, &names, &n) < 0 || n == 0) {
                strv_free(names);
                return 0;
        }
        (void) snapshot_name_time(names[n - 1], &t);
        snprintf(name, SNAPSHOT_NAME_MAX, "%s", names[n - 1]);
        strv_free(names);
        return (usec_t) t * USEC_PER_SEC;
}

static int job_schedule(JobState *js, usec_t when);

static int run_hook(const char *hook, const Job *job, const char *snapshot) {
        pid_t pid = fork();
        int status;

        if (pid < 0)
                return -errno;
        if (pid == 0) {
                setenv("REFSNAP_JOB", job->name, 1);
                setenv("REFSNAP_SOURCE", job->source, 1);
                setenv("REFSNAP_STORE", job->store, 1);
                if (snapshot)
                        setenv("REFSNAP_SNAPSHOT", snapshot, 1);
                execl(hook, hook, job->name, (char *) NULL);
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void child_on_term(int sig) {
        child_cancel = 1;
}

/* The snapshot child: hooks, snapshot, retention.  Never returns. */
_noreturn_ static void child_run(const Job *job) {
        struct sigaction sa = { .sa_handler = child_on_term };
        char name[SNAPSHOT_NAME_MAX];
        SnapshotFacts facts;
        sigset_t none;
        int r;

        sigemptyset(&none);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        signal(SIGHUP, SIG_IGN);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);

        if (job->pre_snapshot) {
                r = run_hook(job->pre_snapshot, job, NULL);
                if (r != 0) {
                        log_job(LOG_WARNING, job->name, "pre_snapshot %s failed (%d): snapshot skipped",
                                job->pre_snapshot, r);
                        _exit(CHILD_SKIPPED);
                }
        }
        r = snapshot_take(job, NULL, &child_cancel, stderr, name, &facts);
        if (r == -ECANCELED) {
                log_job(LOG_NOTICE, job->name, "snapshot cancelled, partial tree removed");
                _exit(CHILD_CANCELLED);
        }
        if (r < 0) {
                log_job(LOG_ERR, job->name, "snapshot failed: %s", strerror(-r));
                _exit(CHILD_FAILED);
        }
        log_job(LOG_INFO, job->name,
                "snapshot %s: %llu files, %llu directories, %llu bytes shared, %llu vanished, %llds",
                name, (unsigned long long) facts.files, (unsigned long long) facts.dirs,
                (unsigned long long) facts.bytes, (unsigned long long) facts.vanished,
                (long long) (facts.end - facts.start));
        if (job->post_snapshot) {
                _cleanup_free_ char *path = NULL;

                if (asprintf(&path, "%s/%s", job->store, name) >= 0) {
                        r = run_hook(job->post_snapshot, job, path);
                        if (r != 0)
                                log_job(LOG_WARNING, job->name, "post_snapshot %s failed (%d)",
                                        job->post_snapshot, r);
                }
        }
        r = snapshot_prune(job, time(NULL), false, NULL);
        if (r < 0)
                log_job(LOG_ERR, job->name, "retention failed: %s", strerror(-r));
        else if (r > 0)
                log_job(LOG_INFO, job->name, "retention removed %d snapshot%s", r, r == 1 ? "" : "s");
        _exit(CHILD_OK);
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
        JobState *js = userdata;
        Manager *m = js->manager;
        int code = si->si_code == CLD_EXITED ? si->si_status : -1;
        char name[SNAPSHOT_NAME_MAX] = "";

        js->child = 0;
        js->child_source = sd_event_source_unref(js->child_source);
        switch (code) {
        case CHILD_OK:
                snprintf(js->result, sizeof(js->result), "ok");
                if (js->job)
                        js->last = newest_snapshot(js->job, name);
                break;
        case CHILD_SKIPPED:
                snprintf(js->result, sizeof(js->result), "skipped by pre_snapshot");
                js->changed = true;
                break;
        case CHILD_CANCELLED:
                snprintf(js->result, sizeof(js->result), "cancelled");
                js->changed = true;
                break;
        default:
                snprintf(js->result, sizeof(js->result), "failed");
                js->changed = true;
                if (code < 0)
                        log_job(LOG_ERR, js->name, "snapshot process killed by signal %d", si->si_status);
                break;
        }
        bus_snapshot_finished(m, js, code == CHILD_OK, name);
        if (m->stopping) {
                /* A killed child leaves its partial tree: remove it now. */
                if (code < 0 && js->job) {
                        _cleanup_close_ int store = store_open(js->job->store, false);
                        if (store >= 0)
                                (void) store_remove_leftovers(store, NULL);
                }
                for (size_t i = 0; i < m->n_jobs; i++)
                        if (m->jobs[i]->child)
                                return 0;
                return sd_event_exit(m->event, 0);
        }
        if (js->job)
                job_schedule(js, schedule_next(js->job->interval, now_realtime()));
        manager_update_status(m);
        return 0;
}

static int job_start(JobState *js) {
        Manager *m = js->manager;
        pid_t pid;
        int r;

        js->changed = false;
        pid = fork();
        if (pid < 0) {
                r = -errno;
                log_job(LOG_ERR, js->name, "cannot fork: %s", strerror(-r));
                return r;
        }
        if (pid == 0)
                child_run(js->job);
        js->child = pid;
        r = sd_event_add_child(m->event, &js->child_source, pid, WEXITED, on_child_exit, js);
        if (r < 0) {
                log_job(LOG_ERR, js->name, "cannot watch child: %s", strerror(-r));
                return r;
        }
        snprintf(js->result, sizeof(js->result), "running");
        bus_emit_started(m, js);
        manager_update_status(m);
        return 0;
}

JobState *manager_find_job(Manager *m, const char *name) {
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->job && strcmp(m->jobs[i]->name, name) == 0)
                        return m->jobs[i];
        return NULL;
}

int manager_snapshot_now(JobState *js) {
        if (!js->job)
                return -ENOENT;
        if (js->child)
                return -EBUSY;
        log_job(LOG_INFO, js->name, "snapshot requested over D-Bus");
        return job_start(js);
}

static int on_job_due(sd_event_source *s, uint64_t usec, void *userdata) {
        JobState *js = userdata;
        const Job *job = js->job;

        if (!job || js->manager->stopping)
                return 0;
        if (js->child) {
                log_job(LOG_NOTICE, js->name, "previous snapshot still running, not starting another");
        } else if (job->on_change && !js->changed && js->last != 0) {
                /* Decided without looking at the tree: the watch knows. */
                log_job(LOG_INFO, js->name, "unchanged since the last snapshot, skipped (%llu ms after due)",
                        (unsigned long long) ((now_realtime() - MIN(usec, now_realtime())) / 1000));
                snprintf(js->result, sizeof(js->result), "skipped (unchanged)");
        } else if (job_start(js) == 0)
                return 0;       /* rescheduled when the child exits */
        job_schedule(js, schedule_next(job->interval, now_realtime()));
        manager_update_status(js->manager);
        return 0;
}

static int job_schedule(JobState *js, usec_t when) {
        Manager *m = js->manager;
        int r;

        js->next = when;
        if (js->timer) {
                r = sd_event_source_set_time(js->timer, when);
                if (r >= 0)
                        r = sd_event_source_set_enabled(js->timer, SD_EVENT_ONESHOT);
        } else
                r = sd_event_add_time(m->event, &js->timer, CLOCK_REALTIME, when, USEC_PER_SEC / 1000,
                                      on_job_due, js);
        if (r < 0)
                log_job(LOG_ERR, js->name, "cannot schedule: %s", strerror(-r));
        return r;
}

static JobState *job_state_free(JobState *js) {
        if (!js)
                return NULL;
        sd_event_source_disable_unref(js->timer);
        sd_event_source_disable_unref(js->child_source);
        for (size_t i = 0; i < js->n_waiting; i++) {
                (void) sd_bus_reply_method_errorf(js->waiting[i], BUS_ERROR_STOPPING,
                                                  "The job %s went away", js->name);
                sd_bus_message_unref(js->waiting[i]);
        }
        free(js->waiting);
        free(js->name);
        free(js);
        return NULL;
}

static void on_changed_dir(const char *dir, pid_t pid, void *userdata) {
        Manager *m = userdata;

        for (size_t i = 0; i < m->n_jobs; i++) {
                JobState *js = m->jobs[i];
                size_t n;

                if (!js->job || js->changed || pid == js->child)
                        continue;
                n = strlen(js->job->source);
                if (strncmp(dir, js->job->source, n) == 0 && (dir[n] == '\0' || dir[n] == '/')) {
                        js->changed = true;
                        log_job(LOG_DEBUG, js->name, "changed: %s", dir);
                }
        }
}

static int on_watch(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        bool resolve = false;
        int r;

        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->job && !m->jobs[i]->changed)
                        resolve = true;
        r = watch_process(m->watch, resolve, on_changed_dir, m);
        if (r > 0) {
                log_warning("change queue overflowed: every job counts as changed");
                for (size_t i = 0; i < m->n_jobs; i++)
                        m->jobs[i]->changed = true;
        }
        return 0;
}

/* Bring the job states in line with m->config, keeping what is known. */
static int manager_apply_config(Manager *m) {
        JobState **jobs = calloc(m->config->n_jobs + 1, sizeof(*jobs));
        usec_t now = now_realtime();

        if (!jobs)
                return -ENOMEM;
        for (size_t i = 0; i < m->config->n_jobs; i++) {
                const Job *job = m->config->jobs[i];
                JobState *js = NULL;

                for (size_t k = 0; k < m->n_jobs; k++)
                        if (m->jobs[k] && strcmp(m->jobs[k]->name, job->name) == 0) {
                                js = m->jobs[k];
                                m->jobs[k] = NULL;
                        }
                if (!js) {
                        _cleanup_close_ int store = -EBADF;

                        js = calloc(1, sizeof(*js));
                        if (!js || !(js->name = strdup(job->name))) {
                                free(js);
                                free(jobs);
                                return -ENOMEM;
                        }
                        js->manager = m;
                        /* A restart counts as a change: the daemon could not see. */
                        js->changed = true;
                        store = store_open(job->store, false);
                        if (store >= 0) {
                                if (store_remove_leftovers(store, NULL) < 0)
                                        log_job(LOG_WARNING, job->name, "cannot remove leftovers in %s",
                                                job->store);
                        }
                        char newest[SNAPSHOT_NAME_MAX];

                        js->last = newest_snapshot(job, newest);
                }
                js->job = job;
                if (m->watch) {
                        int r = watch_add(m->watch, job->source);
                        if (r < 0)
                                log_job(LOG_WARNING, job->name,
                                        "cannot watch %s (%s): every due snapshot will be taken",
                                        job->source, strerror(-r));
                        js->watched = r >= 0;
                }
                if (!js->watched)
                        js->changed = true;
                jobs[i] = js;
                if (!js->child) {
                        /* Missed a due time (downtime, suspend)?  One snapshot now. */
                        if (schedule_missed(job->interval, js->last, now))
                                job_schedule(js, now);
                        else
                                job_schedule(js, schedule_next(job->interval, now));
                }
        }
        /* Jobs no longer configured: stop their timers; a running child finishes. */
        for (size_t k = 0; k < m->n_jobs; k++)
                if (m->jobs[k]) {
                        if (m->jobs[k]->child)
                                kill(m->jobs[k]->child, SIGTERM);
                        job_state_free(m->jobs[k]);
                }
        free(m->jobs);
        m->jobs = jobs;
        m->n_jobs = m->config->n_jobs;
        if (m->watch) {
                const char **sources = calloc(m->n_jobs + 1, sizeof(char *));

                for (size_t i = 0; sources && i < m->n_jobs; i++)
                        sources[i] = m->jobs[i]->job->source;
                if (sources)
                        watch_retain(m->watch, sources, m->n_jobs);
                free(sources);
        }
        return 0;
}

static void log_errors(int level, const char *errors) {
        _cleanup_free_ char *copy = strdup(errors ? errors : "");

        for (char *line = copy ? strtok(copy, "\n") : NULL; line; line = strtok(NULL, "\n"))
                log_job(level, NULL, "%s", line);
}

static int load_config(Config **ret) {
        _cleanup_free_ char *errors = NULL;
        Config *c = NULL;
        int r;

        r = config_load_checked(arg_config, arg_dropins, &c, &errors);
        if (r < 0) {
                log_errors(LOG_ERR, errors);
                return r;
        }
        *ret = c;
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        Config *c = NULL;
        int r;

        sd_notify(false, "RELOADING=1\nSTATUS=reloading the configuration");
        r = load_config(&c);
        if (r < 0)
                log_error("reload: the configuration above has errors; still running the previous one");
        else {
                Config *old = m->config;

                m->config = c;
                r = manager_apply_config(m);
                if (r < 0) {
                        log_error("reload: %s", strerror(-r));
                        m->config = old;
                        config_free(c);
                } else {
                        config_free(old);
                        log_set_max_level(m->config->log_level);
                        log_info("reloaded: %zu job%s", m->n_jobs, m->n_jobs == 1 ? "" : "s");
                }
        }
        sd_notify(false, "READY=1");
        manager_update_status(m);
        return 0;
}

static int on_kill_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;

        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->child) {
                        log_job(LOG_WARNING, m->jobs[i]->name, "snapshot did not stop in time, killing it");
                        kill(m->jobs[i]->child, SIGKILL);
                }
        return 0;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        bool waiting = false;

        if (m->stopping)
                return 0;
        m->stopping = true;
        sd_notify(false, "STOPPING=1\nSTATUS=stopping");
        for (size_t i = 0; i < m->n_jobs; i++)
                if (m->jobs[i]->child) {
                        kill(m->jobs[i]->child, SIGTERM);
                        waiting = true;
                }
        if (!waiting)
                return sd_event_exit(m->event, 0);
        /* Cancelled children remove their partial trees; give them 3 s. */
        return sd_event_add_time_relative(m->event, &m->kill_timer, CLOCK_MONOTONIC,
                                          3 * USEC_PER_SEC, 0, on_kill_timer, m);
}

static void help(void) {
        printf("Usage: refsnapd [OPTION]...\n"
               "Take the configured jobs' reflink snapshots on schedule.\n\n"
               "  -c, --config=FILE     main configuration (default " DEFAULT_CONFIG ")\n"
               "      --conf-dir=DIR    drop-ins (default " DEFAULT_DROPINS ")\n"
               "      --check-config    check the configuration, print every error, exit\n"
               "      --run-once=JOB    take one snapshot of JOB now, in the foreground, apply\n"
               "                        its retention and exit (0 done, 1 failed, 3 skipped by\n"
               "                        pre_snapshot, 4 cancelled)\n"
               "  -h, --help            show this help\n"
               "      --version         show the version\n");
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_CONF_DIR = 0x100, ARG_CHECK, ARG_RUN_ONCE, ARG_VERSION };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "conf-dir", required_argument, NULL, ARG_CONF_DIR },
                { "check-config", no_argument, NULL, ARG_CHECK },
                { "run-once", required_argument, NULL, ARG_RUN_ONCE },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "c:h", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        arg_config = optarg;
                        break;
                case ARG_CONF_DIR:
                        arg_dropins = optarg;
                        break;
                case ARG_CHECK:
                        arg_check = true;
                        break;
                case ARG_RUN_ONCE:
                        arg_run_once = optarg;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("refsnapd " PROJECT_VERSION "\n");
                        return 0;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "refsnapd: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* --run-once: the snapshot child's work, in this process. */
static int run_once(void) {
        Config *c = NULL;
        const Job *job;

        if (load_config(&c) < 0)
                return EXIT_FAILURE;
        log_set_max_level(c->log_level);
        job = config_find_job(c, arg_run_once);
        if (!job) {
                log_error("%s: no job [%s]", arg_config, arg_run_once);
                config_free(c);
                return EXIT_FAILURE;
        }
        child_run(job);
}

int main(int argc, char *argv[]) {
        Manager m = {};
        struct rlimit rl;
        sigset_t mask;
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        if (arg_check)
                return config_check_command("refsnapd", arg_config, arg_dropins);

        /* Deep trees keep a descriptor per level open. */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
        umask(0077);
        if (arg_run_once)
                return run_once();


        r = load_config(&m.config);
        if (r < 0) {
                log_error("%s: configuration has errors, not starting", arg_config);
                return EXIT_FAILURE;
        }
        log_set_max_level(m.config->log_level);

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_default(&m.event);
        if (r < 0)
                goto fail;
        if ((r = sd_event_add_signal(m.event, NULL, SIGTERM, on_sigterm, &m)) < 0 ||
            (r = sd_event_add_signal(m.event, NULL, SIGINT, on_sigterm, &m)) < 0 ||
            (r = sd_event_add_signal(m.event, NULL, SIGHUP, on_sighup, &m)) < 0)
                goto fail;
        (void) sd_event_set_watchdog(m.event, true);

        r = watch_new(&m.watch);
        if (r < 0)
                log_warning("cannot watch for changes (fanotify: %s): every due snapshot will be taken",
                            strerror(-r));
        else if ((r = sd_event_add_io(m.event, &m.watch_source, watch_fd(m.watch), EPOLLIN, on_watch,
                                      &m)) < 0)
                goto fail;

        r = bus_setup(&m);
        if (r < 0)
                log_warning("not on the system bus (%s): refsnapctl status and snapshot will not reach this daemon",
                            strerror(-r));
        r = manager_apply_config(&m);
        if (r < 0)
                goto fail;
        log_info("started: %zu job%s", m.n_jobs, m.n_jobs == 1 ? "" : "s");
        sd_notify(false, "READY=1");
        manager_update_status(&m);

        r = sd_event_loop(m.event);
        if (r < 0)
                goto fail;
        log_info("stopped");
        r = 0;
fail:
        if (r < 0)
                log_error("%s", strerror(-r));
        for (size_t i = 0; i < m.n_jobs; i++)
                job_state_free(m.jobs[i]);
        free(m.jobs);
        sd_event_source_disable_unref(m.watch_source);
        sd_event_source_disable_unref(m.kill_timer);
        watch_free(m.watch);
        sd_bus_flush_close_unref(m.bus);
        free(m.status);
        config_free(m.config);
        sd_event_unref(m.event);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
