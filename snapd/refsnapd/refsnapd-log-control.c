/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "refsnapd-log-control.h"

/* syslog(3)'s levels by the names systemd gives them. */
static const char *const level_names[] = {
        [LOG_EMERG] = "emerg",   [LOG_ALERT] = "alert", [LOG_CRIT] = "crit", [LOG_ERR] = "err",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

static int get_level(sd_bus *bus, const char *path, const char *interface, const char *property,
                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        int l = log_get_max_level();

        return sd_bus_message_append(reply, "s", l >= 0 && l <= LOG_DEBUG ? level_names[l] : "debug");
}

static int set_level(sd_bus *bus, const char *path, const char *interface, const char *property,
                     sd_bus_message *value, void *userdata, sd_bus_error *error) {
        const char *t;
        int r;

        r = sd_bus_message_read(value, "s", &t);
        if (r < 0)
                return r;
        for (int l = 0; l <= LOG_DEBUG; l++)
                if (strcmp(t, level_names[l]) == 0) {
                        log_info("log level set to %s over D-Bus", t);
                        log_set_max_level(l);
                        return 0;
                }
        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid log level '%s'", t);
}

static int get_target(sd_bus *bus, const char *path, const char *interface, const char *property,
                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", log_target_to_string(log_get_target()));
}

static int set_target(sd_bus *bus, const char *path, const char *interface, const char *property,
                      sd_bus_message *value, void *userdata, sd_bus_error *error) {
        const char *t;
        LogTarget target;
        int r;

        r = sd_bus_message_read(value, "s", &t);
        if (r < 0)
                return r;
        target = log_target_from_string(t);
        if (target < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid log target '%s' (auto, journal, console, null)", t);
        log_set_target(target);
        log_info("log target set to %s over D-Bus", log_target_to_string(log_get_target()));
        return 0;
}

static int get_identifier(sd_bus *bus, const char *path, const char *interface, const char *property,
                          sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", "refsnapd");
}

static const sd_bus_vtable log_control_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_WRITABLE_PROPERTY("LogLevel", "s", get_level, set_level, 0, 0),
        SD_BUS_WRITABLE_PROPERTY("LogTarget", "s", get_target, set_target, 0, 0),
        SD_BUS_PROPERTY("SyslogIdentifier", "s", get_identifier, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END
};

int bus_log_control_register(sd_bus *bus) {
        return sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/LogControl1", "org.freedesktop.LogControl1",
                                        log_control_vtable, NULL);
}
