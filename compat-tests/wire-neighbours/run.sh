#!/bin/bash
# compat-tests/wire-neighbours: one process's state must not reach another's
# connections on the wire device (issue 33, item 1).  Four Debian
# ibv_rc_pingpong pairs at once between the same two addresses, ours <->
# ours, in two network namespaces this suite creates (wna: 169.254.78.1 on
# wna0, wnb: 169.254.78.2 on wnb0, a veth pair; link-local only, no route
# out).  The rounds up to agent/ carry the QPs in each process
# (SWRDMA_WIRE_AGENT=0, the fallback of a process the agent cannot serve);
# the agent/ rounds go through the transport agent, the default.
#
#   clean             the 4 pairs, every process with the flight recorder
#                     (SWRDMA_WIRE_RECORD): all exit 0, and no datagram was
#                     forwarded from one process to another (the recorder's
#                     count of event 6, FwdIn, is 0 in every process): each
#                     QP sends from a source port of its own and its peer's
#                     flow socket takes that port's datagrams from the first
#                     (providers/swrdma/wired/src/wire/sock.rs, "steering")
#   stop/<s|c><i>     the 4 pairs; after 1 s server (s) or client (c) i is
#                     stopped (SIGSTOP) for NB_STOP s (5), then continued:
#                     the 3 other pairs exit 0 with their data checked (the
#                     pingpong checks every message's contents) and were
#                     still running when the stop ended (their iterations:
#                     NB_STOP + 4 s at 3x the clean round's fastest pace);
#                     server 0 and client 1 (NB_ALL=1: each of the 8
#                     processes in turn)
#   kill/<s|c><i>     (NB_ALL=1) the same with SIGKILL, server 1 and
#                     client 2: the 3 other pairs exit 0
# (The action's own pair is given 10 s after the others, then ended: a
# peer that waits for a message of a killed process waits forever, as on
# any device.)
#
# The stopped process's own pair is not asserted in these rounds: its
# peer's requests are not answered while it is stopped (the transport runs
# in the process), so the peer's retries (rc_pingpong: timeout 14, 7
# retries, about 0.5 s) run out; on rxe both ends finish.  Each stop line
# says how that pair ended.
#
#   agent/...         through the transport agent (SWRDMA_WIRE_AGENT=1,
#                     issue 33): the 4 pairs and a perftest pair
#                     (ib_write_bw), 10 processes
#     agent/clean       all 5 pairs exit 0; no datagram forwarded (the
#                       agents' flight recorders)
#     agent/sweepK/stop/V  in one run of the 5 pairs, each of the 10
#                       processes stopped in turn for NB_STOP s: every pair
#                       finishes with its data checked, the stopped
#                       processes' own included (their agent answers for
#                       them), and every process was still running when the
#                       last stop ended; NB_SWEEPS runs (1 in make test,
#                       10 stops, for its time; NB_SWEEPS=2: 20 stops)
#     agent/kill/V      each of the 10 killed in turn (make test: s0 c1 sp
#                       cp; NB_ALL=1 all): the 4 other pairs exit 0 and
#                       were running at the kill
#
# NB_STOPS, NB_KILLS (per process) and NB_AGENT_KILLS (through the agent)
# name the processes of those rounds instead ("" none; NB_SWEEPS=0: no
# sweep), e.g. NB_STOPS= NB_SWEEPS=0 NB_AGENT_KILLS="s0 s1": two agent
# kill rounds only; NB_ENV: NAME=VALUE words for every process (and so
# their agents), e.g. SWRDMA_WIRED_LOG=... SWRDMA_WIRE_RECORD=...
#
# Before the steering (SWRDMA_WIRE_STEER=0 gives it back): every QP's
# datagrams went from port 4791 to port 4791, the kernel's flow hash gave
# each namespace's whole traffic to one process's socket, and that process
# forwarded the others'; stopping it stopped everyone (issue 33: pair 2
# failed in 4 of 6 stops of pair 1).
# Needs root (ip netns), iproute2, ibverbs-utils.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin wire-neighbours --clean
need ip=iproute2 ibv_rc_pingpong=ibverbs-utils ibv_devinfo=ibverbs-utils ib_write_bw=perftest
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (ip netns)"
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
[ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing the swrdma provider (run: make swrdma)"
PAIRS=4 N=${NB_ITERS:-20000} STOP=${NB_STOP:-5} TO=${NB_TIMEOUT:-300}
read -r -a EXTRA <<<"${NB_ENV:-}" # e.g. NB_ENV=SWRDMA_WIRE_STEER=0: the run before the steering

cleanup() { ip netns del wna 2>/dev/null; ip netns del wnb 2>/dev/null; }
trap cleanup EXIT
cleanup
veth_netns wna wna0 169.254.78.1 wnb wnb0 169.254.78.2 ||
    fail_early netns "cannot create the namespaces and the veth pair"
for s in a b; do mkdir -p "$SCRATCH/rt$s"; chmod 0700 "$SCRATCH/rt$s"; done

side() { # a|b ENV...: the command prefix of one side (the QPs carried
    # in each process unless ENV says SWRDMA_WIRE_AGENT=1: the last wins)
    local s=$1; shift
    S=(ip netns exec "wn$s" env XDG_RUNTIME_DIR="$SCRATCH/rt$s" LD_LIBRARY_PATH="$LIBDIR"
       RDMAV_SOFT_DEVICES="rw0@wn${s}0" SWRDMA_WIRE_AGENT=0 "${EXTRA[@]}" "$@" timeout "$TO")
}
side a
G=$("${S[@]}" ibv_devinfo -v -d rw0 2>&1 | sed -nE 's/^\s*GID\[ *([0-9]+)\]:\s*::ffff:169\.254\.78\.1, RoCE v2.*/\1/p' | head -1)
[ -n "$G" ] || fail_early devinfo "rw0@wna0 has no RoCE v2 GID for 169.254.78.1"

# The pid of the program itself: `ip netns exec` and `env` exec, so the
# background job is `timeout`, and the program its child (a signal to
# `timeout` would be passed on, but SIGSTOP cannot be caught).
prog_pid() { # PID-of-the-job
    local c
    for _ in $(seq 50); do
        c=$(pgrep -P "$1" -x ibv_rc_pingpong 2>/dev/null | head -1)
        [ -n "$c" ] && { echo "$c"; return; }
        sleep 0.1
    done
}

port=18900
# round NAME ACTION(none|stop|kill) WHO(s|c) I ENV...: the 4 pairs, and the
# action on process WHO I after 1 s.  Sets RC_S/RC_C (exit codes) and D.
round() {
    local name=$1 act=$2 who=$3 t=$4 i; shift 4
    D="$SCRATCH/$(echo "$name" | tr '/' '_')"
    mkdir -p "$D"
    local sp=() cp=()
    side a "$@"
    for ((i = 0; i < PAIRS; i++)); do
        "${S[@]}" ibv_rc_pingpong -d rw0 -g "$G" -p $((port + i)) -n "$N" >"$D/s$i.out" 2>&1 &
        sp+=($!)
    done
    # The servers listen before the clients come (at most 20 s: a loaded
    # machine may take more than a second to open the device).
    for _ in $(seq 200); do
        local up=0
        for ((i = 0; i < PAIRS; i++)); do
            ip netns exec wna ss -Hltn "sport = :$((port + i))" 2>/dev/null | grep -q . && up=$((up + 1))
        done
        [ "$up" = "$PAIRS" ] && break
        sleep 0.1
    done
    sleep 0.2
    side b "$@"
    for ((i = 0; i < PAIRS; i++)); do
        "${S[@]}" ibv_rc_pingpong -d rw0 -g "$G" -p $((port + i)) -n "$N" 169.254.78.1 >"$D/c$i.out" 2>&1 &
        cp+=($!)
    done
    if [ "$act" != none ]; then
        sleep 1
        local w=${sp[$t]}
        [ "$who" = c ] && w=${cp[$t]}
        local victim
        victim=$(prog_pid "$w")
        if [ -z "$victim" ]; then
            echo "no process found for $who$t" >"$D/action"
        elif [ "$act" = stop ]; then
            kill -STOP "$victim"; sleep "$STOP"; kill -CONT "$victim"
            echo "stopped $victim for $STOP s" >"$D/action"
        else
            kill -KILL "$victim"
            echo "killed $victim" >"$D/action"
        fi
    fi
    RC_S=() RC_C=()
    for ((i = 0; i < PAIRS; i++)); do
        [ "$act" != none ] && [ "$i" = "$t" ] && continue
        wait "${cp[$i]}"; RC_C[$i]=$?
        wait "${sp[$i]}"; RC_S[$i]=$?
    done
    if [ "$act" != none ]; then
        # The action's own pair: a peer whose last message was taken waits
        # for an answer that never comes (as on any device): 10 s, then it
        # is ended.
        for _ in $(seq 100); do
            kill -0 "${cp[$t]}" 2>/dev/null || kill -0 "${sp[$t]}" 2>/dev/null || break
            sleep 0.1
        done
        # (the programs first: with its `timeout` gone first, a program
        # would be nobody's child and run on for ever)
        pkill -KILL -P "${cp[$t]}" 2>/dev/null; pkill -KILL -P "${sp[$t]}" 2>/dev/null
        kill -KILL "${cp[$t]}" "${sp[$t]}" 2>/dev/null
        wait "${cp[$t]}"; RC_C[$t]=$?
        wait "${sp[$t]}"; RC_S[$t]=$?
    fi
    port=$((port + PAIRS))
}

# secs FILE: the seconds rc_pingpong's output says the run took.
secs() { sed -nE 's/^[0-9]+ iters in ([0-9.]+) seconds.*/\1/p' "$1" | head -1; }

# others_ok NAME T: PASS when every pair but T exited 0 on both sides and
# was still running when the stop ended (1 + NB_STOP s after its start:
# else the stop proved nothing, and NB_ITERS is too small for this machine).
others_ok() {
    local name=$1 t=$2 i bad="" ran=""
    for ((i = 0; i < PAIRS; i++)); do
        [ "$i" = "$t" ] && continue
        if [ "${RC_C[$i]}" != 0 ] || [ "${RC_S[$i]}" != 0 ]; then
            bad="$bad pair $i: client ${RC_C[$i]} server ${RC_S[$i]} ($(grep -h -m1 -E 'Failed|error|parse' "$D/c$i.out" "$D/s$i.out" | head -1 | tr -d '\n'));"
            continue
        fi
        local s
        s=$(secs "$D/c$i.out")
        ran="$ran ${s}s"
        [ "$t" != -1 ] && [ "$name" = "${name#kill}" ] && awk -v s="$s" -v m=$((1 + STOP)) 'BEGIN { exit !(s < m) }' &&
            bad="$bad pair $i finished in $s s, before the stop ended;"
    done
    if ! grep -q -E '^(stopped|killed)' "$D/action" 2>/dev/null && [ "$t" != -1 ]; then
        fail "$name" "$(cat "$D/action" 2>/dev/null)"
    elif [ -z "$bad" ]; then
        local own=""
        [ "$t" != -1 ] && own=" (its own pair: client ${RC_C[$t]} server ${RC_S[$t]})"
        pass "$name: the other pairs finished, $N iterations each in$ran$own"
    else
        fail "$name" "$bad"
    fi
}

# clean: every pair exits 0 and nothing is forwarded.
REC="$SCRATCH/rec"
mkdir -p "$REC"; chmod 0777 "$REC"
round clean none s 0 SWRDMA_WIRE_RECORD="$REC"
others_ok clean -1
fwd=$(sed -n 's/^# counts//p' "$REC"/rec.* 2>/dev/null | tr ' ' '\n' | awk -F: '$1 == 6 { n += $2 } END { print n + 0 }')
nrec=$(ls "$REC" | grep -c '^rec\.')
if [ "$nrec" != $((2 * PAIRS)) ]; then
    fail "clean/no-forwarding" "$nrec recorder files, not $((2 * PAIRS))"
elif [ "${fwd:-0}" = 0 ]; then
    pass "clean/no-forwarding: 0 datagrams forwarded between the $nrec processes"
else
    fail "clean/no-forwarding" "$fwd datagrams forwarded ($(grep -h '^# counts' "$REC"/rec.* | tr '\n' ';'))"
fi

# The stop rounds' iterations: enough that the other pairs run through the
# stop (NB_STOP + 4 s at 3 times the clean round's fastest pace: with one
# pair stopped the others run faster, the more so on a busy machine; at
# least 20000).
fastest=$(for ((i = 0; i < PAIRS; i++)); do sed -nE 's/.* = ([0-9.]+) usec\/iter.*/\1/p' "$D/c$i.out"; done | sort -g | head -1)
N=$(awk -v u="${fastest:-50}" -v s="$STOP" -v n="$N" 'BEGIN { k = int(3 * (s + 4) * 1e6 / u); print (k > n ? k : n) }')

# (Per process, one server and one client of different pairs are stopped;
# NB_ALL=1 stops each of the 8 in turn and kills two.  Every process in
# turn is the agent rounds' test below: that is the transport the issue
# asks for, and these rounds cost ~30 s each.)
if [ "${NB_ALL:-0}" = 1 ]; then
    STOPS="s0 s1 s2 s3 c0 c1 c2 c3" KILLS="s1 c2"
else
    STOPS="s0 c1" KILLS=""
fi
# (NB_STOPS / NB_KILLS name these rounds' processes instead; "" none.)
STOPS=${NB_STOPS-$STOPS} KILLS=${NB_KILLS-$KILLS}
for v in $STOPS; do
    round "stop/$v" stop "${v:0:1}" "${v:1}"
    others_ok "stop/$v" "${v:1}"
done
for v in $KILLS; do
    round "kill/$v" kill "${v:0:1}" "${v:1}"
    others_ok "kill/$v" "${v:1}"
done

# Through the transport agent (SWRDMA_WIRE_AGENT=1: one agent per namespace
# runs every process's QPs, issue 33): the 4 pingpong pairs and a perftest
# pair (ib_write_bw 4 KiB, -D seconds), 10 processes: s0..s3 c0..c3 (the
# pingpongs' servers and clients) and sp cp (perftest's).
AG=(SWRDMA_WIRE_AGENT=1 SWRDMA_WIRED_IDLE_MS=2000)
VICTIMS="s0 c0 s1 c1 s2 c2 s3 c3 sp cp"
SWEEPS=${NB_SWEEPS:-1}

# pprog JOB NAME: the program NAME that the job (`timeout`) runs
pprog() {
    local c
    for _ in $(seq 50); do
        c=$(pgrep -P "$1" -x "$2" 2>/dev/null | head -1)
        [ -n "$c" ] && { echo "$c"; return; }
        sleep 0.1
    done
}
# start5 NAME N DUR ENV...: the 4 pingpong pairs (N iterations) and the
# perftest pair (-D DUR) started, the servers listening before the clients
# come; JOB[v] the jobs, PROG[v] the programs (v in VICTIMS), D the
# directory of their outputs ($D/v.out).
declare -A JOB PROG RC
start5() {
    local name=$1 n=$2 dur=$3 i v up; shift 3
    D="$SCRATCH/$(echo "$name" | tr '/' '_')"
    mkdir -p "$D"
    JOB=() PROG=() RC=()
    side a "$@"
    for ((i = 0; i < PAIRS; i++)); do
        "${S[@]}" ibv_rc_pingpong -d rw0 -g "$G" -p $((port + i)) -n "$n" >"$D/s$i.out" 2>&1 &
        JOB[s$i]=$!
    done
    "${S[@]}" ib_write_bw -d rw0 -x "$G" -p $((port + PAIRS)) -F -s 4096 -D "$dur" >"$D/sp.out" 2>&1 &
    JOB[sp]=$!
    for _ in $(seq 200); do
        up=0
        for ((i = 0; i <= PAIRS; i++)); do
            ip netns exec wna ss -Hltn "sport = :$((port + i))" 2>/dev/null | grep -q . && up=$((up + 1))
        done
        [ "$up" = $((PAIRS + 1)) ] && break
        sleep 0.1
    done
    sleep 0.2
    side b "$@"
    for ((i = 0; i < PAIRS; i++)); do
        "${S[@]}" ibv_rc_pingpong -d rw0 -g "$G" -p $((port + i)) -n "$n" 169.254.78.1 >"$D/c$i.out" 2>&1 &
        JOB[c$i]=$!
    done
    "${S[@]}" ib_write_bw -d rw0 -x "$G" -p $((port + PAIRS)) -F -s 4096 -D "$dur" 169.254.78.1 >"$D/cp.out" 2>&1 &
    JOB[cp]=$!
    for v in $VICTIMS; do
        case $v in ?p) PROG[$v]=$(pprog "${JOB[$v]}" ib_write_bw) ;; *) PROG[$v]=$(pprog "${JOB[$v]}" ibv_rc_pingpong) ;; esac
    done
    port=$((port + PAIRS + 1))
}
# pair_of V: the pair of process V (0..3, p); pair_bad P: why pair P failed
# ("" when both sides exited 0)
pair_of() { echo "${1:1}"; }
pair_bad() {
    local p=$1
    [ "${RC[s$p]}" = 0 ] && [ "${RC[c$p]}" = 0 ] && return
    echo "pair $p: client ${RC[c$p]} server ${RC[s$p]} ($(grep -h -m1 -E 'Failed|failed|error|parse|Couldn' "$D/c$p.out" "$D/s$p.out" | head -1 | tr -d '\n'))"
}
pace() { # the fastest pingpong client's usec/iter in $D
    for ((i = 0; i < PAIRS; i++)); do sed -nE 's/.* = ([0-9.]+) usec\/iter.*/\1/p' "$D/c$i.out"; done | sort -g | head -1
}

