#!/usr/bin/env python3
"""Provider-ABI check: our include/infiniband/driver.h (with kern-abi.h and
cmd_ioctl.h) against the rdma-core 44 facts pinned in provider_abi.expected.

    provider_abi.py            check, one PASS/FAIL line per key
    provider_abi.py --print    only print what the probe measures

This module is also the one reader of provider_abi.expected on the
compat-tests side (read_table); layout.py imports it.  (The Rust side has
its own: abi/src/testutil.rs pinned_table().)

Every non-comment line of the table is "<key> <value>"; the value is the last
word.  Key kinds (the C expression the probe evaluates is shown on the right):
  sizeof struct|union|enum T        sizeof(struct T)
  sizeof typedef T                  sizeof(T)
  alignof struct|union T            _Alignof(struct T)
  offsetof struct T m[.n]           offsetof(struct T, m.n)
  membersize struct T m[.n]         sizeof(((struct T *)0)->m.n)
  type struct T m[.n] TYPE...       1 if the member's type is compatible with TYPE
  typedef T TYPE...                 1 if typedef T is compatible with TYPE
  proto F TYPE...                   1 if &F is compatible with TYPE (a pointer type)
  enum C | macro M                  the integer value of C / M
  defined M                         1 if M is a macro
Members of anonymous structs/unions are named as C names them (without the
anonymous level).

Environment: OUR_INCLUDE (default include), CC (default cc),
  PROVIDER_ABI_CFLAGS (default "-I$OUR_INCLUDE"; point it at another tree's
  headers together with --print to regenerate the table),
  LAYOUT_QUIET=1 hides PASS lines.
Scratch: build/compat-tests/layout/provider_abi/.
"""

import collections
import os
import re
import shlex
import shutil
import subprocess
import sys

SUITE = 'provider_abi'
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TABLE = os.path.join(HERE, 'provider_abi.expected')

Entry = collections.namedtuple('Entry', 'key value lineno')


class TableError(Exception):
    pass


def read_table(path=TABLE):
    """The table's entries in order: key (the words before the last, joined
    by one space), value (the last word, a string), line number.  Comment
    lines (first non-blank character '#') and blank lines are skipped."""
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith('#'):
                continue
            if len(words) < 2:
                raise TableError('%s:%d: no value: %s' % (path, n, line.rstrip()))
            entries.append(Entry(' '.join(words[:-1]), words[-1], n))
    return entries


def c_expr(key):
    """The C expression the probe prints for KEY; None for 'defined M'
    (handled with #ifdef)."""
    w = key.split()
    k = w[0]
    rest = lambda i: ' '.join(w[i:])  # noqa: E731
    if k == 'sizeof' and w[1] == 'typedef':
        return 'sizeof(%s)' % w[2]
    if k == 'sizeof':
        return 'sizeof(%s %s)' % (w[1], w[2])
    if k == 'alignof':
        return '_Alignof(%s %s)' % (w[1], w[2])
    if k == 'offsetof':
        return 'offsetof(%s %s, %s)' % (w[1], w[2], w[3])
    if k == 'membersize':
        return 'sizeof(((%s %s *)0)->%s)' % (w[1], w[2], w[3])
    if k == 'type':
        return '__builtin_types_compatible_p(__typeof__(((%s %s *)0)->%s), %s)' % (w[1], w[2], w[3], rest(4))
    if k == 'typedef':
        return '__builtin_types_compatible_p(%s, %s)' % (w[1], rest(2))
    if k == 'proto':
        return '__builtin_types_compatible_p(__typeof__(&%s), %s)' % (w[1], rest(2))
    if k in ('enum', 'macro'):
        return '(%s)' % w[1]
    if k == 'defined':
        return None
    raise TableError('bad table key: %s' % key)


def gen_probe(keys, excluded):
    """The probe's source and {line number: key} for every measured key
    (each occupies exactly one line, so diagnostics map back to keys)."""
    out = ['#include <stddef.h>',
           '#include <stdio.h>',
           '#include <infiniband/driver.h>',
           '#define P(k, v) printf("%s %lld\\n", k, (long long)(v))',
           'int main(void)',
           '{']
    where = {}
    for key in keys:
        if key in excluded:
            continue
        e = c_expr(key)
        if e is None:
            m = key.split()[1]
            out += ['#ifdef %s' % m, '\tP("%s", 1);' % key, '#else', '\tP("%s", 0);' % key, '#endif']
        else:
            out.append('\tP("%s", %s);' % (key, e))
            where[len(out)] = key
    out += ['\treturn 0;', '}']
    return '\n'.join(out) + '\n', where


ERR_RE = re.compile(r'probe\.c:(\d+):\d+: (?:fatal )?error:')


