/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <syslog.h>
#include <stdint.h>
#include <unistd.h>

#include "chase.h"
#include "config.h"
#include "escape.h"
#include "fd-util.h"
#include "hook.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "path-util.h"
#include "reflink.h"
#include "smb-view.h"
#include "store.h"
#include "strv.h"

typedef struct Parser {
        Config *config;
        const char *file;
        FILE *f;
        unsigned line;
        unsigned section_line;  /* of the last [SECTION] header */
        FILE *errors;           /* open_memstream */
        unsigned n_errors;
        /* Every job section seen, where it first appeared: a second one is an error. */
        char **sections;
        size_t n_sections;
        KeyWhere *section_at;
} Parser;

_printf_(3, 4)
static void report(FILE *errors, unsigned *n, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vfprintf(errors, fmt, ap);
        va_end(ap);
        fputc('\n', errors);
        (*n)++;
}

/* Note where the key being parsed was set. */
static int key_where(const Parser *p, KeyWhere *w) {
        char *f = strdup(p->file);

        if (!f)
                return -ENOMEM;
        free(w->file);
        w->file = f;
        w->line = p->line;
        return 0;
}

#define parse_error(p, key, fmt, ...) \
        report((p)->errors, &(p)->n_errors, "%s:%u: %s: " fmt, (p)->file, (p)->line, key, ##__VA_ARGS__)

static Job *job_free(Job *j) {
        if (!j)
                return NULL;
        free(j->name);
        free(j->source);
        free(j->store);
        strv_free(j->exclude);
        free(j->pre_snapshot);
        free(j->post_snapshot);
        free(j->file);
        free(j->source_at.file);
        free(j->store_at.file);
        free(j->hook_at[0].file);
        free(j->hook_at[1].file);
        free(j->smb_view);
        free(j->smb_view_at.file);
        free(j);
        return NULL;
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_jobs; i++)
                job_free(c->jobs[i]);
        free(c->jobs);
        free(c->metrics_file);
        free(c);
        return NULL;
}

const Job *config_find_job(const Config *c, const char *name) {
        for (size_t i = 0; c && i < c->n_jobs; i++)
                if (strcmp(c->jobs[i]->name, name) == 0)
                        return c->jobs[i];
        return NULL;
}

static bool job_name_valid(const char *s) {
        size_t n = strlen(s);

        if (n == 0 || n > 64 || s[0] == '.' || s[0] == '-')
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char) *s) && !strchr("_.-", *s))
                        return false;
        return true;
}

/*
 * Names a job may not take: [daemon] in another case (a typo that would
 * silently make a job), and the words a daemon-wide section or a command
 * meaning "every job" may take.
 */
static bool job_name_reserved(const char *s) {
        static const char *const reserved[] = { "daemon", "default", "defaults", "global", "all" };

        for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
                if (strcasecmp(s, reserved[i]) == 0)
                        return true;
        return false;
}

static bool path_valid(const char *s) {
        return strlen(s) < PATH_MAX && path_is_normalized_absolute(s);
}

