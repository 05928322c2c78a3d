#!/bin/bash
# The vm-fault suite: faults on a real kernel RDMA device, Soft-RoCE rxe0 in
# the qemu VM (Debian bookworm's 6.1 kernel, compat-tests/vm/README.md), once
# on Debian's libibverbs and once on ours (LD_LIBRARY_PATH=$(dirname
# $OUR_LIB)), test by test in ONE boot (tests.txt; fault-guest.sh):
#   * `rdma link delete rxe0` while ibv_rc_pingpong, ib_write_bw and
#     ib_send_bw run between rxe0 and rxe1;
#   * faultprog.c (built here): a process with PD, channel, CQ, SRQ, MR, RC QP
#     and an async-event thread facing the delete, its port going down, and
#     EIO from every command (what a disassociated device answers), with and
#     without RDMAV_ALLOW_DISASSOC_DESTROY=1; every destroy's return value,
#     the descriptors, mappings and heap after the close;
#   * rxe0 added again and used by new processes.
# PASS per check when ours behaves as upstream in the same run (fault-report.py).
# rxe in 6.1 cannot disassociate (no disassociate_ucontext): README.md here.
#
#   run.sh               the suite (OUR_LIB, UPSTREAM_LIB, UPSTREAM_INCLUDE as in CONVENTIONS.md)
#   run.sh --self-check  Debian's library plays "ours" too: all must PASS
set -u
. "$(dirname "$0")/../vm/suite-lib.sh"
suite_init vm-fault
FAULT=$PWD/compat-tests/vm-fault   # ours: the program, guest script, report (HERE: compat-tests/vm)
UPSTREAM_INCLUDE=${UPSTREAM_INCLUDE:-/usr/include}
[ "${1:-}" = --self-check ] && suite_self_check

suite_need_commands "gcc, iproute2, ibverbs-utils, perftest, coreutils, python3" \
    cc rdma ip timeout stdbuf python3 apt-get dpkg flock ibv_rc_pingpong ibv_devinfo ibv_devices ib_write_bw ib_send_bw
[ -e "$UPSTREAM_INCLUDE/infiniband/verbs.h" ] || fail_early prerequisites "$UPSTREAM_INCLUDE/infiniband/verbs.h missing (libibverbs-dev; make deps)"
suite_need_upstream
suite_lib_dirs

# faultprog, built on the host with Debian's headers, linked by soname:
# LD_LIBRARY_PATH picks the library at run time
BIN=$PWD/$OUT/bin
mkdir -p "$BIN"
cc -O2 -Wall -Wextra -Werror -I"$UPSTREAM_INCLUDE" -o "$BIN/faultprog" "$FAULT/faultprog.c" \
    -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 -lpthread > "$OUT/build.log" 2>&1 ||
    fail_early build "faultprog.c does not build: $(head -5 "$OUT/build.log")"

suite_run_vm ../vm-fault/fault-guest.sh 420 BIN="$BIN"
suite_report ../vm-fault/fault-report.py --tests "$FAULT/tests.txt"
