/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl: look at and manage refsnap's snapshots.  list, diff,
 * restore, prune and check-config work on the configuration and the
 * stores directly (the daemon may be stopped); status and snapshot ask
 * the daemon over D-Bus.  See refsnapctl(8).
 *
 * This file: the options and the verb table.  Each verb is in
 * refsnapctl-VERB.c, what they share in refsnapctl-util.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exit-status.h"
#include "log-event.h"
#include "macro.h"
#include "refsnapctl.h"

#define DEFAULT_CONFIG "/etc/refsnap/refsnapd.conf"
#define DEFAULT_DROPINS "/etc/refsnap/conf.d"

const char *arg_config = DEFAULT_CONFIG;
const char *arg_dropins = DEFAULT_DROPINS;
bool arg_json = false;
bool arg_utc = false;
bool arg_legend = true;
bool arg_dry_run = false;
bool arg_delete = false;
bool arg_delete_excluded = false;
bool arg_no_guard = false;
bool arg_if_changed = false;
bool arg_full = false;
bool arg_force = false;
unsigned arg_force_every = 0;
const char *arg_to = NULL;
bool arg_pin = false;
const char *arg_description = NULL;
const char *arg_pause_for = NULL;
const char *arg_pause_until = NULL;
bool arg_all = false;
bool arg_mine = false;

typedef struct Verb {
        const char *name;
        int (*run)(int argc, char *argv[]);
} Verb;

static const Verb verbs[] = {
        { "status", verb_status },
        { "snapshot", verb_snapshot },
        { "list", verb_list },
        { "prune", verb_prune },
        { "diff", verb_diff },
        { "restore", verb_restore },
        { "check-config", verb_check_config },
        { "offsite", verb_offsite },
        { "check", verb_check },
        { "pin", verb_pin },
        { "unpin", verb_pin },
        { "delete", verb_delete },
        { "pause", verb_pause },
        { "resume", verb_resume },
        { "cancel", verb_cancel },
        { "purge", verb_purge },
        { "versions", verb_versions },
};

