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
    # clang's JSON names a location's file only when it differs from the
    # previous location printed (in document order, nested nodes included).
    state = [None]

    def upd(l):
        if 'spellingLoc' in l or 'expansionLoc' in l:
            upd(l.get('spellingLoc', {}))
            upd(l.get('expansionLoc', {}))
        elif 'file' in l:
            state[0] = l['file']

    def walk(n, top):
        upd(n.get('loc', {}))
        here = state[0]
        r = n.get('range', {})
        upd(r.get('begin', {}))
        upd(r.get('end', {}))
        kind, name = n.get('kind'), n.get('name')
        if top and name:
            ours = here is not None and os.path.realpath(here).startswith(inc + os.sep)
            if kind == 'FunctionDecl' and ours and name not in fns:
                fns[name] = (os.path.basename(here), n['type']['qualType'])
            elif kind == 'RecordDecl':
                tags.setdefault(name, n.get('tagUsed', 'struct'))
            elif kind == 'EnumDecl':
                tags.setdefault(name, 'enum')
            elif kind == 'TypedefDecl':
                typedefs.add(name)
        for c in n.get('inner', []):
            walk(c, False)

    for n in ast.get('inner', []):
        walk(n, True)
    return fns, tags, typedefs


def macro_aliases(include, cc, scratch):
    """{macro: identifier} of the object-like macros of our headers whose
    body is one identifier."""
    src = os.path.join(scratch, 'all-headers.c')
    r = subprocess.run([cc, '-w', '-dM', '-E', '-I', include, src],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    out = {}
    for l in r.stdout.splitlines():
        m = re.match(r'#define ([A-Za-z_]\w*) ([A-Za-z_]\w*)\s*$', l)
        if m:
            out[m.group(1)] = m.group(2)
    return out


ERR_RE = re.compile(r'probe\.c:(\d+):\d+: (?:fatal )?error: (.*)')


def compare(pairs, decls, tags, typedefs, include, cc, scratch):
    """pairs: [(our name, header name)].  Returns ({our name: 1|0},
    {our name: compiler message}, {our name: the declaration compared})."""
    # Bare type names in cbindgen's prototypes (types of the ibverbs-abi
    # crate, which it does not see) -> the headers' struct/union/enum tags.
    # A typedef cannot do this: many command structs share their name with a
    # function (struct ibv_query_port, ibv_query_port()).
    # verbs_api.h renames some enums with macros (ibv_advise_mr_advice is
    # enum ib_uverbs_advise_mr_advice): the tag is looked up by what the
    # name expands to.
    aliases = macro_aliases(include, cc, scratch)

    def tagged(decl):
        def sub(m):
            w = m.group(2)
            t = aliases.get(w, w)
            if m.group(1) or t not in tags or w in typedefs or w in C_WORDS:
                return m.group(0)
            return '%s %s' % (tags[t], w)
        return re.sub(r'\b(struct\s+|union\s+|enum\s+)?([A-Za-z_]\w*)\b(?!\s*[,)\[(])', sub, decl)
    decls = {k: tagged(v) for k, v in decls.items()}
    why = {}
    for _attempt in range(8):
        lines = ['#include <stdio.h>', '#include <stdint.h>', '#include <stddef.h>', '#include <stdbool.h>']
        lines += ['#include <infiniband/%s>' % h for h in HEADERS]
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
            return res, why, decls
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
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, '..', '..', 'symbols.map')) as f:
        mapped = set(re.findall(r'^\s*([A-Za-z_]\w*)\s*;', f.read(), flags=re.M))
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
        elif name in mapped:
            skips.append((name, 'in symbols.map, declared in no header under include/infiniband'))
        else:
            skips.append((name, 'extern "C" in the crate, not in symbols.map (local to libibverbs.so.1)'))
    res, why, decls = compare(pairs, decls, tags, typedefs, include, cc, a.scratch)
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
