#!/usr/bin/env python3
"""Header layout/API equality test: our include/infiniband/*.h against upstream's.

Everything that is probed is derived from UPSTREAM's headers:
  * clang -Xclang -ast-dump=json gives records (recursively, through anonymous
    and nested members), typedefs, enums, functions and variables declared in
    <upstream>/infiniband/<header>;
  * gcc -dD -E gives the macros defined there;
  * a generated C probe prints sizeof/alignof/offsetof/bit-field positions,
    enum constant values and integer-macro values; it is compiled and run once
    against the upstream headers and once against ours, and the two outputs are
    compared;
  * declarations (field types, typedef targets, function types) are compared
    as canonical type strings taken from the two ASTs.
Also: each header must compile on its own (C and C++) with at least the flag
sets that upstream's copy survives, and a C++11 TU including all our headers
must compile.

Usage: layout.py [header.h ...]      (default: all covered headers)
Environment: OUR_INCLUDE, UPSTREAM_INCLUDE, LAYOUT_QUIET=1 (hide PASS lines),
             LAYOUT_NOCACHE=1, LAYOUT_VERBOSE=1 (show compiler output).
"""

import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

HEADERS = ['verbs.h', 'verbs_api.h', 'ib_user_ioctl_verbs.h', 'opcode.h',
           'arch.h', 'sa.h', 'sa-kern-abi.h', 'tm_types.h']
# Upstream installs these too, but they belong to providers (out of scope).
VENDOR_HEADERS = ['mlx4dv.h', 'mlx5dv.h', 'mlx5_api.h',
                  'mlx5_user_ioctl_verbs.h', 'efadv.h', 'manadv.h']

# Flag sets tried for the standalone-compile checks.  Our header must pass
# every set that upstream's copy (compiled as a non-system header) passes.
STANDALONE_FLAGS = [
    ('gcc', 'c', '-std=gnu11 -Wall -Wextra -Werror -Wno-cpp'),
    ('gcc', 'c', '-std=c99 -Wall -Wextra -Werror -Wno-cpp'),
    ('gcc', 'c', '-std=gnu89 -Wall -Werror -Wno-cpp'),
    ('gcc', 'c', '-std=c11 -Wall -Wextra -Werror -Wno-cpp -pedantic'),
    ('g++', 'c++', '-std=c++11 -Wall -Wextra -Werror -Wno-cpp'),
    ('g++', 'c++', '-std=c++17 -Wall -Wextra -Werror -Wno-cpp'),
    ('g++', 'c++', '-std=c++11 -Wall -Wextra -Werror -Wno-cpp -pedantic'),
    ('clang', 'c', '-std=gnu11 -Wall -Wextra -Werror -Wno-#warnings'),
    ('clang++', 'c++', '-std=c++11 -Wall -Wextra -Werror -Wno-#warnings'),
]

# Extra configurations whose declarations are compared too (no probe): what
# upstream declares only under them, and (C++) the language linkage.
VARIANTS = [
    ('-DRDMA_STATIC_PROVIDERS=all', ['-DRDMA_STATIC_PROVIDERS=all'], 'c'),
    ('C++11', [], 'c++'),
]

PROBE_CFLAGS = ['-std=gnu11', '-w', '-O0', '-fmax-errors=0',
                '-ftrack-macro-expansion=0', '-fno-diagnostics-show-caret']

VERBOSE = os.environ.get('LAYOUT_VERBOSE') == '1'
QUIET = os.environ.get('LAYOUT_QUIET') == '1'

# Two-release runs (run.sh): each pass is labelled ("[rdma-core 65] ...");
# the pass against the newest release records the names of the checks that
# passed (LAYOUT_RECORD); the pass against an older release reads them
# (LAYOUT_NEWER) and accepts a difference from the older header in a check
# whose entity equals the newer header's: the type grew as upstream's did,
# which upstream keeps compatible (same soname).  LAYOUT_NO_HOOK=1 leaves
# out the provider-ABI checks; LAYOUT_COUNTS=<file> writes the counts there
# (JSON) instead of printing the closing line.
LABEL = os.environ.get('LAYOUT_LABEL', '')
NEWER_LABEL = os.environ.get('LAYOUT_NEWER_LABEL', 'the newer release')


def _newer_passed():
    p = os.environ.get('LAYOUT_NEWER')
    if not p:
        return set()
    with open(p) as f:
        return set(json.load(f))


NEWER = _newer_passed()


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, errors='replace', **kw)


def have(tool):
    return shutil.which(tool) is not None


# --------------------------------------------------------------------------
# type-string canonicalisation

ANON_RE = re.compile(r'(?:[A-Za-z_]\w*::)*\((?:unnamed|anonymous)[^()]*\)')
TOKEN_RE = re.compile(r'[A-Za-z_]\w*|\.\.\.|\S')
TAG_KW = {'struct', 'union', 'enum'}


def pretty(toks):
    out = ''
    prev = None
    for t in toks:
        if prev is not None and not (prev in ('(', '[', '<') or t in (')', ']', ',', '>')
                                     or (prev == '*' and t in ('*', ')'))):
            out += ' '
        out += t
        prev = t
    return out


def norm_type(s):
    """Whitespace/anonymous-tag normalisation of a clang type string."""
    return pretty(TOKEN_RE.findall(ANON_RE.sub('<anon>', s)))


def canon_type(s, typedefs, _depth=0):
    """Replace every typedef name by its underlying type, recursively."""
    s = ANON_RE.sub('<anon>', s)
    toks = TOKEN_RE.findall(s)
    out = []
    changed = False
    prev = None
    for t in toks:
        if prev not in TAG_KW and t in typedefs:
            out.extend(TOKEN_RE.findall(ANON_RE.sub('<anon>', typedefs[t])))
            changed = True
        else:
            out.append(t)
        prev = t
    r = ' '.join(out).replace('< anon >', '<anon>')
    if changed and _depth < 30:
        return canon_type(r, typedefs, _depth + 1)
    return r


# --------------------------------------------------------------------------
# AST extraction

class LocTracker:
    """clang's JSON dumper omits "file"/"line" when unchanged since the
    previously written location; replay that state in document order."""

    def __init__(self):
        self.file = None

    def loc(self, l):
        if not isinstance(l, dict):
            return None
        if 'spellingLoc' in l or 'expansionLoc' in l:
            self.loc(l.get('spellingLoc'))
            return self.loc(l.get('expansionLoc'))
        if 'file' in l:
            self.file = l['file']
        return self.file


