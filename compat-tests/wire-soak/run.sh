#!/bin/bash
# compat-tests/wire-soak: long and concurrent RC runs over the wire device
# (issue 23, item 1), ours <-> ours between two network namespaces this
# suite creates (wsa: 169.254.77.1 on wva, wsb: 169.254.77.2 on wvb, a veth
# pair; link-local addresses only, no route out).  Not in `make test`:
# `make soak` (it fails today: see issue 23).
#
#   single/N     one Debian ibv_rc_pingpong pair, SOAK_ITERS iterations
#                (default 400000, 4 KiB messages), SOAK_RUNS times (10)
#   pairs        SOAK_PAIRS pairs at once (4) between the same two
#                addresses, SOAK_PAIR_ITERS iterations each (100000)
#   .../loss     the same with 1 % of the received packets dropped
#                (SWRDMA_WIRE_DROP=10000), when SOAK_LOSS=1 (default)
# PASS when both sides of every pair exit 0 within SOAK_TIMEOUT s (600).
# Measured on a 2-core machine (issue 23 branch): single/N passes (2 x
# 400000 at 65-69 usec/iter); pairs do not finish in time - 2 busy-polling
# pairs run at ~9100 usec/iter each (with -e, sleeping: ~350), 4 x 100000
# are cut by SOAK_TIMEOUT, and each client then ends in 'retry counter
# exceeded' ~0.5 s after its server was killed (a consequence, not the
# cause).  Why so slow: every flow between the two addresses hashes to ONE
# SO_REUSEPORT socket per namespace (RoCE v2 from port 4791 to 4791), so one
# process forwards every other pair's packets over the w<id> connections;
# while an application busy-polls, its context thread backs off without
# watching the wire sockets, so each forward waits until the forwarding
# process's polling thread gets a CPU among the other spinners - two more
# scheduler waits per message than a device without forwarding.
# Needs root (ip netns), iproute2, ibverbs-utils.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin wire-soak --clean
need ip=iproute2 ibv_rc_pingpong=ibverbs-utils ibv_devinfo=ibverbs-utils
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (ip netns)"
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
[ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing the swrdma provider (run: make swrdma)"
RUNS=${SOAK_RUNS:-10} ITERS=${SOAK_ITERS:-400000}
PAIRS=${SOAK_PAIRS:-4} PAIR_ITERS=${SOAK_PAIR_ITERS:-100000}
TO=${SOAK_TIMEOUT:-600} LOSS=${SOAK_LOSS:-1}

cleanup() { ip netns del wsa 2>/dev/null; ip netns del wsb 2>/dev/null; }
trap cleanup EXIT
cleanup
ip netns add wsa && ip netns add wsb &&
    ip link add wva type veth peer name wvb &&
    ip link set wva netns wsa && ip link set wvb netns wsb &&
    ip -n wsa addr add 169.254.77.1/24 dev wva && ip -n wsb addr add 169.254.77.2/24 dev wvb &&
    ip -n wsa link set wva up && ip -n wsb link set wvb up &&
    ip -n wsa link set lo up && ip -n wsb link set lo up ||
    fail_early netns "cannot create the namespaces and the veth pair"
for s in a b; do mkdir -p "$SCRATCH/rt$s"; chmod 0700 "$SCRATCH/rt$s"; done

side() { # a|b ENV...: the command prefix of one side
    local s=$1; shift
    S=(ip netns exec "ws$s" env XDG_RUNTIME_DIR="$SCRATCH/rt$s" LD_LIBRARY_PATH="$LIBDIR"
       RDMAV_SOFT_DEVICES="rw0@wv$s" "$@" timeout "$TO")
}
side a
G=$("${S[@]}" ibv_devinfo -v -d rw0 2>&1 | sed -nE 's/^\s*GID\[ *([0-9]+)\]:\s*::ffff:169\.254\.77\.1, RoCE v2.*/\1/p' | head -1)
[ -n "$G" ] || fail_early devinfo "rw0@wva has no RoCE v2 GID for 169.254.77.1"

port=18700
# pairs NAME K ITERS ENV...: K rc_pingpong pairs at once
pairs() {
    local name=$1 k=$2 n=$3 i; shift 3
    local d="$SCRATCH/$(echo "$name" | tr '/' '_')" sp=() cp=() bad=""
    mkdir -p "$d"
    side a "$@"
    for ((i = 0; i < k; i++)); do
        "${S[@]}" ibv_rc_pingpong -d rw0 -g "$G" -p $((port + i)) -n "$n" >"$d/s$i.out" 2>&1 &
        sp+=($!)
    done
    sleep 1
    side b "$@"
    for ((i = 0; i < k; i++)); do
        "${S[@]}" ibv_rc_pingpong -d rw0 -g "$G" -p $((port + i)) -n "$n" 169.254.77.1 >"$d/c$i.out" 2>&1 &
        cp+=($!)
    done
    for ((i = 0; i < k; i++)); do
        wait "${cp[$i]}"; local crc=$?
        wait "${sp[$i]}"; local src=$?
        [ $crc = 0 ] && [ $src = 0 ] ||
            bad="$bad pair $i: client $crc server $src ($(grep -m1 -E 'Failed|error|parse' "$d/c$i.out" | tr -d '\n'));"
    done
    port=$((port + k))
    if [ -z "$bad" ]; then
        pass "$name ($k x $n iterations: $(grep -ho '[0-9.]* usec/iter' "$d"/c*.out | tr '\n' ' '))"
    else
        fail "$name" "$bad"
    fi
}

conds=(clean)
[ "$LOSS" = 1 ] && conds+=(loss)
for c in "${conds[@]}"; do
    env=()
    [ "$c" = loss ] && env=(SWRDMA_WIRE_DROP=10000)
    for ((r = 1; r <= RUNS; r++)); do pairs "single/$r/$c" 1 "$ITERS" "${env[@]}"; done
    pairs "pairs/$c" "$PAIRS" "$PAIR_ITERS" "${env[@]}"
done
finish
