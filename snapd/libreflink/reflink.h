/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * reflinkat(2) and the reflink() library wrapper.  Like the C library's
 * own wrappers they return 0, or -1 with errno set.  Where the kernel has
 * no reflinkat(2), reflinkat() takes the stock path (reflinkat_stock():
 * the same file from O_TMPFILE, FICLONE and linkat; see reflinkat.2).
 */

#include <fcntl.h>
#include <sys/syscall.h>

/*
 * Our own copy of the series' uapi header (libreflink/linux/reflink.h, as
 * systemd carries src/basic/linux/): the include path finds it before the
 * installed kernel headers, which a stock kernel's do not have.  The test
 * uapi-header checks it is identical to the one the series adds.
 */
#include <linux/reflink.h>

/* The number in the installed uapi headers, else the one of our series. */
#ifndef __NR_reflinkat
#  define __NR_reflinkat 451
#endif

int reflinkat(int olddirfd, const char *oldpath,
              int newdirfd, const char *newpath,
              unsigned int preserve, unsigned int flags);

int reflink(const char *oldpath, const char *newpath, unsigned int preserve);

/* The system call itself, and the stock path; the same contract. */
int reflinkat_syscall(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                      unsigned int preserve, unsigned int flags);
int reflinkat_stock(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
                    unsigned int preserve, unsigned int flags);

typedef enum ReflinkPath {
        REFLINK_PATH_SYSCALL,   /* reflinkat(2) */
        REFLINK_PATH_STOCK,     /* O_TMPFILE, FICLONE, attributes, linkat */
} ReflinkPath;

/*
 * The path reflinkat() takes in this process, decided once: the system
 * call where the kernel has it, else the stock path.  The environment
 * variable REFSNAP_REFLINK_PATH=stock or =syscall forces one (tests; a
 * set-user-ID program ignores it).
 */
ReflinkPath reflink_path(void);
/* "syscall" or "stock", as status and the journal say it. */
const char *reflink_path_to_string(ReflinkPath p);

/*
 * 1 if this kernel has reflinkat(2), 0 if not (ENOSYS, or another call at
 * its number), -errno if it cannot tell.
 */
int reflink_supported(void);
