#!/bin/bash
# compat-tests/clients: unchanged real RDMA programs of Debian bookworm on the
# software device swr0 (providers/swrdma): UCX 1.13 (ucx-utils: ucx_info,
# ucx_perftest over rc_verbs and ud_verbs), Open MPI 4.1 over UCX
# (openmpi-bin, libopenmpi-dev: a two-rank ping-pong), qperf, and libfabric's
# verbs;ofi_rxd RDM endpoint (libfabric-bin: fi_pingpong).  No shim, no
# change to those programs: only our library (LD_LIBRARY_PATH) and
# RDMAV_SOFT_DEVICES=swr0; the rdma_cm checks (UCX's rdmacm connection
# manager through io_demo, qperf -cm1, and libfabric's verbs MSG endpoint,
# fi_pingpong, on the wire device rw0 in a private network namespace) run
# under build/bin/swrdma-cm, which preloads the user-space rdma_cm.  Every
# process talks over 127.0.0.1 only (the MSG endpoint over a link-local
# address of its namespace's own veth); the device itself is Unix sockets
# in a fresh private XDG_RUNTIME_DIR.
#
# UCX uses a verbs device only when /dev/infiniband/<name> is a character
# device it may read and write (it stat()s it, never opens it).  The package
# ibverbs-provider-swrdma installs debian/ibverbs-provider-swrdma.tmpfiles
# for that (/dev/infiniband/swr0 -> /dev/null).  When the link is missing
# and we are root, this suite creates it from that same file (and removes it
# at the end); otherwise the UCX and MPI checks fail, saying so.
#
# Run it alone on the software device: flock /tmp/suites.lock compat-tests/clients/run.sh
# Input: OUR_LIB (default build/lib/libibverbs.so.1), with the provider in
# $(dirname OUR_LIB)/libibverbs/ (make swrdma).
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin clients --clean
OUT=$SCRATCH
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
[ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing the provider (run: make swrdma)"
need ss=iproute2 ucx_info=ucx-utils ucx_perftest=ucx-utils mpirun=openmpi-bin mpicc=libopenmpi-dev qperf=qperf \
    fi_pingpong=libfabric-bin fi_info=libfabric-bin timeout=coreutils

export XDG_RUNTIME_DIR="$OUT/rt"
rm -rf "$XDG_RUNTIME_DIR"; mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
export LD_LIBRARY_PATH="$LIBDIR"
export RDMAV_SOFT_DEVICES=swr0
unset RDMAV_DRIVERS IBV_DRIVERS
# UCX: only swr0 (and "self" for a process's own endpoint), never TCP or
# shared memory, so every byte between the processes goes through swr0.
export UCX_NET_DEVICES=swr0:1 UCX_LOG_LEVEL=info UCX_WARN_UNUSED_ENV_VARS=n
unset UCX_TLS

pids=()
created=""
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    [ -n "$created" ] && rm -f /dev/infiniband/swr0 && rmdir /dev/infiniband 2>/dev/null
    return 0
}
trap cleanup EXIT

