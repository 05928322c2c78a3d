#!/bin/bash
# soft-rdmacm's pyverbs part for a newer Debian release (trixie, sid): that
# release's own python3-pyverbs, librdmacm and test_rdmacm, in its root
# (compat-tests/roots.sh), over OUR libibverbs.so.1, provider and
# libswrdma-ucma.so.  Run in a private mount namespace (unshare -m): every
# mount below is this namespace's only, so the root (shared, read here,
# never written) and the machine stay as they are:
#   * LIBDIR (build/lib) at ROOT/mnt, LD_LIBRARY_PATH=/mnt (our library
#     first, its provider in /mnt/libibverbs), LD_PRELOAD=/mnt/libswrdma-ucma.so;
#   * /proc, a tmpfs on /tmp and /dev/shm (multiprocessing's semaphores);
#   * sysfs at ROOT/sys with a tmpfs over its class/ naming the device's
#     interface (as pyverbs-rdmacm.sh does for bookworm: the tests ask
#     /sys/class/infiniband/<dev>/device/net/ and skip without it);
#   * an `rdma` command first on PATH (/tmp/bin) that answers `rdma link
#     show -j` with the device, its port 1 and NETDEV, as the kernel's RDMA
#     netlink answers for rxe (rdma-core 56 and later ask it before sysfs,
#     and every test errors when the kernel has no RDMA netlink, as here;
#     the real /usr/bin/rdma cannot know a device in user space); anything
#     else asked of it fails;
#   * a copy of the release's tests (gunzipped) in /tmp/tests;
#   * XDG_RUNTIME_DIR=RTDIR, a fresh 0700 directory on that /tmp; of the
#     caller's environment only SWRDMA_CM_TRACE, SWRDMA_CM_TIMEOUT_MS and
#     SWRDMA_WIRED_IDLE_MS go in.
# Then the release's /usr/bin/python3 tests/run_tests.py --dev DEV --gid GID
# -v -k test_rdmacm, its exit status this script's.
#   pyverbs-rdmacm-root.sh ROOT LIBDIR RTDIR DEVICES [DEV NETDEV GID]
#   (RTDIR an absolute path under /tmp; DEVICES for RDMAV_SOFT_DEVICES)
set -u
root=$1 lib=$2 rt=$3 devs=$4 dev=${5:-swr0} net=${6:-lo} gid=${7:-1}
case $rt in /tmp/?*) ;; *) echo "pyverbs-rdmacm-root.sh: RTDIR must be under /tmp" >&2; exit 3 ;; esac
[ -x "$root/usr/bin/python3" ] && [ -d "$root/usr/share/doc/rdma-core/tests" ] || {
    echo "pyverbs-rdmacm-root.sh: no python3 or rdma-core tests in $root" >&2; exit 3; }
set -e
mount --make-rprivate /
mount --bind "$lib" "$root/mnt"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t sysfs sysfs "$root/sys"
ifindex=$(cat "$root/sys/class/net/$net/ifindex")
mount -t tmpfs none "$root/sys/class"
mkdir -p "$root/sys/class/infiniband/$dev/device/net/$net"
cp -r "$root/usr/share/doc/rdma-core/tests" "$root/tmp/tests"
find "$root/tmp/tests" -name '*.gz' -exec gunzip -f {} +
mkdir -p -m 0700 "$root$rt"
mkdir "$root/tmp/bin"
link="[{\"ifindex\":1,\"ifname\":\"$dev\",\"port\":1,\"state\":\"ACTIVE\",\"physical_state\":\"LINK_UP\","
link="$link\"netdev\":\"$net\",\"netdev_index\":$ifindex}]"
printf '%s\n' '#!/bin/sh' \
    "# the kernel's answer to 'rdma link show -j' for $dev (see pyverbs-rdmacm-root.sh)" \
    "if [ \"\$*\" = 'link show -j' ]; then echo '$link'; exit 0; fi" \
    "echo \"rdma (pyverbs-rdmacm-root.sh's stand-in): only 'link show -j' is answered, not '\$*'\" >&2" \
    'exit 1' >"$root/tmp/bin/rdma"
chmod 0755 "$root/tmp/bin/rdma"
set +e
exec chroot "$root" /usr/bin/env -i PATH=/tmp/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 PYTHONWARNINGS=ignore::DeprecationWarning \
    XDG_RUNTIME_DIR="$rt" RDMAV_SOFT_DEVICES="$devs" LD_LIBRARY_PATH=/mnt LD_PRELOAD=/mnt/libswrdma-ucma.so \
    ${SWRDMA_CM_TRACE:+SWRDMA_CM_TRACE=$SWRDMA_CM_TRACE} ${SWRDMA_CM_TIMEOUT_MS:+SWRDMA_CM_TIMEOUT_MS=$SWRDMA_CM_TIMEOUT_MS} \
    ${SWRDMA_WIRED_IDLE_MS:+SWRDMA_WIRED_IDLE_MS=$SWRDMA_WIRED_IDLE_MS} \
    /bin/sh -c 'cd /tmp && exec /usr/bin/python3 tests/run_tests.py --dev "$1" --gid "$2" -v -k test_rdmacm' \
    sh "$dev" "$gid"
