#!/bin/bash
# compat-tests/soft: Debian's unmodified verbs programs (ibverbs-utils,
# perftest) on the software RDMA device (providers/swrdma), two processes
# per test, no RDMA hardware, no kernel module, no root.
#
# Input: OUR_LIB (default build/lib/libibverbs.so.1); the provider must be in
# $(dirname OUR_LIB)/libibverbs/libswrdma-rdmav34.so (make swrdma).
# SOFT_QUICK=1 runs a smaller perftest matrix (and the stress runs once).
# SOFT_STRESS=N repeats each stress run N times (default 3; 0: none).
# Another architecture (compat-tests/arm64): SOFT_CC compiles the suite's own
# C programs, SOFT_EXEC (e.g. "qemu-aarch64-static -L ROOT") runs them, and
# RUST_TARGET with its CARGO_TARGET_<T>_RUNNER runs the ring tests
# (SOFT_RING_TESTS=0 leaves them out, SOFT_RING_WHY says why; likewise
# SOFT_ROCE_TESTS/SOFT_ROCE_WHY for the RoCE v2 wire-format tests).
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin soft
OUT=build/compat-tests/soft
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
PROV="$LIBDIR/libibverbs/libswrdma-rdmav34.so"

# A private runtime directory: tests never meet other users' devices.
export XDG_RUNTIME_DIR="$PWD/$OUT/rt"
rm -rf "$XDG_RUNTIME_DIR"; mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
export LD_LIBRARY_PATH="$LIBDIR"
export RDMAV_SOFT_DEVICES=swr0
# The library finds the provider beside itself (build/lib/libibverbs/);
# nothing names it here, so that lookup is tested too.
unset RDMAV_DRIVERS IBV_DRIVERS

[ -e "$PROV" ] || fail_early provider "missing $PROV (run: make swrdma)"
need ibv_devices=ibverbs-utils ibv_devinfo=ibverbs-utils ibv_rc_pingpong=ibverbs-utils ibv_asyncwatch=ibverbs-utils

# --- device ---------------------------------------------------------------
out=$(timeout 20 ibv_devices 2>&1)
if echo "$out" | grep -qE '^\s*swr0\s+[0-9a-f]{16}$'; then pass ibv_devices; else fail ibv_devices "$out"; fi
out=$(timeout 20 ibv_devinfo -v -d swr0 2>&1); rc=$?
echo "$out" > "$OUT/devinfo.txt"
if [ $rc -eq 0 ] && echo "$out" | grep -q 'PORT_ACTIVE' && echo "$out" | grep -q 'link_layer:.*Ethernet' \
   && echo "$out" | grep -q 'GID\[  1\]:.*::ffff:127.0.0.1, RoCE v2'; then
    pass "ibv_devinfo -v"
else
    fail "ibv_devinfo -v" "rc=$rc, see $OUT/devinfo.txt"
fi
out=$(RDMAV_SOFT_DEVICES= timeout 20 ibv_devices 2>&1)
if echo "$out" | grep -q swr0; then fail "disabled without RDMAV_SOFT_DEVICES" "$out"; else pass "disabled without RDMAV_SOFT_DEVICES"; fi

# --- two-process runs -------------------------------------------------------
# With two or more CPUs, server and client get one each (busy-polling
# processes that share a CPU measure the scheduler, not the device).
pin_s=(); pin_c=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_s=(taskset -c 0); pin_c=(taskset -c 1); fi
port=19000
# pair <name> <timeout> <server cmd...> -- <client cmd...>
pair() {
    local name=$1 to=$2; shift 2
    local srv=() cli=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done; shift
    cli=("$@")
    local log="$OUT/$(echo "$name" | tr ' /' '__')"
    "${pin_s[@]}" timeout "$to" "${srv[@]}" >"$log.server" 2>&1 &
    local spid=$!
    sleep 0.4
    "${pin_c[@]}" timeout "$to" "${cli[@]}" >"$log.client" 2>&1
    local crc=$?
    wait $spid; local src=$?
    if [ $crc -eq 0 ] && [ $src -eq 0 ]; then pass "$name"; return 0; fi
    fail "$name" "server rc=$src client rc=$crc ($(tail -n1 "$log.client" | tr -d '\n'))"
    return 1
}