# Waits (10 s at most) until a server listens on TCP port $1 (a probe
# connection would be taken for the client).
wait_listen() {
    local i
    for i in $(seq 100); do
        ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

pin_s=(); pin_c=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_s=(taskset -c 0); pin_c=(taskset -c 1); fi

# --- the device file UCX looks for --------------------------------------------
TMPF=debian/ibverbs-provider-swrdma.tmpfiles
devok() { [ -c /dev/infiniband/swr0 ] && [ -r /dev/infiniband/swr0 ] && [ -w /dev/infiniband/swr0 ]; }
devwhy=""
if ! devok; then
    if [ -e /dev/infiniband/swr0 ] || [ -L /dev/infiniband/swr0 ]; then
        devwhy="/dev/infiniband/swr0 exists but is not a readable, writable character device"
    elif [ "$(id -u)" -eq 0 ]; then
        if command -v systemd-tmpfiles >/dev/null; then
            systemd-tmpfiles --create "$PWD/$TMPF" 2>"$OUT/tmpfiles.err"
        else
            mkdir -p -m 0755 /dev/infiniband && ln -s /dev/null /dev/infiniband/swr0
        fi
        if devok; then
            created=1
            echo "# created /dev/infiniband/swr0 -> /dev/null from $TMPF (removed at the end)"
        else
            devwhy="could not create /dev/infiniband/swr0 from $TMPF"
        fi
    else
        devwhy="no /dev/infiniband/swr0: install ibverbs-provider-swrdma (its tmpfiles.d entry), or as root: systemd-tmpfiles --create $TMPF"
    fi
fi
if [ -z "$devwhy" ]; then pass "/dev/infiniband/swr0 for UCX"; else fail "/dev/infiniband/swr0 for UCX" "$devwhy"; fi

# --- UCX -------------------------------------------------------------------
out=$(timeout 30 ucx_info -d 2>&1); rc=$?
echo "$out" >"$OUT/ucx_info.txt"
# The transports of memory domain swr0, each with its device.
md=$(echo "$out" | awk '/^# Memory domain:/ {md=$4} md=="swr0" && /Transport:|Device:/ {print $3}' | paste -sd' ')
if [ $rc -eq 0 ] && echo " $md " | grep -q ' rc_verbs swr0:1 ' && echo " $md " | grep -q ' ud_verbs swr0:1 '; then
    pass "ucx_info -d lists swr0:1 with rc_verbs and ud_verbs ($md)"
else
    fail "ucx_info -d lists swr0:1 with rc_verbs and ud_verbs" "rc=$rc, swr0 transports: '${md:-none}' ${devwhy:+($devwhy)}"
fi

port=23450
# ucx <name> <UCX_TLS> <want> <perftest args...>: server and client, the
# client's final line (-f) reported; for UCP tests the endpoint
# configuration UCX prints must name <want>/swr0:1 (e.g. "tag(rc_verbs").
ucx() {
    local name=$1 tls=$2 want=$3; shift 3
    local log="$OUT/$(echo "$name" | tr ' /' '__')"
    port=$((port + 1))
    UCX_TLS=$tls "${pin_s[@]}" timeout 60 ucx_perftest -p $port -f >"$log.server" 2>&1 &
    local spid=$!
    pids+=("$spid")
    wait_listen $port
    UCX_TLS=$tls "${pin_c[@]}" timeout 60 ucx_perftest 127.0.0.1 -p $port -f "$@" >"$log.client" 2>&1
    local crc=$?
    wait "$spid"; local src=$?
    # UD has no RDMA: UCT put over ud_verbs is refused by UCX itself.
    if grep -q 'ud_verbs/swr0:1 does not support operation put' "$log.client"; then
        skip "$name" "$(grep -o 'ud_verbs/swr0:1 does not support operation.*' "$log.client" | head -n1) (UCX's own verdict: UD has no RDMA)"
        return
    fi
    local res
    res=$(grep -E '^ +[0-9]+ +[0-9.]+ ' "$log.client" | tail -n1)
    if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ -z "$res" ]; then
        fail "$name" "server rc=$src client rc=$crc: $(grep -m1 -E 'ERROR|error' "$log.client" "$log.server" | cut -c1-200)"
        return
    fi
    if [ -n "$want" ] && ! grep -q "ep_cfg.*$want/swr0:1" "$log.client"; then
        fail "$name" "UCX did not use $want/swr0:1: $(grep -m1 ep_cfg "$log.client")"
        return
    fi
    # iterations, median, average, overall latency (us); bandwidth average,
    # overall (MB/s); message rate average, overall.
    set -- $res
    pass "$name (median $2 us, average $3 us, $6 MB/s, $8 msg/s)"
}

