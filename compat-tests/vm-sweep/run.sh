#!/bin/bash
# The vm-sweep suite: a bad-input sweep over libibverbs' exported API
# (sweep.c: one call with one bad argument per case, each case in a child
# process with fresh good objects), in the project's qemu VM, ONE boot:
# Debian's libibverbs on rxe0, ours on rxe0, ours on swr0 (our software
# device).  report.py compares ours/rxe0 and ours/swr0 with upstream/rxe0
# case by case; expected-differences.txt lists the differences that are
# inherent to the device, each with its reason (a stale line FAILs).
#
#   run.sh               the suite (OUR_LIB, UPSTREAM_LIB, UPSTREAM_INCLUDE as
#                        in CONVENTIONS.md; VM_CACHE, VM_TIMEOUT as in
#                        compat-tests/vm/README.md)
#   run.sh --self-check  Debian's library plays "ours" on rxe0 (every case must
#                        PASS); no swr0 run (Debian's library has no swr0)
#   run.sh --host [CASE...]
#                        no VM: ours on swr0 on this machine, no comparison;
#                        PASS per case that did not crash (quick iteration;
#                        serialize it with the soft suites: flock /tmp/suites.lock)
set -u
SWEEP_DIR=$(cd "$(dirname "$0")" && pwd)
. "$SWEEP_DIR/../vm/suite-lib.sh"
suite_init vm-sweep
UPSTREAM_INCLUDE=${UPSTREAM_INCLUDE:-/usr/include}
mode=vm
case "${1:-}" in
    --self-check) suite_self_check; SWEEP_SWR0=0; EXPECTED=/dev/null ;;
    --host) mode=host; shift ;;
esac

suite_need_commands "gcc, coreutils, python3" cc timeout python3
[ -e "$UPSTREAM_INCLUDE/infiniband/verbs.h" ] || fail_early prerequisites "$UPSTREAM_INCLUDE/infiniband/verbs.h missing (libibverbs-dev; make deps)"

# ---- build sweep on the host with Debian's headers; it links
# libibverbs.so.1 by soname, so LD_LIBRARY_PATH picks the library.
BIN=$PWD/$OUT/bin
mkdir -p "$BIN"
cc -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -I"$UPSTREAM_INCLUDE" -o "$BIN/sweep" "$SWEEP_DIR/sweep.c" \
    -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 > "$OUT/build.log" 2>&1 ||
    fail_early build "sweep.c does not build with Debian's headers: $(head -5 "$OUT/build.log")"

# sweep_swr0_here LIBDIR LIMIT OUT ERR [CASE...]: ours on swr0 on this
# machine (no VM), a fresh runtime directory, no core files
sweep_swr0_here() {
    local lib=$1 limit=$2 out=$3 err=$4 rt=$PWD/$OUT/rt; shift 4
    rm -rf "$rt"; mkdir -p -m 0700 "$rt"
    (ulimit -c 0; exec env LD_LIBRARY_PATH="$lib" RDMAV_SOFT_DEVICES=swr0 XDG_RUNTIME_DIR="$rt" \
        timeout -k 5 "$limit" "$BIN/sweep" swr0 1 "$@") > "$out" 2> "$err" < /dev/null
}

if [ "$mode" = host ]; then
    LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
    [ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing $LIBDIR/libibverbs/libswrdma-rdmav34.so (run: make swrdma)"
    sweep_swr0_here "$LIBDIR" 300 "$OUT/host.out" "$OUT/host.err" "$@"
    exec python3 "$SWEEP_DIR/report.py" --host "$OUT/host.out"
fi

suite_need_commands "iproute2, coreutils, apt-get" rdma ip apt-get dpkg flock
suite_need_upstream
suite_lib_dirs
[ "${SWEEP_SWR0:-1}" = 0 ] || [ -e "$OUR_LD/libibverbs/libswrdma-rdmav34.so" ] ||
    echo "$SUITE: note: no $OUR_LD/libibverbs/libswrdma-rdmav34.so (make swrdma): the swr0 run will fail" >&2
# suite-lib.sh runs scripts of compat-tests/vm ($HERE): ours are next door
# Ours on swr0 (the software device: no kernel, no rxe) runs on this
# machine after the VM (SWEEP_SWR0_IN_VM=1: in the VM, as before; ~6x
# slower under TCG), into the same results directory.
swr0_vm=${SWEEP_SWR0:-1}
[ "${SWEEP_SWR0_IN_VM:-0}" = 1 ] || swr0_vm=0
suite_run_vm ../vm-sweep/guest.sh 600 BIN="$BIN" SWEEP_LIMIT="${SWEEP_LIMIT:-240}" SWEEP_SWR0="$swr0_vm" SWEEP_CASES="${SWEEP_CASES:-}"
if [ "${SWEEP_SWR0:-1}" = 1 ] && [ "$swr0_vm" = 0 ] && [ -d "$RUN/results" ]; then
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    sweep_swr0_here "$OUR_LD" "${SWEEP_LIMIT:-240}" "$RUN/results/ours-swr0.out" "$RUN/results/ours-swr0.err" \
        ${SWEEP_CASES:-}
    echo $? > "$RUN/results/ours-swr0.rc"
    echo $(( ($(date +%s%N) - t0) / 1000000 )) > "$RUN/results/ours-swr0.ms"
    # What this machine's kernel answers in place of the VM's: with no RDMA
    # netlink here (no ib_core), copy-on-fork cannot be asked, and
    # ibv_is_fork_initialized says DISABLED (0), as upstream's library says
    # on such a machine; in the VM (Linux 6.1, rdma_rxe) UNNEEDED (2).
    EXPECTED_HOST=$PWD/$OUT/expected-differences.txt
    cat "${EXPECTED:-$SWEEP_DIR/expected-differences.txt}" > "$EXPECTED_HOST"
    [ -d /sys/module/ib_core ] ||
        echo "swr0|is_fork_initialized_plain|swr0 ran on this machine, which has no RDMA netlink (no ib_core): copy-on-fork cannot be asked, so DISABLED (0) as upstream's library says here; in the VM UNNEEDED (2)" >> "$EXPECTED_HOST"
    EXPECTED=$EXPECTED_HOST
fi
# (--self-check: no expected differences, Debian's library against itself)
suite_report ../vm-sweep/report.py --expected "${EXPECTED:-$SWEEP_DIR/expected-differences.txt}"
