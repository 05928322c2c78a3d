#!/bin/bash
# compat-tests/soft-rdmacm-bad: bad input and hostile peers for the
# user-space rdma_cm on the software device swr0 (build/bin/swrdma-cm,
# build/lib/libswrdma-ucma.so under Debian's unmodified librdmacm; see
# providers/swrdma/README.md, section "rdma_cm").  The happy paths are
# compat-tests/soft-rdmacm's; this suite is about what goes wrong.  Our
# libibverbs (LD_LIBRARY_PATH), RDMAV_SOFT_DEVICES=swr0, a fresh private
# XDG_RUNTIME_DIR, 127.0.0.1 only; servers pinned to CPU 0, clients to CPU 1.
# One line per case; what each proves:
#
# A. Errors as the kernel's rdma_cm reports them (rdmacm-utils' programs):
#  1. rping -c to a port nobody listens on: the CM answers REJ reason 8
#     (invalid service ID), rping prints "RDMA_CM_EVENT_REJECTED, error 8"
#     and exits non-zero within 5 s (no retries for a refused request).
#  2. udaddy -s with no server: the SIDR_REQ is answered with SIDR status 1,
#     udaddy prints "RDMA_CM_EVENT_UNREACHABLE, error: 1".
#  3. A consumer reject: ucmatose -c 1 as server, -c 2 as client; the
#     server's rdma_reject of the extra request reaches the client as
#     "RDMA_CM_EVENT_REJECTED, error: 28" (REJ consumer defined), or the
#     server's REJ of its accepted connection (3b) first, as a CONNECT_ERROR;
#     either way the client ends within 5 s.
#  3b. What happens next, made deterministic: cmatose gives up after its
#     reject and destroys its one accepted id, usually before the client's
#     RTU is there.  The kernel's cm_destroy_id answers for an id in
#     REP_SENT / MRA_REP_RCVD with a REJ consumer defined (28), so the
#     client's connection ends (else the ucmatose client of 3 waits for ever
#     for a DISCONNECTED).  hostile.py plays the client: REQ A (MRA, REP;
#     no RTU), REQ B (REJ 28): then a REJ 28 must come for A.
#  4. A listener that never answers (rping -s SIGSTOPped once it listens):
#     with SWRDMA_CM_TIMEOUT_MS=20 the client's REQ is retried on the
#     kernel's schedule (15 retries) and ends in
#     "RDMA_CM_EVENT_UNREACHABLE, error -110" within 3 s.
#  4b. A burst of requests to a listener that is stopped a while (cmtime
#     -b SIGSTOPped for 1.5 s while cmtime -c 200 connects): the REQs
#     beyond its port's queue (10 datagrams) wait in the client while the
#     listener is there, and all 200 connect once it runs again, within
#     5 s in all; none dropped and left to the CM's REQ timer (6.1 s).
#  5. A peer SIGKILLed in the middle of rping's traffic (the server, then,
#     in 5b, the client): the survivor ends by itself within 30 s, no hang.
#  6. A second rping -s on a port another process holds:
#     "rdma_bind_addr: Address already in use", the first one unharmed.
#  7. An address on an interface of this host but on no soft device (the
#     first global IPv4 address of `ip -4 addr`; skipped when there is none):
#     "rdma_bind_addr: No such device" (ENODEV, the kernel's answer for an
#     address whose netdev has no RDMA device); with SWRDMA_CM_DEBUG=1
#     exactly one stderr line "swrdma-ucma: no soft RDMA device answers for
#     ADDR ...", none without it.  Binding only: no packet is sent.
#  7b. An address of no interface at all (169.254.77.77): the kernel's
#     rdma_bind_addr fails in rdma_translate_ip with EADDRNOTAVAIL
#     ("Cannot assign requested address"), and the debug line says so once.
#
# B. Hostile datagrams on the carrier (hostile.py, the same user; it binds
#    an abstract name of its own, swrdma-cm/<uid>/phostile-..., so that
#    answers come back to it).  Victim: a ucmatose -c 4 -C 200 server.
#  8. Malformed datagrams to the victim's port socket
#     (swrdma-cm/<uid>/0106/<port>) and process socket
#     (swrdma-cm/<uid>/p<pid>-<hex>, from /proc/net/unix): empty, 1 byte, a
#     DREQ cut to 255 bytes, a DREQ with 1 and with 3840 bytes more (257 and
#     4096 bytes: not a MAD, which the kernel's MAD layer never hands to
#     its CM), 16 random 256-byte blobs, a DREQ with a wrong
#     base version, class, class version, method or a nonzero status, and
#     with attribute IDs 0x19 (LAP), 0x1A (APR), 0xFFFF, 0, 0x0F: none is
#     answered, the victim lives, and a valid DREQ for no connection sent
#     afterwards gets its one DREP (the sockets still work).
#  9. Forged REP, RTU, DREQ, DREP, REJ, MRA and SIDR_REP naming guessed comm
#     IDs (0, 1, random, 0xFFFFFFFF) and a random sender's ID, to both
#     sockets: a DREQ of no connection gets one DREP (as the kernel's
#     cm_issue_drep), nothing else is answered (a REP neither: Linux 6.1's
#     cm_rep_handler drops a REP of no connection).
#  8-9. After all that, the victim's own 4 connections complete (ucmatose
#     client: data both ways, "return status 0" on both sides, no error
#     event in the server).
#  9b. Messages naming a live connection's real comm IDs (read from the
#     rping server's SWRDMA_CM_TRACE) from a socket that is not the peer:
#     DREQ, REJ, DREP, RTU, MRA, REP to both processes of an rping pair:
#     nothing answered, the pings go on, no DISCONNECT (a connection's
#     messages are taken only from its peer).
# 10. A REQ flood beyond the backlog: 50 valid REQs (service ID
#     0x0000000001060000 | port, an IP CM header 127.0.0.1 -> 127.0.0.1,
#     distinct comm IDs) to a listener whose process (cmlisten.c, backlog 4)
#     asks for no event: exactly 4 MRAs (one per request handed to user
#     space, as Linux 6.1) and 46 REJs reason 28 (consumer defined: the
#     backlog is full), one answer per REQ; its RSS grows < 1 MB; asked
#     afterwards, its channel holds exactly 4 connect requests.
# 11. A datagram of another user is dropped (SCM_CREDENTIALS): as root, a
#     DREQ of no connection from a child that setuid()s to 65534 gets no
#     answer at all, while the same DREQ from us gets its one DREP; and
#     the listener saw no event.  Skipped when not run as root.
# Last: no process outlives its case or the suite (none is left in the
#     process group of a case's `timeout`, none carries the suite's
#     XDG_RUNTIME_DIR).
#
# Every program runs under `timeout -k`; the whole suite takes about 30 s.
# Input: OUR_LIB (default build/lib/libibverbs.so.1), with the provider in
# $(dirname OUR_LIB)/libibverbs/ and libswrdma-ucma.so beside it; SWRDMA_CM
# (default build/bin/swrdma-cm) overrides the wrapper.
# Run it alone on the software device: flock /tmp/suites.lock compat-tests/soft-rdmacm-bad/run.sh
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin soft-rdmacm-bad --clean
OUT=$SCRATCH
HERE=$ROOT/compat-tests/soft-rdmacm-bad
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
CM=$(abspath "${SWRDMA_CM:-build/bin/swrdma-cm}")
need "$LIBDIR/libibverbs/libswrdma-rdmav34.so=run: make swrdma" "$CM=run: make swrdma" \
    "$LIBDIR/libswrdma-ucma.so=run: make swrdma" \
    rping=rdmacm-utils ucmatose=rdmacm-utils udaddy=rdmacm-utils cmtime=rdmacm-utils python3=python3 gcc=gcc \
    /usr/include/rdma/rdma_cma.h=librdmacm-dev timeout=coreutils stdbuf=coreutils

