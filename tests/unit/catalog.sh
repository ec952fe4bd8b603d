#!/bin/bash
# The journal catalog (snapd/refsnapd/refsnapd.catalog) holds an entry
# for every MESSAGE_ID of snapd/shared/log-event.h and none other, and
# journalctl reads it (the database built from it in a scratch root lists
# each ID with its subject).  TAP.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/unit/tap.sh"

catalog=$top/snapd/refsnapd/refsnapd.catalog
ids=$(sed -n 's/^#define MESSAGE_ID_[A-Z_]*  *"\([0-9a-f]\{32\}\)"$/\1/p' "$top/snapd/shared/log-event.h" | sort)
entries=$(sed -n 's/^-- \([0-9a-f]\{32\}\)$/\1/p' "$catalog" | sort)
[ "$(wc -l <<<"$ids")" -ge 10 ]
ok $? "log-event.h defines the ten message IDs ($(wc -l <<<"$ids"))"
[ "$ids" = "$entries" ]
ok $? "the catalog has exactly the IDs of log-event.h"
[ -z "$(uniq -d <<<"$ids")" ]
ok $? "no ID is used twice"
if command -v journalctl >/dev/null; then
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	mkdir -p "$root/usr/lib/systemd/catalog"
	cp "$catalog" "$root/usr/lib/systemd/catalog/"
	journalctl --root="$root" --update-catalog
	ok $? "journalctl --update-catalog reads it"
	listed=$(journalctl --root="$root" --list-catalog | awk '$2 == "refsnap:" { print $1 }' | sort)
	[ "$listed" = "$ids" ]
	ok $? "journalctl --list-catalog lists every ID under refsnap"
	for id in $ids; do
		text=$(journalctl --root="$root" --dump-catalog "$id")
		grep -q '^Documentation: man:' <<<"$text" && [ "$(wc -l <<<"$text")" -ge 6 ]
		ok $? "$id has a subject, documentation and text"
	done
else
	echo "# journalctl not here: the database is not built"
fi
tap_end
