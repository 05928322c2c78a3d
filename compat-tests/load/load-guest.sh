#!/bin/bash
# Runs inside the VM (started by compat-tests/load/run.sh through
# compat-tests/vm/vm-run.sh): `load threads` on Soft-RoCE rxe0, first on
# Debian's libibverbs (the reference), then on ours, in the same boot.
# Results: $VM_RUN_DIR/results/threads-{upstream,ours}/{out,err,rc}, info.
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   BIN: the directory holding load; LOAD_SECONDS, LOAD_WARMUP, LOAD_THREADS
set -u
. "$(cd "$(dirname "$0")/../vm" && pwd)/guest-lib.sh"
G0=$(gid_index rxe0)
{
    echo "gid_rxe0=$G0"
    echo "kernel=$(uname -r)"
    echo "nproc=$(nproc)"
    resolved_info "$BIN/load"
} > "$R/info"
[ -n "$G0" ] || { echo "load-guest: no RoCE v2 GID on rxe0" >&2; exit 3; }
for lib in upstream ours; do
    d=$R/threads-$lib
    mkdir -p "$d"
    if [ $lib = upstream ]; then ld=$UPSTREAM_LD; else ld=$OUR_LD; fi
    echo "load-guest: threads on $lib" >&2
    env LD_LIBRARY_PATH="$ld" timeout -k 5 $((${LOAD_SECONDS%.*} + 120)) \
        "$BIN/load" threads rxe0 "$G0" "$LOAD_SECONDS" "$LOAD_WARMUP" "$LOAD_THREADS" \
        > "$d/out" 2> "$d/err" < /dev/null
    echo $? > "$d/rc"
done
echo done > "$R/complete"
