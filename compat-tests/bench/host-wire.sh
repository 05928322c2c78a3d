#!/bin/bash
# compat-tests/bench/host-wire.sh: section "hostwire" of `make bench` (issue
# 25, items 1 and 2), on this host, no VM.  Called by run.sh with
#   host-wire.sh <scratch dir> <library dir> <net_ref binary>
#
# 1. Wire device over a veth between two network namespaces this script
#    creates and deletes (bwa: 169.254.25.1 on bva, bwb: 169.254.25.2 on bvb;
#    link-local addresses only, no route out; veth MTU 9000, so IB MTU 4096
#    fits).  Server in bwa on CPU 0, client in bwb on CPU 1:
#    * ib_write_lat, ib_send_lat, ib_read_lat, ib_atomic_lat 2 B (-n
#      BENCH_WIRE_LAT_ITERS) beside net_ref's UDP ping-pong (2-byte
#      datagrams, same CPUs, same veth), ib_write_lat also beside the
#      ping-pong with its handicap (udp-ping-spin: a thread of the spinning
#      program must receive the datagram);
#    * ib_write_bw, ib_send_bw, ib_read_bw 64 KiB and 1 MiB (-D
#      BENCH_WIRE_BW_SECONDS) at IB MTU 1024 and 4096 (perftest -m), beside
#      net_ref's UDP stream of one-IB-MTU datagrams received on the same veth.
#    * 1, 2 and 4 pairs at once, not pinned: ib_write_bw 64 KiB (-D
#      BENCH_WIRE_BW_SECONDS) and ibv_rc_pingpong 4 KiB (-n
#      BENCH_WIRE_PAIR_ITERS), beside 1, 2 and 4 UDP streams.
#    Then the same again through the transport agent (issue 33,
#    SWRDMA_WIRE_AGENT=1 SWRDMA_WIRED_IDLE_MS=1000 on both sides; raw
#    outputs prefixed "agent.", the agents' logs in agent.a.log and
#    agent.b.log): the four latency tests, the three bandwidth tests at
#    64 KiB only (BENCH_WIRE_AGENT_BW_SIZES, "65536"; add 1048576 for 1 MiB,
#    about 30 s more) at IB MTU 1024 and 4096, and the pairs; the UDP
#    references are not measured again.  Same iterations as the first
#    pass except ibv_rc_pingpong's: BENCH_WIRE_PAIR_ITERS / 10 (at least
#    200; through the agent a 4 KiB round trip took 0.4-6 ms for one pair
#    and 1.5-10 ms for each of 2 and 4 pairs on 2 busy CPUs, so that 20000
#    would run into the timeouts).  With the 1 MiB runs left out the agent
#    pass takes about two thirds of the first's time (50 s against 76 s
#    with -n 2000, -D 2, 5000 pingpong iterations).
#    Each pass starts without an agent in either namespace (the script
#    waits, at most 5 s, for the last one to exit), and so do the agent
#    pass's pairs.  An agent runs on both CPUs whatever the program that
#    started it is pinned to (it serves every process of its user; until
#    2026-12-02 it kept its starter's CPU, 0 or 1 in the pinned runs):
#    SWRDMA_WIRED_CPUS in BENCH_WIRE_AGENT_ENV (added to both sides, e.g.
#    "SWRDMA_WIRED_CPUS=1") pins them for a comparison.
# 2. Events on swr0: ibv_rc_pingpong -e and qperf rc_lat (server CPU 0,
#    client CPU 1) beside net_ref's pipe ping-pong between the same two CPUs.
# 3. ucx_perftest tag_lat over rc_verbs on swr0 beside UCX_TLS=sm.
# Raw outputs: <scratch>/*.{server,client,rc}; host-wire-report.py reads them.
# Needs root (ip netns); without it, or without perftest, a file "skipped".
set -u
S=$1 LIBDIR=$2 NETREF=$3
TO=${BENCH_PERFTEST_TIMEOUT:-25}
LAT_N=${BENCH_WIRE_LAT_ITERS:-5000}
BW_D=${BENCH_WIRE_BW_SECONDS:-3}
EV_N=${BENCH_EVENT_ITERS:-20000}
QP_T=${BENCH_QPERF_SECONDS:-3}
UCX_N=${BENCH_UCX_ITERS:-200000}
say() { echo "bench: $*" >&2; }
rm -rf "$S"; mkdir -p "$S"
[ "$(id -u)" = 0 ] || { echo "needs root (ip netns)" > "$S/skipped"; exit 0; }
command -v ib_write_lat >/dev/null || { echo "perftest not installed" > "$S/skipped"; exit 0; }
command -v ip >/dev/null || { echo "iproute2 not installed" > "$S/skipped"; exit 0; }

