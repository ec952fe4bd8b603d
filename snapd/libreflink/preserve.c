/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "preserve.h"
#include "reflink.h"

static const struct {
        const char *name;
        unsigned int bits;
} table[] = {
        { "none",     REFLINK_ATTR_NONE },
        { "owner",    REFLINK_ATTR_OWNER },
        { "security", REFLINK_ATTR_SECURITY },
        { "mode",     REFLINK_ATTR_MODE },
        { "acl",      REFLINK_ATTR_ACL },
        { "all",      REFLINK_ATTR_ALL },
};

int preserve_from_string(const char *s, unsigned int *ret) {
        unsigned int bits = 0;

        if (!s || !*s)
                return -EINVAL;
        for (const char *p = s;;) {
                size_t n = strcspn(p, ",");
                size_t i;

                for (i = 0; i < ELEMENTSOF(table); i++)
                        if (strlen(table[i].name) == n && strncmp(p, table[i].name, n) == 0)
                                break;
                if (i == ELEMENTSOF(table))
                        return -EINVAL;
                bits |= table[i].bits;
                if (!p[n])
                        break;
                p += n + 1;
        }
        *ret = bits;
        return 0;
}

const char *preserve_to_string(unsigned int preserve, char *buf, unsigned long size) {
        size_t len = 0;

        if (size == 0)
                return NULL;
        buf[0] = '\0';
        if (preserve == REFLINK_ATTR_ALL || preserve == REFLINK_ATTR_NONE) {
                snprintf(buf, size, "%s", preserve ? "all" : "none");
                return buf;
        }
        for (size_t i = 1; i < ELEMENTSOF(table) - 1; i++)
                if (preserve & table[i].bits) {
                        int n = snprintf(buf + len, size - len, "%s%s",
                                         len ? "," : "", table[i].name);
                        if (n < 0 || (size_t) n >= size - len)
                                return NULL;
                        len += n;
                }
        return buf;
}
