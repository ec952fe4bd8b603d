/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading a method's a{sv} options: none known yet (the new methods), or
 * one boolean (DeleteSnapshot()'s "force", Purge()'s "dry_run").  See refsnapd-bus-options.h.
 */
#include <string.h>

#include "refsnapd-bus-options.h"

int bus_read_no_options(sd_bus_message *msg, sd_bus_error *error) {
        const char *key;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(msg, 'e', "sv");
        if (r < 0)
                return r;
        if (r > 0) {
                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option '%s'", key);
        }
        return sd_bus_message_exit_container(msg);
}

int bus_read_bool_option(sd_bus_message *msg, const char *name, bool *ret, sd_bus_error *error) {
        int r;

        *ret = false;
        r = sd_bus_message_enter_container(msg, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *key;
                int v;

                r = sd_bus_message_enter_container(msg, 'e', "sv");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_message_read(msg, "s", &key);
                if (r < 0)
                        return r;
                if (strcmp(key, name) != 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Unknown option '%s'", key);
                r = sd_bus_message_read(msg, "v", "b", &v);
                if (r < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Option '%s' is a boolean", name);
                *ret = v;
                r = sd_bus_message_exit_container(msg);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_exit_container(msg);
}
