#!/bin/bash
# Runs inside the VM (started by wire.sh through vm-run.sh): ours' RoCE v2
# wire transport against Soft-RoCE and against itself, every line of
# wire-tests.txt per pair and network condition (see the list's header).
#
#  1. reference: rxe0 <-> rxe1 in the root netns (guest-init.sh's setup, TCP
#     exchange on 127.0.0.1), every test under every condition it lists, on
#     Debian's libibverbs: the figures ours is compared with (bench);
#  2. the move: `rdma link delete rxe1`; veth1 goes into netns far
#     (192.0.2.2/24); guest-init.sh's policy routing for the two local
#     addresses is undone (rule pref 10 / table 100 / local table back at
#     pref 0 / static neighbour), so the root netns reaches 192.0.2.2 through
#     veth0 like another machine; a second veth pair vA (netns na, 10.9.0.1)
#     / vB (netns nb, 10.9.0.2); each netns gets its own XDG_RUNTIME_DIR (a
#     fresh 0700 directory: separate machines share no runtime files);
#     reachability is checked over TCP (python3) before any test;
#  3. the matrix: rxe-ours, ours-rxe, ours-ours under each condition.
# rxe0's kernel socket holds UDP 0.0.0.0:4791 in the root netns, so ours
# only ever runs in far, na and nb.
#
# Environment (wire.sh):
#   UPSTREAM_LD / OUR_LD  LD_LIBRARY_PATH for Debian's library / ours
#   SUITE_TESTS           the test list (wire-tests.txt)
#   VM_CACHE              the VM cache (sch_netem.ko of the guest's kernel)
#   WIRE_LINGER           linger.so (linger.c): both sides of rc_pingpong
#                         under loss keep their QP a second longer
#   SELF_CHECK=1          rxe0 plays "ours" in far, na and nb (Debian's
#                         library, no RDMAV_SOFT_DEVICES): every check must
#                         PASS, which proves the harness (netns, routing,
#                         exchange across the veths, netem) without ours
#   WIRE_REFERENCE=0      skip part 1
#   WIRE_ONLY             an extended regex: only the tests whose PAIR/COND/ID
#                         matches run (the others are recorded as skipped)
#   WIRE_SKIP             an extended regex: the tests whose PAIR/COND/ID
#                         matches do not run (recorded as skipped)
#   WIRE_SOAK_PCT         the rc_soak* tests' -n at that percent (default 100)
#   WIRE_BUDGET           seconds (default 900) after which no further test
#                         starts (those left are recorded as not run)
#   T_SIDE, T_MIN, T_SERVER_GRACE   per-side limits (see below)
# Results: $VM_RUN_DIR/results/
#   info                      key=value lines (kernel, versions, GIDs ...)
#   setup/NN-NAME             one setup check: line 1 PASS/FAIL, line 2 why
#   net-*.txt                 ip/tc state after each step (for debugging)
#   PAIR/COND/ID/{server,client}.{out,err,rc}, pair.ms, server.killed,
#   PAIR/COND/ID/rxe0-counters.{before,after}  rxe0's hw_counters around it,
#   PAIR/COND/ID/notrun       why the test did not run (then nothing else)
#   PAIR/COND/ID/skip         not selected (WIRE_ONLY, WIRE_SKIP)
#   PAIR/COND/ID/link         "IF SENT RECEIVED": the packets the pair's link
#                             (veth0 for rxe0's pairs, vA for ours-ours) carried
#                             each way while the test ran (TCP exchange included)
#   complete                  the script got to its end
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/guest-lib.sh"
T_SIDE=${T_SIDE:-60}            # one side, reference pairs and upper bound
T_MIN=${T_MIN:-15}              # the other pairs: 4x the reference's time, within [T_MIN, T_SIDE]
T_SERVER_GRACE=${T_SERVER_GRACE:-10}  # the server's time left once its client ended
WIRE_BUDGET=${WIRE_BUDGET:-900}
SELF_CHECK=${SELF_CHECK:-0}
WIRE_REFERENCE=${WIRE_REFERENCE:-1}
WIRE_ONLY=${WIRE_ONLY:-}
WIRE_SKIP=${WIRE_SKIP:-}
WIRE_SOAK_PCT=${WIRE_SOAK_PCT:-100}
[[ $WIRE_SOAK_PCT =~ ^[1-9][0-9]*$ ]] || die "WIRE_SOAK_PCT=$WIRE_SOAK_PCT: a whole percent, at least 1"
CONDITIONS="clean loss reorder"
T_START=$(now_ms)

