/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * reflinkat(2) and the reflink() library wrapper.  Like the C library's
 * own wrappers they return 0, or -1 with errno set.
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

/*
 * 1 if this kernel has reflinkat(2), 0 if not (ENOSYS, or another call at
 * its number), -errno if it cannot tell.
 */
int reflink_supported(void);
