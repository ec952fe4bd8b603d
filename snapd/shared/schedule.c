/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "schedule.h"

usec_t schedule_previous(usec_t interval, usec_t now) {
        return interval ? now - now % interval : now;
}

usec_t schedule_next(usec_t interval, usec_t now) {
        return schedule_previous(interval, now) + interval;
}

bool schedule_missed(usec_t interval, usec_t last, usec_t now) {
        if (last == 0)
                return true;
        return last < schedule_previous(interval, now);
}
