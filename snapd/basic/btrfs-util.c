/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "dirent-util.h"
#include "fd-util.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "stat-util.h"

int fd_is_btrfs(int fd) {
        return fd_is_fs_type(fd, BTRFS_SUPER_MAGIC);
}

int btrfs_is_subvol_fd(int fd) {
        struct statx x;
        int r;

        r = fd_is_btrfs(fd);
        if (r <= 0)
                return r;
        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO, &x) < 0)
                return -errno;
        return S_ISDIR(x.stx_mode) && x.stx_ino == BTRFS_FIRST_FREE_OBJECTID;
}

int btrfs_is_subvol_at(int dir_fd, const char *name) {
        struct statx x;
        uint64_t mnt;
        int r;

        if (!name || !*name || strchr(name, '/') || dot_or_dot_dot(name))
                return -EINVAL;
        r = statx_no_xdev(dir_fd, name, STATX_TYPE | STATX_INO | STATX_MNT_ID, &x);
        if (r < 0)
                return r;
        r = fd_mount_id(dir_fd, &mnt);
        if (r < 0)
                return r;
        /* On one mount, one superblock: the child is on btrfs when its directory is. */
        r = fd_is_btrfs(dir_fd);
        if (r <= 0)
                return r;
        return S_ISDIR(x.stx_mode) && x.stx_ino == BTRFS_FIRST_FREE_OBJECTID && x.stx_mnt_id == mnt;
}

/* fd as a descriptor an ioctl takes (an O_PATH one reopened): a new one into *ret, or -errno. */
static int reopen_dir(int fd, int *ret) {
        *ret = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return *ret < 0 ? -errno : 0;
}

/* ioctl(2) request req with arg on a descriptor reopened from fd: 0 or -errno. */
static int dir_ioctl(int fd, unsigned long req, void *arg) {
        _cleanup_close_ int dir = -EBADF;
        int r;

        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        return ioctl(dir, req, arg) < 0 ? -errno : 0;
}

static int vol_name(struct btrfs_ioctl_vol_args_v2 *args, const char *name) {
        if (!name || !*name || strchr(name, '/') || dot_or_dot_dot(name))
                return -EINVAL;
        if (strlen(name) >= sizeof(args->name))
                return -ENAMETOOLONG;
        strcpy(args->name, name);
        return 0;
}

int btrfs_subvol_make(int dir_fd, const char *name) {
        struct btrfs_ioctl_vol_args_v2 args = {};
        _cleanup_close_ int dir = -EBADF;
        int r;

        r = vol_name(&args, name);
        if (r < 0)
                return r;
        r = reopen_dir(dir_fd, &dir);
        if (r < 0)
                return r;
        return ioctl(dir, BTRFS_IOC_SUBVOL_CREATE_V2, &args) < 0 ? -errno : 0;
}

int btrfs_subvol_snapshot(int src_fd, int dir_fd, const char *name, bool read_only) {
        struct btrfs_ioctl_vol_args_v2 args = { .flags = read_only ? BTRFS_SUBVOL_RDONLY : 0 };
        _cleanup_close_ int dir = -EBADF, src = -EBADF;
        int r;

        r = vol_name(&args, name);
        if (r < 0)
                return r;
        r = reopen_dir(dir_fd, &dir);
        if (r < 0)
                return r;
        r = reopen_dir(src_fd, &src);
        if (r < 0)
                return r;
        args.fd = src;
        return ioctl(dir, BTRFS_IOC_SNAP_CREATE_V2, &args) < 0 ? -errno : 0;
}

int btrfs_subvol_get_read_only(int fd) {
        uint64_t flags = 0;
        int r;

        r = dir_ioctl(fd, BTRFS_IOC_SUBVOL_GETFLAGS, &flags);
        if (r < 0)
                return r;
        return !!(flags & BTRFS_SUBVOL_RDONLY);
}

int btrfs_subvol_set_read_only(int fd, bool read_only) {
        _cleanup_close_ int dir = -EBADF;
        uint64_t flags = 0;
        int r;

        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        if (ioctl(dir, BTRFS_IOC_SUBVOL_GETFLAGS, &flags) < 0)
                return -errno;
        if (!!(flags & BTRFS_SUBVOL_RDONLY) == read_only)
                return 0;
        flags = read_only ? flags | BTRFS_SUBVOL_RDONLY : flags & ~(uint64_t) BTRFS_SUBVOL_RDONLY;
        return ioctl(dir, BTRFS_IOC_SUBVOL_SETFLAGS, &flags) < 0 ? -errno : 0;
}

int btrfs_subvol_get_id(int fd, uint64_t *ret) {
        struct btrfs_ioctl_ino_lookup_args args = { .objectid = BTRFS_FIRST_FREE_OBJECTID };
        int r;

        r = dir_ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args);
        if (r < 0)
                return r;
        *ret = args.treeid;
        return 0;
}

