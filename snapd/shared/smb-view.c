/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chase.h"
#include "fd-util.h"
#include "macro.h"
#include "mountpoint-util.h"
#include "smb-view.h"
#include "stat-util.h"
#include "store.h"

/* The options the view's mount must have, each said when it lacks one. */
static const char *const view_options[] = { "ro", "nosuid", "nodev", "noexec" };

_printf_(2, 3)
static int why(char **ret_why, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret_why, fmt, ap);
        va_end(ap);
        return r < 0 ? -ENOMEM : 1;
}

static const char *what_failed(int r) {
        switch (r) {
        case -ELOOP:
                return "is or goes through a symbolic link; name it canonically";
        case -EREMOTE:
                return "is covered by a fuse mount";
        case -ENOTDIR:
                return "is not a directory";
        default:
                return NULL;
        }
}

int smb_view_check(const Job *j, const char *mountinfo, char **ret_why) {
        _cleanup_free_ char *where = NULL, *options = NULL;
        _cleanup_close_ int view = -EBADF, store = -EBADF;
        Chase vc = { .flags = CHASE_SAFE | CHASE_NO_FUSE }, sc = { .flags = CHASE_SAFE | CHASE_NO_FUSE };
        char missing[64] = "";
        struct stat vst, sst;
        uint64_t id;
        int r;

        *ret_why = NULL;
        if (!j->smb_view)
                return 0;
        view = chase_dir(AT_FDCWD, j->smb_view, &vc);
        if (view == -ENOENT)
                return why(ret_why, "smb_view %s does not exist: make it, and mount the store %s on it "
                           "(bind, ro,nosuid,nodev,noexec)", j->smb_view, j->store);
        if (view == -EPERM)
                return why(ret_why, "smb_view %s: %.*s is owned by or writable by a user other than root, who "
                           "could swap the view", j->smb_view, (int) vc.unsafe_len, j->smb_view);
        if (view < 0)
                return why(ret_why, "smb_view %s %s", j->smb_view,
                           what_failed(view) ?: strerror(-view));
        r = fd_mount_id(view, &id);
        if (r >= 0)
                r = mountinfo_mount_by_id(mountinfo, id, &where, &options);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return why(ret_why, "smb_view %s: its mount is not in the mount table: %s", j->smb_view,
                           strerror(-r));
        if (strcmp(where, j->smb_view) != 0)
                return why(ret_why, "smb_view %s is not a mount point (it lies on the mount at %s): mount the "
                           "store %s on it (bind, ro,nosuid,nodev,noexec)", j->smb_view, where, j->store);

        store = chase_dir(AT_FDCWD, j->store, &sc);
        if (store == -EPERM)
                return why(ret_why, "smb_view %s: the store %s: %.*s is owned by or writable by a user other "
                           "than root", j->smb_view, j->store, (int) sc.unsafe_len, j->store);
        if (store < 0)
                return why(ret_why, "smb_view %s: the store %s %s", j->smb_view, j->store,
                           what_failed(store) ?: strerror(-store));
        if (fstat(view, &vst) < 0 || fstat(store, &sst) < 0)
                return why(ret_why, "smb_view %s: %s", j->smb_view, strerror(errno));
        /* The mount's root is the store's directory itself: a bind mount of it. */
        if (!file_id_is(&vst, file_id(&sst)))
                return why(ret_why, "smb_view %s is a mount of another directory, not a bind mount of the "
                           "store %s", j->smb_view, j->store);

        for (size_t i = 0; i < ELEMENTSOF(view_options); i++)
                if (!mount_options_have(options, view_options[i])) {
                        if (missing[0])
                                strcat(missing, ",");
                        strcat(missing, view_options[i]);
                }
        if (missing[0])
                return why(ret_why, "smb_view %s is mounted %s, without %s: remount it (mount -o "
                           "remount,bind,ro,nosuid,nodev,noexec %s)", j->smb_view, options, missing,
                           j->smb_view);

        r = store_parent_closed(store);
        if (r < 0)
                return why(ret_why, "smb_view %s: the store's parent directory: %s", j->smb_view, strerror(-r));
        if (r == 0)
                return why(ret_why, "smb_view %s: the directory above the store %s is open to other users: "
                           "the store must stay 0700 then, and Samba's users cannot list the view; make that "
                           "directory root's and 0700 (the view is then the only way in, read-only)",
                           j->smb_view, j->store);
        return 0;
}
