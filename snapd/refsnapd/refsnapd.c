/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapd: takes the configured jobs' snapshots on schedule.  See
 * refsnapd(8) and refsnapd.conf(5).
 *
 * One sd-event loop (refsnapd-manager.c): a wall-clock timer per job, a
 * fanotify watch for on_change (refsnapd-watch.c), the signals (SIGHUP
 * reloads, SIGTERM stops) and the D-Bus object (refsnapd-bus.c).  Each
 * snapshot runs in a worker process (refsnapd-worker.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "config.h"
#include "exit-status.h"
#include "log.h"
#include "reflink.h"
#include "refsnapd-bus.h"
#include "refsnapd-manager.h"
#include "refsnapd-worker.h"

#define DEFAULT_CONFIG "/etc/refsnap/refsnapd.conf"
#define DEFAULT_DROPINS "/etc/refsnap/conf.d"

static const char *arg_config = DEFAULT_CONFIG;
static const char *arg_dropins = DEFAULT_DROPINS;
static bool arg_check = false;
static const char *arg_run_once = NULL;

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

/* --run-once: the worker's work, in this process. */
static int run_once(void) {
        Config *c = NULL;
        const Job *job;

        if (manager_load_config(arg_config, arg_dropins, &c, NULL) < 0)
                return EXIT_FAILED;
        log_set_max_level(c->log_level);
        job = config_find_job(c, arg_run_once);
        if (!job) {
                log_error("%s: no job [%s]", arg_config, arg_run_once);
                config_free(c);
                return EXIT_FAILED;
        }
        worker_run(job, false, NULL, -EBADF);
}

/* Deep trees keep a descriptor per level open. */
static void raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }
}

static int run(void) {
        Manager m = { .config_path = arg_config, .dropins = arg_dropins };
        Bus *bus = NULL;
        int r;

        r = manager_init(&m);
        if (r >= 0)
                log_info("reflink path: %s", reflink_path() == REFLINK_PATH_STOCK ?
                         "stock (no reflinkat(2) in this kernel: O_TMPFILE, FICLONE, linkat)" :
                         "syscall (reflinkat(2))");
        if (r >= 0) {
                r = bus_new(&m, &bus);
                if (r < 0)
                        log_warning("not on the system bus (%s): refsnapctl status and snapshot will not reach this daemon",
                                    strerror(-r));
                r = manager_start(&m);
        }
        if (r >= 0)
                r = sd_event_loop(m.event);
        if (r >= 0)
                log_info("stopped");
        else if (m.config)
                log_error("%s", strerror(-r));
        manager_done(&m);
        bus_free(bus);
        return r < 0 ? EXIT_FAILED : EXIT_OK;
}

int main(int argc, char *argv[]) {
        int r;

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_OK;
        if (arg_check)
                return config_check_command("refsnapd", arg_config, arg_dropins);
        raise_nofile();
        umask(0077);
        if (arg_run_once)
                return run_once();
        return run();
}
