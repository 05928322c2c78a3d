#!/bin/bash
# Dynamic symbol table / version definitions / SONAME of OUR_LIB vs UPSTREAM_LIB.
#   compat-tests/symbols/run.sh
# Environment: OUR_LIB (default build/lib/libibverbs.so.1),
#   UPSTREAM_LIB (default /usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0).
# Needs: readelf (binutils), python3.
cd "$(dirname "$0")/../.." || exit 1
export OUR_LIB="${OUR_LIB:-build/lib/libibverbs.so.1}"
export UPSTREAM_LIB="${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}"
for t in python3 readelf; do
	if ! command -v $t >/dev/null; then
		echo "FAIL prerequisites: $t not found"
		echo "symbols: 0 passed, 1 failed"
		exit 1
	fi
done
mkdir -p build/compat-tests/symbols
exec python3 compat-tests/symbols/symbols.py "$@"
