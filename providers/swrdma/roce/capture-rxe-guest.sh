#!/bin/bash
# Captures the Linux kernel Soft-RoCE (rxe) driver's RoCE v2 frames on veth1
# (both directions) in the project's VM while a few verbs programs run over
# IPv4 and IPv6: the test vectors of swrdma-roce (src/tests.rs, RXE_IPV4 and
# RXE_IPV6).  Prints "FRAME <hex>" lines (at most 3 per opcode and family);
# the programs' output goes to stderr.  Run from the repository root:
#   VM_CACHE=/work/main/build/vm-cache flock /tmp/vm.lock \
#       bash compat-tests/vm/vm-run.sh providers/swrdma/roce/capture-rxe-guest.sh > frames.txt
# IPv6 addresses on the veth pair, routed like the IPv4 ones (guest-init.sh)
ip -6 addr add 2001:db8::1/64 dev veth0 nodad
ip -6 addr add 2001:db8::2/64 dev veth1 nodad
ip -6 route add 2001:db8::2/128 dev veth0 src 2001:db8::1 table 100
ip -6 route add 2001:db8::1/128 dev veth1 src 2001:db8::2 table 100
ip -6 rule add pref 10 iif lo lookup 100
ip -6 rule add pref 1000 lookup local
ip -6 rule del pref 0 lookup local
mac0=$(< /sys/class/net/veth0/address) mac1=$(< /sys/class/net/veth1/address)
ip -6 neigh replace 2001:db8::2 lladdr $mac1 dev veth0 nud permanent
ip -6 neigh replace 2001:db8::1 lladdr $mac0 dev veth1 nud permanent
sleep 1
# GID index 2 is the RoCE v2 GID of the first global IPv6 address (seen in
# an earlier boot); check it with shell builtins (1024 GID entries: a cat
# per entry takes minutes under TCG).
g0= g1=
read -r v < /sys/class/infiniband/rxe0/ports/1/gids/2; read -r t < /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/2
case "$v $t" in "2001:0db8:"*"RoCE v2") g0=2 ;; esac
read -r v < /sys/class/infiniband/rxe1/ports/1/gids/2; read -r t < /sys/class/infiniband/rxe1/ports/1/gid_attrs/types/2
case "$v $t" in "2001:0db8:"*"RoCE v2") g1=2 ;; esac
echo "IPv6 GIDs: rxe0 $g0 rxe1 $g1" >&2
python3 - <<'PY' &
import socket, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
s.bind(("veth1", 0))
s.settimeout(30)
end = time.time() + 200
seen = {}
while time.time() < end:
    try:
        f = s.recv(65535)
    except socket.timeout:
        break
    key = None
    if len(f) > 54 and f[12:14] == b'\x08\x00' and f[23] == 17 and f[36:38] == b'\x12\xb7':
        key = (4, f[42])
    if len(f) > 74 and f[12:14] == b'\x86\xdd' and f[20] == 17 and f[56:58] == b'\x12\xb7':
        key = (6, f[62])
    if key is not None:
        op = key
        if seen.get(op, 0) < 3:
            seen[op] = seen.get(op, 0) + 1
            print("FRAME", f.hex(), flush=True)
PY
cap=$!
sleep 2
pair() { # port server-args -- client-args
    local port=$1; shift
    local srv=() cli=()
    while [ "$1" != -- ]; do srv+=("$1"); shift; done; shift; cli=("$@")
    echo "== ${srv[*]} / ${cli[*]}" >&2
    timeout 20 stdbuf -oL "${srv[@]}" >&2 & local p=$!
    sleep 4
    timeout 20 stdbuf -oL "${cli[@]}" >&2
    wait $p
    echo "== rc=$?" >&2
}
pair 18601 ibv_rc_pingpong -n 3 -s 100 -p 18601 -d rxe0 -g 1 -- ibv_rc_pingpong -n 3 -s 100 -p 18601 -d rxe1 -g 1 127.0.0.1
pair 18603 ibv_ud_pingpong -n 3 -s 99 -p 18603 -d rxe0 -g 1 -- ibv_ud_pingpong -n 3 -s 99 -p 18603 -d rxe1 -g 1 127.0.0.1
pair 18604 ib_read_lat -s 2500 -n 5 -d rxe0 -x 1 -p 18604 -- ib_read_lat -s 2500 -n 5 -d rxe1 -x 1 -p 18604 127.0.0.1
pair 18605 ib_atomic_lat -n 5 -d rxe0 -x 1 -p 18605 -- ib_atomic_lat -n 5 -d rxe1 -x 1 -p 18605 127.0.0.1
pair 18606 ib_write_lat -s 37 -I 37 -n 5 -d rxe0 -x 1 -p 18606 -- ib_write_lat -s 37 -I 37 -n 5 -d rxe1 -x 1 -p 18606 127.0.0.1
if [ -n "$g0" ] && [ -n "$g1" ]; then
    pair 18620 ibv_rc_pingpong -n 3 -s 100 -p 18620 -d rxe0 -g $g0 -- ibv_rc_pingpong -n 3 -s 100 -p 18620 -d rxe1 -g $g1 127.0.0.1
    pair 18621 ibv_ud_pingpong -n 3 -s 99 -p 18621 -d rxe0 -g $g0 -- ibv_ud_pingpong -n 3 -s 99 -p 18621 -d rxe1 -g $g1 127.0.0.1
fi
sleep 1
kill $cap; wait $cap
echo done
