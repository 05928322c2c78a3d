#!/bin/bash
# soft-rdmacm's pyverbs part, run in a private mount namespace (unshare -m):
# rdma-core's test_rdmacm asks sysfs for the device's network interface
# (/sys/class/infiniband/<dev>/device/net/, which a device of the kernel
# has and a user-space one cannot), and skips every test without it.  A
# tmpfs over /sys/class in this namespace only says swr0's interface is lo;
# nothing else of the machine changes.  Then Debian's test_rdmacm runs on
# swr0 through swrdma-cm's interposer.
#   pyverbs-rdmacm.sh TESTS_COPY UCMA_LIB
set -u
tests=$1 ucma=$2
mount -t tmpfs none /sys/class || exit 3
mkdir -p /sys/class/infiniband/swr0/device/net/lo || exit 3
cd "$tests/.." || exit 3
LD_PRELOAD="$ucma${LD_PRELOAD:+:$LD_PRELOAD}" exec /usr/bin/python3 "$tests/run_tests.py" --dev swr0 --gid 1 -v -k test_rdmacm
