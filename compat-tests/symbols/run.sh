#!/bin/bash
# Dynamic symbol table / version definitions / SONAME of OUR_LIB vs UPSTREAM_LIB.
#   compat-tests/symbols/run.sh
# Environment: OUR_LIB, UPSTREAM_LIB (compat-tests/lib.sh defaults).
# Needs: readelf (binutils), python3.  Scratch: build/compat-tests/symbols/.
. "$(dirname "$0")/../lib.sh"
suite_begin symbols
need python3 readelf=binutils
export OUR_LIB UPSTREAM_LIB
exec python3 compat-tests/symbols/symbols.py "$@"
