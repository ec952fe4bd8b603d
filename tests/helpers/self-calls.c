/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * self-calls: many self-service calls at once, for the VM tests (run as
 * the unprivileged user whose calls they are).
 *
 *   self-calls kill N WAVE CALL...
 *       N clients, WAVE of them at a time, each its own process and
 *       connection to the system bus (with a restore CALL, the even
 *       ones ask Versions() of the same PATH): it sends its call, flushes it to
 *       the bus, and is SIGKILLed, at once (client i / 2 % 4 == 0) or
 *       50, 100 or 150 ms later (so that the kills fall at each stage of
 *       a call: the bus driver, polkit, the worker).  Prints "killed K of
 *       N"; exits 1 unless every client was killed by SIGKILL after
 *       sending.
 *   self-calls storm N STOP STATUS CALL...
 *       N connections, each with one call in flight: a call answered
 *       org.refsnap1.Busy is sent again at once, until the file STOP
 *       exists; any other answer ends that connection's calls.  STATUS
 *       (rewritten whole, by rename, at each answer) says
 *       "busy_waiting B1", "busy_running B2" (the bound on calls waiting
 *       or running, and on workers), "ok K", "other E", "in_flight F";
 *       each other answer is printed (error name and message).  Exits
 *       once nothing is in flight.
 *
 * CALL is "versions PATH" or "restore PATH SNAPSHOT DIR" (DIR opened here
 * O_PATH and passed as the descriptor, as refsnapctl does); each "%d" in
 * PATH becomes the client's number, 0 to N-1.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define CALL_TIMEOUT_USEC (600ULL * 1000000ULL)

static const char *method, *path_fmt, *snapshot;
static int dir = -1;

/* PATH with each "%d" replaced by i. */
static char *path_of(unsigned i) {
        size_t size = strlen(path_fmt) + 64;
        char *p = malloc(size), *o = p;

        if (!p)
                return NULL;
        for (const char *s = path_fmt; *s; s++)
                if (s[0] == '%' && s[1] == 'd') {
                        o += snprintf(o, size - (o - p), "%u", i);
                        s++;
                } else
                        *o++ = *s;
        *o = '\0';
        return p;
}

static int new_call(sd_bus *bus, unsigned i, sd_bus_message **ret) {
        sd_bus_message *m = NULL;
        char *p = path_of(i);
        int r;

        if (!p)
                return -ENOMEM;
        r = sd_bus_message_new_method_call(bus, &m, "org.refsnap1", "/org/refsnap1", "org.refsnap1.Manager",
                                           method);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', p, strlen(p));
        if (r >= 0 && dir >= 0)
                r = sd_bus_message_append(m, "sh", snapshot, dir);
        if (r >= 0)
                r = sd_bus_message_append(m, "a{sv}", 0);
        free(p);
        if (r < 0) {
                sd_bus_message_unref(m);
                return r;
        }
        *ret = m;
        return 0;
}

static int kill_mode(unsigned n, unsigned wave) {
        unsigned killed = 0;

        for (unsigned base = 0; base < n; base += wave) {
                unsigned k = n - base < wave ? n - base : wave;

                for (unsigned j = 0; j < k; j++) {
                        unsigned i = base + j;
                        pid_t pid = fork();

                        if (pid < 0) {
                                perror("self-calls: fork");
                                return 1;
                        }
                        if (pid == 0) {
                                sd_bus *bus = NULL;
                                sd_bus_message *m = NULL;

                                /* The even clients ask Versions() of the same path. */
                                if (dir >= 0 && i % 2 == 0) {
                                        method = "Versions";
                                        dir = -1;
                                }
                                if (sd_bus_open_system(&bus) < 0 || new_call(bus, i, &m) < 0 ||
                                    sd_bus_send(bus, m, NULL) < 0 || sd_bus_flush(bus) < 0)
                                        _exit(1);
                                if ((i / 2) % 4)
                                        usleep((i / 2) % 4 * 50000);
                                raise(SIGKILL);
                                _exit(1);
                        }
                }
                for (unsigned j = 0; j < k; j++) {
                        int status;

                        if (wait(&status) < 0) {
                                perror("self-calls: wait");
                                return 1;
                        }
                        killed += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
                }
        }
        printf("killed %u of %u\n", killed, n);
        return killed == n ? 0 : 1;
}

