#!/usr/bin/env python3
"""Rust functions longer than a limit.

    fnlen.py [--max N] PATH...      PATH: a *.rs file or a directory (its *.rs)
    fnlen.py --self-test

Every `fn` item with a body is measured: free functions, methods in impl and
trait blocks, fns nested in other fns, whatever stands before `fn` (pub,
pub(crate), const, async, unsafe, extern "C").  Its length is the number of
lines from the line of `fn` to the line of its closing brace, both included.
A declaration without a body (`fn x();` in a trait or an extern block) has
none.  Braces in strings (plain, byte, C, raw), char literals and comments do
not count; neither do lifetimes and labels ('a).

Left out: files named tests.rs, items marked #[cfg(test)] (a test module,
inline or declared as `#[cfg(test)] mod NAME;`: then its file too).

Prints each fn longer than N lines (default 150), longest first, as
`path:line: fn name: N lines`, then a summary line; exit status 1 if there is
any, 0 if none, 2 on errors (a file that cannot be read, unbalanced braces).
"""

import argparse
import os
import re
import sys

IDENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
RAW_STR = re.compile(r'(?:br|cr|r)(#*)"')


class LexError(Exception):
    pass


def tokens(text):
    """Yields (value, line) for identifiers and the punctuation that matters
    here ({ } ( ) [ ] ; # ! $ and the rest one character each); comments,
    strings, char literals, lifetimes and numbers are dropped."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == '\n':
            line += 1
            i += 1
        elif c in ' \t\r\f\v':
            i += 1
        elif c == '/' and text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif c == '/' and text.startswith('/*', i):
            depth, j = 1, i + 2
            while depth:
                if j >= n:
                    raise LexError('line %d: unterminated block comment' % line)
                if text.startswith('/*', j):
                    depth, j = depth + 1, j + 2
                elif text.startswith('*/', j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            line += text.count('\n', i, j)
            i = j
        elif c in 'bcr' and RAW_STR.match(text, i):
            m = RAW_STR.match(text, i)
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            if j < 0:
                raise LexError('line %d: unterminated raw string' % line)
            j += len(close)
            line += text.count('\n', i, j)
            i = j
        elif c == '"' or (c in 'bc' and text.startswith('"', i + 1)):
            j = i + (1 if c == '"' else 2)
            while j < n and text[j] != '"':
                j += 2 if text[j] == '\\' else 1
            if j >= n:
                raise LexError('line %d: unterminated string' % line)
            line += text.count('\n', i, j)
            i = j + 1
        elif c == "'" or (c == 'b' and text.startswith("'", i + 1)):
            k = i + (1 if c == "'" else 2)
            if text.startswith('\\', k):  # '\n', '\'', '\u{7b}'
                j = text.find("'", k + 2)
                if j < 0:
                    raise LexError('line %d: unterminated char literal' % line)
                i = j + 1
            elif text.startswith("'", k + 1):  # 'x', '{'
                i = k + 2
            else:  # a lifetime or a label: 'a
                m = IDENT.match(text, k)
                i = m.end() if m else k
        elif c.isalpha() or c == '_':
            m = IDENT.match(text, i)
            i = m.end()
            if m.group(0) == 'r' and text.startswith('#', i):  # r#ident
                m2 = IDENT.match(text, i + 1)
                if m2:
                    i = m2.end()
                    yield ('r#' + m2.group(0), line)
                    continue
            yield (m.group(0), line)
        elif c.isdigit():
            m = re.compile(r'[0-9][0-9A-Za-z_]*').match(text, i)
            i = m.end()
        elif c.isspace():
            i += 1
        else:
            yield (c, line)
            i += 1


def skip_attr(toks, i):
    """toks[i] is the '#' of #[...] / #![...]: (index after it, its text
    without the '#': '[cfg(test)]', '![...]')."""
    j = i + 1
    if j < len(toks) and toks[j][0] == '!':
        j += 1
    if j >= len(toks) or toks[j][0] != '[':
        return i + 1, ''
    start, depth = i + 1, 0  # the text from '!' (an inner attribute) or '['
    while j < len(toks):
        if toks[j][0] == '[':
            depth += 1
        elif toks[j][0] == ']':
            depth -= 1
            if depth == 0:
                return j + 1, ''.join(t[0] for t in toks[start:j + 1])
        j += 1
    return j, ''


def close_of(toks, i):
    """toks[i] is '{': the index of its matching '}'."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][0] == '{':
            depth += 1
        elif toks[j][0] == '}':
            depth -= 1
            if depth == 0:
                return j
    raise LexError('line %d: unbalanced {' % toks[i][1])


