/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* "1.5G", "340K", "12B": human sizes, base 1024. */
const char *format_bytes(uint64_t n, char *buf, size_t size);
