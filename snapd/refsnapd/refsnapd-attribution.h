/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "stat-util.h"

/*
 * Which jobs a change belongs to, by inode identity, never by path: the
 * changed directory's ".." chain is walked up and each directory compared
 * with the jobs' sources.  A source named through a symbolic link,
 * reached through a bind mount, or "/" itself, is the same inode whatever
 * the path.  The rules:
 *
 * - a directory at or below a source belongs to its job; one whose walk
 *   reaches the root it was decoded against without meeting a source
 *   belongs to none;
 * - a walk that has met neither that root nor a directory whose answer
 *   is cached within max_depth steps is unknown (every job on the
 *   filesystem changed), never "no job";
 * - a change on a non-directory with more than one link is unknown:
 *   another of its names may lie in any source (cp -al, pnpm, ccache);
 *   so is a change on a non-directory reported without its directory;
 * - answers are cached per directory (a bit per source, up to 64
 *   sources), negative ones too, until attribution_forget(), which the
 *   caller calls whenever a directory is moved or removed (whether or not
 *   that event was decoded), events were lost, or a source is watched
 *   anew; attribution_set_sources() forgets as well.
 */
typedef struct Attribution Attribution;

typedef enum AttributionVerdict {
        ATTRIBUTION_JOBS,       /* hits[] says which (perhaps none) */
        ATTRIBUTION_UNKNOWN,    /* every job on the filesystem; *ret_why says why */
} AttributionVerdict;

int attribution_new(unsigned max_depth, Attribution **ret);
Attribution *attribution_free(Attribution *a);

/*
 * The sources by identity, index i answering in hits[i]; an id with
 * ino 0 is no source (a job not watched).  Forgets every cached answer.
 */
int attribution_set_sources(Attribution *a, const FileId *sources, size_t n);
size_t attribution_n_sources(const Attribution *a);

/* Forget every cached answer. */
void attribution_forget(Attribution *a);

/*
 * A change of entry name (NULL or ".": the directory itself) in the
 * directory dir_fd (O_PATH; the descriptor an event decoded to, which may
 * be the changed file itself when the kernel had no directory for it).
 * hits has attribution_n_sources() entries; each is set true for a
 * source the change lies under and left alone otherwise.
 */
AttributionVerdict attribution_find(Attribution *a, int dir_fd, const char *name, bool *hits,
                                    const char **ret_why);

/*
 * How many directories the last attribution_find() looked at (0 to
 * max_depth + 1): its cost, which the caller bounds under a flood.
 */
unsigned attribution_walked(const Attribution *a);