def item_end(toks, i):
    """toks[i] starts an item (after its attributes): (index after it, the
    name of the module it is when it is `mod NAME;`, else None)."""
    depth = 0
    j = i
    while j < len(toks):
        v = toks[j][0]
        if v in '([':
            depth += 1
        elif v in ')]':
            depth -= 1
        elif v == ';' and depth == 0:
            k = j - i
            name = toks[j - 1][0] if k >= 2 and toks[j - 2][0] == 'mod' else None
            return j + 1, name
        elif v == '{' and depth == 0:
            return close_of(toks, j) + 1, None
        j += 1
    return j, None


def functions(text):
    """([(name, line, length)] of the fns with a body, [names of the
    #[cfg(test)] `mod NAME;` declarations])."""
    toks = list(tokens(text))
    fns, test_mods = [], []
    i = 0
    while i < len(toks):
        v, line = toks[i]
        if v == '#':
            j, attr = skip_attr(toks, i)
            if attr == '[cfg(test)]':
                while j < len(toks) and toks[j][0] == '#':  # more attributes
                    j = skip_attr(toks, j)[0]
                i, name = item_end(toks, j)
                if name:
                    test_mods.append(name)
            else:
                i = j
            continue
        if v == 'fn' and i + 1 < len(toks) and IDENT.fullmatch(toks[i + 1][0]):
            depth = 0
            for j in range(i + 2, len(toks)):
                w = toks[j][0]
                if w in '([':
                    depth += 1
                elif w in ')]':
                    depth -= 1
                elif depth == 0 and w == ';':
                    break  # no body
                elif depth == 0 and w == '{':
                    end = toks[close_of(toks, j)][1]
                    fns.append((toks[i + 1][0], line, end - line + 1))
                    break
        i += 1  # on into the body: nested fns are measured too
    return fns, test_mods


def child_dir(path):
    """The directory of the files of the modules declared in `path`."""
    d, f = os.path.split(path)
    if f in ('lib.rs', 'main.rs', 'mod.rs'):
        return d
    return os.path.join(d, f[:-3])


