#!/bin/bash
# Runs inside the VM (started by hostile.sh through vm-run.sh): the
# hostile-packet kinds of compat-tests/wire-hostile at the kernel's rxe.
# The same hosts as the host suite, except that the victim's server runs in
# the guest's root network namespace (the kernel's rxe lives there): veth
# vhxa (169.254.79.1) with the rxe device rxeh on it, Debian's libibverbs;
# its client is ours (rw0@vhxb in netns hxb, 169.254.79.2), the attacker
# roce_hostile in hxb too, from 169.254.79.3 on hxb's lo.
# wire-hostile/lib.sh does the rest.
# Environment (hostile.sh): UPSTREAM_LD, OUR_LD, VICTIM, CRAFT_HOSTILE,
# FLOOD_SECS, FLOOD_RATE, HOSTILE_WAIT (ms of quiet after a kind: 1000).
# Results: $VM_RUN_DIR/results/{checks,answers-rxe.txt,log,complete}.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/guest-lib.sh"
LOG=$R/log
: >"$LOG"
: >"$R/checks"
pass() { echo "PASS $1" >>"$R/checks"; }
fail() { echo "FAIL $1: $2" >>"$R/checks"; }
skip() { echo "SKIP $1: $2" >>"$R/checks"; }
die() { fail setup "$1"; touch "$R/complete"; exit 0; }

netns() { # vhxa .1 (root netns) <-veth-> hxb: .2 on vhxb, .3 on its lo
    ip netns add hxb && ip link add vhxa type veth peer name vhxb && ip link set vhxb netns hxb &&
        ip addr add 169.254.79.1/24 dev vhxa && ip -n hxb addr add 169.254.79.2/24 dev vhxb &&
        ip -n hxb addr add 169.254.79.3/32 dev lo &&
        ip link set vhxa up && ip -n hxb link set vhxb up && ip -n hxb link set lo up
}
netns || die "cannot create the namespace and the veth pair"
rdma link add rxeh type rxe netdev vhxa || die "rdma link add rxeh"
mkdir -p /tmp/rt-hxb && chmod 0700 /tmp/rt-hxb
sleep 2
echo "kernel=$(uname -r)" >"$R/info"

SRV=169.254.79.1 CLI=169.254.79.2 ATT=169.254.79.3
F=/tmp/hostile
mkdir -p $F && mkfifo $F/s.in $F/s.out $F/c.in $F/c.out
env LD_LIBRARY_PATH="$UPSTREAM_LD" timeout 1200 "$VICTIM" server rxeh $SRV $CLI $ATT \
    <$F/s.in >$F/s.out 2>"$R/server.err" &
exec 3>$F/s.in 4<$F/s.out
ip netns exec hxb env XDG_RUNTIME_DIR=/tmp/rt-hxb LD_LIBRARY_PATH="$OUR_LD" RDMAV_SOFT_DEVICES=rw0@vhxb \
    timeout 1200 "$VICTIM" client rw0 $CLI $SRV <$F/c.in >$F/c.out 2>"$R/client.err" &
exec 5>$F/c.in 6<$F/c.out
read -r -t 60 w SQPN SRKEY SVA <&4 || w=""
[ "$w" = qpn ] || die "the server did not start: $w $SQPN"
read -r -t 60 w CQPN _ _ <&6 || w=""
[ "$w" = qpn ] || die "the client did not start: $w $CQPN"
echo "peer $CQPN" >&3
read -r -t 60 w <&4 || w=""
[ "$w" = ready ] || die "the server did not connect: $w"
echo "peer $SQPN $SRKEY $SVA" >&5
read -r -t 60 w <&6 || w=""
[ "$w" = ready ] || die "the client did not connect: $w"

. "$HERE/../wire-hostile/lib.sh"
ASK_T=30
TQPN=$SQPN
TARGETS=$(ask 3 4 targets)
case "$TARGETS" in targets\ *) TARGETS=${TARGETS#targets } ;; *) die "no targets: $TARGETS" ;; esac
TARGETS="$TARGETS secs=${FLOOD_SECS:-5} rate=${FLOOD_RATE:-2000} wait=${HOSTILE_WAIT:-1000}"
echo "victim: t=$TQPN $TARGETS" >>"$LOG"
sleep 2
c=$(cstat)
[ "$(echo "$c" | cut -d' ' -f2)" -gt 0 ] 2>/dev/null || die "the victim's traffic does not run: '$c'"
ATTACK() { ip netns exec hxb "$CRAFT_HOSTILE" $ATT $SRV "$@"; }
hostile_run "$R/answers-rxe.txt"
echo "quit" >&3; echo "quit" >&5
touch "$R/complete"
