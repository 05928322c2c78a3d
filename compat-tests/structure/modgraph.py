#!/usr/bin/env python3
"""Module dependency graph of the library crate (src/**/*.rs) and its cycles.

    modgraph.py [--src DIR] [--dot] [--edges]
    modgraph.py --self-test

A module is a file: src/lib.rs is the crate root, src/a/b.rs and
src/a/b/mod.rs are a::b.  Files named tests.rs, modules declared under
#[cfg(test)] (inline or as files) and items marked #[cfg(test)] are left out.

Edges (module -> module, each with the file:line where it is written) come
from paths in the code and in `use` trees:
  crate::x::y...        absolute;
  super::..., self::... relative to the file's module;
  c::...                where c is a child module of the file's module (the
                        2018 edition's uniform paths).
A path goes to the deepest module that exists: crate::x::y::Item -> x::y
(crate::abi::T -> the crate root, abi being a re-exported crate).  Paths
written as $crate::... inside macro_rules bodies are not edges (they belong
to the code the macro expands into).  A module's own paths are no edge.

Reports every strongly connected component of more than one module with the
edges that form it; exit status 1 if there is any, 0 if none, 2 on errors.
--dot prints the graph in Graphviz format instead (cycle edges in red);
--edges prints every edge with its locations.
"""

import argparse
import os
import re
import sys
from collections import defaultdict

# --------------------------------------------------------------------------
# lexer: identifiers and punctuation with line numbers; comments, strings,
# char literals and lifetimes are dropped.

