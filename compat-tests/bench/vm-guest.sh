#!/bin/bash
# Runs inside the Soft-RoCE VM (started by compat-tests/bench/run.sh through
# compat-tests/vm/vm-run.sh, cwd = the repository): build/bench/vm_bench on
# rxe0, once on Debian's libibverbs (no LD_LIBRARY_PATH) and once on ours
# (LD_LIBRARY_PATH = the directory of OUR_LIB), alternating, BENCH_ROUNDS
# rounds.  Raw outputs go to $VM_RUN_DIR/<lib>.<round>.{out,err,rc}.
set -u
OUT=$VM_RUN_DIR
BIN=$PWD/build/bench/vm_bench
OUR_LIB=${OUR_LIB:-build/lib/libibverbs.so.1}
OUR_LD=$(cd "$(dirname "$OUR_LIB")" && pwd)
ROUNDS=${BENCH_ROUNDS:-3}
ARGS=(${BENCH_VM_ARGS:---startup 30 --iters 300 --max-seconds 6})

# index of rxeN's RoCE v2 GID for its IPv4 address (as compat-tests/vm/suite-guest.sh)
gid_index() {
    local dev=$1 f i t g
    for f in /sys/class/infiniband/$dev/ports/1/gid_attrs/types/*; do
        i=${f##*/}
        t=$(cat "$f" 2>/dev/null) || continue
        [ "$t" = "RoCE v2" ] || continue
        read -r g < "/sys/class/infiniband/$dev/ports/1/gids/$i"
        case "$g" in 0000:0000:0000:0000:0000:ffff:*) echo "$i"; return ;; esac
    done
}
G0=$(gid_index rxe0) G1=$(gid_index rxe1)
DGID=$(cat "/sys/class/infiniband/rxe1/ports/1/gids/${G1:-1}" 2>/dev/null)
{
    echo "kernel $(uname -r)"
    echo "cpus $(nproc)"
    echo "gid_index $G0"
    echo "dgid $DGID"
    echo "our_ld $OUR_LD"
} > "$OUT/vminfo"
[ -n "$G0" ] && [ -n "$DGID" ] || { echo "vm-guest: no RoCE v2 IPv4 GID on rxe0/rxe1" >&2; exit 3; }

for r in $(seq 1 "$ROUNDS"); do
    for lib in upstream ours; do
        if [ $lib = ours ]; then ld=$OUR_LD; else ld=; fi
        s=$(date +%s)
        env ${ld:+LD_LIBRARY_PATH=$ld} timeout -k 5 60 "$BIN" --dev rxe0 --gid-index "$G0" --dgid "$DGID" "${ARGS[@]}" \
            > "$OUT/$lib.$r.out" 2> "$OUT/$lib.$r.err"
        echo $? > "$OUT/$lib.$r.rc"
        echo "vm-guest: round $r $lib: status $(cat "$OUT/$lib.$r.rc"), $(( $(date +%s) - s )) s"
    done
done
