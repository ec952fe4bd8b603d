#!/bin/bash
# etc/polkit-1/actions/org.refsnap1.policy: valid against polkit's DTD
# where the host has it, and the three actions with the defaults of
# refsnap's specification (self-service yes, snapshot auth_admin_keep,
# manage auth_admin), for any, inactive and active sessions.  TAP.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/unit/tap.sh"
policy=$top/etc/polkit-1/actions/org.refsnap1.policy

dtd=/usr/share/polkit-1/policyconfig-1.dtd
if command -v xmllint >/dev/null && [ -f "$dtd" ]; then
	xmllint --noout --dtdvalid "$dtd" "$policy"
	ok $? "valid against $dtd"
else
	echo "# no xmllint or no $dtd here: the DTD check left out"
fi
python3 - "$policy" <<'PY'
import sys
import xml.etree.ElementTree as ET
want = {'org.refsnap1.self-service': 'yes', 'org.refsnap1.snapshot': 'auth_admin_keep',
        'org.refsnap1.manage': 'auth_admin'}
got = {}
for a in ET.parse(sys.argv[1]).getroot().findall('action'):
    d = a.find('defaults')
    vals = {d.find(k).text for k in ('allow_any', 'allow_inactive', 'allow_active')}
    assert len(vals) == 1, (a.get('id'), vals)
    assert a.find('description').text and a.find('message').text, a.get('id')
    got[a.get('id')] = vals.pop()
assert got == want, got
PY
ok $? "the actions and their defaults are the specification's"
tap_end
