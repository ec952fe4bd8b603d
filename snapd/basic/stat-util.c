/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/btrfs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "fd-util.h"
#include "hash-util.h"
#include "stat-util.h"

/* <linux/fs.h> of Linux 6.5, which older headers lack. */
struct fs_uuid2 {
        uint8_t len;
        uint8_t uuid[16];
};
#ifndef FS_IOC_GETFSUUID
#define FS_IOC_GETFSUUID _IOR(0x15, 0, struct fs_uuid2)
#endif

/* XFS's geometry, version 1 (<xfs/xfs_fs.h>): where its UUID is on kernels without FS_IOC_GETFSUUID (before 6.5). */
struct xfs_geom_v1 {
        uint32_t blocksize, rtextsize, agblocks, agcount, logblocks, sectsize, inodesize, imaxpct;
        uint64_t datablocks, rtblocks, rtextents, logstart;
        unsigned char uuid[16];
        uint32_t sunit, swidth;
        int32_t version;
        uint32_t flags, logsectsize, rtsectsize, dirblocksize;
};
#define XFS_GEOMETRY_V1 _IOR('X', 100, struct xfs_geom_v1)
#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif

void stat_from_statx(struct stat *st, const struct statx *x) {
        *st = (struct stat) {
                .st_dev = makedev(x->stx_dev_major, x->stx_dev_minor),
                .st_ino = x->stx_ino,
                .st_mode = x->stx_mode,
                .st_nlink = x->stx_nlink,
                .st_uid = x->stx_uid,
                .st_gid = x->stx_gid,
                .st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor),
                .st_size = x->stx_size,
                .st_atim = { x->stx_atime.tv_sec, x->stx_atime.tv_nsec },
                .st_mtim = { x->stx_mtime.tv_sec, x->stx_mtime.tv_nsec },
                .st_ctim = { x->stx_ctime.tv_sec, x->stx_ctime.tv_nsec },
        };
}

uint64_t fs_identity_boot_local(dev_t dev) {
        char boot[64] = "";
        uint64_t d = dev, h = fnv(FNV_INIT, "boot", 5);
        int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

        if (fd >= 0) {
                ssize_t n = read(fd, boot, sizeof(boot) - 1);

                if (n > 0)
                        boot[n] = '\0';
                close(fd);
        }
        h = fnv(h, boot, strlen(boot));
        return fnv(h, &d, sizeof(d));
}

int fd_is_fs_type(int fd, uint64_t magic) {
        struct statfs sf;

        if (fstatfs(fd, &sf) < 0)
                return -errno;
        return (uint64_t) sf.f_type == magic;
}

int fs_identity(int dir_fd, dev_t dev, uint64_t *ret) {
        _cleanup_close_ int dir = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct btrfs_ioctl_fs_info_args info = {};
        struct fs_uuid2 u = { .len = sizeof(u.uuid) };
        struct statfs sf;
        uint64_t id, h;

        if (dir < 0 || fstatfs(dir, &sf) < 0)
                goto boot_local;
        if ((uint64_t) sf.f_type == BTRFS_SUPER_MAGIC) {
                if (ioctl(dir, BTRFS_IOC_FS_INFO, &info) < 0 || btrfs_subvol_get_id(dir, &id) < 0)
                        goto boot_local;
                h = fnv(FNV_INIT, "btrfs", 6);
                h = fnv(h, info.fsid, sizeof(info.fsid));
                *ret = fnv(h, &id, sizeof(id));
                return 1;
        }
        if (ioctl(dir, FS_IOC_GETFSUUID, &u) < 0 || u.len == 0 || u.len > sizeof(u.uuid)) {
                struct xfs_geom_v1 g = {};

                /* Before Linux 6.5: XFS says it in its geometry; ext4's f_fsid is made of its UUID. */
                if ((uint64_t) sf.f_type == XFS_SUPER_MAGIC && ioctl(dir, XFS_GEOMETRY_V1, &g) >= 0) {
                        u.len = sizeof(g.uuid);
                        memcpy(u.uuid, g.uuid, sizeof(g.uuid));
                } else if ((uint64_t) sf.f_type == EXT4_SUPER_MAGIC) {
                        u.len = sizeof(sf.f_fsid);
                        memcpy(u.uuid, &sf.f_fsid, sizeof(sf.f_fsid));
                } else
                        goto boot_local;
        }
        for (size_t i = 0; i < u.len; i++)
                if (u.uuid[i] != 0) {
                        uint64_t type = (uint64_t) sf.f_type;

                        h = fnv(FNV_INIT, "uuid", 5);
                        h = fnv(h, &type, sizeof(type));
                        *ret = fnv(h, u.uuid, u.len);
                        return 1;
                }
boot_local:
        *ret = fs_identity_boot_local(dev);
        return 0;
}
