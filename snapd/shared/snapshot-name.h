/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <time.h>

/*
 * Snapshots are named by their UTC start, 2026-12-03T07:00:00Z, with -NN
 * after a second one within the same second.
 */
#define SNAPSHOT_NAME_MAX 32

bool snapshot_name_valid(const char *name);
int snapshot_name_time(const char *name, time_t *ret);
void snapshot_name_format(time_t t, unsigned seq, char buf[static SNAPSHOT_NAME_MAX]);
