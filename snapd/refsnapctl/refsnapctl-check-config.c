/* SPDX-License-Identifier: GPL-2.0-or-later */
/* refsnapctl check-config [FILE]: every error of the configuration, or OK. */
#include "config.h"
#include "refsnapctl.h"

int verb_check_config(int argc, char *argv[]) {
        return config_check_command("refsnapctl", argc > 1 ? argv[1] : arg_config, arg_dropins);
}