def ast_model(compiler_args, tu_text, workdir, tag, header_dir, lang='c'):
    """Return a model of the declarations located in header_dir/*.h."""
    os.makedirs(workdir, exist_ok=True)
    tu = os.path.join(workdir, 'ast-%s.%s' % (tag, 'c' if lang == 'c' else 'cc'))
    with open(tu, 'w') as f:
        f.write(tu_text)
    std = ['-x', 'c', '-std=gnu11'] if lang == 'c' else ['-x', 'c++', '-std=c++11']
    r = run(['clang'] + std + ['-w', '-ferror-limit=0',
             '-Xclang', '-ast-dump=json', '-fsyntax-only'] + compiler_args + [tu])
    model = {'records': {}, 'typedefs': {}, 'enums': {}, 'enumconsts': {},
             'functions': {}, 'vars': {}, 'all_typedefs': {}, 'errors': [], 'tu': tu}
    if not r.stdout.strip():
        model['errors'].append('clang produced no AST: ' + r.stderr.strip()[:2000])
        return model
    model['errors'] = [l for l in r.stderr.splitlines() if 'error:' in l]
    try:
        ast = json.loads(r.stdout)
    except ValueError as e:
        model['errors'].append('cannot parse clang AST: %s' % e)
        return model
    hdir = os.path.realpath(header_dir)
    lt = LocTracker()
    realcache = {}

    def header_of(path):
        if path is None:
            return None
        if path not in realcache:
            rp = os.path.realpath(path)
            realcache[path] = os.path.basename(rp) if os.path.dirname(rp) == hdir else None
        return realcache[path]

    def track(node):
        """Update location state for node's own loc/range; return its file."""
        f = lt.loc(node.get('loc'))
        rng = node.get('range')
        if isinstance(rng, dict):
            lt.loc(rng.get('begin'))
            lt.loc(rng.get('end'))
        return f

    def skip_subtree(node):
        # still replay locations inside, to keep the tracker consistent
        for c in node.get('inner', ()) or ():
            track(c)
            skip_subtree(c)

    def qual(t):
        return (t or {}).get('qualType', '')

    def add_record(node, name, hdr):
        rec = {'header': hdr, 'tag': node.get('tagUsed'),
               'complete': bool(node.get('completeDefinition')), 'fields': []}
        walk_fields(node, '', rec['fields'], hdr)
        old = model['records'].get(name)
        if old is None or (rec['complete'] and not old['complete']):
            model['records'][name] = rec

    def add_enum(node, hdr):
        name = node.get('name')
        consts = []
        for c in node.get('inner', ()) or ():
            track(c)
            if c.get('kind') == 'EnumConstantDecl':
                consts.append(c['name'])
            skip_subtree(c)
        if not consts and not name:
            return
        key = 'enum ' + name if name else 'enum <anon %s>' % consts[0]
        fixed = qual(node.get('fixedUnderlyingType')) or None
        if key not in model['enums'] or consts:
            model['enums'][key] = {'header': hdr, 'consts': consts, 'named': bool(name),
                                   'fixed': fixed}
        for c in consts:
            model['enumconsts'].setdefault(c, {'header': hdr, 'enum': key})

    def walk_fields(node, prefix, out, hdr):
        last_anon = None
        for c in node.get('inner', ()) or ():
            f = track(c)
            k = c.get('kind')
            if k == 'CXXRecordDecl':
                if c.get('isImplicit'):
                    skip_subtree(c)
                    continue
                k = 'RecordDecl'
            if k == 'RecordDecl':
                if c.get('name'):
                    # a named struct defined inside another one is a file-scope tag in C
                    add_record(c, '%s %s' % (c.get('tagUsed'), c['name']), hdr)
                    last_anon = None
                else:
                    last_anon = c
                    # the fields are walked when the FieldDecl using it is seen;
                    # replay its locations now (document order)
                    skip_subtree(c)
                continue
            if k == 'EnumDecl':
                add_enum(c, header_of(f) or hdr)
                continue
            if k != 'FieldDecl':
                skip_subtree(c)
                continue
            skip_subtree(c)
            t = c.get('type', {})
            qt = qual(t)
            name = c.get('name')
            anon_type = ANON_RE.search(qt) is not None
            if not name:
                # anonymous struct/union member: its fields belong to this level
                if last_anon is not None:
                    walk_fields_nolocs(last_anon, prefix, out, hdr)
                continue
            path = prefix + name
            out.append({'path': path, 'type': qt,
                        'desugared': t.get('desugaredQualType', qt),
                        'bitfield': bool(c.get('isBitfield')),
                        'flex': qt.rstrip().endswith('[]')})
            if anon_type and last_anon is not None:
                sub = path
                m = re.search(r'(\[[^\]]*\])+\s*$', qt)
                if m:
                    sub += '[0]' * m.group(0).count('[')
                walk_fields_nolocs(last_anon, sub + '.', out, hdr)

    def walk_fields_nolocs(node, prefix, out, hdr):
        # Same as walk_fields, for a subtree whose locations were replayed already.
        saved = lt.file
        lt.file = None
        try:
            _walk_quiet(node, prefix, out, hdr)
        finally:
            lt.file = saved

    def _walk_quiet(node, prefix, out, hdr):
        last_anon = None
        for c in node.get('inner', ()) or ():
            k = c.get('kind')
            if k == 'CXXRecordDecl':
                if c.get('isImplicit'):
                    continue
                k = 'RecordDecl'
            if k == 'RecordDecl':
                if c.get('name'):
                    last_anon = None
                else:
                    last_anon = c
                continue
            if k != 'FieldDecl':
                continue
            t = c.get('type', {})
            qt = qual(t)
            name = c.get('name')
            if not name:
                if last_anon is not None:
                    _walk_quiet(last_anon, prefix, out, hdr)
                continue
            path = prefix + name
            out.append({'path': path, 'type': qt,
                        'desugared': t.get('desugaredQualType', qt),
                        'bitfield': bool(c.get('isBitfield')),
                        'flex': qt.rstrip().endswith('[]')})
            if ANON_RE.search(qt) and last_anon is not None:
                sub = path
                m = re.search(r'(\[[^\]]*\])+\s*$', qt)
                if m:
                    sub += '[0]' * m.group(0).count('[')
                _walk_quiet(last_anon, sub + '.', out, hdr)

    def nested_named_records(node, hdr):
        # named records declared inside anonymous records (walked quietly)
        for c in node.get('inner', ()) or ():
            if c.get('kind') in ('RecordDecl', 'CXXRecordDecl') and not c.get('isImplicit'):
                if c.get('name'):
                    add_record_quiet(c, '%s %s' % (c.get('tagUsed'), c['name']), hdr)
                else:
                    nested_named_records(c, hdr)
            elif c.get('kind') == 'EnumDecl':
                pass

    def add_record_quiet(node, name, hdr):
        rec = {'header': hdr, 'tag': node.get('tagUsed'),
               'complete': bool(node.get('completeDefinition')), 'fields': []}
        _walk_quiet(node, '', rec['fields'], hdr)
        old = model['records'].get(name)
        if old is None or (rec['complete'] and not old['complete']):
            model['records'][name] = rec

    state = {'pending_anon': None}  # file-scope unnamed record, possibly named by a typedef

    def top(nodes, linkage):
        for node in nodes:
            f = track(node)
            k = node.get('kind')
            if k == 'CXXRecordDecl':
                k = 'RecordDecl'
            if k == 'LinkageSpecDecl':
                top(node.get('inner', ()) or (), node.get('language'))
                continue
            hdr = header_of(f)
            if k == 'TypedefDecl' and not node.get('isImplicit'):
                t = node.get('type', {})
                model['all_typedefs'][node['name']] = qual(t)
            if hdr is None or node.get('isImplicit'):
                if k == 'RecordDecl' and not node.get('name') and hdr is None:
                    state['pending_anon'] = None
                skip_subtree(node)
                continue
            if k == 'RecordDecl':
                if node.get('name'):
                    add_record(node, '%s %s' % (node.get('tagUsed'), node['name']), hdr)
                    state['pending_anon'] = None
                else:
                    state['pending_anon'] = (node, hdr)
                    skip_subtree(node)
                    nested_named_records(node, hdr)
            elif k == 'EnumDecl':
                add_enum(node, hdr)
            elif k == 'TypedefDecl':
                skip_subtree(node)
                t = node.get('type', {})
                qt = qual(t)
                model['typedefs'][node['name']] = {'header': hdr, 'type': qt}
                pa = state['pending_anon']
                if pa is not None and (
                        (ANON_RE.search(qt) and not qt.rstrip().endswith('*')) or
                        re.match(r'^(struct|union) %s$' % re.escape(node['name']), qt.strip())):
                    add_record_quiet(pa[0], node['name'], pa[1])
                state['pending_anon'] = None
            elif k == 'FunctionDecl':
                skip_subtree(node)
                name = node['name']
                ent = {'header': hdr, 'type': qual(node.get('type')),
                       'storage': node.get('storageClass', 'extern'),
                       'inline': bool(node.get('inline')),
                       'linkage': linkage,
                       'attrs': sorted({c.get('kind') for c in node.get('inner', ()) or ()
                                        if c.get('kind', '').endswith('Attr')})}
                old = model['functions'].get(name)
                if old is None:
                    model['functions'][name] = ent
                else:
                    old['inline'] = old['inline'] or ent['inline']
                    old['attrs'] = sorted(set(old['attrs']) | set(ent['attrs']))
            elif k == 'VarDecl':
                skip_subtree(node)
                model['vars'].setdefault(node['name'], {
                    'header': hdr, 'type': qual(node.get('type')),
                    'storage': node.get('storageClass', ''), 'linkage': linkage})
            else:
                skip_subtree(node)

    top(ast.get('inner', []), None)
    return model


