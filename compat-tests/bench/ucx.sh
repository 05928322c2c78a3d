#!/bin/bash
# compat-tests/bench, section "ucx" (issue 34, item 1): UCX over swr0 (the
# transports UCX picks on a verbs device that is not mlx5: rc_verbs, with
# ud_verbs for its wire-up, and ud_verbs alone) beside the references of the
# same run, same CPUs (server 0, client 1):
#   * tag_lat 8 B over rc_verbs (and over ud_verbs) on swr0, p50, beside
#     swr0's own ib_send_lat -s 8 (typical) and UCX shared memory's tag_lat
#     p50 (UCX_TLS=sm, Debian's libibverbs);
#   * tag_bw and ucp_put_bw at 4 KiB, 64 KiB and 1 MiB over rc_verbs on swr0
#     beside UCX shared memory's.
# Each run is made BENCH_UCX_ROUNDS (3) times, the kinds alternating within a
# round; the figure is the median of the rounds.  Raw outputs in OUT
# (<name>.<round>.{client,server,rc}); ucx-report.py prints the table.
#   ucx.sh OUT LIBDIR
set -u
OUT=$1 LIBDIR=$2
ROUNDS=${BENCH_UCX_ROUNDS:-3}
LAT_N=${BENCH_UCX_LAT_ITERS:-100000}
rm -rf "$OUT" "$OUT.json"; mkdir -p "$OUT"
say() { echo "bench: $*" >&2; }
if ! command -v ucx_perftest > /dev/null; then
    echo "ucx_perftest not installed (apt-get install ucx-utils)" > "$OUT/skipped"; exit 0
fi
if [ ! -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ]; then
    echo "missing $LIBDIR/libibverbs/libswrdma-rdmav34.so (make swrdma)" > "$OUT/skipped"; exit 0
fi
p0=(); p1=()
if command -v taskset > /dev/null && [ "$(nproc)" -ge 2 ]; then p0=(taskset -c 0); p1=(taskset -c 1)
else echo "only $(nproc) CPU: server and client share it" > "$OUT/unpinned"; fi
export XDG_RUNTIME_DIR=$OUT/rt
rm -rf "$XDG_RUNTIME_DIR"; mkdir -p -m 0700 "$XDG_RUNTIME_DIR"

# UCX uses swr0 only when /dev/infiniband/swr0 exists (the package's
# tmpfiles.d link to /dev/null): made here as root when missing, removed after.
made=
if [ ! -e /dev/infiniband/swr0 ]; then
    if [ "$(id -u)" = 0 ] && mkdir -p -m 0755 /dev/infiniband && ln -s /dev/null /dev/infiniband/swr0; then made=1
    else echo "no /dev/infiniband/swr0 (UCX does not use swr0 without it; as root: ln -s /dev/null /dev/infiniband/swr0)" > "$OUT/nodev"; exit 0; fi
fi
cleanup() { [ -n "$made" ] && rm -f /dev/infiniband/swr0 && rmdir /dev/infiniband 2> /dev/null; }
trap cleanup EXIT

listening() {
    local hex; hex=$(printf ':%04X ' "$1")
    grep -q "$hex[0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2> /dev/null
}
port=24300
next_port() { port=$((port + 1)); while listening $port; do port=$((port + 1)); done; }

SWR=(LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 UCX_NET_DEVICES=swr0:1 UCX_WARN_UNUSED_ENV_VARS=n)
# env of each kind: sm (Debian's libibverbs, never ours), rc (rc_verbs with
# ud_verbs for the wire-up, as UCX needs), ud (ud_verbs alone)
kind_env() {
    case $1 in
        sm) ENV=(UCX_TLS=sm) ;;
        rc) ENV=("${SWR[@]}" UCX_TLS=rc_verbs,ud_verbs:aux,self) ;;
        ud) ENV=("${SWR[@]}" UCX_TLS=ud_verbs,self) ;;
    esac
}
# uc <file> <kind> <ucx_perftest args...>: one ucx_perftest pair
uc() {
    local f=$1 i sp crc; kind_env "$2"; shift 2
    next_port
    env "${ENV[@]}" "${p0[@]}" timeout -k 5 60 ucx_perftest -p $port > "$f.server" 2>&1 & sp=$!
    for i in $(seq 200); do listening $port && break; kill -0 $sp 2> /dev/null || break; sleep 0.05; done
    env "${ENV[@]}" "${p1[@]}" timeout -k 5 60 ucx_perftest -p $port "$@" 127.0.0.1 > "$f.client" 2>&1
    crc=$?
    for i in $(seq 60); do kill -0 $sp 2> /dev/null || break; sleep 0.05; done
    kill $sp 2> /dev/null
    echo "$crc $(wait $sp; echo $?)" > "$f.rc"
}
# sl <file>: swr0's own ib_send_lat -s 8 (our library)
sl() {
    local f=$1 i sp crc
    next_port
    env LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 "${p0[@]}" timeout -k 5 60 \
        ib_send_lat -d swr0 -x 1 -s 8 -n 20000 -p $port > "$f.server" 2>&1 & sp=$!
    for i in $(seq 200); do listening $port && break; kill -0 $sp 2> /dev/null || break; sleep 0.05; done
    env LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 "${p1[@]}" timeout -k 5 60 \
        ib_send_lat -d swr0 -x 1 -s 8 -n 20000 -p $port localhost > "$f.client" 2>&1
    crc=$?
    for i in $(seq 60); do kill -0 $sp 2> /dev/null || break; sleep 0.05; done
    kill $sp 2> /dev/null
    echo "$crc $(wait $sp; echo $?)" > "$f.rc"
}

say "ucx: tag_lat (sm, rc_verbs and ud_verbs on swr0) beside ib_send_lat; tag_bw, ucp_put_bw (sm, rc_verbs); $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
    sl "$OUT/ib_send_lat.8.$r"
    for k in sm rc ud; do uc "$OUT/$k.tag_lat.8.$r" $k -t tag_lat -s 8 -n "$LAT_N" -w $((LAT_N / 10)); done
    for s in 4096 65536 1048576; do
        n=$(((1 << 31) / s)); [ $n -gt 50000 ] && n=50000
        for t in tag_bw ucp_put_bw; do
            for k in sm rc; do uc "$OUT/$k.$t.$s.$r" $k -t $t -s $s -n $n -w $((n / 10)); done
        done
    done
done
exit 0