# the pids of the agents (swrdma-wired) running in the two namespaces
agents() {
    local n p
    for n in bwa bwb; do
        for p in $(ip netns pids $n 2>/dev/null); do
            [ "$(cat /proc/$p/comm 2>/dev/null)" = swrdma-wired ] && echo "$p"
        done
    done
}
# wait until no agent is left in the namespaces (at most $1 s; says so if one is)
no_agents() {
    local i left
    for ((i = 0; i < $1 * 10; i++)); do
        left=$(agents); [ -z "$left" ] && return 0
        sleep 0.1
    done
    say "agent(s) $(echo $left) still running in bwa/bwb after $1 s"
    return 1
}
# (the agents this script's programs started end with their namespaces)
cleanup() {
    local p; for p in $(agents); do kill "$p" 2>/dev/null; done
    ip netns del bwa 2>/dev/null; ip netns del bwb 2>/dev/null
}
trap cleanup EXIT
cleanup
if ! { ip netns add bwa && ip netns add bwb &&
       ip link add bva mtu 9000 type veth peer name bvb mtu 9000 &&
       ip link set bva netns bwa && ip link set bvb netns bwb &&
       ip -n bwa addr add 169.254.25.1/24 dev bva && ip -n bwb addr add 169.254.25.2/24 dev bvb &&
       ip -n bwa link set bva up && ip -n bwb link set bvb up &&
       ip -n bwa link set lo up && ip -n bwb link set lo up; }; then
    echo "cannot create the namespaces and the veth pair" > "$S/skipped"; exit 0
