#!/bin/bash
# compat-tests/bench: numbers and ratios, never pass/fail (exit status 0
# unless the bench itself cannot be built).  `make bench` runs it.
#
#  A. The software device (providers/swrdma, RDMAV_SOFT_DEVICES=swr0):
#     perftest latency (ib_send_lat, ib_write_lat, ib_read_lat; 2 B .. 4 KiB)
#     and bandwidth (ib_send_bw, ib_write_bw, ib_read_bw; 64 B .. 1 MiB),
#     server on CPU 0, client on CPU 1, each figure also as a ratio to this
#     machine's limits, measured in the same run by memcpy.c (64 KiB in
#     cache, 64 MiB DRAM) and shm_pingpong.c (one cache line bounced between
#     two busy-waiting processes on CPUs 0 and 1); the issue's two targets
#     (ib_send_lat 2 B <= 1 us typical, ib_write_bw 64 KiB >= 6 GB/s) get
#     "meets" / "misses".
#  B. Real devices: one boot of the Soft-RoCE VM (compat-tests/vm), where
#     vm_bench.c runs on rxe0 with Debian's libibverbs and with ours
#     (LD_LIBRARY_PATH), alternating, BENCH_ROUNDS rounds: first-call
#     startup, MR, CQ, QP control-path costs, as ours/upstream ratios.
#
# Environment: OUR_LIB, OUR_INCLUDE (CONVENTIONS.md); BENCH_SECTIONS
# ("soft vm", or one of them); BENCH_QUICK=1 (fewer sizes, for trying the
# script); BENCH_ROUNDS (VM rounds, default 3); BENCH_PERFTEST_TIMEOUT (s per
# run, 25); BENCH_SOFT_BUDGET (s for all perftest runs, 360); VM_TIMEOUT (300).
# Output: the tables on stdout, progress on stderr, raw outputs under
# build/bench/{limits,soft,vm}/, everything as JSON in build/bench/results.json.
set -u
# lib.sh: the repository root, OUR_LIB / OUR_INCLUDE defaults (no PASS/FAIL
# here, and the scratch directory is build/bench/, not build/compat-tests/).
. "$(dirname "$0")/../lib.sh"
HERE=compat-tests/bench
B=build/bench
SECTIONS=${BENCH_SECTIONS:-soft vm}
QUICK=${BENCH_QUICK:-}
ROUNDS=${BENCH_ROUNDS:-3}
mkdir -p "$B"
SRCDIR=$(cd "$(dirname "$OUR_LIB")" && pwd) || { echo "bench: no directory for OUR_LIB=$OUR_LIB" >&2; exit 1; }
say() { echo "bench: $*" >&2; }
T0=$(date +%s)

# A private copy of the library and the provider beside it (libibverbs/):
# a `make` running meanwhile must not swap them under a benchmark.
LIBDIR=$PWD/$B/lib
rm -rf "$LIBDIR"; mkdir -p "$LIBDIR"
cp -a "$SRCDIR/." "$LIBDIR/" || { echo "bench: cannot copy $SRCDIR" >&2; exit 1; }
OUR_LIB=$LIBDIR/$(basename "$OUR_LIB")

# ---- build the three programs --------------------------------------------
CFLAGS="-O2 -Wall -Wextra"
cc $CFLAGS -o "$B/memcpy" "$HERE/memcpy.c" &&
cc $CFLAGS -o "$B/shm_pingpong" "$HERE/shm_pingpong.c" &&
cc $CFLAGS -I"$OUR_INCLUDE" -o "$B/vm_bench" "$HERE/vm_bench.c" -L"$LIBDIR" -l:libibverbs.so.1 ||
    { echo "bench: cannot build the benchmark programs" >&2; exit 1; }

# ---- header ----------------------------------------------------------------
{
    echo "date $(date -u '+%Y-%m-%dT%H:%M:%SZ')"
    echo "nproc $(nproc)"
    echo "cpu $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
    echo "kernel $(uname -sr)"
    echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "git $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo +dirty)"
    echo "perftest $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
    echo "library $SRCDIR/$(readlink "$SRCDIR/libibverbs.so.1" || echo libibverbs.so.1), built $(date -u -r "$OUR_LIB" '+%Y-%m-%dT%H:%M:%SZ' 2>/dev/null)"
} > "$B/machine"
python3 "$HERE/report.py" header

pin0=(); pin1=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin0=(taskset -c 0); pin1=(taskset -c 1); fi