# refused <name> <timeout> <server cmd...> -- <client cmd...>: both sides must
# fail (not hang) and one of them say why with one of the messages in $REFUSAL.
refused() {
    local name=$1 to=$2; shift 2
    local srv=() cli=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done; shift
    cli=("$@")
    local log="$OUT/$(echo "$name" | tr ' /' '__')"
    timeout "$to" "${srv[@]}" >"$log.server" 2>&1 &
    local spid=$!
    sleep 0.4
    timeout "$to" "${cli[@]}" >"$log.client" 2>&1
    local crc=$?
    wait $spid; local src=$?
    # ibv_srq_pingpong's client reads the server's addresses in a loop that
    # takes read()'s 0 (end of file) for "no bytes yet": when the server
    # gives up it spins until killed, with any library (CLIENT_SPINS=1).
    [ "${CLIENT_SPINS:-0}" = 1 ] && [ $crc -eq 124 ] && crc=1
    if [ $crc -ne 0 ] && [ $crc -ne 124 ] && [ $src -ne 0 ] && [ $src -ne 124 ] &&
            cat "$log.server" "$log.client" | grep -qE "$REFUSAL"; then
        pass "$name"; return 0
    fi
    fail "$name" "server rc=$src client rc=$crc ($(tail -n1 "$log.client" | tr -d '\n'))"
    return 1
}

# Without -g the pingpongs address the peer by LID alone, which a RoCE port
# refuses as the kernel does (rdma_check_ah_attr: no GRH -> EINVAL): rxe
# fails them the same way.
REFUSAL='Failed to modify (recv )?QP(\[0\])? to RTR|Failed to create AH|Couldn.t connect to remote QP'
for pp in rc uc ud srq xsrq; do
    port=$((port+1))
    spins=0; [ $pp = srq ] && spins=1
    CLIENT_SPINS=$spins refused "ibv_${pp}_pingpong without -g refused (no GRH on RoCE)" 10 \
        ibv_${pp}_pingpong -d swr0 -p $port -- ibv_${pp}_pingpong -d swr0 -p $port localhost
    port=$((port+1))
    pair "ibv_${pp}_pingpong -g 1" 60 ibv_${pp}_pingpong -d swr0 -g 1 -p $port -- ibv_${pp}_pingpong -d swr0 -g 1 -p $port localhost
done
for pp in rc uc ud srq; do
    port=$((port+1))
    pair "ibv_${pp}_pingpong -e -g 1" 60 ibv_${pp}_pingpong -d swr0 -e -g 1 -p $port -- ibv_${pp}_pingpong -d swr0 -e -g 1 -p $port localhost
done
port=$((port+1))
pair "ibv_rc_pingpong -s 1000000 -n 200" 60 ibv_rc_pingpong -d swr0 -g 1 -s 1000000 -n 200 -p $port -- ibv_rc_pingpong -d swr0 -g 1 -s 1000000 -n 200 -p $port localhost

# prog NAME TIMEOUT: builds compat-tests/soft/NAME.c against our library,
# runs it, and takes its PASS/FAIL/SKIP lines as the suite's ("NAME: ...");
# its other lines (not starting with '#') explain a non-zero exit status.
prog() {
    local n=$1 to=$2 rc l
    if ${SOFT_CC:-cc} -O1 -o "$OUT/$n" "compat-tests/soft/$n.c" -I"$OUR_INCLUDE" -L"$LIBDIR" -l:libibverbs.so.1 2>"$OUT/$n.cc"; then
        timeout "$to" ${SOFT_EXEC:-} "$OUT/$n" >"$OUT/$n.out" 2>&1; rc=$?
        while read -r l; do
            case "$l" in
                PASS\ *) pass "$n: ${l#PASS }";;
                SKIP\ *) l=${l#SKIP }; skip "$n: ${l%%: *}" "${l#*: }";;
                FAIL\ *) l=${l#FAIL }; fail "$n: ${l%%: *}" "${l#*: }";;
            esac
        done <"$OUT/$n.out"
        [ $rc -eq 0 ] || fail "$n" "exit status $rc ($(grep -v '^PASS\|^FAIL\|^SKIP\|^#' "$OUT/$n.out" | head -n2 | tr '\n' ' '))"
    else
        fail "$n (build)" "$(head -n3 "$OUT/$n.cc")"
    fi
}

