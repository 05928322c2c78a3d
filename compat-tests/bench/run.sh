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
#     two busy-waiting processes on CPUs 0 and 1).  Then the runs of the
#     targets of issue 12, item 3 (section_targets): the reference, UCX's
#     shared-memory transport (ucx_perftest, UCX_TLS=sm: tag_lat, ucp_put_bw),
#     ib_atomic_lat, one and two concurrent ib_write_bw pairs (-D), and
#     latency beside one spinning process per CPU; and the floor of one-sided
#     operations on private memory (issue 34, item 3; cma_ref.c): a plain
#     process_vm_writev/readv loop, one call per message, CPUs 0 -> 1, set
#     beside ib_write_bw/ib_read_bw (>= 0.9x) and ib_write_lat/ib_read_lat
#     (<= 1.3x one call).  report.py prints each
#     target's figure, reference, ratio, limit and "meets" / "misses" / "n/a".
#  H. "hostwire" (issue 25, items 1 and 2; host-wire.sh, host-wire-report.py):
#     the wire device rw0 between two network namespaces over a veth, perftest
#     latency and bandwidth beside a plain UDP ping-pong / stream (net_ref.c)
#     on the same veth and CPUs, and 1, 2, 4 pairs at once; then the same
#     through the transport agent (SWRDMA_WIRE_AGENT=1, issue 33) beside the
#     same references, with its ratio to the first pass; ibv_rc_pingpong -e
#     on swr0 beside a pipe ping-pong between the same two CPUs.  Needs root
#     (ip netns).
#  U. "ucx" (issue 34, item 1; ucx.sh, ucx-report.py): UCX over swr0
#     (ucx_perftest tag_lat over rc_verbs and ud_verbs, tag_bw and
#     ucp_put_bw over rc_verbs) beside swr0's own ib_send_lat and UCX's
#     shared-memory transport, same CPUs, median of BENCH_UCX_ROUNDS rounds;
#     bound: rc_verbs tag_lat p50 <= 2 x ib_send_lat -s 8 typical.
#  R. "rdmacm" (issue 32; rdmacm.sh): rdma_cm on swr0 through swrdma-cm,
#     cmtime (connection set-up and tear-down) beside TCP connect/accept/close
#     (tcp_connect.c) and rstream (rsockets) beside rstream -T s (kernel TCP),
#     over loopback.
#  B. Real devices: one boot of the Soft-RoCE VM (compat-tests/vm), where
#     vm_bench.c runs on rxe0 with Debian's libibverbs and with ours
#     (LD_LIBRARY_PATH), alternating, BENCH_ROUNDS rounds: first-call
#     startup, MR, CQ, QP control-path costs, as ours/upstream ratios.
#  D. The same control path on the host: the uverbs stand-in (answering
#     RDMA netlink, and once without it for the first call), Debian's rxe
#     and mlx5 drivers, upstream and ours alternating (section_control,
#     control-report.py, README.md section D).
#
# Environment: OUR_LIB, OUR_INCLUDE (CONVENTIONS.md); BENCH_SECTIONS
# ("soft ucx rdmacm hostwire vm wire control", or some of them); BENCH_QUICK=1 (fewer sizes, for trying the
# script); BENCH_ROUNDS (VM rounds, default 5); BENCH_PERFTEST_TIMEOUT (s per
# perftest run, 25); BENCH_SOFT_BUDGET (s for the perftest sweeps, 360; the
# targets' runs are never skipped); BENCH_PAIR_SECONDS (ib_write_bw -D, 5);
# VM_TIMEOUT (600).  Run it alone on swr0: flock /tmp/suites.lock make bench.
# Output: the tables on stdout, progress on stderr, raw outputs under
# build/bench/{limits,soft,targets,vm}/, everything as JSON in
# build/bench/results.json.
set -u
# lib.sh: the repository root, OUR_LIB / OUR_INCLUDE defaults (no PASS/FAIL
# here, and the scratch directory is build/bench/, not build/compat-tests/).
. "$(dirname "$0")/../lib.sh"
HERE=compat-tests/bench
B=build/bench
SECTIONS=${BENCH_SECTIONS:-soft ucx rdmacm hostwire vm wire control}
QUICK=${BENCH_QUICK:-}
ROUNDS=${BENCH_ROUNDS:-5}
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
cc $CFLAGS -o "$B/cma_ref" "$HERE/cma_ref.c" &&
cc $CFLAGS -I"$OUR_INCLUDE" -o "$B/shared_ref" "$HERE/shared_ref.c" -L"$LIBDIR" -l:libibverbs.so.1 &&
cc $CFLAGS -o "$B/net_ref" "$HERE/net_ref.c" &&
cc $CFLAGS -o "$B/tcp_connect" "$HERE/tcp_connect.c" &&
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
    echo "ucx $(dpkg-query -W -f='${Version}' ucx-utils 2>/dev/null)"
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
    rm -rf "$S" "$L" "$B/targets"; mkdir -p "$S" "$L"
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
    # the perftest sweeps get BENCH_SOFT_BUDGET seconds (hangs cost 2 x TO each);
    # the runs the targets need (TARGET_SIZES, the T/ directory) are never skipped
    local port=23100 TO=${BENCH_PERFTEST_TIMEOUT:-25} BUDGET=${BENCH_SOFT_BUDGET:-360} TA
    local TARGET_LAT="2" TARGET_BW="4096 65536 1048576"
    TA=$(date +%s)

    # ---- helpers: one client/server pair, any CPUs, any program --------------
    # pinned <cpu> <cmd...>
    pinned() { local c=$1; shift; if [ ${#pin0[@]} -gt 0 ]; then taskset -c "$c" "$@"; else "$@"; fi; }
    next_port() { port=$((port + 1)); while listening $port; do port=$((port + 1)); done; }
    # mkcmd <kind> <server|client> <port> <args...>: the command line in CMD;
    # kind "ucx" = ucx_perftest over UCX's shared-memory transports (Debian's
    # libibverbs, never ours), else a perftest program on swr0 with our library
    mkcmd() {
        local kind=$1 role=$2 p=$3; shift 3
        if [ "$kind" = ucx ]; then
            if [ "$role" = server ]; then CMD=(env UCX_TLS=sm ucx_perftest -p "$p")
            else CMD=(env UCX_TLS=sm ucx_perftest -p "$p" "$@" localhost); fi
        else
            CMD=(env LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 "$kind" -d swr0 -x 1 "$@" -p "$p")
            [ "$role" = client ] && CMD+=(localhost)
        fi
    }
    # srv_start <file> <cpu> <timeout> <kind> <args...>: a server in the
    # background, waited for until it listens; sets SPID and SPORT
    srv_start() {
        local f=$1 c=$2 to=$3 kind=$4 i; shift 4
        next_port; SPORT=$port
        mkcmd "$kind" server "$SPORT" "$@"
        pinned "$c" timeout -k 5 "$to" stdbuf -oL "${CMD[@]}" > "$f.server" 2>&1 &
        SPID=$!
        for i in $(seq 200); do listening "$SPORT" && break; kill -0 "$SPID" 2>/dev/null || break; sleep 0.05; done
    }
    # cli_run <file> <cpu> <timeout> <kind> <port> <args...>: the client, in
    # the foreground; its start and end times (s since the epoch) in <file>.times
    cli_run() {
        local f=$1 c=$2 to=$3 kind=$4 p=$5 t0 rc; shift 5
        mkcmd "$kind" client "$p" "$@"
        t0=$(date +%s.%N)
        pinned "$c" timeout -k 5 "$to" stdbuf -oL "${CMD[@]}" > "$f.client" 2>&1
        rc=$?
        echo "$t0 $(date +%s.%N)" > "$f.times"
        return $rc
    }
    # srv_end <file> <spid> <client status> <timeout>: the server gets 3 s to
    # finish after its client, then is killed; <file>.rc = "client server timeout"
    srv_end() {
        local i
        for i in $(seq 60); do kill -0 "$2" 2>/dev/null || break; sleep 0.05; done
        kill "$2" 2>/dev/null
        wait "$2"
        echo "$3 $? $4" > "$1.rc"
    }
    # run1 <file> <server cpu> <client cpu> <timeout> <kind> <args...>: one run
    run1() {
        local f=$1 sc=$2 cc=$3 to=$4 kind=$5 crc; shift 5
        srv_start "$f" "$sc" "$to" "$kind" "$@"
        cli_run "$f" "$cc" "$to" "$kind" "$SPORT" "$@"
        crc=$?
        srv_end "$f" "$SPID" "$crc" "$to"
    }
    # run <file> <server cpu> <client cpu> <timeout> <kind> <args...>: a
    # failed run is kept as <file>.try1.* and run once more
    run() {
        local f=$1 rc x
        run1 "$@"
        read -r rc _ < "$f.rc"
        if [ "$rc" != 0 ]; then
            for x in client server rc times; do mv "$f.$x" "$f.try1.$x" 2>/dev/null; done
            say "$(basename "$f") failed (client status $rc), once more"
            run1 "$@"
        fi
    }
    # pt <test> <bytes> <iters>: one point of the sweeps, server CPU 0, client CPU 1
    pt() {
        local f="$S/$1.$2" must=
        case " $TARGET_LAT $TARGET_BW " in *" $2 "*) must=1 ;; esac
        if [ -z "$must" ] && [ $(( $(date +%s) - TA )) -gt "$BUDGET" ]; then echo "skip skip $TO" > "$f.rc"; return; fi
        run "$f" 0 1 "$TO" "$1" -s "$2" -n "$3"
    }

    # ---- the sweeps ----------------------------------------------------------------
    local lat_sizes="2 4 8 16 32 64 128 256 512 1024 2048 4096"
    local bw_sizes="64 256 1024 4096 16384 65536 262144 1048576"
    [ -n "$QUICK" ] && { lat_sizes="2 4096"; bw_sizes="64 4096 65536 1048576"; }
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
    section_targets
}

# ---- A, continued: memory that is already shared (issue 34, item 3) ------------
# perftest with --use_hugepages (SysV SHM_HUGETLB, removed at once: reached
# through /proc/self/map_files, root) as is and with SWRDMA_SHARED=0 (the
# private path on the same memory), and shared_ref.c (a memfd beside private
# memory: perftest has no memfd option).  Huge pages: when none are free and
# we may, 64 are reserved for the runs and the old count is put back.
section_shared34() {
    local T=$B/targets s t old=
    local free
    free=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo 2>/dev/null)
    if [ "${free:-0}" -lt 16 ] && [ -w /proc/sys/vm/nr_hugepages ]; then
        old=$(cat /proc/sys/vm/nr_hugepages)
        echo $((old + 64)) > /proc/sys/vm/nr_hugepages 2>/dev/null
        free=$(awk '/^HugePages_Free/ {print $2}' /proc/meminfo 2>/dev/null)
    fi
    if [ "${free:-0}" -lt 16 ]; then
        echo "no free huge pages (HugePages_Free ${free:-?}; /proc/sys/vm/nr_hugepages not writable)" > "$T/huge-missing"
    else
        say "perftest --use_hugepages: ib_write_lat, ib_read_lat 2 B; ib_write_bw, ib_read_bw -D 3 4 KiB, 64 KiB, 1 MiB; shared and SWRDMA_SHARED=0"
        local z
        for s in 1 0; do
            for t in ib_write_lat ib_read_lat; do
                SWRDMA_SHARED=$s run "$T/huge$s.$t.2" 0 1 "$TO" $t -s 2 -n 10000 --use_hugepages
            done
            for t in ib_write_bw ib_read_bw; do
                for z in 4096 65536 1048576; do
                    SWRDMA_SHARED=$s run "$T/huge$s.$t.$z" 0 1 $((TO + 3)) $t -s $z -D 3 --use_hugepages
                done
            done
        done
    fi
    [ -n "$old" ] && echo "$old" > /proc/sys/vm/nr_hugepages 2>/dev/null
    say "shared_ref: WRITE/READ into a memfd and into private memory (2 B, 4 KiB, 64 KiB, 1 MiB), CPUs 0 -> 1"
    {
        for m in memfd private; do
            for t in write read; do
                LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 timeout 60 "$B/shared_ref" $m $t 2 200000 0 1
                LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 timeout 60 "$B/shared_ref" $m $t 4096 200000 0 1
                LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 timeout 60 "$B/shared_ref" $m $t 65536 50000 0 1
                LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 timeout 60 "$B/shared_ref" $m $t 1048576 5000 0 1
            done
        done
    } > "$T/shared_ref" 2>&1
}

