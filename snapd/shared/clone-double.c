/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "copy-meta.h"
#include "macro.h"
#include "clone-double.h"

int clone_double_calls;

/* The double: what reflinkat(REFLINK_ATTR_ALL) gives, by copying. */
int clone_double(int in, int dst_dir, const char *name, void *userdata) {
        _cleanup_close_ int out = -EBADF;
        struct stat st;
        char buf[65536];
        off_t pos = 0;

        if (fstat(in, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        out = openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (out < 0)
                return -errno;
        for (;;) {                      /* data only, holes stay holes */
                off_t data = lseek(in, pos, SEEK_DATA), hole;

                if (data < 0)
                        break;
                hole = lseek(in, data, SEEK_HOLE);
                for (off_t o = data; o < hole;) {
                        ssize_t n = pread(in, buf, MIN((off_t) sizeof(buf), hole - o), o);
                        if (n <= 0 || pwrite(out, buf, n, o) != n)
                                return -EIO;
                        o += n;
                }
                pos = hole;
        }
        if (ftruncate(out, st.st_size) < 0)
                return -errno;
        __atomic_add_fetch(&clone_double_calls, 1, __ATOMIC_RELAXED);
        return copy_meta_fd(in, out, &st);
}

const MirrorOps clone_double_ops = { .clone = clone_double };