IDENT_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def lex(text):
    toks = []  # (kind, value, line)
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith('/*', i):
                    depth, i = depth + 1, i + 2
                elif text.startswith('*/', i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == '\n':
                        line += 1
                    i += 1
        elif c in 'rb' and re.match(r'(?:br|r)#*"', text[i:i + 260]):
            m = re.match(r'(?:br|r)(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            line += text.count('\n', i, j)
            i = j
        elif c == '"' or (c == 'b' and text.startswith('b"', i)):
            i += 1 if c == '"' else 2
            while i < n and text[i] != '"':
                if text[i] == '\\':
                    i += 1
                if i < n and text[i] == '\n':
                    line += 1
                i += 1
            i += 1
        elif c == "'" or (c == 'b' and text.startswith("b'", i)):
            k = i + (1 if c == "'" else 2)
            if k < n and text[k] == '\\':  # escaped char literal
                j = text.find("'", k + 2)
                i = n if j < 0 else j + 1
            elif k + 1 < n and text[k + 1] == "'":  # 'x'
                i = k + 2
            else:  # a lifetime or label: 'a
                m = IDENT_RE.match(text, k)
                i = m.end() if m else k
        elif c.isalpha() or c == '_':
            m = IDENT_RE.match(text, i)
            w = m.group(0)
            if w == 'r' and text.startswith('#', m.end()):  # r#ident
                m2 = IDENT_RE.match(text, m.end() + 1)
                if m2:
                    toks.append(('id', m2.group(0), line))
                    i = m2.end()
                    continue
            toks.append(('id', w, line))
            i = m.end()
        elif c.isdigit():
            m = re.match(r'[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?', text[i:])
            i += m.end()
        elif text.startswith('::', i):
            toks.append(('p', '::', line))
            i += 2
        else:
            toks.append(('p', c, line))
            i += 1
    return toks


# --------------------------------------------------------------------------
# modules

def module_of(rel):
    """'a/b.rs' / 'a/b/mod.rs' -> ('a', 'b'); 'lib.rs' -> ()."""
    parts = rel[:-3].split('/')
    if parts == ['lib'] or parts == ['main']:
        return ()
    if parts[-1] == 'mod':
        parts = parts[:-1]
    return tuple(parts)


def modname(m):
    return '::'.join(m) if m else 'crate'


def is_test_attr(toks, i):
    """#[cfg(test)] starting at toks[i]; returns the index after it or None."""
    want = ['#', '[', 'cfg', '(', 'test', ')', ']']
    if [t[1] for t in toks[i:i + 7]] == want:
        return i + 7
    return None


def skip_attr(toks, i):
    """toks[i] is '#' of #[...] or #![...]: index after its closing ']'."""
    j = i + 1
    if j < len(toks) and toks[j][1] == '!':
        j += 1
    if j >= len(toks) or toks[j][1] != '[':
        return i + 1
    depth = 0
    while j < len(toks):
        if toks[j][1] == '[':
            depth += 1
        elif toks[j][1] == ']':
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return j


def skip_item(toks, i):
    """Index after the item starting at toks[i] (its attributes included):
    up to a ';' outside brackets, or through the first {...} block."""
    while i < len(toks) and toks[i][1] == '#':
        i = skip_attr(toks, i)
    depth = 0
    while i < len(toks):
        v = toks[i][1]
        if v in '([':
            depth += 1
        elif v in ')]':
            depth -= 1
        elif v == ';' and depth == 0:
            return i + 1
        elif v == '{' and depth == 0:
            d = 0
            while i < len(toks):
                if toks[i][1] == '{':
                    d += 1
                elif toks[i][1] == '}':
                    d -= 1
                    if d == 0:
                        return i + 1
                i += 1
            return i
        i += 1
    return i


def test_item_mod(toks, i):
    """If the item at toks[i] (after #[cfg(test)]) is `mod NAME;`, NAME."""
    while i < len(toks) and toks[i][1] == '#':
        i = skip_attr(toks, i)
    j = i
    if j < len(toks) and toks[j][1] == 'pub':
        j += 1
        if j < len(toks) and toks[j][1] == '(':
            while j < len(toks) and toks[j][1] != ')':
                j += 1
            j += 1
    if j + 2 < len(toks) and toks[j][1] == 'mod' and toks[j + 1][0] == 'id' and toks[j + 2][1] == ';':
        return toks[j + 1][1]
    return None


def parse_use_tree(toks, i, prefix, out):
    """Parses a use tree at toks[i]; appends (segments, line) for every leaf
    path (a trailing 'self' is dropped, '*' ends the path).  Returns the index
    after the tree."""
    segs = list(prefix)
    line = toks[i][2] if i < len(toks) else 0
    if i < len(toks) and toks[i][1] == '::':  # ::extern_crate::...
        segs.append('::')
        i += 1
    while i < len(toks):
        kind, v, ln = toks[i]
        if v == '{':
            i += 1
            while i < len(toks) and toks[i][1] != '}':
                i = parse_use_tree(toks, i, segs, out)
                if i < len(toks) and toks[i][1] == ',':
                    i += 1
            return i + 1
        if v == '*':
            out.append((segs, ln))
            return i + 1
        if kind == 'id':
            if v == 'self' and segs:
                pass  # `a::{self}` is `a`
            else:
                segs = segs + [v]
            line = ln
            i += 1
            if i < len(toks) and toks[i][1] == '::':
                i += 1
                continue
            if i < len(toks) and toks[i][1] == 'as':
                i += 2
            out.append((segs, line))
            return i
        return i + 1  # unexpected token: stop this tree
    return i


def collect_paths(toks):
    """(segments, line) of every path that starts with crate/super/self or an
    identifier followed by '::' (not preceded by '::' or '$'), plus every use
    tree leaf.  #[cfg(test)] items are skipped; returns (paths, names of
    #[cfg(test)] `mod NAME;` declarations)."""
    paths, test_mods = [], set()
    i = 0
    while i < len(toks):
        kind, v, ln = toks[i]
        if v == '#':
            j = is_test_attr(toks, i)
            if j is not None:
                name = test_item_mod(toks, j)
                if name:
                    test_mods.add(name)
                i = skip_item(toks, j)
                continue
            i = skip_attr(toks, i)
            continue
        if kind == 'id' and v == 'use' and (i == 0 or toks[i - 1][1] != '::'):
            out = []
            j = parse_use_tree(toks, i + 1, [], out)
            paths.extend(out)
            while j < len(toks) and toks[j][1] != ';':
                j += 1
            i = j + 1
            continue
        if kind == 'id' and i + 1 < len(toks) and toks[i + 1][1] == '::':
            prev = toks[i - 1][1] if i else ''
            if prev in ('::', '$') or v in ('Self',):
                i += 1
                continue
            segs = [v]
            j = i + 1
            while j + 1 < len(toks) and toks[j][1] == '::' and toks[j + 1][0] == 'id':
                segs.append(toks[j + 1][1])
                j += 2
            paths.append((segs, ln))
            i = j
            continue
        i += 1
    return paths, test_mods


def resolve(segs, here, modules):
    """The module a path in module `here` goes to, or None (external)."""
    if not segs or segs[0] == '::':
        return None
    if segs[0] == 'crate':
        base, rest = (), segs[1:]
    elif segs[0] in ('super', 'self'):
        base, rest = here, list(segs)
        while rest and rest[0] in ('super', 'self'):
            if rest[0] == 'super':
                if not base:
                    return None
                base = base[:-1]
            rest = rest[1:]
    elif here + (segs[0],) in modules:
        base, rest = here, segs
    else:
        return None
    target = base
    for s in rest:
        if target + (s,) in modules:
            target = target + (s,)
        else:
            break
    return target


def build(src):
    files = {}
    for dirpath, _dirs, names in os.walk(src):
        for f in names:
            if f.endswith('.rs') and f != 'tests.rs':
                p = os.path.join(dirpath, f)
                files[os.path.relpath(p, src).replace(os.sep, '/')] = p
    lexed = {}
    test_files = set()
    for rel, p in files.items():
        with open(p, encoding='utf-8', errors='replace') as fh:
            lexed[rel] = collect_paths(lex(fh.read()))
    # files declared as #[cfg(test)] mod NAME; (and everything under them)
    for rel, (_paths, test_mods) in lexed.items():
        m = module_of(rel)
        for name in test_mods:
            test_files.add(m + (name,))
    def is_test(m):
        return any(m[:k] in test_files for k in range(1, len(m) + 1))
    modules = {}
    for rel in files:
        m = module_of(rel)
        if not is_test(m):
            modules[m] = rel
    edges = defaultdict(list)  # (from, to) -> [file:line]
    for m, rel in modules.items():
        for segs, line in lexed[rel][0]:
            t = resolve(segs, m, modules)
            if t is None or t == m:
                continue
            loc = 'src/%s:%d' % (rel, line)
            if loc not in edges[(m, t)]:
                edges[(m, t)].append(loc)
    return modules, edges


def sccs(nodes, edges):
    """Tarjan's algorithm, iterative."""
    succ = defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on.add(v)
            ss = sorted(succ[v])
            if k < len(ss):
                work.append((v, k + 1))
                w = ss[k]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in ss:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


SELF_TEST = {
    'lib.rs': 'pub mod a;\npub mod b;\npub mod c;\npub mod d;\n',
    'a/mod.rs': 'pub mod x;\nuse crate::b::Thing; // a -> b\n',
    'a/x.rs': 'fn f() { super::super::c::g(); } // a::x -> c\n',
    'b.rs': 'use crate::{a::x::{self, Y}, d}; // b -> a::x, b -> d\n'
            '#[cfg(test)]\nmod tests { use crate::c::Z; }\n',
    'c.rs': '/* crate::d::no */ fn g() { let s = "crate::d::no"; self::h(); }\n'
            'macro_rules! m { () => { $crate::d::no() } }\n',
    'd.rs': '#[cfg(test)]\nmod t;\n',
    'd/t.rs': 'use crate::a::X; // test-only: no edge\n',
    'a/tests.rs': 'use crate::c::X; // tests.rs: no edge\n',
}


def self_test():
    """A small fixture: edges a -> b, b -> a::x, b -> d, a::x -> c (comments,
    strings, $crate paths, #[cfg(test)] items and modules, tests.rs give
    none), no cycle; then c -> a::x closes one."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for rel, text in SELF_TEST.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)) or d, exist_ok=True)
            with open(os.path.join(d, rel), 'w') as f:
                f.write(text)
        modules, edges = build(d)
        got = sorted((modname(x), modname(y)) for x, y in edges)
        want = [('a', 'b'), ('a::x', 'c'), ('b', 'a::x'), ('b', 'd')]
        assert got == want, got
        assert not [c for c in sccs(modules, edges) if len(c) > 1]
        with open(os.path.join(d, 'c.rs'), 'a') as f:
            f.write('use super::a::x; // c -> a::x: cycle a::x -> c -> a::x\n')
        modules, edges = build(d)
        comps = [c for c in sccs(modules, edges) if len(c) > 1]
        assert [[modname(m) for m in c] for c in comps] == [['a::x', 'c']], comps
        assert edges[(('c',), ('a', 'x'))] == ['src/c.rs:3'], edges[(('c',), ('a', 'x'))]
    print('modgraph: self-test passed')
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument('--src', default=os.path.join(here, '..', '..', 'src'))
    ap.add_argument('--dot', action='store_true')
    ap.add_argument('--edges', action='store_true')
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not os.path.isfile(os.path.join(a.src, 'lib.rs')):
        print('modgraph: no lib.rs in %s' % a.src, file=sys.stderr)
        return 2
    modules, edges = build(a.src)
    comps = [c for c in sccs(modules, edges) if len(c) > 1]
    in_cycle = {}
    for n, c in enumerate(comps):
        for m in c:
            in_cycle[m] = n
    if a.dot:
        print('digraph modules {')
        print('  rankdir=LR; node [shape=box, fontname="monospace"];')
        for m in sorted(modules):
            print('  "%s"%s;' % (modname(m), ' [color=red]' if m in in_cycle else ''))
        for (x, y) in sorted(edges):
            red = x in in_cycle and in_cycle.get(y) == in_cycle[x]
            print('  "%s" -> "%s"%s;' % (modname(x), modname(y), ' [color=red]' if red else ''))
        print('}')
        return 1 if comps else 0
    if a.edges:
        for (x, y), locs in sorted(edges.items()):
            print('%s -> %s  %s' % (modname(x), modname(y), ' '.join(locs)))
    print('modgraph: %d modules, %d edges (module pairs), %d cycle(s)' % (len(modules), len(edges), len(comps)))
    for n, c in enumerate(comps, 1):
        print('cycle %d: %d modules: %s' % (n, len(c), ', '.join(modname(m) for m in c)))
        members = set(c)
        for (x, y), locs in sorted(edges.items()):
            if x in members and y in members:
                print('  %s -> %s  %s' % (modname(x), modname(y), ' '.join(locs)))
    return 1 if comps else 0


if __name__ == '__main__':
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
