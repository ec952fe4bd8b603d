/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* 64-bit FNV-1a: fnv(FNV_INIT, ...) then fnv(h, ...) for each further part. */
#define FNV_INIT 0xcbf29ce484222325ULL

static inline uint64_t fnv(uint64_t h, const void *p, size_t n) {
        const unsigned char *b = p;

        for (size_t i = 0; i < n; i++) {
                h ^= b[i];
                h *= 0x100000001b3ULL;
        }
        return h;
}
