# vm-rdmacm's guest part (run by vm-run.sh, cwd = the repository): the
# kernel's rdma_cm (rdma_ucm, loaded from the VM cache's kernel package with
# busybox insmod) on rxe0/rxe1, Debian's libibverbs and librdmacm, every
# command recorded by our interposer in pass-through mode
# (SWRDMA_UCMA_KERNEL=1: the real /dev/infiniband/rdma_cm, only logged).
set -u
cache=${GUEST_VM_CACHE:?}
busybox=$cache/busybox/bin/busybox
moddir=$(ls -d "$cache"/kernel/*/lib/modules/"$(uname -r)" | head -1)
for m in $(python3 compat-tests/vm/vmtool.py moddeps "$moddir" rdma_ucm); do
    n=$(basename "$m" .ko); n=${n//-/_}
    [ -e "/sys/module/$n" ] && continue
    "$busybox" insmod "$moddir/$m" || echo "insmod $m failed"
done
[ -e /dev/infiniband/rdma_cm ] || sleep 1
[ -e /dev/infiniband/rdma_cm ] || { echo "vm-rdmacm: no /dev/infiniband/rdma_cm after loading rdma_ucm"; exit 3; }
B=192.0.2.2 MISUSE=${GUEST_MISUSE:-} bash compat-tests/vm-rdmacm/workloads.sh "$VM_RUN_DIR/kernel" 192.0.2.1 \
    env SWRDMA_UCMA_KERNEL=1 LD_PRELOAD="$PWD/build/lib/libswrdma-ucma.so"
# Ours in its normal mode beside the kernel's (a machine with kernel RDMA
# devices and rdma_ucm): swr0 listed by our libibverbs, the interposer
# loaded, and the same workloads on rxe's address: every id must reach the
# kernel's rdma_cm, and the logs must be the kernel's.  (XDG_RUNTIME_DIR on
# the guest's tmpfs: the 9p root takes no Unix sockets.)
export XDG_RUNTIME_DIR=/tmp/xr
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
HYBRID=(env LD_LIBRARY_PATH="$PWD/build/lib" RDMAV_SOFT_DEVICES=swr0 LD_PRELOAD="$PWD/build/lib/libswrdma-ucma.so")
B=192.0.2.2 MISUSE=${GUEST_MISUSE:-} bash compat-tests/vm-rdmacm/workloads.sh "$VM_RUN_DIR/hybrid" 192.0.2.1 "${HYBRID[@]}"
# One process, one channel, two connections: to an rdma_server on swr0
# (127.0.0.1, ours) and to one on rxe0 (192.0.2.1, the kernel's).
if [ -n "${GUEST_MIXED:-}" ]; then
    timeout 60 rdma_server -s 192.0.2.1 -p 7411 >"$VM_RUN_DIR/mixed.kserver.out" 2>&1 &
    k=$!
    timeout 60 "${HYBRID[@]}" rdma_server -s 127.0.0.1 -p 7412 >"$VM_RUN_DIR/mixed.sserver.out" 2>&1 &
    s=$!
    sleep 2
    timeout 60 "${HYBRID[@]}" "$GUEST_MIXED" 127.0.0.1 7412 192.0.2.1 7411 >"$VM_RUN_DIR/mixed.out" 2>&1
    echo "$?" >"$VM_RUN_DIR/mixed.rc"
    wait $k; echo "$?" >"$VM_RUN_DIR/mixed.kserver.rc"
    wait $s; echo "$?" >"$VM_RUN_DIR/mixed.sserver.rc"
fi
. compat-tests/vm-rdmacm/wire-guest.sh
