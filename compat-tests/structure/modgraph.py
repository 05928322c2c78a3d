#!/usr/bin/env python3
"""Module dependency graph of a crate (DIR/**/*.rs) and its cycles.

    modgraph.py [--src DIR] [--dot] [--edges]     DIR: the library's src/ by
                                                  default (providers/swrdma/src...)
    modgraph.py --self-test

A module is a file: DIR/lib.rs is the crate root, DIR/a/b.rs and
DIR/a/b/mod.rs are a::b.  An inline module (`mod m { ... }` in the file of
module f) belongs to f: what is written in it is f's, but its relative paths
start from f::m (`super::X` in it is f's X, `super::super::` is f's parent),
and a path through it (crate::f::m::X) goes to f.  Files named tests.rs,
modules declared under #[cfg(test)] (inline or as files) and items marked
#[cfg(test)] are left out.

Edges (module -> module, each with the file:line where it is written) come
from paths in the code and in `use` trees:
  crate::x::y...        absolute;
  super::..., self::... relative to the module they are written in (the
                        inline module, if any);
  c::...                where c is a child module of that module (the 2018
                        edition's uniform paths).
A path goes to the deepest module that exists: crate::x::y::Item -> x::y
(crate::abi::T -> the crate root, abi being a re-exported crate).  Paths
written as $crate::... inside macro_rules bodies are not edges (they belong
to the code the macro expands into).  A module's own paths are no edge.

Reports every strongly connected component of more than one module (a
cycle: its modules, a shortest cycle through the first one) with the edges
that form it (each edge with its DIR/file:line, DIR as given, relative
to the current directory when under it); exit status 1 if there is any, 0 if
none, 2 on errors.
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
    """If the item at toks[i] (after #[cfg(test)]) is `mod NAME;` or
    `mod NAME { ... }`, NAME."""
    while i < len(toks) and toks[i][1] == '#':
        i = skip_attr(toks, i)
    j = i
    if j < len(toks) and toks[j][1] == 'pub':
        j += 1
        if j < len(toks) and toks[j][1] == '(':
            while j < len(toks) and toks[j][1] != ')':
                j += 1
            j += 1
    if j + 2 < len(toks) and toks[j][1] == 'mod' and toks[j + 1][0] == 'id' and toks[j + 2][1] in (';', '{'):
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
    """(segments, line, scope) of every path that starts with crate/super/self
    or an identifier followed by '::' (not preceded by '::' or '$'), plus
    every use tree leaf; scope is the tuple of the inline modules the path is
    written in (() at the file's top level).  #[cfg(test)] items are skipped.
    Returns (paths, scope + (NAME,) of every #[cfg(test)] `mod NAME`, scope of
    every other inline module)."""
    paths, test_mods, inline = [], set(), set()
    scope, opened = (), []  # opened: the brace depth of each inline module
    depth = 0
    i = 0
    while i < len(toks):
        kind, v, ln = toks[i]
        if v == '#':
            j = is_test_attr(toks, i)
            if j is not None:
                name = test_item_mod(toks, j)
                if name:
                    test_mods.add(scope + (name,))
                i = skip_item(toks, j)
                continue
            i = skip_attr(toks, i)
            continue
        if kind == 'id' and v == 'use' and (i == 0 or toks[i - 1][1] != '::'):
            out = []
            j = parse_use_tree(toks, i + 1, [], out)
            paths.extend((segs, line, scope) for segs, line in out)
            while j < len(toks) and toks[j][1] != ';':
                j += 1
            i = j + 1
            continue
        if (kind == 'id' and v == 'mod' and i + 2 < len(toks)
                and toks[i + 1][0] == 'id' and toks[i + 2][1] == '{'):
            scope = scope + (toks[i + 1][1],)
            inline.add(scope)
            opened.append(depth)
            depth += 1
            i += 3
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
            paths.append((segs, ln, scope))
            i = j
            continue
        if v == '{':
            depth += 1
        elif v == '}':
            depth -= 1
            if opened and opened[-1] == depth:
                opened.pop()
                scope = scope[:-1]
        i += 1
    return paths, test_mods, inline


def node_of(m, modules):
    """The module (file) that m, a module or an inline module, belongs to:
    its longest prefix that is a file's module."""
    while m and m not in modules:
        m = m[:-1]
    return m


def resolve(segs, here, modules, known):
    """The module (file) a path written in `here` (a module or an inline
    module) goes to, or None (external).  known: the modules and the inline
    modules."""
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
    elif here + (segs[0],) in known:
        base, rest = here, segs
    else:
        return None
    target = base
    for s in rest:
        if target + (s,) in known:
            target = target + (s,)
        else:
            break
    return node_of(target, modules)


def build(src, label='src'):
    """(modules: module -> file, edges: (from, to) -> ['LABEL/file:line'])."""
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
    for rel, (_paths, test_mods, _inline) in lexed.items():
        m = module_of(rel)
        for sub in test_mods:
            test_files.add(m + sub)
    def is_test(m):
        return any(m[:k] in test_files for k in range(1, len(m) + 1))
    modules = {}
    for rel in files:
        m = module_of(rel)
        if not is_test(m):
            modules[m] = rel
    known = set(modules)
    for m, rel in modules.items():
        known.update(m + sub for sub in lexed[rel][2] if not is_test(m + sub))
    edges = defaultdict(list)  # (from, to) -> [file:line]
    for m, rel in modules.items():
        for segs, line, scope in lexed[rel][0]:
            t = resolve(segs, m + scope, modules, known)
            if t is None or t == m:
                continue
            loc = '%s/%s:%d' % (label, rel, line)
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


def shortest_cycle(comp, edges):
    """A shortest cycle through the first module of a strongly connected
    component: [m, ..., m]."""
    members = set(comp)
    succ = defaultdict(list)
    for a, b in sorted(edges):
        if a in members and b in members:
            succ[a].append(b)
    start = comp[0]
    prev, todo = {}, [start]
    while todo:
        nxt = []
        for v in todo:
            for w in succ[v]:
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        todo = nxt
    return [start]


SELF_TEST = {
    'lib.rs': 'pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod e;\n'
              'pub use e::Foo; // crate -> e\n',
    'a/mod.rs': 'pub mod x;\nuse crate::b::Thing; // a -> b\n',
    'a/x.rs': 'fn f() { super::super::c::g(); } // a::x -> c\n',
    'b.rs': 'use crate::{a::x::{self, Y}, d}; // b -> a::x, b -> d\n'
            '#[cfg(test)]\nmod tests { use crate::c::Z; }\n',
    'c.rs': '/* crate::d::no */ fn g() { let s = "crate::d::no"; self::h(); }\n'
            'macro_rules! m { () => { $crate::d::no() } }\n',
    'd.rs': '#[cfg(test)]\nmod t;\n',
    'd/t.rs': 'use crate::a::X; // test-only: no edge\n',
    'a/tests.rs': 'use crate::c::X; // tests.rs: no edge\n',
    # inline modules: their paths are e's, relative to e::inner (super:: is
    # e, not the crate root: no e -> crate edge to close a cycle with lib.rs)
    'e.rs': 'pub struct Foo;\n'
            'mod inner {\n'
            '    use super::Foo; // e itself: no edge\n'
            '    pub fn f() -> super::Foo { super::super::d::make() } // e -> d\n'
            '    mod deeper { use super::super::Foo; fn g() { self::super::f(); } }\n'
            '    #[cfg(test)]\n'
            '    mod t { use crate::a::X; } // test-only: no edge\n'
            '    pub mod leaf;\n'
            '}\n'
            'pub use inner::f; // its own inline module: no edge\n'
            'fn h() { crate::b::B; } // after the inline module: e -> b\n',
    'e/inner/leaf.rs': 'use super::super::Foo; // e::inner::leaf -> e\n',
}


def self_test():
    """A small fixture: edges a -> b, b -> a::x, b -> d, a::x -> c, crate -> e,
    e -> d, e -> b, e::inner::leaf -> e (comments, strings, $crate paths,
    #[cfg(test)] items and modules, tests.rs, paths from an inline module to
    its own file give none), no cycle; then c -> a::x closes one; a path
    through an inline module goes to its file, or to the file module under
    it."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for rel, text in SELF_TEST.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)) or d, exist_ok=True)
            with open(os.path.join(d, rel), 'w') as f:
                f.write(text)
        modules, edges = build(d)
        got = sorted((modname(x), modname(y)) for x, y in edges)
        want = [('a', 'b'), ('a::x', 'c'), ('b', 'a::x'), ('b', 'd'), ('crate', 'e'),
                ('e', 'b'), ('e', 'd'), ('e::inner::leaf', 'e')]
        assert got == want, got
        assert edges[(('e',), ('d',))] == ['src/e.rs:4'], edges[(('e',), ('d',))]
        assert edges[(('e',), ('b',))] == ['src/e.rs:11'], edges[(('e',), ('b',))]
        assert not [c for c in sccs(modules, edges) if len(c) > 1]
        with open(os.path.join(d, 'c.rs'), 'a') as f:
            f.write('use super::a::x; // c -> a::x: cycle a::x -> c -> a::x\n')
        modules, edges = build(d)
        comps = [c for c in sccs(modules, edges) if len(c) > 1]
        assert [[modname(m) for m in c] for c in comps] == [['a::x', 'c']], comps
        assert shortest_cycle(comps[0], edges) == [('a', 'x'), ('c',), ('a', 'x')]
        assert edges[(('c',), ('a', 'x'))] == ['src/c.rs:3'], edges[(('c',), ('a', 'x'))]
        with open(os.path.join(d, 'd.rs'), 'a') as f:
            f.write('use crate::e::inner::leaf::L; use crate::e::inner::Z;\n')
        modules, edges = build(d, 'x/src')
        assert edges[(('d',), ('e', 'inner', 'leaf'))] == ['x/src/d.rs:3'], dict(edges)
        assert edges[(('d',), ('e',))] == ['x/src/d.rs:3'], dict(edges)
    p, q, r, t = ('p',), ('q',), ('r',), ('t',)
    loop = shortest_cycle([p, q, r, t], {(p, q): 0, (q, t): 0, (t, r): 0, (q, r): 0, (r, p): 0})
    assert loop == [p, q, r, p], loop
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
    label = os.path.normpath(a.src)
    rel = os.path.relpath(os.path.abspath(a.src))
    if not rel.startswith('..'):
        label = rel
    modules, edges = build(a.src, label)
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
    loops = [' -> '.join(modname(m) for m in shortest_cycle(c, edges)) for c in comps]
    print('modgraph: %d modules, %d edges (module pairs), %d cycle(s)%s' % (
        len(modules), len(edges), len(comps), (': ' + '; '.join(loops)) if loops else ''))
    for n, c in enumerate(comps, 1):
        print('cycle %d: %d modules: %s (%s)' % (n, len(c), ', '.join(modname(m) for m in c), loops[n - 1]))
        members = set(c)
        for (x, y), locs in sorted(edges.items()):
            if x in members and y in members:
                print('  %s -> %s  %s' % (modname(x), modname(y), ' '.join(locs)))
    return 1 if comps else 0


if __name__ == '__main__':
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
