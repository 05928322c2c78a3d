#!/bin/bash
# The main job: Debian's unmodified ibverbs-utils running on our library.
#  1. ibv_devices / ibv_devinfo on this machine's real RDMA devices (none
#     here: same answer as Debian's library), side by side with upstream.
#  2. The software RDMA device (swrdma, no hardware, no kernel module, no
#     root): ibv_devinfo lists it and an ibv_rc_pingpong server and client
#     exchange data over it.
#  3. rdma_cm on it: rping (Debian's unmodified librdmacm) through
#     swrdma-cm, the user-space /dev/infiniband/rdma_cm.
set -u
cd "$(dirname "$0")/.."
OUR_DIR=$(cd build/lib && pwd)
hr() { echo "================================================================"; }

hr
echo "Which libibverbs the tools bind to (ldd with LD_LIBRARY_PATH=$OUR_DIR):"
LD_LIBRARY_PATH=$OUR_DIR ldd "$(command -v ibv_devinfo)" | grep libibverbs
for cmd in "ibv_devices" "ibv_devinfo"; do
    hr
    echo "\$ $cmd        (real devices, on our library)"
    LD_LIBRARY_PATH=$OUR_DIR $cmd; ours=$?
    echo "[exit status $ours]   --- the same on Debian's libibverbs:"
    $cmd; up=$?
    echo "[exit status $up]"
done

# A private runtime directory for the software device's sockets.
RT=$(mktemp -d /tmp/ibverbs-demo.XXXXXX)
trap 'rm -rf "$RT"' EXIT
export XDG_RUNTIME_DIR=$RT
hr
echo "\$ RDMAV_SOFT_DEVICES=swr0 ibv_devinfo -d swr0      (software device, on our library)"
LD_LIBRARY_PATH=$OUR_DIR RDMAV_SOFT_DEVICES=swr0 ibv_devinfo -d swr0
hr
echo "\$ RDMAV_SOFT_DEVICES=swr0 ibv_rc_pingpong -d swr0 -g 1   (server)  +  ... localhost (client)"
LD_LIBRARY_PATH=$OUR_DIR RDMAV_SOFT_DEVICES=swr0 timeout 30 ibv_rc_pingpong -d swr0 -g 1 > "$RT/server.out" 2>&1 &
srv=$!
sleep 0.5
LD_LIBRARY_PATH=$OUR_DIR RDMAV_SOFT_DEVICES=swr0 timeout 30 ibv_rc_pingpong -d swr0 -g 1 localhost; cli=$?
wait $srv; s=$?
echo "--- server output:"; cat "$RT/server.out"
echo "[client exit status $cli, server exit status $s]"
hr
echo "\$ swrdma-cm rping -s -a 127.0.0.1 -v -C 5   (server)  +  swrdma-cm rping -c ... (client)"
echo "  (rdma_cm on the software device: Debian's unmodified librdmacm and rping)"
LD_LIBRARY_PATH=$OUR_DIR RDMAV_SOFT_DEVICES=swr0 timeout 30 build/bin/swrdma-cm rping -s -a 127.0.0.1 -p 7174 -v -C 5 \
    > "$RT/rping.out" 2>&1 &
rsrv=$!
sleep 0.5
LD_LIBRARY_PATH=$OUR_DIR RDMAV_SOFT_DEVICES=swr0 timeout 30 build/bin/swrdma-cm rping -c -a 127.0.0.1 -p 7174 -v -C 5; rcli=$?
wait $rsrv; rs=$?
echo "--- server output:"; cat "$RT/rping.out"
echo "[client exit status $rcli, server exit status $rs]"
hr
ok=1
if [ $cli -eq 0 ] && [ $s -eq 0 ]; then echo "demo: pingpong passed"; else echo "demo: pingpong FAILED"; ok=0; fi
if [ $rcli -eq 0 ] && [ $rs -eq 0 ]; then echo "demo: rping (rdma_cm) passed"; else echo "demo: rping (rdma_cm) FAILED"; ok=0; fi
[ $ok -eq 1 ] || exit 1