# is something listening on TCP port $1?
listening() {
    local hex; hex=$(printf ':%04X ' "$1")
    grep -q "$hex[0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# ---- A. software device ----------------------------------------------------
section_soft() {
    local S=$B/soft L=$B/limits
    rm -rf "$S" "$L"; mkdir -p "$S" "$L"
    local prov="$LIBDIR/libibverbs/libswrdma-rdmav34.so"
    if [ ! -e "$prov" ]; then echo "missing $prov (make swrdma)" > "$S/skipped"; return; fi
    if ! command -v ib_send_lat >/dev/null; then echo "perftest not installed (apt-get install perftest)" > "$S/skipped"; return; fi
    [ ${#pin0[@]} -gt 0 ] || echo "only $(nproc) CPU: server and client share it (the numbers measure the scheduler)" > "$S/unpinned"

    say "limits: memcpy (CPU 1), shared-memory ping-pong (CPUs 0, 1)"
    "${pin1[@]}" "$B/memcpy" > "$L/memcpy" 2>&1
    if [ "$(nproc)" -ge 2 ]; then "$B/shm_pingpong" 0 1 > "$L/shm_pingpong" 2>&1
    else echo "shm_pingpong skipped: one CPU" > "$L/shm_pingpong"; fi

    export XDG_RUNTIME_DIR=$PWD/$B/rt
    rm -rf "$XDG_RUNTIME_DIR"; mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
    # the whole perftest matrix gets BENCH_SOFT_BUDGET seconds (hangs cost 2 x TO each)
    local port=23100 TO=${BENCH_PERFTEST_TIMEOUT:-25} BUDGET=${BENCH_SOFT_BUDGET:-360} TA
    TA=$(date +%s)
    # pt1 <file> <test> <bytes> <iters>: one run, server on CPU 0, client on CPU 1
    pt1() {
        local f=$1 t=$2 s=$3 n=$4 spid i crc
        port=$((port + 1))
        while listening $port; do port=$((port + 1)); done
        LD_LIBRARY_PATH=$LIBDIR RDMAV_SOFT_DEVICES=swr0 "${pin0[@]}" timeout -k 5 "$TO" stdbuf -oL \
            $t -d swr0 -x 1 -s "$s" -n "$n" -p $port > "$f.server" 2>&1 &
        spid=$!
        for i in $(seq 200); do listening $port && break; kill -0 $spid 2>/dev/null || break; sleep 0.05; done
        LD_LIBRARY_PATH=$LIBDIR RDMAV_SOFT_DEVICES=swr0 "${pin1[@]}" timeout -k 5 "$TO" stdbuf -oL \
            $t -d swr0 -x 1 -s "$s" -n "$n" -p $port localhost > "$f.client" 2>&1
        crc=$?
        for i in $(seq 60); do kill -0 $spid 2>/dev/null || break; sleep 0.05; done
        kill $spid 2>/dev/null
        wait $spid
        echo "$crc $? $TO" > "$f.rc"
    }
    # pt <test> <bytes> <iters>: a failed run is kept as <file>.try1.* and run once more
    pt() {
        local f="$S/$1.$2" rc
        if [ $(( $(date +%s) - TA )) -gt "$BUDGET" ]; then echo "skip skip $TO" > "$f.rc"; return; fi
        pt1 "$f" "$@"
        read -r rc _ < "$f.rc"
        if [ "$rc" != 0 ] && [ $(( $(date +%s) - TA )) -le "$BUDGET" ]; then
            for x in client server rc; do mv "$f.$x" "$f.try1.$x"; done
            say "$1 -s $2 failed (client status $rc), once more"
            pt1 "$f" "$@"
        fi
    }
    local lat_sizes="2 4 8 16 32 64 128 256 512 1024 2048 4096"
    local bw_sizes="64 128 256 512 1024 2048 4096 8192 16384 32768 65536 131072 262144 524288 1048576"
    [ -n "$QUICK" ] && { lat_sizes="2 4096"; bw_sizes="64 65536 1048576"; }
    local t s n
    for t in ib_send_lat ib_write_lat ib_read_lat; do
        say "perftest $t ($lat_sizes)"
        for s in $lat_sizes; do pt $t $s 10000; done
    done
    for t in ib_send_bw ib_write_bw ib_read_bw; do
        say "perftest $t ($bw_sizes)"
        for s in $bw_sizes; do
            n=$(( (1 << 30) / s )); [ $n -gt 50000 ] && n=50000; [ $n -lt 2000 ] && n=2000
            pt $t $s $n
        done
    done
}

# ---- B. Soft-RoCE VM: ours vs upstream ----------------------------------------
section_vm() {
    local V=$PWD/$B/vm rc
    rm -rf "$V"; mkdir -p "$V"
    local args="--startup 40 --iters 300 --max-seconds 4"
    [ -n "$QUICK" ] && args="--startup 10 --iters 50 --max-seconds 3"
    # vm-run.sh passes only OUR_LIB & co. into the guest: the settings go in the script
    {
        printf 'BENCH_ROUNDS=%q\nBENCH_VM_ARGS=%q\n' "$ROUNDS" "$args"
        cat "$HERE/vm-guest.sh"
    } > "$B/vm-guest.run.sh"
    say "Soft-RoCE VM: vm_bench on rxe0, upstream and ours, $ROUNDS round(s)"
    VM_RUN_DIR=$V VM_TIMEOUT=${VM_TIMEOUT:-300} OUR_LIB=$OUR_LIB \
        bash compat-tests/vm/vm-run.sh "$B/vm-guest.run.sh" > "$V/vm-run.out" 2>&1
    rc=$?
    echo $rc > "$V/vm-run.rc"
    [ $rc -eq 0 ] || say "vm-run.sh exit status $rc (see $V/vm-run.out)"
}

for sec in $SECTIONS; do
    case $sec in
        soft) echo "loadavg_before_soft $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"; section_soft
              echo "loadavg_after_soft $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"
              python3 "$HERE/report.py" soft ;;
        vm) echo "loadavg_before_vm $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"; section_vm
            echo "loadavg_after_vm $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"
            python3 "$HERE/report.py" vm ;;
        *) say "unknown section $sec" ;;
    esac
done
echo "elapsed $(( $(date +%s) - T0 ))" >> "$B/machine"
python3 "$HERE/report.py" json
echo "bench: $(( $(date +%s) - T0 )) s; JSON: $B/results.json"
