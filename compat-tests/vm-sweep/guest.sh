#!/bin/bash
# Runs inside the VM (started by run.sh through compat-tests/vm/vm-run.sh):
# the sweep program three times, each a list of NAME|CLASS|DETAIL lines
# (sweep.c): Debian's libibverbs on rxe0, ours on rxe0, ours on swr0 (our
# software device, RDMAV_SOFT_DEVICES=swr0; the provider is found beside
# our library, in $OUR_LD/libibverbs/, which is under /work and so visible
# here).  Results: $VM_RUN_DIR/results/{upstream-rxe0,ours-rxe0,ours-swr0}.
# {out,err,rc,ms}, and info.
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = the system's)
#   BIN: the directory holding sweep
#   SWEEP_LIMIT: seconds each run may take (timeout(1))
#   SWEEP_SWR0: 0 = no run on swr0 (--self-check)
#   SWEEP_CASES: the cases to run (names, space-separated; default all)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../vm/guest-lib.sh"
G0=$(gid_index rxe0)
{
    echo "gid_rxe0=$G0"
    echo "kernel=$(uname -r)"
    resolved_info "$BIN/sweep"
} > "$R/info"
[ -n "$G0" ] || { echo "sweep-guest: no RoCE v2 GID on rxe0" >&2; exit 3; }

run() { # name ld device gid [env...]
    local n=$1 ld=$2 dev=$3 gid=$4 t0; shift 4
    echo "sweep-guest: $n" >&2
    t0=$(now_ms)
    env LD_LIBRARY_PATH="$ld" "$@" timeout -k 5 "${SWEEP_LIMIT:-240}" "$BIN/sweep" "$dev" "$gid" ${SWEEP_CASES:-} \
        > "$R/$n.out" 2> "$R/$n.err" < /dev/null
    echo $? > "$R/$n.rc"
    echo $(( $(now_ms) - t0 )) > "$R/$n.ms"
}
# core dumps of the provoked crashes would only cost time
ulimit -c 0
mkdir -p -m 0700 /tmp/sweep-rt
run upstream-rxe0 "$UPSTREAM_LD" rxe0 "$G0"
run ours-rxe0 "$OUR_LD" rxe0 "$G0"
# swr0's GID 1 is ::ffff:127.0.0.1, RoCE v2 (SWEEP_SWR0=0: no swr0 run, --self-check)
[ "${SWEEP_SWR0:-1}" = 0 ] || run ours-swr0 "$OUR_LD" swr0 1 RDMAV_SOFT_DEVICES=swr0 XDG_RUNTIME_DIR=/tmp/sweep-rt
echo done > "$R/complete"
