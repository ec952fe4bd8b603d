/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * REFLINK_ATTR_* bits by name: "owner", "security", "mode", "acl", and
 * "all" and "none", in a comma-separated list.
 */
int preserve_from_string(const char *s, unsigned int *ret);
const char *preserve_to_string(unsigned int preserve, char *buf, unsigned long size);
