/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * reflinkat(2) and the reflink() library wrapper.  Like the C library's
 * own wrappers they return 0, or -1 with errno set.
 */

#include <fcntl.h>
#include <sys/syscall.h>

#if defined(__has_include)
#  if __has_include(<linux/reflink.h>)
#    include <linux/reflink.h>
#  endif
#endif

#ifndef REFLINK_ATTR_NONE
#  define REFLINK_ATTR_NONE     0x0
#  define REFLINK_ATTR_OWNER    0x1
#  define REFLINK_ATTR_SECURITY 0x2
#  define REFLINK_ATTR_MODE     0x4
#  define REFLINK_ATTR_ACL      0x8
#  define REFLINK_ATTR_ALL      0xf
#endif

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
