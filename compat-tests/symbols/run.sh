#!/bin/bash
# Dynamic symbol table / version definitions / SONAME of OUR_LIB vs the union
# of Debian's libibverbs1 of bookworm (44.0), trixie (56.1) and sid (65.0).
#   compat-tests/symbols/run.sh
# Environment: OUR_LIB, UPSTREAM_LIB (compat-tests/lib.sh defaults; bookworm's),
#   UPSTREAM_LIBS (default: UPSTREAM_LIB plus the libibverbs.so.1 of the
#   trixie and sid roots, built by compat-tests/roots.sh when missing).
# Needs: readelf (binutils), python3, mmdebstrap (roots).  Scratch: build/compat-tests/symbols/.
. "$(dirname "$0")/../lib.sh"
suite_begin symbols
need python3 readelf=binutils
if [ -z "${UPSTREAM_LIBS:-}" ]; then
    roots=$(bash compat-tests/roots.sh trixie sid) || fail_early roots "compat-tests/roots.sh trixie sid failed"
    UPSTREAM_LIBS=$UPSTREAM_LIB
    for r in $roots; do
        UPSTREAM_LIBS="$UPSTREAM_LIBS $(readlink -f "$r/usr/lib/x86_64-linux-gnu/libibverbs.so.1")"
    done
fi
export OUR_LIB UPSTREAM_LIB UPSTREAM_LIBS
exec python3 compat-tests/symbols/symbols.py "$@"
