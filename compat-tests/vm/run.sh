#!/bin/bash
# The vm suite: Debian's unmodified ibverbs-utils on Soft-RoCE (rxe0/rxe1 on
# a veth pair) inside a qemu VM running Debian bookworm's 6.1 kernel, once on
# Debian's libibverbs and once on ours (LD_LIBRARY_PATH=$(dirname $OUR_LIB)),
# all in ONE boot.  PASS when ours behaves like upstream: same exit statuses
# (server and client for the pingpongs), byte-identical stdout for
# ibv_devices / ibv_devinfo.  Tests: compat-tests/vm/tests.txt; device limits
# of rxe: compat-tests/vm/known-upstream-failures.txt.  See README.md.
#
#   run.sh               the suite (OUR_LIB, UPSTREAM_LIB as in CONVENTIONS.md)
#   run.sh --self-check  checks the harness itself: Debian's library plays
#                        "ours" too, so every test must PASS
#                        (results-self-check.json)
set -u
. "$(dirname "$0")/suite-lib.sh"
suite_init vm
[ "${1:-}" = --self-check ] && suite_self_check

# ---- prerequisites (the guest runs the host's installed packages)
suite_need_commands "ibverbs-utils, iproute2, coreutils, python3, util-linux" \
    ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong \
    ibv_srq_pingpong ibv_xsrq_pingpong rdma ip timeout python3 apt-get dpkg flock
suite_need_upstream
suite_lib_dirs "the tools will fall back to Debian's library and the report's 'ours' line says so"

# ---- one VM boot runs everything
# hard limit of the whole boot: a normal run needs 60-110 s; if ours hangs
# in every pingpong, its per-side timeouts (25-45 s) add up to ~4 min more
suite_run_vm suite-guest.sh 420 SUITE_TESTS="$HERE/tests.txt"
suite_report report.py --tests "$HERE/tests.txt" --known "$HERE/known-upstream-failures.txt"
