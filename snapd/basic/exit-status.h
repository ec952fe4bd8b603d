/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <errno.h>

/*
 * The exit statuses of refsnap's programs, in one table: the manual
 * pages of refsnapctl(8), refsnapd(8) and reflink(1) list the same.
 */
enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,        /* the operation failed */
        EXIT_USAGE = 2,         /* bad command line */

        /* refsnapctl */
        EXIT_NOT_RUNNING = 3,   /* status, snapshot: refsnapd is not running */
        EXIT_NOT_FOUND = 4,     /* no such job, snapshot or path */
        EXIT_DENIED = 5,        /* not permitted */

        /* refsnapd --run-once, and its snapshot workers */
        EXIT_SKIPPED = 3,       /* the pre_snapshot hook failed */
        EXIT_CANCELLED = 4,     /* stopped before it was complete */

        /* both: a snapshot was made, but some files were skipped (partial) */
        EXIT_PARTIAL = 6,

        /* refsnapctl snapshot --if-changed: unchanged since the last snapshot, none taken */
        EXIT_UNCHANGED = 7,
};

/* EXIT_DENIED for "not permitted", EXIT_FAILED for any other -errno. */
static inline int exit_status_from_errno(int r) {
        return r == -EACCES || r == -EPERM ? EXIT_DENIED : EXIT_FAILED;
}
