#!/usr/bin/env python3
"""Prototype check: the C prototype cbindgen generates for every
#[no_mangle] extern "C" function of the library against the prototype of
the same name in our hand-written include/infiniband/*.h.

    prototypes.py --generated GEN.h [--scratch DIR]

GEN.h is cbindgen's output for the library's macro-expanded source (see
run.sh).  Both prototypes are put into one C translation unit (ours renamed
__cb_NAME) and gcc decides whether the two function types are compatible
(__builtin_types_compatible_p: typedefs resolved, parameter names and
top-level qualifiers of parameters ignored, everything else, pointee
qualifiers included, compared).  Types cbindgen names without their tag
(types defined in the ibverbs-abi crate) are resolved to the header's
struct/union/enum of that name.

Per exported function:
  PASS NAME                        same type as the header's NAME
  PASS __X_1_1 (as X@@IBVERBS_1.1) a .symver target: against the header's X
  FAIL NAME: header <T1>, ours <T2>
  FAIL NAME: does not compile ...  (cbindgen's prototype uses an unknown type)
  SKIP NAME: ABI-only export ...   _1_0 names (IBVERBS_1.0 layouts) and other
                                   exports no public header declares
Environment: OUR_INCLUDE (default include), CC (default cc), CLANG (default clang).
"""

import argparse
import json
import os
import re
import subprocess
import sys

SUITE = 'prototypes'
HEADERS = ['verbs.h', 'driver.h', 'verbs_api.h', 'ib_user_ioctl_verbs.h', 'opcode.h',
           'arch.h', 'sa.h', 'sa-kern-abi.h', 'tm_types.h']
C_WORDS = set('''void char short int long float double signed unsigned const volatile
struct union enum restrict _Bool bool extern static inline'''.split()) | {
    'int8_t', 'int16_t', 'int32_t', 'int64_t', 'uint8_t', 'uint16_t', 'uint32_t',
    'uint64_t', 'intptr_t', 'uintptr_t', 'size_t', 'ssize_t'}


def statements(text):
    """cbindgen's output as top-level statements (preprocessor lines and
    comments dropped), each as one line of text."""
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    text = '\n'.join(l for l in text.split('\n') if not l.lstrip().startswith('#'))
    out, cur, depth = [], [], 0
    for c in text:
        cur.append(c)
        if c in '({':
            depth += 1
        elif c in ')}':
            depth -= 1
        elif c == ';' and depth == 0:
            s = ' '.join(''.join(cur).split())
            if s != ';':
                out.append(s)
            cur = []
    return out


def functions(gen_text):
    """{name: declaration} of the functions in cbindgen's output."""
    fns = {}
    for s in statements(gen_text):
        if s.startswith(('typedef ', 'struct ', 'union ', 'enum ')) and '(' not in s.split('{')[0]:
            continue
        m = re.match(r'^(?:extern\s+)?([^()]*?)\b([A-Za-z_]\w*)\s*\((.*)\)\s*;$', s)
        if m:
            fns[m.group(2)] = s
    return fns


