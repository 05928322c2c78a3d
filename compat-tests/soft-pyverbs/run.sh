#!/bin/bash
# compat-tests/soft-pyverbs: rdma-core's own Python test suite (Debian's
# python3-pyverbs 44, /usr/share/doc/rdma-core/tests) on the software RDMA
# device swr0 (providers/swrdma), through our library.  No RDMA hardware, no
# kernel module, no root.
#
# Every test runs under a deadline (runner.py: one child process per test
# module, a hung test is killed and recorded, the module goes on).  Results:
#   build/compat-tests/soft-pyverbs/results.json   per test: status, message, traceback, time
#   build/compat-tests/soft-pyverbs/results.txt    table per module, totals
#   build/compat-tests/soft-pyverbs/logs/          each module's output (stack dumps of timeouts)
# Tests that fail on swr0 for a stated reason are listed in
# compat-tests/soft-pyverbs/expected-failures.txt; they count as skipped.  An
# unlisted failure is a FAIL, and so is a listed test that no longer fails.
#
# Input: OUR_LIB (default build/lib/libibverbs.so.1; the provider must be in
# $(dirname OUR_LIB)/libibverbs/), PYVERBS_TESTS (default
# /usr/share/doc/rdma-core/tests), SOFT_PYVERBS_GID (default 1: RoCE v2; 0:
# RoCE v1), SOFT_PYVERBS_ONLY (a regex of test ids: run only those),
# SOFT_PYVERBS_DEADLINE (seconds per test, default 60).
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin soft-pyverbs
OUT=build/compat-tests/soft-pyverbs
HERE=compat-tests/soft-pyverbs
SRC=${PYVERBS_TESTS:-/usr/share/doc/rdma-core/tests}
GID=${SOFT_PYVERBS_GID:-1}

LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
[ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing $LIBDIR/libibverbs/libswrdma-rdmav34.so (run: make)"
# Debian's python3 (pyverbs is built for it), not whatever python3 is first on the PATH.
PY=/usr/bin/python3
need "$PY=python3" "$SRC/run_tests.py=python3-pyverbs"
"$PY" -c 'import pyverbs.device' 2>/dev/null || fail_early prerequisites "pyverbs missing (apt-get install python3-pyverbs)"

# Debian ships the suite compressed as documentation: a runnable copy.
rm -rf "$OUT/tests"
cp -r "$SRC" "$OUT/tests"
find "$OUT/tests" -name '*.gz' -exec gunzip -f {} +
rm -rf "$OUT/tests/__pycache__"

# A private runtime directory: the tests never meet other users' devices
# (or another suite's endpoints).
export XDG_RUNTIME_DIR="$PWD/$OUT/rt"
rm -rf "$XDG_RUNTIME_DIR"; mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
export LD_LIBRARY_PATH="$LIBDIR"
export RDMAV_SOFT_DEVICES=swr0
unset RDMAV_DRIVERS IBV_DRIVERS
# Quiet Python's own noise; nothing else of the environment is changed.
export PYTHONDONTWRITEBYTECODE=1

args=(run --tests-dir "$PWD/$OUT/tests" --dev swr0 --gid "$GID"
      --out "$OUT/results.json" --table "$OUT/results.txt" --logs "$OUT/logs"
      --expected "$HERE/expected-failures.txt"
      --deadline "${SOFT_PYVERBS_DEADLINE:-60}" --budget 900 --progress)
[ -n "${SOFT_PYVERBS_ONLY:-}" ] && args+=(--only "$SOFT_PYVERBS_ONLY")
"$PY" "$HERE/runner.py" "${args[@]}"