RC_TLS=rc_verbs,ud_verbs:aux,self # rc needs ud as its wire-up transport
for v in "rc_verbs $RC_TLS" "ud_verbs ud_verbs,self"; do
    set -- $v; tl=$1 tls=$2
    # UD has no RDMA: UCP puts over ud_verbs are UCX's emulation over active
    # messages (endpoint configuration "rma_am(ud_verbs/swr0:1)").
    rma="rma($tl"; [ "$tl" = ud_verbs ] && rma="rma_am($tl"
    ucx "ucx_perftest tag_lat $tl 8 B" "$tls" "tag($tl" -t tag_lat -s 8 -n 20000 -w 1000
    # UCX's wakeup mode: arm the CQs, sleep on the worker's descriptor.
    ucx "ucx_perftest tag_lat $tl 8 B -E sleep" "$tls" "tag($tl" -t tag_lat -s 8 -n 2000 -w 100 -E sleep
    ucx "ucx_perftest tag_bw $tl 64 KiB" "$tls" "tag($tl" -t tag_bw -s 65536 -n 2000 -w 100
    ucx "ucx_perftest ucp_put_bw $tl 64 KiB" "$tls" "$rma" -t ucp_put_bw -s 65536 -n 2000 -w 100
    ucx "ucx_perftest UCT am_lat $tl 8 B" "$tls" "" -t am_lat -d swr0:1 -x "$tl" -s 8 -n 20000 -w 1000
    ucx "ucx_perftest UCT am_bw $tl 1 KiB bcopy" "$tls" "" -t am_bw -d swr0:1 -x "$tl" -D bcopy -s 1024 -n 20000 -w 1000
    ucx "ucx_perftest UCT put_bw $tl 64 KiB zcopy" "$tls" "" -t put_bw -d swr0:1 -x "$tl" -D zcopy -s 65536 -n 2000 -w 100
done
# UCX's rdmacm connection manager (a sockaddr connect: io_demo) through the
# user-space rdma_cm (build/bin/swrdma-cm); only rdmacm may carry the
# connection (UCX_SOCKADDR_TLS_PRIORITY=rdmacm), only rc_verbs the data.
CM=$ROOT/build/bin/swrdma-cm
if [ -x "$CM" ]; then
    log="$OUT/io_demo"
    UCX_TLS=rc_verbs,self UCX_SOCKADDR_TLS_PRIORITY=rdmacm "${pin_s[@]}" timeout 60 "$CM" io_demo -p 20017 -q \
        >"$log.server" 2>&1 &
    spid=$!
    pids+=("$spid")
    sleep 1
    UCX_TLS=rc_verbs,self UCX_SOCKADDR_TLS_PRIORITY=rdmacm "${pin_c[@]}" timeout 30 "$CM" io_demo -p 20017 -q \
        -i 2000 -l 5s 127.0.0.1 >"$log.client" 2>&1
    crc=$?
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
    tot=$(grep -oE 'total:[0-9]+ \| read' "$log.client" | tail -n1 | grep -oE '[0-9]+')
    if [ $crc -eq 0 ] && grep -q 'Connected to server' "$log.client" && grep -q "Client exit with status 'OK'" "$log.client" &&
        [ "${tot:-0}" -gt 0 ]; then
        pass "UCX rdmacm connection manager: io_demo over rc_verbs, data checked (-q), $tot operations"
    else
        fail "UCX rdmacm connection manager: io_demo" "rc=$crc: $(grep -E 'failed|error|status' "$log.client" | head -n2 | tr '\n' ' ' | cut -c1-200)"
    fi
else
    fail "UCX rdmacm connection manager" "missing $CM (run: make swrdma)"
fi