RT="$OUT/rt"
rm -rf "$RT"; mkdir -p -m 0700 "$RT"
export XDG_RUNTIME_DIR="$RT"
export LD_LIBRARY_PATH="$LIBDIR"
export RDMAV_SOFT_DEVICES=swr0
unset RDMAV_DRIVERS IBV_DRIVERS LD_PRELOAD SWRDMA_CM_TIMEOUT_MS SWRDMA_CM_DEBUG SWRDMA_CM_TRACE VERBS_LOG_LEVEL
MYUID=$(id -u)
HOSTILE=(python3 "$HERE/hostile.py")

pin_s=(); pin_c=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin_s=(taskset -c 0); pin_c=(taskset -c 1); fi

# --- processes ------------------------------------------------------------------------
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
# The program a `timeout` of pid $1 runs (taskset, stdbuf and swrdma-cm
# exec it, so it is the timeout's one child); waits 2 s at most.
prog_of() {
    local t=$1 i st l f p
    for i in $(seq 20); do
        for st in /proc/[0-9]*/stat; do
            read -r l 2>/dev/null <"$st" || continue
            f=(${l##*) })
            [ "${f[1]}" = "$t" ] && { p=${st#/proc/}; echo "${p%/stat}"; return 0; }
        done
        sleep 0.1
    done
    return 1
}
# Ends the `timeout` of pid $1 (it passes the TERM on to the program and
# its process group), KILLs it after 3 s.
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
# sweep TAG PGID...: a process still in the process group of a case's
# `timeout` once that has ended gets 1 s, then is a stray.
sweep() {
    local tag=$1 pg p i left
    shift
    for i in $(seq 10); do
        left=""
        for pg; do left="$left $(members "$pg")"; done
        [ -z "${left// /}" ] && return 0
        sleep 0.1
    done
    for p in $left; do stray "$tag" "$p"; done
}
# The background programs under way (their `timeout`s).
BG=""
# bgrun VAR LOG TO CMD...: CMD in the background under `timeout -k 5 TO`, stdin
# /dev/null, output line-buffered in $OUT/LOG (stderr too, unless LOG has a
# ':' : then stdout goes to $OUT/first and stderr to $OUT/second); VAR gets
# the timeout's pid.
bgrun() {
    local v=$1 log=$2 to=$3
    shift 3
    if [ "${log#*:}" != "$log" ]; then
        timeout -k 5 "$to" stdbuf -oL -eL "$@" </dev/null >"$OUT/${log%%:*}" 2>"$OUT/${log#*:}" &
    else
        timeout -k 5 "$to" stdbuf -oL -eL "$@" </dev/null >"$OUT/$log" 2>&1 &
    fi
    BG="$BG $!"
    printf -v "$v" %s "$!"
}
# endbg TAG T...: stops the background `timeout`s T... and sweeps their groups.
endbg() {
    local tag=$1 t
    shift
    for t; do
        alive "$t" && stop "$t"
        wait "$t" 2>/dev/null
        BG=$(echo "$BG" | tr ' ' '\n' | grep -vx "$t" | tr '\n' ' ')
    done
    sweep "$tag" "$@"
}
# ended T SECS: waits SECS at most for the background `timeout` T to end by
# itself; then sets brc (its status) and bms (the milliseconds waited).
ended() {
    local t=$1 n=$(($2 * 10)) i t0
    t0=$(date +%s%N)
    for i in $(seq "$n"); do alive "$t" || break; sleep 0.1; done
    bms=$((($(date +%s%N) - t0) / 1000000))
    if alive "$t"; then brc=running; return 1; fi
    wait "$t" 2>/dev/null; brc=$?
    return 0
}
# fgrun LOG TO CMD...: runs CMD under `timeout -k 2 TO` (stdin /dev/null,
# output in $OUT/LOG, or split as bgrun does); sets rc and ms (milliseconds).
FG=""
fgrun() {
    local log=$1 to=$2 t0
    shift 2
    t0=$(date +%s%N)
    if [ "${log#*:}" != "$log" ]; then
        timeout -k 2 "$to" stdbuf -oL -eL "$@" </dev/null >"$OUT/${log%%:*}" 2>"$OUT/${log#*:}" &
    else
        timeout -k 2 "$to" stdbuf -oL -eL "$@" </dev/null >"$OUT/$log" 2>&1 &
    fi
    FG=$!
    wait "$FG" 2>/dev/null; rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    sweep "${log%%:*}" "$FG"
    FG=""
}
cleanup() {
    local t
    for t in $FG $BG; do alive "$t" && stop "$t"; done
    [ -n "$FG$BG" ] && sweep interrupted $FG $BG
    FG="" BG=""
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the carrier ----------------------------------------------------------------------
# held NAME: an abstract socket of that name exists (/proc/net/unix).
held() { grep -q " @$1\$" /proc/net/unix 2>/dev/null; }
psock() { echo "swrdma-cm/$MYUID/0106/$1"; }
# wait_sock NAME: waits (10 s at most) for the socket, then 0.2 s more (a
# port socket is made by rdma_bind_addr, just before rdma_listen).
wait_sock() {
    local i
    for i in $(seq 100); do
        held "$1" && { sleep 0.2; return 0; }
        sleep 0.1
    done
    return 1
}
# wait_proc_sock PID: waits (5 s at most) for PID's own socket.
wait_proc_sock() {
    local i
    for i in $(seq 50); do
        grep -q " @swrdma-cm/$MYUID/p$1-" /proc/net/unix 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# One line of a log (the first looking like an error, else its last), 200
# characters at most.
gist() {
    local l
    l=$(grep -h -m1 -iE 'error|fail|unable|refused|invalid|timed? ?out|bad|no such|in use' "$@" 2>/dev/null | head -n1)
    [ -z "$l" ] && l=$(cat "$@" 2>/dev/null | grep . | tail -n1)
    printf '%s' "${l:-no output}" | tr -d '\r' | sed 's/^[[:space:]]*//' | cut -c1-200
}

port=20700
nextport() {
    port=$((port + 1))
    while held "$(psock $port)"; do port=$((port + 1)); done
    P=$port
}

# ===================================================================================== A
# --- 1. rping -c to a port nobody listens on: REJ 8 -----------------------------------
name="1. rping -c to a port without listener: REJECTED error 8 within 5 s"
nextport
fgrun rping-nolisten 10 "${pin_c[@]}" "$CM" rping -c -a 127.0.0.1 -p $P -C 1
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$ms" -lt 5000 ] &&
    grep -q 'RDMA_CM_EVENT_REJECTED, error 8$' "$OUT/rping-nolisten"; then
    pass "$name (rc=$rc, ${ms} ms)"
else
    fail "$name" "rc=$rc after ${ms} ms: $(gist "$OUT/rping-nolisten")"
fi

# --- 2. udaddy with no server: SIDR_REP status 1 ---------------------------------------
name="2. udaddy -s 127.0.0.1 without server: UNREACHABLE error 1"
if held "swrdma-cm/$MYUID/0111/7174"; then
    skip "$name" "UDP port 7174 (udaddy's) is held by another process"
else
    fgrun udaddy-noserver 10 "${pin_c[@]}" "$CM" udaddy -s 127.0.0.1 -C 1
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$ms" -lt 5000 ] &&
        grep -q '^udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 1$' "$OUT/udaddy-noserver"; then
        pass "$name (rc=$rc, ${ms} ms)"
    else
        fail "$name" "rc=$rc after ${ms} ms: $(gist "$OUT/udaddy-noserver")"
    fi
fi

# --- 3. ucmatose: the server rejects the connection it has no room for ------------------
name="3. ucmatose -c 2 to a -c 1 server: the extra request REJECTED error 28"
nextport
bgrun ST ucmatose-rej.server 30 "${pin_s[@]}" "$CM" ucmatose -b 127.0.0.1 -p $P -c 1
if ! wait_sock "$(psock $P)"; then
    fail "$name" "the server never bound port $P: $(gist "$OUT/ucmatose-rej.server")"
else
    # (the client may wait for ever on its accepted connection: see 3b)
    fgrun ucmatose-rej.client 5 "${pin_c[@]}" "$CM" ucmatose -s 127.0.0.1 -p $P -c 2
    ended "$ST" 5
    src=$brc
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then how="killed after 5 s, see 3b"; else how="then ended, rc=$rc"; fi
    # The client ends (no hang) with the extra request's REJ 28, or first
    # with its accepted connection's CONNECT_ERROR when the server's REJ for
    # that one (3b) comes before the client's RTU could be sent (on the
    # kernel too: the RTU of a rejected connection is refused).
    if grep -q '^cmatose: failing connection request$' "$OUT/ucmatose-rej.server" &&
        grep -qE '^cmatose: event: RDMA_CM_EVENT_(REJECTED, error: 28|CONNECT_ERROR, error: -1)$' "$OUT/ucmatose-rej.client" &&
        [ "$rc" != 124 ] && [ "$rc" != 137 ]; then
        pass "$name (the server's rdma_reject; the client $how: $(grep -m1 -oE 'RDMA_CM_EVENT_[A-Z_]+, error: -?[0-9]+' "$OUT/ucmatose-rej.client"))"
    else
        fail "$name" "server $src, client rc=$rc: $(gist "$OUT/ucmatose-rej.client" "$OUT/ucmatose-rej.server")"
    fi
fi
endbg ucmatose-rej "$ST"
# --- 3b. the same server, its accepted id destroyed while its REP is unanswered -----------
name="3b. an accepted id destroyed with its REP unanswered (ucmatose -c 1 giving up) sends REJ 28"
nextport
bgrun ST repsent.server 30 "${pin_s[@]}" "$CM" ucmatose -b 127.0.0.1 -p $P -c 1
if ! wait_sock "$(psock $P)"; then
    fail "$name" "the server never bound port $P: $(gist "$OUT/repsent.server")"
else
    fgrun hostile-repsent 20 "${HOSTILE[@]}" repsent $P
    if [ "$rc" = 0 ]; then pass "$name ($(cut -c5-200 "$OUT/hostile-repsent"))"; else fail "$name" "$(head -c 900 "$OUT/hostile-repsent")"; fi
fi
endbg repsent "$ST"

# --- 4. a listener that never answers: UNREACHABLE -110 after the retries -------------------
name="4. rping -c to a SIGSTOPped listener, SWRDMA_CM_TIMEOUT_MS=20: UNREACHABLE error -110 within 3 s"
nextport
bgrun ST rping-stopped.server 40 "${pin_s[@]}" "$CM" rping -s -a 127.0.0.1 -p $P -C 1
SP=$(prog_of "$ST")
if [ -z "$SP" ] || ! wait_sock "$(psock $P)"; then
    fail "$name" "the server never bound port $P: $(gist "$OUT/rping-stopped.server")"
else
    kill -STOP "$SP"
    fgrun rping-stopped.client 10 env SWRDMA_CM_TIMEOUT_MS=20 "${pin_c[@]}" "$CM" rping -c -a 127.0.0.1 -p $P -C 1
    kill -CONT "$SP"
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$ms" -lt 3000 ] &&
        grep -q 'RDMA_CM_EVENT_UNREACHABLE, error -110$' "$OUT/rping-stopped.client"; then
        pass "$name (rc=$rc, ${ms} ms)"
    else
        fail "$name" "rc=$rc after ${ms} ms: $(gist "$OUT/rping-stopped.client")"
    fi
fi
endbg rping-stopped "$ST"

# --- 4b. a burst of requests to a listener that is stopped a while: none lost ------------------
name="4b. cmtime -c 200 to a listener SIGSTOPped for 1.5 s: all 200 connect once it runs, no REQ retried (6.1 s)"
nextport
bgrun ST burst.server 40 "${pin_s[@]}" "$CM" cmtime -b 127.0.0.1 -p $P
SP=$(prog_of "$ST")
if [ -z "$SP" ] || ! wait_sock "$(psock $P)"; then
    fail "$name" "the server never bound port $P: $(gist "$OUT/burst.server")"
else
    kill -STOP "$SP"
    (sleep 1.5; kill -CONT "$SP") &
    cont=$!
    fgrun burst.client 30 "${pin_c[@]}" "$CM" cmtime -s 127.0.0.1 -p $P -c 200
    kill -CONT "$SP" 2>/dev/null
    wait $cont 2>/dev/null
    # The 190 REQs beyond the port's queue (10) wait in the client while
    # the listener is stopped; one dropped would be sent again only by the
    # CM's REQ timer, 6.1 s later (what an earlier carrier did after 1 s).
    conn=$(awk -F: '/^connect *:/ { split($2, f, " "); print f[1] }' "$OUT/burst.client")
    if [ "$rc" = 0 ] && [ -n "$conn" ] && [ "$ms" -lt 5000 ]; then
        pass "$name (rc=0 after ${ms} ms; connect step ${conn} ms in all)"
    else
        fail "$name" "rc=$rc after ${ms} ms: $(gist "$OUT/burst.client")"
    fi
fi
endbg burst "$ST"

# --- 5. a peer SIGKILLed mid-traffic: the survivor ends ---------------------------------------
# kill_mid TAG WHO: rping -s / rping -c with -C 100000000; after 1 s of
# pings WHO (server or client) is SIGKILLed; the other must end within 30 s.
kill_mid() {
    local tag=$1 who=$2 name=$3 ST CT victim other what
    nextport
    bgrun ST "$tag.server" 45 "${pin_s[@]}" "$CM" rping -s -a 127.0.0.1 -p $P -C 100000000
    if ! wait_sock "$(psock $P)"; then
        fail "$name" "the server never bound port $P: $(gist "$OUT/$tag.server")"
        endbg "$tag" "$ST"
        return
    fi
    bgrun CT "$tag.client" 45 "${pin_c[@]}" "$CM" rping -c -a 127.0.0.1 -p $P -C 100000000
    sleep 1
    if [ "$who" = server ]; then victim=$ST other=$CT what=client; else victim=$CT other=$ST what=server; fi
    if ! alive "$ST" || ! alive "$CT"; then
        fail "$name" "not both running after 1 s: $(gist "$OUT/$tag.client" "$OUT/$tag.server")"
        endbg "$tag" "$ST" "$CT"
        return
    fi
    # (bash's "Killed" notice of the victim's timeout, which dies by the
    # same signal, is not this suite's output)
    exec 3>&2 2>/dev/null
    kill -KILL "$(prog_of "$victim")"
    sleep 0.2
    wait "$victim"
    exec 2>&3 3>&-
    if ended "$other" 30; then
        pass "$name (the $what ended $((bms / 1000)).$((bms % 1000 / 100)) s later, rc=$brc: $(tail -n1 "$OUT/$tag.$what" | cut -c1-60))"
    else
        fail "$name" "the $what still runs 30 s after its peer was killed: $(tail -n1 "$OUT/$tag.$what" | cut -c1-120)"
    fi
    endbg "$tag" "$ST" "$CT"
}
kill_mid rping-killsrv server "5. rping server SIGKILLed mid-traffic: the client ends within 30 s"
kill_mid rping-killcli client "5b. rping client SIGKILLed mid-traffic: the server ends within 30 s"

# --- 6. a port another process holds: EADDRINUSE --------------------------------------------------
name="6. a second rping -s on a port another process holds: Address already in use"
nextport
bgrun ST rping-inuse.first 40 "${pin_s[@]}" "$CM" rping -s -a 127.0.0.1 -p $P -C 1
if ! wait_sock "$(psock $P)"; then
    fail "$name" "the first server never bound port $P: $(gist "$OUT/rping-inuse.first")"
else
    fgrun rping-inuse.second 10 "${pin_c[@]}" "$CM" rping -s -a 127.0.0.1 -p $P -C 1
    if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q '^rdma_bind_addr: Address already in use$' "$OUT/rping-inuse.second" &&
        alive "$ST" && held "$(psock $P)"; then
        pass "$name (rc=$rc; the first still listens)"
    else
        alive "$ST" || rc="$rc, the first server ended"
        fail "$name" "rc=$rc: $(gist "$OUT/rping-inuse.second")"
    fi
fi
endbg rping-inuse "$ST"

# --- 7. addresses of no soft device --------------------------------------------------------------
# nodev NAME ADDR ERRTEXT: rping -s -a ADDR without and with SWRDMA_CM_DEBUG=1.
nodev() {
    local name=$1 a=$2 want=$3 n0 n1 line
    nextport
    fgrun nodev-plain.out:nodev-plain.err 10 "$CM" rping -s -a "$a" -p $P -C 1
    local rc0=$rc
    fgrun nodev-debug.out:nodev-debug.err 10 env SWRDMA_CM_DEBUG=1 "$CM" rping -s -a "$a" -p $P -C 1
    n0=$(grep -c '^swrdma-ucma:' "$OUT/nodev-plain.err")
    n1=$(grep -c '^swrdma-ucma:' "$OUT/nodev-debug.err")
    line=$(grep -m1 '^swrdma-ucma:' "$OUT/nodev-debug.err")
    if [ "$rc0" != 0 ] && [ "$rc0" != 124 ] && [ "$rc" != 0 ] && [ "$rc" != 124 ] &&
        grep -q "^rdma_bind_addr: $want\$" "$OUT/nodev-plain.err" && [ "$n0" = 0 ] && [ "$n1" = 1 ] &&
        case $line in "swrdma-ucma: no soft RDMA device answers for $a "*) true ;; *) false ;; esac; then
        pass "$name (rc=$rc0; one debug line: $(echo "$line" | cut -c1-70)...)"
    else
        fail "$name" "rc=$rc0/$rc, seen '$(grep -m1 '^rdma_bind_addr' "$OUT/nodev-plain.err")', $n0 swrdma-ucma lines without SWRDMA_CM_DEBUG, $n1 with it: $(echo "$line" | cut -c1-90)"
    fi
}
hostaddr=$(ip -o -4 addr show scope global 2>/dev/null | awk '{split($4, a, "/"); print a[1]; exit}')
name="7. rping -s -a an address of this host on no soft device: No such device"
if [ -n "$hostaddr" ]; then
    nodev "7. rping -s -a $hostaddr (an address of this host on no soft device): No such device" "$hostaddr" "No such device"
else
    skip "$name" "this host has no global IPv4 address"
fi
name="7b. rping -s -a 169.254.77.77 (on no interface): Cannot assign requested address, as the kernel's rdma_translate_ip"
if ip -o addr 2>/dev/null | grep -q ' 169\.254\.77\.77/'; then
    skip "$name" "169.254.77.77 is configured here"
else
    nodev "$name" 169.254.77.77 "Cannot assign requested address"
fi

# ===================================================================================== B
# --- 8, 9: junk and forgeries to a ucmatose server, then its own connections ---------------
n8="8. malformed datagrams to a ucmatose server's port and process sockets: none answered"
n9="9. forged REP/RTU/DREQ/DREP/REJ/MRA/SIDR_REP, guessed comm IDs: only DREQ->DREP answered"
n89="8-9. after the junk and the forgeries, the victim's own 4 connections complete"
nextport
bgrun ST victim.server 60 "${pin_s[@]}" "$CM" ucmatose -b 127.0.0.1 -p $P -c 4 -C 200
VP=$(prog_of "$ST")
if [ -z "$VP" ] || ! wait_sock "$(psock $P)" || ! wait_proc_sock "$VP"; then
    why="the victim never bound port $P: $(gist "$OUT/victim.server")"
    fail "$n8" "$why"; fail "$n9" "$why"; fail "$n89" "$why"
else
    fgrun hostile-malformed 30 "${HOSTILE[@]}" malformed $P "$VP"
    if [ "$rc" = 0 ]; then pass "$n8 ($(cut -c5-200 "$OUT/hostile-malformed"))"; else fail "$n8" "$(head -c 1200 "$OUT/hostile-malformed")"; fi
    fgrun hostile-forge 30 "${HOSTILE[@]}" forge $P "$VP"
    if [ "$rc" = 0 ]; then pass "$n9 ($(cut -c5-400 "$OUT/hostile-forge"))"; else fail "$n9" "$(head -c 1200 "$OUT/hostile-forge")"; fi
    if ! alive "$VP"; then
        fail "$n89" "the victim died: $(gist "$OUT/victim.server")"
    else
        fgrun victim.client 30 "${pin_c[@]}" "$CM" ucmatose -s 127.0.0.1 -p $P -c 4 -C 200
        ended "$ST" 5
        src=$brc
        if [ "$rc" = 0 ] && [ "$src" = 0 ] && grep -q '^return status 0$' "$OUT/victim.client" &&
            grep -q '^return status 0$' "$OUT/victim.server" && grep -q '^data transfers complete' "$OUT/victim.server" &&
            ! grep -q '^cmatose: event:' "$OUT/victim.server" "$OUT/victim.client"; then
            pass "$n89 (200 messages each way on each, return status 0 on both sides)"
        else
            fail "$n89" "server $src, client rc=$rc: $(gist "$OUT/victim.client" "$OUT/victim.server")"
        fi
    fi
fi
endbg victim "$ST"

# --- 9b. a live connection's real comm IDs from a non-peer ---------------------------------------
name="9b. DREQ/REJ/DREP/RTU/MRA/REP naming a live rping connection's comm IDs, from a non-peer: ignored"
nextport
bgrun ST live.server 40 env SWRDMA_CM_TRACE=1 "${pin_s[@]}" "$CM" rping -s -a 127.0.0.1 -p $P -C 0 -v
if ! wait_sock "$(psock $P)"; then
    fail "$name" "the server never bound port $P: $(gist "$OUT/live.server")"
    endbg live "$ST"
else
    bgrun CT live.client 40 "${pin_c[@]}" "$CM" rping -c -a 127.0.0.1 -p $P -C 0 -v
    SP=$(prog_of "$ST") CP=$(prog_of "$CT")
    for i in $(seq 50); do grep -q '^ping data' "$OUT/live.client" 2>/dev/null && break; sleep 0.1; done
    fgrun hostile-live 20 "${HOSTILE[@]}" forge-live "$OUT/live.server" "$SP" "$CP"
    hrc=$rc
    n1=$(grep -c '^ping data' "$OUT/live.client")
    sleep 0.5
    n2=$(grep -c '^ping data' "$OUT/live.client")
    both=1; alive "$SP" && alive "$CP" || both=0
    endbg live "$ST" "$CT"
    if [ "$hrc" = 0 ] && [ "$both" = 1 ] && [ "$n2" -gt "$n1" ] &&
        ! grep -qE 'DISCONNECT|error|fail' "$OUT/live.client" &&
        ! grep -v '^swrdma-ucma:' "$OUT/live.server" | grep -qE 'DISCONNECT|error|fail'; then
        pass "$name ($(cut -c5-200 "$OUT/hostile-live"); pings went on: $n1 -> $n2 in 0.5 s)"
    else
        fail "$name" "$(head -c 600 "$OUT/hostile-live"); both alive: $both; pings $n1 -> $n2; $(grep -v '^swrdma-ucma:' "$OUT/live.server" "$OUT/live.client" | grep -m1 -E 'DISCONNECT|error|fail' | cut -c1-120)"
    fi
fi

# --- 10. a REQ flood beyond the backlog ---------------------------------------------------------------
n10="10. 50 REQs to a listener with backlog 4 that takes no event: 4 MRAs, 46 REJs 28, RSS < +1 MB"
n11="11. a DREQ from another user (uid 65534, SCM_CREDENTIALS) is dropped, the same from us answered"
if ! gcc -O2 -Wall -o "$OUT/cmlisten" "$HERE/cmlisten.c" -lrdmacm 2>"$OUT/cmlisten-build.err"; then
    fail "$n10" "cmlisten.c does not build: $(head -n1 "$OUT/cmlisten-build.err")"
    fail "$n11" "cmlisten.c does not build"
else
    # listener TAG: a cmlisten with backlog 4 on a new port; sets LT, LP.
    listener() {
        nextport
        bgrun LT "$1.out" 40 "${pin_s[@]}" "$CM" "$OUT/cmlisten" $P 4
        LP=$(prog_of "$LT")
        local i
        for i in $(seq 100); do grep -q '^listening$' "$OUT/$1.out" 2>/dev/null && return 0; sleep 0.1; done
        return 1
    }
    # asked LT LP: SIGUSR1 to the listener; it prints what its channel held.
    asked() {
        kill -USR1 "$2" 2>/dev/null
        ended "$1" 5
        held_line=$(grep -m1 'connect requests' "$OUT/$3.out")
    }
    if ! listener flood; then
        fail "$n10" "the listener never listened: $(gist "$OUT/flood.out")"
        endbg flood "$LT"
    else
        fgrun hostile-flood 30 "${HOSTILE[@]}" flood $P 50 4 "$LP"
        frc=$rc
        asked "$LT" "$LP" flood
        endbg flood "$LT"
        if [ "$frc" = 0 ] && [ "$held_line" = "4 connect requests, 0 other events" ]; then
            pass "$n10 ($(cut -c5-200 "$OUT/hostile-flood"); the listener's channel: $held_line)"
        else
            fail "$n10" "$(head -c 600 "$OUT/hostile-flood"); the listener's channel: ${held_line:-nothing said}"
        fi
    fi
    # --- 11. another user's datagram ----------------------------------------------------------
    if [ "$MYUID" != 0 ]; then
        skip "$n11" "needs root (a child that setuid()s to 65534)"
    elif ! listener foreign; then
        fail "$n11" "the listener never listened: $(gist "$OUT/foreign.out")"
        endbg foreign "$LT"
    else
        fgrun hostile-foreign 20 "${HOSTILE[@]}" foreign $P
        frc=$rc
        asked "$LT" "$LP" foreign
        endbg foreign "$LT"
        if [ "$frc" = 0 ] && [ "$held_line" = "0 connect requests, 0 other events" ]; then
            pass "$n11 ($(cut -c5-200 "$OUT/hostile-foreign"); the listener: no event)"
        else
            fail "$n11" "$(head -c 600 "$OUT/hostile-foreign"); the listener's channel: ${held_line:-nothing said}"
        fi
    fi
fi

# --- nothing left behind ------------------------------------------------------------------------------
# Every process of this suite carries XDG_RUNTIME_DIR=$RT.
cleanup
for i in $(seq 20); do
    left=""
    for e in /proc/[0-9]*/environ; do
        p=${e#/proc/}; p=${p%/environ}
        [ "$p" = $$ ] && continue
        grep -qzx "XDG_RUNTIME_DIR=$RT" "$e" 2>/dev/null && alive "$p" && left="$left $p"
    done
    [ -z "$left" ] && break
    sleep 0.1
done
for p in $left; do stray "at the end" "$p"; done
if [ -z "$strays" ]; then
    pass "no process left behind (a case's process group, anything with this suite's XDG_RUNTIME_DIR)"
else
    fail "no process left behind" "$nstrays still there after their case (now killed)$(echo "$strays" | cut -c1-600)"
fi

finish
