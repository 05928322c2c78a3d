#!/bin/bash
# The vm-rcerr suite: RC error completions (statuses on each side, QP
# states, async events) for every error class, rcerr.c, in the project's
# qemu VM, ONE boot: Debian's libibverbs on rxe0 (the oracle), ours on
# rxe0, ours on swr0 and ours on rw0@lo (our wire device, in a netns).
# report.py compares each run of ours with upstream/rxe0 case by case;
# expected-differences.txt lists where ours follows IBTA rather than rxe,
# each with its reason (a stale line FAILs).
#
#   run.sh               the suite (OUR_LIB, UPSTREAM_LIB, UPSTREAM_INCLUDE as
#                        in CONVENTIONS.md; VM_CACHE, VM_TIMEOUT as in
#                        compat-tests/vm/README.md)
#   run.sh --self-check  Debian's library plays "ours" on rxe0 (every case must
#                        PASS); no swr0/rw0 runs
#   run.sh --host [CASE...]
#                        no VM: ours on swr0 (and rw0@lo in a fresh netns when
#                        root) on this machine, printed side by side, no
#                        comparison (serialize it: flock /tmp/suites.lock)
set -u
RCERR_DIR=$(cd "$(dirname "$0")" && pwd)
. "$RCERR_DIR/../vm/suite-lib.sh"
suite_init vm-rcerr
UPSTREAM_INCLUDE=${UPSTREAM_INCLUDE:-/usr/include}
mode=vm
case "${1:-}" in
    --self-check) suite_self_check; RCERR_OURS=0; EXPECTED=/dev/null ;;
    --host) mode=host; shift ;;
esac

suite_need_commands "gcc, coreutils, python3" cc timeout python3
[ -e "$UPSTREAM_INCLUDE/infiniband/verbs.h" ] || fail_early prerequisites "$UPSTREAM_INCLUDE/infiniband/verbs.h missing (libibverbs-dev; make deps)"

BIN=$PWD/$OUT/bin
mkdir -p "$BIN"
cc -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -I"$UPSTREAM_INCLUDE" -o "$BIN/rcerr" "$RCERR_DIR/rcerr.c" \
    -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 > "$OUT/build.log" 2>&1 ||
    fail_early build "rcerr.c does not build with Debian's headers: $(head -5 "$OUT/build.log")"

if [ "$mode" = host ]; then
    LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
    [ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing $LIBDIR/libibverbs/libswrdma-rdmav34.so (run: make swrdma)"
    rt=$PWD/$OUT/rt; rm -rf "$rt"; mkdir -p -m 0700 "$rt/s" "$rt/w"
    ulimit -c 0
    env LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 XDG_RUNTIME_DIR="$rt/s" \
        timeout -k 5 300 "$BIN/rcerr" swr0 1 "$@" > "$OUT/host-swr0.out" 2> "$OUT/host-swr0.err"
    : > "$OUT/host-rw0.out"
    if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null; then
        unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
            env LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=rw0@lo XDG_RUNTIME_DIR="$rt/w" \
            timeout -k 5 300 "$BIN/rcerr" rw0 1 "$@" > "$OUT/host-rw0.out" 2> "$OUT/host-rw0.err"
    fi
    exec python3 "$RCERR_DIR/report.py" --host "$OUT/host-swr0.out" "$OUT/host-rw0.out"
fi

suite_need_commands "iproute2, coreutils, apt-get" rdma ip apt-get dpkg flock
suite_need_upstream
suite_lib_dirs
[ "${RCERR_OURS:-1}" = 0 ] || [ -e "$OUR_LD/libibverbs/libswrdma-rdmav34.so" ] ||
    echo "$SUITE: note: no $OUR_LD/libibverbs/libswrdma-rdmav34.so (make swrdma): the swr0/rw0 runs will fail" >&2
suite_run_vm ../vm-rcerr/guest.sh 400 BIN="$BIN" RCERR_LIMIT="${RCERR_LIMIT:-150}" RCERR_OURS="${RCERR_OURS:-1}"
suite_report ../vm-rcerr/report.py --expected "${EXPECTED:-$RCERR_DIR/expected-differences.txt}"
