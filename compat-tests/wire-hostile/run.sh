#!/bin/bash
# compat-tests/wire-hostile: a wire device that carries real traffic, under
# hostile RoCE v2 packets (valid ICRC) from another host of its network
# (issue 23, item 4).  The victim (victim.c) is an RC pair between two
# network namespaces over rw0 doing RDMA WRITE + READ + SEND with every
# byte checked; its server also has QPs whose peer is the attacker (RC, UC,
# UD, and RC QPs in RESET, INIT, ERR) and an MR between guard pages.  The
# attacker (roce_hostile, providers/swrdma/roce/examples/) sends each kind
# of `roce_hostile list` (kinds.txt says what each is) and records what the
# device sent back.  Per kind, one check (see lib.sh): no crash, no hang
# (the traffic goes on), the traffic's data intact, guards and canary
# intact, no amplification, the kind's own condition; at the end the
# victim's VmRSS growth (bound 1 MB).  Then the answers are compared per
# kind with the kernel's rxe's (rxe-answers.txt, recorded in the VM by
# compat-tests/vm/hostile.sh): "rxe/KIND" fails on a difference not listed
# in expected-differences.txt, and on a listed one that is not there (a
# stale line).
# Network namespaces this suite creates: hxa (169.254.79.1 on vhxa: the
# victim's server) and hxb (169.254.79.2 on vhxb: its client; 169.254.79.3
# on hxb's lo: the attacker, a third address behind the same veth, not one
# of the client's device), a veth pair; link-local addresses only.  Needs
# root (ip netns).
# Environment: FLOOD_SECS (10), FLOOD_RATE (20000 packets/s), RSS_BOUND_KB,
# KINDS (a regex: only those kinds), VICTIM_ENV (NAME=VALUE words for the
# victim, e.g. SWRDMA_WIRE_TRACE=1).
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin wire-hostile --clean
need ip=iproute2 gcc=gcc cargo=cargo
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (ip netns)"
HERE=$ROOT/compat-tests/wire-hostile
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
[ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing the swrdma provider (run: make swrdma)"
cargo build -q --release -p swrdma-roce --example roce_hostile 2>"$SCRATCH/craft.log" ||
    fail_early roce_hostile "does not build (see $SCRATCH/craft.log)"
CRAFT_HOSTILE=$(cargo metadata -q --format-version 1 --no-deps 2>/dev/null |
    sed -nE 's/.*"target_directory":"([^"]*)".*/\1/p')/release/examples/roce_hostile
[ -x "$CRAFT_HOSTILE" ] || fail_early roce_hostile "not found at $CRAFT_HOSTILE"
gcc -Wall -O1 -I"$ROOT/$OUR_INCLUDE" -o "$SCRATCH/victim" "$HERE/victim.c" \
    -L"$LIBDIR" -libverbs 2>"$SCRATCH/victim.log" || fail_early victim.c "does not build (see $SCRATCH/victim.log)"
. "$HERE/lib.sh"
LOG=$SCRATCH/log
: >"$LOG"

NETNS="hxa hxb"
cleanup() {
    exec 3>&- 4<&- 5>&- 6<&- 2>/dev/null
    [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null
    [ -n "${CPID:-}" ] && kill "$CPID" 2>/dev/null
    for n in $NETNS; do ip netns del $n 2>/dev/null; done
}
trap cleanup EXIT
cleanup
netns() { # hxa .1 on vhxa <-veth-> hxb .2 on vhxb, .3 on hxb's lo
    veth_netns hxa vhxa 169.254.79.1 hxb vhxb 169.254.79.2 &&
        ip -n hxb addr add 169.254.79.3/32 dev lo
}
netns || fail_early netns "cannot create the namespaces and the veth pair"
for n in hxa hxb; do mkdir -p "$SCRATCH/rt-$n" && chmod 0700 "$SCRATCH/rt-$n"; done
sleep 1 # (the veth pair comes up)

SRV=169.254.79.1 CLI=169.254.79.2 ATT=169.254.79.3
mkfifo "$SCRATCH/s.in" "$SCRATCH/s.out" "$SCRATCH/c.in" "$SCRATCH/c.out"
side() { # NETNS DEV ROLE ARGS...
    local ns=$1 dev=$2; shift 2
    ip netns exec "$ns" env XDG_RUNTIME_DIR="$SCRATCH/rt-$ns" LD_LIBRARY_PATH="$LIBDIR" \
        RDMAV_SOFT_DEVICES="rw0@$dev" ${VICTIM_ENV:-} timeout 900 "$SCRATCH/victim" "$@"
}
side hxa vhxa server rw0 $SRV $CLI $ATT <"$SCRATCH/s.in" >"$SCRATCH/s.out" 2>"$SCRATCH/server.err" &
SPID=$!
exec 3>"$SCRATCH/s.in" 4<"$SCRATCH/s.out"
side hxb vhxb client rw0 $CLI $SRV <"$SCRATCH/c.in" >"$SCRATCH/c.out" 2>"$SCRATCH/client.err" &
CPID=$!
exec 5>"$SCRATCH/c.in" 6<"$SCRATCH/c.out"
read -r -t 20 w SQPN SRKEY SVA <&4 || w=""
[ "$w" = qpn ] || fail_early victim "the server did not start: $w $SQPN (see $SCRATCH/server.err)"
read -r -t 20 w CQPN _ _ <&6 || w=""
[ "$w" = qpn ] || fail_early victim "the client did not start: $w $CQPN (see $SCRATCH/client.err)"
echo "peer $CQPN" >&3
read -r -t 20 w <&4 || w=""
[ "$w" = ready ] || fail_early victim "the server did not connect: $w"
echo "peer $SQPN $SRKEY $SVA" >&5
read -r -t 20 w <&6 || w=""
[ "$w" = ready ] || fail_early victim "the client did not connect: $w"
TQPN=$SQPN
TARGETS=$(ask 3 4 targets)
case "$TARGETS" in targets\ *) TARGETS=${TARGETS#targets } ;; *) fail_early victim "no targets: $TARGETS" ;; esac
TARGETS="$TARGETS secs=${FLOOD_SECS:-10} rate=${FLOOD_RATE:-20000}"
echo "victim: t=$TQPN $TARGETS" >>"$LOG"
sleep 1
c=$(cstat)
[ "$(echo "$c" | cut -d' ' -f2)" -gt 0 ] 2>/dev/null || fail_early traffic "the victim's traffic does not run: '$c'"

ATTACK() { ip netns exec hxb "$CRAFT_HOSTILE" $ATT $SRV "$@"; }
T0=$SECONDS
hostile_run "$SCRATCH/answers-rw0.txt"
echo "final: server $(sstat) client $(cstat); run $((SECONDS - T0)) s" >>"$LOG"
echo "quit" >&3; echo "quit" >&5

# --- rw0's answers against rxe's, per kind
python3 "$HERE/compare.py" "$SCRATCH/answers-rw0.txt" "$HERE/rxe-answers.txt" "$HERE/expected-differences.txt" \
    >"$SCRATCH/compare.out" 2>&1
while IFS= read -r l; do
    case "$l" in
        PASS\ *) pass "${l#PASS }" ;;
        FAIL\ *) n=${l#FAIL }; fail "${n%%: *}" "${n#*: }" ;;
        SKIP\ *) n=${l#SKIP }; skip "${n%%: *}" "${n#*: }" ;;
    esac
done <"$SCRATCH/compare.out"
echo "(answers: $SCRATCH/answers-rw0.txt, report: $SCRATCH/compare.out, log: $LOG; $RSS_LINE; $((SECONDS - T0)) s)" >&2
finish
