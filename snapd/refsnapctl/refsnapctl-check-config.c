/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl check-config [FILE]: every error of the configuration, or OK;
 * then, for each job whose source cannot be restored in place, why (a
 * note, not an error: its snapshots are taken all the same).  With
 * --json, one object (refsnapctl(8)).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "chase.h"
#include "config.h"
#include "escape.h"
#include "fd-util.h"
#include "json-util.h"
#include "macro.h"
#include "refsnapctl.h"
#include "mountpoint-util.h"
#include "restore.h"
#include "store.h"

/* Each job's note, "JOB: note: restore into SOURCE: WHY" as text, or as {"job","source","note"} with --json. */
static void restore_notes(const char *file) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_free_ char *errors = NULL;
        bool first = true;

        if (config_load(file, arg_dropins, &c, &errors) < 0)
                return;
        for (size_t i = 0; i < c->n_jobs; i++) {
                const Job *j = c->jobs[i];
                _cleanup_close_ int store = store_open(j->store, false);
                _cleanup_close_ int src = -EBADF;
                const char *why;

                /* Covered by a FUSE mount: said above, and never asked anything. */
                if (store < 0 || path_under_fuse(NULL, j->source, NULL, NULL) != 0)
                        continue;
                src = chase_dir(AT_FDCWD, j->source, &(Chase) { .flags = CHASE_NO_FUSE });
                if (src < 0)
                        continue;
                why = restore_stage_refusal(store, src);
                if (!why)
                        continue;
                if (!arg_json) {
                        /* The source as a terminal may show it: a configuration's value may hold any byte. */
                        printf("%s: note: restore into ", j->name);
                        fputs_cescaped(j->source, stdout);
                        printf(": %s\n", why);
                        continue;
                }
                printf("%s{\"job\":", first ? "" : ",");
                json_string(stdout, j->name);
                printf(",\"source\":");
                json_string(stdout, j->source);
                printf(",\"note\":");
                json_string(stdout, why);
                putchar('}');
                first = false;
        }
}

/*
 * The lines of text as {"file","line","message"} ("FILE:LINE: MESSAGE",
 * after a "warning: " prefix), or {"file":null,"line":null,"message"}
 * for a line of no file.
 */
static void json_lines(const char *text) {
        bool first = true;

        putchar('[');
        for (const char *p = text ? text : ""; *p;) {
                size_t len = strcspn(p, "\n");
                _cleanup_free_ char *line = strndup(p, len);
                const char *l = line, *colon = NULL;

                p += len + (p[len] == '\n');
                if (!line || len == 0)
                        continue;
                if (strncmp(l, "warning: ", 9) == 0)
                        l += 9;
                /* The file is what comes before the first ":DIGITS: ". */
                for (const char *q = strchr(l, ':'); q && !colon; q = strchr(q + 1, ':')) {
                        const char *d = q + 1;

                        while (isdigit((unsigned char) *d))
                                d++;
                        if (d > q + 1 && d[0] == ':' && d[1] == ' ')
                                colon = q;
                }
                printf("%s{\"file\":", first ? "" : ",");
                first = false;
                if (colon) {
                        _cleanup_free_ char *f = strndup(l, colon - l);
                        char *end;
                        unsigned long n = strtoul(colon + 1, &end, 10);

                        json_string(stdout, f ? f : "");
                        printf(",\"line\":%lu,\"message\":", n);
                        json_string(stdout, end + 2);
                } else {
                        printf("null,\"line\":null,\"message\":");
                        json_string(stdout, line);
                }
                putchar('}');
        }
        putchar(']');
}

/*
 * --json: {"config", "ok", "jobs" (how many), "reflink_path", "errors",
 * "warnings" (each [{"file","line","message"}]), "notes"
 * ([{"job","source","note"}])}; the exit status as without.
 */
static int check_config_json(const char *file) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_free_ char *errors = NULL, *warnings = NULL;
        int r;

        r = config_check(file, arg_dropins, &c, &errors, &warnings);
        if (r == -ENOMEM) {
                fprintf(stderr, "refsnapctl: out of memory\n");
                return 1;
        }
        printf("{\"config\":");
        json_string(stdout, file);
        printf(",\"ok\":%s,\"jobs\":", r >= 0 ? "true" : "false");
        if (r >= 0)
                printf("%zu", c->n_jobs);
        else
                printf("null");
        printf(",\"reflink_path\":");
        json_string(stdout, config_reflink_path_text());
        printf(",\"errors\":");
        json_lines(errors);
        printf(",\"warnings\":");
        json_lines(warnings);
        printf(",\"notes\":[");
        if (r >= 0)
                restore_notes(file);
        printf("]}\n");
        return r >= 0 ? 0 : 1;
}

int verb_check_config(int argc, char *argv[]) {
        const char *file = argc > 1 ? argv[1] : arg_config;
        int r;

        if (arg_json)
                return check_config_json(file);
        r = config_check_command("refsnapctl", file, arg_dropins);
        if (r == 0)
                restore_notes(file);
        return r;
}