info() { echo "$1=$2" >> "$R/info"; }
SETUP_N=0
setup_check() { # NAME PASS|FAIL WHY
    SETUP_N=$((SETUP_N + 1))
    mkdir -p "$R/setup"
    printf '%s\n%s\n' "$2" "$3" > "$R/setup/$(printf %02d "$SETUP_N")-$1"
}
die() { echo "wire-guest: $*" >&2; exit 3; }

: > "$R/info"
info kernel "$(uname -r)"
info ibverbs_utils "$(dpkg-query -W -f='${Version}' ibverbs-utils 2>/dev/null)"
info perftest "$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
info self_check "$SELF_CHECK"
info soak_pct "$WIRE_SOAK_PCT"
info upstream_ld "$UPSTREAM_LD"
info our_ld "$OUR_LD"
resolved_info "$(command -v ibv_rc_pingpong)" >> "$R/info"

# ---- the sides ("roles"): where and how each runs
declare -A NS LD ENVX DEV GID
role() { # ROLE NETNS LD DEV ENV...
    local r=$1
    NS[$r]=$2 LD[$r]=$3 DEV[$r]=$4
    shift 4
    ENVX[$r]="$*"
}

side_argv() { # ROLE LIMIT: A = the command prefix that runs a program as ROLE
    local r=$1
    A=()
    [ -n "${NS[$r]}" ] && A=(ip netns exec "${NS[$r]}")
    A+=(env LD_LIBRARY_PATH="${LD[$r]}")
    # shellcheck disable=SC2206  # NAME=VALUE words without blanks
    [ -n "${ENVX[$r]}" ] && A+=(${ENVX[$r]})
    A+=(timeout -k 5 "$2")
}

# side_cmd ROLE LIMIT: as side_argv, with the environment apart: A = the
# command prefix without `env`, E = the NAME=VALUE words, exported in a
# subshell that execs "${A[@]}" (one program start less per side and test:
# under TCG each costs a good part of a second; the words reach `ip` and
# `timeout` too, which take none of them).  The subshell is written out
# where it runs, not in a function: in the background, a function would
# be a shell of its own around it, and $! would not be the program's pid
# (the server's netns, its kill)
side_cmd() {
    local r=$1
    A=() E=(LD_LIBRARY_PATH="${LD[$r]}")
    [ -n "${NS[$r]}" ] && A=(ip netns exec "${NS[$r]}")
    # shellcheck disable=SC2206  # NAME=VALUE words without blanks
    [ -n "${ENVX[$r]}" ] && E+=(${ENVX[$r]})
    A+=(timeout -k 5 "$2")
}

# roce_gid ROLE IP: the index of ROLE's RoCE v2 GID ::ffff:IP, as
# `ibv_devinfo -v -d DEV` lists it (GID[  3]:  ::ffff:192.0.2.2, RoCE v2),
# run as ROLE; nothing when there is none (GID_ERR: what ibv_devinfo said)
roce_gid() {
    local r=$1 ip=$2 out line re
    side_argv "$r" 30
    out=$("${A[@]}" ibv_devinfo -v -d "${DEV[$r]}" 2>&1)
    re="GID\[ *([0-9]+)\]:[[:space:]]*::ffff:${ip//./\\.}, RoCE v2"
    while IFS= read -r line; do
        if [[ $line =~ $re ]]; then echo "${BASH_REMATCH[1]}"; return; fi
    done <<<"$out"
    GID_ERR=$(grep -v '^[[:space:]]' <<<"$out" | head -3 | tr '\n' ' ')
    GID_ERR=${GID_ERR:-"no GID line for ::ffff:$ip, RoCE v2"}
    echo "$GID_ERR" > "$R/gid-err-$r"
}