# --------------------------------------------------------------------------
# macros

DEFINE_RE = re.compile(r'^#define ([A-Za-z_]\w*)(\([^)]*\))?(?:\s(.*))?$')
UNDEF_RE = re.compile(r'^#undef ([A-Za-z_]\w*)')
LINEMARK_RE = re.compile(r'^# \d+ "(.*)"')


def macro_model(compiler_args, tu_path, header_dir, lang='c'):
    std = ['-x', 'c', '-std=gnu11'] if lang == 'c' else ['-x', 'c++', '-std=c++11']
    r = run(['gcc', '-E', '-dD', '-w'] + std + compiler_args + [tu_path])
    hdir = os.path.realpath(header_dir)
    macros = {}
    cur = None
    cache = {}
    for line in r.stdout.splitlines():
        m = LINEMARK_RE.match(line)
        if m:
            p = m.group(1)
            if p not in cache:
                rp = os.path.realpath(p)
                cache[p] = os.path.basename(rp) if os.path.dirname(rp) == hdir else None
            cur = cache[p]
            continue
        if not line.startswith('#'):
            continue
        m = DEFINE_RE.match(line)
        if m:
            name, params, body = m.group(1), m.group(2), (m.group(3) or '').strip()
            if cur is not None:
                plist = None
                if params is not None:
                    plist = [x.strip() for x in params[1:-1].split(',') if x.strip()]
                macros[name] = {'header': cur, 'params': plist, 'body': body,
                                'tokens': ' '.join(TOKEN_RE.findall(body))}
            else:
                macros.pop(name, None)
            continue
        m = UNDEF_RE.match(line)
        if m:
            macros.pop(m.group(1), None)
    return macros, (r.returncode, r.stderr)


# --------------------------------------------------------------------------
# the probe

PROBE_PRELUDE = r'''
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#define PV(k, x) ((x) < 0 ? printf("%s\t%lld\n", k, (long long)(x)) \
                          : printf("%s\t%llu\n", k, (unsigned long long)(x)))
#define PS(k, x) printf("%s\t%s\n", k, ((__typeof__(x))-1 < 0) ? "signed" : "unsigned")
static void bitrange(const char *k, const unsigned char *b, size_t n)
{
	size_t i, first = (size_t)-1, cnt = 0;
	for (i = 0; i < n * 8; i++)
		if (b[i / 8] & (1u << (i % 8))) {
			if (first == (size_t)-1)
				first = i;
			cnt++;
		}
	printf("%s\t%zu/%zu\n", k, first, cnt);
}
#define BF(k, T, M) do { union { T s; unsigned char b[sizeof(T)]; } u_; \
	memset(&u_, 0, sizeof(u_)); u_.s.M = -1; bitrange(k, u_.b, sizeof(u_)); } while (0)
int main(void)
{
'''


def probe_lines(up, macro_int_candidates):
    """(key, C statement) for everything we want measured."""
    lines = []
    for name, rec in up['records'].items():
        if not rec['complete']:
            continue
        lines.append(('%s|sizeof' % name, 'PV("%s|sizeof", sizeof(%s));' % (name, name)))
        lines.append(('%s|alignof' % name, 'PV("%s|alignof", _Alignof(%s));' % (name, name)))
        for fd in rec['fields']:
            p = fd['path']
            base = '%s|.%s' % (name, p)
            if fd['bitfield']:
                lines.append((base + '|bits', 'BF("%s|bits", %s, %s);' % (base, name, p)))
                continue
            lines.append((base + '|offsetof',
                          'PV("%s|offsetof", offsetof(%s, %s));' % (base, name, p)))
            if not fd['flex']:
                lines.append((base + '|sizeof',
                              'PV("%s|sizeof", sizeof(((%s *)0)->%s));' % (base, name, p)))
                lines.append((base + '|alignof',
                              'PV("%s|alignof", _Alignof(__typeof__(((%s *)0)->%s)));' % (base, name, p)))
    for name in up['typedefs']:
        lines.append(('typedef %s|sizeof' % name, 'PV("typedef %s|sizeof", sizeof(%s));' % (name, name)))
        lines.append(('typedef %s|alignof' % name, 'PV("typedef %s|alignof", _Alignof(%s));' % (name, name)))
    for key, en in up['enums'].items():
        if en['named']:
            lines.append(('%s|sizeof' % key, 'PV("%s|sizeof", sizeof(%s));' % (key, key)))
            lines.append(('%s|signed' % key, 'PS("%s|signed", (%s)0);' % (key, key)))
    for c in up['enumconsts']:
        lines.append(('const %s|value' % c, 'PV("const %s|value", %s);' % (c, c)))
        lines.append(('const %s|sizeof' % c, 'PV("const %s|sizeof", sizeof(%s));' % (c, c)))
    for m in macro_int_candidates:
        chk = '_Static_assert(((%s) | 0) || 1, "");' % m
        lines.append(('macro %s|value' % m, '{ %s PV("macro %s|value", (%s)); }' % (chk, m, m)))
        lines.append(('macro %s|sizeof' % m, '{ %s PV("macro %s|sizeof", sizeof(%s)); }' % (chk, m, m)))
        lines.append(('macro %s|signed' % m, '{ %s PS("macro %s|signed", (%s)); }' % (chk, m, m)))
        # pointer-valued macros (e.g. ((void *)-1)): compare the address
        pchk = ('_Static_assert(__builtin_classify_type(%s) == 5 && __builtin_constant_p(%s), "");'
                % (m, m))
        lines.append(('pmacro %s|value' % m,
                      '{ %s PV("pmacro %s|value", (unsigned long long)(__UINTPTR_TYPE__)(%s)); }' % (pchk, m, m)))
    return lines


