/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Self-service, for any user: refsnapctl versions and refsnapctl restore
 * --mine, each one call to refsnapd, which acts as the caller.
 *
 * refsnapctl versions PATH [--all] [--json]: the snapshots
 * that hold PATH and that she may read, newest first, from refsnapd's
 * Versions(), which looks them up as her.  PATH is made canonical here,
 * as she sees it (the daemon never resolves it as root): realpath(3) of
 * it, or, for a path that is gone, of its nearest ancestor that is there,
 * with the rest as given.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus-names.h"
#include "escape.h"
#include "exit-status.h"
#include "format-util.h"
#include "json-util.h"
#include "macro.h"
#include "path-util.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "time-util.h"

/* A lookup as the caller may read many snapshots. */
#define VERSIONS_TIMEOUT_USEC (120 * USEC_PER_SEC)

/* arg, absolute and canonical as this process sees it, into *ret.  Returns 0 or -errno. */
static int canonical_path(const char *arg, char **ret) {
        _cleanup_free_ char *abs = NULL, *rest = NULL, *norm = NULL;
        char cwd[PATH_MAX], *real;
        size_t cut;

        if (!*arg)
                return -EINVAL;
        if (arg[0] == '/')
                abs = strdup(arg);
        else if (getcwd(cwd, sizeof(cwd)))
                abs = path_join(cwd, arg);
        else
                return -errno;
        if (!abs)
                return -ENOMEM;
        real = realpath(abs, NULL);
        if (real) {
                *ret = real;
                return 0;
        }
        if (errno != ENOENT && errno != ENOTDIR && errno != EACCES)
                return -errno;
        /*
         * Gone, or beneath a directory she cannot search (the daemon
         * answers both as it answers a missing one): the nearest ancestor
         * she can resolve, and the rest as given ("..": refused, it
         * cannot be told).
         */
        cut = strlen(abs);
        for (;;) {
                while (cut > 0 && abs[cut - 1] != '/')
                        cut--;
                if (cut <= 1) {
                        cut = 1;
                        break;
                }
                abs[cut - 1] = '\0';
                real = realpath(abs, NULL);
                abs[cut - 1] = '/';
                if (real)
                        break;
                if (errno != ENOENT && errno != ENOTDIR && errno != EACCES)
                        return -errno;
                cut--;
        }
        if (path_normalize_relative(abs + cut, &norm) < 0)
                return -EINVAL;
        if (cut <= 1) {
                real = NULL;
                *ret = path_join("/", norm);
        } else {
                *ret = *norm ? path_join(real, norm) : strdup(real);
                free(real);
        }
        return *ret ? 0 : -ENOMEM;
}

static const char *type_of(uint32_t mode) {
        return S_ISREG(mode) ? "file" : S_ISDIR(mode) ? "directory" : S_ISLNK(mode) ? "symlink" :
               S_ISFIFO(mode) ? "fifo" : S_ISSOCK(mode) ? "socket" : S_ISCHR(mode) ? "char-device" :
               S_ISBLK(mode) ? "block-device" : "other";
}

int verb_versions(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL;
        const char *job;
        bool first = true;
        int r;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: versions PATH [--all] [--json]\n");
                return EXIT_USAGE;
        }
        r = canonical_path(argv[1], &path);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: cannot tell where ");
                fputs_cescaped(argv[1], stderr);
                fprintf(stderr, " is: %s\n", strerror(-r));
                return EXIT_USAGE;
        }
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, BUS_PATH, BUS_INTERFACE, "Versions");
        if (r >= 0)
                r = sd_bus_message_append_array(call, 'y', path, strlen(path));
        if (r >= 0)
                r = sd_bus_message_append(call, "a{sv}", 0);
        if (r < 0)
                return bus_exit(NULL, r);
        r = sd_bus_call(bus, call, VERSIONS_TIMEOUT_USEC, &e, &reply);
        if (r < 0 && sd_bus_error_has_name(&e, BUS_ERROR_NO_SUCH_VERSION)) {
                /* Missing and forbidden alike: nothing in this line depends on which. */
                fprintf(stderr, "refsnapctl: no version of ");
                fputs_cescaped(argv[1], stderr);
                fprintf(stderr, " that you may read\n");
                return EXIT_NOT_FOUND;
        }
        if (r < 0)
                return bus_exit(&e, r);
        r = sd_bus_message_read(reply, "s", &job);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(stttub)");
        if (r < 0)
                return bus_exit(NULL, r);
        if (arg_json) {
                printf("{\"job\":");
                json_string(stdout, job);
                printf(",\"path\":");
                json_string(stdout, path);
                printf(",\"versions\":[");
        } else if (arg_legend)
                printf("%-24s %-23s %10s  %s\n", "SNAPSHOT", "MODIFIED", "SIZE", "TYPE");
        for (;;) {
                const char *snap;
                uint64_t when, size, mtime;
                uint32_t mode;
                int differs;
                char t[TIMESTAMP_MAX], s[16];

                r = sd_bus_message_read(reply, "(stttub)", &snap, &when, &size, &mtime, &mode, &differs);
                if (r < 0)
                        return bus_exit(NULL, r);
                if (r == 0)
                        break;
                if (!differs && !arg_all)
                        continue;
                if (arg_json) {
                        printf("%s{\"snapshot\":", first ? "" : ",");
                        json_string(stdout, snap);
                        printf(",\"time\":%llu,\"size\":%llu,\"mtime\":%llu,\"mode\":%u,\"type\":\"%s\","
                               "\"differs\":%s}",
                               (unsigned long long) when, (unsigned long long) size, (unsigned long long) mtime,
                               (unsigned) (mode & 07777), type_of(mode), differs ? "true" : "false");
                } else
                        /* The file's time for a person, as status and list say theirs (--utc: in UTC). */
                        printf("%-24s %-23s %10s  %s%s\n", snap,
                               format_usec_human(mtime, arg_utc, "-", t, sizeof(t)),
                               format_bytes(size, s, sizeof(s)), type_of(mode), differs ? "" : "  (unchanged)");
                first = false;
        }
        if (arg_json)
                printf("]}\n");
        return EXIT_OK;
}