# ---- A, continued: the runs of the targets of issue 12, item 3 ------------------
# (called by section_soft: its functions are global, its locals - TO, port,
# TARGET_BW, the pin arrays - visible here by bash's dynamic scoping)
section_targets() {
    local T=$B/targets
    rm -rf "$T"; mkdir -p "$T"
    if ! command -v ucx_perftest >/dev/null; then
        echo "ucx_perftest not installed (apt-get install ucx-utils)" > "$T/ucx-missing"
    fi
    local s n t
    # one shared-memory ping-pong (shm_pingpong.c), CPUs 0 and 1: the placement of the vCPUs
    probe() { if [ "$(nproc)" -ge 2 ]; then "$B/shm_pingpong" 0 1 > "$T/$1" 2>&1; fi; }
    # 1. the reference: UCX over shared memory (UCX_TLS=sm), server CPU 0, client CPU 1
    if [ ! -e "$T/ucx-missing" ]; then
        say "reference: ucx_perftest UCX_TLS=sm tag_lat, ucp_put_lat, ucp_put_bw ($TARGET_BW)"
        probe t34.shm.0
        run "$T/ucx.tag_lat" 0 1 60 ucx -t tag_lat -n 200000 -w 10000
        # 1a. issue 34, item 2: ib_send_lat 2 B right after the reference, and
        # twice more, each after one more run of the reference (three
        # alternated pairs: a run's figure moves by 20 % from one run to
        # the next in the same minute, ours and UCX's); a shared-memory
        # ping-pong before and after each pair, so that the row compares
        # figures of one placement of the vCPUs by the host (it moves them:
        # 44 or 160 ns one way on the same machine, minutes apart)
        local k
        for k in 1 2 3; do
            [ $k -gt 1 ] && run "$T/t34.ucx.tag_lat.$k" 0 1 60 ucx -t tag_lat -n 200000 -w 10000
            run "$T/t34.ib_send_lat.2.$k" 0 1 "$TO" ib_send_lat -s 2 -n 10000
            probe t34.shm.$k
        done
        # 1b'. issue 34, item 3: UCX's one-sided latency over shared memory,
        # printed beside the rows of memory that is already shared
        run "$T/ucx.ucp_put_lat" 0 1 60 ucx -t ucp_put_lat -n 200000 -w 10000
        for s in $TARGET_BW; do
            n=$(( (1 << 34) / s )); [ $n -gt 1000000 ] && n=1000000
            run "$T/ucx.ucp_put_bw.$s" 0 1 60 ucx -t ucp_put_bw -s "$s" -n $n -w $((n / 10))
        done
    fi
    # 1b. the floor of one-sided operations on private memory (issue 34, item 3):
    # a plain process_vm_writev / process_vm_readv loop, one call per message,
    # target on CPU 0, initiator on CPU 1 (as perftest's server and client),
    # before and after the perftest runs it is set beside (the better of the two)
    # The host moves the two vCPUs between placements minutes apart (one-way
    # cache-line handoff 40 or 160 ns), and both the loop and perftest follow:
    # shared-memory ping-pongs (pm.0 .. pm.3) bracket three segments, A: the
    # loop and ib_write_lat / ib_read_lat 2 B, B: the -D bandwidth runs, C: A
    # again; the report sets a figure beside a reference only where the
    # ping-pongs say one placement held (report.py placement34)
    # 2. the fourth latency test (the other three are the sweeps' 2 B points)
    say "perftest ib_atomic_lat (8 B, fetch-and-add)"
    run "$T/ib_atomic_lat.8" 0 1 "$TO" ib_atomic_lat -A FETCH_AND_ADD -n 10000
    say "reference: process_vm_writev/readv loop (2 B $TARGET_BW), CPUs 0 -> 1; ib_write_lat, ib_read_lat 2 B"
    probe pm.0
    "$B/cma_ref" 0 1 2 $TARGET_BW > "$T/cma_ref.1" 2>&1
    run "$T/pm.A.ib_write_lat.2" 0 1 "$TO" ib_write_lat -s 2 -n 10000
    run "$T/pm.A.ib_read_lat.2" 0 1 "$TO" ib_read_lat -s 2 -n 10000
    probe pm.1
    # 3. the bandwidth figures of the targets: -D (perftest measures a fixed
    # duration after its own warm-up, as UCX runs with -w): the sweeps' -n
    # runs last a few milliseconds at 4 KiB and mostly measure the start
    local DB=${BENCH_BW_SECONDS:-3}
    say "perftest ib_write_bw, ib_read_bw, ib_send_bw -D $DB ($TARGET_BW)"
    for t in ib_write_bw ib_read_bw ib_send_bw; do
        for s in $TARGET_BW; do run "$T/dur.$t.$s" 0 1 $((TO + DB)) $t -s "$s" -D "$DB"; done
    done
    probe pm.2
    say "process_vm_writev/readv loop, ib_write_lat, ib_read_lat 2 B once more"
    "$B/cma_ref" 0 1 2 $TARGET_BW > "$T/cma_ref.2" 2>&1
    run "$T/pm.C.ib_write_lat.2" 0 1 "$TO" ib_write_lat -s 2 -n 10000
    run "$T/pm.C.ib_read_lat.2" 0 1 "$TO" ib_read_lat -s 2 -n 10000
    probe pm.3
    section_shared34
    # 4. one ib_write_bw pair, then two at once, 64 KiB, -D 5 (5 s measured)
    local D=${BENCH_PAIR_SECONDS:-5}
    say "perftest ib_write_bw 64 KiB -D $D: one pair, then two pairs at once"
    run "$T/pair1.ib_write_bw.65536" 0 1 $((TO + D)) ib_write_bw -s 65536 -D "$D"
    pairs2() {
        local fa="$T/pairA.ib_write_bw.65536" fb="$T/pairB.ib_write_bw.65536" pa pb pta ptb ca cb rca rcb
        srv_start "$fa" 0 $((TO + D)) ib_write_bw -s 65536 -D "$D"; pa=$SPID pta=$SPORT
        srv_start "$fb" 1 $((TO + D)) ib_write_bw -s 65536 -D "$D"; pb=$SPID ptb=$SPORT
        cli_run "$fa" 1 $((TO + D)) ib_write_bw "$pta" -s 65536 -D "$D" & ca=$!
        cli_run "$fb" 0 $((TO + D)) ib_write_bw "$ptb" -s 65536 -D "$D" & cb=$!
        wait $ca; rca=$?
        wait $cb; rcb=$?
        srv_end "$fa" "$pa" "$rca" $((TO + D))
        srv_end "$fb" "$pb" "$rcb" $((TO + D))
        [ "$rca" = 0 ] && [ "$rcb" = 0 ]
    }
    # a failed attempt is kept as pair{A,B}.*.try1.* (both pairs run again)
    if ! pairs2; then
        local f x
        for f in "$T/pairA.ib_write_bw.65536" "$T/pairB.ib_write_bw.65536"; do
            for x in client server rc times; do mv "$f.$x" "$f.try1.$x" 2>/dev/null; done
        done
        say "two ib_write_bw pairs: one failed, both once more"
        pairs2
    fi
    # 5. one busy process per CPU (normal nice), then the same latency runs,
    # beside quiet runs right before them; ping-pongs before the quiet runs,
    # between, and after the busy ones (not during: the spinners own the CPUs)
    local busy=() c
    if [ ${#pin0[@]} -gt 0 ]; then
        say "quiet, then busy CPUs: ib_send_lat, ib_write_lat 2 B; ucx_perftest tag_lat beside one spinning process per CPU"
        probe busy.shm.0
        run "$T/quiet.ib_send_lat.2" 0 1 "$TO" ib_send_lat -s 2 -n 10000
        run "$T/quiet.ib_write_lat.2" 0 1 "$TO" ib_write_lat -s 2 -n 10000
        probe busy.shm.1
        for c in $(seq 0 $(( $(nproc) - 1 ))); do
            # (timeout: even a bench killed by SIGKILL leaves them for 10 minutes at most)
            taskset -c "$c" timeout 600 sh -c 'while :; do :; done' &
            busy+=($!)
        done
        BUSY_PIDS="${busy[*]}"
        echo "${#busy[@]}" > "$T/busy.cpus"
        run "$T/busy.ib_send_lat.2" 0 1 60 ib_send_lat -s 2 -n 10000
        run "$T/busy.ib_write_lat.2" 0 1 60 ib_write_lat -s 2 -n 10000
        [ -e "$T/ucx-missing" ] || run "$T/busy.ucx.tag_lat" 0 1 60 ucx -t tag_lat -n 200000 -w 10000
        kill "${busy[@]}" 2>/dev/null
        wait "${busy[@]}" 2>/dev/null
        BUSY_PIDS=
        probe busy.shm.2
    else
        echo "only $(nproc) CPU: no pinned busy processes" > "$T/busy.skipped"
    fi
}
# the busy processes never outlive the bench
BUSY_PIDS=
trap "exit 130" INT TERM
trap '[ -n "$BUSY_PIDS" ] && kill $BUSY_PIDS 2>/dev/null' EXIT

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
    VM_RUN_DIR=$V VM_TIMEOUT=${VM_TIMEOUT:-600} OUR_LIB=$OUR_LIB \
        bash compat-tests/vm/vm-run.sh "$B/vm-guest.run.sh" > "$V/vm-run.out" 2>&1
    rc=$?
    echo $rc > "$V/vm-run.rc"
    [ $rc -eq 0 ] || say "vm-run.sh exit status $rc (see $V/vm-run.out)"
}

# C. RoCE v2 (issue 13): the vm-wire suite's VM (compat-tests/vm/wire.sh)
#    with WIRE_CPU=1 and only the clean-link perftest runs: rxe0 <-> rxe1,
#    then rxe <-> ours both ways and ours <-> ours across network namespaces;
#    wire-report.py prints the figures, the ratios to rxe <-> rxe of the
#    same run, and the CPU time per message.
section_wire() {
    local W=$PWD/$B/wire rc
    rm -rf "$W"; mkdir -p "$W"
    say "RoCE v2 VM: perftest rxe<->rxe, rxe<->ours, ours<->ours over veth"
    WIRE_CPU=1 WIRE_ONLY='/clean/ib_' OUR_LIB=$OUR_LIB VM_TIMEOUT=${VM_TIMEOUT:-900} \
        bash compat-tests/vm/wire.sh > "$W/suite.out" 2>&1
    rc=$?
    echo $rc > "$W/suite.rc"
    [ $rc -eq 0 ] || say "vm-wire exit status $rc (see $W/suite.out)"
    python3 "$HERE/wire-report.py" | tee "$W/report.txt"
}

# D. The control path on the host (issue 25, item 4): vm_bench on the uverbs
#    stand-in (compat-tests/providers/standin, LD_PRELOAD; sysfs fixtures of
#    rxe0 and mlx5_0 from providers/runner.py --fixture; RDMA netlink
#    answered, STANDIN_NETLINK=1, and for the first call also not), with Debian's
#    rxe and mlx5 user-space drivers, once on Debian's libibverbs and once
#    on ours, alternating (the order flips every round), BENCH_CONTROL_ROUNDS
#    rounds, pinned to CPU 1.  Both libraries are found through
#    LD_LIBRARY_PATH (a directory holding a link to Debian's library, and
#    ours), so that both pay the loader the same.  control-report.py prints
#    figure (ours), reference (upstream), ratio, target, meets/misses, and
#    for a miss the sub-steps where the time goes and the callgrind evidence.
section_control() {
    local C=$PWD/$B/control r p lib ld first second
    rm -rf "$C"; mkdir -p "$C/upstream-lib"
    local sys
    sys=$(ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*libibverbs\.so\.1 (libc6,x86-64) => //p' | head -n1)
    [ -n "$sys" ] || sys=/usr/lib/$(cc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/libibverbs.so.1
    if [ ! -e "$sys" ]; then echo "Debian's libibverbs1 is not installed (.ci/deps.sh)" > "$C/skipped"; return; fi
    ln -s "$(readlink -f "$sys")" "$C/upstream-lib/libibverbs.so.1"
    if ! make -s -C compat-tests/providers/standin OUT="$C" > "$C/standin-build.log" 2>&1; then
        echo "the stand-in does not build: $(tail -2 "$C/standin-build.log" | tr '\n' ' ')" > "$C/skipped"; return
    fi
    local provs=${BENCH_CONTROL_PROVIDERS:-rxe mlx5}
    for p in $provs; do
        python3 compat-tests/providers/runner.py --fixture "$p" "$C/fx-$p" > /dev/null ||
            echo "no fixture for $p" > "$C/$p.skipped"
    done
    local rounds=${BENCH_CONTROL_ROUNDS:-5}
    local args=(--startup 40 --iters 300 --max-seconds 3)
    [ -n "$QUICK" ] && { rounds=${BENCH_CONTROL_ROUNDS:-2}; args=(--startup 10 --iters 100 --max-seconds 1); }
    {
        echo "rounds $rounds"
        echo "args ${args[*]}"
        echo "upstream $(readlink -f "$sys")"
        echo "ours $OUR_LIB"
        echo "cpu ${pin1[*]:-unpinned}"
        echo "providers_dir $(dirname "$(readlink -f "$sys")")/libibverbs"
    } > "$C/info"
    # The stand-in answers RDMA netlink (the device dump with the kernel's
    # driver id), as every kernel with RDMA does; the first call is also
    # timed on a kernel without it (STANDIN_NETLINK unset: both libraries
    # find the device through sysfs alone), as "<prov>+sysfs".
    say "control path on the uverbs stand-in: $provs, upstream and ours, $rounds round(s)"
    local tables=""
    for p in $provs; do [ -e "$C/$p.skipped" ] || tables="$tables $p $p+sysfs"; done
    echo "tables$tables" >> "$C/info"
    for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then first=upstream second=ours; else first=ours second=upstream; fi
        for t in $tables; do
            for lib in $first $second; do
                control_run "$t" "$lib" > "$C/$t.$lib.$r.out" 2> "$C/$t.$lib.$r.err"
                echo $? > "$C/$t.$lib.$r.rc"
            done
        done
    done
    if [ -n "${BENCH_CONTROL_PROFILE-1}" ] && command -v valgrind > /dev/null; then
        control_profile "$C" "$tables"
    fi
}

# control_run <table> <lib> [vm_bench arguments]: vm_bench on the stand-in,
# table "<prov>" (netlink answered) or "<prov>+sysfs" (the first call
# only, no netlink); without arguments the timed runs
control_run() {
    local t=$1 lib=$2 p=${1%+sysfs} ld dev nl=1 a; shift 2
    if [ $lib = ours ]; then ld=$LIBDIR; else ld=$C/upstream-lib; fi
    dev=$(cat "$C/fx-$p/class/infiniband_verbs/uverbs0/ibdev")
    a=("${args[@]}")
    if [ "$t" != "$p" ]; then nl=; a=(--startup "${args[1]}" --iters 0 --max-seconds 1); fi
    [ $# -gt 0 ] && a=("$@")
    [ "${a[0]}" = --startup-child ] || a+=(--dev "$dev" --gid-index 0)
    local wrap=("${pin1[@]}" timeout -k 5 120)
    [ -n "${PROFILE_WRAP:-}" ] && read -r -a wrap <<< "$PROFILE_WRAP"
    env LD_LIBRARY_PATH="$ld" SYSFS_PATH="$C/fx-$p" LD_PRELOAD="$C/libuverbs-standin.so" ${nl:+STANDIN_NETLINK=1} \
        "${wrap[@]}" "$B/vm_bench" "${a[@]}"
}

# The profile of what each library does in each benchmark (callgrind, one
# run per table and library: the startup child, then, with netlink, the
# pairs), cg.<table>.<lib>.{startup,pairs}, which control-report.py reads.
control_profile() {
    local C=$1 tables=$2 t lib dev
    say "control path: callgrind profiles"
    for t in $tables; do
        dev=$(cat "$C/fx-${t%+sysfs}/class/infiniband_verbs/uverbs0/ibdev")
        for lib in ours upstream; do
            PROFILE_WRAP="timeout -k 5 300 valgrind --tool=callgrind --callgrind-out-file=$C/cg.$t.$lib.startup" \
                control_run "$t" "$lib" --startup-child "$dev" > /dev/null 2> "$C/cg.$t.$lib.startup.err"
            [ "$t" = "${t%+sysfs}" ] || continue
            PROFILE_WRAP="timeout -k 5 300 valgrind --tool=callgrind --callgrind-out-file=$C/cg.$t.$lib.pairs" \
                control_run "$t" "$lib" --startup 0 --iters 50 --max-seconds 1 > /dev/null 2> "$C/cg.$t.$lib.pairs.err"
        done
    done
}

for sec in $SECTIONS; do
    case $sec in
        soft) echo "loadavg_before_soft $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"; section_soft
              echo "loadavg_after_soft $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"
              python3 "$HERE/report.py" soft ;;
        vm) echo "loadavg_before_vm $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"; section_vm
            echo "loadavg_after_vm $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"
            python3 "$HERE/report.py" vm ;;
        wire) section_wire ;;
        ucx) echo "loadavg_before_ucx $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"
             bash "$HERE/ucx.sh" "$PWD/$B/ucx" "$LIBDIR"
             python3 "$HERE/ucx-report.py" | tee "$B/ucx.txt" ;;
        rdmacm) bash "$HERE/rdmacm.sh" "$PWD/$B/rdmacm" "$LIBDIR" "$PWD/$B/tcp_connect" | tee "$B/rdmacm.txt" ;;
        hostwire) echo "loadavg_before_hostwire $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"
                  bash "$HERE/host-wire.sh" "$PWD/$B/hostwire" "$LIBDIR" "$PWD/$B/net_ref"
                  python3 "$HERE/host-wire-report.py" | tee "$B/hostwire.txt" ;;
        control) echo "loadavg_before_control $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"; section_control
                 echo "loadavg_after_control $(cut -d' ' -f1 /proc/loadavg)" >> "$B/machine"
                 python3 "$HERE/control-report.py" | tee "$B/control/report.txt" ;;
        *) say "unknown section $sec" ;;
    esac
done
echo "elapsed $(( $(date +%s) - T0 ))" >> "$B/machine"
python3 "$HERE/report.py" json
echo "bench: $(( $(date +%s) - T0 )) s; JSON: $B/results.json"