fi
for s in a b; do mkdir -p "$S/rt$s"; chmod 0700 "$S/rt$s"; done
A=169.254.25.1
# The pass: PFX prefixes the raw outputs' names, AGENT_ENV is added to each
# side's environment (empty: each process carries its own QPs).
PFX= AGENT_ENV=()
# (The first pass: SWRDMA_WIRE_AGENT=0, each process its own QPs; the
# agent is the default.)
# side a|b CPU: the command prefix of one side (namespace, CPU, library,
# device; through the agent, its log per side)
side() {
    P=(ip netns exec "bw$1" taskset -c "$2" env XDG_RUNTIME_DIR="$S/rt$1" LD_LIBRARY_PATH="$LIBDIR"
       RDMAV_SOFT_DEVICES="rw0@bv$1")
    [ ${#AGENT_ENV[@]} -ne 0 ] || P+=(SWRDMA_WIRE_AGENT=0)
    [ ${#AGENT_ENV[@]} -eq 0 ] || P+=("${AGENT_ENV[@]}" ${BENCH_WIRE_AGENT_ENV:-} SWRDMA_WIRED_LOG="$S/agent.$1.log")
    P+=(timeout -k 5)
}
side a 0
G=$("${P[@]}" 10 ibv_devinfo -v -d rw0 2>&1 | sed -nE 's/^\s*GID\[ *([0-9]+)\]:\s*::ffff:169\.254\.25\.1, RoCE v2.*/\1/p' | head -1)
[ -n "$G" ] || { echo "rw0@bva has no RoCE v2 GID for $A" > "$S/skipped"; exit 0; }
sleep 1   # (the veth's carrier)

port=18800
# pair NAME TIMEOUT SERVER-CMD... -- CLIENT-ARGS...: server in bwa (CPU 0),
# client in bwb (CPU 1) with the server's address appended; a failed run once more
pair1() {
    local f=$S/$PFX$1 to=$2 srv=() cli=() sp crc; shift 2
    while [ "$1" != -- ]; do srv+=("$1"); shift; done; shift; cli=("$@")
    port=$((port + 1))
    side a 0; "${P[@]}" "$to" "${srv[@]}" -p $port > "$f.server" 2>&1 & sp=$!
    sleep 0.5
    side b 1; "${P[@]}" "$to" "${srv[@]}" "${cli[@]}" -p $port $A > "$f.client" 2>&1; crc=$?
    local i; for i in $(seq 60); do kill -0 $sp 2>/dev/null || break; sleep 0.05; done
    kill $sp 2>/dev/null; wait $sp; echo "$crc $?" > "$f.rc"
    [ "$crc" = 0 ]
}
pair() { pair1 "$@" || { say "$PFX$1 failed, once more"; mv "$S/$PFX$1.client" "$S/$PFX$1.try1.client"; pair1 "$@"; }; }
# ref NAME SERVER-ARGS -- CLIENT-ARGS: net_ref in the two namespaces, same
# CPUs; a failed client once more (a datagram lost costs the ping-pongs the
# run: "no answer")
ref1() {
    local f=$S/$1 srv=() sp crc; shift
    while [ "$1" != -- ]; do srv+=("$1"); shift; done; shift
    ip netns exec bwa taskset -c 0 timeout 60 "$NETREF" "${srv[@]}" > "$f.server" 2>&1 & sp=$!
    sleep 0.3
    ip netns exec bwb taskset -c 1 timeout 60 "$NETREF" "$@" > "$f.client" 2>&1; crc=$?
    wait $sp
    return $crc
}
ref() { ref1 "$@" || { say "$1 failed, once more"; mv "$S/$1.client" "$S/$1.try1.client"; ref1 "$@"; }; }

# The latency, bandwidth and pairs tests and their references run ROUNDS times
# (BENCH_WIRE_ROUNDS, default 3; round r > 1's outputs are NAME.r<r>.*): on 2
# vCPUs a single run moves by 20-40 % with where the scheduler puts the
# processes (and the agents), references included; the report takes the
# median of each.
ROUNDS=${BENCH_WIRE_ROUNDS:-3}
rnd() { [ "$1" -gt 1 ] && echo ".r$1"; }
say "host wire: UDP ping-pong ($ROUNDS rounds) and stream references on the veth (CPUs 0, 1)"
for ((r = 1; r <= ROUNDS; r++)); do
    ref "udp.pingpong.2$(rnd $r)" udp-pong $A 18790 -- udp-ping $A 18790 2 20000
    # ib_write_lat's handicap: each side spins on memory that a thread of its
    # own (same CPU) writes when a datagram came
    ref "udp.pingpong_spin.2$(rnd $r)" udp-pong-spin $A 18792 -- udp-ping-spin $A 18792 2 20000
    for m in 1024 4096; do
        ref "udp.stream.$m$(rnd $r)" udp-sink $A 18791 "$BW_D" -- udp-blast $A 18791 $m "$BW_D"
    done
done
# K pairs at once (issue 33): each pair its own server and client, no CPU
# pinning (K processes per side on 2 CPUs), between the same two addresses;
# beside K UDP streams between the same namespaces as the reference.
# multi NAME K SERVER-CMD... -- CLIENT-ARGS...: like pair, K at once
multi() {
    local name=$PFX$1 k=$2 srv=() cli=() sps=() cps=() i; shift 2
    while [ "$1" != -- ]; do srv+=("$1"); shift; done; shift; cli=("$@")
    for ((i = 0; i < k; i++)); do
        side a 0-1; "${P[@]}" $((TO + BW_D + 10)) "${srv[@]}" -p $((port + 1 + i)) > "$S/$name.$i.server" 2>&1 &
        sps+=($!)
    done
    sleep 0.5
    for ((i = 0; i < k; i++)); do
        side b 0-1; "${P[@]}" $((TO + BW_D + 10)) "${srv[@]}" "${cli[@]}" -p $((port + 1 + i)) $A > "$S/$name.$i.client" 2>&1 &
        cps+=($!)
    done
    for ((i = 0; i < k; i++)); do
        wait "${cps[$i]}"; local crc=$?
        wait "${sps[$i]}"; echo "$crc $?" > "$S/$name.$i.rc"
    done
    port=$((port + k))
}
PP_N=${BENCH_WIRE_PAIR_ITERS:-20000}
# wire_pass WHAT BW-SIZES: the latency, bandwidth and pairs runs of one pass
# (PFX, AGENT_ENV); the K UDP streams only in the first pass
wire_pass() {
    local what=$1 sizes=$2 t m s k i t0=$SECONDS
    say "host wire ($what): perftest latency 2 B on rw0 (-n $LAT_N, $ROUNDS rounds)"
    for ((r = 1; r <= ROUNDS; r++)); do
        for t in ib_write_lat ib_send_lat ib_read_lat; do
            pair "$t.2$(rnd $r)" "$TO" $t -d rw0 -x "$G" -s 2 -n "$LAT_N" --
        done
        pair "ib_atomic_lat.8$(rnd $r)" "$TO" ib_atomic_lat -d rw0 -x "$G" -A FETCH_AND_ADD -n "$LAT_N" --
    done
    say "host wire ($what): perftest bandwidth $sizes B, IB MTU 1024 and 4096 (-D $BW_D, $ROUNDS rounds)"
    for ((r = 1; r <= ROUNDS; r++)); do
        for m in 1024 4096; do
            for t in ib_write_bw ib_send_bw ib_read_bw; do
                for s in $sizes; do
                    pair "$t.$s.mtu$m$(rnd $r)" $((TO + BW_D)) $t -d rw0 -x "$G" -s $s -m $m -D "$BW_D" --
                done
            done
        done
    done
    # the pairs are not pinned: through the agent, a new one (started by
    # the first of them) may use both CPUs
    [ -z "$PFX" ] || no_agents 5
    say "host wire ($what): 1, 2 and 4 pairs at once: ib_write_bw 64 KiB (-D $BW_D), ibv_rc_pingpong 4 KiB (-n $PP_N)$([ -z "$PFX" ] && echo ", K UDP streams"), $ROUNDS rounds"
    for ((r = 1; r <= ROUNDS; r++)); do
        for k in 1 2 4; do
            multi "pairs$k.ib_write_bw$(rnd $r)" $k ib_write_bw -d rw0 -x "$G" -s 65536 -m 4096 -D "$BW_D" --
            multi "pairs$k.rc_pingpong$(rnd $r)" $k ibv_rc_pingpong -d rw0 -g "$G" -s 4096 -n "$PP_N" --
            [ -z "$PFX" ] || continue
            for ((i = 0; i < k; i++)); do
                ip netns exec bwa timeout 60 "$NETREF" udp-sink $A $((18700 + i)) "$BW_D" > "$S/pairs$k.udp$(rnd $r).$i.server" 2>&1 &
            done
            sleep 0.3
            for ((i = 0; i < k; i++)); do
                ip netns exec bwb timeout 60 "$NETREF" udp-blast $A $((18700 + i)) 4096 "$BW_D" > "$S/pairs$k.udp$(rnd $r).$i.client" 2>&1 &
            done
            wait
        done
    done
    say "host wire ($what): $((SECONDS - t0)) s"
}
wire_pass "each process its own QPs" "65536 1048576"
# Through the agent (issue 33): each side's programs its clients, from a
# fresh agent on.
if [ -x "$LIBDIR/swrdma/swrdma-wired" ]; then
    no_agents 5
    PFX=agent. AGENT_ENV=(SWRDMA_WIRE_AGENT=1 SWRDMA_WIRED_IDLE_MS=1000)
    pp_n=$PP_N; PP_N=$((PP_N / 10 > 200 ? PP_N / 10 : 200))
    wire_pass "through the agent" "${BENCH_WIRE_AGENT_BW_SIZES:-65536}"
    no_agents 5
    PFX= AGENT_ENV=() PP_N=$pp_n
else
    echo "no agent program $LIBDIR/swrdma/swrdma-wired (make swrdma)" > "$S/agent.skipped"
fi
trap - EXIT
cleanup

say "events: ibv_rc_pingpong -e on swr0 (-n $EV_N) and a pipe ping-pong (CPUs 0, 1)"
taskset -c 0 "$NETREF" pipe-pong 0 1 "$EV_N" > "$S/pipe.pingpong.client" 2>&1
mkdir -p "$S/rts"; chmod 0700 "$S/rts"
ev() {
    local f=$S/rc_pingpong_e sp
    port=$((port + 1))
    env XDG_RUNTIME_DIR="$S/rts" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 \
        taskset -c 0 timeout 60 ibv_rc_pingpong -d swr0 -g 1 -e -s 64 -n "$EV_N" -p $port > "$f.server" 2>&1 & sp=$!
    sleep 0.5
    env XDG_RUNTIME_DIR="$S/rts" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 \
        taskset -c 1 timeout 60 ibv_rc_pingpong -d swr0 -g 1 -e -s 64 -n "$EV_N" -p $port localhost > "$f.client" 2>&1
    echo "$? $(wait $sp; echo $?)" > "$f.rc"
}
ev

# qperf rc_lat on swr0 (it waits in ibv_get_cq_event), same CPUs as the pipe:
# its "latency" is half a round trip.  qperf's own connection setup addresses
# the peer by LID only, which swr0 (a RoCE port, as rxe) refuses unless
# SWRDMA_LID_ROUTING=1 (providers/swrdma/README.md).  The server stays up;
# ended by its pid.
say "events: qperf rc_lat on swr0 (-t $QP_T s, 64 B)"
qp() {
    local f=$S/qperf.rc_lat sp
    port=$((port + 1))
    env XDG_RUNTIME_DIR="$S/rts" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 SWRDMA_LID_ROUTING=1 \
        taskset -c 0 timeout 60 qperf -lp $port > "$f.server" 2>&1 & sp=$!
    sleep 0.5
    env XDG_RUNTIME_DIR="$S/rts" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 SWRDMA_LID_ROUTING=1 \
        taskset -c 1 timeout 60 qperf localhost -lp $port -i swr0:1 -t "$QP_T" -m 64 -vu rc_lat > "$f.client" 2>&1
    echo "$?" > "$f.rc"
    kill $sp 2>/dev/null; wait $sp 2>/dev/null
}
if command -v qperf > /dev/null; then qp; else echo "qperf not installed (apt-get install qperf)" > "$S/qperf.rc_lat.skipped"; fi

# 3. UCX tag_lat (8 B) over rc_verbs on swr0 (issue 25 item 3) beside UCX's
#    shared-memory tag_lat, same CPUs, one after the other.  UCX looks for
#    /dev/infiniband/swr0 (what ibverbs-provider-swrdma's tmpfiles.d entry
#    creates; made here as root if missing, as compat-tests/clients does, and
#    removed again); rc needs ud_verbs as its wire-up ("aux") transport.
uc() {
    local f=$S/$1 sp; shift
    port=$((port + 1))
    env "$@" taskset -c 0 timeout 60 ucx_perftest -p $port > "$f.server" 2>&1 & sp=$!
    sleep 0.5
    env "$@" taskset -c 1 timeout 60 ucx_perftest -p $port -t tag_lat -n "$UCX_N" -w $((UCX_N / 10)) localhost > "$f.client" 2>&1
    echo "$? $(wait $sp; echo $?)" > "$f.rc"
}
if command -v ucx_perftest > /dev/null; then
    say "same machine: ucx_perftest tag_lat, UCX_TLS=sm and rc_verbs on swr0 (-n $UCX_N)"
    made=
    if [ ! -e /dev/infiniband/swr0 ]; then
        mkdir -p -m 0755 /dev/infiniband && ln -s /dev/null /dev/infiniband/swr0 && made=1
    fi
    uc ucx.sm.tag_lat UCX_TLS=sm
    uc ucx.rc_verbs.tag_lat XDG_RUNTIME_DIR="$S/rts" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 \
        UCX_NET_DEVICES=swr0:1 UCX_TLS=rc_verbs,ud_verbs:aux,self
    [ -n "$made" ] && rm -f /dev/infiniband/swr0 && rmdir /dev/infiniband 2>/dev/null
    # what swr0 itself takes one way (the floor under UCX's rc_verbs figure)
    f=$S/swr0.ib_send_lat.8
    port=$((port + 1))
    env XDG_RUNTIME_DIR="$S/rts" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 \
        taskset -c 0 timeout 60 ib_send_lat -d swr0 -x 1 -s 8 -n 20000 -p $port > "$f.server" 2>&1 & sp=$!
    sleep 0.5
    env XDG_RUNTIME_DIR="$S/rts" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=swr0 \
        taskset -c 1 timeout 60 ib_send_lat -d swr0 -x 1 -s 8 -n 20000 -p $port localhost > "$f.client" 2>&1
    echo "$? $(wait $sp; echo $?)" > "$f.rc"
else
    echo "ucx_perftest not installed (apt-get install ucx-utils)" > "$S/ucx.skipped"
fi
exit 0