listening_in() { # PID PORT: is something listening on TCP PORT in PID's netns?
    local want _sl local _rem st _rest f
    printf -v want '%04X' "$2"
    for f in "/proc/$1/net/tcp" "/proc/$1/net/tcp6"; do
        [ -r "$f" ] || continue
        while read -r _sl local _rem st _rest; do
            [ "${local##*:}" = "$want" ] && [ "$st" = 0A ] && return 0
        done < "$f"
    done
    return 1
}

# link_pkts PID IF: "RX TX" packet counters of IF in PID's netns
# (/proc/PID/net/dev, read with builtins); "- -" when IF is not there
link_pkts() {
    local name f
    while read -r name f; do
        [ "$name" = "$2:" ] || continue
        # rx bytes, rx packets, 6 more rx fields, tx bytes, tx packets
        read -r -a f <<<"$f"
        echo "${f[1]} ${f[9]}"
        return
    done < "/proc/$1/net/dev"
    echo "- -"
}
LINK_PID=$$ LINK_IF=veth0   # the link each pair's packets are counted on

# rxe0's hw_counters, one "name value" line each (nothing if it has none);
# shell builtins only: a process per counter costs seconds per pair under TCG
rxe_counters() {
    local f v
    for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do
        [ -r "$f" ] && read -r v < "$f" && echo "${f##*/} $v"
    done 2>/dev/null
}

