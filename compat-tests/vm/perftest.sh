#!/bin/bash
# The vm-perftest suite: Debian's perftest (ib_send/write/read/atomic _bw/_lat;
# RC, UC, UD where perftest allows them) on Soft-RoCE inside the qemu VM,
# server on rxe0, client on rxe1 (TCP exchange on 127.0.0.1), once on Debian's
# libibverbs and once on ours (LD_LIBRARY_PATH=$(dirname $OUR_LIB)), all in
# ONE boot.  PASS when ours completes wherever upstream completes (exit
# status 0 on both sides and a result row); rxe's device limits are listed in
# perftest-known-upstream-failures.txt and ours must fail the same way there.
# Tests: perftest-tests.txt.
#
#   perftest.sh               the suite (OUR_LIB, UPSTREAM_LIB as in CONVENTIONS.md)
#   perftest.sh --self-check  Debian's library plays "ours" too: all must PASS
set -u
export VM_CPU=${VM_CPU:-qemu64} # (user-space work in the guest: lib.sh)
. "$(dirname "$0")/suite-lib.sh"
suite_init vm-perftest
[ "${1:-}" = --self-check ] && suite_self_check

suite_need_commands "perftest, iproute2, coreutils, python3" \
    ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat \
    ib_atomic_bw ib_atomic_lat rdma ip timeout python3 apt-get dpkg flock
suite_need_upstream
suite_lib_dirs "perftest will fall back to Debian's library"

# a normal run needs about 3 minutes under TCG; if ours hangs in every test,
# its per-side limits (20-60 s) add up to about 10 minutes more
suite_run_vm perftest-guest.sh 1200 SUITE_TESTS="$HERE/perftest-tests.txt"
suite_report perftest-report.py --tests "$HERE/perftest-tests.txt" \
    --known "$HERE/perftest-known-upstream-failures.txt"