typedef struct Conn {
        sd_bus *bus;
        unsigned i;
} Conn;

static unsigned busy_waiting, busy_running, ok, other, in_flight;
static const char *stop_file, *status_file;

static void write_status(void) {
        char tmp[4096];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", status_file);
        f = fopen(tmp, "we");
        if (!f)
                return;
        fprintf(f, "busy_waiting %u\nbusy_running %u\nok %u\nother %u\nin_flight %u\n", busy_waiting, busy_running,
                ok, other, in_flight);
        if (fclose(f) == 0)
                (void) rename(tmp, status_file);
}

static int send_one(Conn *c);

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Conn *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        in_flight--;
        if (!e)
                ok++;
        else if (sd_bus_error_has_name(e, "org.refsnap1.Busy")) {
                if (e->message && strstr(e->message, "waiting or running"))
                        busy_waiting++;
                else
                        busy_running++;
                if (access(stop_file, F_OK) < 0)
                        (void) send_one(c);
        } else {
                other++;
                printf("client %u: %s: %s\n", c->i, e->name, e->message ? e->message : "");
                fflush(stdout);
        }
        write_status();
        if (in_flight == 0)
                sd_event_exit(sd_bus_get_event(c->bus), 0);
        return 0;
}

static int send_one(Conn *c) {
        sd_bus_message *m = NULL;
        int r;

        r = new_call(c->bus, c->i, &m);
        if (r >= 0)
                r = sd_bus_call_async(c->bus, NULL, m, on_reply, c, CALL_TIMEOUT_USEC);
        sd_bus_message_unref(m);
        if (r < 0) {
                fprintf(stderr, "self-calls: client %u: cannot send: %s\n", c->i, strerror(-r));
                return r;
        }
        in_flight++;
        return 0;
}

static int storm_mode(unsigned n) {
        sd_event *e = NULL;
        Conn *c = calloc(n, sizeof(*c));
        int r;

        if (!c || sd_event_default(&e) < 0)
                return 1;
        for (unsigned i = 0; i < n; i++) {
                c[i].i = i;
                r = sd_bus_open_system(&c[i].bus);
                if (r >= 0)
                        r = sd_bus_attach_event(c[i].bus, e, 0);
                if (r < 0) {
                        fprintf(stderr, "self-calls: client %u: cannot connect: %s\n", i, strerror(-r));
                        return 1;
                }
        }
        for (unsigned i = 0; i < n; i++)
                if (send_one(&c[i]) < 0)
                        return 1;
        write_status();
        r = sd_event_loop(e);
        printf("busy_waiting %u busy_running %u ok %u other %u\n", busy_waiting, busy_running, ok, other);
        return r < 0;
}

int main(int argc, char **argv) {
        const char **call;
        unsigned n;
        int ncall;

        if (argc >= 5 && strcmp(argv[1], "kill") == 0)
                call = (const char **) argv + 4;
        else if (argc >= 6 && strcmp(argv[1], "storm") == 0)
                call = (const char **) argv + 5;
        else
                goto usage;
        ncall = argc - (int) (call - (const char **) argv);
        if (ncall == 2 && strcmp(call[0], "versions") == 0)
                method = "Versions";
        else if (ncall == 4 && strcmp(call[0], "restore") == 0) {
                method = "RestoreMine";
                snapshot = call[2];
                dir = open(call[3], O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dir < 0) {
                        fprintf(stderr, "self-calls: %s: %s\n", call[3], strerror(errno));
                        return 1;
                }
        } else
                goto usage;
        path_fmt = call[1];
        n = strtoul(argv[2], NULL, 10);
        if (n == 0)
                goto usage;
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argv[1][0] == 'k') {
                unsigned wave = strtoul(argv[3], NULL, 10);

                return kill_mode(n, wave ? wave : 1);
        }
        stop_file = argv[3];
        status_file = argv[4];
        return storm_mode(n);
usage:
        fprintf(stderr, "usage: self-calls kill N WAVE CALL... | storm N STOP STATUS CALL...\n"
                "  CALL: versions PATH | restore PATH SNAPSHOT DIR\n");
        return 2;
}
