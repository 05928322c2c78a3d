#!/bin/bash
# The vm-asyncwatch suite: Debian's ibv_asyncwatch on Soft-RoCE inside the
# qemu VM.  ibv_asyncwatch -d rxe0 and -d rxe1 run on Debian's libibverbs and
# on ours (LD_LIBRARY_PATH=$(dirname $OUR_LIB)) at the same time, in ONE boot,
# while the guest takes veth0 (rxe0's netdev) down and up, then veth1, then
# adds and removes an address on veth0 (asyncwatch-actions.txt).  PASS per
# (device, action) when ours printed the same events as upstream.
#
#   asyncwatch.sh               the suite (OUR_LIB, UPSTREAM_LIB as in CONVENTIONS.md)
#   asyncwatch.sh --self-check  Debian's library plays "ours" too: all must PASS
set -u
. "$(dirname "$0")/suite-lib.sh"
suite_init vm-asyncwatch
[ "${1:-}" = --self-check ] && suite_self_check

suite_need_commands "ibverbs-utils, coreutils, iproute2, python3" \
    ibv_asyncwatch stdbuf rdma ip timeout python3 apt-get dpkg flock
suite_need_upstream
suite_lib_dirs

suite_run_vm asyncwatch-guest.sh 600
suite_report asyncwatch-report.py --actions "$HERE/asyncwatch-actions.txt"
