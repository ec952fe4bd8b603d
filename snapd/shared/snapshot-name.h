/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <time.h>

/*
 * Snapshots are named by their UTC start, 2026-12-03T07:00:00Z, with -NN
 * after a second one within the same second.  Names sort as they were
 * given (strcmp()), and none is given twice: a snapshot started at or
 * before the last name given (the clock stepped back) is named after it
 * (snapshot_name_after()).
 */
#define SNAPSHOT_NAME_MAX 32

bool snapshot_name_valid(const char *name);
int snapshot_name_time(const char *name, time_t *ret);
void snapshot_name_format(time_t t, unsigned seq, char buf[static SNAPSHOT_NAME_MAX]);

/*
 * The name of a snapshot started at t that sorts after floor (NULL: no
 * name given yet): t's own (no suffix) when that is later than floor;
 * else floor's second with the next suffix, -01 after a plain name, and
 * past -99 the second after floor's.  -EINVAL for a floor that is no name.
 */
int snapshot_name_after(time_t t, const char *floor, char buf[static SNAPSHOT_NAME_MAX]);

/*
 * The same with no suffix ever, for a job whose snapshots Samba shows as
 * previous versions (smb_view): its vfs_shadow_copy2 reads a name with
 * shadow:format's strptime(), which stops at the "Z" and takes a -NN
 * name for its second's plain one.  t's own name when later than floor,
 * else the second after floor's (its suffix, from before, dropped), so
 * that a name is never given twice even when the clock stepped back; a
 * snapshot's name may then be a second or more after its start (its
 * facts keep the start).  -EINVAL for a floor that is no name.
 */
int snapshot_name_after_whole(time_t t, const char *floor, char buf[static SNAPSHOT_NAME_MAX]);