# Error semantics and isolation (two processes, see semantics.c).
prog semantics 120
# The last differences from rxe that an outside suite found (issue 34): each
# checked against rxe's answer (compat-tests/vm-sweep compares them in the VM).
prog rxe-diffs 120
# The SEND nobody waits for, which the responder does not answer: a
# receiver that exits at once or stops calling the library, a sender whose
# QP goes to the error state (see acks.c).
prog acks 60
# Completion events as UCX's wakeup mode uses them (poll, drain the
# channel, arm, sleep in edge-triggered epoll; see wakeup.c).
prog wakeup 60
# RDMA WRITEs and READs kept back to share one system call
# (providers/swrdma/src/send/defer.rs): a program that posts and then waits
# on memory is answered, a SEND does not overtake them, data in place at
# the completion (see defer.c).
prog defer 60

# ibv_asyncwatch: opens the device and waits for events (none come).
timeout 2 ibv_asyncwatch -d swr0 >"$OUT/asyncwatch" 2>&1; rc=$?
if [ $rc -eq 124 ]; then pass ibv_asyncwatch; else fail ibv_asyncwatch "rc=$rc $(head -c 200 "$OUT/asyncwatch")"; fi

# --- perftest ---------------------------------------------------------------
table="$OUT/results.txt"
: >"$table"
if ! command -v ib_send_lat >/dev/null; then
    skip perftest "perftest not installed (apt-get install perftest)"
else
    if [ "${SOFT_QUICK:-}" = 1 ]; then sizes_lat="2"; sizes_bw="65536"; else sizes_lat="2 4096"; sizes_bw="4096 65536"; fi
    run_pt() { # <test> <size> <extra...>
        local t=$1 s=$2; shift 2
        port=$((port+1))
        local name="$t -s $s $*"
        local log="$OUT/$(echo "$name" | tr ' /' '__')"
        if pair "$name" 120 $t -d swr0 -x 1 -s $s -p $port "$@" -- $t -d swr0 -x 1 -s $s -p $port "$@" localhost; then
            # the result row: first line of numbers after the header
            local row
            row=$(grep -E '^ *[0-9]+ +[0-9]+ ' "$log.client" | head -n1 | tr -s ' ')
            printf '%-34s %s\n' "$name" "$row" >>"$table"
        fi
    }
    for s in $sizes_lat; do
        run_pt ib_send_lat $s -n 10000
        run_pt ib_write_lat $s -n 10000
        run_pt ib_read_lat $s -n 10000
    done
    run_pt ib_atomic_lat 8 -n 10000
    for s in $sizes_bw; do
        run_pt ib_send_bw $s -n 5000
        run_pt ib_write_bw $s -n 5000
        run_pt ib_read_bw $s -n 5000
    done
    run_pt ib_atomic_bw 8 -n 20000
    run_pt ib_write_bw 65536 -n 5000 --use_old_post_send
fi

# --- the ring protocol, in-process (providers/swrdma/tests/ring.rs) ----------
if [ "${SOFT_RING_TESTS:-1}" = 0 ]; then
    skip "ring protocol (cargo test)" "SOFT_RING_TESTS=0 (${SOFT_RING_WHY:-asked})"