ERR_RE = re.compile(r'^(.*?):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$')


def build_probe(workdir, tag, includes, lines, compiler_args):
    """Compile (dropping lines that do not compile) and run the probe.
    Returns (values, dropped{key: error}, fatal_error_or_None)."""
    src = os.path.join(workdir, 'probe-%s.c' % tag)
    exe = os.path.join(workdir, 'probe-%s' % tag)
    dropped = {}
    active = list(lines)
    for _ in range(6):
        head = ''.join('#include <infiniband/%s>\n' % h for h in includes) + PROBE_PRELUDE
        first = head.count('\n') + 1
        with open(src, 'w') as f:
            f.write(head)
            for _k, stmt in active:
                f.write('\t' + stmt + '\n')
            f.write('\treturn 0;\n}\n')
        r = run(['gcc'] + PROBE_CFLAGS + compiler_args + ['-o', exe, src])
        if r.returncode == 0:
            break
        bad = {}
        other = []
        for l in r.stderr.splitlines():
            m = ERR_RE.match(l)
            if not m:
                continue
            if os.path.realpath(m.group(1)) == os.path.realpath(src):
                n = int(m.group(2)) - first
                if 0 <= n < len(active):
                    bad.setdefault(n, m.group(3))
                    continue
            other.append(l)
        if not bad:
            return {}, dropped, '\n'.join(other[:20]) or r.stderr[-2000:]
        for n, msg in bad.items():
            dropped[active[n][0]] = msg
        active = [a for i, a in enumerate(active) if i not in bad]
    else:
        return {}, dropped, 'probe still does not compile after 6 rounds'
    r = run(os.environ.get('LAYOUT_EXEC', '').split() + [exe])
    if r.returncode != 0:
        return {}, dropped, 'probe crashed: rc=%d %s' % (r.returncode, r.stderr[-500:])
    vals = {}
    for l in r.stdout.splitlines():
        k, _, v = l.partition('\t')
        vals[k] = v
    return vals, dropped, None


# --------------------------------------------------------------------------

class Reporter:
    def __init__(self):
        self.passed = self.failed = self.skipped = self.diffs = self.warns = 0
        self.newer = 0
        self.passed_names = []

    def check(self, name, diffs):
        seen = set()
        diffs = [d for d in diffs if not (d in seen or seen.add(d))]
        key = name
        if LABEL:
            name = '[%s] %s' % (LABEL, name)
        if diffs and key in NEWER:
            # equal to the newer release's header, which grew compatibly
            self.passed += 1
            self.newer += 1
            print('PASS %s (as in %s; here: %s%s)' % (
                name, NEWER_LABEL, diffs[0], ' (+%d more)' % (len(diffs) - 1) if len(diffs) > 1 else ''))
            return
        if not diffs:
            self.passed_names.append(key)
        if diffs:
            self.failed += 1
            self.diffs += len(diffs)
            more = ' (+%d more)' % (len(diffs) - 1) if len(diffs) > 1 else ''
            print('FAIL %s: %s%s' % (name, diffs[0], more))
            for d in diffs[1:]:
                print('    %s' % d)
        else:
            self.passed += 1
            if not QUIET:
                print('PASS %s' % name)

    def skip(self, name, why):
        self.skipped += 1
        print('SKIP %s%s: %s' % ('[%s] ' % LABEL if LABEL else '', name, why))

    def warn(self, name, why):
        self.warns += 1
        print('WARN %s%s: %s' % ('[%s] ' % LABEL if LABEL else '', name, why))


def write_atomic(path, text):
    tmp = '%s.tmp-%d' % (path, os.getpid())
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, path)


def file_digest(paths, extra=''):
    h = hashlib.sha256(extra.encode())
    for p in sorted(paths):
        h.update(p.encode())
        try:
            with open(p, 'rb') as f:
                h.update(f.read())
        except OSError:
            h.update(b'<missing>')
    return h.hexdigest()[:24]


def tool_versions():
    out = []
    for t in ('gcc', 'g++', 'clang'):
        if have(t):
            out.append(run([t, '--version']).stdout.split('\n', 1)[0])
    return '|'.join(out)


INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"](?:infiniband/)?([^>"/]+)[>"]', re.M)


def include_closure(header, our_dir):
    """Digest of header and of the headers of our_dir it includes (recursively)."""
    seen, todo = {}, [header]
    while todo:
        h = todo.pop()
        if h in seen:
            continue
        try:
            with open(os.path.join(our_dir, h), 'rb') as f:
                data = f.read()
        except OSError:
            seen[h] = '<absent>'
            continue
        seen[h] = hashlib.sha256(data).hexdigest()
        todo.extend(INCLUDE_RE.findall(data.decode('utf-8', 'replace')))
    return ','.join('%s=%s' % kv for kv in sorted(seen.items()))


def standalone(cc, lang, flags, inc_args, header, workdir, tag):
    src = os.path.join(workdir, 'sa-%s-%s.%s' % (tag, header.replace('.', '_'),
                                                  'c' if lang == 'c' else 'cc'))
    with open(src, 'w') as f:
        f.write('#include <infiniband/%s>\n' % header)
    r = run([cc, '-fsyntax-only'] + flags.split() + inc_args + [src])
    return r.returncode == 0, r.stderr


def main(argv):
    root = os.getcwd()
    our_inc = os.path.abspath(os.environ.get('OUR_INCLUDE', 'include'))
    up_inc = os.path.abspath(os.environ.get('UPSTREAM_INCLUDE', '/usr/include'))
    up_dir = os.path.join(up_inc, 'infiniband')
    our_dir = os.path.join(our_inc, 'infiniband')
    cachedir = os.path.join(root, 'build', 'compat-tests', 'layout')
    # per-run scratch: several people may run the suite at the same time
    work = os.path.join(cachedir, 'run-%d' % os.getpid())
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if os.environ.get('LAYOUT_KEEP') != '1':
        import atexit
        atexit.register(shutil.rmtree, work, True)
    rep = Reporter()

    sel = []
    for a in argv:
        a = os.path.basename(a)
        if not a.endswith('.h'):
            a += '.h'
        if a == 'driver.h':
            continue  # provider ABI: handled by the hook
        if a not in HEADERS:
            print('FAIL args: %s is not one of the covered headers (%s, driver.h)' % (a, ' '.join(HEADERS)))
            rep.failed += 1
            continue
        sel.append(a)
    if rep.failed:
        return finish(rep, argv)
    if argv and not sel:
        hook(rep, root, argv)  # only driver.h was asked for
        return finish(rep, argv)
    sel = sel or list(HEADERS)

    # prerequisites
    missing_tools = [t for t in ('gcc', 'g++', 'clang') if not have(t)]
    if missing_tools:
        print('FAIL prerequisites: missing %s (apt-get install -y clang g++)' % ' '.join(missing_tools))
        return finish(rep, argv)
    miss_up = [h for h in sel if not os.path.isfile(os.path.join(up_dir, h))]
    if miss_up:
        print('FAIL prerequisites: upstream headers missing in %s: %s '
              '(install libibverbs-dev)' % (up_dir, ' '.join(miss_up)))
        return finish(rep, argv)

    # shadow directory: an upstream header missing from ours falls back to
    # upstream's copy (so the rest can still be compared), which the
    # dependency check below reports.
    shadow = os.path.join(cachedir, 'shadow')
    shadow_ib = os.path.join(shadow, 'infiniband')
    os.makedirs(shadow_ib, exist_ok=True)
    for h in HEADERS + VENDOR_HEADERS:
        if os.path.isfile(os.path.join(up_dir, h)):
            text = ('/* generated by compat-tests/layout: %s is missing from OUR_INCLUDE */\n'
                    '#include "%s"\n' % (h, os.path.join(up_dir, h)))
        else:
            text = ('/* generated by compat-tests/layout */\n'
                    '#error "infiniband/%s: missing from OUR_INCLUDE and from UPSTREAM_INCLUDE"\n' % h)
        p = os.path.join(shadow_ib, h)
        if not os.path.exists(p) or open(p).read() != text:
            write_atomic(p, text)
    up_args = ['-I' + up_inc]
    our_args = ['-I' + our_inc, '-I' + shadow]

    present = [h for h in sel if os.path.isfile(os.path.join(our_dir, h))]
    shown = os.path.relpath(our_dir, root)
    if shown.startswith('..'):
        shown = our_dir
    for h in sel:
        rep.check('%s: present in %s' % (h, shown),
                  [] if h in present else ['missing'])

    tu_text = ''.join('#include <infiniband/%s>\n' % h for h in sel)

    # ---- upstream side (cached: it only changes with the system headers)
    up_files = [os.path.join(up_dir, h) for h in sorted(os.listdir(up_dir))] if os.path.isdir(up_dir) else []
    rdma_dir = os.path.join(up_inc, 'rdma')
    if os.path.isdir(rdma_dir):
        up_files += [os.path.join(rdma_dir, h) for h in sorted(os.listdir(rdma_dir))]
    with open(os.path.abspath(__file__), 'rb') as f:
        me = f.read().decode('utf-8', 'replace')
    key = file_digest(up_files, extra='|'.join(sel) + tool_versions() + me + up_inc)
    cache = os.path.join(cachedir, 'upstream-cache-%s.json' % key)
    upstream = None
    if os.environ.get('LAYOUT_NOCACHE') != '1' and os.path.exists(cache):
        try:
            with open(cache) as f:
                upstream = json.load(f)
        except (OSError, ValueError):
            upstream = None
    if upstream is None:
        # standalone-compile flag sets that upstream's (non-system) copy passes
        upcopy = os.path.join(work, 'upstream-copy')
        shutil.rmtree(upcopy, ignore_errors=True)
        os.makedirs(os.path.join(upcopy, 'infiniband'))
        for h in os.listdir(up_dir):
            shutil.copy(os.path.join(up_dir, h), os.path.join(upcopy, 'infiniband', h))
        jobs = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
            for h in sel:
                for i, (cc, lang, flags) in enumerate(STANDALONE_FLAGS):
                    jobs[(h, i)] = ex.submit(standalone, cc, lang, flags, ['-I' + upcopy],
                                             h, work, 'up%d' % i)
            up_std = {}
            for (h, i), fut in jobs.items():
                if fut.result()[0]:
                    up_std.setdefault(h, []).append(i)
            fut_ast = ex.submit(ast_model, up_args, tu_text, work, 'up', up_dir)
            tu_up = os.path.join(work, 'ast-up.c')
            up = fut_ast.result()
        macros, _ = macro_model(up_args, tu_up, up_dir)
        up['macros'] = macros
        cand = [m for m, d in sorted(macros.items()) if d['params'] is None and d['tokens']]
        lines = probe_lines(up, cand)
        vals, dropped, fatal = build_probe(work, 'up', sel, lines, up_args)
        if fatal:
            print('FAIL upstream probe: does not compile against upstream headers:\n%s' % fatal)
            rep.failed += 1
            return finish(rep, argv)
        up['int_macros'] = [m for m in cand if 'macro %s|value' % m in vals]
        up['ptr_macros'] = [m for m in cand if 'pmacro %s|value' % m in vals]
        variants = []
        for i, (vname, vargs, vlang) in enumerate(VARIANTS):
            vm = ast_model(up_args + vargs, tu_text, work, 'up-v%d' % i, up_dir, vlang)
            vm['macros'], _ = macro_model(up_args + vargs, vm['tu'], up_dir, vlang)
            variants.append(vm)
        upstream = {'model': up, 'values': vals, 'variants': variants,
                    'lines': [l for l in lines if l[0] not in dropped], 'std': up_std}
        write_atomic(cache, json.dumps(upstream))
        def mtime(p):
            try:
                return os.path.getmtime(p)
            except OSError:
                return 0
        olds = sorted((os.path.join(cachedir, o) for o in os.listdir(cachedir)
                       if o.startswith('upstream-cache-') and o.endswith('.json')), key=mtime)
        for old in olds[:-12]:  # one per header selection; keep the recent ones
            try:
                os.unlink(old)
            except OSError:
                pass
    up = upstream['model']
    up_vals = upstream['values']
    up_std = upstream['std']

    # ---- our side
    tu_ours = os.path.join(work, 'ast-ours.c')
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        fut_ast = ex.submit(ast_model, our_args, tu_text, work, 'ours', our_dir)
        std_jobs = {}
        std_cache_path = os.path.join(cachedir, 'standalone-cache.json')
        try:
            with open(std_cache_path) as f:
                std_cache = json.load(f)
        except (OSError, ValueError):
            std_cache = {}
        std_keys = {}
        tv = tool_versions()
        for h in present:
            closure = include_closure(h, our_dir)
            for i in up_std.get(h, []):
                cc, lang, flags = STANDALONE_FLAGS[i]
                k = hashlib.sha256(('%s|%s|%s|%s|%s' % (tv, cc, flags, ' '.join(our_args), closure)).encode()).hexdigest()
                std_keys[(h, i)] = k
                if k in std_cache and os.environ.get('LAYOUT_NOCACHE') != '1':
                    continue
                std_jobs[(h, i)] = ex.submit(standalone, cc, lang, flags, our_args, h,
                                             work, 'ours%d' % i)
        # C++ TU with all our headers
        cxx_src = os.path.join(work, 'all-ours.cc')
        with open(cxx_src, 'w') as f:
            f.write(tu_text + 'int main() { return 0; }\n')
        fut_cxx = ex.submit(run, ['g++', '-std=c++11', '-fsyntax-only', '-Wno-cpp'] + our_args + [cxx_src])
        deps_src = os.path.join(work, 'deps-ours.c')
        with open(deps_src, 'w') as f:
            f.write(tu_text)
        fut_deps = ex.submit(run, ['gcc', '-M', '-w'] + our_args + [deps_src])
        ours = fut_ast.result()
        macros_ours, _ = macro_model(our_args, tu_ours, our_dir)
        ours['macros'] = macros_ours

        # dependency check: nothing from upstream's infiniband/ directory
        deps = fut_deps.result()
        dep_files = deps.stdout.replace('\\\n', ' ').split()[1:]
        leaks = set()
        fallback = set()
        for d in dep_files:
            rp = os.path.realpath(d)
            if rp.startswith(os.path.realpath(shadow_ib) + '/'):
                fallback.add(os.path.basename(rp))
            elif (os.path.dirname(rp) in (os.path.realpath(up_dir), '/usr/include/infiniband')):
                leaks.add(os.path.basename(rp))
        problems = []
        if fallback:
            problems.append('missing from ours, fell back to upstream: ' + ' '.join(sorted(fallback)))
        leaks -= fallback
        if leaks:
            problems.append('upstream header(s) used directly: ' + ' '.join(sorted(leaks)))
        if deps.returncode != 0 and not problems:
            problems.append('gcc -M failed: ' + deps.stderr.strip()[:500])
        rep.check('no file under %s used by our headers' % up_dir, problems)

        cx = fut_cxx.result()
        cx_diffs = [] if cx.returncode == 0 else \
            ['g++ failed: ' + ' | '.join(l for l in cx.stderr.splitlines() if 'error' in l)[:800]]
        if len(present) != len(sel):
            cx_diffs.append('not all headers are ours (missing: %s)' % ' '.join(h for h in sel if h not in present))
        rep.check('C++: g++ -std=c++11 compiles a TU including %s' % ' '.join(sel), cx_diffs)
        for h in sel:
            if h not in present:
                continue
            errs = []
            for i in up_std.get(h, []):
                if (h, i) in std_jobs:
                    ok, err = std_jobs[(h, i)].result()
                    std_cache[std_keys[(h, i)]] = [ok, err]
                else:
                    ok, err = std_cache[std_keys[(h, i)]]
                if not ok:
                    cc, lang, flags = STANDALONE_FLAGS[i]
                    first = next((l for l in err.splitlines() if 'error' in l), err.strip()[:300])
                    errs.append('%s %s: %s' % (cc, flags, first.strip()))
            rep.check('%s: compiles standalone (%d flag sets upstream passes)' % (h, len(up_std.get(h, []))), errs)

    try:
        live = set(std_keys.values())
        write_atomic(std_cache_path, json.dumps(
            {k: v for k, v in std_cache.items() if k in live or len(std_cache) < 2000}))
    except OSError:
        pass

    if ours['errors'] and VERBOSE:
        print('# clang errors on our headers:\n#   ' + '\n#   '.join(ours['errors'][:40]))

    # ---- probe our side: only what exists there
    our_fields = {n: {f['path'] for f in r['fields']} for n, r in ours['records'].items() if r['complete']}
    exist = set()
    for n, r in ours['records'].items():
        if r['complete']:
            exist.add(n)
    our_lines = []
    for k, stmt in upstream['lines']:
        ent, _, what = k.partition('|')
        if ent.startswith('typedef '):
            ok = ent[8:] in ours['typedefs']
        elif ent.startswith('const '):
            ok = ent[6:] in ours['enumconsts']
        elif ent.startswith('macro '):
            ok = ent[6:] in ours['macros']
        elif ent.startswith('pmacro '):
            ok = ent[7:] in ours['macros']
        elif ent.startswith('enum '):
            ok = ent in ours['enums']
        else:
            ok = ent in exist
            if ok and '|.' in k:
                ok = k.split('|')[1][1:] in our_fields.get(ent, ())
        if ok:
            our_lines.append((k, stmt))
    our_vals, our_dropped, fatal = build_probe(work, 'ours', sel, our_lines, our_args)
    our_fatal = {}
    if fatal:
        # Some header of ours does not compile.  Measure the others in a probe
        # that leaves the broken ones out, against an upstream probe built in
        # the same include context (layouts can depend on it).
        def header_of_key(k):
            ent = k.split('|')[0]
            for kind, tbl in (('typedef ', 'typedefs'), ('const ', 'enumconsts'),
                              ('macro ', 'macros'), ('pmacro ', 'macros')):
                if ent.startswith(kind):
                    return up[tbl].get(ent[len(kind):], {}).get('header')
            if ent in up['enums']:
                return up['enums'][ent]['header']
            return up['records'].get(ent, {}).get('header')
        broken = {}
        for h in sel:
            src = os.path.join(work, 'alone-%s.c' % h.replace('.', '_'))
            with open(src, 'w') as f:
                f.write('#include <infiniband/%s>\n' % h)
            r = run(['gcc', '-fsyntax-only', '-w', '-std=gnu11'] + our_args + [src])
            if r.returncode != 0:
                broken[h] = '\n'.join(l for l in r.stderr.splitlines() if 'error' in l)[:1500] or r.stderr[:1500]
        good = [h for h in sel if h not in broken]
        our_vals, our_dropped, f2 = {}, {}, None
        if good:
            up_lines = [l for l in upstream['lines'] if header_of_key(l[0]) in good]
            ctx_vals, _d, _f_up = build_probe(work, 'up-ctx', good, up_lines, up_args)
            ok_keys = set(ctx_vals)
            up_vals = {k: v for k, v in up_vals.items()
                       if header_of_key(k) not in good or k in ok_keys}
            up_vals.update(ctx_vals)
            gl = [l for l in our_lines if header_of_key(l[0]) in good and l[0] in ok_keys]
            our_vals, our_dropped, f2 = build_probe(work, 'ours-ctx', good, gl, our_args)
        if f2:
            broken.update({h: f2 for h in good})
        for h in sel:
            if h in broken:
                our_fatal[h] = broken[h]
                rep.check('%s: probe compiles against our headers' % h,
                          ['does not compile: ' + broken[h].replace('\n', ' | ')[:1500]])
    compare(rep, sel, up, ours, up_vals, our_vals, our_dropped, our_fatal)
    for i, (vname, vargs, vlang) in enumerate(VARIANTS):
        om = ast_model(our_args + vargs, tu_text, work, 'ours-v%d' % i, our_dir, vlang)
        om['macros'], _ = macro_model(our_args + vargs, om['tu'], our_dir, vlang)
        compare_variant(rep, sel, vname, up, upstream['variants'][i], om)
    hook(rep, root, argv)
    return finish(rep, argv)


def compare(rep, sel, up, ours, up_vals, our_vals, our_dropped, our_fatal):
    up_td = up['all_typedefs']
    our_td = ours['all_typedefs']

    cur = {}

    def vdiff(key, label):
        """Compare one probe value."""
        if key not in up_vals:
            return None
        if key in our_dropped:
            return '%s: does not compile against ours (%s)' % (label, our_dropped[key])
        if cur.get('h') in our_fatal:
            return 'not measured (the probe does not compile against our headers)'
        if key not in our_vals:
            return None  # absent; reported elsewhere
        if up_vals[key] != our_vals[key]:
            return '%s: upstream %s, ours %s' % (label, up_vals[key], our_vals[key])
        return None

    def tcmp(label, up_t, our_t, diffs):
        cu, co = canon_type(up_t, up_td), canon_type(our_t, our_td)
        if cu != co:
            nu, no = norm_type(up_t), norm_type(our_t)
            pu, po = pretty(cu.split()), pretty(co.split())
            diffs.append('%s: type upstream "%s"%s, ours "%s"%s' % (
                label, nu, ' [= %s]' % pu if pu != nu else '', no, ' [= %s]' % po if po != no else ''))
        elif norm_type(up_t) != norm_type(our_t):
            return '%s: spelled "%s" upstream, "%s" ours (same canonical type)' % (
                label, norm_type(up_t), norm_type(our_t))
        return None

    for h in sel:
        cur['h'] = h
        # records
        for name, rec in up['records'].items():
            if rec['header'] != h:
                continue
            label = '%s: %s' % (h, name)
            diffs, warns = [], []
            o = ours['records'].get(name)
            if o is None or (rec['complete'] and not o['complete']):
                rep.check(label, ['missing' if o is None else 'only declared, not defined in ours'])
                continue
            if o['header'] != h:
                warns.append('defined in %s instead of %s' % (o['header'], h))
            for what in ('sizeof', 'alignof'):
                d = vdiff('%s|%s' % (name, what), what)
                if d:
                    diffs.append(d)
            ofields = {f['path']: f for f in o['fields']}
            for fd in rec['fields']:
                p = fd['path']
                of = ofields.get(p)
                if of is None:
                    diffs.append('field %s: missing' % p)
                    continue
                for what in ('offsetof', 'sizeof', 'alignof', 'bits'):
                    d = vdiff('%s|.%s|%s' % (name, p, what), 'field %s %s' % (p, what))
                    if d:
                        diffs.append(d)
                if fd['bitfield'] != of['bitfield']:
                    diffs.append('field %s: bit-field upstream %s, ours %s' % (p, fd['bitfield'], of['bitfield']))
                w = tcmp('field %s' % p, fd['type'], of['type'], diffs)
                if w:
                    warns.append(w)
            upaths = {f['path'] for f in rec['fields']}
            for p in ofields:
                if p not in upaths:
                    diffs.append('field %s: extra in ours' % p)
            if [f['path'] for f in rec['fields'] if f['path'] in ofields] != \
               [f['path'] for f in o['fields'] if f['path'] in upaths]:
                diffs.append('field order differs')
            rep.check(label, diffs)
            for w in warns:
                rep.warn(label, w)
        # typedefs
        for name, td in up['typedefs'].items():
            if td['header'] != h:
                continue
            label = '%s: typedef %s' % (h, name)
            o = ours['typedefs'].get(name)
            if o is None:
                rep.check(label, ['missing'])
                continue
            diffs = []
            for what in ('sizeof', 'alignof'):
                d = vdiff('typedef %s|%s' % (name, what), what)
                if d:
                    diffs.append(d)
            w = tcmp('target', td['type'], o['type'], diffs)
            rep.check(label, diffs)
            if w:
                rep.warn(label, w)
        # enums
        for key, en in up['enums'].items():
            if en['header'] != h:
                continue
            label = '%s: %s' % (h, key)
            diffs = []
            if en['named']:
                if key not in ours['enums']:
                    diffs.append('enum type missing')
                else:
                    for what in ('sizeof', 'signed'):
                        d = vdiff('%s|%s' % (key, what), what)
                        if d:
                            diffs.append(d)
                    if (en.get('fixed') or '') != (ours['enums'][key].get('fixed') or ''):
                        diffs.append('fixed underlying type upstream %s, ours %s' % (
                            en.get('fixed'), ours['enums'][key].get('fixed')))
            for c in en['consts']:
                oc = ours['enumconsts'].get(c)
                if oc is None:
                    if c in ours['macros']:
                        diffs.append('%s: is a macro in ours, an enum constant upstream' % c)
                    else:
                        diffs.append('%s: missing' % c)
                    continue
                if en['named'] and oc['enum'] != key:
                    diffs.append('%s: belongs to %s in ours' % (c, oc['enum']))
                elif not en['named'] and not oc['enum'].startswith('enum <anon'):
                    diffs.append('%s: belongs to %s in ours (anonymous upstream)' % (c, oc['enum']))
                for what in ('value', 'sizeof'):
                    d = vdiff('const %s|%s' % (c, what), '%s %s' % (c, what))
                    if d:
                        diffs.append(d)
            rep.check(label, diffs)
            oe = ours['enums'].get(key) if en['named'] else None
            if oe:
                for c in oe['consts']:
                    if c not in en['consts']:
                        rep.warn(label, 'extra constant %s in ours' % c)
        # functions
        for name, fn in up['functions'].items():
            if fn['header'] != h:
                continue
            label = '%s: function %s' % (h, name)
            o = ours['functions'].get(name)
            if o is None:
                rep.check(label, ['missing' + (' (a macro in ours)' if name in ours['macros'] else '')])
                continue
            diffs = []
            w = tcmp('prototype', fn['type'], o['type'], diffs)
            if fn['storage'] != o['storage']:
                diffs.append('storage class upstream %s, ours %s' % (fn['storage'], o['storage']))
            if fn['inline'] != o['inline']:
                diffs.append('inline upstream %s, ours %s' % (fn['inline'], o['inline']))
            rep.check(label, diffs)
            if w:
                rep.warn(label, w)
            ua, oa = set(fn.get('attrs', ())), set(o.get('attrs', ()))
            if ua != oa:
                rep.warn(label, 'attributes upstream [%s], ours [%s]' % (
                    ', '.join(sorted(ua)), ', '.join(sorted(oa))))
        # variables
        for name, var in up['vars'].items():
            if var['header'] != h:
                continue
            label = '%s: variable %s' % (h, name)
            o = ours['vars'].get(name)
            if o is None:
                rep.check(label, ['missing'])
                continue
            diffs = []
            w = tcmp('type', var['type'], o['type'], diffs)
            if var['storage'] != o['storage']:
                diffs.append('storage class upstream %s, ours %s' % (var['storage'], o['storage']))
            rep.check(label, diffs)
            if w:
                rep.warn(label, w)
        # macros
        int_macros = set(up['int_macros'])
        ptr_macros = set(up.get('ptr_macros', ()))
        for name, m in sorted(up['macros'].items()):
            if m['header'] != h:
                continue
            label = '%s: macro %s' % (h, name)
            o = ours['macros'].get(name)
            if o is None:
                what = 'missing'
                if name in ours['enumconsts']:
                    what += ' (an enum constant in ours)'
                elif name in ours['functions']:
                    what += ' (a function in ours)'
                rep.check(label, [what])
                continue
            diffs = []
            if (m['params'] is None) != (o['params'] is None):
                diffs.append('function-like upstream %s, ours %s' % (m['params'] is not None, o['params'] is not None))
            elif m['params'] is not None:
                if len(m['params']) != len(o['params']) or \
                   (m['params'] and (m['params'][-1].endswith('...')) != (o['params'][-1].endswith('...'))):
                    diffs.append('parameters upstream (%s), ours (%s)' % (', '.join(m['params']), ', '.join(o['params'])))
            elif name in int_macros:
                for what in ('value', 'sizeof', 'signed'):
                    d = vdiff('macro %s|%s' % (name, what), what)
                    if d:
                        diffs.append(d)
            elif name in ptr_macros:
                d = vdiff('pmacro %s|value' % name, 'pointer value')
                if d:
                    diffs.append(d)
            else:
                if m['tokens'] != o['tokens']:
                    if re.match(r'^[A-Za-z_]\w*$', m['tokens'] or ''):
                        diffs.append('expands to "%s" upstream, "%s" ours' % (m['tokens'], o['tokens']))
                    else:
                        rep.warn(label, 'expands to "%s" upstream, "%s" ours' % (m['body'], o['body']))
            rep.check(label, diffs)

    # extra public names in ours
    def public(n):
        return not (n.startswith('__') or re.match(r'^_[A-Z]', n))
    for name, rec in sorted(ours['records'].items()):
        if rec['header'] in sel and name not in up['records'] and name not in up['typedefs'] and public(name.split()[-1]):
            rep.warn('%s: %s' % (rec['header'], name), 'extra in ours (not in upstream)')
    for kind, mine, theirs in (('typedef', ours['typedefs'], up['typedefs']),
                               ('function', ours['functions'], up['functions']),
                               ('variable', ours['vars'], up['vars']),
                               ('enum constant', ours['enumconsts'], up['enumconsts']),
                               ('macro', ours['macros'], up['macros'])):
        for name, ent in sorted(mine.items()):
            if ent['header'] in sel and name not in theirs and public(name):
                rep.warn('%s: %s %s' % (ent['header'], kind, name), 'extra in ours (not in upstream)')
    for key, en in sorted(ours['enums'].items()):
        if en['named'] and en['header'] in sel and key not in up['enums'] and public(key.split()[-1]):
            rep.warn('%s: %s' % (en['header'], key), 'extra in ours (not in upstream)')


def compare_variant(rep, sel, vname, base, upv, ours):
    """Declarations that upstream has only in this configuration, and (C++)
    the language linkage of every function and variable."""
    up_td, our_td = upv['all_typedefs'], ours['all_typedefs']
    cxx = vname.startswith('C++')
    for h in sel:
        diffs = []
        for name, rec in upv['records'].items():
            if rec['header'] != h or name in base['records']:
                continue
            o = ours['records'].get(name)
            if o is None or (rec['complete'] and not o['complete']):
                diffs.append('%s: missing' % name)
                continue
            up_f = [(f['path'], canon_type(f['type'], up_td)) for f in rec['fields']]
            our_f = [(f['path'], canon_type(f['type'], our_td)) for f in o['fields']]
            if up_f != our_f:
                diffs.append('%s: fields differ' % name)
        for name, td in upv['typedefs'].items():
            if td['header'] == h and name not in base['typedefs']:
                o = ours['typedefs'].get(name)
                if o is None:
                    diffs.append('typedef %s: missing' % name)
                elif canon_type(td['type'], up_td) != canon_type(o['type'], our_td):
                    diffs.append('typedef %s: upstream "%s", ours "%s"' % (name, norm_type(td['type']), norm_type(o['type'])))
        for c, ec in upv['enumconsts'].items():
            if ec['header'] == h and c not in base['enumconsts'] and c not in ours['enumconsts']:
                diffs.append('enum constant %s: missing' % c)
        for kind, ups, mine, basek in (('function', upv['functions'], ours['functions'], base['functions']),
                                       ('variable', upv['vars'], ours['vars'], base['vars'])):
            for name, fn in ups.items():
                if fn['header'] != h:
                    continue
                o = mine.get(name)
                if name not in basek:
                    if o is None:
                        diffs.append('%s %s: missing' % (kind, name))
                        continue
                    cu, co = canon_type(fn['type'], up_td), canon_type(o['type'], our_td)
                    if cu != co:
                        diffs.append('%s %s: type upstream "%s", ours "%s"' % (kind, name, norm_type(fn['type']), norm_type(o['type'])))
                    for a in ('storage', 'inline'):
                        if a in fn and fn.get(a) != o.get(a):
                            diffs.append('%s %s: %s upstream %s, ours %s' % (kind, name, a, fn.get(a), o.get(a)))
                if cxx and o is not None and fn.get('linkage') != o.get('linkage'):
                    diffs.append('%s %s: language linkage upstream %s, ours %s' % (
                        kind, name, 'extern "%s"' % fn['linkage'] if fn.get('linkage') else 'C++',
                        'extern "%s"' % o['linkage'] if o.get('linkage') else 'C++'))
        for name, m in upv['macros'].items():
            if m['header'] != h:
                continue
            bm = base['macros'].get(name)
            if bm is not None and bm['params'] == m['params'] and bm['tokens'] == m['tokens']:
                continue
            o = ours['macros'].get(name)
            if o is None:
                diffs.append('macro %s: missing' % name)
            elif (m['params'] is None) != (o['params'] is None) or \
                    (m['params'] is not None and len(m['params']) != len(o['params'])):
                diffs.append('macro %s: parameters differ' % name)
        rep.check('%s: declarations under %s' % (h, vname), diffs)


def hook(rep, root, argv):
    """Provider ABI (driver.h): the facts pinned in provider_abi.expected,
    read and checked by provider_abi.py (the table's one reader)."""
    here = os.path.dirname(os.path.abspath(__file__))
    exp = os.path.join(here, 'provider_abi.expected')
    if argv and 'driver.h' not in [os.path.basename(a) for a in argv]:
        return  # a header selection without driver.h
    if os.environ.get('LAYOUT_NO_HOOK') == '1':
        return
    if not os.path.exists(exp):
        return
    sys.path.insert(0, here)
    import provider_abi
    try:
        lines, _passed, _failed = provider_abi.check()
    except (provider_abi.TableError, OSError) as e:
        lines = [('FAIL', 'FAIL %s: %s' % (provider_abi.SUITE, e))]
    for status, text in lines:
        if not (QUIET and status == 'PASS'):
            print(text)
        if status == 'PASS':
            rep.passed += 1
        else:
            rep.failed += 1
            rep.diffs += 1


def finish(rep, argv):
    rec = os.environ.get('LAYOUT_RECORD')
    if rec:
        write_atomic(rec, json.dumps(rep.passed_names))
    counts = os.environ.get('LAYOUT_COUNTS')
    if counts:
        write_atomic(counts, json.dumps({'passed': rep.passed, 'failed': rep.failed, 'skipped': rep.skipped,
                                         'diffs': rep.diffs, 'warns': rep.warns, 'newer': rep.newer}))
        return 1 if rep.failed else 0
    print('layout: %d passed, %d failed, %d skipped, differences: %d, warnings: %d' % (
        rep.passed, rep.failed, rep.skipped, rep.diffs, rep.warns))
    return 1 if rep.failed else 0


if __name__ == '__main__':
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
