/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdint.h>
#include <stdio.h>

/* "1.5G", "340K", "12B": human sizes, base 1024. */
const char *format_bytes(uint64_t n, char *buf, size_t size);

/* s as a JSON string, quotes included. */
void json_string(FILE *f, const char *s);