int btrfs_subvol_destroy(int dir_fd, const char *name) {
        struct btrfs_ioctl_vol_args_v2 args = {};
        _cleanup_close_ int dir = -EBADF;
        int r;

        r = vol_name(&args, name);
        if (r < 0)
                return r;
        /* Never anything but a subvolume, a direct child of dir_fd on its mount. */
        r = btrfs_is_subvol_at(dir_fd, name);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOTTY;
        r = reopen_dir(dir_fd, &dir);
        if (r < 0)
                return r;
        if (ioctl(dir, BTRFS_IOC_SNAP_DESTROY_V2, &args) >= 0)
                return 0;
        if (errno == ENOTTY || errno == EOPNOTSUPP) {
                /* Before Linux 5.7: the first version, by name alone. */
                struct btrfs_ioctl_vol_args v1 = {};

                snprintf(v1.name, sizeof(v1.name), "%s", name);
                return ioctl(dir, BTRFS_IOC_SNAP_DESTROY, &v1) < 0 ? -errno : 0;
        }
        return -errno;
}

int btrfs_subvol_destroy_by_id(int fd, uint64_t id) {
        struct btrfs_ioctl_vol_args_v2 args = { .flags = BTRFS_SUBVOL_SPEC_BY_ID, .subvolid = id };

        if (id < BTRFS_FIRST_FREE_OBJECTID)
                return -EINVAL;         /* the top level and the filesystem's own trees: never */
        return dir_ioctl(fd, BTRFS_IOC_SNAP_DESTROY_V2, &args);
}

int btrfs_sync(int fd) {
        return dir_ioctl(fd, BTRFS_IOC_SYNC, NULL);
}

int btrfs_fs_generation(int fd, uint64_t *ret) {
        struct btrfs_ioctl_fs_info_args args = { .flags = BTRFS_FS_INFO_FLAG_GENERATION };
        int r;

        r = dir_ioctl(fd, BTRFS_IOC_FS_INFO, &args);
        if (r < 0)
                return r;
        if (!(args.flags & BTRFS_FS_INFO_FLAG_GENERATION))
                return -EOPNOTSUPP;
        *ret = args.generation;
        return 0;
}

int btrfs_commit(int fd, uint64_t *ret) {
        _cleanup_close_ int dir = -EBADF;
        uint64_t transid = 0;
        int r;

        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        /*
         * Dirty data first (BTRFS_IOC_SYNC: a write's size and extents, and
         * its times, reach the tree at writeback), with a commit; then
         * whatever transaction began meanwhile, and its ID.
         */
        if (ioctl(dir, BTRFS_IOC_SYNC) < 0 || ioctl(dir, BTRFS_IOC_START_SYNC, &transid) < 0 ||
            ioctl(dir, BTRFS_IOC_WAIT_SYNC, &transid) < 0)
                return -errno;
        *ret = transid;
        return 0;
}

/* The next key after (objectid, type, offset), in the search's order; false past the last. */
static bool key_next(struct btrfs_ioctl_search_key *k, uint64_t objectid, uint32_t type, uint64_t offset) {
        k->min_objectid = objectid;
        k->min_type = type;
        k->min_offset = offset;
        if (k->min_offset < UINT64_MAX) {
                k->min_offset++;
                return true;
        }
        k->min_offset = 0;
        if (k->min_type < UINT8_MAX) {
                k->min_type++;
                return true;
        }
        k->min_type = 0;
        if (k->min_objectid < UINT64_MAX) {
                k->min_objectid++;
                return true;
        }
        return false;
}

#define SEARCH_BUF (64 * 1024)

int btrfs_tree_search(int fd, uint64_t tree_id, const struct btrfs_ioctl_search_key *range,
                      btrfs_search_fn fn, void *userdata) {
        _cleanup_free_ struct btrfs_ioctl_search_args_v2 *args = malloc(sizeof(*args) + SEARCH_BUF);
        struct btrfs_ioctl_search_key key = *range;
        _cleanup_close_ int dir = -EBADF;
        int r;

        if (!args)
                return -ENOMEM;
        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        key.tree_id = tree_id;
        for (;;) {
                size_t off = 0;
                struct btrfs_ioctl_search_header h = {};

                args->key = key;
                args->key.nr_items = UINT32_MAX;
                args->buf_size = SEARCH_BUF;
                if (ioctl(dir, BTRFS_IOC_TREE_SEARCH_V2, args) < 0)
                        return -errno;
                if (args->key.nr_items == 0)
                        return 0;
                for (uint32_t i = 0; i < args->key.nr_items; i++) {
                        if (off + sizeof(h) > SEARCH_BUF)
                                return -EIO;
                        memcpy(&h, (const char *) args->buf + off, sizeof(h));
                        if (off + sizeof(h) + h.len > SEARCH_BUF)
                                return -EIO;
                        r = fn(&h, (const char *) args->buf + off + sizeof(h), userdata);
                        if (r != 0)
                                return r < 0 ? r : 0;
                        off += sizeof(h) + h.len;
                }
                if (!key_next(&key, h.objectid, h.type, h.offset) || key.min_objectid > key.max_objectid)
                        return 0;
        }
}

