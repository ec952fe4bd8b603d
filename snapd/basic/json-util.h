/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdio.h>

/* s as a JSON string, quotes included. */
void json_string(FILE *f, const char *s);
