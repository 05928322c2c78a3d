#!/bin/bash
# PID 1 inside the VM, after the initramfs switch_root'ed into the host's
# root filesystem (read-only 9p).  Argument: the run directory (read-write 9p,
# same path as on the host) holding script.sh, env and mode, written by
# vm-run.sh.  Sets up veth0/veth1 + rxe0/rxe1, runs the script, writes
# stdout, stderr, status there and powers the VM off.
RUN=$1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C.UTF-8 TERM=${TERM:-linux}
umask 022

[ -f "$RUN/env" ] && . "$RUN/env"

poweroff_now() {
    sync
    # busybox (from the harness cache, visible via 9p) powers off at once;
    # the sysrq fallback is asynchronous, so wait for it without exec'ing.
    [ -x "${VM_BUSYBOX:-}" ] && "$VM_BUSYBOX" poweroff -f
    echo o > /proc/sysrq-trigger
    sleep 60 2>/dev/null || while :; do :; done
}

log() {
    local up _
    read -r up _ < /proc/uptime
    echo "vm-guest: [$up] $*"; echo "[$up] $*" >> "$RUN/setup.log"
}

setup_fail() {
    log "SETUP FAILED: $*"
    echo "setup-failed: $*" > "$RUN/setup-failed"
    poweroff_now
}

cd /
echo vm > /proc/sys/kernel/hostname
: > "$RUN/setup.log"

# ---- network: loopback (TCP exchange) and the veth pair the two rxe sit on
log "setting up veth0/veth1"
# Both addresses are local, so the kernel would route rxe0 -> 192.0.2.2 over
# "lo", where rxe drops it (skb->dev is not an rxe netdev).  Send locally
# generated traffic for the peer's address out of the veth instead (table
# 100, consulted first for output only: iif lo), keep the local table for
# received packets, accept our own addresses as sources, and skip ARP.
# veth MTU 1500: rxe's active_mtu becomes 1024 (with MTU 1024 it would be
# 512, too small for ibv_ud_pingpong -s 1024).
# no IPv6 DAD: link-local addresses (and their GIDs) exist as soon as the
# links are up, so the GID tables do not change while tests run
echo 0 > /proc/sys/net/ipv6/conf/default/accept_dad
echo 0 > /proc/sys/net/ipv6/conf/all/accept_dad
ip -batch - <<'IPCMDS' || setup_fail "ip link/addr/route/rule setup"
link set lo up
link add veth0 type veth peer name veth1
link set veth0 mtu 1500
link set veth1 mtu 1500
addr add 192.0.2.1/24 dev veth0
addr add 192.0.2.2/24 dev veth1
link set veth0 up
link set veth1 up
route add 192.0.2.2/32 dev veth0 src 192.0.2.1 table 100
route add 192.0.2.1/32 dev veth1 src 192.0.2.2 table 100
rule add pref 10 iif lo lookup 100
rule add pref 1000 lookup local
rule del pref 0 lookup local
IPCMDS
for k in all/accept_local veth0/accept_local veth1/accept_local \
         all/rp_filter default/rp_filter veth0/rp_filter veth1/rp_filter; do
    v=1; [ "${k#*/}" = rp_filter ] && v=0
    echo $v > /proc/sys/net/ipv4/conf/$k || setup_fail "sysctl $k"
done
mac0=$(< /sys/class/net/veth0/address) mac1=$(< /sys/class/net/veth1/address)
ip -batch - <<IPCMDS || setup_fail "ip neigh"
neigh replace 192.0.2.2 lladdr $mac1 dev veth0 nud permanent
neigh replace 192.0.2.1 lladdr $mac0 dev veth1 nud permanent
IPCMDS

# ---- Soft-RoCE
log "adding rxe0/rxe1"
rdma link add rxe0 type rxe netdev veth0 || setup_fail "rdma link add rxe0"
rdma link add rxe1 type rxe netdev veth1 || setup_fail "rdma link add rxe1"
ok=
# (looked at every 20 ms, the states read with builtins, sleeping in read's
# timeout on a pipe this shell holds both ends of, closed after: a grep or
# sleep process costs ~0.3 s under TCG)
exec {nap_fd}<> <(:)
for _ in $(seq 500); do
    st0= st1=
    read -r st0 2>/dev/null < /sys/class/infiniband/rxe0/ports/1/state
    read -r st1 2>/dev/null < /sys/class/infiniband/rxe1/ports/1/state
    if [[ $st0 == *ACTIVE* && $st1 == *ACTIVE* ]] &&
       grep -qs . /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/* &&
       [ -e /dev/infiniband/uverbs1 ]; then ok=1; break; fi
    read -r -t 0.02 -u "$nap_fd" _
done
exec {nap_fd}<&-
[ -n "$ok" ] || setup_fail "rxe0/rxe1 ports did not become ACTIVE"
rdma link show >> "$RUN/setup.log" 2>&1
log "rxe0 on veth0 (192.0.2.1), rxe1 on veth1 (192.0.2.2): ready"

# ---- the script
cd "${VM_CWD:-/}" 2>/dev/null || cd /
if [ -e "$RUN/shell" ]; then
    echo "vm-guest: interactive shell (exit or Ctrl-D powers the VM off)"
    setsid -c bash -i <>/dev/ttyS0 >&0 2>&1
    echo 0 > "$RUN/status"
else
    bash "$RUN/script.sh" > "$RUN/stdout" 2> "$RUN/stderr" < /dev/null
    echo $? > "$RUN/status"
fi
poweroff_now