typedef struct InodeWalk {
        int (*fn)(uint64_t ino, void *userdata);
        void *userdata;
        uint64_t min_transid;
        uint64_t last;
} InodeWalk;

/*
 * Each inode with an item in a leaf written since min_transid, once;
 * but not one whose inode item is among them and says it was last
 * written before (btrfs_inode_item.transid): a leaf holds the items of
 * many inodes, and one written for a neighbour's change brings back all
 * of them.  Every change of an inode (its data, size, times, mode,
 * owner, xattrs, a link made or removed) writes its inode item, with the
 * transaction's ID.  An inode whose inode item is not among them (in an
 * older leaf) is reported, as before.
 */
static int on_changed_item(const struct btrfs_ioctl_search_header *h, const void *data, void *userdata) {
        InodeWalk *w = userdata;
        int r;

        if (h->objectid == w->last)
                return 0;
        w->last = h->objectid;
        if (h->type == BTRFS_INODE_ITEM_KEY && h->len >= sizeof(struct btrfs_inode_item)) {
                struct btrfs_inode_item item;

                memcpy(&item, data, sizeof(item));
                if (le64toh(item.transid) < w->min_transid)
                        return 0;
        }
        r = w->fn(h->objectid, w->userdata);
        return r < 0 ? r : 0;   /* only an error stops the walk */
}

int btrfs_changed_inodes(int fd, uint64_t min_transid, int (*fn)(uint64_t ino, void *userdata), void *userdata) {
        InodeWalk w = { .fn = fn, .userdata = userdata, .min_transid = min_transid };

        return btrfs_tree_search(fd, 0, &(struct btrfs_ioctl_search_key) {
                                .min_objectid = BTRFS_FIRST_FREE_OBJECTID,
                                .max_objectid = BTRFS_LAST_FREE_OBJECTID,
                                .max_type = UINT8_MAX,
                                .max_offset = UINT64_MAX,
                                .min_transid = min_transid,
                                .max_transid = UINT64_MAX,
                           }, on_changed_item, &w);
}

typedef struct ParentWalk {
        int (*fn)(uint64_t parent, void *userdata);
        void *userdata;
} ParentWalk;

static int on_ref_item(const struct btrfs_ioctl_search_header *h, const void *data, void *userdata) {
        ParentWalk *w = userdata;

        /* Only an error stops the walk. */
        if (h->type == BTRFS_INODE_REF_KEY) {
                int r = w->fn(h->offset, w->userdata);

                return r < 0 ? r : 0;
        }
        /* INODE_EXTREF: records of (parent, index, name length, name), back to back. */
        for (size_t off = 0; off + sizeof(struct btrfs_inode_extref) <= h->len;) {
                struct btrfs_inode_extref e;
                int r;

                memcpy(&e, (const char *) data + off, sizeof(e));
                r = w->fn(le64toh(e.parent_objectid), w->userdata);
                if (r < 0)
                        return r;
                off += sizeof(e) + le16toh(e.name_len);
        }
        return 0;
}

int btrfs_inode_parents(int fd, uint64_t ino, int (*fn)(uint64_t parent, void *userdata), void *userdata) {
        ParentWalk w = { .fn = fn, .userdata = userdata };

        return btrfs_tree_search(fd, 0, &(struct btrfs_ioctl_search_key) {
                                .min_objectid = ino,
                                .max_objectid = ino,
                                .min_type = BTRFS_INODE_REF_KEY,
                                .max_type = BTRFS_INODE_EXTREF_KEY,
                                .max_offset = UINT64_MAX,
                                .max_transid = UINT64_MAX,
                           }, on_ref_item, &w);
}

int btrfs_inode_path(int fd, uint64_t ino, char **ret) {
        struct btrfs_ioctl_ino_lookup_args args = { .objectid = ino };
        size_t n;
        int r;

        r = dir_ioctl(fd, BTRFS_IOC_INO_LOOKUP, &args);
        if (r < 0)
                return r;
        args.name[sizeof(args.name) - 1] = '\0';
        n = strlen(args.name);
        if (n > 0 && args.name[n - 1] == '/')
                args.name[--n] = '\0';
        *ret = strdup(args.name);
        return *ret ? 0 : -ENOMEM;
}

int btrfs_subvol_child_dirs(int fd, int (*fn)(uint64_t dirid, void *userdata), void *userdata) {
        _cleanup_free_ struct btrfs_ioctl_get_subvol_rootref_args *args = calloc(1, sizeof(*args));
        _cleanup_close_ int dir = -EBADF;
        int r;

        if (!args)
                return -ENOMEM;
        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        for (;;) {
                int k = ioctl(dir, BTRFS_IOC_GET_SUBVOL_ROOTREF, args);

                /* EOVERFLOW: more than one call's worth; the kernel left min_treeid where to go on from. */
                if (k < 0 && errno != EOVERFLOW)
                        return -errno;
                for (unsigned i = 0; i < args->num_items; i++) {
                        r = fn(args->rootref[i].dirid, userdata);
                        if (r < 0)
                                return r;
                }
                if (k >= 0 || args->num_items == 0)
                        return 0;
        }
}
