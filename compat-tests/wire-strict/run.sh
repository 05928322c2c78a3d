#!/bin/bash
# compat-tests/wire-strict: what a wire device takes from other hosts on
# its network, checked with hand-made RoCE v2 packets (valid ICRC, from
# roce_craft) at QPs of a victim program - each rule as the kernel's rxe
# has it (issue 23, item 2), each check with a positive control (the same
# packet from the right place is taken), so a check can fail.
#   addr/...   an RC or UC QP takes packets only from the address of its
#              address vector (rxe_recv.c check_addr): a stranger's WRITE
#              does not land, its SEND completes nothing
#   type/...   an RC QP drops a UD packet addressed to its QPN
#   mtu/...    payloads that do not fit their place at the path MTU (1024)
#              as rxe_resp.c check_length: RC SEND ONLY of 1400 bytes: NAK,
#              QP to error, no successful receive; UC: the message dropped,
#              the QP lives on; UC FIRST shorter than the MTU: dropped; UD
#              over the port's MTU: dropped
#   limits/... modify_qp beyond max_qp_rd_atom or with timeout > 31: EINVAL
#   op/...     an RDMA READ on a UC QP, an RDMA WRITE on a UD QP: posted,
#              completed with LOC_QP_OP_ERR, the QP to error (as rxe, whose
#              provider posts any opcode and whose requester fails it)
#   tclass/... an address handle's traffic class is the datagram's IP TOS
#              and so the receiver's GRH's (vm-sweep's case, over rw0@lo)
# Two network namespaces this suite creates (wxa: 169.254.78.1 on wxva;
# wxb: 169.254.78.2, the victim's peer, and .3, the stranger, on wxvb), a
# veth pair; link-local addresses only.  Needs root (ip netns).
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin wire-strict --clean
need ip=iproute2 gcc=gcc cargo=cargo
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (ip netns)"
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
[ -e "$LIBDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early provider "missing the swrdma provider (run: make swrdma)"
cargo build -q --release -p swrdma-roce --example roce_craft 2>"$SCRATCH/craft.log" ||
    fail_early roce_craft "does not build (see $SCRATCH/craft.log)"
CRAFT=$(cargo metadata -q --format-version 1 --no-deps 2>/dev/null |
    sed -nE 's/.*"target_directory":"([^"]*)".*/\1/p')/release/examples/roce_craft
[ -x "$CRAFT" ] || fail_early roce_craft "not found at $CRAFT"
gcc -Wall -O1 -I"$ROOT/$OUR_INCLUDE" -o "$SCRATCH/victim" compat-tests/wire-strict/victim.c \
    -L"$LIBDIR" -libverbs 2>"$SCRATCH/victim.log" || fail_early victim.c "does not build (see $SCRATCH/victim.log)"

cleanup() { ip netns del wxa 2>/dev/null; ip netns del wxb 2>/dev/null; }
trap cleanup EXIT
cleanup
veth_netns wxa wxva 169.254.78.1 wxb wxvb 169.254.78.2 &&
    ip -n wxb addr add 169.254.78.3/24 dev wxvb ||
    fail_early netns "cannot create the namespaces and the veth pair"
mkdir -p "$SCRATCH/rt"; chmod 0700 "$SCRATCH/rt"
sleep 1 # (the veth pair comes up)

ME=169.254.78.1 PEER=169.254.78.2 STRANGER=169.254.78.3
coproc V { ip netns exec wxa env XDG_RUNTIME_DIR="$SCRATCH/rt" LD_LIBRARY_PATH="$LIBDIR" \
    RDMAV_SOFT_DEVICES=rw0@wxva timeout 120 "$SCRATCH/victim" rw0 $ME $PEER 2>"$SCRATCH/victim.err"; }
read -r -t 20 word RC UC UD RKEY VA <&"${V[0]}" || word=""
[ "$word" = ready ] || fail_early victim "did not start: $word $RC (see $SCRATCH/victim.err)"
echo "victim: rc $RC uc $UC ud $UD rkey $RKEY va $VA" >"$SCRATCH/log"

craft() { # FROM OPCODE DQPN PSN key=value...: one packet at the victim
    local from=$1; shift
    ip netns exec wxb "$CRAFT" "$from" $ME "$@" >>"$SCRATCH/log" 2>&1
}
peek() { # OFF: 8 bytes of the victim's MR, hex
    echo "peek $1" >&"${V[1]}"; local w o h; read -r -t 10 w o h <&"${V[0]}"; echo "$h"
}
POLL=""
poll() { # completions within 400 ms and the QP states, one line
    echo "poll 400" >&"${V[1]}"; local l; POLL=""
    while read -r -t 10 l <&"${V[0]}" && [ "$l" != end ]; do POLL="$POLL$l; "; done
    echo "poll: $POLL" >>"$SCRATCH/log"
}
has() { case "$POLL" in *"$1"*) return 0 ;; esac; return 1; }
check() { # NAME COND WHY
    if eval "$2"; then pass "$1"; else fail "$1" "$3 (poll: $POLL)"; fi
}
Z=0000000000000000

