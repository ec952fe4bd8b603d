/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/*
 * Change watching with fanotify: one filesystem mark per filesystem that
 * holds a job's source, with directory file handles in the events, so a
 * tree of any size costs no watches (inotify would need one per
 * directory and run out).  Each event names the directory that changed;
 * the callback gets its path.
 */
typedef struct Watch Watch;

/* Called with the path of a changed directory and the pid that changed it. */
typedef void (*watch_cb)(const char *dir, pid_t pid, void *userdata);

int watch_new(Watch **ret);
Watch *watch_free(Watch *w);
int watch_fd(const Watch *w);
int watch_add(Watch *w, const char *path);

/*
 * Drop the marks (and the descriptors that keep their filesystems busy)
 * of every filesystem none of paths lies on, so that a filesystem whose
 * jobs are gone can be unmounted.
 */
void watch_retain(Watch *w, const char *const *paths, size_t n);

/*
 * Read the pending events.  resolve: whether anyone still cares where a
 * change happened; when false the events are only drained.  Returns 1
 * when the kernel's queue overflowed (anything may have changed).
 */
int watch_process(Watch *w, bool resolve, watch_cb cb, void *userdata);