# --- Open MPI over UCX -----------------------------------------------------------
if mpicc -O2 -o "$OUT/mpi_pingpong" compat-tests/clients/mpi_pingpong.c 2>"$OUT/mpicc.err"; then
    for v in "rc_verbs $RC_TLS" "ud_verbs ud_verbs,self"; do
        set -- $v; tl=$1 tls=$2
        log="$OUT/mpi_$tl.log"
        timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --host localhost:2 \
            --mca pml ucx --mca btl self --mca osc ucx --mca oob_tcp_if_include lo \
            -x LD_LIBRARY_PATH -x RDMAV_SOFT_DEVICES -x XDG_RUNTIME_DIR -x UCX_LOG_LEVEL \
            -x UCX_NET_DEVICES=swr0:1 -x UCX_TLS="$tls" \
            "$OUT/mpi_pingpong" >"$log" 2>&1
        rc=$?
        figs=$(grep '^pingpong' "$log" | sed 's/^pingpong //' | paste -sd';')
        if [ $rc -ne 0 ] || ! grep -q '^finalized' "$log"; then
            fail "Open MPI ping-pong (pml ucx, $tl)" "mpirun rc=$rc: $(grep -m2 -iE 'error|abort|mismatch' "$log" | tr '\n' ' ' | cut -c1-240)"
        elif ! grep -q "ep_cfg.*tag($tl/swr0:1)" "$log"; then
            fail "Open MPI ping-pong (pml ucx, $tl)" "ranks did not talk over $tl/swr0:1: $(grep ep_cfg "$log" | tail -n1)"
        else
            pass "Open MPI ping-pong (pml ucx, $tl; data checked; MPI_Finalize, exit 0): $figs"
        fi
    done
else
    fail "Open MPI ping-pong (build)" "$(head -n3 "$OUT/mpicc.err")"
fi

# --- qperf -----------------------------------------------------------------------------
# qperf's own connection setup (without -cm1) addresses the peer by LID only,
# which a RoCE port refuses (rxe too): first that refusal, then the tests with
# SWRDMA_LID_ROUTING=1, the provider's switch for LID-only address vectors.
QP=19764
timeout 60 qperf -lp $QP >"$OUT/qperf-strict.server" 2>&1 &
spid=$!
wait_listen $QP
timeout 30 qperf 127.0.0.1 -lp $QP -i swr0:1 -t 1 rc_lat >"$OUT/qperf-strict" 2>&1; rc=$?
kill $spid 2>/dev/null; wait $spid 2>/dev/null
if [ $rc -ne 0 ] && grep -q 'failed to modify QP to RTR' "$OUT/qperf-strict"; then
    pass "qperf rc_lat without a GRH refused as on RoCE (failed to modify QP to RTR)"
else
    fail "qperf rc_lat without a GRH refused as on RoCE" "rc=$rc: $(head -n2 "$OUT/qperf-strict" | tr '\n' ' ')"
fi
export SWRDMA_LID_ROUTING=1
QP=19765
"${pin_s[@]}" timeout 240 qperf -lp $QP >"$OUT/qperf.server" 2>&1 &
pids+=("$!")
wait_listen $QP
for t in rc_bw rc_lat uc_bw uc_lat ud_bw ud_lat rc_rdma_read_bw rc_rdma_read_lat rc_rdma_write_bw \
    rc_rdma_write_lat rc_compare_swap_mr rc_fetch_add_mr; do
    log="$OUT/qperf_$t"
    "${pin_c[@]}" timeout 30 qperf 127.0.0.1 -lp $QP -i swr0:1 -t 2 "$t" >"$log" 2>&1
    rc=$?
    figs=$(grep -E '^ +[a-z_]+ += ' "$log" | sed -E 's/^ +//; s/ += /=/' | paste -sd' ')
    if [ $rc -eq 0 ] && [ -n "$figs" ] && ! grep -qiE 'failed|error' "$log"; then
        pass "qperf $t ($figs)"
    else
        fail "qperf $t" "rc=$rc: $(grep -v "^$t:" "$log" | head -n2 | tr '\n' ' ' | cut -c1-200)"
    fi
