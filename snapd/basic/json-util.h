/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>

/*
 * s as a JSON string, quotes included, valid JSON for any name: control
 * characters as \u00NN, each byte that is not part of valid UTF-8 as the
 * lone surrogate \udcNN (Python's surrogateescape: os.fsencode() of the
 * decoded string gives the bytes back).
 */
void json_string(FILE *f, const char *s);
