/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/*
 * A snapshot's manifest: the source as the snapshot took it, one record
 * per entry the snapshot holds, in STORE/.facts/NAME.manifest (beside its
 * facts; written under a hidden temporary name, synced, renamed into
 * place before the facts, removed with them).  The next snapshot of the
 * job compares the source against it: an entry is unchanged when its
 * identity (filesystem, inode), ctime (ns), size, mode (type and permissions)
 * and link count are those recorded at the same path
 * (manifest_entry_unchanged()).  ctime is the basis: every write,
 * truncate, chmod, chown, xattr or ACL change, link, unlink and rename
 * moves it, also a write through a shared mapping (at its first fault
 * after writeback), and no user can set it.
 *
 * What a record holds: the name (length-prefixed bytes: a name may hold a
 * newline or anything but '/' and NUL), dev, ino, ctime (s, ns), mode,
 * nlink, size, flags, and for a directory the length of its children's
 * records.  A record whose ctime was not older than the (coarse) clock
 * when it was looked at is MANIFEST_RACY: a change within the same clock
 * tick after the snapshot took the file could leave the ctime as it was,
 * so it never counts as unchanged (git's "racily clean" entries).
 *
 * Order: depth first; within a directory by name (strcmp, bytes); a
 * directory's record is followed by its children's and carries their
 * length, so a reader passes over a subtree with one seek.  An entry's
 * path is the names of the directory records it is nested in.  The next
 * walk, its own directory's names sorted too, merge-joins directory by
 * directory (ManifestCursor): the manifest is read once, forward only,
 * per thread, and never held: memory is one read buffer per thread
 * (MANIFEST_BUFFER) and two numbers per directory level.  The walk holds
 * the names of the directories it is in (sorted), as before.
 *
 * A walk that shares the root's directories among threads writes one
 * segment per thread (an unnamed temporary file): each a run of whole
 * root-level entries in ascending order (a thread takes the root's
 * directories in order); manifest_writer_finish() merges the runs by
 * root-level name into the file, so the order is that of the names,
 * whatever the threads did.
 *
 * The file: a header (magic, version, the job's key: a hash of the
 * source path and the exclude patterns the walk applied, the walk's start
 * time), the records, a trailer (magic, entries, length, a checksum of
 * everything before it: manifest_checksum()).  manifest_open() checks all
 * of it first, reading the file once: a missing, truncated, damaged,
 * foreign or older-format manifest is "no usable manifest", and the
 * snapshot is a full one.  Numbers are little endian.
 */

#define MANIFEST_SUFFIX ".manifest"
#define MANIFEST_BUFFER (64 * 1024)

/* Never unchanged (see above). */
#define MANIFEST_RACY 0x1u

typedef struct ManifestEntry {
        uint64_t dev;           /* the filesystem's identity (fs_identity()), stable across reboots */
        uint64_t ino;
        int64_t ctime_sec;
        uint32_t ctime_nsec;
        uint32_t mode;          /* type and permissions, as st_mode */
        uint32_t nlink;
        uint32_t flags;         /* MANIFEST_RACY */
        uint64_t size;
        char name[256];         /* NUL-terminated (a file name is at most 255 bytes) */
} ManifestEntry;

/*
 * The record of name, as statx x (STATX_BASIC_STATS) found it, on the
 * filesystem fs_id (fs_identity() of x's device: st_dev is not the same
 * after a reboot, and a snapshot after one would find every entry
 * changed); now is CLOCK_REALTIME_COARSE read after that statx and
 * before the entry's data was taken.  -ENAMETOOLONG for a name of more
 * than 255 bytes.
 */
int manifest_entry_from_statx(ManifestEntry *e, const char *name, const struct statx *x, uint64_t fs_id,
                              const struct timespec *now);

/* Is the entry found as x on fs_id the one prev recorded at the same path, unchanged since? */
bool manifest_entry_unchanged(const ManifestEntry *prev, const struct statx *x, uint64_t fs_id);

/* The trailer's checksum of n bytes (a word at a time: manifest.c says how). */
uint64_t manifest_checksum(const void *data, size_t n);

/* What makes a manifest the job's: its source and the exclude patterns applied (NULL: none). */
uint64_t manifest_job_key(const char *source, char *const *exclude);

/* Reading. */
typedef struct Manifest Manifest;

/*
 * Open and check facts_dir/SNAPSHOT.manifest: 0 and *ret; -ENOENT (none),
 * -EBADMSG (truncated, damaged, not a manifest), -EPROTO (a manifest of
 * another format version), -ESTALE (another key: the job's source or
 * excludes changed since), or another -errno.
 */
