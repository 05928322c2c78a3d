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
MISUSE=${GUEST_MISUSE:-} bash compat-tests/vm-rdmacm/workloads.sh "$VM_RUN_DIR/kernel" 192.0.2.1 \
    env SWRDMA_UCMA_KERNEL=1 LD_PRELOAD="$PWD/build/lib/libswrdma-ucma.so"
