#!/bin/bash
# soft-rdmacm's pyverbs part, run in a private mount namespace (unshare -m):
# rdma-core's test_rdmacm asks sysfs for the device's network interface
# (/sys/class/infiniband/<dev>/device/net/, which a device of the kernel
# has and a user-space one cannot), and skips every test without it.  A
# tmpfs over /sys/class in this namespace only says the device's interface
# is NETDEV (swr0: lo; the wire device rw0@<if>: <if>, whose first address
# the tests take for their server and client, both in this process's
# network namespace); nothing else of the machine changes.  Then Debian's
# test_rdmacm runs on DEV with GID index GID through swrdma-cm's
# interposer.
#   pyverbs-rdmacm.sh TESTS_COPY UCMA_LIB [DEV NETDEV GID]   (default: swr0 lo 1)
set -u
tests=$1 ucma=$2 dev=${3:-swr0} net=${4:-lo} gid=${5:-1}
mount -t tmpfs none /sys/class || exit 3
mkdir -p "/sys/class/infiniband/$dev/device/net/$net" || exit 3
cd "$tests/.." || exit 3
LD_PRELOAD="$ucma${LD_PRELOAD:+:$LD_PRELOAD}" exec /usr/bin/python3 "$tests/run_tests.py" --dev "$dev" --gid "$gid" -v -k test_rdmacm
