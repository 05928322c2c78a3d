#!/bin/bash
# The main job: Debian's unmodified ibverbs-utils tools running on our
# library (LD_LIBRARY_PATH), next to the same tools on Debian's library.
set -u
cd "$(dirname "$0")/.."
OUR_DIR=$(cd build/lib && pwd)
for cmd in "ibv_devices" "ibv_devinfo" "ibv_devinfo -v"; do
    echo "================================================================"
    echo "\$ $cmd        (on our libibverbs: LD_LIBRARY_PATH=$OUR_DIR)"
    LD_LIBRARY_PATH=$OUR_DIR $cmd; ours=$?
    echo "[exit status $ours]"
    echo "--- the same on Debian's libibverbs:"
    $cmd; up=$?
    echo "[exit status $up]"
done
echo "================================================================"
echo "Which libibverbs the tool binds to (ldd with our directory first):"
LD_LIBRARY_PATH=$OUR_DIR ldd "$(command -v ibv_devinfo)" | grep libibverbs
