/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The set of changed directories (vouch.h): a change covers its
 * directory and every one above it, never a sibling or what lies below
 * it; a directory moved counts at its new path, its old parent too.  The
 * changed inodes: every other one vouched for.  The set as btrfs fills it
 * is in test-snapshot-btrfs.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "tests.h"
#include "vouch.h"

int main(void) {
        Vouch *v = NULL;

        CHECK(vouch_new(&v) == 0);
        if (!v)
                return tests_end();
        /* Not sealed: nothing is vouched for. */
        CHECK(!vouch_covers(v, "a"));
        CHECK(vouch_add_changed(v, "a/b/c") == 0);
        CHECK(vouch_add_changed(v, "a/b/c") == 0);
        CHECK(vouch_add_changed(v, "x") == 0);
        /* A directory moved from m/sub to n/sub: m's entries changed, and sub itself (its link), at its new path. */
        CHECK(vouch_add_changed(v, "m") == 0);
        CHECK(vouch_add_changed(v, "n/sub") == 0);
        vouch_seal(v);
        CHECK(vouch_add_changed(v, "late") == -EINVAL);
        /* "", a, a/b, a/b/c, x, m, n, n/sub */
        CHECK(vouch_n_changed(v) == 8);
        /* The root always changed; the change and every directory above it. */
        CHECK(!vouch_covers(v, ""));
        CHECK(!vouch_covers(v, "a") && !vouch_covers(v, "a/b") && !vouch_covers(v, "a/b/c"));
        /* Below the change: nothing there changed (c's own entries are compared, c is walked). */
        CHECK(vouch_covers(v, "a/b/c/d"));
        /* Siblings, and names that only begin like a changed one. */
        CHECK(vouch_covers(v, "a/bb") && vouch_covers(v, "a/b-c") && vouch_covers(v, "a/c") && vouch_covers(v, "y"));
        CHECK(!vouch_covers(v, "x") && vouch_covers(v, "x/y"));
        /* The move: both ends walked; below the moved directory nothing changed. */
        CHECK(!vouch_covers(v, "m") && !vouch_covers(v, "n") && !vouch_covers(v, "n/sub"));
        CHECK(vouch_covers(v, "n/sub/deep") && vouch_covers(v, "m/other"));
        /* No set: nothing is vouched for. */
        CHECK(!vouch_covers(NULL, "y"));
        /* Given no inode: no inode is vouched for. */
        CHECK(!vouch_inode_unchanged(v, 5));
        vouch_free(v);

        /* The inodes that changed: every other one is vouched for, once sealed. */
        v = NULL;
        CHECK(vouch_new(&v) == 0);
        if (!v)
                return tests_end();
        for (uint64_t ino = 256; ino < 256 + 3000; ino += 3)
                CHECK(vouch_add_inode(v, ino) == 0);
        CHECK(vouch_add_inode(v, 256) == 0);
        CHECK(vouch_add_inode(v, 0) == -EINVAL);
        CHECK(!vouch_inode_unchanged(v, 257));
        vouch_seal(v);
        CHECK(vouch_add_inode(v, 9) == -EINVAL);
        CHECK(!vouch_inode_unchanged(v, 256) && !vouch_inode_unchanged(v, 256 + 2997));
        CHECK(vouch_inode_unchanged(v, 257) && vouch_inode_unchanged(v, 258) && vouch_inode_unchanged(v, 1u << 20));
        CHECK(!vouch_inode_unchanged(v, 0) && !vouch_inode_unchanged(NULL, 257));
        vouch_free(v);
        return tests_end();
}