/*
 * refsnapctl restore --mine SNAP PATH [--to DIR] [--delete] [--dry-run
 * [--json]]: PATH (as versions makes it canonical) of snapshot SNAP
 * brought back by refsnapd as the caller, into the directory that holds
 * PATH, or DIR: a directory this process opens itself and passes as a
 * descriptor, so that it is the one she sees (her mount namespace), and
 * the kernel checks her right to write there.  Its path goes along too
 * (option "to"), only for the daemon to tell which job's guard snapshot
 * would keep what is replaced there (it checks that it is that very
 * directory).
 */
static const char *change_name(char mark) {
        return mark == '+' ? "added" : mark == '~' ? "changed" : mark == '-' ? "removed" : mark == '=' ? "kept" :
               "refused";
}

int restore_mine(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL, *parent = NULL, *to = NULL;
        _cleanup_close_ int dir = -EBADF;
        const char *job, *snap, *where, *guard = "", *guard_job = "", *kept_in = "";
        uint64_t counts[4] = {}, refused = 0;
        bool first = true;
        int would_guard = false, r;

        if (argc != 3 || arg_delete_excluded || arg_no_guard) {
                fprintf(stderr, "refsnapctl: usage: restore --mine SNAP PATH [--to DIR] [--delete] "
                        "[--dry-run [--json]]%s\n",
                        argc == 3 ? " (--delete-excluded and --no-guard are not for --mine)" : "");
                return EXIT_USAGE;
        }
        if (arg_json && !arg_dry_run) {
                fprintf(stderr, "refsnapctl: restore: --json goes with --dry-run\n");
                return EXIT_USAGE;
        }
        r = canonical_path(argv[2], &path);
        if (r < 0 || strcmp(path, "/") == 0) {
                fprintf(stderr, "refsnapctl: cannot tell where ");
                fputs_cescaped(argv[2], stderr);
                fprintf(stderr, " is: %s\n", strerror(r < 0 ? -r : EINVAL));
                return EXIT_USAGE;
        }
        parent = strdup(path);
        if (!parent)
                return EXIT_FAILED;
        where = arg_to ? arg_to : dirname(parent);
        dir = open(where, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) {
                fprintf(stderr, "refsnapctl: cannot open the directory ");
                fputs_cescaped(where, stderr);
                fprintf(stderr, ": %m%s\n", arg_to ? "" : " (restore it first, or give --to DIR)");
                return exit_status_from_errno(-errno);
        }
        /* Where --to is as she sees it, for the guard (a path that cannot be told: no guard, nothing replaced). */
        if (arg_to && canonical_path(arg_to, &to) < 0)
                to = NULL;
        r = bus_open(&bus);
        if (r != EXIT_OK)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, BUS_PATH, BUS_INTERFACE, "RestoreMine");
        if (r >= 0)
                r = sd_bus_message_append_array(call, 'y', path, strlen(path));
        if (r >= 0)
                r = sd_bus_message_append(call, "sh", argv[1], dir);
        if (r >= 0)
                r = sd_bus_message_open_container(call, 'a', "{sv}");
        if (r >= 0 && arg_dry_run)
                r = sd_bus_message_append(call, "{sv}", "dry_run", "b", 1);
        if (r >= 0 && arg_delete)
                r = sd_bus_message_append(call, "{sv}", "delete", "b", 1);
        if (r >= 0 && to) {
                r = sd_bus_message_open_container(call, 'e', "sv");
                if (r >= 0)
                        r = sd_bus_message_append(call, "s", "to");
                if (r >= 0)
                        r = sd_bus_message_open_container(call, 'v', "ay");
                if (r >= 0)
                        r = sd_bus_message_append_array(call, 'y', to, strlen(to));
                if (r >= 0)
                        r = sd_bus_message_close_container(call);
                if (r >= 0)
                        r = sd_bus_message_close_container(call);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(call);
        if (r < 0)
                return bus_exit(NULL, r);
        r = sd_bus_call(bus, call, VERSIONS_TIMEOUT_USEC, &e, &reply);
        if (r < 0 && sd_bus_error_has_name(&e, BUS_ERROR_NO_SUCH_VERSION)) {
                /* Missing and forbidden alike, as versions says it. */
                fprintf(stderr, "refsnapctl: no version of ");
                fputs_cescaped(argv[2], stderr);
                fprintf(stderr, " that you may read\n");
                return EXIT_NOT_FOUND;
        }
        if (r < 0)
                return bus_exit(&e, r);
        r = sd_bus_message_read(reply, "ss", &job, &snap);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(yays)");
        if (r < 0)
                return bus_exit(NULL, r);
        if (arg_json) {
                printf("{\"job\":");
                json_string(stdout, job);
                printf(",\"snapshot\":");
                json_string(stdout, snap);
                printf(",\"path\":");
                json_string(stdout, path);
                printf(",\"delete\":%s,\"entries\":[", arg_delete ? "true" : "false");
        }
        for (;;) {
                _cleanup_free_ char *p = NULL;
                const void *bytes;
                const char *why;
                size_t size;
                uint8_t mark;
                bool isdir;

                r = sd_bus_message_enter_container(reply, 'r', "yays");
                if (r < 0)
                        return bus_exit(NULL, r);
                if (r == 0)
                        break;
                r = sd_bus_message_read(reply, "y", &mark);
                if (r >= 0)
                        r = sd_bus_message_read_array(reply, 'y', &bytes, &size);
                if (r >= 0)
                        r = sd_bus_message_read(reply, "s", &why);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return bus_exit(NULL, r);
                p = strndup(bytes, size);
                if (!p)
                        return EXIT_FAILED;
                isdir = size > 0 && p[size - 1] == '/';
                if (mark == '+' || mark == '~' || mark == '-' || mark == '=')
                        counts[mark == '+' ? 0 : mark == '~' ? 1 : mark == '-' ? 2 : 3]++;
                else
                        refused++;
                if (arg_json) {
                        if (isdir)
                                p[size - 1] = '\0';
                        printf("%s{\"change\":\"%s\",\"path\":", first ? "" : ",", change_name(mark));
                        json_string(stdout, p);
                        printf(",\"dir\":%s,\"why\":", isdir ? "true" : "false");
                        if (*why)
                                json_string(stdout, why);
                        else
                                printf("null");
                        putchar('}');
                } else {
                        printf("%c ", mark);
                        fputs_cescaped(p, stdout);
                        if (*why) {
                                printf(": ");
                                fputs_cescaped(why, stdout);
                        }
                        putchar('\n');
                }
                first = false;
        }
        r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r > 0) {
                const char *key;

                r = sd_bus_message_enter_container(reply, 'e', "sv");
                if (r <= 0)
                        break;
                r = sd_bus_message_read(reply, "s", &key);
                if (r >= 0 && strcmp(key, "guard") == 0)
                        r = sd_bus_message_read(reply, "v", "s", &guard);
                else if (r >= 0 && strcmp(key, "guard_job") == 0)
                        r = sd_bus_message_read(reply, "v", "s", &guard_job);
                else if (r >= 0 && strcmp(key, "kept_in") == 0)
                        r = sd_bus_message_read(reply, "v", "s", &kept_in);
                else if (r >= 0 && strcmp(key, "would_guard") == 0)
                        r = sd_bus_message_read(reply, "v", "b", &would_guard);
                else if (r >= 0)
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = 1;
        }
        if (r < 0)
                return bus_exit(NULL, r);
        if (arg_json) {
                printf("],\"guard\":%s,\"guard_job\":", would_guard ? "true" : "false");
                json_string(stdout, guard_job);
                printf(",\"restore\":%llu,\"remove\":%llu,\"kept\":%llu,\"refused\":%llu}\n",
                       (unsigned long long) (counts[0] + counts[1]), (unsigned long long) counts[2],
                       (unsigned long long) counts[3], (unsigned long long) refused);
                return EXIT_OK;
        }
        if (arg_dry_run && would_guard)
                printf("a guard snapshot of what it replaces would be taken first (of job %s)\n", guard_job);
        if (*guard)
                printf("guard snapshot %s of %s taken first: \"refsnapctl restore --mine %s PATH\" brings back "
                       "what was replaced\n", guard, guard_job, guard);
        else if (*kept_in && counts[1] + counts[2] > 0)
                printf("no guard snapshot: what it replaces is in snapshot %s as it is\n", kept_in);
        printf("%s ", arg_dry_run ? "would restore" : "restored");
        fputs_cescaped(argv[2], stdout);
        printf(" from %s of %s", snap, job);
        if (arg_to) {
                printf(" into ");
                fputs_cescaped(arg_to, stdout);
        }
        putchar('\n');
        if (refused > 0 && !arg_dry_run) {
                fprintf(stderr, "refsnapctl: %llu entr%s not restored (said above)\n", (unsigned long long) refused,
                        refused == 1 ? "y" : "ies");
                return EXIT_FAILED;
        }
        return EXIT_OK;
}
