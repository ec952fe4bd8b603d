/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>

/*
 * refsnapctl's options (set in refsnapctl.c, read by the verbs) and its
 * verbs, one refsnapctl-VERB.c each.  A verb gets argv from its own name
 * on and returns the exit status (exit-status.h), after saying why when it
 * is not EXIT_OK.
 */

extern const char *arg_config;  /* -c, --config */
extern const char *arg_dropins; /* --conf-dir */
extern bool arg_json;           /* --json: status, list, diff, prune, restore --dry-run, check-config, purge */
extern bool arg_utc;            /* --utc: times shown in UTC, not the local zone */
extern bool arg_legend;         /* false with --no-legend: no column headers, no summary lines */
extern bool arg_dry_run;        /* -n, --dry-run: prune, restore, purge */
extern bool arg_delete;         /* --delete: restore */
extern bool arg_delete_excluded;        /* --delete-excluded: restore --delete */
extern bool arg_no_guard;       /* --no-guard: restore */
extern bool arg_if_changed;     /* --if-changed: snapshot */
extern bool arg_full;           /* --full: snapshot */
extern bool arg_force;          /* --force: offsite, a full read */
extern unsigned arg_force_every; /* --force-every=N: offsite, every Nth run a full read; 0 never */
extern const char *arg_to;      /* --to: restore; NULL: into the job's source */
extern bool arg_pin;            /* --pin: snapshot */
extern const char *arg_description;     /* --description: snapshot */
extern const char *arg_pause_for;       /* --for: pause */
extern const char *arg_pause_until;     /* --until: pause */
extern bool arg_all;            /* --all: versions */
extern bool arg_mine;           /* --mine: restore, any user's, through refsnapd */

int verb_status(int argc, char *argv[]);
int verb_snapshot(int argc, char *argv[]);
int verb_list(int argc, char *argv[]);
int verb_prune(int argc, char *argv[]);
int verb_diff(int argc, char *argv[]);
int verb_restore(int argc, char *argv[]);
int verb_check_config(int argc, char *argv[]);
/* pin and unpin (argv[0] says which), delete, pause, resume, cancel: refsnapctl-manage.c. */
int verb_pin(int argc, char *argv[]);
int verb_delete(int argc, char *argv[]);
int verb_purge(int argc, char *argv[]);
int verb_pause(int argc, char *argv[]);
int verb_resume(int argc, char *argv[]);
int verb_cancel(int argc, char *argv[]);
/* Pin snapshot snap of job through refsnapd (snapshot --pin).  Returns an exit status. */
int pin_snapshot(const char *job, const char *snap);
/* Any user's: refsnapctl-self.c; restore_mine() is restore --mine (argv: restore SNAP PATH). */
int verb_versions(int argc, char *argv[]);
int restore_mine(int argc, char *argv[]);
int verb_offsite(int argc, char *argv[]);
/* Its status is the Nagios plugin convention's (refsnapctl-check-state.h), not exit-status.h's. */
int verb_check(int argc, char *argv[]);