static void help(void) {
        printf("Usage: refsnapctl [OPTION]... VERB [ARG]...\n\n"
               "  status                   the daemon and each job: last, next, result\n"
               "  list [JOB]               snapshots with time, files, size\n"
               "  snapshot JOB [--if-changed|--full] [--description TEXT] [--pin]\n"
               "                           take one now, through the daemon, and wait for it\n"
               "  diff JOB SNAP [SNAP|live] [PATH]\n"
               "                           added (+), removed (-) and changed (~) entries\n"
               "  restore JOB SNAP [PATH]... [--to DIR] [--delete [--delete-excluded]] [--dry-run] [--no-guard]\n"
               "                           bring files, subtrees or the whole job back\n"
               "  restore --mine SNAP PATH [--to DIR] [--delete] [--dry-run [--json]]\n"
               "                           bring back a file or link of yours, as you; any user may\n"
               "  prune JOB [--dry-run]    apply the job's retention now (--dry-run: what keeps each)\n"
               "  pin JOB SNAP, unpin JOB SNAP\n"
               "                           keep a snapshot whatever retention says, or no longer\n"
               "  delete JOB SNAP [--force]\n"
               "                           remove one snapshot now (--force: a pinned one too)\n"
               "  pause JOB [--for SPAN|--until TIME], resume JOB\n"
               "                           skip the job's scheduled snapshots, or no longer\n"
               "  cancel JOB               end the job's running snapshot; nothing is published\n"
               "  purge JOB PATH [--dry-run]\n"
               "                           remove one leaked file or subtree from every snapshot\n"
               "  check-config [FILE]      check the configuration, print every error\n"
               "  offsite JOB [--force] [--force-every=N]\n"
               "                           back up the newest snapshot with restic, from a fixed path\n"
               "  versions PATH [--all]    the snapshots holding PATH (there or deleted) that you may\n"
               "                           read, newest first; any user may ask\n"
               "  check [JOB]... [-w SPAN] [-c SPAN]\n"
               "                           a monitoring plugin (Nagios): 0 OK, 1 WARNING, 2 CRITICAL,\n"
               "                           3 UNKNOWN; -w/-c after the verb are its thresholds\n\n"
               "  -c, --config=FILE        main configuration (default " DEFAULT_CONFIG ")\n"
               "      --conf-dir=DIR       drop-ins (default " DEFAULT_DROPINS ")\n"
               "      --json               machine-readable output for status, list, diff, prune,\n"
               "                           restore --dry-run, check-config and purge\n"
               "      --utc                times in UTC (default: the local zone, with its name)\n"
               "      --no-legend          no column headers and no summary lines\n"
               "  -n, --dry-run            prune, restore, purge: say what would change, change nothing\n"
               "      --to=DIR             restore: into DIR instead of the job's source\n"
               "      --delete             restore: remove what the snapshot does not have, but what\n"
               "                           the job excludes or the snapshot skipped\n"
               "      --delete-excluded    restore --delete: remove what the job excludes too\n"
               "      --no-guard           restore: no guard snapshot of what it replaces\n"
               "      --if-changed         snapshot: only if on_change would not skip the job\n"
               "      --full               snapshot: a full one, sharing no file with an older one\n"
               "      --force              offsite: read every file (restic backup --force);\n"
               "                           delete: a pinned snapshot too\n"
               "      --pin                snapshot: pin the one taken\n"
               "      --description=TEXT   snapshot: stored with it, shown by list (one line, 256 bytes)\n"
               "      --for=SPAN           pause: for this long (such as 2h or 3d)\n"
               "      --until=TIME         pause: until \"YYYY-MM-DD HH:MM[:SS]\" (local, Z: UTC) or @SECONDS\n"
               "      --force-every=N      offsite: every Nth run with --force (0: never)\n"
               "      --all                versions: also those that do not differ from the one before\n"
               "  -h, --help               show this help\n"
               "SNAP is a snapshot name or \"latest\".\n"
               "Exit status: 0 done, 1 failed, 2 usage, 3 refsnapd not running,\n"
               "4 no such job or snapshot, 5 permission denied, 6 snapshot made partial,\n"
               "7 snapshot --if-changed: unchanged or paused, none taken.\n");
}

