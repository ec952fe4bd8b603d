/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "retention.h"
#include "timespan.h"

/*
 * refsnapd's configuration: the main file, then the drop-ins of its
 * conf.d directory in lexical order.  [daemon] holds daemon-wide keys
 * and may be given again; every other section is a job named after it,
 * given once (a second section of a job, also in another file, and a
 * reserved name are errors).  A later assignment overrides an earlier
 * one; "exclude" adds a pattern, and an empty "exclude =" clears the
 * list.  See refsnapd.conf(5).
 */

#define JOB_HOOK_TIMEOUT_DEFAULT (5 * USEC_PER_MIN)
#define JOB_ON_CHANGE_MAX_SKIP_DEFAULT (7 * 24 * USEC_PER_HOUR)

/* Where a key was set: the file and line a message about its value names. */
typedef struct KeyWhere {
        char *file;
        unsigned line;
} KeyWhere;

typedef struct Job {
        char *name;
        char *source;
        char *store;
        usec_t interval;
        bool on_change;
        usec_t on_change_max_skip;      /* never skip longer than this after the last snapshot; 0: no limit */
        RetentionPolicy retention;
        char **exclude;         /* NULL-terminated */
        size_t n_exclude;
        char *pre_snapshot;     /* NULL: none */
        char *post_snapshot;
        usec_t hook_timeout;    /* each hook's; 0: none */
        usec_t full_every;      /* a full snapshot when the last full one is this old; 0: only when needed */
        bool accept_quota_charges;      /* a store where user or group quotas are enforced is accepted */
        /*
         * smb_view: where a read-only, nosuid, nodev, noexec bind mount of
         * the store is, for Samba's vfs_shadow_copy2 (smb-view.h); NULL:
         * none.  Its snapshots get whole-second names, and its store is
         * kept listable (0755) once its parent is closed to other users.
         */
        char *smb_view;
        bool public;            /* its source and store shown to every user over D-Bus (else root's alone) */
        char *file;             /* where the section first appeared */
        unsigned line;
        KeyWhere source_at, store_at, hook_at[2];       /* hook_at: pre_snapshot, post_snapshot */
        KeyWhere smb_view_at;
} Job;

typedef struct Config {
        int log_level;          /* LOG_ERR .. LOG_DEBUG */
        bool watch_queue_bounded;       /* watch_queue = bounded (default): the kernel's limit, overflows possible */
        usec_t self_service_timeout;    /* each self-service worker's time limit (then killed) */
        char *metrics_file;     /* metrics_file: node_exporter's textfile; NULL: none written */
        Job **jobs;
        size_t n_jobs;
} Config;

/* Where the metrics go unless metrics_file says otherwise: Debian's node_exporter textfile directory. */
#define CONFIG_METRICS_FILE_DEFAULT "/var/lib/prometheus/node-exporter/refsnap.prom"
#define CONFIG_SELF_SERVICE_TIMEOUT_DEFAULT (60 * USEC_PER_SEC)

Config *config_free(Config *c);
static inline void config_freep(Config **c) {
        config_free(*c);
}
#define _cleanup_config_free_ __attribute__((cleanup(config_freep)))

/*
 * Load and validate.  On error returns -EINVAL (or another -errno) and
 * sets *errors to every problem found, one per line, each as
 * "FILE:LINE: KEY: what is wrong".  dropin_dir may be NULL.
 */
int config_load(const char *main_file, const char *dropin_dir, Config **ret, char **errors);

/*
 * Checks that need the filesystem.  Errors of the configuration itself
 * (a path under the unit's private /tmp, a store inside another job's
 * source): -EINVAL and *errors, in config_load()'s format.  The state of
 * the disk (a source missing, renamed or replaced, a store or hook not
 * safely root's, a store whose parent is missing): *warnings (when not
 * NULL), one per line, "warning: FILE:LINE: [JOB]: what", and no error:
 * each fails its own job when it runs, never the daemon.
 */
int config_check_paths(const Config *c, char **errors, char **warnings);

/* config_load() and config_check_paths() together; *ret only on success. */
int config_load_checked(const char *main_file, const char *dropin_dir, Config **ret, char **errors,
                        char **warnings);

/*
 * config_load_checked() and what only an explicit check does: a reflink
 * probe on each store's filesystem and its quotas, and each smb_view's
 * mount (smb_view_check(); the daemon only warns of it, at start and
 * reload), their errors added to *errors (-EINVAL), and to *warnings a
 * probe that could not be made.
 * *ret (when not NULL) on success.
 */
int config_check(const char *main_file, const char *dropin_dir, Config **ret, char **errors, char **warnings);
/* Which way files are made here, as check-config says it. */
const char *config_reflink_path_text(void);

/*
 * What "--check-config" prints: every error on stderr, or a one-line OK on
 * stdout.  Returns the exit status, 0 or 1.
 */
int config_check_command(const char *prog, const char *main_file, const char *dropin_dir);

const Job *config_find_job(const Config *c, const char *name);