done
unset SWRDMA_LID_ROUTING
# qperf -cm1: its RC tests connect through rdma_cm (swrdma-cm); its UD
# tests ignore -cm1 (qperf 0.4.11 addresses UD peers by LID).
QP=19767
"${pin_s[@]}" timeout 60 "$CM" qperf -lp $QP >"$OUT/qperf-cm.server" 2>&1 &
spid=$!
pids+=("$spid")
wait_listen $QP
"${pin_c[@]}" timeout 30 "$CM" qperf 127.0.0.1 -lp $QP -cm1 -t 2 rc_bw rc_lat >"$OUT/qperf-cm" 2>&1; rc=$?
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
figs=$(grep -E '^ +[a-z_]+ += ' "$OUT/qperf-cm" | sed -E 's/^ +//; s/ += /=/' | paste -sd' ')
if [ $rc -eq 0 ] && [ "$(grep -cE '^ +[a-z_]+ += ' "$OUT/qperf-cm")" -eq 2 ]; then
    pass "qperf -cm1 rc_bw rc_lat (rdma_cm connection setup: $figs)"
else
    fail "qperf -cm1 rc_bw rc_lat" "rc=$rc: $(head -n3 "$OUT/qperf-cm" | tr '\n' ' ' | cut -c1-200)"
fi

# --- libfabric: verbs;ofi_rxd RDM (the verbs provider's UD endpoint) --------------------------
out=$(timeout 30 fi_info -p "verbs;ofi_rxd" 2>&1); rc=$?
echo "$out" >"$OUT/fi_info.txt"
if [ $rc -eq 0 ] && echo "$out" | grep -q 'domain: swr0-dgram' && echo "$out" | grep -q 'type: FI_EP_RDM'; then
    pass "fi_info -p verbs;ofi_rxd lists swr0-dgram (FI_EP_RDM)"
else
    fail "fi_info -p verbs;ofi_rxd lists swr0-dgram (FI_EP_RDM)" "rc=$rc: $(echo "$out" | head -n2 | tr '\n' ' ')"
fi
fp=47600
for v in "64 1000" "4096 1000" "65536 100" "1048576 10"; do
    set -- $v; sz=$1 it=$2
    fp=$((fp + 1))
    name="fi_pingpong verbs;ofi_rxd rdm $sz B (data checked)"
    log="$OUT/fi_pingpong_$sz"
    "${pin_s[@]}" timeout 60 fi_pingpong -p "verbs;ofi_rxd" -e rdm -d swr0-dgram -B $fp -I "$it" -S "$sz" -c \
        >"$log.server" 2>&1 &
    spid=$!
    pids+=("$spid")
    wait_listen $fp
    "${pin_c[@]}" timeout 60 fi_pingpong -p "verbs;ofi_rxd" -e rdm -d swr0-dgram -P $fp -I "$it" -S "$sz" -c \
        127.0.0.1 >"$log.client" 2>&1
    crc=$?
    wait "$spid"; src=$?
    # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
    res=$(grep -E '^[0-9]+[kmg]? ' "$log.client" | tail -n1)
    if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ -n "$res" ]; then
        set -- $res
        pass "$name ($7 us/xfer, $6 MB/s)"
    else
        fail "$name" "server rc=$src client rc=$crc: $(tail -n1 "$log.client" | cut -c1-200)"
    fi
done
# --- libfabric: verbs MSG endpoint (rdma_cm) on the wire device -------------------------------
# libfabric's verbs provider finds MSG devices by rdma_bind_addr on the
# addresses of the interfaces other than lo, which swr0 (loopback only)
# does not answer for: the wire device does, rw0 on one end of a veth
# pair in a private network namespace (made by root, or in a user
# namespace of our own: no root needed), server and client in it, through swrdma-cm (the
# CM's MADs on QP1 through the wire agent, the data as RoCE v2 over the
# namespace's lo).  fi_pingpong's server binds to "localhost": in its own
# mount namespace that is cl0's address (soft-rdmacm's
# private-view.sh).  -c: every message's data checked on arrival.
name="fi_pingpong -p verbs -e msg (FI_EP_MSG over rdma_cm) on rw0@cl0 in a private network namespace (data checked)"
ns=()
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    ns=(unshare -n)
elif unshare -rn true 2>/dev/null; then
    ns=(unshare -rn)