# --- addresses: RC WRITE ONLY (0x0a), UC WRITE ONLY (0x2a) at offset 0 / 128
craft $STRANGER 0x0a "$RC" 0 "reth=$VA:$RKEY:8" len=8 fill=0xee
craft $STRANGER 0x2a "$UC" 0 "reth=$((VA + 128)):$RKEY:8" len=8 fill=0xcc
poll
check "addr/rc WRITE from a stranger does not land" '[ "$(peek 0)" = $Z ]' "the MR changed: $(peek 0)"
check "addr/uc WRITE from a stranger does not land" '[ "$(peek 128)" = $Z ]' "the MR changed: $(peek 128)"
craft $PEER 0x0a "$RC" 0 "reth=$VA:$RKEY:8" len=8 fill=0xee
craft $PEER 0x2a "$UC" 0 "reth=$((VA + 128)):$RKEY:8" len=8 fill=0xcc
poll
check "addr/rc the same WRITE from the peer lands (control)" '[ "$(peek 0)" = eeeeeeeeeeeeeeee ]' "MR: $(peek 0)"
check "addr/uc the same WRITE from the peer lands (control)" '[ "$(peek 128)" = cccccccccccccccc ]' "MR: $(peek 128)"

# --- a UD SEND ONLY (0x64) from the peer at the RC QP, then SENDs from a stranger
craft $PEER 0x64 "$RC" 1 deth=0x11111111:0x222 len=100
poll
check "type/rc QP drops a UD SEND addressed to it" '! has "wc rc"' "a receive completed"
craft $STRANGER 0x04 "$RC" 1 len=100
craft $STRANGER 0x24 "$UC" 1 len=100
poll
check "addr/rc SEND from a stranger completes nothing" '! has "wc rc"' "a receive completed"
check "addr/uc SEND from a stranger completes nothing" '! has "wc uc"' "a receive completed"
craft $PEER 0x04 "$RC" 1 len=1000
craft $PEER 0x24 "$UC" 1 len=1000
poll
check "addr/rc SEND of 1000 bytes from the peer completes (control)" 'has "wc rc 0 1000;"' "no receive completed"
check "addr/uc SEND of 1000 bytes from the peer completes (control)" 'has "wc uc 0 1000;"' "no receive completed"

# --- path MTU 1024
craft $PEER 0x24 "$UC" 2 len=1400
craft $PEER 0x20 "$UC" 3 len=500
craft $PEER 0x22 "$UC" 4 len=100
poll
check "mtu/uc SEND ONLY of 1400 bytes and a FIRST of 500 are dropped" '! has "wc uc" && has "state 3 3 3"' \
    "a receive completed or a QP left RTS"
