#!/bin/bash
# Layout/API equality of our include/infiniband headers with upstream's.
#   compat-tests/layout/run.sh                 all covered headers
#   compat-tests/layout/run.sh verbs.h sa.h    only those headers (quick feedback)
# Environment: OUR_INCLUDE, UPSTREAM_INCLUDE (compat-tests/lib.sh defaults),
#   LAYOUT_QUIET=1 hides PASS lines, LAYOUT_VERBOSE=1 shows compiler errors,
#   LAYOUT_NOCACHE=1 recomputes the (cached) upstream side.
# Needs: gcc, g++, clang, python3.  Scratch: build/compat-tests/layout/.
. "$(dirname "$0")/../lib.sh"
suite_begin layout
need python3
export OUR_INCLUDE UPSTREAM_INCLUDE
exec python3 compat-tests/layout/layout.py "$@"