def measure(entries, cc, cflags, scratch):
    """Compiles and runs the probe.  Keys whose probe line does not compile
    are dropped (and the probe retried).  Returns (measured {key: value},
    {key: compiler message} of the dropped keys); raises TableError with the
    reason when there is nothing to measure."""
    keys = [e.key for e in entries]
    why = {}
    src = os.path.join(scratch, 'probe.c')
    exe = os.path.join(scratch, 'probe')
    log = os.path.join(scratch, 'cc.log')
    compiled = False
    for _attempt in range(8):
        text, where = gen_probe(keys, why)
        with open(src, 'w') as f:
            f.write(text)
        r = subprocess.run([cc, '-std=gnu11', '-w'] + cflags + ['-o', exe, src],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           universal_newlines=True, errors='replace')
        with open(log, 'w') as f:
            f.write(r.stderr)
        if r.returncode == 0:
            compiled = True
            break
        bad = {}
        for line in r.stderr.splitlines():
            m = ERR_RE.search(line)
            if m and int(m.group(1)) in where and int(m.group(1)) not in bad:
                bad[int(m.group(1))] = re.sub(r'.*error: ', '', line)
        if not bad:
            break
        for n, msg in bad.items():
            why[where[n]] = msg
    if not compiled:
        with open(log) as f:
            head = f.read().splitlines()[:15]
        raise TableError('probe does not compile against %s:\n%s' % (
            ' '.join(cflags), '\n'.join('    ' + l for l in head)))
    r = subprocess.run(os.environ.get('LAYOUT_EXEC', '').split() + [exe], stdout=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise TableError('probe failed to run')
    with open(os.path.join(scratch, 'actual'), 'w') as f:
        f.write(r.stdout)
    got = {}
    for line in r.stdout.splitlines():
        k, _, v = line.rpartition(' ')
        got[k] = v
    return got, why


GROWN = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'provider_abi.grown')


def read_grown(keys):
    """provider_abi.grown: key -> (value, why) for keys of the table whose
    layout grew after rdma-core 44 (see that file)."""
    out = {}
    if not os.path.exists(GROWN):
        return out
    with open(GROWN) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            fact, _, why = line.partition('|')
            key, _, value = fact.strip().rpartition(' ')
            if key not in keys or not value.lstrip('-').isdigit() or not why.strip():
                raise TableError('provider_abi.grown line %d malformed or not a table key: %s' % (n, line))
            out[key] = (value, why.strip())
    return out


def check():
    """Runs the whole check.  Returns (lines, passed, failed): lines are
    (status, text) with status 'PASS' or 'FAIL' and text the full line."""
    include = os.environ.get('OUR_INCLUDE') or 'include'
    cc = os.environ.get('CC') or 'cc'
    cflags = shlex.split(os.environ.get('PROVIDER_ABI_CFLAGS') or '-I' + include + ' -DIBVERBS_PABI_VERSION=34')
    scratch = os.path.join(ROOT, 'build/compat-tests/layout/provider_abi')
    if not shutil.which(cc):
        raise TableError("C compiler '%s' not found" % cc)
    if not os.access(TABLE, os.R_OK):
        raise TableError('%s not readable' % os.path.relpath(TABLE, ROOT))
    os.makedirs(scratch, exist_ok=True)
    entries = read_table()
    grown = read_grown({e.key for e in entries})
    got, why = measure(entries, cc, cflags, scratch)
    lines = []
    for e in entries:
        if e.key in why:
            lines.append(('FAIL', 'FAIL %s: does not compile against our headers (%s)' % (e.key, why[e.key])))
    for e in entries:
        if e.key not in got:
            continue
        if got[e.key] == e.value:
            lines.append(('PASS', 'PASS %s' % e.key))
        elif e.key in grown and got[e.key] == grown[e.key][0]:
            lines.append(('PASS', 'PASS %s (%s; rdma-core 44: %s, newer: %s)' % (
                e.key, grown[e.key][1], e.value, got[e.key])))
        else:
            lines.append(('FAIL', 'FAIL %s: expected %s, got %s' % (e.key, e.value, got[e.key])))
    # The header must also be clean for providers built with warnings enabled.
    with open(os.path.join(scratch, 'warn.c'), 'w') as f:
        f.write('#include <infiniband/driver.h>\nint main(void) { return 0; }\n')
    r = subprocess.run([cc, '-std=gnu11', '-Wall', '-Wextra', '-Werror'] + cflags +
                       ['-c', '-o', os.path.join(scratch, 'warn.o'), os.path.join(scratch, 'warn.c')],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True, errors='replace')
    with open(os.path.join(scratch, 'warn.log'), 'w') as f:
        f.write(r.stderr)
    name = 'driver.h compiles with -Wall -Wextra -Werror'
    if r.returncode == 0:
        lines.append(('PASS', 'PASS %s' % name))
    else:
        first = next((l for l in r.stderr.splitlines() if 'error' in l), '')
        lines.append(('FAIL', 'FAIL %s: %s' % (name, first)))
    passed = sum(1 for s, _ in lines if s == 'PASS')
    return lines, passed, len(lines) - passed


def main(argv):
    os.chdir(ROOT)
    if argv[:1] == ['--print']:
        include = os.environ.get('OUR_INCLUDE') or 'include'
        cc = os.environ.get('CC') or 'cc'
        cflags = shlex.split(os.environ.get('PROVIDER_ABI_CFLAGS') or '-I' + include + ' -DIBVERBS_PABI_VERSION=34')
        scratch = os.path.join(ROOT, 'build/compat-tests/layout/provider_abi')
        os.makedirs(scratch, exist_ok=True)
        try:
            _got, why = measure(read_table(), cc, cflags, scratch)
        except TableError as e:
            print('%s: %s' % (SUITE, e), file=sys.stderr)
            return 1
        with open(os.path.join(scratch, 'actual')) as f:
            sys.stdout.write(f.read())
        if why:
            print('%s: these keys did not compile:' % SUITE, file=sys.stderr)
            for k in why:
                print('    %s' % k, file=sys.stderr)
            return 1
        return 0
    quiet = os.environ.get('LAYOUT_QUIET') == '1'
    try:
        lines, passed, failed = check()
    except (TableError, OSError) as e:
        print('FAIL %s: %s' % (SUITE, e))
        print('%s: 0 passed, 1 failed, 0 skipped' % SUITE)
        return 1
    for status, text in lines:
        if not (quiet and status == 'PASS'):
            print(text)
    print('%s: %d passed, %d failed, 0 skipped' % (SUITE, passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
