/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <systemd/sd-bus.h>

/*
 * The a{sv} options of a method that knows one boolean option: name (b).
 * *ret is false unless the caller sets it; an unknown option, or name of
 * another type, is refused with InvalidArgs in error.  Returns >= 0, or
 * -errno (with error set when the caller's options were at fault).
 */
/*
 * The a{sv} options of a method that knows none yet: an empty array, or
 * InvalidArgs naming the first option.  Returns >= 0 or -errno.
 */
int bus_read_no_options(sd_bus_message *msg, sd_bus_error *error);

int bus_read_bool_option(sd_bus_message *msg, const char *name, bool *ret, sd_bus_error *error);