# wire_pair DIR SERVER-ROLE CLIENT-ROLE SERVER-IP LIMIT CMD...: the server
# (CMD -d DEV -g|-x GID -p PORT) in the background, once it listens (or
# died) the client (... SERVER-IP); each side under `timeout LIMIT`; a server
# still running T_SERVER_GRACE s after its client ended is killed.
PAIR_PORT=18900
wire_pair() {
    local d=$1 s=$2 c=$3 ip=$4 lim=$5 t0 sp i gflag=-x w prog; shift 5
    # soak-pairs.sh N PROG ...: N copies at once (the concurrent soak)
    [ "$1" = soak-pairs.sh ] && set -- "$HERE/soak-pairs.sh" "${@:2}"
    # stop-wrap.sh WHO SECS PROG ...: one side stopped for SECS s (issue 33)
    [ "$1" = stop-wrap.sh ] && set -- "$HERE/stop-wrap.sh" "${@:2}"
    prog=$1
    for w; do case "$w" in ibv_*|ib_*) prog=$w; break ;; esac; done
    case "$prog" in ibv_*) gflag=-g ;; esac
    PAIR_PORT=$((PAIR_PORT + 1))
    [ -d "$d" ] || mkdir -p "$d"    # (run_pair_tests made it: no process)
    local l0 l1 rx0 tx0 rx1 tx1
    l0=$(link_pkts "$LINK_PID" "$LINK_IF")
    # rxe0's counters around the pair (duplicates, sequence errors, retries:
    # what rxe made of the other side's packets, for a failure's diagnosis)
    rxe_counters > "$d/rxe0-counters.before"
    t0=$(now_ms)
    # WIRE_CPU=1 (make bench): each side's CPU time (user, system) goes to
    # SIDE.cpu, as bash's `times` reports its child (the program)
    # and the whole guest's CPU time around the pair (/proc/stat's first
    # line before and after: what rxe does in the kernel's softirqs counts too)
    local cpu=()
    [ "${WIRE_CPU:-0}" = 1 ] && cpu=(bash -c '"$@"; rc=$?; times > "$CPU_OUT"; exit $rc' cpu) &&
        head -n1 /proc/stat > "$d/stat0"
    side_cmd "$s" "$lim"
    [ "${#cpu[@]}" -gt 0 ] && E+=(CPU_OUT="$d/server.cpu")
    # under loss, both sides of rc_pingpong destroy their QP a second late:
    # the last ACK either side sends may be the packet lost (linger.c)
    local linger=()
    [ "$prog" = ibv_rc_pingpong ] && [ "$CUR_COND" = loss ] && linger=(LD_PRELOAD="$WIRE_LINGER")
    E+=("${linger[@]}")
    (export "${E[@]}" && exec "${A[@]}" "${cpu[@]}" "$@" -d "${DEV[$s]}" "$gflag" "${GID[$s]}" -p "$PAIR_PORT") \
        > "$d/server.out" 2> "$d/server.err" < /dev/null &
    sp=$!
    for ((i = 0; i < 1000; i++)); do    # up to 20 s for the server to listen (or die)
        listening_in "$sp" "$PAIR_PORT" && break
        kill -0 "$sp" 2>/dev/null || break
        nap 0.02
    done
    side_cmd "$c" "$lim"
    [ "${#cpu[@]}" -gt 0 ] && E+=(CPU_OUT="$d/client.cpu")
    E+=("${linger[@]}")
    (export "${E[@]}" && exec "${A[@]}" "${cpu[@]}" "$@" -d "${DEV[$c]}" "$gflag" "${GID[$c]}" -p "$PAIR_PORT" "$ip") \
        > "$d/client.out" 2> "$d/client.err" < /dev/null
    echo $? > "$d/client.rc"
    for ((i = 0; i < T_SERVER_GRACE * 50; i++)); do
        kill -0 "$sp" 2>/dev/null || break
        nap 0.02
    done
    if kill -0 "$sp" 2>/dev/null; then
        kill -TERM "$sp" 2>/dev/null
        echo "server still running ${T_SERVER_GRACE}s after the client ended: killed" > "$d/server.killed"
    fi
    wait "$sp"
    echo $? > "$d/server.rc"
    [ "${#cpu[@]}" -gt 0 ] && head -n1 /proc/stat > "$d/stat1"
    echo $(( $(now_ms) - t0 )) > "$d/pair.ms"
    rxe_counters > "$d/rxe0-counters.after"
    l1=$(link_pkts "$LINK_PID" "$LINK_IF")
    read -r rx0 tx0 <<<"$l0"
    read -r rx1 tx1 <<<"$l1"
    if [ "$rx0" != - ] && [ "$rx1" != - ]; then
        echo "$LINK_IF $((tx1 - tx0)) $((rx1 - rx0))" > "$d/link"
    fi
}

