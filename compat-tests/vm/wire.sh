#!/bin/bash
# The vm-wire suite: ours' RoCE v2 wire transport (the swrdma provider's
# software device bound to a network interface, RDMAV_SOFT_DEVICES=rw0@veth1)
# against the kernel's Soft-RoCE (rxe0, Debian's libibverbs) and against
# itself, inside the qemu VM, in ONE boot: ibv_{rc,uc,ud}_pingpong and
# perftest's RC ib_{send,write,read,atomic}_{bw,lat}, on a clean link, with
# 1% loss and with reordering (netem).  Ours runs in network namespaces only
# (far: veth1 192.0.2.2, facing rxe0 on veth0 192.0.2.1 in the root netns;
# na/nb: vA 10.9.0.1 / vB 10.9.0.2 for ours <-> ours); rxe0 <-> rxe1 runs
# first, before the move, for the reference figures.  PASS when both sides
# exit 0 (and, for the pingpongs, no "invalid data").  Tests:
# wire-tests.txt; guest side: wire-guest.sh; verdicts: wire-report.py.
#
#   wire.sh               the suite (OUR_LIB as in CONVENTIONS.md; its
#                         directory must hold libibverbs/libswrdma-rdmav34.so)
#   wire.sh --self-check  rxe0 with Debian's library plays ours in the
#                         namespaces: proves the harness; all must PASS
# Environment: WIRE_OURS_ENV (NAME=VALUE words for ours' processes, e.g.
# SWRDMA_WIRE_TRACE=1), WIRE_CPU=1 (each side's CPU time: make bench),
# VM_CACHE, VM_TIMEOUT (default 1500 s), WIRE_REFERENCE=0 (no
# rxe0 <-> rxe1 part), WIRE_SOAK_PCT (the rc_soak* tests' iteration
# counts at that percent of wire-tests.txt's; default 100), WIRE_BUDGET (s, default 900: no test starts later),
# WIRE_ONLY (an extended regex over PAIR/CONDITION/TEST: only those run, e.g.
# 'ours-ours/clean/|rxe-rxe/clean/rc_'), WIRE_SKIP (one over the same: those
# do not run).
set -u
. "$(dirname "$0")/suite-lib.sh"
suite_init vm-wire
SELF=0
[ "${1:-}" = --self-check ] && { suite_self_check; SELF=1; }

suite_need_commands "ibverbs-utils, perftest, iproute2, coreutils, python3" \
    ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_devinfo \
    ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat \
    ib_atomic_bw ib_atomic_lat rdma ip tc sysctl timeout python3 apt-get dpkg flock
suite_need_upstream
suite_lib_dirs "the wire tests will find no provider for rw0"
if [ "$SELF" = 0 ] && ! [ -e "$OUR_LD/libibverbs/libswrdma-rdmav34.so" ]; then
    echo "$SUITE: note: $OUR_LD/libibverbs/libswrdma-rdmav34.so does not exist (make swrdma?)" >&2
fi
VM_CACHE=$(mkdir -p "${VM_CACHE:-build/vm-cache}" && cd "${VM_CACHE:-build/vm-cache}" && pwd)
export VM_CACHE

# a normal run: under a minute to boot and set up, the rxe0 <-> rxe1
# reference about 3-4 minutes, the matrix a few minutes more; the guest
# starts no test after WIRE_BUDGET s, so a hanging ours is bounded too
# linger.so for rc_pingpong's server under loss (see linger.c)
LINGER=$PWD/$OUT/bin/linger.so
mkdir -p "$(dirname "$LINGER")"
cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$LINGER" "$HERE/linger.c" -ldl 2>"$OUT/linger-build.log" \
    || fail_early build "linger.c does not build: $(head -3 "$OUT/linger-build.log" | tr '\n' ' ')"

suite_run_vm wire-guest.sh 1500 SUITE_TESTS="$HERE/wire-tests.txt" SELF_CHECK="$SELF" WIRE_LINGER="$LINGER" \
    VM_CACHE="$VM_CACHE" WIRE_REFERENCE="${WIRE_REFERENCE:-1}" WIRE_BUDGET="${WIRE_BUDGET:-900}" \
    WIRE_ONLY="${WIRE_ONLY:-}" WIRE_SKIP="${WIRE_SKIP:-}" WIRE_SOAK_PCT="${WIRE_SOAK_PCT:-100}" WIRE_CPU="${WIRE_CPU:-0}" WIRE_OURS_ENV="${WIRE_OURS_ENV:-}"
suite_report wire-report.py --tests "$HERE/wire-tests.txt"
