/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "snapshot-name.h"
#include "time-util.h"

bool snapshot_name_valid(const char *name) {
        time_t t;

        return snapshot_name_time(name, &t) == 0;
}

int snapshot_name_time(const char *name, time_t *ret) {
        struct tm tm = {};
        const char *end;

        /* YYYY-MM-DDTHH:MM:SSZ, optionally -NN */
        if (strlen(name) != 20 && strlen(name) != 23)
                return -EINVAL;
        end = strptime(name, "%Y-%m-%dT%H:%M:%SZ", &tm);
        if (!end || end != name + 20)
                return -EINVAL;
        if (*end && !(end[0] == '-' && isdigit((unsigned char) end[1]) &&
                      isdigit((unsigned char) end[2])))
                return -EINVAL;
        *ret = timegm(&tm);
        return 0;
}

void snapshot_name_format(time_t t, unsigned seq, char buf[static SNAPSHOT_NAME_MAX]) {
        size_t n;

        format_timestamp_utc(t, TIMESTAMP_ISO, buf, SNAPSHOT_NAME_MAX);
        n = strlen(buf);
        if (seq > 0)
                snprintf(buf + n, SNAPSHOT_NAME_MAX - n, "-%02u", seq % 100);
}

int snapshot_name_after(time_t t, const char *floor, char buf[static SNAPSHOT_NAME_MAX]) {
        time_t ft;
        unsigned seq;
        int r;

        snapshot_name_format(t, 0, buf);
        if (!floor || strcmp(buf, floor) > 0)
                return 0;
        r = snapshot_name_time(floor, &ft);
        if (r < 0)
                return r;
        seq = floor[20] == '-' ? (unsigned) (floor[21] - '0') * 10 + (unsigned) (floor[22] - '0') : 0;
        if (seq < 99)
                snapshot_name_format(ft, seq + 1, buf);
        else
                snapshot_name_format(ft + 1, 0, buf);
        return 0;
}

int snapshot_name_after_whole(time_t t, const char *floor, char buf[static SNAPSHOT_NAME_MAX]) {
        time_t ft;
        int r;

        if (floor) {
                r = snapshot_name_time(floor, &ft);
                if (r < 0)
                        return r;
                if (t <= ft)
                        t = ft + 1;
        }
        snapshot_name_format(t, 0, buf);
        return 0;
}