def rust_files(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            for dirpath, dirs, names in os.walk(p):
                dirs.sort()
                out.extend(os.path.join(dirpath, f) for f in sorted(names) if f.endswith('.rs'))
        else:
            out.append(p)
    return [p for p in out if os.path.basename(p) != 'tests.rs']


def measure(paths):
    """[(path, line, name, length)] of every fn with a body in the *.rs of
    `paths` (test code left out), and the number of files read."""
    per_file, excluded = {}, set()
    files = rust_files(paths)
    for p in files:
        with open(p, encoding='utf-8', errors='replace') as f:
            try:
                fns, test_mods = functions(f.read())
            except LexError as e:
                raise LexError('%s: %s' % (p, e))
        per_file[p] = fns
        for name in test_mods:
            excluded.add(os.path.normpath(os.path.join(child_dir(p), name)))
    out = []
    for p, fns in per_file.items():
        q = os.path.normpath(p)
        if q[:-3] in excluded or os.path.dirname(q) in excluded or any(
                q.startswith(e + os.sep) for e in excluded):
            continue
        out.extend((p, line, name, length) for name, line, length in fns)
    return out, len(files)


SELF_TEST = {
    'lib.rs': '''\
pub fn short() {            // 1
    let _ = 1;
}                           // 3 lines
pub(crate) unsafe extern "C" fn long_one(x: u32) -> u32 {   // 4
    let s = "}}} { \\" }";
    let c = '}';
    let d = '\\'';
    let e = b'{';
    // } a comment {
    /* } /* nested } */ { */
    let r = r#"}"{"#;
    let q = (br"\\", cr"\\", '{');  // no escape in a raw string
    let t = c"}";
    let l: &'static str = "x";
    'outer: loop { break 'outer; }
    x
}                           // 17: 14 lines
pub trait T {
    fn no_body(&self);
    fn default_body(&self) -> [u8; 2] {  // 20
        [0; 2]
    }                       // 3 lines
}
impl S {
    pub const fn outer() -> u32 {        // 25
        fn nested() -> u32 {             // 26
            7
        }                                // 3 lines
        async fn nested_async() {}       // 29: 1 line
        nested()
    }                                    // 31: 7 lines
}
extern "C" {
    fn declared(x: u32) -> u32;
}
#[cfg(test)]
mod tests {
    fn in_test_module() {
    }
}
#[cfg(test)]
#[allow(unused)]
mod testing;
fn after_tests(f: fn(u32) -> u32) -> u32 {   // 44
    f(1)
}                                            // 3 lines
''',
    'testing.rs': 'fn in_test_file() {\n}\n',
    'tests.rs': 'fn in_tests_rs() {\n}\n',
}


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for rel, text in SELF_TEST.items():
            with open(os.path.join(d, rel), 'w') as f:
                f.write(text)
        got, nfiles = measure([d])
        got = sorted((line, name, n) for _p, line, name, n in got)
        want = [(1, 'short', 3), (4, 'long_one', 14), (20, 'default_body', 3),
                (25, 'outer', 7), (26, 'nested', 3), (29, 'nested_async', 1),
                (44, 'after_tests', 3)]
        assert got == want, got
        assert nfiles == 2, nfiles  # lib.rs, testing.rs (tests.rs is not read)
        lib = os.path.join(d, 'lib.rs')
        lines = []
        assert report([d], 6, lines.append) == 1
        assert lines == ['%s:4: fn long_one: 14 lines' % lib, '%s:25: fn outer: 7 lines' % lib,
                         'fnlen: 2 of 7 fns longer than 6 lines (2 files)'], lines
        lines = []
        assert report([lib], 7, lines.append) == 1
        assert lines == ['%s:4: fn long_one: 14 lines' % lib,
                         'fnlen: 1 of 7 fns longer than 7 lines (1 files)'], lines
        lines = []
        assert report([d], 14, lines.append) == 0
        assert lines == ['fnlen: 0 of 7 fns longer than 14 lines (2 files)'], lines
        try:
            functions('fn open() {\n')
            raise AssertionError('unbalanced braces not seen')
        except LexError:
            pass
    print('fnlen: self-test passed')
    return 0


def report(paths, limit, out=print):
    fns, nfiles = measure(paths)
    long = sorted((f for f in fns if f[3] > limit), key=lambda f: (-f[3], f[0], f[1]))
    for p, line, name, n in long:
        out('%s:%d: fn %s: %d lines' % (p, line, name, n))
    out('fnlen: %d of %d fns longer than %d lines (%d files)' % (len(long), len(fns), limit, nfiles))
    return 1 if long else 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--max', type=int, default=150, metavar='N')
    ap.add_argument('--self-test', action='store_true')
    ap.add_argument('paths', nargs='*')
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not a.paths:
        ap.error('no file or directory given')
    try:
        return report(a.paths, a.max)
    except (OSError, LexError) as e:
        print('fnlen: %s' % e, file=sys.stderr)
        return 2


if __name__ == '__main__':
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