static int parse_bool(const char *v, bool *ret) {
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(v, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(v, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

static int parse_count(const char *v, unsigned *ret) {
        char *end;
        unsigned long n;

        if (!isdigit((unsigned char) v[0]))
                return -EINVAL;
        errno = 0;
        n = strtoul(v, &end, 10);
        if (errno || *end || n > 1000000)
                return -ERANGE;
        *ret = (unsigned) n;
        return 0;
}

static int parse_log_level(const char *v, int *ret) {
        static const struct {
                const char *name;
                int level;
        } levels[] = {
                { "err", LOG_ERR }, { "error", LOG_ERR }, { "warning", LOG_WARNING },
                { "notice", LOG_NOTICE }, { "info", LOG_INFO }, { "debug", LOG_DEBUG },
        };

        for (size_t i = 0; i < ELEMENTSOF(levels); i++)
                if (strcmp(v, levels[i].name) == 0) {
                        *ret = levels[i].level;
                        return 0;
                }
        return -EINVAL;
}

static Job *job_get(Parser *p, const char *name) {
        Config *c = p->config;
        Job **jobs, *j;

        for (size_t i = 0; i < c->n_jobs; i++)
                if (strcmp(c->jobs[i]->name, name) == 0)
                        return c->jobs[i];

        j = calloc(1, sizeof(*j));
        jobs = reallocarray(c->jobs, c->n_jobs + 1, sizeof(*jobs));
        if (!j || !jobs) {
                free(j);
                if (jobs)
                        c->jobs = jobs;
                return NULL;
        }
        c->jobs = jobs;
        j->name = strdup(name);
        j->file = strdup(p->file);
        j->line = p->section_line;
        j->on_change = false;
        j->hook_timeout = JOB_HOOK_TIMEOUT_DEFAULT;
        j->on_change_max_skip = JOB_ON_CHANGE_MAX_SKIP_DEFAULT;
        j->retention.keep_guard = RETENTION_KEEP_GUARD_DEFAULT;
        if (!j->name || !j->file) {
                job_free(j);
                return NULL;
        }
        c->jobs[c->n_jobs++] = j;
        return j;
}

static int set_string(char **field, const char *v) {
        char *s = strdup(v);

        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

/* inih calls this for every key; it always goes on, errors are collected. */
static int handler(void *user, const char *section, const char *key, const char *value) {
        Parser *p = user;
        Job *j;
        int r;

        if (!section[0]) {
                parse_error(p, key, "not in a section: put it under [daemon] or [JOB]");
                return 1;
        }
        if (strcmp(section, "daemon") == 0) {
                if (strcmp(key, "log_level") == 0) {
                        if (parse_log_level(value, &p->config->log_level) < 0)
                                parse_error(p, key, "'%s' is not one of err, warning, notice, info, debug",
                                            value);
                } else if (strcmp(key, "self_service_timeout") == 0) {
                        usec_t t;

                        if (timespan_parse(value, &t) < 0 || t < USEC_PER_SEC || t > 3600 * USEC_PER_SEC)
                                parse_error(p, key, "'%s' is not a time span from 1s to 1h", value);
                        else
                                p->config->self_service_timeout = t;
                } else if (strcmp(key, "watch_queue") == 0) {
                        if (strcmp(value, "unlimited") == 0 || strcmp(value, "bounded") == 0)
                                p->config->watch_queue_bounded = value[0] == 'b';
                        else
                                parse_error(p, key, "'%s' is not one of unlimited, bounded", value);
                } else if (strcmp(key, "metrics_file") == 0) {
                        /* Empty: none.  Else a plain absolute path whose name node_exporter reads (*.prom). */
                        if (!value[0])
                                p->config->metrics_file = mfree(p->config->metrics_file);
                        else if (!path_is_normalized_absolute(value) || strlen(value) < 7 ||
                                 strcmp(value + strlen(value) - 5, ".prom") != 0 ||
                                 strlen(value) >= PATH_MAX)
                                parse_error(p, key, "'%s' is not an absolute, normalized path ending in .prom "
                                            "(or empty: no metrics)", value);
                        else if (set_string(&p->config->metrics_file, value) < 0)
                                return 0;
                } else
                        parse_error(p, key, "unknown key in [daemon]");
                return 1;
        }
        if (!job_name_valid(section)) {
                parse_error(p, key, "[%s]: a job name is 1-64 letters, digits, '_', '.' or '-', "
                            "not starting with '.' or '-'", section);
                return 1;
        }
        j = job_get(p, section);
        if (!j) {
                parse_error(p, key, "out of memory");
                return 1;
        }

        if (strcmp(key, "source") == 0 || strcmp(key, "store") == 0) {
                if (!path_valid(value))
                        parse_error(p, key, "'%s' is not an absolute, normalized path", value);
                else if (set_string(strcmp(key, "source") == 0 ? &j->source : &j->store, value) < 0 ||
                         key_where(p, strcmp(key, "source") == 0 ? &j->source_at : &j->store_at) < 0)
                        parse_error(p, key, "out of memory");
        } else if (strcmp(key, "smb_view") == 0) {
                /* Empty: none. */
                if (!value[0]) {
                        j->smb_view = mfree(j->smb_view);
                        free(j->smb_view_at.file);
                        j->smb_view_at = (KeyWhere) {};
                } else if (!path_valid(value) || strcmp(value, "/") == 0)
                        parse_error(p, key, "'%s' is not an absolute, normalized path below /", value);
                else if (set_string(&j->smb_view, value) < 0 || key_where(p, &j->smb_view_at) < 0)
                        parse_error(p, key, "out of memory");
        } else if (strcmp(key, "on_change_max_skip") == 0) {
                if (timespan_parse(value, &j->on_change_max_skip) < 0)
                        parse_error(p, key, "'%s' is not a time span (like 1d, 1w; 0 for no limit)", value);
        } else if (strcmp(key, "full_every") == 0) {
                if (timespan_parse(value, &j->full_every) < 0)
                        parse_error(p, key, "'%s' is not a time span (like 1d, 1w; 0: only when needed)", value);
        } else if (strcmp(key, "hook_timeout") == 0) {
                if (timespan_parse(value, &j->hook_timeout) < 0)
                        parse_error(p, key, "'%s' is not a time span (like 30s, 5min; 0 for none)", value);
        } else if (strcmp(key, "interval") == 0 || strcmp(key, "keep_min_age") == 0) {
                usec_t t;

                r = timespan_parse(value, &t);
                if (r < 0)
                        parse_error(p, key, "'%s' is not a time span (like 30s, 15min, 1h, 1d, 1w)",
                                    value);
                else if (key[0] == 'i' && t < USEC_PER_SEC)
                        parse_error(p, key, "'%s': the interval must be at least 1s", value);
                else if (key[0] == 'i')
                        j->interval = t;
                else
                        j->retention.min_age = t;
        } else if (strcmp(key, "keep_guard") == 0) {
                if (timespan_parse(value, &j->retention.keep_guard) < 0)
                        parse_error(p, key, "'%s' is not a time span (like 7d, 2w; 0: a guard goes at the "
                                    "next prune)", value);
        } else if (strcmp(key, "on_change") == 0) {
                if (parse_bool(value, &j->on_change) < 0)
                        parse_error(p, key, "'%s' is not a boolean (yes or no)", value);
        } else if (strcmp(key, "accept_quota_charges") == 0) {
                if (parse_bool(value, &j->accept_quota_charges) < 0)
                        parse_error(p, key, "'%s' is not a boolean (yes or no)", value);
        } else if (strcmp(key, "public") == 0) {
                if (parse_bool(value, &j->public) < 0)
                        parse_error(p, key, "'%s' is not a boolean (yes or no)", value);
        } else if (strncmp(key, "keep_", 5) == 0) {
                static const char *const names[] = { "hourly", "daily", "weekly", "monthly", "yearly" };
                unsigned *fields[] = { &j->retention.hourly, &j->retention.daily, &j->retention.weekly,
                                       &j->retention.monthly, &j->retention.yearly };
                size_t i;

                for (i = 0; i < ELEMENTSOF(names); i++)
                        if (strcmp(key + 5, names[i]) == 0)
                                break;
                if (i == ELEMENTSOF(names))
                        parse_error(p, key, "unknown key");
                else if (parse_count(value, fields[i]) < 0)
                        parse_error(p, key, "'%s' is not a count from 0 to 1000000", value);
        } else if (strcmp(key, "exclude") == 0) {
                if (!value[0]) {
                        j->exclude = strv_free(j->exclude);
                        j->n_exclude = 0;
                } else if (strv_push(&j->exclude, &j->n_exclude, value) < 0)
                        parse_error(p, key, "out of memory");
        } else if (strcmp(key, "pre_snapshot") == 0 || strcmp(key, "post_snapshot") == 0) {
                char **field = key[1] == 'r' ? &j->pre_snapshot : &j->post_snapshot;

                if (!value[0]) {
                        free(*field);
                        *field = NULL;
                } else if (!path_valid(value))
                        parse_error(p, key, "'%s' is not an absolute path to a program", value);
                else if (set_string(field, value) < 0 || key_where(p, &j->hook_at[key[1] == 'r' ? 0 : 1]) < 0)
                        parse_error(p, key, "out of memory");
        } else
                parse_error(p, key, "unknown key");
        return 1;
}

/*
 * A [SECTION] header line: a job's name must be free (reserved names, and
 * a job's section given twice, in one file or across drop-ins, are
 * errors: two sections would silently merge into one job).
 */
static void section_header(Parser *p, const char *line) {
        _cleanup_free_ char *name = NULL;
        const char *start = line + strspn(line, " \t") + 1;
        size_t n = strcspn(start, "]");
        KeyWhere *at;

        if (start[n] != ']')
                return;         /* inih says it: a syntax error */
        name = strndup(start, n);
        if (!name) {
                parse_error(p, "(section)", "out of memory");
                return;
        }
        if (strcmp(name, "daemon") == 0)
                return;         /* daemon-wide keys: a drop-in may set them again */
        if (job_name_reserved(name)) {
                parse_error(p, "(section)", "[%s]: a reserved name, not a job name", name);
                return;
        }
        for (size_t i = 0; i < p->n_sections; i++)
                if (strcmp(p->sections[i], name) == 0) {
                        parse_error(p, "(section)", "[%s]: the job is already defined at %s:%u; "
                                    "give each job one section", name, p->section_at[i].file,
                                    p->section_at[i].line);
                        return;
                }
        at = reallocarray(p->section_at, p->n_sections + 1, sizeof(*at));
        if (at)
                p->section_at = at;
        if (!at || strv_push(&p->sections, &p->n_sections, name) < 0) {
                parse_error(p, "(section)", "out of memory");
                return;
        }
        p->section_at[p->n_sections - 1] = (KeyWhere) {};
        if (key_where(p, &p->section_at[p->n_sections - 1]) < 0)
                parse_error(p, "(section)", "out of memory");
}

/* Lines are read here so that the handler knows its line number. */
static char *reader(char *str, int num, void *stream) {
        Parser *p = stream;
        size_t n;

        if (!fgets(str, num, p->f))
                return NULL;
        p->line++;
        n = strlen(str);
        if (n == (size_t) num - 1 && str[n - 1] != '\n' && !feof(p->f)) {
                int c;

                while ((c = fgetc(p->f)) != EOF && c != '\n')
                        ;
                parse_error(p, "(line)", "longer than %d characters", num - 2);
                strcpy(str, "\n");
        }
        if (str[strspn(str, " \t")] == '[') {
                p->section_line = p->line;
                section_header(p, str);
        }
        return str;
}

static int parse_file(Parser *p, const char *path) {
        /*
         * The file as every message names it, escaped (cescape()): a name
         * may hold a newline, which would split a message in two, or an
         * escape sequence.
         */
        _cleanup_free_ char *shown = cescape(path);
        int r;

        if (!shown)
                return -ENOMEM;
        p->f = fopen(path, "re");
        if (!p->f) {
                r = -errno;
                report(p->errors, &p->n_errors, "%s: cannot open: %s", shown, strerror(-r));
                return r;
        }
        p->file = shown;
        p->line = 0;
        p->section_line = 0;
        r = ini_parse_stream(reader, p, handler, p);
        if (r > 0)
                report(p->errors, &p->n_errors,
                       "%s:%d: syntax error: expected [SECTION], KEY = VALUE or a comment", shown, r);
        fclose(p->f);
        p->f = NULL;
        p->file = NULL;
        return 0;
}

static int dropin_filter(const struct dirent *d) {
        size_t n = strlen(d->d_name);

        return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".conf") == 0;
}

/*
 * A job's smb_view lies outside every job's source and store (a view in
 * a source would be snapshotted, and walked by a restore --delete; one in
 * a store would hold the store inside itself), holds none of them (its
 * mount would hide them), and is no other job's view.
 */
static void validate_smb_view(Parser *p, const Job *j) {
        const Config *c = p->config;
        const KeyWhere *w = &j->smb_view_at;

        if (!j->smb_view)
                return;
        for (size_t k = 0; k < c->n_jobs; k++) {
                const Job *o = c->jobs[k];
                const char *paths[] = { o->source, o->store };

                for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                        const char *what = i == 0 ? "source" : "store";

                        if (!paths[i])
                                continue;
                        if (path_startswith(j->smb_view, paths[i]))
                                report(p->errors, &p->n_errors, "%s:%u: [%s]: smb_view %s lies inside the %s of "
                                       "job %s (%s); put it outside every job's source and store", w->file,
                                       w->line, j->name, j->smb_view, what, o->name, paths[i]);
                        else if (path_startswith(paths[i], j->smb_view))
                                report(p->errors, &p->n_errors, "%s:%u: [%s]: smb_view %s holds the %s of job "
                                       "%s (%s), which its mount would hide", w->file, w->line, j->name,
                                       j->smb_view, what, o->name, paths[i]);
                }
        }
        for (size_t k = 0; k < c->n_jobs && c->jobs[k] != j; k++)
                if (c->jobs[k]->smb_view && strcmp(c->jobs[k]->smb_view, j->smb_view) == 0)
                        report(p->errors, &p->n_errors, "%s:%u: [%s]: smb_view %s is also the smb_view of job %s",
                               w->file, w->line, j->name, j->smb_view, c->jobs[k]->name);
}

static void validate(Parser *p) {
        Config *c = p->config;

        for (size_t i = 0; i < c->n_jobs; i++) {
                Job *j = c->jobs[i];

                if (!j->source)
                        report(p->errors, &p->n_errors, "%s:%u: [%s]: source is not set", j->file,
                               j->line, j->name);
                if (!j->store)
                        report(p->errors, &p->n_errors, "%s:%u: [%s]: store is not set", j->file,
                               j->line, j->name);
                if (!j->interval)
                        report(p->errors, &p->n_errors, "%s:%u: [%s]: interval is not set", j->file,
                               j->line, j->name);
                if (!j->source || !j->store)
                        continue;
                if (strcmp(j->source, j->store) == 0)
                        report(p->errors, &p->n_errors, "%s:%u: [%s]: store is the source itself",
                               j->store_at.file, j->store_at.line, j->name);
                else if (path_startswith(j->source, j->store))
                        report(p->errors, &p->n_errors,
                               "%s:%u: [%s]: store %s contains the source; put it beside it",
                               j->store_at.file, j->store_at.line, j->name, j->store);
                for (size_t k = 0; k < i; k++)
                        if (c->jobs[k]->store && strcmp(c->jobs[k]->store, j->store) == 0)
                                report(p->errors, &p->n_errors,
                                       "%s:%u: [%s]: store %s is also the store of job %s",
                                       j->store_at.file, j->store_at.line, j->name, j->store,
                                       c->jobs[k]->name);
        }
        for (size_t i = 0; i < c->n_jobs; i++)
                validate_smb_view(p, c->jobs[i]);
}

int config_load(const char *main_file, const char *dropin_dir, Config **ret, char **errors) {
        _cleanup_config_free_ Config *c = calloc(1, sizeof(Config));
        _cleanup_free_ char *buf = NULL;
        struct dirent **list = NULL;
        size_t size = 0;
        Parser p = {};
        int n;

        if (!c)
                return -ENOMEM;
        c->log_level = LOG_INFO;
        /* A queue a user can grow without bound costs the kernel memory no cgroup limit stops. */
        c->watch_queue_bounded = true;
        c->self_service_timeout = CONFIG_SELF_SERVICE_TIMEOUT_DEFAULT;
        c->metrics_file = strdup(CONFIG_METRICS_FILE_DEFAULT);
        if (!c->metrics_file)
                return -ENOMEM;
        p.config = c;
        p.errors = open_memstream(&buf, &size);
        if (!p.errors)
                return -ENOMEM;

        parse_file(&p, main_file);
        if (dropin_dir) {
                n = scandir(dropin_dir, &list, dropin_filter, alphasort);
                if (n < 0 && errno != ENOENT)
                        report(p.errors, &p.n_errors, "%s: cannot list: %s", dropin_dir, strerror(errno));
                for (int i = 0; i < n; i++) {
                        _cleanup_free_ char *path = NULL;

                        if (asprintf(&path, "%s/%s", dropin_dir, list[i]->d_name) >= 0)
                                parse_file(&p, path);
                        free(list[i]);
                }
                free(list);
        }
        validate(&p);
        for (size_t i = 0; i < p.n_sections; i++)
                free(p.section_at[i].file);
        free(p.section_at);
        strv_free(p.sections);

        if (fclose(p.errors) != 0)
                return -ENOMEM;
        if (p.n_errors > 0) {
                if (errors)
                        *errors = TAKE_PTR(buf);
                return -EINVAL;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

/* The unit's PrivateTmp= gives the daemon /tmp and /var/tmp of its own. */
static const char *private_tmp(const char *path) {
        if (path_startswith(path, "/tmp"))
                return "/tmp";
        if (path_startswith(path, "/var/tmp"))
                return "/var/tmp";
        return NULL;
}

/*
 * What config_check_paths() finds: errors of the configuration itself
 * (the same whatever the disk holds), and warnings about the state of the
 * disk, which fail that job at run time and nothing else.
 */
typedef struct Checks {
        FILE *errors, *warnings;
        unsigned n_errors, n_warnings;
} Checks;

#define conf_error(k, w, j, fmt, ...) \
        report((k)->errors, &(k)->n_errors, "%s:%u: [%s]: " fmt, (w)->file, (w)->line, (j)->name, ##__VA_ARGS__)
#define disk_warning(k, w, j, fmt, ...) \
        report((k)->warnings, &(k)->n_warnings, "warning: %s:%u: [%s]: " fmt, (w)->file, (w)->line, (j)->name, \
               ##__VA_ARGS__)

/* Is dir the directory holding path's last component? */
static bool is_parent(const char *dir, const char *path) {
        _cleanup_free_ char *parent = NULL;
        const char *base;

        return path_split(path, &parent, &base) >= 0 && strcmp(parent[0] ? parent : "/", dir) == 0;
}

/*
 * Is path (the job's source or store) reached through a FUSE mount (a
 * user's, on her directory)?  Then said, and true: the job fails at run
 * time, and nothing there is looked at (a stat would ask the server).
 */
static bool fuse_warning(Checks *k, const KeyWhere *w, const Job *j, const char *what, const char *path) {
        _cleanup_free_ char *where = NULL, *type = NULL;

        if (path_under_fuse(NULL, path, &where, &type) <= 0)
                return false;
        disk_warning(k, w, j, "%s %s is covered by a fuse mount (%s on %s): the job fails until it is "
                     "unmounted; nothing there is looked at", what, path, type, where);
        return true;
}

static void check_source(Checks *k, const Job *j, uint64_t *ret_mnt) {
        _cleanup_free_ char *canonical = NULL;
        _cleanup_close_ int fd = -EBADF;
        const KeyWhere *w = &j->source_at;
        struct stat st;
        int r;

        *ret_mnt = 0;
        if (private_tmp(j->source)) {
                conf_error(k, w, j, "source %s is under %s, which refsnapd.service sees as a private, empty "
                           "directory of its own (PrivateTmp=yes)", j->source, private_tmp(j->source));
                return;
        }
        /*
         * Opened as a snapshot opens it: no symbolic link followed, and no
         * FUSE mount entered, by the mount the walk reaches (one mounted
         * since the mount table was read is not asked anything either).
         * The source is normalized (parsed so): opened, it is canonical.
         */
        fd = chase_dir(AT_FDCWD, j->source, &(Chase) { .flags = CHASE_NO_FUSE });
        if (fd == -EREMOTE)
                disk_warning(k, w, j, "source %s is covered by a fuse mount: the job fails until it is unmounted; "
                             "nothing there is looked at", j->source);
        else if (fd == -ELOOP && lstat(j->source, &st) == 0 && S_ISLNK(st.st_mode))
                disk_warning(k, w, j, "source %s is a symbolic link; name the directory itself", j->source);
        else if (fd == -ELOOP && (canonical = realpath(j->source, NULL)))
                disk_warning(k, w, j, "source %s is not canonical (a symbolic link on the way); its canonical "
                             "path is %s", j->source, canonical);
        else if (fd == -ENOTDIR)
                disk_warning(k, w, j, "source %s is not a directory", j->source);
        else if (fd < 0)
                disk_warning(k, w, j, "source %s: %s", j->source, strerror(-fd));
        else if ((r = fd_mount_id(fd, ret_mnt)) < 0)
                disk_warning(k, w, j, "source %s: %s", j->source, strerror(-r));
}

/*
 * The nearest directory of path (absolute) that is there, path itself or
 * one above it, opened as a snapshot opens one: no symbolic link followed
 * and no FUSE mount entered (CHASE_NO_FUSE), nothing stat'ed by its path.
 * *ret_found is its path, or on failure the prefix at fault.
 */
static int open_nearest(const char *path, char **ret_found) {
        _cleanup_free_ char *p = strdup(path);
        Chase c = { .flags = CHASE_NO_FUSE };
        int fd;

        if (!p)
                return -ENOMEM;
        for (;;) {
                char *slash;

                fd = chase_dir(AT_FDCWD, p, &c);
                if (fd != -ENOENT || strcmp(p, "/") == 0)
                        break;
                slash = strrchr(p, '/');
                if (!slash)
                        break;
                if (slash == p)
                        slash[1] = '\0';
                else
                        *slash = '\0';
        }
        if (fd < 0 && c.failed_len > 0 && c.failed_len < strlen(p))
                p[c.failed_len] = '\0';
        *ret_found = TAKE_PTR(p);
        return fd;
}

static void check_store(Checks *k, const Config *c, const Job *j, uint64_t src_mnt) {
        _cleanup_free_ char *existing = NULL;
        _cleanup_close_ int fd = -EBADF;
        const KeyWhere *w = &j->store_at;
        uint64_t store_mnt = 0;
        Chase ch = { .flags = CHASE_SAFE | CHASE_NO_FUSE };
        struct stat st;
        int r;

        if (private_tmp(j->store)) {
                conf_error(k, w, j, "store %s is under %s, which refsnapd.service sees as a private directory "
                           "of its own (PrivateTmp=yes)", j->store, private_tmp(j->store));
                return;
        }
        for (size_t i = 0; i < c->n_jobs; i++)
                if (c->jobs[i] != j && c->jobs[i]->source && path_startswith(j->store, c->jobs[i]->source))
                        conf_error(k, w, j, "store %s lies inside the source of job %s, which would snapshot "
                                   "these snapshots, and whose restore --delete would delete them", j->store,
                                   c->jobs[i]->name);
        /* Looked at by descriptor only: a FUSE mount made since the mount table was read is not asked. */
        fd = open_nearest(j->store, &existing);
        if (fd == -ELOOP || fd == -ENOTDIR) {
                disk_warning(k, w, j, "store: %s is %s", existing ? existing : j->store,
                             fd == -ELOOP ? "a symbolic link; name the store canonically" : "not a directory");
                return;
        }
        if (fd == -EREMOTE) {
                disk_warning(k, w, j, "store %s is covered by a fuse mount: the job fails until it is unmounted; "
                             "nothing there is looked at", j->store);
                return;
        }
        r = fd < 0 ? fd : fd_mount_id(fd, &store_mnt);
        if (r < 0) {
                disk_warning(k, w, j, "store %s: %s", j->store, strerror(-r));
                return;
        }
        fd = safe_close(fd);
        if (src_mnt && store_mnt != src_mnt)
                disk_warning(k, w, j, "store %s is not on the mount of source %s", j->store, j->source);
        /* What store_open() will refuse, said with the directory at fault. */
        fd = chase_dir(AT_FDCWD, existing, &ch);
        if (fd == -EPERM || fd == -ELOOP) {
                size_t len = fd == -EPERM ? ch.unsafe_len : ch.failed_len;

                disk_warning(k, w, j, "store %s: %.*s %s", j->store, (int) len, existing,
                             fd == -ELOOP ? "is a symbolic link; name the store canonically" :
                             "is owned by or writable by a user other than root, who could swap the store "
                             "for a directory of her own");
        } else if (fd < 0)
                disk_warning(k, w, j, "store %s: %s: %s", j->store, existing, strerror(-fd));
        else if (fstat(fd, &st) < 0)
                disk_warning(k, w, j, "store %s: %s", existing, strerror(errno));
        else if (strcmp(existing, j->store) == 0 && (st.st_mode & (S_IWGRP | S_IWOTH)))
                disk_warning(k, w, j, "store %s is writable by other users (mode %04o); make it 0700", j->store,
                             (unsigned) (st.st_mode & 07777));
        else if (strcmp(existing, j->store) == 0 && st.st_uid != 0)
                disk_warning(k, w, j, "store %s is owned by uid %u; it must be root's", j->store,
                             (unsigned) st.st_uid);
        else if (strcmp(existing, j->store) != 0 && (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))))
                /* The store is to be made in it: another user could make it first. */
                disk_warning(k, w, j, "store %s: %s is owned by or writable by a user other than root, who "
                             "could make the store as a directory of her own", j->store, existing);
        else if (strcmp(existing, j->store) != 0 && !is_parent(existing, j->store))
                disk_warning(k, w, j, "store %s: its parent directory does not exist (only the store's last "
                             "component is made, on the source's filesystem: is that filesystem mounted?)",
                             j->store);
}

static void check_hooks(Checks *k, const Job *j) {
        const char *hooks[] = { j->pre_snapshot, j->post_snapshot };

        for (size_t i = 0; i < ELEMENTSOF(hooks); i++) {
                _cleanup_free_ char *why = NULL;

                if (!hooks[i])
                        continue;
                if (hook_check(hooks[i], &why) < 0)
                        disk_warning(k, &j->hook_at[i], j, "%s %s: %s", i == 0 ? "pre_snapshot" : "post_snapshot",
                                     hooks[i], why ? why : "cannot be checked");
        }
}

/*
 * Samba's view of the job's store: an error for an explicit check (the
 * administrator asked), else a warning, since the view is Samba's, its
 * mount may come after the daemon's start, and the snapshots go on
 * without it.
 */
static int check_smb_view(Checks *k, const Job *j, bool explicit) {
        _cleanup_free_ char *why = NULL;
        int r;

        if (!j->smb_view)
                return 0;
        r = smb_view_check(j, NULL, &why);
        if (r <= 0)
                return r;
        if (explicit)
                conf_error(k, &j->smb_view_at, j, "%s", why);
        else
                disk_warning(k, &j->smb_view_at, j, "%s; Samba shows no previous versions of the job until then, "
                             "its snapshots go on", why);
        return 0;
}

static int check_paths(const Config *c, bool explicit, char **errors, char **warnings) {
        _cleanup_free_ char *ebuf = NULL, *wbuf = NULL;
        size_t esize = 0, wsize = 0;
        Checks k = {};
        int r;

        k.errors = open_memstream(&ebuf, &esize);
        k.warnings = open_memstream(&wbuf, &wsize);
        if (!k.errors || !k.warnings) {
                if (k.errors)
                        fclose(k.errors);
                if (k.warnings)
                        fclose(k.warnings);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_jobs; i++) {
                const Job *j = c->jobs[i];
                uint64_t src_mnt = 0;

                /* Nothing under a user's FUSE mount is looked at: its server is never asked. */
                if (!fuse_warning(&k, &j->source_at, j, "source", j->source))
                        check_source(&k, j, &src_mnt);
                if (!fuse_warning(&k, &j->store_at, j, "store", j->store))
                        check_store(&k, c, j, src_mnt);
                check_hooks(&k, j);
                r = check_smb_view(&k, j, explicit);
                if (r < 0) {
                        fclose(k.errors);
                        fclose(k.warnings);
                        return r;
                }
        }
        r = fclose(k.errors);
        if (fclose(k.warnings) != 0 || r != 0)
                return -ENOMEM;
        if (warnings && k.n_warnings > 0)
                *warnings = TAKE_PTR(wbuf);
        if (k.n_errors > 0) {
                if (errors)
                        *errors = TAKE_PTR(ebuf);
                return -EINVAL;
        }
        return 0;
}

int config_check_paths(const Config *c, char **errors, char **warnings) {
        return check_paths(c, false, errors, warnings);
}

static int load_checked(const char *main_file, const char *dropin_dir, bool explicit, Config **ret, char **errors,
                        char **warnings) {
        Config *c = NULL;
        int r;

        r = config_load(main_file, dropin_dir, &c, errors);
        if (r < 0)
                return r;
        r = check_paths(c, explicit, errors, warnings);
        if (r < 0) {
                config_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int config_load_checked(const char *main_file, const char *dropin_dir, Config **ret, char **errors,
                        char **warnings) {
        return load_checked(main_file, dropin_dir, false, ret, errors, warnings);
}

/*
 * Whether the store's filesystem shares data: one block cloned between two
 * unnamed files made in the store (or where it will be made), so that the
 * probe leaves no name for anyone to race.
 */
static void check_reflink(FILE *f, FILE *w, unsigned *n, const Job *j) {
        static const char block[4096] = "refsnap check-config probe";
        _cleanup_close_ int dfd = -EBADF, a = -EBADF, b = -EBADF;
        _cleanup_free_ char *existing = NULL;
        Chase ch = { .flags = CHASE_SAFE | CHASE_NO_FUSE };
        const char *what = "a directory to probe in";
        uint64_t mnt;
        int r;

        r = path_mount_id_nearest(j->store, &mnt, &existing);
        if (r >= 0)
                r = dfd = chase_dir(AT_FDCWD, existing, &ch);
        if (r >= 0) {
                what = "an unnamed probe file";
                a = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                b = a < 0 ? -EBADF : openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                r = b < 0 ? -errno : 0;
        }
        if (r >= 0) {
                ssize_t k = write(a, block, sizeof(block));

                what = "writing the probe file";
                r = k < 0 ? -errno : k != (ssize_t) sizeof(block) ? -EIO : 0;
        }
        if (r >= 0) {
                what = "a reflink of the probe file";
                r = ioctl(b, FICLONE, a) < 0 ? -errno : 0;
                if (r == -EOPNOTSUPP || r == -ENOTTY || r == -EXDEV || r == -EINVAL) {
                        report(f, n, "%s:%u: [%s]: store %s: its filesystem cannot share data between files, so "
                               "every snapshot would fail (%s: %s)", j->store_at.file, j->store_at.line, j->name,
                               j->store, what, strerror(-r));
                        return;
                }
        }
        /*
         * Not an answer about sharing (a full or over-quota filesystem, one
         * without O_TMPFILE, a caller without access): said, not an error,
         * so that a user filling the filesystem cannot keep the daemon from
         * starting.
         */
        if (r < 0)
                fprintf(w, "%s:%u: [%s]: store %s: warning: could not probe whether its filesystem "
                        "shares data (%s: %s)\n", j->store_at.file, j->store_at.line, j->name, j->store, what,
                        strerror(-r));
}

/*
 * A store on a filesystem that enforces user or group quotas: each
 * snapshot's copies are charged to their owners, whose quotas it fills.
 * A store under a btrfs qgroup limit: what its snapshots keep counts
 * against it.  An error unless the job accepts that (accept_quota_charges).
 */
static void check_quota(FILE *f, unsigned *n, const Job *j) {
        _cleanup_free_ char *existing = NULL;
        _cleanup_close_ int fd = -EBADF;
        char what[16], qgroup[128];
        uint64_t mnt;
        int r = 0;

        if (j->accept_quota_charges || path_mount_id_nearest(j->store, &mnt, &existing) < 0)
                return;
        fd = open(existing, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0 && store_fs_quota(fd, what) > 0)
                report(f, n, "%s:%u: [%s]: store %s: its filesystem enforces user or group quotas (%s): a "
                       "snapshot's copies are charged to their owners and fill their quotas; set "
                       "accept_quota_charges = yes to accept that", j->store_at.file, j->store_at.line, j->name,
                       j->store, what);
        else if (fd >= 0 && (r = store_btrfs_qgroup_limit(fd, qgroup, sizeof(qgroup))) > 0)
                report(f, n, "%s:%u: [%s]: store %s: a btrfs qgroup limit applies to it (%s): the data its "
                       "snapshots keep counts against the limit, and once it is reached the snapshots and every "
                       "write under that qgroup fail; set accept_quota_charges = yes to accept that",
                       j->store_at.file, j->store_at.line, j->name, j->store, qgroup);
        else if (r < 0)
                report(f, n, "%s:%u: [%s]: store %s: cannot tell whether a btrfs qgroup limit applies to it (%s), "
                       "and the job refuses its store while it cannot; set accept_quota_charges = yes to accept "
                       "any limit", j->store_at.file, j->store_at.line, j->name, j->store, strerror(-r));
}

/* *dst := *dst followed by s (s freed); -ENOMEM. */
static int append_text(char **dst, char *s) {
        _cleanup_free_ char *a = s;
        char *t;

        if (!a || !*a)
                return 0;
        if (!*dst) {
                *dst = TAKE_PTR(a);
                return 0;
        }
        if (asprintf(&t, "%s%s", *dst, a) < 0)
                return -ENOMEM;
        free(*dst);
        *dst = t;
        return 0;
}

int config_check(const char *main_file, const char *dropin_dir, Config **ret, char **errors, char **warnings) {
        _cleanup_config_free_ Config *c = NULL;
        char *more_errors = NULL, *more_warnings = NULL;
        size_t se = 0, sw = 0;
        unsigned n = 0;
        FILE *f, *w;
        int r;

        r = load_checked(main_file, dropin_dir, true, &c, errors, warnings);
        if (r < 0)
                return r;
        /* What only an explicit check does: write to each store's filesystem. */
        f = open_memstream(&more_errors, &se);
        w = f ? open_memstream(&more_warnings, &sw) : NULL;
        if (!w) {
                if (f)
                        fclose(f);
                free(more_errors);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_jobs; i++) {
                if (path_under_fuse(NULL, c->jobs[i]->source, NULL, NULL) > 0 ||
                    path_under_fuse(NULL, c->jobs[i]->store, NULL, NULL) > 0)
                        continue;       /* said in the warnings */
                check_reflink(f, w, &n, c->jobs[i]);
                check_quota(f, &n, c->jobs[i]);
        }
        r = fclose(f) != 0 ? -ENOMEM : 0;
        if (fclose(w) != 0)
                r = -ENOMEM;
        if (append_text(warnings, more_warnings) < 0 || append_text(errors, more_errors) < 0)
                r = -ENOMEM;
        if (r < 0)
                return r;
        if (n > 0)
                return -EINVAL;
        if (ret)
                *ret = TAKE_PTR(c);
        return 0;
}

int config_check_command(const char *prog, const char *main_file, const char *dropin_dir) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_free_ char *errors = NULL, *warnings = NULL;
        int r;

        r = config_check(main_file, dropin_dir, &c, &errors, &warnings);
        /* The state of the disk: said, per job, but no error of the configuration. */
        fputs_cescaped_lines(warnings, stderr);
        if (r < 0) {
                /* Each line as a terminal may show it: a file name in it may hold any byte. */
                fputs_cescaped_lines(errors, stderr);
                if (r == -ENOMEM)
                        fprintf(stderr, "%s: out of memory\n", prog);
                fprintf(stderr, "%s: ", prog);
                fputs_cescaped(main_file, stderr);
                fprintf(stderr, ": the configuration has errors\n");
                return 1;
        }
        /* Which way files are made here (reflinkat.2: the stock path's limits). */
        printf("reflink path: %s\n", config_reflink_path_text());
        fputs_cescaped(main_file, stdout);
        printf(": configuration OK, %zu job%s%s\n", c->n_jobs, c->n_jobs == 1 ? "" : "s",
               warnings ? "; the warnings above fail their jobs until fixed" : "");
        return 0;
}

const char *config_reflink_path_text(void) {
        return reflink_path() == REFLINK_PATH_STOCK ?
                "stock (no reflinkat(2) in this kernel: O_TMPFILE, FICLONE, linkat)" : "syscall (reflinkat(2))";
}