/* Returns 1 to run a verb, else 0 (--help, --version) or -EINVAL (a bad option, said by getopt). */
static int parse_argv(int argc, char *argv[]) {
        enum { ARG_CONF_DIR = 0x100, ARG_JSON, ARG_VERSION, ARG_TO, ARG_DELETE, ARG_DELETE_EXCLUDED, ARG_NO_GUARD,
               ARG_IF_CHANGED, ARG_FULL, ARG_FORCE, ARG_FORCE_EVERY, ARG_PIN, ARG_FOR, ARG_UNTIL, ARG_UTC,
               ARG_NO_LEGEND, ARG_DESCRIPTION, ARG_ALL, ARG_MINE };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "conf-dir", required_argument, NULL, ARG_CONF_DIR },
                { "json", no_argument, NULL, ARG_JSON },
                { "utc", no_argument, NULL, ARG_UTC },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "dry-run", no_argument, NULL, 'n' },
                { "to", required_argument, NULL, ARG_TO },
                { "delete", no_argument, NULL, ARG_DELETE },
                { "no-guard", no_argument, NULL, ARG_NO_GUARD },
                { "delete-excluded", no_argument, NULL, ARG_DELETE_EXCLUDED },
                { "if-changed", no_argument, NULL, ARG_IF_CHANGED },
                { "full", no_argument, NULL, ARG_FULL },
                { "force", no_argument, NULL, ARG_FORCE },
                { "force-every", required_argument, NULL, ARG_FORCE_EVERY },
                { "pin", no_argument, NULL, ARG_PIN },
                { "description", required_argument, NULL, ARG_DESCRIPTION },
                { "for", required_argument, NULL, ARG_FOR },
                { "until", required_argument, NULL, ARG_UNTIL },
                { "all", no_argument, NULL, ARG_ALL },
                { "mine", no_argument, NULL, ARG_MINE },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "c:nh", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        arg_config = optarg;
                        break;
                case ARG_CONF_DIR:
                        arg_dropins = optarg;
                        break;
                case ARG_JSON:
                        arg_json = true;
                        break;
                case ARG_UTC:
                        arg_utc = true;
                        break;
                case ARG_NO_LEGEND:
                        arg_legend = false;
                        break;
                case 'n':
                        arg_dry_run = true;
                        break;
                case ARG_TO:
                        arg_to = optarg;
                        break;
                case ARG_NO_GUARD:
                        arg_no_guard = true;
                        break;
                case ARG_IF_CHANGED:
                        arg_if_changed = true;
                        break;
                case ARG_FULL:
                        arg_full = true;
                        break;
                case ARG_FORCE:
                        arg_force = true;
                        break;
                case ARG_FORCE_EVERY: {
                        char *end;
                        unsigned long v;

                        errno = 0;
                        v = strtoul(optarg, &end, 10);
                        if (errno != 0 || end == optarg || *end || optarg[0] == '-' || v > 1000000) {
                                fprintf(stderr, "refsnapctl: --force-every: '%s' is not a number of runs "
                                        "(0 to 1000000)\n", optarg);
                                return -EINVAL;
                        }
                        arg_force_every = v;
                        break;
                }
                case ARG_DELETE:
                        arg_delete = true;
                        break;
                case ARG_PIN:
                        arg_pin = true;
                        break;
                case ARG_DESCRIPTION:
                        arg_description = optarg;
                        break;
                case ARG_FOR:
                        arg_pause_for = optarg;
                        break;
                case ARG_UNTIL:
                        arg_pause_until = optarg;
                        break;
                case ARG_ALL:
                        arg_all = true;
                        break;
                case ARG_MINE:
                        arg_mine = true;
                        break;
                case ARG_DELETE_EXCLUDED:
                        arg_delete_excluded = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("refsnapctl " PROJECT_VERSION "\n");
                        return 0;
                default:
                        return -EINVAL;
                }
        return 1;
}

/*
 * Where the verb check is, if it is the verb: its -w and -c (critical)
 * are its own, so the options before it are parsed alone.  The first
 * word that is neither an option nor an option's argument is the verb.
 * Returns its index, or 0.
 */
static int find_check_verb(int argc, char *argv[]) {
        static const char *const with_arg[] = { "-c", "--config", "--conf-dir", "--to", "--force-every", "--for",
                                                "--until", "--description" };

        for (int i = 1; i < argc; i++) {
                bool takes = false;

                if (strcmp(argv[i], "--") == 0)
                        return i + 1 < argc && strcmp(argv[i + 1], "check") == 0 ? i + 1 : 0;
                if (argv[i][0] != '-')
                        return strcmp(argv[i], "check") == 0 ? i : 0;
                for (size_t k = 0; k < ELEMENTSOF(with_arg); k++)
                        takes = takes || strcmp(argv[i], with_arg[k]) == 0;
                if (takes)
                        i++;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        int check, r;

        /* Events (a restore, a prune) go to the journal only: the verb's own output says what happened. */
        log_events_set_target(LOG_EVENTS_JOURNAL);
        check = find_check_verb(argc, argv);
        if (check > 0) {
                /* A plugin's bad usage is UNKNOWN (3), as every other failure to judge. */
                r = parse_argv(check, argv);
                if (r <= 0)
                        return r < 0 ? 3 : EXIT_OK;
                return verb_check(argc - check, argv + check);
        }
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_OK;
        if (optind >= argc) {
                help();
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (strcmp(argv[optind], verbs[i].name) == 0)
                        return verbs[i].run(argc - optind, argv + optind);
        fprintf(stderr, "refsnapctl: unknown verb '%s' (see refsnapctl --help)\n", argv[optind]);
        return EXIT_USAGE;
}