int manifest_open(int facts_dir, const char *snapshot, uint64_t key, Manifest **ret);
Manifest *manifest_free(Manifest *m);
uint64_t manifest_entries(const Manifest *m);
/* When the walk that wrote it started (CLOCK_REALTIME, seconds). */
int64_t manifest_started(const Manifest *m);
/*
 * What the filesystem says changed is asked from (vouch.h): the source's
 * filesystem identity (fs_identity()) and its transaction ID before the
 * walk began.  false: none recorded (not btrfs).
 */
bool manifest_base(const Manifest *m, uint64_t *ret_fs, uint64_t *ret_generation);

/* One thread's forward-only reader of a manifest (one buffer); m outlives it. */
typedef struct ManifestReader ManifestReader;
int manifest_reader_new(Manifest *m, ManifestReader **ret);
ManifestReader *manifest_reader_free(ManifestReader *r);

/*
 * A position among one directory's records.  Values: copy freely, but a
 * reader's cursors move forward only, and a cursor must be used
 * depth-first (a directory's children done before its next sibling), as
 * a walk does.
 */
typedef struct ManifestCursor {
        ManifestReader *reader;
        uint64_t pos, end;
} ManifestCursor;

/* The root's entries. */
void manifest_cursor_root(ManifestReader *r, ManifestCursor *ret);

/*
 * Called for each entry find() passes over (not in the source any more,
 * at this path), and by rest() for those left at the end of a directory.
 * Its children, if any, are passed over with it, without a call each.
 */
typedef int (*ManifestGone)(const ManifestEntry *e, void *userdata);

/*
 * The entry called name: names must be asked in ascending order (strcmp)
 * within a directory.  1: *ret is it, and *children (may be NULL) its
 * children (none unless a directory), the cursor past it; 0: none by
 * that name (the cursor before the next greater one); -EBADMSG.
 */
int manifest_cursor_find(ManifestCursor *c, const char *name, ManifestEntry *ret, ManifestCursor *children,
                         ManifestGone gone, void *userdata);
/* The entries after the last one found: each to gone (may be NULL); 0 or -errno. */
int manifest_cursor_rest(ManifestCursor *c, ManifestGone gone, void *userdata);

/* What the records from c on hold, with everything below them (c is not moved). */
typedef struct ManifestCounts {
        uint64_t entries, files, dirs, symlinks, specials, bytes;
        uint64_t multi_link;    /* regular files with more than one link */
} ManifestCounts;
int manifest_cursor_count(const ManifestCursor *c, ManifestCounts *ret);

/* Writing. */
typedef struct ManifestWriter ManifestWriter;
typedef struct ManifestSegment ManifestSegment;

/*
 * A new manifest for snapshot, its segments unnamed temporary files in
 * facts_dir (the store's .facts).  started: the walk's start.
 */
int manifest_writer_new(int facts_dir, const char *snapshot, uint64_t key, int64_t started,
                        ManifestWriter **ret);
/* Frees; a manifest not published is removed (its temporary name). */
ManifestWriter *manifest_writer_free(ManifestWriter *w);

/* A segment for one thread (thread-safe): a run of root-level entries, ascending. */
int manifest_writer_segment(ManifestWriter *w, ManifestSegment **ret);

/* The base recorded in the header (manifest_base()). */
void manifest_writer_set_base(ManifestWriter *w, uint64_t fs, uint64_t generation);

/*
 * The records from c on (another manifest's: a directory's entries, with
 * everything below them, entries of them as manifest_cursor_count() said)
 * as they are, between a directory's dir_begin() and dir_end(): the
 * record of a subtree kept without being walked (vouch.h).
 */
int manifest_segment_copy(ManifestSegment *s, const ManifestCursor *c, uint64_t entries);

/* A record of an entry that is not a directory (or a directory with nothing recorded under it). */
int manifest_segment_add(ManifestSegment *s, const ManifestEntry *e);
/* A directory's record; its children follow, then dir_end() with *token. */
int manifest_segment_dir_begin(ManifestSegment *s, const ManifestEntry *e, uint64_t *token);
int manifest_segment_dir_end(ManifestSegment *s, uint64_t token);

/*
 * All segments written: merge them into facts_dir/.SNAPSHOT.manifest.tmp,
 * with the trailer (not synced: the caller syncs the filesystem between
 * the two, as the snapshot does with its tree).  Then publish() renames it
 * to SNAPSHOT.manifest (before the facts are written).
 */
int manifest_writer_finish(ManifestWriter *w);
int manifest_writer_publish(ManifestWriter *w);
uint64_t manifest_writer_entries(const ManifestWriter *w);
