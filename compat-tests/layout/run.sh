#!/bin/bash
# Layout/API equality of our include/infiniband headers with upstream's.
#   compat-tests/layout/run.sh                 all covered headers
#   compat-tests/layout/run.sh verbs.h sa.h    only those headers (quick feedback)
# Environment: OUR_INCLUDE (default include), UPSTREAM_INCLUDE (default /usr/include),
#   LAYOUT_QUIET=1 hides PASS lines, LAYOUT_VERBOSE=1 shows compiler errors,
#   LAYOUT_NOCACHE=1 recomputes the (cached) upstream side.
# Needs: gcc, g++, clang, python3.  Scratch: build/compat-tests/layout/.
cd "$(dirname "$0")/../.." || exit 1
export OUR_INCLUDE="${OUR_INCLUDE:-include}"
export UPSTREAM_INCLUDE="${UPSTREAM_INCLUDE:-/usr/include}"
if ! command -v python3 >/dev/null; then
	echo "FAIL prerequisites: python3 not found"
	echo "layout: 0 passed, 1 failed, 0 skipped, differences: 0"
	exit 1
fi
exec python3 compat-tests/layout/layout.py "$@"
