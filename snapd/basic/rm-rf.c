/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrfs-util.h"
#include "chase.h"
#include "dirent-util.h"
#include "fd-util.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "rm-rf.h"
#include "stat-util.h"
#include "strv.h"

int rm_rf_at_cancellable(int dir_fd, const char *name, const volatile sig_atomic_t *cancel) {
        _cleanup_close_ int fd = -EBADF, parent = -EBADF;
        struct statx x;
        struct stat top, st;
        uint64_t mnt;
        struct dirent *de;
        DIR *d;
        int r = 0;

        /* A path: its directories resolved as every other, never through a link. */
        if (strchr(name, '/')) {
                parent = chase_parent(dir_fd, name, &(Chase) { .flags = CHASE_NO_XDEV }, &name);
                if (parent == -ENOENT)
                        return 0;
                if (parent < 0)
                        return parent;
                dir_fd = parent;
        }
        if (dot_or_dot_dot(name))
                return -EINVAL;
        /* Looked at without entering a mount on name (-EXDEV): not ours. */
        r = statx_no_xdev(dir_fd, name, STATX_TYPE | STATX_INO | STATX_MNT_ID, &x);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        stat_from_statx(&top, &x);
        if (!S_ISDIR(top.st_mode))
                return unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT ? -errno : 0;

        /* Opened beneath dir_fd, never through a link, never into a mount. */
        fd = chase_dir(dir_fd, name, &(Chase) { .flags = CHASE_NO_XDEV });
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!stat_inode_same(&st, &top))
                return -ESTALE;         /* swapped under us: leave it */
        r = fd_mount_id(fd, &mnt);
        if (r < 0)
                return r;
        d = opendir_fd(fd);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                struct statx cx;
                int k;

                if (dot_or_dot_dot(de->d_name))
                        continue;
                if (cancel && *cancel) {
                        r = -ECANCELED;
                        break;
                }
                k = statx_no_xdev(fd, de->d_name, STATX_TYPE | STATX_MNT_ID, &cx);
                if (k < 0 && k != -EXDEV)
                        continue;
                if (k == -EXDEV || cx.stx_mnt_id != mnt)
                        k = -EXDEV;     /* a mount inside (a directory or a file): not ours */
                else if (S_ISDIR(cx.stx_mode))
                        k = rm_rf_at_cancellable(fd, de->d_name, cancel);
                else
                        k = unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT ? -errno : 0;
                if (k == -ECANCELED) {
                        r = k;          /* over any earlier error: the caller must know it stopped */
                        break;
                }
                if (k < 0 && r == 0)
                        r = k;
        }
        closedir(d);
        if (r < 0)
                return r;
        return unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int rm_rf_or_subvol_at(int dir_fd, const char *name, const volatile sig_atomic_t *cancel) {
        int r;

        if (strchr(name, '/') || dot_or_dot_dot(name))
                return -EINVAL;
        r = btrfs_is_subvol_at(dir_fd, name);
        if (r == -ENOENT)
                return 0;
        if (r < 0 && r != -EXDEV)
                return r;
        if (r > 0) {
                _cleanup_close_ int fd = -EBADF;

                if (cancel && *cancel)
                        return -ECANCELED;
                /*
                 * A mount inside is never taken down with it (the destroy
                 * would detach it): the subvolume is left, as rm_rf_at()
                 * leaves what holds a mount, and -EXDEV said.
                 */
                fd = open_no_xdev(dir_fd, name, O_PATH | O_DIRECTORY);
                if (fd < 0)
                        return fd == -ENOENT ? 0 : fd;
                r = mounts_below_fd(NULL, fd);
                if (r < 0)
                        return r;
                if (r > 0)
                        return -EXDEV;
                r = btrfs_subvol_destroy(dir_fd, name);
                return r == -ENOENT ? 0 : r;
        }
        /* Not a subvolume (or a mount point, which rm_rf_at() leaves alone). */
        return rm_rf_at_cancellable(dir_fd, name, cancel);
}

int rm_leftovers(int dir_fd, bool (*is_leftover)(const char *name, void *userdata), void *userdata,
                 const volatile sig_atomic_t *cancel, FILE *log) {
        char **names = NULL;
        size_t n = 0;
        int r;

        r = dir_names_sorted(dir_fd, &names, &n);
        for (size_t i = 0; i < n; i++) {
                int k;

                if (!is_leftover(names[i], userdata))
                        continue;
                k = rm_rf_or_subvol_at(dir_fd, names[i], cancel);
                if (k == -ECANCELED) {
                        if (log)
                                fprintf(log, "cancelled while removing leftover %s\n", names[i]);
                        r = k;
                        break;
                }
                if (log && k < 0)
                        fprintf(log, "cannot remove leftover %s: %s\n", names[i], strerror(-k));
                else if (log)
                        fprintf(log, "removed leftover %s\n", names[i]);
                if (k < 0 && r == 0)
                        r = k;
        }
        strv_free(names);
        return r;
}