craft $PEER 0x20 "$UC" 5 len=1024
craft $PEER 0x22 "$UC" 6 len=100
poll
check "mtu/uc FIRST of 1024 + LAST of 100 complete (control)" 'has "wc uc 0 1124;"' "no receive of 1124 bytes"
craft $STRANGER 0x64 "$UD" 0 deth=0x11111111:0x222 len=1400
poll
check "mtu/ud SEND of 1400 bytes over the port MTU (1024) is dropped" '! has "wc ud"' "a receive completed"
craft $STRANGER 0x64 "$UD" 0 deth=0x11111111:0x222 len=1000
poll
check "mtu/ud SEND of 1000 bytes from any address completes (control)" 'has "wc ud 0 1040;"' "no receive of 1000+40 bytes"
craft $PEER 0x04 "$RC" 2 len=1400
poll
check "mtu/rc SEND ONLY of 1400 bytes: QP to error, no successful receive" \
    '! has "wc rc 0" && case "$POLL" in *"state 6 "*) true ;; *) false ;; esac' "not refused"

# --- the device's limits at modify_qp, as rxe_qp_chk_attr
echo limits >&"${V[1]}"; read -r -t 10 w r1 r2 r3 <&"${V[0]}"; echo "limits: $r1 $r2 $r3" >>"$SCRATCH/log"
check "limits/max_rd_atomic 129 > max_qp_rd_atom 128: EINVAL" '[ "$r1" = 22 ]' "ibv_modify_qp returned $r1"
check "limits/timeout 32 (5 bits): EINVAL" '[ "$r2" = 22 ]' "ibv_modify_qp returned $r2"
check "limits/max_rd_atomic 128, timeout 31: taken (control)" '[ "$r3" = 0 ]' "ibv_modify_qp returned $r3"

# --- operations the transport lacks (UC: READ; UD: WRITE): taken at post,
# completed LOC_QP_OP_ERR (2), the QP to error (6) - as rxe's requester
for q in 1 2; do
    echo "post $q" >&"${V[1]}"; read -r -t 10 w posted <&"${V[0]}"; echo "post $q: $posted" >>"$SCRATCH/log"
    poll
    n=$([ $q = 1 ] && echo "uc RDMA READ" || echo "ud RDMA WRITE")
    st=$([ $q = 1 ] && echo "state 6 6 3" || echo "state 6 6 6")
    check "op/$n: posted, completes LOC_QP_OP_ERR, QP to error" \
        '[ "$posted" = 0 ] && has "wc ${n%% *} 2 " && has "$st"' "ibv_post_send returned $posted"
done
echo quit >&"${V[1]}"
wait "$V_PID" 2>/dev/null

# --- the traffic class of an address handle goes into the IP header (TOS)
# and so into the receiver's GRH, as rxe (vm-sweep's case
# ud_traffic_class_in_grh, a UD SEND with traffic class 0x68 to a QP of the
# same process, here over rw0@lo in a namespace of its own)
if cc -O1 -Wall -Wno-unused-parameter -I"${UPSTREAM_INCLUDE:-/usr/include}" -o "$SCRATCH/sweep" \
    compat-tests/vm-sweep/sweep.c -L"$LIBDIR" -l:libibverbs.so.1 2>"$SCRATCH/sweep.log"; then
    ip netns del wxt 2>/dev/null
    ip netns add wxt && ip -n wxt link set lo up
    out=$(ip netns exec wxt env XDG_RUNTIME_DIR="$SCRATCH/rt" LD_LIBRARY_PATH="$LIBDIR" RDMAV_SOFT_DEVICES=rw0@lo \
        timeout 60 "$SCRATCH/sweep" rw0 1 ud_traffic_class_in_grh 2>>"$SCRATCH/sweep.log" | tail -1)
    ip netns del wxt 2>/dev/null
    echo "tclass: $out" >>"$SCRATCH/log"
    POLL=$out
    check "tclass/ud traffic class 0x68 reaches the receiver's GRH (IP TOS)" 'has "tos=0x68"' "sweep said: $out"
else
    fail "tclass/ud traffic class 0x68 reaches the receiver's GRH (IP TOS)" "sweep.c does not build (see $SCRATCH/sweep.log)"
fi
finish
