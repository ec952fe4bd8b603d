/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "timespan.h"

/*
 * Change watching with fanotify, one group per filesystem (so a burst or
 * an overflow on one filesystem concerns only the jobs on it), each with
 * a filesystem-wide mark and directory file handles in its events: a
 * tree of any size costs no watches (inotify would need one per
 * directory and run out).
 *
 * The mark is placed through the filesystem's root where it can be had:
 * a btrfs subvolume refuses a filesystem mark of its own (EXDEV, also
 * where a job's source is the root of a mounted subvolume), so for btrfs
 * the top-level subvolume's root directory is reached by a file handle
 * through the job's own mount and cloned (open_tree(2)) into a detached
 * mount visible to nobody, from which ".." climbs from every directory of
 * the filesystem, whichever mount or subvolume a job names it through.
 * No block device is opened (the unit's device policy would refuse it).
 * Elsewhere the job's own mount is used.
 *
 * Nothing on a watched filesystem is held open between batches of events
 * (the mark does not keep it busy): each batch finds its root again from
 * a job's source path, so that after umount its device can be removed.
 *
 * The watch does not decide which job a change belongs to: it hands the
 * changed directory over as a descriptor, with the entry's name, and the
 * attribution (refsnapd-attribution.h) tells by inode identity, never by
 * path.
 */
typedef struct Watch Watch;
typedef struct WatchFs WatchFs;

typedef struct WatchCallbacks {
        /* pid is the daemon's own (a worker, a prune): its events are dropped, undecoded. */
        bool (*own)(pid_t pid, void *userdata);
        /*
         * Should changed directories be decoded at all (false when every job
         * on fs counts as changed already: the events are only drained)?
         */
        bool (*wanted)(const WatchFs *fs, void *userdata);
        /*
         * A directory on fs was renamed or removed, so what lies under what
         * may have changed: told for every such event, before own() and
         * wanted(), whether or not it is decoded.
         */
        void (*moved)(const WatchFs *fs, void *userdata);
        /*
         * The entry name (NULL: the directory itself) of the directory
         * dir_fd (O_PATH) changed.  dir_fd is the changed file itself when
         * the kernel had no directory for it.  Returns how many directories
         * telling whose change it was took (1 or more): past 100,000
         * of them since the queue was last empty, the filesystem's jobs
         * count as changed and the rest is read undecoded, as past 10,000
         * decoded events.
         */
        unsigned (*changed)(const WatchFs *fs, int dir_fd, const char *name, void *userdata);
        /*
         * Something on fs changed that cannot be attributed (a handle that does
         * not decode); lost: events themselves were lost (an overflow, a read
         * error) or left unread (watch_drain()).
         */
        void (*unknown)(const WatchFs *fs, const char *why, bool lost, void *userdata);
} WatchCallbacks;

/*
 * bounded: each group's queue holds what the kernel's
 * fs.fanotify.max_queued_events allows (read when the group is made), and
 * overflows past it (every job on that filesystem then counts as changed);
 * otherwise the queue is unlimited, its memory charged to the daemon's
 * cgroup but allocated __GFP_NOFAIL, so that no cgroup limit bounds it.
 */
int watch_new(bool bounded, Watch **ret);
bool watch_is_bounded(const Watch *w);
Watch *watch_free(Watch *w);

/* One descriptor for the event loop: readable when any group has events. */
int watch_fd(const Watch *w);

/*
 * Watch the filesystem of the directory dir_fd (a job's source, named
 * path).  *ret is that filesystem's watch, shared by every job on it; one
 * already there is marked again (a filesystem mounted anew is another to
 * the kernel).  Nothing on the filesystem is kept open: at each batch of
 * events the latest path given is opened again to decode them.
 */
int watch_add(Watch *w, int dir_fd, const char *path, WatchFs **ret);

/* The fanotify group of fs (what watch_quiet_dir() takes). */
int watch_fs_group(const WatchFs *fs);

/*
 * The daemon's own worker, writing a snapshot: its group (a descriptor
 * of it, inherited over fork) told to ignore every change in the
 * directory dir_fd and of its entries (an evictable inode mark of the
 * kernel's FAN_MARK_IGNORE, 6.0 and later), so that the kernel does not
 * build, queue and hand the daemon an event for each link or file the
 * walk makes there (two a file on XFS: the entry, and the link count of
 * the previous snapshot's inode, which stays), each read and dropped as
 * the daemon's own.  Nothing is lost: only the snapshot's own
 * directories are marked, in the root-only store, where the walk's
 * changes were never any job's.  -errno when the kernel refuses (older
 * than 6.0: EINVAL); the caller stops asking.
 */
int watch_quiet_dir(int group, int dir_fd);
/* Every directory so marked in group made to count again (the worker's end: FAN_MARK_FLUSH of the inode marks). */
int watch_quiet_end(int group);

/* Drop the groups (and the mounts that keep their filesystems busy) of every filesystem not in keep. */
void watch_retain(Watch *w, WatchFs *const *keep, size_t n);

/*
 * Read a bounded batch of pending events of every group that has some (so
 * a busy filesystem never starves the event loop: the descriptor stays
 * readable and the loop calls again).  Returns 0 or -errno.
 */
int watch_process(Watch *w, const WatchCallbacks *cb, void *userdata);

/*
 * Read every queued event now, for at most budget: what the decision at a
 * due time must have seen.  The rest of a queue not empty by then is left
 * for later, and with backlog_unknown its group told unknown() (lost:
 * true).  Returns 0 when every queue was read to its end, 1 when
 * something was left, or -errno.
 */
int watch_drain(Watch *w, usec_t budget, bool backlog_unknown, const WatchCallbacks *cb, void *userdata);

/* How the filesystem is watched: "the filesystem root", or "the source's mount". */
const char *watch_fs_how(const WatchFs *fs);
