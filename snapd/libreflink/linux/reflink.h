/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
#ifndef _UAPI_LINUX_REFLINK_H
#define _UAPI_LINUX_REFLINK_H

/*
 * The preserve argument of reflinkat(2): which of the source's attributes
 * the new file keeps.  A bit the caller is not privileged for fails the
 * call with EPERM; nothing is ever dropped silently.
 */
#define REFLINK_ATTR_NONE	0x0	/* a new file of the caller's */
#define REFLINK_ATTR_OWNER	0x1	/* uid and gid */
#define REFLINK_ATTR_SECURITY	0x2	/* security.* xattrs; needs OWNER */
#define REFLINK_ATTR_MODE	0x4	/* all mode bits, set[ug]id included */
#define REFLINK_ATTR_ACL	0x8	/* the POSIX access ACL; needs MODE */

/*
 * The four bits above, and shall remain the same value in the future: a
 * bit added later is never part of it, so that a program built against a
 * newer header does not fail with EINVAL on an older kernel.  Ask for a
 * later bit by name.
 */
#define REFLINK_ATTR_ALL	0xf

#endif /* _UAPI_LINUX_REFLINK_H */
