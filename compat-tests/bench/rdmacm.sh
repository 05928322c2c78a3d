#!/bin/bash
# compat-tests/bench, section "rdmacm" (issue 32): rdma_cm on swr0 through
# swrdma-cm, each figure beside its TCP reference measured in the same run
# over the same path (loopback) and the same CPUs:
#   * connection set-up and tear-down: cmtime -c N (every step of N
#     connections: create id, resolve address and route, create QP,
#     connect, disconnect, destroy; its figures are totals over the N
#     connections, made concurrently) beside tcp_connect.c (socket,
#     connect, accept, close; one connection after the other);
#   * the same on rw0 between two network namespaces over a veth (root),
#     beside tcp_connect split over the same namespaces;
#   * rsockets throughput: rstream over swr0 beside rstream -T s (the same
#     program on kernel TCP sockets).
# Target (the issue): cmtime per connection at most 2x TCP's; rstream at
# least TCP's.  Prints a table; raw outputs in OUT.
#   rdmacm.sh OUT LIBDIR TCP_CONNECT
set -u
OUT=$1 LIBDIR=$2 TCPC=$3
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CM=$ROOT/build/bin/swrdma-cm
N=${BENCH_CMTIME_CONNS:-200}
mkdir -p "$OUT"
# The provider's private directory (QPN links, the id counter, context
# sockets) lives in $XDG_RUNTIME_DIR, a tmpfs in a login session
# (/run/user/UID): the bench makes one on a tmpfs too when it can
# (/dev/shm), not on the build tree's disk file system, where creating
# and removing a QP's link costs several times more.  Which one is printed.
rm -rf "$OUT/rt"
if [ -d /dev/shm ] && [ -w /dev/shm ] && RT=$(mktemp -d /dev/shm/swrdma-bench.XXXXXX 2>/dev/null); then
    trap 'rm -rf "$RT"' EXIT
    ln -s "$RT" "$OUT/rt"
else
    RT=$OUT/rt; mkdir -p "$RT"
fi
chmod 0700 "$RT"
export XDG_RUNTIME_DIR=$RT
export LD_LIBRARY_PATH=$LIBDIR RDMAV_SOFT_DEVICES=swr0 SWRDMA_UCMA_LIB=$LIBDIR/libswrdma-ucma.so
p0=(); p1=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then p0=(taskset -c 0); p1=(taskset -c 1); fi

row() { printf '%-44s %12s %12s %8s %8s  %s\n' "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.2f", a / b }'; }
verdict() { # ratio limit le|ge
    awk -v r="$1" -v l="$2" -v k="$3" 'BEGIN { if (r == "n/a") print "n/a"; else if ((k == "le" && r + 0 <= l + 0) || (k == "ge" && r + 0 >= l + 0)) print "meets"; else print "misses" }'
}

echo
echo "== rdma_cm on swr0 (swrdma-cm) beside TCP over loopback"
echo "(private directory on $(stat -f -c %T "$RT"): $RT)"
row figure ours reference ratio target verdict

# --- cmtime: the sum of its steps' totals, per connection --------------------
# cmtime_runs TAG ADDR PORT SERVER_PREFIX CLIENT_PREFIX TCP_REF: three runs
# of cmtime -c N (its server on ADDR:PORT+r, under the array named
# SERVER_PREFIX, on CPU 0; its client under CLIENT_PREFIX, on CPU 1), each
# beside TCP_REF PORT+100+r (us per connection); the best of each into
# best_cm, best_tcp (and the run, best_r); then the row and the steps of
# the best run.
steps_re='^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy) *:'
lower() { [ -n "$1" ] && { [ -z "$2" ] || awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }; }
cmtime_runs() {
    local tag=$1 addr=$2 port0=$3 ref=$6 r us t spid
    local -n sp=$4 cp=$5
    best_cm="" best_tcp="" best_r=""
    for r in 1 2 3; do
        "${p0[@]}" "${sp[@]}" timeout 60 "$CM" cmtime -b "$addr" -p $((port0 + r)) >"$OUT/$tag.$r.server" 2>&1 &
        spid=$!
        sleep 0.5
        "${p1[@]}" "${cp[@]}" timeout 60 "$CM" cmtime -s "$addr" -p $((port0 + r)) -c "$N" >"$OUT/$tag.$r" 2>&1
        kill $spid 2>/dev/null; wait $spid 2>/dev/null
        # step  :  total ms  max ms  min us  us / conn
        us=$(awk -F: "/$steps_re/"' { split($2, f, " "); s += f[1] } END { if (s > 0) printf "%.1f", s * 1000 / '"$N"' }' "$OUT/$tag.$r")
        lower "$us" "$best_cm" && best_cm=$us && best_r=$r
        t=$("$ref" $((port0 + 100 + r)))
        lower "$t" "$best_tcp" && best_tcp=$t
    done
}
# cmtime_row LABEL TAG: the row of the best runs, and each step of the best
# run of cmtime, us per connection
cmtime_row() {
    local rt
    rt=$(ratio "$best_cm" "$best_tcp")
    row "$1" "${best_cm:-n/a}" "${best_tcp:-n/a}" "$rt" "<= 2" "$(verdict "$rt" 2 le)"
    if [ -n "${best_r:-}" ]; then
        awk -F: "/$steps_re/"' {
            split($2, f, " "); n = $1; sub(/ +$/, "", n); printf "  %-42s %12.1f\n", n " (us, best run)", f[1] * 1000 / '"$N"' }' "$OUT/$2.$best_r"
    fi
}
tcp_lo() { "${p1[@]}" "$TCPC" "$1" "$N" 2>/dev/null | awk '{ print $(NF-1) }'; }
none=()
cmtime_runs cmtime 127.0.0.1 21500 none none tcp_lo
cmtime_row "cmtime -c $N: us per connection (all steps)" cmtime

