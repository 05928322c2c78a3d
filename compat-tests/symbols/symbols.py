#!/usr/bin/env python3
"""Dynamic symbol table comparison: OUR_LIB against the union of
UPSTREAM_LIBS (space-separated: Debian bookworm's, trixie's and sid's
libibverbs.so.1; UPSTREAM_LIB alone when UPSTREAM_LIBS is unset).

The union: every (name, version, type) that any of them defines.  A name
that two releases define at different default versions (the private ABI:
name@@IBVERBS_PRIVATE_34 in 44 and 56, name@@IBVERBS_PRIVATE_65 in 65) is
expected once per version, the newest release's as the default (@@) and the
others as plain name@VERSION.  Sizes, binding and visibility are compared
with the newest release that has the symbol.

Compared (defined symbols only, from `readelf --dyn-syms -W`):
  * (name, version, type) triples; the version keeps readelf's marker, so
    name@@VER (default) and name@VER (non-default) are different entries,
    and the version-definition ABS OBJECT entries (IBVERBS_1.0 ...) take part;
  * the size of every OBJECT symbol (copy relocations depend on it);
  * binding (GLOBAL/WEAK) and visibility;
  * the SONAME and the version definitions (`readelf -V`: names, parents, flags);
  * that nothing of ours is exported unversioned or under a Rust/C++-mangled
    name (_ZN..., _R...).
"""

import os
import re
import subprocess
import sys

SUITE = 'symbols'


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, errors='replace')


class Rep:
    def __init__(self):
        self.p = self.f = self.s = 0

    def ok(self, name):
        self.p += 1
        print('PASS %s' % name)

    def fail(self, name, why, details=()):
        self.f += 1
        print('FAIL %s: %s' % (name, why))
        for d in details:
            print('    %s' % d)

    def check(self, name, bad, why, details=()):
        if bad:
            self.fail(name, why, details)
        else:
            self.ok(name)

    def finish(self):
        print('%s: %d passed, %d failed, %d skipped' % (SUITE, self.p, self.f, self.s))
        return 1 if self.f else 0


SYM_RE = re.compile(r'^\s*\d+:\s+([0-9a-fA-F]+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)')


def dynsyms(lib, vernames=()):
    """{(name, version_marker): dict} for the defined dynamic symbols.
    readelf prints a version-definition entry (ABS OBJECT named like its
    version) without a suffix; it is given its @@VERSION here."""
    r = run(['readelf', '--dyn-syms', '-W', lib])
    if r.returncode != 0:
        raise RuntimeError('readelf --dyn-syms failed: ' + r.stderr.strip())
    out = {}
    for line in r.stdout.splitlines():
        m = SYM_RE.match(line)
        if not m:
            continue
        value, size, typ, bind, vis, ndx, name = m.groups()
        if ndx == 'UND' or not name or name == 'Name':
            continue
        if bind == 'LOCAL':
            continue
        # readelf may append " (N)" for version indices; drop it
        name = re.sub(r'\s*\(\d+\)$', '', name)
        if '@@' in name:
            base, ver = name.split('@@', 1)
            marker = '@@' + ver
        elif '@' in name:
            base, ver = name.split('@', 1)
            marker = '@' + ver
        elif ndx == 'ABS' and name in vernames:
            base, marker = name, '@@' + name
        else:
            base, marker = name, ''
        size = int(size, 0) if size.startswith('0x') else int(size)
        out[(base, marker)] = {'type': typ, 'bind': bind, 'vis': vis,
                               'size': size, 'ndx': ndx}
    return out


def verdefs(lib):
    """[(name, flags, parents...)] from readelf -V."""
    r = run(['readelf', '-V', '-W', lib])
    defs = []
    in_d = False
    cur = None
    for line in r.stdout.splitlines():
        if line.startswith("Version definition section"):
            in_d = True
            continue
        if in_d and (line.startswith('Version needs') or line.startswith('Version symbols')):
            break
        if not in_d:
            continue
        m = re.search(r'Flags:\s*(\S+)\s+Index:\s*(\d+)\s+Cnt:\s*(\d+)\s+Name:\s*(\S+)', line)
        if m:
            cur = [m.group(4), m.group(1), []]
            defs.append(cur)
            continue
        m = re.search(r'Parent \d+:\s*(\S+)', line)
        if m and cur is not None:
            cur[2].append(m.group(1))
    return [(n, f, tuple(p)) for n, f, p in defs]


def soname(lib):
    r = run(['readelf', '-d', '-W', lib])
    m = re.search(r'\(SONAME\)\s+Library soname: \[([^\]]*)\]', r.stdout)
    return m.group(1) if m else None


def fmt(key, ent=None):
    s = key[0] + key[1]
    if ent:
        s += ' (%s%s)' % (ent['type'], ', size %d' % ent['size'] if ent['type'] == 'OBJECT' else '')
    return s


def union_of(libs):
    """(verdefs, symbols) of the union of `libs` (oldest first)."""
    vds, syms, defaults = set(), {}, {}
    for lib in libs:
        vd = verdefs(lib)
        vds |= set(vd)
        for (name, marker), ent in dynsyms(lib, [d[0] for d in vd]).items():
            ver = marker.lstrip('@')
            syms[(name, ver)] = dict(ent, lib=lib)
            if marker.startswith('@@'):
                defaults[name] = ver  # later (newer) libraries win
    out = {}
    for (name, ver), ent in syms.items():
        if not ver:
            marker = ''
        elif ent['ndx'] == 'ABS' and name == ver:
            marker = '@@' + ver
        else:
            marker = ('@@' if defaults.get(name) == ver else '@') + ver
        out[(name, marker)] = ent
    return vds, out


