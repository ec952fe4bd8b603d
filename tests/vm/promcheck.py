#!/usr/bin/env python3
# promcheck.py FILE...: the checks of `promtool check metrics` that apply
# to a node_exporter textfile (here in tests/vm/, so that the guest has it
# too: the monitor suite, and the host tests test-metrics, test-monitor), for where promtool is not installed (the
# test image leaves out Debian's prometheus package: 96 MB installed, a
# server it would start).  The Prometheus text exposition format, version
# 0.0.4: HELP and TYPE at most once per family and before its samples, a
# family's samples together, names and label names of their alphabets,
# label values with only the escapes \\ \" \n, values that parse as
# floats, no series twice, UTF-8, a final newline; and promtool's lint: a
# HELP for every family, counters named *_total and nothing else so.
# Prints each problem as FILE:LINE: WHAT and exits 1 if there is one.
import re
import sys

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*')
LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*')
TYPES = {'counter', 'gauge', 'histogram', 'summary', 'untyped'}


def parse_labels(s, i):
    """Labels from s[i] == '{'; returns (dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        if s[i] == '}':
            return labels, i + 1
        m = LABEL.match(s, i)
        if not m:
            raise ValueError('bad label name at column %d' % (i + 1))
        name = m.group(0)
        i = m.end()
        if s[i:i + 2] != '="':
            raise ValueError('label %s: no =" after it' % name)
        i += 2
        value = []
        while True:
            c = s[i]
            if c == '\\':
                e = s[i + 1]
                if e not in '\\"n':
                    raise ValueError('label %s: bad escape \\%s' % (name, e))
                value.append('\n' if e == 'n' else e)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == '\n':
                raise ValueError('label %s: a raw newline' % name)
            else:
                value.append(c)
                i += 1
        if name in labels:
            raise ValueError('label %s twice' % name)
        labels[name] = ''.join(value)
        if s[i] == ',':
            i += 1
        elif s[i] != '}':
            raise ValueError('label %s: no , or } after its value' % name)


def family_of(name, types):
    for suffix in ('_bucket', '_count', '_sum'):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and types.get(base) in ('histogram', 'summary'):
            return base
    return name


def check(path):
    problems = []
    raw = open(path, 'rb').read()
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
        return ['%s: not UTF-8: %s' % (path, e)]
    if text and not text.endswith('\n'):
        problems.append('%s: no newline at the end (a part of a file?)' % path)
    helps, types, done, series = {}, {}, set(), set()
    current = None
    for n, line in enumerate(text.split('\n')[:-1] if text.endswith('\n') else text.split('\n'), 1):
        where = '%s:%d' % (path, n)
        if not line.strip():
            continue
        if line.startswith('#'):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ('HELP', 'TYPE'):
                name = parts[2]
                if not NAME.fullmatch(name):
                    problems.append('%s: bad metric name %r' % (where, name))
                seen = helps if parts[1] == 'HELP' else types
                if name in seen:
                    problems.append('%s: second %s for %s' % (where, parts[1], name))
                if name in done or (current and current != name and name in (helps.keys() | types.keys())):
                    problems.append('%s: %s for %s after its samples or family' % (where, parts[1], name))
                if parts[1] == 'TYPE':
                    t = parts[3] if len(parts) > 3 else ''
                    if t not in TYPES:
                        problems.append('%s: bad type %r' % (where, t))
                    types[name] = t
                else:
                    helps[name] = parts[3] if len(parts) > 3 else ''
                if current and current != name:
                    done.add(current)
                current = name
            continue
        m = NAME.match(line)
        if not m:
            problems.append('%s: bad sample line %r' % (where, line))
            continue
        name = m.group(0)
        i = m.end()
        labels = {}
        try:
            if i < len(line) and line[i] == '{':
                labels, i = parse_labels(line + '\n', i)
        except (ValueError, IndexError) as e:
            problems.append('%s: %s' % (where, e))
            continue
        rest = line[i:].split()
        if not line[i:i + 1] == ' ' or len(rest) not in (1, 2):
            problems.append('%s: no value after the series' % where)
            continue
        try:
            float(rest[0])
        except ValueError:
            problems.append('%s: value %r is not a float' % (where, rest[0]))
        fam = family_of(name, types)
        if fam in done:
            problems.append('%s: %s: its family\'s samples are not together' % (where, name))
        if current and current != fam:
            done.add(current)
        current = fam
        key = (name, tuple(sorted(labels.items())))
        if key in series:
            problems.append('%s: series %s%s twice' % (where, name, labels))
        series.add(key)
    for name in set(types) | set(helps):
        if name not in helps:
            problems.append('%s: %s has no HELP' % (path, name))
        t = types.get(name, 'untyped')
        if t == 'counter' and not name.endswith('_total'):
            problems.append('%s: counter %s should end in _total' % (path, name))
        if t != 'counter' and name.endswith('_total'):
            problems.append('%s: %s ends in _total but is no counter' % (path, name))
    return problems


def main():
    problems = []
    for path in sys.argv[1:]:
        problems += check(path)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
