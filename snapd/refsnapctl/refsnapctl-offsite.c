/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * refsnapctl offsite JOB [--force] [--force-every=N]: the job's newest
 * snapshot ("latest": the newest that is not a guard, read from the
 * store's listing, never through its latest link) backed up with
 * restic(1) from a fixed path, /run/refsnap-offsite/JOB.
 *
 * Restic takes as parent the last snapshot of the same host and path,
 * and reads a file again unless its size, mtime, inode and ctime are
 * those of the parent's.  Every refsnap snapshot is a new directory of
 * new inodes: backed up by its own path, every byte would be read every
 * time.  So, in a mount namespace of its own (unshare(CLONE_NEWNS), every
 * mount a slave of the host's), the snapshot is cloned as a detached
 * mount (open_tree(2) on the descriptor the store's listing opened, no
 * path walked again), made read-only, nosuid, nodev and noexec before it
 * is attached (mount_setattr(2)), and moved onto a tmpfs of this
 * namespace at the fixed path; restic backs that up with --ignore-inode
 * (and --ignore-ctime): a file whose size and mtime are the parent's is
 * not read.  Nothing of it is visible outside the namespace, and the
 * mounts go with the process.
 *
 * What restic says is read from its --json output: each error is passed
 * on (as restic's JSON, which escapes every name), its summary printed
 * as it is and as one line of report, with what restic read
 * (/proc/PID/io, read after it exited, before it is reaped).
 *
 * --force-every=N: every Nth run is a full read (restic --force); the
 * runs since the last full read are counted in
 * $STATE_DIRECTORY/JOB.runs (/var/lib/refsnap-offsite without it).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit-status.h"
#include "fd-util.h"
#include "format-util.h"
#include "macro.h"
#include "refsnapctl-util.h"
#include "refsnapctl.h"
#include "store.h"

#define OFFSITE_RUN_DIR "/run/refsnap-offsite"
#define OFFSITE_STATE_DIR "/var/lib/refsnap-offsite"

/* The number after "key": in a line of restic's JSON summary (flat), or -1. */
static double json_number(const char *line, const char *key) {
        char pat[64];
        const char *p;
        char *end;
        double v;

        snprintf(pat, sizeof(pat), "\"%s\":", key);
        p = strstr(line, pat);
        if (!p)
                return -1;
        v = strtod(p + strlen(pat), &end);
        return end == p + strlen(pat) ? -1 : v;
}

/* The string after "key": (restic's snapshot ID: hex digits only), into buf; "" when absent. */
static const char *json_id(const char *line, const char *key, char *buf, size_t size) {
        char pat[64];
        const char *p;
        size_t n = 0;

        snprintf(pat, sizeof(pat), "\"%s\":\"", key);
        buf[0] = 0;
        p = strstr(line, pat);
        if (!p)
                return buf;
        for (p += strlen(pat); n + 1 < size && strchr("0123456789abcdef", *p) && *p; p++)
                buf[n++] = *p;
        buf[n] = 0;
        return buf;
}

/*
 * rchar and read_bytes of process pid, from /proc/PID/io: 0, or -errno
 * (-ENOENT: a kernel without CONFIG_TASK_IO_ACCOUNTING has no such file).
 */
static int proc_io(pid_t pid, uint64_t *rchar, uint64_t *read_bytes) {
        char path[64], line[128];
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long v;
        int found = 0;

        *rchar = *read_bytes = 0;
        snprintf(path, sizeof(path), "/proc/%d/io", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                if (sscanf(line, "rchar: %llu", &v) == 1) {
                        *rchar = v;
                        found |= 1;
                } else if (sscanf(line, "read_bytes: %llu", &v) == 1) {
                        *read_bytes = v;
                        found |= 2;
                }
        }
        return found == 3 ? 0 : -ENODATA;
}

/* The state directory, made when missing (mode 0700); a descriptor, or -errno. */
static int open_state_dir(void) {
        const char *dir = getenv("STATE_DIRECTORY");
        int fd;

        /* systemd may list several, separated by ':'; there is one in the unit. */
        if (!dir || !*dir || strchr(dir, ':'))
                dir = OFFSITE_STATE_DIR;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* The runs since the last full read: 0 when never counted. */
static unsigned read_runs(int dir, const char *file) {
        _cleanup_close_ int fd = openat(dir, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        char buf[32] = {};
        unsigned v = 0;

        if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0 || sscanf(buf, "%u", &v) != 1)
                return 0;
        return v;
}

/* Write the count through a temp file and a rename. */
static int write_runs(int dir, const char *file, unsigned v) {
        char tmp[NAME_MAX + 8], buf[32];
        _cleanup_close_ int fd = -EBADF;
        int len;

        snprintf(tmp, sizeof(tmp), ".%s.tmp", file);
        fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        len = snprintf(buf, sizeof(buf), "%u\n", v);
        if (write(fd, buf, len) != len || renameat(dir, tmp, dir, file) < 0) {
                int r = errno ? -errno : -EIO;

                (void) unlinkat(dir, tmp, 0);
                return r;
        }
        return 0;
}

/*
 * In a mount namespace of this process's own, the snapshot (snap, a
 * directory descriptor) read-only at OFFSITE_RUN_DIR/job.  Returns 0 or
 * -errno, having said why.
 */
static int mount_snapshot(const char *job, int snap, const char *target) {
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        };
        _cleanup_close_ int tree = -EBADF, run = -EBADF;
        const char *what;

        /*
         * Cloned in the namespace the store was opened in (open_tree()
         * clones only a mount of the caller's namespace), detached; it
         * may be attached in another.
         */
        what = "cloning the snapshot's mount (open_tree)";
        tree = open_tree(snap, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
        if (tree < 0)
                goto fail;
        what = "making it read-only, nosuid, nodev, noexec (mount_setattr)";
        if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                goto fail;
        what = "unshare(CLONE_NEWNS)";
        if (unshare(CLONE_NEWNS) < 0)
                goto fail;
        what = "making every mount a slave";
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                goto fail;
        what = "mkdir " OFFSITE_RUN_DIR;
        if (mkdir(OFFSITE_RUN_DIR, 0755) < 0 && errno != EEXIST)
                goto fail;
        /* A tmpfs of this namespace over it: what is made in it is seen nowhere else. */
        what = "mounting a tmpfs on " OFFSITE_RUN_DIR;
        if (mount("refsnap-offsite", OFFSITE_RUN_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "mode=0755,size=64k") < 0)
                goto fail;
        what = "opening " OFFSITE_RUN_DIR;
        run = open(OFFSITE_RUN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (run < 0)
                goto fail;
        what = "making the mount point";
        if (mkdirat(run, job, 0755) < 0)
                goto fail;
        what = "attaching it (move_mount)";
        if (move_mount(tree, "", run, job, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                goto fail;
        return 0;
fail:;
        int r = -errno;

        fprintf(stderr, "refsnapctl: %s: cannot mount the snapshot at %s: %s: %s\n", job, target, what,
                strerror(-r));
        return r;
}

/*
 * The report of restic's summary line, and the summary itself, on
 * stdout; io: what proc_io() returned.
 */
static void report(const char *job, const char *name, const char *line, double secs, bool force, int io,
                   uint64_t rchar, uint64_t read_bytes) {
        char id[32], processed[16], added[16], rc[16], rb[16], read[96];

        if (io >= 0)
                snprintf(read, sizeof(read), "restic read %s (%s from storage)",
                         format_bytes(rchar, rc, sizeof(rc)), format_bytes(read_bytes, rb, sizeof(rb)));
        else
                snprintf(read, sizeof(read), "what restic read is unknown (/proc/PID/io: %s)", strerror(-io));
        printf("%s\n", line);
        printf("%s: snapshot %s backed up%s to restic snapshot %s in %.1f s: %.0f files (%.0f new, %.0f changed, "
               "%.0f unmodified), %s processed, %s added; %s\n",
               job, name, force ? " with a full read (--force)" : "",
               *json_id(line, "snapshot_id", id, sizeof(id)) ? id : "?", secs,
               json_number(line, "total_files_processed"), json_number(line, "files_new"),
               json_number(line, "files_changed"), json_number(line, "files_unmodified"),
               format_bytes((uint64_t) json_number(line, "total_bytes_processed"), processed, sizeof(processed)),
               format_bytes((uint64_t) json_number(line, "data_added"), added, sizeof(added)), read);
        if (io >= 0)
                printf("%s: restic read_chars=%" PRIu64 " read_bytes=%" PRIu64 "\n", job, rchar, read_bytes);
}

/*
 * restic backup of target, its output read here.  Returns an exit
 * status: EXIT_OK, EXIT_PARTIAL (restic's 3: some files could not be
 * read; the snapshot in the repository lacks them), EXIT_FAILED.
 */
static int run_restic(const char *job, const char *name, const char *target, bool force) {
        char host[HOST_NAME_MAX + 1], when[32];
        _cleanup_free_ char *line = NULL, *summary = NULL;
        _cleanup_fclose_ FILE *out = NULL;
        const char *argv[24], *h = getenv("REFSNAP_OFFSITE_HOST");
        struct timespec t0, t1;
        uint64_t rchar, read_bytes;
        int pipefd[2], n = 0, status = 0, io;
        siginfo_t si = {};
        struct utsname u;
        size_t size = 0;
        struct tm tm;
        time_t t;
        pid_t pid;

        if (h && *h)
                snprintf(host, sizeof(host), "%s", h);
        else
                snprintf(host, sizeof(host), "%s", uname(&u) == 0 ? u.nodename : "localhost");
        argv[n++] = "restic";
        argv[n++] = "backup";
        argv[n++] = "--json";
        argv[n++] = "--ignore-inode";
        argv[n++] = "--ignore-ctime";
        argv[n++] = "--tag";
        argv[n++] = "refsnap";
        argv[n++] = "--tag";
        argv[n++] = job;
        argv[n++] = "--host";
        argv[n++] = host;
        /* The snapshot's own time, in restic's local-time format. */
        if (snapshot_name_time(name, &t) >= 0 && localtime_r(&t, &tm) &&
            strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm) > 0) {
                argv[n++] = "--time";
                argv[n++] = when;
        }
        if (force)
                argv[n++] = "--force";
        argv[n++] = target;
        argv[n] = NULL;

        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                fprintf(stderr, "refsnapctl: %s: pipe: %s\n", job, strerror(errno));
                return EXIT_FAILED;
        }
        fflush(stdout);
        fflush(stderr);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "refsnapctl: %s: fork: %s\n", job, strerror(errno));
                safe_close(pipefd[0]);
                safe_close(pipefd[1]);
                return EXIT_FAILED;
        }
        if (pid == 0) {
                if (dup2(pipefd[1], STDOUT_FILENO) < 0)
                        _exit(127);
                execvp("restic", (char **) argv);
                fprintf(stderr, "refsnapctl: %s: cannot run restic: %s\n", job, strerror(errno));
                _exit(127);
        }
        safe_close(pipefd[1]);
        out = fdopen(pipefd[0], "re");
        if (!out)
                safe_close(pipefd[0]);
        while (out && getline(&line, &size, out) > 0) {
                line[strcspn(line, "\n")] = 0;
                if (strstr(line, "\"message_type\":\"status\""))
                        continue;
                if (!summary && strstr(line, "\"message_type\":\"summary\"")) {
                        clock_gettime(CLOCK_MONOTONIC, &t1);
                        summary = strdup(line);
                        continue;
                }
                /* An error (its names escaped by JSON), or any other line. */
                fprintf(stderr, "%s: restic: %s\n", job, line);
        }
        /* Exited, not reaped: its /proc/PID/io is still there. */
        while (waitid(P_PID, pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
                ;
        io = proc_io(pid, &rchar, &read_bytes);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (summary)
                report(job, name, summary, (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
                       force, io, rchar, read_bytes);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && summary)
                return EXIT_OK;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
                fprintf(stderr, "refsnapctl: %s: partial: restic could not read some files of snapshot %s "
                        "(each named above); the copy lacks them\n", job, name);
                return EXIT_PARTIAL;
        }
        if (WIFSIGNALED(status))
                fprintf(stderr, "refsnapctl: %s: restic was killed by signal %d\n", job, WTERMSIG(status));
        else
                fprintf(stderr, "refsnapctl: %s: restic backup failed (exit status %d)\n", job,
                        WEXITSTATUS(status));
        return EXIT_FAILED;
}

int verb_offsite(int argc, char *argv[]) {
        _cleanup_config_free_ Config *c = NULL;
        _cleanup_close_ int store = -EBADF, snap = -EBADF, state = -EBADF;
        char name[SNAPSHOT_NAME_MAX], target[PATH_MAX], runs_file[NAME_MAX + 1];
        SnapshotFacts f = {};
        unsigned runs = 0;
        bool force = arg_force;
        const Job *job;
        int r, ret;

        if (argc != 2) {
                fprintf(stderr, "refsnapctl: usage: offsite JOB [--force] [--force-every=N]\n");
                return EXIT_USAGE;
        }
        r = open_job_snapshot(&c, argv[1], "latest", &job, &store, &snap, name);
        if (r != EXIT_OK)
                return r;
        /* A job name is letters, digits, '_', '.' and '-', never starting with '.': a file name. */
        snprintf(target, sizeof(target), OFFSITE_RUN_DIR "/%s", job->name);
        snprintf(runs_file, sizeof(runs_file), "%s.runs", job->name);
        if (store_read_facts(store, name, &f) >= 0 && f.skipped > 0)
                fprintf(stderr, "refsnapctl: %s: snapshot %s is partial (%llu files skipped, refsnapctl list "
                        "%s): backing up what it holds\n", job->name, name, (unsigned long long) f.skipped,
                        job->name);
        if (arg_force_every > 0) {
                state = open_state_dir();
                if (state < 0) {
                        fprintf(stderr, "refsnapctl: %s: the state directory: %s\n", job->name, strerror(-state));
                        return EXIT_FAILED;
                }
                runs = read_runs(state, runs_file);
                if (runs + 1 >= arg_force_every)
                        force = true;
        }
        store = safe_close(store);
        r = mount_snapshot(job->name, snap, target);
        if (r < 0)
                return exit_status_from_errno(r);
        snap = safe_close(snap);
        printf("%s: backing up snapshot %s from %s%s\n", job->name, name, target,
               force ? " with a full read (--force)" : "");
        ret = run_restic(job->name, name, target, force);
        if (ret == EXIT_OK && state >= 0) {
                r = write_runs(state, runs_file, force ? 0 : runs + 1);
                if (r < 0)
                        fprintf(stderr, "refsnapctl: %s: cannot count the run in %s: %s\n", job->name,
                                runs_file, strerror(-r));
        }
        return ret;
}
