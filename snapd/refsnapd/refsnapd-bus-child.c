/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "fd-util.h"
#include "log.h"
#include "macro.h"
#include "refsnapd-bus-child.h"

/* More than this in a report is not read: the child is taken as failed (a child that is a user's may write it). */
#define REPORT_MAX (16 * 1024 * 1024)

struct BusChild {
        Manager *manager;
        sd_bus_message *call;
        char *name;
        int memfd;
        pid_t pid;
        bool tracked;           /* counted by manager_track_child() */
        sd_event_source *exit_source, *timer;
        sd_bus_track *track;    /* the caller's connection, with kill_on_disconnect */
        bus_child_done_t done;
        void (*free_userdata)(void *userdata);
        bool (*may_log)(void *userdata);
        void *userdata;
};

static bool may_log(BusChild *c) {
        return !c->may_log || c->may_log(c->userdata);
}

static BusChild *bus_child_free(BusChild *c) {
        if (!c)
                return NULL;
        if (c->tracked)
                manager_child_gone(c->manager, c->pid);
        sd_bus_message_unref(c->call);
        free(c->name);
        safe_close(c->memfd);
        sd_event_source_disable_unref(c->exit_source);
        sd_event_source_disable_unref(c->timer);
        sd_bus_track_unref(c->track);
        if (c->free_userdata)
                c->free_userdata(c->userdata);
        free(c);
        return NULL;
}

static int on_exit_(sd_event_source *s, const siginfo_t *si, void *userdata) {
        BusChild *c = userdata;
        _cleanup_free_ char *report = NULL;
        off_t size = lseek(c->memfd, 0, SEEK_END);
        int code = si->si_code == CLD_EXITED ? si->si_status : -1;
        ssize_t n = 0;

        if (size > REPORT_MAX) {
                if (may_log(c))
                        log_error("%s: pid %d wrote a report of %lld bytes, more than %d: taken as failed", c->name,
                                  (int) c->pid, (long long) size, REPORT_MAX);
                size = 0;
                code = -1;
        }
        report = calloc(1, size > 0 ? size + 1 : 1);
        if (report && size > 0) {
                n = pread(c->memfd, report, size, 0);
                if (n < 0)
                        n = 0;
                report[n] = '\0';
        }
        c->done(c->call, code, report ? report : "", (size_t) n, c->userdata);
        bus_child_free(c);
        return 0;
}

/*
 * SIGKILL, and said when it cannot be sent: a child that has become
 * another user (a self-service worker) is the daemon's to signal only
 * with CAP_KILL (refsnapd.service's bounding set has it).
 */
static int kill_child(BusChild *c) {
        if (kill(c->pid, SIGKILL) == 0)
                return 0;
        if (may_log(c))
                log_error("%s: pid %d cannot be killed: %m", c->name, (int) c->pid);
        return -errno;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        BusChild *c = userdata;

        if (kill_child(c) == 0 && may_log(c))
                log_notice("%s: pid %d ran out of its time, killed", c->name, (int) c->pid);
        return 0;
}

/*
 * The caller's connection left the bus: nobody waits for the answer any
 * more.  Once: the track is dropped here (sd-bus keeps it while this
 * runs), or sd-bus would call this again at each turn of the loop until
 * the child has exited and been reaped.
 */
static int on_caller_gone(sd_bus_track *t, void *userdata) {
        BusChild *c = userdata;

        c->track = sd_bus_track_unref(c->track);
        if (kill_child(c) == 0 && may_log(c))
                log_info("%s: the caller went away, pid %d killed", c->name, (int) c->pid);
        return 0;
}

int bus_child_spawn(Manager *m, sd_bus_message *call, const char *name, const BusChildOptions *options,
                    bus_child_work_t work, bus_child_done_t done, void *userdata) {
        static const BusChildOptions none = {};
        BusChild *c;
        pid_t pid;
        int r;

        if (!options)
                options = &none;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->manager = m;
        c->done = done;
        c->name = strdup(name);
        c->memfd = memfd_create(name, MFD_CLOEXEC);
        if (!c->name || c->memfd < 0) {
                r = c->name ? -errno : -ENOMEM;
                bus_child_free(c);
                return r;
        }
        pid = fork();
        if (pid < 0) {
                r = -errno;
                bus_child_free(c);
                return r;
        }
        if (pid == 0) {
                sigset_t all;
                FILE *f;

                /*
                 * SIGTERM (the daemon stopping) ends it at once; the
                 * daemon's blocked signals are the child's no more.
                 */
                sigemptyset(&all);
                signal(SIGTERM, SIG_DFL);
                signal(SIGINT, SIG_DFL);
                sigprocmask(SIG_SETMASK, &all, NULL);
                f = fdopen(c->memfd, "w");
                r = f ? work(f, userdata) : 255;
                if (f && fclose(f) != 0)
                        r = 255;
                _exit(r < 0 || r > 255 ? 255 : r);
        }
        c->pid = pid;
        r = sd_event_add_child(m->event, &c->exit_source, pid, WEXITED, on_exit_, c);
        if (r >= 0) {
                r = manager_track_child(m, pid);
                c->tracked = r >= 0;
        }
        if (r >= 0 && options->timeout_usec > 0)
                r = sd_event_add_time_relative(m->event, &c->timer, CLOCK_MONOTONIC, options->timeout_usec, 0,
                                               on_timeout, c);
        if (r >= 0 && options->kill_on_disconnect) {
                r = sd_bus_track_new(sd_bus_message_get_bus(call), &c->track, on_caller_gone, c);
                if (r >= 0)
                        r = sd_bus_track_add_sender(c->track, call);
        }
        if (r < 0) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                bus_child_free(c);      /* and manager_child_gone() when it was counted */
                return r;
        }
        c->call = sd_bus_message_ref(call);
        c->userdata = userdata;
        c->free_userdata = options->free_userdata;
        c->may_log = options->may_log;
        return 0;
}