# --- rstream: rsockets on swr0 against kernel TCP ----------------------------
for sc in 4096:5000 65536:2000 1048576:200; do
    sz=${sc%:*} cnt=${sc#*:}
    best_rs="" best_ts=""
    for r in 1 2 3; do
        for mode in rs tcp; do
            port=$((21700 + r))
            extra=(); [ $mode = tcp ] && extra=(-T s)
            "${p0[@]}" timeout 60 "$CM" rstream "${extra[@]}" -S "$sz" -C "$cnt" -b 127.0.0.1 -p $port >"$OUT/rstream.$mode.$sz.$r.server" 2>&1 &
            spid=$!
            sleep 0.5
            "${p1[@]}" timeout 60 "$CM" rstream "${extra[@]}" -S "$sz" -C "$cnt" -s 127.0.0.1 -p $port >"$OUT/rstream.$mode.$sz.$r" 2>&1
            wait $spid 2>/dev/null
            # name bytes xfers iters total time Gb/sec usec/xfer
            g=$(awk '$1 == "custom" { print $7 }' "$OUT/rstream.$mode.$sz.$r" | tail -n1)
            if [ $mode = rs ]; then
                [ -n "$g" ] && { [ -z "$best_rs" ] || awk -v a="$g" -v b="$best_rs" 'BEGIN { exit !(a > b) }'; } && best_rs=$g
            else
                [ -n "$g" ] && { [ -z "$best_ts" ] || awk -v a="$g" -v b="$best_ts" 'BEGIN { exit !(a > b) }'; } && best_ts=$g
            fi
        done
    done
    rt=$(ratio "$best_rs" "$best_ts")
    row "rstream -S $sz -C $cnt: Gb/s (best of 3)" "${best_rs:-n/a}" "${best_ts:-n/a}" "$rt" ">= 1" "$(verdict "$rt" 1 ge)"
done

# --- cmtime on rw0: between two network namespaces over a veth ---------------
# (root: ip netns; 169.254.83.1/.2, link-local only.)  The reference is
# tcp_connect split over the same two namespaces and the same veth.
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null; then
    echo
    echo "== rdma_cm on rw0 (swrdma-cm) beside TCP between two network namespaces over a veth"
    row figure ours reference ratio target verdict
    wdown() { ip netns del bna 2>/dev/null; ip netns del bnb 2>/dev/null; }
    wdown
    if ip netns add bna && ip netns add bnb && ip link add bna0 type veth peer name bnb0 &&
        ip link set bna0 netns bna && ip link set bnb0 netns bnb &&
        ip -n bna addr add 169.254.83.1/24 dev bna0 && ip -n bnb addr add 169.254.83.2/24 dev bnb0 &&
        ip -n bna link set bna0 up && ip -n bnb link set bnb0 up && ip -n bna link set lo up && ip -n bnb link set lo up; then
        mkdir -p -m 0700 "$RT/a" "$RT/b"
        EA=(ip netns exec bna env XDG_RUNTIME_DIR="$RT/a" RDMAV_SOFT_DEVICES=rw0@bna0)
        EB=(ip netns exec bnb env XDG_RUNTIME_DIR="$RT/b" RDMAV_SOFT_DEVICES=rw0@bnb0)
        tcp_ns() {
            "${p0[@]}" ip netns exec bnb "$TCPC" "$1" "$N" 169.254.83.2 server >/dev/null 2>&1 &
            local spid=$!
            sleep 0.3
            "${p1[@]}" ip netns exec bna "$TCPC" "$1" "$N" 169.254.83.2 client 2>/dev/null | awk '{ print $(NF-1) }'
            wait $spid 2>/dev/null
        }
        cmtime_runs cmtime-rw0 169.254.83.2 21800 EB EA tcp_ns
        cmtime_row "cmtime -c $N on rw0: us per connection" cmtime-rw0
    else
        echo "(rw0: cannot make the namespaces; skipped)"
    fi
    wdown
fi