# agent/clean: every pair exits 0, and no datagram is forwarded (the
# agents' flight recorders).
REC2="$SCRATCH/rec-agent"
mkdir -p "$REC2"; chmod 0777 "$REC2"
start5 agent/clean "${NB_ITERS:-20000}" 5 "${AG[@]}" SWRDMA_WIRE_RECORD="$REC2"
for v in $VICTIMS; do wait "${JOB[$v]}"; RC[$v]=$?; done
bad=""
for p in 0 1 2 3 p; do b=$(pair_bad $p); [ -n "$b" ] && bad="$bad $b;"; done
if [ -z "$bad" ]; then pass "agent/clean: the 5 pairs finished"; else fail agent/clean "$bad"; fi
fastest=$(pace)
# (The agents write their recorders when they exit, idle 2 s after the last
# pair: nothing else runs in the namespaces then.)
for _ in $(seq 100); do
    [ -z "$(ip netns pids wna; ip netns pids wnb)" ] && break
    sleep 0.1
done
fwd=$(sed -n 's/^# counts//p' "$REC2"/rec.* 2>/dev/null | tr ' ' '\n' | awk -F: '$1 == 6 { n += $2 } END { print n + 0 }')
nrec=$(ls "$REC2" | grep -c '^rec\.')
if [ "$nrec" -lt 1 ]; then
    fail "agent/clean/no-forwarding" "no recorder file (the agents record with SWRDMA_WIRE_RECORD)"
