#!/bin/bash
# The vm-pyverbs suite: rdma-core's own Python tests (Debian's python3-pyverbs,
# /usr/share/doc/rdma-core/tests, all 273 of them) on Soft-RoCE rxe0 inside
# the qemu VM, once on Debian's libibverbs and once on ours
# (LD_LIBRARY_PATH=$(dirname $OUR_LIB)), in ONE boot.  Each test has a
# deadline (pyverbs-runner.py).  PASS per test when ours ends like upstream
# (pass/pass, skip/skip for the same reason; known device limits of rxe in
# pyverbs-known-upstream-failures.txt: the same failure).  The full suite
# takes about 15 s per library under TCG, so it always runs in full.
#
#   pyverbs.sh                 the suite (OUR_LIB, UPSTREAM_LIB as in CONVENTIONS.md)
#   pyverbs.sh --self-check    Debian's library plays "ours" too: all must PASS
#   pyverbs.sh --only REGEX    only the test ids matching the extended REGEX
#                              (e.g. --only 'test_qp\.|test_mr\.'), for debugging
set -u
export VM_CPU=${VM_CPU:-qemu64} # (user-space work in the guest: lib.sh)
. "$(dirname "$0")/suite-lib.sh"
suite_init vm-pyverbs
TABLE=$OUT/table.txt
ONLY=
while [ $# -gt 0 ]; do
    case "$1" in
        --self-check) suite_self_check; TABLE=$OUT/table-self-check.txt ;;
        --only) ONLY=${2:-}; shift ;;
        *) echo "usage: $0 [--self-check] [--only REGEX]" >&2; exit 2 ;;
    esac
    shift
done

suite_need_commands "iproute2, coreutils, python3, gzip" \
    rdma ip timeout python3 gunzip apt-get dpkg flock /usr/bin/python3
[ -e /usr/share/doc/rdma-core/tests/run_tests.py ] && [ -d /usr/lib/python3/dist-packages/pyverbs ] ||
    fail_early prerequisites "rdma-core's tests missing (python3-pyverbs; make deps)"
suite_need_upstream
suite_lib_dirs "pyverbs will fall back to Debian's library"

# a normal run needs about 1 minute; each library's run is capped at 600 s
# (pyverbs-guest.sh BUDGET), so even a hanging ours cannot exceed this
suite_run_vm pyverbs-guest.sh 1500 PYV_ONLY="$ONLY"
SUITE_DETAILS="per-test table: $TABLE, raw: $OUT/run/results/"
suite_report pyverbs-report.py --known "$HERE/pyverbs-known-upstream-failures.txt" --table "$TABLE"