# ---- network conditions: netem on the given interfaces ([NETNS:]IF)
NETEM_OK=1
moddir=$(ls -d "${VM_CACHE:-/nonexistent}"/kernel/*/lib/modules/"$(uname -r)" 2>/dev/null | head -1)
if [ -e /sys/module/sch_netem ]; then
    setup_check netem-module PASS "sch_netem already loaded"
elif [ -z "$moddir" ]; then
    NETEM_OK=0
    setup_check netem-module FAIL "no modules of $(uname -r) under VM_CACHE=${VM_CACHE:-unset}"
elif out=$("$VM_CACHE/busybox/bin/busybox" insmod "$moddir/kernel/net/sched/sch_netem.ko" 2>&1); then
    setup_check netem-module PASS "insmod sch_netem.ko"
else
    NETEM_OK=0
    setup_check netem-module FAIL "insmod sch_netem.ko: $out"
fi

qdisc_for() { # COND: the netem arguments ("" = none)
    case "$1" in
        clean) echo "" ;;
        loss) echo "netem loss 1%" ;;
        # netem reorders only with a delay: 25% of the packets (correlation
        # 50%) go at once, the rest 1 ms later
        reorder) echo "netem delay 1ms reorder 25% 50%" ;;
    esac
}

# set_condition PHASE COND [NETNS:]IF...: replaces each interface's root
# qdisc; CONDITION_ERR says what failed (and the condition's tests do not
# run).  The statistics of the qdisc it replaces go to net-qdisc.txt, and
# netem's drop count into info (netem_dropped_PHASE_COND=N: proof that the
# loss was applied to the traffic that ran)
CUR_COND=
set_condition() {
    local phase=$1 cond=$2 q spec ns ifc pre out dropped=0 n; shift 2
    q=$(qdisc_for "$cond")
    CONDITION_ERR=
    for spec; do
        ns= ifc=$spec
        case "$spec" in *:*) ns=${spec%%:*} ifc=${spec#*:} ;; esac
        pre=(); [ -n "$ns" ] && pre=(ip netns exec "$ns")
        if [ -n "$CUR_COND" ]; then
            out=$("${pre[@]}" tc -s qdisc show dev "$ifc" 2>&1)
            printf '== %s:%s (end of %s)\n%s\n' "${ns:-root}" "$ifc" "$CUR_COND" "$out" >> "$R/net-qdisc.txt"
            if [[ $out =~ netem.*dropped\ ([0-9]+) ]]; then
                n=${BASH_REMATCH[1]}
                dropped=$((dropped + n))
            fi
        fi
        "${pre[@]}" tc qdisc del dev "$ifc" root 2>/dev/null
        if [ -n "$q" ]; then
            # shellcheck disable=SC2086
            out=$("${pre[@]}" tc qdisc add dev "$ifc" root $q 2>&1) ||
                CONDITION_ERR="$CONDITION_ERR tc qdisc add dev $ifc root $q${ns:+ (netns $ns)}: $out;"
        fi
        { echo "== ${ns:-root}:$ifc ($cond)"; "${pre[@]}" tc -s qdisc show dev "$ifc"; } \
            >> "$R/net-qdisc.txt" 2>&1
    done
    [ -n "$CUR_COND" ] && [ "$CUR_COND" != clean ] && info "netem_dropped_${CUR_PHASE}_$CUR_COND" "$dropped"
    CUR_COND=$cond CUR_PHASE=$phase
    [ "$NETEM_OK" = 1 ] || [ -z "$q" ] || CONDITION_ERR="sch_netem could not be loaded"
}

# ---- the tests
TESTS=()
while IFS='|' read -r id conds cmd; do
    [ -n "$id" ] || continue
    case "$id" in \#*) continue ;; esac
    TESTS+=("$id|$conds|$cmd")
done < "$SUITE_TESTS"

# run_pair_tests PAIR SERVER-ROLE CLIENT-ROLE SERVER-IP COND [NOTRUN-WHY]
run_pair_tests() {
    local pair=$1 s=$2 c=$3 ip=$4 cond=$5 why=${6:-} t id conds cmd d lim ms dirs=()
    # the condition's test directories, made by one mkdir (a process costs
    # ~0.3 s under TCG)
    for t in "${TESTS[@]}"; do
        IFS='|' read -r id conds cmd <<<"$t"
        case " $conds " in *" $cond "*) dirs+=("$R/$pair/$cond/$id") ;; esac
    done
    [ "${#dirs[@]}" -eq 0 ] || mkdir -p "${dirs[@]}"
    for t in "${TESTS[@]}"; do
        IFS='|' read -r id conds cmd <<<"$t"
        case " $conds " in *" $cond "*) ;; *) continue ;; esac
        d=$R/$pair/$cond/$id
        if [ -n "$WIRE_ONLY" ] && ! [[ $pair/$cond/$id =~ $WIRE_ONLY ]]; then
            echo "not selected (WIRE_ONLY=$WIRE_ONLY)" > "$d/skip"
            continue
        fi
        if [ -n "$WIRE_SKIP" ] && [[ $pair/$cond/$id =~ $WIRE_SKIP ]]; then
            echo "left out (WIRE_SKIP=$WIRE_SKIP)" > "$d/skip"
            continue
        fi
        # (a condition list's "-PAIR": the line does not run for PAIR)
        case " $conds " in *" -$pair "*)
            echo "not run for $pair (wire-tests.txt: -$pair)" > "$d/skip"
            continue ;;
        esac
        if [ -n "$why" ]; then echo "$why" > "$d/notrun"; continue; fi
        if [ $(( $(now_ms) - T_START )) -gt $((WIRE_BUDGET * 1000)) ]; then
            echo "not run: the suite's time budget (WIRE_BUDGET=${WIRE_BUDGET}s) was used up" > "$d/notrun"
            continue
        fi
        lim=$T_SIDE
        # (the soak's and the stop's tests are about reliability, not speed: T_SIDE)
        if [ "$pair" != rxe-rxe ] && [ "${id#rc_soak}" = "$id" ] && [ "${id#rc_stop}" = "$id" ] &&
            [ -e "$R/rxe-rxe/$cond/$id/pair.ms" ]; then
            read -r ms < "$R/rxe-rxe/$cond/$id/pair.ms"
            lim=$(( ms * 4 / 1000 + 1 ))
            [ "$lim" -ge "$T_MIN" ] || lim=$T_MIN
            [ "$lim" -le "$T_SIDE" ] || lim=$T_SIDE
        fi
        # WIRE_SOAK_PCT: the soaks' iteration counts (-n) at that percent
        # (make test: 30, for CI's time; 100: wire-tests.txt's own)
        if [ "${id#rc_soak}" != "$id" ] && [ "$WIRE_SOAK_PCT" != 100 ]; then
            local w words=() next=0
            for w in $cmd; do
                if [ "$next" = 1 ]; then
                    w=$((w * WIRE_SOAK_PCT / 100))
                    [ "$w" -ge 1 ] || w=1
                fi
                next=0
                [ "$w" = -n ] && next=1
                words+=("$w")
            done
            cmd="${words[*]}"
            echo "$cmd" > "$d/command"
        fi
        echo "wire-guest: $pair $cond $id (limit ${lim}s)" >&2
        # shellcheck disable=SC2086
        wire_pair "$d" "$s" "$c" "$ip" "$lim" $cmd
    done
}

# ---- 1. the reference: rxe0 <-> rxe1 in the root netns
role rxe0 "" "$UPSTREAM_LD" rxe0
role rxe1 "" "$UPSTREAM_LD" rxe1
GID[rxe0]=$(gid_index rxe0) GID[rxe1]=$(gid_index rxe1)
info gid_rxe0 "${GID[rxe0]}"
info gid_rxe1 "${GID[rxe1]}"
[ -n "${GID[rxe0]}" ] && [ -n "${GID[rxe1]}" ] || die "no RoCE v2 GID on rxe0/rxe1"
if [ "$WIRE_REFERENCE" = 1 ]; then
    for cond in $CONDITIONS; do
        set_condition reference "$cond" veth0 veth1
        # the exchange runs on 127.0.0.1: guest-init.sh's policy routing
        # sends locally generated traffic for 192.0.2.x out of the veths
        run_pair_tests rxe-rxe rxe0 rxe1 127.0.0.1 "$cond" ${CONDITION_ERR:+"not run: $CONDITION_ERR"}
    done
    set_condition reference clean veth0 veth1
    CUR_COND=
fi
info reference "$WIRE_REFERENCE"

# ---- 2. the move: far, na, nb
{ echo "== before"; ip addr; ip rule; ip route show table all; ip neigh; } > "$R/net-before.txt" 2>&1
netfail=
veth1_to_far
for ns in na nb; do
    step "ip netns add $ns" ip netns add "$ns"
    # no IPv6 DAD in the new netns either: complete GID tables at once
    step "accept_dad in $ns" ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.accept_dad=0 \
        net.ipv6.conf.default.accept_dad=0
    step "lo up in $ns" ip -n "$ns" link set lo up
done
step "vA/vB" ip link add vA type veth peer name vB
step "vA mtu" ip link set vA mtu 1500
step "vB mtu" ip link set vB mtu 1500
step "vA into na" ip link set vA netns na
step "vB into nb" ip link set vB netns nb
step "10.9.0.1 on vA" ip -n na addr add 10.9.0.1/24 dev vA
step "10.9.0.2 on vB" ip -n nb addr add 10.9.0.2/24 dev vB
step "vA up" ip -n na link set vA up
step "vB up" ip -n nb link set vB up
{
    echo "== root"; ip addr; ip rule; ip route show table all; ip neigh
    for ns in far na nb; do echo "== netns $ns"; ip -n "$ns" addr; ip -n "$ns" route; done
} > "$R/net-after.txt" 2>&1
if [ -z "$netfail" ]; then
    setup_check netns PASS "rxe1 deleted; veth1 (192.0.2.2) in netns far, vA (10.9.0.1) in na, vB (10.9.0.2) in nb; root's policy routing undone"
else
    setup_check netns FAIL "$netfail"
fi
# nothing of guest-init.sh's routing may be left: the root netns must route
# 192.0.2.2 via veth0, not lo/veth1
r=$(ip route get 192.0.2.2 2>&1)
case "$r" in
    *"dev veth0"*) setup_check root-route PASS "ip route get 192.0.2.2: $r" ;;
    *) setup_check root-route FAIL "ip route get 192.0.2.2: $r" ;;
esac

# a process that stays in na: its /proc/PID/net/dev counts vA's packets
ip netns exec na sleep 100000 &
NA_HOLD=$!
info na_hold "$NA_HOLD"

for ns in far na nb; do
    rm -rf "/tmp/xdg-$ns"
    mkdir -m 0700 "/tmp/xdg-$ns"
done

# reachability over TCP, both ways: a listener in one netns, a client in the
# other, one line exchanged
REACH_PY='
import socket, sys
mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "listen":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port)); s.listen(1); s.settimeout(20)
    c, peer = s.accept(); c.sendall(b"hello from %s\n" % addr.encode()); print("accepted", peer[0])
else:
    c = socket.create_connection((addr, port), timeout=10); print(c.makefile().readline().strip())
'
reach() { # NAME SERVER-NETNS SERVER-IP CLIENT-NETNS ("" = root)
    local name=$1 sns=$2 ip=$3 cns=$4 sp pre=() cpre=() out i port=$((PAIR_PORT += 1))
    [ -n "$sns" ] && pre=(ip netns exec "$sns")
    [ -n "$cns" ] && cpre=(ip netns exec "$cns")
    "${pre[@]}" timeout 30 python3 -c "$REACH_PY" listen "$ip" "$port" > "$R/reach-$name.srv" 2>&1 &
    sp=$!
    for ((i = 0; i < 1000; i++)); do
        listening_in "$sp" "$port" && break
        kill -0 "$sp" 2>/dev/null || break
        nap 0.02
    done
    out=$("${cpre[@]}" timeout 20 python3 -c "$REACH_PY" connect "$ip" "$port" 2>&1)
    if wait "$sp" && [ "$out" = "hello from $ip" ]; then
        setup_check "reach-$name" PASS "TCP ${cns:-root} -> $ip (${sns:-root}): $(tr '\n' ' ' < "$R/reach-$name.srv")"
    else
        setup_check "reach-$name" FAIL "TCP ${cns:-root} -> $ip (${sns:-root}): client: ${out:0:300} server: $(tr '\n' ' ' < "$R/reach-$name.srv" | cut -c1-300)"
    fi
}
reach root-to-far far 192.0.2.2 ""
reach far-to-root "" 192.0.2.1 far
reach nb-to-na na 10.9.0.1 nb
reach na-to-nb nb 10.9.0.2 na
REACH_OK=1
for f in "$R"/setup/*-reach-* "$R"/setup/*-netns "$R"/setup/*-root-route; do
    [ "$(head -1 "$f")" = PASS ] || REACH_OK=0
done

# ---- 3. the matrix
if [ "$SELF_CHECK" = 1 ]; then
    # rxe0 (its 192.0.2.1 GID; OUR_LD holds Debian's library, wire.sh's
    # --self-check) stands in for ours in each netns: the RDMA traffic is rxe0's loopback, everything else is the
    # real harness
    role far far "$OUR_LD" rxe0 "XDG_RUNTIME_DIR=/tmp/xdg-far"
    role na na "$OUR_LD" rxe0 "XDG_RUNTIME_DIR=/tmp/xdg-na"
    role nb nb "$OUR_LD" rxe0 "XDG_RUNTIME_DIR=/tmp/xdg-nb"
    GID[far]=$(roce_gid far 192.0.2.1) GID[na]=$(roce_gid na 192.0.2.1) GID[nb]=$(roce_gid nb 192.0.2.1)
else
    role far far "$OUR_LD" rw0 "RDMAV_SOFT_DEVICES=rw0@veth1" "XDG_RUNTIME_DIR=/tmp/xdg-far" ${WIRE_OURS_ENV:-}
    role na na "$OUR_LD" rwa "RDMAV_SOFT_DEVICES=rwa@vA" "XDG_RUNTIME_DIR=/tmp/xdg-na" ${WIRE_OURS_ENV:-}
    role nb nb "$OUR_LD" rwb "RDMAV_SOFT_DEVICES=rwb@vB" "XDG_RUNTIME_DIR=/tmp/xdg-nb" ${WIRE_OURS_ENV:-}
    GID[far]=$(roce_gid far 192.0.2.2) GID[na]=$(roce_gid na 10.9.0.1) GID[nb]=$(roce_gid nb 10.9.0.2)
fi
for r in far na nb; do
    info "dev_$r" "${DEV[$r]}"
    info "gid_$r" "${GID[$r]}"
    info "env_$r" "${ENVX[$r]}"
    side_argv "$r" 10
    info "resolved_$r" "$("${A[@]}" ldd "$(command -v ibv_rc_pingpong)" | awk '/libibverbs.so.1/ {print $3}')"
done
nogid() { # ROLE...: why a pair whose side has no GID cannot run ("" = it can)
    local r
    for r; do
        if [ -z "${GID[$r]}" ]; then
            echo "not run: no RoCE v2 GID for the IPv4 address on ${DEV[$r]} in netns ${NS[$r]}" \
                "(ibv_devinfo -v -d ${DEV[$r]}: $(cat "$R/gid-err-$r" 2>/dev/null))"
            return
        fi
    done
}
for cond in $CONDITIONS; do
    set_condition matrix "$cond" veth0 far:veth1 na:vA nb:vB
    for p in "rxe-ours rxe0 far 192.0.2.1" "ours-rxe far rxe0 192.0.2.2" "ours-ours na nb 10.9.0.1"; do
        # shellcheck disable=SC2086
        set -- $p
        LINK_PID=$$ LINK_IF=veth0
        [ "$1" = ours-ours ] && LINK_PID=$NA_HOLD LINK_IF=vA
        why=$(nogid "$2" "$3")
        [ "$REACH_OK" = 1 ] || why="not run: the network setup failed (see the setup checks)"
        [ -z "$CONDITION_ERR" ] || why="not run: $CONDITION_ERR"
        run_pair_tests "$1" "$2" "$3" "$4" "$cond" "$why"
    done
done
set_condition matrix clean veth0 far:veth1 na:vA nb:vB
kill "$NA_HOLD" 2>/dev/null
echo done > "$R/complete"