elif command -v cargo >/dev/null; then
    if (timeout 600 cargo test --release --offline -q -p swrdma-ring ${RUST_TARGET:+--target "$RUST_TARGET"}) >"$OUT/ring-tests" 2>&1; then
        pass "ring protocol (cargo test)"
    else
        fail "ring protocol (cargo test)" "$(grep -E 'panicked|FAILED|error' "$OUT/ring-tests" | head -n2 | tr '\n' ' ')"
    fi
fi

# --- the RoCE v2 wire format (providers/swrdma/roce: headers, ICRC, GRH) ------
if [ "${SOFT_ROCE_TESTS:-1}" = 0 ]; then
    skip "RoCE v2 wire format (cargo test)" "SOFT_ROCE_TESTS=0 (${SOFT_ROCE_WHY:-asked})"
elif command -v cargo >/dev/null; then
    if (timeout 600 cargo test --release --offline -q -p swrdma-roce ${RUST_TARGET:+--target "$RUST_TARGET"}) >"$OUT/roce-tests" 2>&1; then
        pass "RoCE v2 wire format (cargo test: $(sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' "$OUT/roce-tests" | head -n1) tests)"
    else
        fail "RoCE v2 wire format (cargo test)" "$(grep -E 'panicked|FAILED|error' "$OUT/roce-tests" | head -n2 | tr '\n' ' ')"
    fi
fi

# --- the engine: what RC, UC and UD mean (providers/swrdma/rc) --------------
if [ "${SOFT_ENGINE_TESTS:-1}" = 0 ]; then
    skip "engine semantics (cargo test)" "SOFT_ENGINE_TESTS=0 (${SOFT_ENGINE_WHY:-asked})"
elif command -v cargo >/dev/null; then
    if (timeout 600 cargo test --release --offline -q -p swrdma-rc ${RUST_TARGET:+--target "$RUST_TARGET"}) >"$OUT/engine-tests" 2>&1; then
        pass "engine semantics (cargo test: $(sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' "$OUT/engine-tests" | head -n1) tests)"
    else
        fail "engine semantics (cargo test)" "$(grep -E 'panicked|FAILED|error' "$OUT/engine-tests" | head -n2 | tr '\n' ' ')"
    fi
fi

# --- stress -----------------------------------------------------------------
# Many small messages wrap the 4 MiB rings at every 64-byte offset (the
# padding record in the last 64 bytes once ran past the ring: segfaults,
# hangs, RETRY_EXC_ERR); bidirectional traffic makes both processes
# requester and responder of one QP at once, and 8 MiB READs fill the
# response ring (a responder that waited for room holding its QP's lock
# deadlocked).  Every run under `timeout`: a hang fails, it does not stall.
if command -v ib_send_bw >/dev/null; then
    reps=${SOFT_STRESS:-3}; [ "${SOFT_QUICK:-}" = 1 ] && reps=${SOFT_STRESS:-1}
    stress() { # <name> <test args...>
        local name=$1; shift
        port=$((port+1))
        pair "stress: $name" 120 "$@" -d swr0 -x 1 -p $port -- "$@" -d swr0 -x 1 -p $port localhost
    }
    for r in $(seq 1 "$reps"); do
        for t in ib_read_bw ib_write_bw ib_send_bw; do
            stress "$t -s 64 -n 50000 #$r" $t -s 64 -n 50000
        done
    done
    if [ "$reps" -gt 0 ]; then
        stress "ib_send_bw -b -s 64 -n 50000" ib_send_bw -b -s 64 -n 50000
        stress "ib_read_bw -b -s 64 -n 50000" ib_read_bw -b -s 64 -n 50000
        stress "ib_read_bw -b -s 8388608 -n 100" ib_read_bw -b -s 8388608 -n 100
        stress "ib_write_bw -a -n 1000" ib_write_bw -a -n 1000
    fi
fi

if [ -s "$table" ]; then
    echo "# results (client side; lat: bytes iters min max typical avg ...; bw: bytes iters peak avg[MB/s] msg-rate):"
    sed 's/^/#   /' "$table"
fi

finish
