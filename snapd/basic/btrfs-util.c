/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <stdio.h>
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

int fd_is_btrfs(int fd) {
        struct statfs sf;

        if (fstatfs(fd, &sf) < 0)
                return -errno;
        return sf.f_type == BTRFS_SUPER_MAGIC;
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
        _cleanup_close_ int dir = -EBADF;
        uint64_t flags = 0;
        int r;

        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        if (ioctl(dir, BTRFS_IOC_SUBVOL_GETFLAGS, &flags) < 0)
                return -errno;
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
        _cleanup_close_ int dir = -EBADF;
        int r;

        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        if (ioctl(dir, BTRFS_IOC_INO_LOOKUP, &args) < 0)
                return -errno;
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
        _cleanup_close_ int dir = -EBADF;
        int r;

        if (id < BTRFS_FIRST_FREE_OBJECTID)
                return -EINVAL;         /* the top level and the filesystem's own trees: never */
        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        return ioctl(dir, BTRFS_IOC_SNAP_DESTROY_V2, &args) < 0 ? -errno : 0;
}

int btrfs_sync(int fd) {
        _cleanup_close_ int dir = -EBADF;
        int r;

        r = reopen_dir(fd, &dir);
        if (r < 0)
                return r;
        return ioctl(dir, BTRFS_IOC_SYNC) < 0 ? -errno : 0;
}
