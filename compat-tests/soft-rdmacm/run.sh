#!/bin/bash
# compat-tests/soft-rdmacm: Debian bookworm's unchanged rdma_cm programs on
# the software device swr0 (providers/swrdma), through the user-space
# rdma_cm of build/lib/libswrdma-ucma.so (a model of the kernel's
# /dev/infiniband/rdma_cm under Debian's unmodified librdmacm 44), which the
# wrapper build/bin/swrdma-cm PROGRAM ARGS... puts in LD_PRELOAD.  Nothing
# else is changed: our libibverbs (LD_LIBRARY_PATH), RDMAV_SOFT_DEVICES=swr0,
# a fresh private XDG_RUNTIME_DIR.  What it shows, one line per program:
#   * RC connections over RDMA_PS_TCP: address and route resolution,
#     connect/accept, disconnect (rping over 127.0.0.1 and ::1, its RDMA
#     READs and WRITEs compared by -V; ucmatose, 20 connections at once,
#     sends both ways; rdma_server/rdma_client, the synchronous
#     rdma_getaddrinfo + rdma_create_ep + rdma_get_request API;
#     rdma_xserver/rdma_xclient -c r; cmtime, 200 connections timed step by
#     step);
#   * UD over RDMA_PS_UDP (udaddy: SIDR, the remote QPN, qkey and address
#     handle handed to the program, datagrams both ways);
#   * rsockets: rstream and riostream (librdmacm's rsocket API, data
#     verified; rdma_getaddrinfo; riostream's RDMA writes into riomap'd
#     memory), and an unchanged sockets program (rsecho.c, here) under
#     librspreload.so;
#   * real programs that connect with rdma_cm: perftest -R (send, write and
#     read, latency and bandwidth), qperf -cm1 (RC), fio's rdma engine
#     (RDMA WRITE and READ);
#   * rdma-core's own Python tests, Debian's python3-pyverbs test_rdmacm
#     (pyverbs-rdmacm.sh; root, for a private mount namespace), and trixie's
#     and sid's (56.1, 65.0: their python3, pyverbs, librdmacm and tests in
#     their roots of compat-tests/roots.sh, over our library and
#     interposer; pyverbs-rdmacm-root.sh);
#   * no process outlives its test (none is left in the process group of
#     the test's `timeout`) or the suite (none carries its XDG_RUNTIME_DIR).
# Every client addresses 127.0.0.1 (rping also ::1) and every server that
# lets itself be told binds 127.0.0.1; rdma_xserver, perftest -R (its
# --source_ip is taken for the raw Ethernet option of the same name),
# qperf -cm1 and fio's rdma server (its bindname is read as one character)
# bind the wildcard address.
# Each program runs under `timeout` (30 s for a client; a server still there
# 5 s after its client is killed: a FAIL, never a hang); the whole suite
# takes about 20 s when nothing can connect, about two minutes when all
# passes (20 programs, a second's head start for each server).
#
# Input: OUR_LIB (default build/lib/libibverbs.so.1), with the provider in
# $(dirname OUR_LIB)/libibverbs/ and libswrdma-ucma.so beside OUR_LIB;
# SWRDMA_CM (default build/bin/swrdma-cm), SWRDMA_UCMA_LIB (default
# $(dirname OUR_LIB)/libswrdma-ucma.so) and RSPRELOAD (librdmacm1's
# librspreload.so) override the paths.
# Run it alone on the software device: flock /tmp/suites.lock compat-tests/soft-rdmacm/run.sh
#
# CM_WIRE=1 (compat-tests/wire-rdmacm): the same programs on the wire device
# rw0 between two network namespaces this suite makes (wra: 169.254.80.1 on
# wra0, wrb: 169.254.80.2 on wrb0, a veth pair; link-local only), every
# server in wrb, every client in wra, each side with its own private
# directory; the CM's MADs cross as RoCE v2 on QP1, through each side's
# wire agent (swrdma-wired, providers/swrdma/wired/src/qp1.rs).  Needs root.
# In this mode only, between the namespaces too: libfabric's verbs
# provider (fi_pingpong -p verbs -e msg, and -p "verbs;ofi_rxm" -e rdm,
# data checked), UCX's rdmacm connection manager (io_demo -q over
# rc_verbs), both through swrdma-cm; private-view.sh gives fi_pingpong's
# server a "localhost" that is its veth address and UCX a
# /dev/infiniband/rw0.  test_rdmacm runs on rw0 with server and client in
# wra (its veth address, the GID index of ::ffff:169.254.80.1), its
# multicast tests included.
# rping over IPv6 uses the server's link-local address with each side's
# interface as its scope (-a fe80::...%wrb0 / %wra0).
# CM_AGENT=1 (with CM_WIRE=1): every process's wire contexts through its
# namespace's transport agent (SWRDMA_WIRE_AGENT=1, issue 33); a try-out
# of that mode, not part of `make test`.
set -u
. "$(dirname "$0")/../lib.sh"
WIRE=${CM_WIRE:-0}
if [ "$WIRE" = 1 ]; then suite_begin wire-rdmacm --clean; else suite_begin soft-rdmacm --clean; fi
OUT=$SCRATCH
HERE=$(cd "$(dirname "$0")" && pwd)
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
CM=$(abspath "${SWRDMA_CM:-build/bin/swrdma-cm}")
UCMA=$(abspath "${SWRDMA_UCMA_LIB:-$LIBDIR/libswrdma-ucma.so}")
RSPRELOAD=${RSPRELOAD:-$(dpkg -L librdmacm1 2>/dev/null | grep -m1 '/rsocket/librspreload\.so$')}
RSPRELOAD=${RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
need "$LIBDIR/libibverbs/libswrdma-rdmav34.so=run: make swrdma" "$CM=run: make swrdma" "$UCMA=run: make swrdma" \
    rping=rdmacm-utils ucmatose=rdmacm-utils udaddy=rdmacm-utils rdma_server=rdmacm-utils \
    rdma_client=rdmacm-utils rdma_xserver=rdmacm-utils rdma_xclient=rdmacm-utils cmtime=rdmacm-utils \
    rstream=rdmacm-utils riostream=rdmacm-utils "$RSPRELOAD=librdmacm1" \
    /usr/include/rdma/rsocket.h=librdmacm-dev gcc=gcc ib_send_lat=perftest ib_write_bw=perftest \
    qperf=qperf fio=fio ss=iproute2 timeout=coreutils stdbuf=coreutils

RT="$OUT/rt"
rm -rf "$RT" "$RT-a" "$RT-b"; mkdir -p -m 0700 "$RT" "$RT-a" "$RT-b"
export XDG_RUNTIME_DIR="$RT"
export LD_LIBRARY_PATH="$LIBDIR"
export RDMAV_SOFT_DEVICES=swr0
unset RDMAV_DRIVERS IBV_DRIVERS LD_PRELOAD
# The device, the server's address, and the command prefixes of the
# servers (CMS) and clients (CMC): the swrdma-cm wrapper, in wire mode
# inside the namespaces.
DEV=swr0 SA=127.0.0.1 CA=127.0.0.1
CMS=("$CM") CMC=("$CM") ENS=() ENC=()
if [ "$WIRE" = 1 ]; then
    [ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (ip netns)"
    need ip=iproute2
    DEV=rw0 SA=169.254.80.2 CA=169.254.80.1
    wire_down() { ip netns del wra 2>/dev/null; ip netns del wrb 2>/dev/null; }
    # the UDP counters of both namespaces (InErrors, RcvbufErrors: a lost
    # datagram), for a NOTE
    wire_udp() {
        local n
        for n in wra wrb; do
            echo -n "; $n $(ip netns exec $n awk '/^Udp:/' /proc/net/snmp | paste -d' ' - - | awk '{ for (i = 2; i <= 9; i++) printf "%s=%s ", $i, $(i + 10) }')"
        done
    }
    wire_down
    veth_netns wra wra0 169.254.80.1 wrb wrb0 169.254.80.2 ||
        fail_early netns "cannot create the namespaces and the veth pair"
    # The agents end 10 s after their last client (a peer's late DREQ still
    # finds one to answer it; the QP1 check below waits for their counters).
    AGENT_ENV=()
    [ "${CM_AGENT:-0}" = 1 ] && AGENT_ENV=(SWRDMA_WIRE_AGENT=1)
    ENS=(ip netns exec wrb env XDG_RUNTIME_DIR="$RT-b" RDMAV_SOFT_DEVICES=rw0@wrb0 SWRDMA_WIRED_IDLE_MS=10000
         SWRDMA_WIRED_LOG="$OUT/agent-b.log" "${AGENT_ENV[@]}")
    ENC=(ip netns exec wra env XDG_RUNTIME_DIR="$RT-a" RDMAV_SOFT_DEVICES=rw0@wra0 SWRDMA_WIRED_IDLE_MS=10000
         "${AGENT_ENV[@]}")
    CMS=("${ENS[@]}" "$CM") CMC=("${ENC[@]}" "$CM")
fi

TO=30       # seconds for one program
GRACE=5     # seconds a server may take to end once its client has ended
# On the wire a CM message can be lost (a UDP datagram: a full queue on the
# way), and the CM's own retransmission is what recovers it: 4.8 s after
# the first send for a DREQ (the kernel's timeout for RoCE: twice the
# packet life time 2^16 x 4.096 us, plus the response timeout 2^20 x
# 4.096 us x 2^1), so a server whose last DREQ or DREP was lost ends 5 s or
# more after its client, and it must still end by itself: 15 s there, and
# a server that took more than 3 s is named in a NOTE line.
[ "$WIRE" = 1 ] && GRACE=15
# A process still running (not a zombie).
alive() {
    local l f
    read -r l 2>/dev/null <"/proc/$1/stat" || return 1
    f=(${l##*) }) # state ppid pgrp ...
    [ "${f[0]}" != Z ]
}
# The processes (zombies left out) of process group $1, one pid a line.
members() {
    local pg=$1 st l f p
    for st in /proc/[0-9]*/stat; do
        read -r l 2>/dev/null <"$st" || continue
        f=(${l##*) })
        [ "${f[2]}" = "$pg" ] && [ "${f[0]}" != Z ] && { p=${st#/proc/}; echo "${p%/stat}"; }
    done
}
# Ends the `timeout` of pid $1 (it passes the TERM on to the program and
# the program's process group, whose leader it is), KILLs it after 3 s.
stop() {
    kill -TERM "$1" 2>/dev/null
    local i
    for i in $(seq 30); do alive "$1" || break; sleep 0.1; done
    alive "$1" && kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
# stray TAG PID: notes PID (and its command line) in $strays, KILLs it.
strays="" nstrays=0
stray() {
    local cmd
    cmd=$(tr '\0' ' ' <"/proc/$2/cmdline" 2>/dev/null | cut -c1-50)
    strays="$strays; $1: $2 (${cmd% })"
    nstrays=$((nstrays + 1))
    kill -KILL "$2" 2>/dev/null
}
# sweep LOG PGID...: a process still in the process group of a test's
# `timeout` once that has ended (the program's child, a daemon it started)
# gets 1 s, then is a stray.
sweep() {
    local log=$1 pg p i left
    shift
    for i in $(seq 10); do
        left=""
        for pg; do left="$left $(members "$pg")"; done
        [ -z "${left// /}" ] && return 0
        sleep 0.1
    done
    for p in $left; do stray "$log" "$p"; done
}
# The server and client of the test under way (reaped ones are forgotten:
# their numbers may be another process's by now).
SPID="" CPID=""
cleanup() {
    local p
    for p in $CPID $SPID; do alive "$p" && stop "$p"; done
    [ -n "$CPID$SPID" ] && sweep interrupted $CPID $SPID
    CPID="" SPID=""
    return 0
}
trap 'cleanup; [ "$WIRE" = 1 ] && wire_down' EXIT
trap 'exit 130' INT TERM

[ "$WIRE" = 1 ] || wire_udp() { :; }
pin_s=(); pin_c=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_s=(taskset -c 0); pin_c=(taskset -c 1); fi

# Waits (10 s at most) until a server listens on TCP port $1.
wait_listen() {
    local i
    for i in $(seq 100); do
        "${ENS[@]}" ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
        sleep 0.1
    done
    return 1
}

# Waits (10 s at most) until rdma_cm port $1 of port space $2 (RDMA_PS_TCP,
# 0106, when not given) is held by a process of ours on the device (its
# abstract socket swrdma-cm/<uid>/<ps>/<port> exists: the server bound it;
# it listens a moment later), then 0.2 s.
wait_cm_port() {
    local i
    for i in $(seq 100); do
        "${ENS[@]}" cat /proc/net/unix 2>/dev/null | grep -q "@swrdma-cm/$(id -u)/${2:-0106}/$1\$" && { sleep 0.2; return 0; }
        sleep 0.1
    done
    return 1
}

# pair LOG MODE SERVER... -- CLIENT...: the server (CPU 0) in the
# background, the client (CPU 1) a second later (MODE wait...), once TCP
# port $WAITPORT listens (MODE tcp...) or once rdma_cm port $WAITPORT is
# bound on swr0 (MODE cm...); the client under `timeout -k 5 $TO`,
# the server under `timeout -k 5 $((TO + 10))`; stdin /dev/null, output
# line-buffered (stdbuf: what a killed program printed is kept) in
# $OUT/LOG.server and $OUT/LOG.client.  Sets crc (the client's exit
# status), src (the server's; 'killed' when it was still there $GRACE s
# after its client ended, at once for a MODE ending in ",persist": a server
# that never ends by itself), s_alive (1 when the server was still there
# when its client ended).  Each command is a full command line: the caller
# puts $CM (or env LD_PRELOAD=...) before the program.
pair() {
    local mode=$2 grace=$GRACE
    slog=$OUT/$1.server clog=$OUT/$1.client
    shift 2
    case $mode in *,persist) grace=0 ;; esac
    local srv=() cli=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    "${pin_s[@]}" timeout -k 5 $((TO + 10)) stdbuf -oL -eL "${srv[@]}" </dev/null >"$slog" 2>&1 &
    SPID=$!
    case $mode in
        tcp*) wait_listen "$WAITPORT" ;;
        cm*) wait_cm_port "$WAITPORT" "${WAITPS:-0106}" || echo "NOTE $(basename "$slog" .server): rdma_cm port $WAITPORT not bound after 10 s" ;;
        *) sleep 1 ;;
    esac
    "${pin_c[@]}" timeout -k 5 "$TO" stdbuf -oL -eL "${cli[@]}" </dev/null >"$clog" 2>&1 &
    CPID=$!
    wait "$CPID"; crc=$?
    local c=$CPID
    CPID=""
    s_alive=0; alive "$SPID" && s_alive=1
    local i
    for i in $(seq $((grace * 10))); do alive "$SPID" || break; sleep 0.1; done
    [ "$s_alive" = 1 ] && [ "${i:-0}" -gt 30 ] &&
        echo "NOTE $(basename "$slog" .server): the server ended $((i / 10)).$((i % 10)) s after its client$(wire_udp)"
    if alive "$SPID"; then
        stuck "$SPID" >"$slog.stuck"
        stop "$SPID"; src=killed
    else
        wait "$SPID"; src=$?
    fi
    sweep "$(basename "$slog" .server)" "$SPID" "$c"
    SPID=""
}

# stuck PID: where the processes under PID (a test's `timeout`) are, one
# line each: pid, name, and per thread its kernel wait channel and system
# call number (what a server that did not end was doing).
stuck() {
    local p t l kids
    kids=$(cat /proc/"$1"/task/*/children 2>/dev/null)
    for p in $kids; do
        l="$p $(cat /proc/"$p"/comm 2>/dev/null):"
        for t in /proc/"$p"/task/*; do
            l="$l $(cat "$t"/comm 2>/dev/null)=$(cat "$t"/wchan 2>/dev/null)/$(cut -d' ' -f1 "$t"/syscall 2>/dev/null)"
        done
        echo "$l"
        stuck "$p"
    done
}

# The first line of LOG... that looks like an error (else the last line of
# the first non-empty LOG), one line, 200 characters at most.
first_err() {
    local f l
    l=$(grep -h -m1 -iE 'error|fail|unable|couldn|not supported|invalid|refused|mismatch|no rdma|bogus|timed? ?out' "$@" 2>/dev/null | head -n1)
    if [ -z "$l" ]; then
        for f; do [ -s "$f" ] && { l=$(tail -n1 "$f"); break; }; done
    fi
    printf '%s' "${l:-no output}" | tr -d '\r' | sed 's/^[[:space:]]*//' | cut -c1-200
}
# fail NAME, with both exit statuses and the first error line of the logs.
fail_pair() { # name [why]
    local st=""
    [ "$src" = killed ] && st=" | server's last line: $(tail -n1 "$slog" | cut -c1-120) | where it was: $(tr '\n' ';' <"$slog.stuck" 2>/dev/null | cut -c1-400)$(wire_udp)"
    fail "$1" "server rc=$src client rc=$crc${2:+, $2}: $(first_err "$clog" "$slog")$st"
}
# The same reason, as text.
fail_pair_why() { echo "server rc=$src client rc=$crc: $(first_err "$clog" "$slog")"; }
ok_rc() { [ "$src" = 0 ] && [ "$crc" = 0 ]; }

port=20600
nextport() { port=$((port + 1)); P=$port; }

# again PATTERN FN: runs FN (a pair on the next port) again while its
# client's log shows PATTERN, a start-up race of the program's own (see
# where it is used), three times in all at most; sets tries.
again() {
    tries=0
    while :; do
        tries=$((tries + 1))
        "$2"
        [ $tries -lt 3 ] && grep -q "$1" "$clog" || break
    done
}

# --- rping: RC, RDMA READ and WRITE each ping, -V compares ------------------------
# -v prints, per ping, "ping data: rdma-ping-N: ..." on the client and
# "server ping data: rdma-ping-N: ..." on the server.
rping_test() { # address log-name count
    local a=$1 n=$3 ca=${4:-$1} name="rping -v -V -C $3 -a $1 $DEV"
    nextport
    WAITPORT=$P
    pair "$2" cm "${CMS[@]}" rping -s -a "$a" -p $P -v -V -C "$n" -- "${CMC[@]}" rping -c -a "$ca" -p $P -v -V -C "$n"
    local c s
    c=$(grep -cE '^ping data: rdma-ping-[0-9]+: ' "$clog")
    s=$(grep -cE '^server ping data: rdma-ping-[0-9]+: ' "$slog")
    if ok_rc && [ "$c" -eq "$n" ] && [ "$s" -eq "$n" ] && ! grep -q 'data mismatch' "$clog"; then
        pass "$name ($c pings, each compared)"
    else
        fail_pair "$name" "$c of $n pings on the client, $s on the server"
    fi
}
rping_test $SA rping 100
if [ "$WIRE" = 1 ]; then
    # IPv6 between the namespaces: the server's link-local address, with
    # each side's interface as its scope (rping's -a takes addr%if, as
    # getaddrinfo does); once both sides' are out of duplicate address
    # detection (a client whose own is still tentative has no route:
    # ENETUNREACH)
    b6="" a6=""
    ll6() { ip -n "$1" -6 addr show dev "$2" scope link 2>/dev/null | awk '/inet6/ && !/tentative/ { sub("/.*", "", $2); print $2; exit }'; }
    for i in $(seq 50); do
        b6=$(ll6 wrb wrb0) a6=$(ll6 wra wra0)
        [ -n "$b6" ] && [ -n "$a6" ] && break
        sleep 0.1
    done
    if [ -z "$b6" ] || [ -z "$a6" ]; then
        fail "rping -v -V -C 10 IPv6 $DEV" "no usable link-local address: wrb0: $(ip -n wrb -6 addr show dev wrb0 | tr '\n' ' '); wra0: $(ip -n wra -6 addr show dev wra0 | tr '\n' ' ')"
    else
        rping_test "$b6%wrb0" rping-ipv6 10 "$b6%wra0"
    fi
else
    rping_test ::1 rping-ipv6 10
fi

# --- ucmatose: 20 RC connections, 50 sends each way on each ----------------------
name="ucmatose -c 20 -C 50 $DEV"
nextport
WAITPORT=$P
pair ucmatose cm "${CMS[@]}" ucmatose -b $SA -p $P -c 20 -C 50 -- "${CMC[@]}" ucmatose -s $SA -p $P -c 20 -C 50
# (it prints "test complete" whatever happened; "return status 0" is the verdict)
if ok_rc && grep -q '^data transfers complete' "$clog" && grep -q '^data transfers complete' "$slog" &&
    grep -q '^return status 0' "$clog" && grep -q '^return status 0' "$slog" && grep -q '^disconnected' "$slog" &&
    ! grep -q 'failing connection request' "$slog"; then
    pass "$name (20 connections, 1000 messages each way, disconnected)"
else
    fail_pair "$name"
fi

# --- udaddy: UD over RDMA_PS_UDP (SIDR); its service port is fixed (7174) -------------
name="udaddy -C 10 $DEV"
WAITPORT=7174 WAITPS=0111 pair udaddy cm "${CMS[@]}" udaddy -b $SA -C 10 -- "${CMC[@]}" udaddy -s $SA -C 10
if ok_rc && grep -q '^data transfers complete' "$clog" && grep -q '^data transfers complete' "$slog" &&
    grep -q '^return status 0' "$clog" && grep -q '^return status 0' "$slog"; then
    pass "$name (10 datagrams each way)"
else
    fail_pair "$name"
fi

# --- mckey: multicast (JOIN_MCAST, MULTICAST_JOIN's address handle, ibv_attach_mcast) -----
# Two receivers joined to 239.1.1.1 (one started by hand, one as the pair's
# server), then a sender: each receiver must take all 10 datagrams.  On
# rw0 the receivers are in one namespace, the sender in the other, joined
# with its own address: the datagrams cross the veth as IP multicast
# (239.1.1.1:4791, QPN 0xffffff) and each receiving process takes its copy
# from its group socket (providers/swrdma/wired/src/wire/mcast.rs).
name="mckey -C 10 $DEV (two receivers, one sender)"
"${CMS[@]}" timeout -k 5 "$TO" stdbuf -oL mckey -m 239.1.1.1 -b $SA -C 10 </dev/null >"$OUT/mckey.receiver2" 2>&1 &
r2=$!
pair mckey wait "${CMS[@]}" mckey -m 239.1.1.1 -b $SA -C 10 -- "${CMC[@]}" mckey -m 239.1.1.1 -b $CA -s -C 10
wait "$r2"; r2rc=$?
if ok_rc && [ "$r2rc" = 0 ] && grep -q '^data transfers complete' "$slog" && grep -q '^data transfers complete' "$OUT/mckey.receiver2" &&
    grep -q '^return status 0' "$clog" && grep -q '^return status 0' "$slog" && grep -q '^return status 0' "$OUT/mckey.receiver2"; then
    pass "$name (each receiver took its 10 datagrams)"
else
    fail_pair "$name" "second receiver rc=$r2rc"
fi

# --- rdma_server / rdma_client: rdma_getaddrinfo, rdma_create_ep, synchronous ids ---------
name="rdma_server/rdma_client -s $SA $DEV"
nextport
WAITPORT=$P
pair rdma_server cm "${CMS[@]}" rdma_server -s $SA -p $P -- "${CMC[@]}" rdma_client -s $SA -p $P
if ok_rc && grep -q '^rdma_server: end 0' "$slog" && grep -q '^rdma_client: end 0' "$clog"; then
    note=""
    grep -q "doesn't support IBV_SEND_INLINE" "$slog" "$clog" && note=", without inline sends"
    pass "$name (a send each way$note)"
else
    fail_pair "$name"
fi

# --- rdma_xserver / rdma_xclient -c r (RC; XRC is not the software device's) ----------
name="rdma_xserver/rdma_xclient -c r $DEV"
nextport
WAITPORT=$P
pair rdma_xserver cm "${CMS[@]}" rdma_xserver -p $P -c r -- "${CMC[@]}" rdma_xclient -s $SA -p $P -c r
if ok_rc && grep -q 'rdma_xserver: end 0' "$slog" && grep -q 'rdma_xclient: end 0' "$clog"; then
    pass "$name (a send, received)"
else
    fail_pair "$name"
fi

# --- cmtime: 200 connections, each step timed (the server runs until killed) --------------
name="cmtime -c 200 $DEV"
nextport
WAITPORT=$P
pair cmtime cm,persist "${CMS[@]}" cmtime -b $SA -p $P -- "${CMC[@]}" cmtime -s $SA -p $P -c 200
# step              total ms     max ms     min us  us / conn
steps=$(grep -E '^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy) *: +[0-9.]+' "$clog")
nsteps=$(printf '%s\n' "$steps" | grep -c .)
if [ "$crc" = 0 ] && [ "$s_alive" = 1 ] && [ "$nsteps" -eq 7 ] &&
    ! grep -qiE 'error|failure|failing|event: ' "$clog" "$slog"; then
    conn=$(printf '%s\n' "$steps" | awk -F: '$1 ~ /^connect/ {split($2, f, " "); print f[1]}')
    pass "$name (7 steps timed; connect: $conn ms for 200)"
else
    [ "$s_alive" = 1 ] || src="ended before its client ($src)"
    fail "$name" "server: $src, client rc=$crc, $nsteps of 7 steps timed: $(first_err "$clog" "$slog")"
fi

# --- rstream, riostream: rsockets; custom sizes so that the exit status is the test's ------
# Both sides print one "custom" row: name bytes xfers iters total time Gb/sec usec/xfer.
# (rstream -T s is the kernel's TCP, no rsocket: not here.  -T r resolves
# with rdma_getaddrinfo.  Not -T a either: its do_poll() gives up on POLLHUP
# even with data still to read, and the server's disconnect may well be
# there before the client's last poll.)
rs_test() { # program log-suffix args...
    local prog=$1 tag=$2; shift 2
    local name="$prog $* $DEV"
    nextport
    WAITPORT=$P
    pair "$prog$tag" cm "${CMS[@]}" "$prog" -b $SA -p $P "$@" -- "${CMC[@]}" "$prog" -s $SA -p $P "$@"
    local row
    row=$(grep -E '^custom +' "$clog" | head -n1)
    if ok_rc && [ -n "$row" ] && grep -qE '^custom +' "$slog" && ! grep -q 'verification failed' "$clog" "$slog"; then
        set -- $row
        pass "$name ($5 moved in $6, $7 Gb/s, $8 us/xfer, verified)"
    else
        fail_pair "$name"
    fi
}
rs_test rstream "" -T v -S 4096 -C 1000 -I 2
rs_test rstream "-rgai" -T r -T v -S 65536 -C 50 -I 2
rs_test riostream "" -T v -S 4096 -C 1000 -I 2

# --- an unchanged sockets program under librspreload.so ------------------------------------
name="rsecho (a sockets program) under LD_PRELOAD=librspreload.so, 256 KiB echoed $DEV"
if gcc -O2 -Wall -o "$OUT/rsecho" compat-tests/soft-rdmacm/rsecho.c 2>"$OUT/rsecho-build.err"; then
    nextport
    PRE=(env LD_PRELOAD="$UCMA:$RSPRELOAD")
    WAITPORT=$P
    pair rsecho cm "${ENS[@]}" "${PRE[@]}" "$OUT/rsecho" server $P 262144 $SA -- "${ENC[@]}" "${PRE[@]}" "$OUT/rsecho" client $P 262144 $SA
    if ok_rc && grep -q 'checked and echoed on an rsocket' "$slog" && grep -q 'echoed back and checked on an rsocket' "$clog"; then
        pass "$name (rsockets on both sides, data compared)"
    else
        fail_pair "$name"
    fi
else
    fail "$name" "rsecho.c does not build: $(head -n1 "$OUT/rsecho-build.err")"
fi

# --- perftest -R: the test QPs (and perftest's own exchange) connected by rdma_cm ------------
# The result row: #bytes #iterations, then the figures.
for t in ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw; do
    name="$t -R -n 1000 $DEV"
    # perftest connects twice (its own exchange, then the test QPs); its
    # client's second REQ can come before the server listens again (the
    # server destroys its first listener and makes a new one): REJECTED 8,
    # as the kernel's CM answers a REQ for a port nobody listens on, and
    # perftest's client then ends (with a crash in its error path).  That
    # race is perftest's: the pair runs again, up to three times in all,
    # and the PASS line says how many it took.
    perf_once() {
        nextport
        WAITPORT=$P
        pair "$t" cm "${CMS[@]}" $t -d $DEV -R -F -p $P -n 1000 -- "${CMC[@]}" $t -d $DEV -R -F -p $P -n 1000 $SA
    }
    again 'RDMA_CM_EVENT_REJECTED; error: 8' perf_once
    [ $tries -gt 1 ] && name="$name (run $tries times: the client's second REQ came before the server's second listen)"
    row=$(grep -E '^ *[0-9]+ +1000 +[0-9.]+' "$clog" | head -n1)
    if ok_rc && [ -n "$row" ] && grep -q 'Data ex. method : rdma_cm' "$clog"; then
        set -- $row
        case $t in
            *_lat) pass "$name ($1 B: t_typical $5 us, t_avg $6 us)" ;;
            *) pass "$name ($1 B: $4 MB/s average)" ;;
        esac
    else
        why=""; [ -n "$row" ] || why="no result row"
        fail_pair "$name" "$why"
    fi
done

# --- qperf -cm1: qperf's TCP control socket, RC QPs connected by rdma_cm -------------------
# (qperf 0.4.11 uses the CM for RC tests only: for UD ones it turns -cm1 off
# itself and addresses by LID, see compat-tests/clients; so no ud_* here.)
QT="rc_bw rc_lat rc_rdma_read_bw rc_rdma_write_lat"
name="qperf -cm1 -t 2 $QT $DEV"
# qperf's server sends its client the port of each test's listener before
# it listens: a REQ that comes first is answered REJ 8, as the kernel's CM
# answers it, and the client ends ("Event rejected").  As perftest's race
# above, the pair runs again, three times at most, and the line says so.
qperf_once() {
    nextport
    WAITPORT=$P
    # shellcheck disable=SC2086
    pair qperf tcp,persist "${CMS[@]}" qperf -lp $P -- "${CMC[@]}" qperf $SA -lp $P -cm1 -t 2 $QT
}
again 'unexpected event from RDMA CM: Event rejected' qperf_once
[ $tries -gt 1 ] && name="$name (run $tries times: a REQ came before the server's listen)"
figs="" missing=""
for q in $QT; do
    f=$(awk -v t="$q:" '$1 == t {getline; if ($2 == "=") print $1 "=" $3 $4}' "$clog")
    if [ -n "$f" ]; then figs="$figs $q $f"; else missing="$missing $q"; fi
done
if [ "$crc" = 0 ] && [ "$s_alive" = 1 ] && [ -z "$missing" ] && ! grep -qiE 'failed|error' "$clog"; then
    pass "$name (${figs# })"
else
    [ "$s_alive" = 1 ] || src="ended before its client ($src)"
    fail "$name" "server: $src, client rc=$crc, no figure for:${missing:- (none)}: $(first_err "$clog" "$slog")"
fi

# --- fio's rdma engine: the server is the reader (rw=read), the client the writer ------------
for verb in write read; do
    name="fio ioengine=rdma verb=$verb bs=4k size=4m $DEV"
    nextport
    WAITPORT=$P
    pair "fio-$verb" cm "${CMS[@]}" fio --name=server --ioengine=rdma --port=$P --rw=read --bs=4k --size=4m --iodepth=16 \
        -- "${CMC[@]}" fio --name=client --ioengine=rdma --hostname=$SA --port=$P --verb=$verb --rw=write \
        --bs=4k --size=4m --iodepth=4
    bw=$(grep -oE 'WRITE: bw=[^ ,]+' "$clog" | head -n1)
    if ok_rc && grep -q 'err= 0' "$clog" && grep -q 'err= 0' "$slog" && [ -n "$bw" ] &&
        grep -qE 'WRITE: .*io=4096KiB' "$clog"; then
        pass "$name (4 MiB, ${bw#WRITE: })"
    else
        fail_pair "$name"
    fi
done

# --- libfabric's verbs provider: fi_pingpong, MSG endpoint and RDM over it (ofi_rxm) ---------------
# (wire mode: the provider finds a MSG device by rdma_bind_addr on each
# address of the machine's interfaces other than lo, which swr0 does not
# answer for; see compat-tests/clients.)  fi_pingpong's server has no
# option for its own address and the provider binds its passive endpoint
# to "localhost": in the server's namespace that is made 169.254.80.2
# (private-view.sh --localhost; with lo's 127.0.0.1 both our rdma_cm and
# the kernel's answer ENODEV).  -c: each message's data is checked on
# arrival, a mismatch ends the program with an error; the control port
# (TCP, -B/-P) carries only names and counts.  Two sizes each: 64 B (the
# inline/inject path) and 1 MiB (a message of 1024 packets).
if [ "$WIRE" = 1 ]; then
    for v in "verbs msg" "verbs;ofi_rxm rdm"; do
        set -- $v; prov=$1 ep=$2
        name="fi_pingpong -p \"$prov\" -e $ep -d rw0 -c $DEV"
        if ! command -v fi_pingpong >/dev/null; then
            skip "$name" "fi_pingpong missing (libfabric-bin)"
            continue
        fi
        rows="" why=""
        for r in "64 1000" "1048576 20"; do
            set -- $r; sz=$1 it=$2
            nextport
            WAITPORT=$P
            pair "fi_pingpong-$ep-$sz" tcp "${ENS[@]}" unshare -m bash "$HERE/private-view.sh" --localhost $SA \
                "$CM" fi_pingpong -p "$prov" -e $ep -d rw0 -B $P -I $it -S $sz -c \
                -- "${CMC[@]}" fi_pingpong -p "$prov" -e $ep -d rw0 -P $P -I $it -S $sz -c $SA
            # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec; "=N": every message acknowledged
            row=$(grep -E '^[0-9]+[kmg]? ' "$clog" | tail -n1)
            set -- $row - - - - - - - -
            if ok_rc && [ -n "$row" ] && [ "$3" = "=$2" ] && grep -qE '^[0-9]+[kmg]? ' "$slog"; then
                rows="$rows, $1 x $2: $7 us/xfer, $6 MB/s"
            else
                why="$sz B: $(fail_pair_why)"
                break
            fi
        done
        if [ -z "$why" ]; then
            pass "$name (size x round trips: ${rows#, }; data checked)"
        else
            fail "$name" "$why"
        fi
    done
fi

# --- UCX's rdmacm connection manager: io_demo over rc_verbs ----------------------------------------
# (wire mode; compat-tests/clients has it on swr0.)  Only rdmacm may carry
# the connection (UCX_SOCKADDR_TLS_PRIORITY=rdmacm: the server is waited
# for on its rdma_cm port, not a TCP one), only rc_verbs on rw0 the data
# (UCX_TLS, UCX_NET_DEVICES; both sides' ep_cfg lines must say so); -q
# checks every transaction's data.  UCX wants /dev/infiniband/rw0
# (private-view.sh --dev).  io_demo's server runs until it is killed.
if [ "$WIRE" = 1 ]; then
    name="UCX rdmacm connection manager: io_demo -q over rc_verbs/rw0:1, client in wra to $SA"
    if ! command -v io_demo >/dev/null; then
        skip "$name" "io_demo missing (ucx-utils)"
    else
        UX=(env UCX_TLS=rc_verbs,self UCX_SOCKADDR_TLS_PRIORITY=rdmacm UCX_NET_DEVICES=rw0:1 UCX_LOG_LEVEL=info
            UCX_WARN_UNUSED_ENV_VARS=n)
        nextport
        WAITPORT=$P
        pair io_demo cm,persist "${ENS[@]}" "${UX[@]}" unshare -m bash "$HERE/private-view.sh" --dev rw0 "$CM" io_demo -p $P -q \
            -- "${ENC[@]}" "${UX[@]}" unshare -m bash "$HERE/private-view.sh" --dev rw0 "$CM" io_demo -p $P -q -i 2000 -l 5s $SA
        tot=$(grep -oE 'total:[0-9]+ \| read' "$clog" | tail -n1 | grep -oE '[0-9]+')
        if [ "$crc" = 0 ] && [ "$s_alive" = 1 ] && grep -q 'Connected to server' "$clog" &&
            grep -q "Client exit with status 'OK'" "$clog" && [ "${tot:-0}" -gt 0 ] &&
            grep -q 'ep_cfg.*tag(rc_verbs/rw0:1)' "$clog" && grep -q 'ep_cfg.*tag(rc_verbs/rw0:1)' "$slog"; then
            pass "$name ($tot operations, data checked)"
        else
            [ "$s_alive" = 1 ] || src="ended before its client ($src)"
            fail "$name" "server: $src, client rc=$crc, ${tot:-0} operations: $(first_err "$clog" "$slog")"
        fi
    fi
fi

# --- QP1 of a wire device against a hostile host ----------------------------------------------
# From the client's namespace, before its rping: 200 UD SENDs to QP1 with
# another Q_Key, 200 whose MAD is garbage (base version 0x5a), 200 too
# short for a MAD (roce_craft: valid ICRC); the server's agent must drop
# them (its counters, logged when it ends: at least 540 of the 600 reach
# it and are dropped; none is taken, as no counter but `dropped` counts
# what fails a check), and the rping that follows connects and passes.
if [ "$WIRE" = 1 ]; then
    qp1name="QP1 of rw0: 600 forged or malformed MADs dropped, then rping -C 20"
    if cargo build -q --release -p swrdma-roce --example roce_craft 2>"$OUT/craft.log"; then
        CRAFT=$(cargo metadata -q --format-version 1 --no-deps 2>/dev/null |
            sed -nE 's/.*"target_directory":"([^"]*)".*/\1/p')/release/examples/roce_craft
        C="$CRAFT 169.254.80.1 $SA 0x64 1 0"
        nextport
        # (in bursts of 10, 20 ms apart: what a loaded machine loses on
        # the way is not the agent's to count)
        pair qp1-hostile wait "${CMS[@]}" rping -s -a $SA -p $P -v -C 20 -- "${ENC[@]}" bash -c \
            "sleep 1; for i in \$(seq 20); do $C deth=0x12345678:1 len=256 count=10 &&
             $C deth=0x80010000:1 len=256 count=10 && $C deth=0x80010000:1 len=64 count=10 && sleep 0.02 ||
             exit 1; done; sleep 0.5; $CM rping -c -a $SA -p $P -v -C 20"
        c=$(grep -cE '^ping data: rdma-ping-[0-9]+: ' "$clog")
        if ok_rc && [ "$c" = 20 ]; then
            QP1_HOSTILE=1
        else
            fail_pair "$qp1name" "$c of 20 pings"
        fi
    else
        fail "$qp1name" "roce_craft does not build: $(head -n1 "$OUT/craft.log")"
    fi
fi

# --- nothing left behind ---------------------------------------------------------------------
# Every process of this suite (and whatever a program or the rdma_cm model
# started, even in a session of its own) carries XDG_RUNTIME_DIR=$RT.
# --- rdma-core's Python suite: test_rdmacm -----------------------------------------------------
# (pyverbs-rdmacm.sh: it needs a private mount namespace, so root; the
# tests need the device's netdev in sysfs, given there: lo for swr0, the
# veth for rw0.  On rw0 the tests' server and client both run in the
# client's namespace wra, on its address 169.254.80.1, the GID index of
# ::ffff:169.254.80.1 as ibv_devinfo shows it there.  All 10 of
# test_rdmacm.py's own tests must pass, the multicast ones included; any
# skip, error or failure fails.)
name="pyverbs test_rdmacm $DEV (Debian's python3-pyverbs)"
PYT=/usr/share/doc/rdma-core/tests
if [ ! -e "$PYT/run_tests.py" ] || ! /usr/bin/python3 -c 'import pyverbs.cmid' 2>/dev/null; then
    skip "$name" "python3-pyverbs missing"
elif ! unshare -m true 2>/dev/null; then
    skip "$name" "no private mount namespace here (unshare -m: needs root)"
else
    rm -rf "$OUT/pytests"; cp -r "$PYT" "$OUT/pytests"
    find "$OUT/pytests" -name '*.gz' -exec gunzip -f {} +
    pyargs=() min=10 gid=1
    if [ "$WIRE" = 1 ]; then
        "${ENC[@]}" ibv_devinfo -v -d rw0 >"$OUT/pyverbs.devinfo" 2>&1
        gid=$(sed -nE 's/^[[:space:]]*GID\[ *([0-9]+)\]:[[:space:]]+::ffff:169\.254\.80\.1,.*/\1/p' "$OUT/pyverbs.devinfo" | head -n1)
        pyargs=(rw0 wra0 "$gid")
        name="pyverbs test_rdmacm $DEV (Debian's python3-pyverbs; server and client in one namespace, GID ${gid:-?} ::ffff:169.254.80.1)"
    fi
    if [ "$WIRE" = 1 ] && ! command -v ibv_devinfo >/dev/null; then
        skip "$name" "ibv_devinfo missing (ibverbs-utils), which finds the GID index"
    elif [ -z "$gid" ]; then
        fail "$name" "no GID ::ffff:169.254.80.1 on rw0 in wra: $(grep -m1 -iE 'error|fail' "$OUT/pyverbs.devinfo")"
    else
        "${ENC[@]}" timeout -k 5 300 unshare -m bash "$HERE/pyverbs-rdmacm.sh" "$OUT/pytests" "$UCMA" "${pyargs[@]}" \
            >"$OUT/pyverbs.out" 2>&1
        prc=$?
        ran=$(grep -oE '^Ran [0-9]+ tests' "$OUT/pyverbs.out" | grep -oE '[0-9]+')
        # test_rdmacm.py's own tests (test_mlx5_rdmacm.py's skip on anything but mlx5)
        own=$(grep -E '^test_rdmacm_.* \(tests\.test_rdmacm\.' "$OUT/pyverbs.out")
        okn=$(printf '%s\n' "$own" | grep -cE ' \.\.\. ok$')
        bad=$(printf '%s\n' "$own" | grep -vE " \.\.\. ok$" | grep . | head -n3 | tr '\n' ' ')
        bad="$bad$(grep -E '^test_rdmacm_.* \.\.\. (ERROR|FAIL)' "$OUT/pyverbs.out" | head -n3 | tr '\n' ' ')"
        if [ "$prc" = 0 ] && [ "${okn:-0}" -ge "$min" ] && [ -z "$bad" ]; then
            pass "$name: $okn of ${ran:-?} passed, the rest mlx5's own (skipped)"
        else
            fail "$name" "exit $prc, $okn passed of ${ran:-?}: ${bad:-$(tail -n3 "$OUT/pyverbs.out" | tr '\n' ' ')}"
        fi
    fi
fi

# --- the same with trixie's and sid's python3-pyverbs, in their roots ----------------------------
# (pyverbs-rdmacm-root.sh: the release's own python3, pyverbs, librdmacm
# and tests in its root (compat-tests/roots.sh), over our library, provider
# and interposer bound at /mnt, in a private mount namespace; its
# XDG_RUNTIME_DIR /tmp/rt-pyverbs-RELEASE on the root's private /tmp, which
# the last check below looks for too.)  Every test of the release's
# test_rdmacm.py must pass, but those compat-tests/vm-RELEASE/
# pyverbs-known-upstream-failures.txt lists as failing on rxe in Linux 6.1
# with the release's own library: these must fail, with the message that
# list quotes (sid's test_rdmacm_async_resolve_addrinfo: "Failed to Resolve
# AddrInfo": librdmacm 65's rdma_resolve_addrinfo resolves an IP address
# with rdma_getaddrinfo, then writes ucma command 24, WRITE_CM_EVENT of
# kernels after 6.1 (2025), to queue its ADDRINFO_RESOLVED event; the ucma
# of 6.1 and ours, 23 commands, answer EINVAL).
for rel in trixie sid; do
    name="pyverbs test_rdmacm $DEV ($rel's python3-pyverbs)"
    if ! unshare -m true 2>/dev/null; then
        skip "$name" "no private mount namespace here (unshare -m: needs root)"; continue
    fi
    if ! root=$(bash compat-tests/roots.sh "$rel" 2>"$OUT/roots-$rel.log" | tail -n1) || [ ! -d "$root" ]; then
        skip "$name" "no $rel root, and compat-tests/roots.sh $rel cannot build it: $(tail -n2 "$OUT/roots-$rel.log" | tr '\n' ' ')"
        continue
    fi
    ver=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Version}' python3-pyverbs 2>/dev/null)
    name="pyverbs test_rdmacm $DEV ($rel's python3-pyverbs ${ver:-?})"
    tfile=$root/usr/share/doc/rdma-core/tests/test_rdmacm.py
    [ -e "$tfile" ] || tfile=$tfile.gz
    own=$(zcat -f "$tfile" 2>/dev/null | sed -nE 's/^    def (test_rdmacm_[a-z0-9_]+)\(self.*/\1/p' | sort)
    known=$(sed -nE 's/^tests\.test_rdmacm\.CMTestCase\.(test_rdmacm_[a-z0-9_]+) \|.*/\1/p' \
        "compat-tests/vm-$rel/pyverbs-known-upstream-failures.txt" 2>/dev/null | sort)
    if [ -z "$own" ] || [ -z "$ver" ]; then
        fail "$name" "no python3-pyverbs or no tests in $tfile"; continue
    fi
    if [ "$WIRE" = 1 ]; then
        pyargs=(rw0@wra0 rw0 wra0 "${gid:-}")
        name="${name%)}; server and client in one namespace, GID ${gid:-?} ::ffff:169.254.80.1)"
    else
        pyargs=(swr0 swr0 lo 1)
    fi
    if [ -z "${pyargs[3]}" ]; then
        fail "$name" "no GID ::ffff:169.254.80.1 on rw0 in wra"; continue
    fi
    log=$OUT/pyverbs-$rel.out
    "${ENC[@]}" env SWRDMA_WIRED_IDLE_MS=10000 timeout -k 5 300 unshare -m bash "$HERE/pyverbs-rdmacm-root.sh" \
        "$root" "$LIBDIR" "/tmp/rt-pyverbs-$rel" "${pyargs[@]}" >"$log" 2>&1
    prc=$?
    ran=$(grep -oE '^Ran [0-9]+ tests' "$log" | grep -oE '[0-9]+')
    okn=0 kf=0 bad="" kfs=""
    for t in $own; do
        if grep -qE "^$t \(tests\.test_rdmacm\.CMTestCase\.$t\) \.\.\. ok\$" "$log"; then
            if printf '%s\n' "$known" | grep -qx "$t"; then
                bad="$bad $t passes (listed as failing on rxe in compat-tests/vm-$rel);"
            else
                okn=$((okn + 1))
            fi
        elif printf '%s\n' "$known" | grep -qx "$t"; then
            msg=$(grep -E "^tests\.test_rdmacm\.CMTestCase\.$t \|" "compat-tests/vm-$rel/pyverbs-known-upstream-failures.txt" |
                grep -oE '"[^"]+"' | head -n1 | tr -d '"')
            if grep -qE "^(ERROR|FAIL): $t " "$log" && [ -n "$msg" ] && grep -qF "$msg" "$log"; then
                kf=$((kf + 1)) kfs="$kfs $t"
            else
                bad="$bad $t: not the failure rxe shows ('$msg');"
            fi
        else
            st=$(grep -E "^(ERROR|FAIL): $t " "$log" | head -n1 | cut -d: -f1)
            bad="$bad $t ${st:-not ok}: $(grep -m1 -E "^$t \(tests" "$log" | sed 's/.* \.\.\. //' | cut -c1-120);"
        fi
    done
    m=$(printf '%s\n' $own | wc -l)
    if [ -z "$ran" ]; then
        fail "$name" "exit $prc, no unittest summary: $(tail -n3 "$log" | tr '\n' ' ')"
    elif [ -n "$bad" ] || [ $((okn + kf)) -ne "$m" ] || [ "$m" -lt 10 ] || { [ "$kf" = 0 ] && [ "$prc" != 0 ]; }; then
        fail "$name" "exit $prc, $okn of $m passed:$bad"
    else
        pass "$name: $okn of $m passed${kfs:+, and$kfs fails as on rxe in Linux 6.1 (compat-tests/vm-$rel/pyverbs-known-upstream-failures.txt)} (of $ran run, the rest mlx5's own, skipped)"
    fi
done

cleanup
for i in $(seq 20); do
    left=""
    for e in /proc/[0-9]*/environ; do
        p=${e#/proc/}; p=${p%/environ}
        [ "$p" = $$ ] && continue
        grep -qzxE "XDG_RUNTIME_DIR=($RT(-a|-b)?|/tmp/rt-pyverbs-(trixie|sid))" "$e" 2>/dev/null && alive "$p" && left="$left $p"
    done
    [ -z "$left" ] && break
    sleep 0.1
done
for p in $left; do stray "at the end" "$p"; done
# The agents' counters, logged as each ends (10 s after its last client;
# waited for, 20 s at most): every forged MAD dropped.
if [ "${QP1_HOSTILE:-0}" = 1 ]; then
    for i in $(seq 200); do
        dropped=$(grep -oE 'dropped: [0-9]+' "$OUT/agent-b.log" 2>/dev/null | awk '{s += $2} END {print s + 0}')
        [ "$dropped" -ge 540 ] && break
        sleep 0.1
    done
    if [ "$dropped" -ge 540 ]; then
        pass "$qp1name (the server's agent dropped $dropped)"
    else
        fail "$qp1name" "the server's agent dropped $dropped of 600 ($(grep -c 'qp1 Stats' "$OUT/agent-b.log" 2>/dev/null) agent exits logged)"
    fi
fi
if [ -z "$strays" ]; then
    pass "no process left behind (a test's process group, anything with this suite's XDG_RUNTIME_DIR)"
else
    fail "no process left behind" "$nstrays still there after their test (now killed)$(echo "$strays" | cut -c1-600)"
fi

finish