elif [ "${fwd:-0}" = 0 ]; then
    pass "agent/clean/no-forwarding: 0 datagrams forwarded ($nrec recorder file(s): the agents')"
else
    fail "agent/clean/no-forwarding" "$fwd datagrams forwarded ($(grep -h '^# counts' "$REC2"/rec.* | tr '\n' ';'))"
fi

# agent/sweepK/stop/V: the 10 processes stopped in turn, NB_STOP s each,
# half a second apart, in one run of the 5 pairs (NB_SWEEPS runs: 1, 10 stops; 2: 20
# stops).  Every pair must finish with its data checked (the stopped
# process's own included: its agent answers for it), and every process
# must still be running when the last stop ends (else the run was too short
# to show anything: the pingpongs' iterations are 1.5 times what the
# schedule takes at the clean round's fastest pace).
GAP=0.5
sched=$(awk -v s="$STOP" -v g=$GAP 'BEGIN { print 10 * (s + g) + 2 }')
NS=$(awk -v u="${fastest:-50}" -v t="$sched" -v n="${NB_ITERS:-20000}" 'BEGIN { k = int(1.5 * t * 1e6 / u); print (k > n ? k : n) }')
DUR=$(awk -v t="$sched" 'BEGIN { print int(t + 10) }')
for ((k = 1; k <= SWEEPS; k++)); do
    name=agent/sweep$k
    start5 "$name" "$NS" "$DUR" "${AG[@]}"
    declare -A AT=()
    for v in $VICTIMS; do
        sleep $GAP
        if [ -n "${PROG[$v]}" ] && kill -STOP "${PROG[$v]}" 2>/dev/null; then
            sleep "$STOP"; kill -CONT "${PROG[$v]}"; AT[$v]=ok
        else
            AT[$v]="the process had ended before its stop (or was not found)"
        fi
    done
    early=""
    for v in $VICTIMS; do kill -0 "${PROG[$v]}" 2>/dev/null || early="$early $v"; done
    for v in $VICTIMS; do wait "${JOB[$v]}"; RC[$v]=$?; done
    bad=""
    for p in 0 1 2 3 p; do b=$(pair_bad $p); [ -n "$b" ] && bad="$bad $b;"; done
    for v in $VICTIMS; do
        if [ "${AT[$v]}" != ok ]; then
            fail "$name/stop/$v" "${AT[$v]}"
        elif [ -n "$bad" ]; then
            fail "$name/stop/$v" "not every pair finished:$bad"
        elif [ -n "$early" ]; then
            fail "$name/stop/$v" "ended before the last stop ended:$early (too few iterations for this machine: $NS)"
        else
            pass "$name/stop/$v: stopped $STOP s; all 5 pairs finished, data checked ($NS pingpong iterations, ib_write_bw -D $DUR)"
        fi
    done
