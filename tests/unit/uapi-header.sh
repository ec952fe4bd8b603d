#!/bin/bash
# The userspace's copy of <linux/reflink.h> (snapd/libreflink/linux/) is
# byte for byte the header the kernel series adds (the new file
# include/uapi/linux/reflink.h of kernel/patches/), so that the userspace
# built on a stock kernel's headers means what the kernel means.  TAP.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/unit/tap.sh"

copy=$top/snapd/libreflink/linux/reflink.h
# The new file's hunk: the lines after its "+++" header, without their "+".
series=$(awk '/^\+\+\+ b\/include\/uapi\/linux\/reflink\.h$/ { f = 1; next }
	f && /^@@/ { next }
	f && /^\+/ { print substr($0, 2); next }
	f { exit }' "$top"/kernel/patches/0*.patch)
test -n "$series"
ok $? "the series adds include/uapi/linux/reflink.h"
cmp -s <(printf '%s\n' "$series") "$copy"
ok $? "snapd/libreflink/linux/reflink.h is identical to the series' header"
grep -q '^#include <linux/reflink.h>$' "$top/snapd/libreflink/reflink.h"
ok $? "libreflink includes it as <linux/reflink.h>"
tap_end