fi
if [ ${#ns[@]} -eq 0 ]; then
    skip "$name" "cannot make a network namespace (not root, and user namespaces are refused here)"
else
    rm -rf "$OUT/rt-w"; mkdir -p -m 0700 "$OUT/rt-w"
    "${ns[@]}" env XDG_RUNTIME_DIR="$OUT/rt-w" RDMAV_SOFT_DEVICES=rw0@cl0 SWRDMA_WIRED_IDLE_MS=300 \
        CM="$CM" PV="$ROOT/compat-tests/soft-rdmacm/private-view.sh" LOGS="$OUT/fi_msg" bash -c '
        ip link set lo up && ip link add cl0 type veth peer name cl1 && ip addr add 169.254.86.1/24 dev cl0 &&
            ip link set cl0 up && ip link set cl1 up || { echo "setup: cannot make the veth pair" >"$LOGS.setup"; exit 3; }
        rc=0
        for r in "64 1000" "1048576 20"; do
            set -- $r
            timeout 60 unshare -m bash "$PV" --localhost 169.254.86.1 "$CM" fi_pingpong -p verbs -e msg -d rw0 \
                -B 47700 -I $2 -S $1 -c >"$LOGS.$1.server" 2>&1 &
            s=$!
            for i in $(seq 100); do ss -Hltn "sport = :47700" | grep -q . && break; sleep 0.1; done
            timeout 60 "$CM" fi_pingpong -p verbs -e msg -d rw0 -P 47700 -I $2 -S $1 -c 169.254.86.1 \
                >"$LOGS.$1.client" 2>&1; c=$?
            wait $s; sv=$?
            echo "$1 $sv $c" >>"$LOGS.rc"
            [ $sv = 0 ] && [ $c = 0 ] || { rc=1; break; }
        done
        # the wire agent ends by itself (300 ms idle): wait for it, so that
        # nothing stays in the namespace
        me=$(readlink /proc/self/ns/net)
        for i in $(seq 50); do
            left=0
            for p in /proc/[0-9]*; do
                [ "$(readlink $p/ns/net 2>/dev/null)" = "$me" ] && grep -qs swrdma-wired $p/comm && left=1
            done
            [ $left = 0 ] && break
            sleep 0.1
        done
        exit $rc' >"$OUT/fi_msg.out" 2>&1
    nrc=$?
    rows=""
    for sz in 64 1048576; do
        # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec; "=N": every message acknowledged
        row=$(grep -E '^[0-9]+[kmg]? ' "$OUT/fi_msg.$sz.client" 2>/dev/null | tail -n1)
        set -- $row - - - - - - - -
        [ -n "$row" ] && [ "$3" = "=$2" ] && rows="$rows, $1 x $2: $7 us/xfer, $6 MB/s"
    done
    if [ $nrc -eq 0 ] && [ "$(echo "$rows" | grep -o 'us/xfer' | wc -l)" = 2 ]; then
        pass "$name: ${rows#, }"
    else
        why=$(cat "$OUT/fi_msg.setup" "$OUT/fi_msg.rc" 2>/dev/null | tr '\n' ' ')
        last=$(tail -n2 "$OUT"/fi_msg.*.client "$OUT"/fi_msg.*.server 2>/dev/null | grep -v '^==>' | grep . | tail -n2 | tr '\n' ' ')
        fail "$name" "rc=$nrc (size server client: $why): ${last:0:200}"
    fi
fi

finish