def main():
    our = os.environ.get('OUR_LIB', 'build/lib/libibverbs.so.1')
    ups = os.environ.get('UPSTREAM_LIBS', '').split() or \
        [os.environ.get('UPSTREAM_LIB', '/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0')]
    rep = Rep()
    for up in ups:
        if not os.path.isfile(up):
            rep.fail('upstream library', '%s not found (install libibverbs1 / build the release roots)' % up)
            return rep.finish()
    print('upstream: %s' % ' + '.join(ups))
    if not os.path.isfile(our):
        rep.fail('our library', '%s not found (run make first)' % our)
        return rep.finish()
    hdr = run(['readelf', '-h', our])
    if hdr.returncode != 0 or 'DYN (Shared object file)' not in hdr.stdout:
        rep.fail('our library', '%s is not an ELF shared object' % our)
        return rep.finish()
    rep.ok('our library %s is an ELF shared object' % our)

    so_our = soname(our)
    for up in ups:
        so_up = soname(up)
        rep.check('SONAME %s (%s)' % (so_up, up), so_up != so_our, 'ours is %s' % so_our)

    sup, s_up = union_of(ups)
    vd_our = verdefs(our)
    sour = set(vd_our)
    det = ['missing: %s (flags %s%s)' % (n, f, ', parent ' + ' '.join(p) if p else '')
           for n, f, p in sorted(sup - sour)]
    det += ['extra:   %s (flags %s%s)' % (n, f, ', parent ' + ' '.join(p) if p else '')
            for n, f, p in sorted(sour - sup)]
    rep.check('version definitions (%d)' % len(sup), sup != sour,
              '%d differ' % len(det), det)

    s_our = dynsyms(our, [d[0] for d in vd_our])
    # (name, version, type) triples: a type change shows up as missing + extra
    t_up = {k + (e['type'],) for k, e in s_up.items()}
    t_our = {k + (e['type'],) for k, e in s_our.items()}
    missing = sorted(k[:2] for k in t_up - t_our)
    extra = sorted(k[:2] for k in t_our - t_up)
    print('missing: %d' % len(missing))
    for k in missing:
        print('    %s' % fmt(k, s_up[k]))
    print('extra: %d' % len(extra))
    for k in extra:
        print('    %s' % fmt(k, s_our[k]))
    rep.check('no upstream symbol missing (%d defined upstream)' % len(s_up), missing,
              'missing: %d' % len(missing))
    rep.check('no extra symbol exported', extra, 'extra: %d' % len(extra))

    common = sorted(set(s_up) & set(s_our))
    tdiff = ['%s: upstream %s, ours %s' % (fmt(k), s_up[k]['type'], s_our[k]['type'])
             for k in common if s_up[k]['type'] != s_our[k]['type']]
    rep.check('symbol types (FUNC/OBJECT/...) match', tdiff, '%d differ' % len(tdiff), tdiff)
    sdiff = ['%s: upstream %d, ours %d' % (fmt(k), s_up[k]['size'], s_our[k]['size'])
             for k in common if s_up[k]['type'] == 'OBJECT' and s_our[k]['type'] == 'OBJECT'
             and s_up[k]['ndx'] != 'ABS' and s_up[k]['size'] != s_our[k]['size']]
    rep.check('OBJECT symbol sizes match', sdiff, '%d differ' % len(sdiff), sdiff)
    bdiff = ['%s: upstream %s/%s, ours %s/%s' % (fmt(k), s_up[k]['bind'], s_up[k]['vis'],
                                                 s_our[k]['bind'], s_our[k]['vis'])
             for k in common if (s_up[k]['bind'], s_up[k]['vis']) != (s_our[k]['bind'], s_our[k]['vis'])]
    rep.check('symbol binding/visibility match', bdiff, '%d differ' % len(bdiff), bdiff)
    absdiff = ['%s: ABS upstream %s, ours %s' % (fmt(k), s_up[k]['ndx'] == 'ABS', s_our[k]['ndx'] == 'ABS')
               for k in common if (s_up[k]['ndx'] == 'ABS') != (s_our[k]['ndx'] == 'ABS')]
    rep.check('version-definition ABS entries match', absdiff, '%d differ' % len(absdiff), absdiff)

    unver = sorted(fmt(k, e) for k, e in s_our.items() if k[1] == '')
    rep.check('no unversioned exports', unver, '%d symbol(s) exported without a version' % len(unver), unver)
    mangled = sorted(fmt(k, e) for k, e in s_our.items()
                     if k[0].startswith('_ZN') or k[0].startswith('_R'))
    rep.check('no Rust/C++-mangled exports (_ZN*, _R*)', mangled,
              '%d mangled symbol(s) exported' % len(mangled), mangled)
    return rep.finish()


if __name__ == '__main__':
    try:
        sys.exit(main())
    except RuntimeError as e:
        print('FAIL readelf: %s' % e)
        print('%s: 0 passed, 1 failed, 0 skipped' % SUITE)
        sys.exit(1)
