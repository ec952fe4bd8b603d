#!/usr/bin/env python3
# The layering of snapd/ (snapd/README.md), checked on every #include "...":
# basic/ includes only basic/; libreflink/ basic/ and itself; shared/ those
# and itself; a program's folder those and itself, never another
# program's; and no cycle among the files' includes.  TAP output.
import os
import re
import sys

top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "snapd")
allowed = {
    "basic": {"basic"},
    "libreflink": {"basic", "libreflink"},
    "shared": {"basic", "libreflink", "shared"},
    "refsnapd": {"basic", "libreflink", "shared", "refsnapd"},
    "refsnapctl": {"basic", "libreflink", "shared", "refsnapctl"},
    "reflink": {"basic", "libreflink", "reflink"},
}
where = {}      # header name -> folder
edges = {}      # file -> headers it includes
for folder in allowed:
    for name in sorted(os.listdir(os.path.join(top, folder))):
        if name.endswith((".c", ".h")):
            if name.endswith(".h"):
                where[name] = folder
            with open(os.path.join(top, folder, name)) as f:
                edges[(folder, name)] = re.findall(r'^#include "([^"]+)"', f.read(), re.M)

n = failed = 0
def ok(cond, what):
    global n, failed
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, what))
    failed += not cond

for (folder, name), incs in sorted(edges.items()):
    bad = [i for i in incs if i in where and where[i] not in allowed[folder]]
    unknown = [i for i in incs if i not in where]
    ok(not bad and not unknown, "%s/%s includes only %s%s" % (
        folder, name, ", ".join(sorted(allowed[folder])),
        (": not " + ", ".join("%s/%s" % (where.get(i, "?"), i) for i in bad + unknown)) if bad or unknown else ""))

# Cycles among headers (a .c file is never included).
graph = {h: [i for i in edges[(where[h], h)] if i in where] for h in where}
state = {}
cycle = []
def visit(h, path):
    state[h] = 1
    for i in graph[h]:
        if state.get(i) == 1:
            cycle.append(path + [i])
        elif not state.get(i):
            visit(i, path + [i])
    state[h] = 2
for h in sorted(graph):
    if not state.get(h):
        visit(h, [h])
ok(not cycle, "no include cycle" + (": " + " -> ".join(cycle[0]) if cycle else ""))
print("1..%d" % n)
sys.exit(1 if failed else 0)
