#!/bin/bash
# Runs inside the VM (started by release.sh through vm-run.sh), outside the
# release's root: enters Debian RELEASE's userland root with chroot and runs
# the vm, vm-perftest and vm-pyverbs guest scripts there, each once, with
# that root's own tools, perftest, python3 and rdma-core tests.  rxe0/rxe1
# were set up by guest-init.sh; the chroot sees them through /sys and /dev.
#
# Inside the root (all on tmpfs or bind mounts: the root itself is on the
# read-only 9p mount of the host's /):
#   /proc /sys /dev /dev/pts   the guest's
#   /tmp, /run                 fresh tmpfs
#   /tmp/ct                    compat-tests/ (read-only): the guest scripts
#   /tmp/vmrun                 the VM's run directory (results)
#   /mnt                       OUR_LD, the directory of our libibverbs.so.1
# and so the guest scripts run with UPSTREAM_LD="" (the root's own
# /usr/lib/x86_64-linux-gnu/libibverbs.so.1) and OUR_LD=/mnt.
#
#   VM_ROOTFS      the root (a host path, visible through the 9p mount)
#   OUR_LD         the host directory of our libibverbs.so.1
#   RELEASE_SUITE  compat-tests/<suite> (vm-trixie ...): its own test lists
#                  override compat-tests/vm's when present
#   RELEASE_PARTS  which parts to run (default "tools perftest pyverbs")
#   PYV_ONLY       as for pyverbs-guest.sh
#   VM_CACHE       the VM cache: the kernel package's modules are there
#
# The initramfs loads only what rxe needs (all VM suites share it); the
# rdma-core tests of trixie and sid also exercise librdmacm, so rdma_ucm
# (/dev/infiniband/rdma_cm) and what it depends on are loaded here, from the
# same kernel package, with busybox insmod (the cache's busybox-static).
# pyverbs runs with PYV_RETRY_CRASHES=1: trixie's pyverbs (56.1, Python 3.13)
# frees objects after their context when the garbage collector runs later
# ("Failed to close CQ. Errno: 9" on stderr), and now and then that
# use-after-free kills the process in whatever test runs then (SIGSEGV, in a
# different test each run, on trixie's own library too).  A crashed test runs
# once more, first in a new process, on both libraries; the report notes it.
# GUEST_UPSTREAM_LD / GUEST_OUR_LD override the two (compat-tests/vm-deb:
# /mnt holds Debian's library and ours is the root's installed one).
# Results: $VM_RUN_DIR/<part>/results/..., <part>/guest.{out,err,rc}
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CT=$(dirname "$HERE")
RF=${VM_ROOTFS:?}
die() { echo "release-guest: $*" >&2; exit 3; }

[ -x "$RF/usr/bin/bash" ] || [ -x "$RF/bin/bash" ] || die "$RF is no userland root (no bash)"
[ -d "$OUR_LD" ] || die "OUR_LD $OUR_LD is not a directory"
mount -t proc proc "$RF/proc" || die "cannot mount proc on $RF/proc"
mount --rbind /sys "$RF/sys" || die "cannot bind /sys"
mount --bind /dev "$RF/dev" || die "cannot bind /dev"
if mountpoint -q /dev/pts; then mount --bind /dev/pts "$RF/dev/pts" || die "cannot bind /dev/pts"; fi
mount -t tmpfs -o mode=1777 tmpfs "$RF/tmp" || die "cannot mount a tmpfs on $RF/tmp"
mount -t tmpfs -o mode=755 tmpfs "$RF/run" || die "cannot mount a tmpfs on $RF/run"
mkdir -p "$RF/tmp/ct" "$RF/tmp/vmrun"
mount --bind "$CT" "$RF/tmp/ct" && mount -o remount,bind,ro "$RF/tmp/ct" || die "cannot bind $CT"
mount --bind "$VM_RUN_DIR" "$RF/tmp/vmrun" || die "cannot bind $VM_RUN_DIR"
mount --bind "$OUR_LD" "$RF/mnt" && mount -o remount,bind,ro "$RF/mnt" || die "cannot bind $OUR_LD on $RF/mnt"

# ---- rdma_ucm for librdmacm (pyverbs' rdmacm tests)
moddir=$(ls -d "${VM_CACHE:?}"/kernel/*/lib/modules/"$(uname -r)" 2>/dev/null | head -1)
[ -n "$moddir" ] || die "no modules of $(uname -r) under $VM_CACHE/kernel"
mods=$(python3 "$HERE/vmtool.py" moddeps "$moddir" rdma_ucm) || die "cannot resolve rdma_ucm's dependencies"
for m in $mods; do
    n=$(basename "$m" .ko); n=${n//-/_}
    [ -e "/sys/module/$n" ] && continue
    "$VM_CACHE/busybox/bin/busybox" insmod "$moddir/$m" || die "insmod $m failed"
done
[ -e /dev/infiniband/rdma_cm ] || { sleep 1; [ -e /dev/infiniband/rdma_cm ]; } || die "rdma_ucm loaded, but no /dev/infiniband/rdma_cm"

list() { # the release's own list NAME if it has one, else compat-tests/vm's (chroot paths)
    if [ -e "$CT/$RELEASE_SUITE/$1" ]; then echo "/tmp/ct/$RELEASE_SUITE/$1"; else echo "/tmp/ct/vm/$1"; fi
}

run_part() { # PART GUEST-SCRIPT [NAME=VALUE...]
    local p=$1 g=$2 rc t0; shift 2
    mkdir -p "$VM_RUN_DIR/$p"
    echo "release-guest: $p" >&2
    t0=$(date +%s)
    chroot "$RF" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/root LANG=C.UTF-8 TERM=linux VM_RUN_DIR="/tmp/vmrun/$p" UPSTREAM_LD="${GUEST_UPSTREAM_LD-}" \
        OUR_LD="${GUEST_OUR_LD-/mnt}" "$@" \
        bash "/tmp/ct/vm/$g" > "$VM_RUN_DIR/$p/guest.out" 2> "$VM_RUN_DIR/$p/guest.err" < /dev/null
    rc=$?
    echo "$rc" > "$VM_RUN_DIR/$p/guest.rc"
    echo $(( $(date +%s) - t0 )) > "$VM_RUN_DIR/$p/guest.secs"
    [ "$rc" -eq 0 ] || { echo "release-guest: $p: exit status $rc:" >&2; tail -5 "$VM_RUN_DIR/$p/guest.err" >&2; }
}

for part in ${RELEASE_PARTS:-tools perftest pyverbs}; do
    case $part in
        tools) run_part tools suite-guest.sh SUITE_TESTS="$(list tests.txt)" ;;
        perftest) run_part perftest perftest-guest.sh SUITE_TESTS="$(list perftest-tests.txt)" ;;
        pyverbs) run_part pyverbs pyverbs-guest.sh PYV_ONLY="${PYV_ONLY:-}" PYV_RETRY_CRASHES=1 ;;
        *) die "unknown part $part" ;;
    esac
done
exit 0
