/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>

#include "format-util.h"
#include "macro.h"

const char *format_bytes(uint64_t n, char *buf, size_t size) {
        static const char suffix[] = "BKMGTPE";
        double v = (double) n;
        size_t i = 0;

        while (v >= 1024 && i < sizeof(suffix) - 2) {
                v /= 1024;
                i++;
        }
        if (i == 0)
                snprintf(buf, size, "%lluB", (unsigned long long) n);
        else
                snprintf(buf, size, v < 10 ? "%.1f%c" : "%.0f%c", v, suffix[i]);
        return buf;
}