def header_decls(include, clang, scratch):
    """{name: (header file, type string)} of every function declared in our
    headers (from clang's AST), and {tag name: 'struct'|'union'|'enum'},
    and the set of typedef names."""
    tu = os.path.join(scratch, 'all-headers.c')
    with open(tu, 'w') as f:
        for h in HEADERS:
            f.write('#include <infiniband/%s>\n' % h)
    r = subprocess.run([clang, '-w', '-fsyntax-only', '-std=gnu11', '-I', include,
                        '-Xclang', '-ast-dump=json', tu],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        raise RuntimeError('clang cannot parse our headers: %s' % r.stderr.strip()[:500])
    ast = json.loads(r.stdout)
    inc = os.path.realpath(os.path.join(include, 'infiniband'))
    fns, tags, typedefs = {}, {}, set()
    cur = None
    for n in ast.get('inner', []):
        loc = n.get('loc', {})
        for k in ('spellingLoc', 'expansionLoc'):
            if 'file' in loc.get(k, {}):
                loc = loc[k]
                break
        if 'file' in loc:
            cur = loc['file']
        ours = cur is not None and os.path.realpath(cur).startswith(inc + os.sep)
        kind, name = n.get('kind'), n.get('name')
        if not name:
            continue
        if kind == 'FunctionDecl' and ours and name not in fns:
            fns[name] = (os.path.basename(cur), n['type']['qualType'])
        elif kind == 'RecordDecl':
            tags.setdefault(name, n.get('tagUsed', 'struct'))
        elif kind == 'EnumDecl':
            tags.setdefault(name, 'enum')
        elif kind == 'TypedefDecl':
            typedefs.add(name)
    return fns, tags, typedefs


ERR_RE = re.compile(r'probe\.c:(\d+):\d+: (?:fatal )?error: (.*)')


def compare(pairs, decls, tags, typedefs, include, cc, scratch):
    """pairs: [(our name, header name)].  Returns ({our name: 1|0},
    {our name: compiler message})."""
    # bare type names in cbindgen's prototypes -> the headers' tags
    words = set()
    for ours, _h in pairs:
        words |= set(re.findall(r'[A-Za-z_]\w*', decls[ours]))
    prelude = []
    for w in sorted(words):
        if w in tags and w not in typedefs and w not in C_WORDS:
            prelude.append('typedef %s %s %s;' % (tags[w], w, w))
    why = {}
    for _attempt in range(8):
        lines = ['#include <stdio.h>', '#include <stdint.h>', '#include <stddef.h>', '#include <stdbool.h>']
        lines += ['#include <infiniband/%s>' % h for h in HEADERS]
        lines += prelude
        where = {}
        live = [(o, h) for o, h in pairs if o not in why]
        for ours, _h in live:
            d = re.sub(r'\b%s\s*\(' % re.escape(ours), '__cb_%s(' % ours, decls[ours], count=1)
            lines.append(d)
            where[len(lines)] = ours
        lines.append('int main(void)')
        lines.append('{')
        for ours, hdr in live:
            lines.append('\tprintf("%%s %%d\\n", "%s", __builtin_types_compatible_p(__typeof__(%s), __typeof__(__cb_%s)));'
                         % (ours, hdr, ours))
            where[len(lines)] = ours
        lines += ['\treturn 0;', '}']
        src = os.path.join(scratch, 'probe.c')
        with open(src, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        exe = os.path.join(scratch, 'probe')
        r = subprocess.run([cc, '-std=gnu11', '-w', '-fmax-errors=0', '-I', include, '-o', exe, src],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        with open(os.path.join(scratch, 'cc.log'), 'w') as f:
            f.write(r.stderr)
        if r.returncode == 0:
            out = subprocess.run([exe], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
            res = {}
            for l in out.splitlines():
                k, v = l.split()
                res[k] = int(v)
            return res, why
        bad = {}
        for l in r.stderr.splitlines():
            m = ERR_RE.search(l)
            if m and int(m.group(1)) in where and where[int(m.group(1))] not in bad:
                bad[where[int(m.group(1))]] = m.group(2)
        if not bad:
            raise RuntimeError('the probe does not compile: %s' % r.stderr.strip()[:800])
        why.update(bad)
    raise RuntimeError('the probe does not compile after 8 attempts (see %s/cc.log)' % scratch)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument('--generated', required=True)
    ap.add_argument('--scratch', required=True)
    a = ap.parse_args(argv)
    include = os.environ.get('OUR_INCLUDE') or 'include'
    cc = os.environ.get('CC') or 'cc'
    clang = os.environ.get('CLANG') or 'clang'
    with open(a.generated) as f:
        decls = functions(f.read())
    if not decls:
        print('FAIL cbindgen: no function in %s' % a.generated)
        print('%s: 0 passed, 1 failed, 0 skipped' % SUITE)
        return 1
    hdr, tags, typedefs = header_decls(include, clang, a.scratch)
    pairs, skips = [], []
    for name in sorted(decls):
        m = re.match(r'^__(\w+)_1_([01])$', name)
        if name in hdr:
            pairs.append((name, name))
        elif m and m.group(2) == '1' and m.group(1) in hdr and m.group(1) not in decls:
            pairs.append((name, m.group(1)))
        elif m and m.group(2) == '0':
            skips.append((name, 'ABI-only export: %s@IBVERBS_1.0 (IBVERBS_1.0 layouts, in no public header)' % m.group(1)))
        elif m:
            skips.append((name, 'ABI-only export: .symver target of %s@@IBVERBS_1.1, which no public header declares' % m.group(1)))
        else:
            skips.append((name, 'exported, declared in no header under include/infiniband'))
    res, why = compare(pairs, decls, tags, typedefs, include, cc, a.scratch)
    npass = nfail = 0
    for ours, h in pairs:
        label = ours if ours == h else '%s (as %s@@IBVERBS_1.1)' % (ours, h)
        if ours in why:
            print('FAIL %s: does not compile against %s/infiniband/%s: %s [ours: %s]' % (label, include, hdr[h][0], why[ours], decls[ours]))
            nfail += 1
        elif res.get(ours) == 1:
            print('PASS %s' % label)
            npass += 1
        else:
            print('FAIL %s: %s declares %s, ours (cbindgen) is %s' % (label, hdr[h][0], hdr[h][1], decls[ours]))
            nfail += 1
    for name, w in skips:
        print('SKIP %s: %s' % (name, w))
    print('%s: %d passed, %d failed, %d skipped' % (SUITE, npass, nfail, len(skips)))
    return 1 if nfail else 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv[1:]))
    except RuntimeError as e:
        print('FAIL %s: %s' % (SUITE, e))
        print('%s: 0 passed, 1 failed, 0 skipped' % SUITE)
        sys.exit(1)
