/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <systemd/sd-bus.h>

/*
 * org.freedesktop.LogControl1 at /org/freedesktop/LogControl1, as
 * systemd's services serve it, so that "systemctl service-log-level
 * refsnapd debug" and "service-log-target" work: LogLevel and LogTarget
 * (writable, by root), SyslogIdentifier.  A reload sets the level of the
 * configuration again.  Returns 0 or -errno.
 */
int bus_log_control_register(sd_bus *bus);
