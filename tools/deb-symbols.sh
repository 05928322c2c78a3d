#!/bin/bash
# Writes debian/libibverbs1-rs.symbols: every symbol our libibverbs.so.1 exports
# (name@version, from its dynamic symbol table) with the first Debian
# version of libibverbs1 that provides it, read from Debian's own symbols
# files of bookworm (44.0), trixie (56.1) and sid (65.0) - so a package
# built against libibverbs-dev (Debian's, or ours from `make install`) depends on libibverbs1 (>= what Debian's
# would ask), and packages built against Debian's are satisfied by ours.
#
#   tools/deb-symbols.sh [LIB]        LIB default build/lib/libibverbs.so.1
#   tools/deb-symbols.sh --check [LIB]   compare with the checked-in file
# Needs: Debian's libibverbs1 on this host (bookworm) and the trixie and sid
# roots (compat-tests/roots.sh).  A symbol no Debian release has is an error.
set -eu
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
lib=${1:-build/lib/libibverbs.so.1}
roots=$(bash compat-tests/roots.sh trixie sid)
files=(/var/lib/dpkg/info/libibverbs1:*.symbols)
for r in $roots; do files+=("$r"/var/lib/dpkg/info/libibverbs1:*.symbols); done
for f in "${files[@]}"; do [ -r "$f" ] || { echo "deb-symbols: missing $f" >&2; exit 1; }; done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
{
    echo "libibverbs.so.1 libibverbs1 #MINVER#"
    echo "* Build-Depends-Package: libibverbs-dev"
    readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $8 ~ /@/ { s = $8; sub(/@@/, "@", s); print s }' |
        sort -u | awk -v files="${files[*]}" '
            BEGIN {
                n = split(files, f, " ")
                for (i = 1; i <= n; i++)
                    while ((getline line < f[i]) > 0)
                        if (line ~ /^ /) { split(line, a, " "); if (!(a[1] in minver)) minver[a[1]] = a[2] }
            }
            { nodes[substr($0, index($0, "@") + 1)] = 1; syms[$0] = 1 }
            END {
                for (v in nodes) syms[v "@" v] = 1
                bad = 0
                for (s in syms) {
                    if (!(s in minver)) { print "deb-symbols: no Debian release has " s > "/dev/stderr"; bad = 1; continue }
                    print " " s " " minver[s]
                }
                exit bad
            }' | LC_ALL=C sort
} >"$out"
if [ $check = 1 ]; then
    diff -u debian/libibverbs1-rs.symbols "$out" && echo "deb-symbols: debian/libibverbs1-rs.symbols is up to date"
else
    cp "$out" debian/libibverbs1-rs.symbols
    echo "deb-symbols: wrote debian/libibverbs1-rs.symbols ($(grep -c '^ ' debian/libibverbs1-rs.symbols) symbols)"
fi
