#!/bin/bash
# Runs inside the VM (started by run.sh through compat-tests/vm/vm-run.sh):
# the rcerr program (rcerr.c: one RC error class per case, two QPs of one
# device connected to each other) four times:
#   upstream-rxe0  Debian's libibverbs on rxe0 (the kernel's Soft-RoCE): the oracle
#   ours-rxe0      ours on rxe0, through Debian's rxe provider
#   ours-swr0      ours on swr0, our same-machine software device
#   ours-rw0       ours on rw0@lo, our RoCE v2 wire device, in a network
#                  namespace of its own (rxe0's kernel socket holds UDP 4791
#                  in the root one); the QPs talk to each other over lo
# Results: $VM_RUN_DIR/results/{RUN}.{out,err,rc,ms}, info, complete.
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = the system's)
#   BIN: the directory holding rcerr
#   RCERR_LIMIT: seconds each run may take (timeout(1))
#   RCERR_OURS: 0 = no swr0/rw0 runs (--self-check)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../vm/guest-lib.sh"
G0=$(gid_index rxe0)
{
    echo "gid_rxe0=$G0"
    echo "kernel=$(uname -r)"
    resolved_info "$BIN/rcerr"
} > "$R/info"
[ -n "$G0" ] || { echo "rcerr-guest: no RoCE v2 GID on rxe0" >&2; exit 3; }

run() { # name ld device gid [env...]
    local n=$1 ld=$2 dev=$3 gid=$4 t0 pre=(); shift 4
    [ -n "${NETNS:-}" ] && pre=(ip netns exec "$NETNS")
    echo "rcerr-guest: $n" >&2
    t0=$(now_ms)
    "${pre[@]}" env LD_LIBRARY_PATH="$ld" "$@" timeout -k 5 "${RCERR_LIMIT:-240}" "$BIN/rcerr" "$dev" "$gid" \
        > "$R/$n.out" 2> "$R/$n.err" < /dev/null
    echo $? > "$R/$n.rc"
    echo $(( $(now_ms) - t0 )) > "$R/$n.ms"
}
ulimit -c 0
mkdir -p -m 0700 /tmp/rcerr-rt /tmp/rcerr-rt-w
run upstream-rxe0 "$UPSTREAM_LD" rxe0 "$G0"
run ours-rxe0 "$OUR_LD" rxe0 "$G0"
if [ "${RCERR_OURS:-1}" != 0 ]; then
    # swr0's GID 1 is ::ffff:127.0.0.1, RoCE v2
    run ours-swr0 "$OUR_LD" swr0 1 RDMAV_SOFT_DEVICES=swr0 XDG_RUNTIME_DIR=/tmp/rcerr-rt
    # rw0@lo in a netns of its own: GID 1 is ::ffff:127.0.0.1
    if ip netns add rcerr && ip netns exec rcerr ip link set lo up; then
        NETNS=rcerr run ours-rw0 "$OUR_LD" rw0 1 RDMAV_SOFT_DEVICES=rw0@lo XDG_RUNTIME_DIR=/tmp/rcerr-rt-w
    else
        echo "rcerr-guest: no network namespace for rw0" > "$R/ours-rw0.err"
        echo 99 > "$R/ours-rw0.rc"
    fi
fi
echo done > "$R/complete"