done

# agent/kill/V: each of the 10 processes killed in turn, a second after its
# pair started: the other 4 pairs exit 0 and were still running at the kill;
# its own pair is then ended (a peer waiting for a message of a killed
# process waits forever, as on any device).  In `make test` four of them
# (a pingpong server and client, the perftest pair's two; NB_ALL=1: all
# 10): on a machine at load ~11 one run of the ten saw two rounds where
# another pair failed too (retries exceeded), still to be explained.
NK=$(awk -v u="${fastest:-50}" 'BEGIN { k = int(5 * 1e6 / u); print (k > 500 ? k : 500) }')
KILLED="s0 c1 sp cp"
[ "${NB_ALL:-0}" = 1 ] && KILLED=$VICTIMS
KILLED=${NB_AGENT_KILLS-$KILLED} # (the processes to kill instead; "" none)
for v in $KILLED; do
    name=agent/kill/$v
    own=$(pair_of "$v")
    start5 "$name" "$NK" 5 "${AG[@]}"
    sleep 1
    early=""
    for w in $VICTIMS; do
        [ "$(pair_of "$w")" = "$own" ] && continue
        kill -0 "${PROG[$w]}" 2>/dev/null || early="$early $w"
    done
    killed=no
    [ -n "${PROG[$v]}" ] && kill -KILL "${PROG[$v]}" 2>/dev/null && killed=yes
    for w in $VICTIMS; do
        [ "$(pair_of "$w")" = "$own" ] && continue
        wait "${JOB[$w]}"; RC[$w]=$?
    done
    for w in "s$own" "c$own"; do
        # (the program first, then its `timeout`: see round)
        kill -KILL "${PROG[$w]}" 2>/dev/null; pkill -KILL -P "${JOB[$w]}" 2>/dev/null
        kill -KILL "${JOB[$w]}" 2>/dev/null
        { wait "${JOB[$w]}"; } 2>/dev/null
    done
    bad=""
    for p in 0 1 2 3 p; do
        [ "$p" = "$own" ] && continue
        b=$(pair_bad $p); [ -n "$b" ] && bad="$bad $b;"
    done
    if [ "$killed" != yes ]; then
        fail "$name" "the process was not found"
    elif [ -n "$bad" ]; then
        fail "$name" "$bad"
    elif [ -n "$early" ]; then
        fail "$name" "ended before the kill:$early (too few iterations for this machine: $NK)"
    else
        pass "$name: the 4 other pairs finished ($NK pingpong iterations, ib_write_bw -D 5)"
    fi
done
# Nothing of the suite's may be left running in the namespaces once the
# agents have ended (idle 2 s after their last client): a program left
# behind spins for ever and slows whatever runs next.
left=
for _ in $(seq 100); do
    left=$(for p in $(ip netns pids wna 2>/dev/null; ip netns pids wnb 2>/dev/null); do
        echo "$p:$(cat /proc/$p/comm 2>/dev/null)"; done)
    [ -z "$left" ] && break
    sleep 0.1
done
if [ -z "$left" ]; then
    pass "no process left behind in the namespaces"
else
    fail "no process left behind in the namespaces" "$(echo $left)"
    for p in $(ip netns pids wna 2>/dev/null; ip netns pids wnb 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
fi
finish
