/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bus-names.h"
#include "exit-status.h"
#include "macro.h"
#include "path-util.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "store.h"

int require_root(const char *verb) {
        if (geteuid() == 0)
                return EXIT_OK;
        fprintf(stderr, "refsnapctl: %s: only root may read the snapshots directly (your own files: refsnapctl "
                "versions PATH, refsnapctl restore --mine SNAP PATH)\n", verb);
        return EXIT_DENIED;
}

int load_config(Config **ret) {
        _cleanup_free_ char *errors = NULL;
        int r;

        r = config_load(arg_config, arg_dropins, ret, &errors);
        if (r < 0) {
                fputs(errors ? errors : "", stderr);
                fprintf(stderr, "refsnapctl: %s: the configuration has errors\n", arg_config);
        }
        return r;
}

const Job *find_job(const Config *c, const char *name) {
        const Job *job = config_find_job(c, name);

        if (!job)
                fprintf(stderr, "refsnapctl: no job '%s' in the configuration\n", name);
        return job;
}

int open_snapshot(const Job *job, int store, const char *arg, char name[static SNAPSHOT_NAME_MAX]) {
        int fd, r;

        if (store == -EPERM && geteuid() == 0) {
                fprintf(stderr, "refsnapctl: %s: store %s is not root's, or is reached through a directory "
                        "another user could change: refusing it (refsnapctl check-config says which)\n",
                        job->name, job->store);
                return -ENOTRECOVERABLE;
        }
        if (store < 0) {
                fprintf(stderr, "refsnapctl: %s: store %s: %s\n", job->name, job->store, strerror(-store));
                return store;
        }
        if (strcmp(arg, "latest") == 0) {
                r = store_latest(store, name);
                if (r < 0) {
                        fprintf(stderr, "refsnapctl: %s: no snapshots\n", job->name);
                        return r;
                }
        } else if (!snapshot_name_valid(arg)) {
                fprintf(stderr, "refsnapctl: '%s' is not a snapshot name (YYYY-MM-DDTHH:MM:SSZ or latest)\n", arg);
                return -EINVAL;
        } else
                snprintf(name, SNAPSHOT_NAME_MAX, "%s", arg);
        fd = openat(store, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                r = negative_errno();
                fprintf(stderr, "refsnapctl: %s: snapshot %s: %s\n", job->name, name,
                        r == -ENOENT ? "no such snapshot" : strerror(-r));
                return r;
        }
        return fd;
}

int exit_status_from_snapshot_errno(int r) {
        return r == -ENOENT || r == -EINVAL ? EXIT_NOT_FOUND : exit_status_from_errno(r);
}

int open_job_snapshot(Config **c, const char *job_name, const char *snap, const Job **job, int *store,
                      int *fd, char name[static SNAPSHOT_NAME_MAX]) {
        int r;

        r = load_config(c);
        if (r < 0)
                return exit_status_from_errno(r);
        *job = find_job(*c, job_name);
        if (!*job)
                return EXIT_NOT_FOUND;
        *store = store_open((*job)->store, false);
        *fd = open_snapshot(*job, *store, snap, name);
        return *fd < 0 ? exit_status_from_snapshot_errno(*fd) : EXIT_OK;
}

int job_relative(const Job *job, const char *path, char **ret) {
        int r;

        if (path[0] == '/') {
                const char *rest = path_startswith(path, job->source);

                if (!rest) {
                        fprintf(stderr, "refsnapctl: %s is not under %s, the source of %s\n", path,
                                job->source, job->name);
                        return -EINVAL;
                }
                path = rest;
        }
        r = path_normalize_relative(path, ret);
        if (r < 0)
                fprintf(stderr, "refsnapctl: %s: \"..\" is not allowed in a path\n", path);
        return r;
}

/*
 * On a terminal, polkit may ask who is there (a password, through the
 * user's polkit agent) before it lets a call through; without one it only
 * says yes or no.
 */
void bus_allow_interactive(sd_bus *bus) {
        (void) sd_bus_set_allow_interactive_authorization(bus, isatty(STDIN_FILENO) > 0);
}

int bus_open(sd_bus **ret) {
        int r;

        r = sd_bus_open_system(ret);
        if (r < 0) {
                fprintf(stderr, "refsnapctl: cannot reach the system bus (%s): refsnapd is not running\n",
                        strerror(-r));
                return EXIT_NOT_RUNNING;
        }
        bus_allow_interactive(*ret);
        return EXIT_OK;
}

bool bus_error_not_running(const sd_bus_error *e, int r) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
               r == -ENOENT || r == -ECONNREFUSED;
}

int bus_exit(const sd_bus_error *e, int r) {
        if (bus_error_not_running(e, r)) {
                fprintf(stderr, "refsnapctl: refsnapd is not running\n");
                return EXIT_NOT_RUNNING;
        }
        /* Refused by refsnapd (polkit, or root only) or by the bus's policy. */
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED)) {
                fprintf(stderr, "refsnapctl: permission denied: authentication is required (%s): run it as "
                        "root, or on a terminal with a polkit agent\n", e->message ? e->message : e->name);
                return EXIT_DENIED;
        }
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED) || r == -EACCES || r == -EPERM) {
                fprintf(stderr, "refsnapctl: permission denied: %s\n",
                        e && e->message ? e->message : "refsnapd refused the call");
                return EXIT_DENIED;
        }
        if (e && e->name)
                fprintf(stderr, "refsnapctl: %s (%s)\n", e->message ? e->message : strerror(-r), e->name);
        else
                fprintf(stderr, "refsnapctl: %s\n", strerror(-r));
        if (sd_bus_error_has_names(e, BUS_ERROR_NO_SUCH_JOB, BUS_ERROR_NO_SUCH_SNAPSHOT, BUS_ERROR_NO_SUCH_PATH))
                return EXIT_NOT_FOUND;
        return EXIT_FAILED;
}
