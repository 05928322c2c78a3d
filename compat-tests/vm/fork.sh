#!/bin/bash
# The vm-fork suite: registered memory across fork() on Soft-RoCE rxe0 inside
# the qemu VM, once on Debian's libibverbs and once on ours
# (LD_LIBRARY_PATH=$(dirname $OUR_LIB)), in ONE boot.  fork-mr.c (compiled
# here, on the host, into build/compat-tests/vm-fork/) registers a buffer,
# connects an RC QP to itself, forks; the child writes its copy of the
# buffer; the parent checks its own is unchanged and RDMA-writes into it
# through the MR (while the child lives and after).  Runs: fork-tests.txt
# (RDMAV_FORK_SAFE=1, ibv_fork_init(), neither, +RDMAV_HUGEPAGES_SAFE; and
# the program built with our headers on ours).  PASS when ours exits like
# upstream with byte-identical output.
#
#   fork.sh               the suite (OUR_LIB, UPSTREAM_LIB, OUR_INCLUDE,
#                         UPSTREAM_INCLUDE as in CONVENTIONS.md)
#   fork.sh --self-check  Debian's library plays "ours" too: all must PASS
set -u
cd "$(dirname "$0")/../.."
SUITE=vm-fork
HERE=$PWD/compat-tests/vm
OUT=build/compat-tests/$SUITE
OUR_LIB=${OUR_LIB:-build/lib/libibverbs.so.1}
UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
OUR_INCLUDE=${OUR_INCLUDE:-include}
UPSTREAM_INCLUDE=${UPSTREAM_INCLUDE:-/usr/include}
JSON=$OUT/results.json
mkdir -p "$OUT"
if [ "${1:-}" = --self-check ]; then
    mkdir -p "$OUT/self-check"
    ln -sfn "$UPSTREAM_LIB" "$OUT/self-check/libibverbs.so.1"
    OUR_LIB=$OUT/self-check/libibverbs.so.1
    JSON=$OUT/results-self-check.json
    echo "$SUITE: self-check: Debian's $UPSTREAM_LIB plays ours ($OUR_LIB)" >&2
fi
RUN=$PWD/$OUT/run
rm -rf "$RUN"

fail_early() {
    echo "FAIL $1: $2"
    echo "$SUITE: 0 passed, 1 failed"
    exit 1
}

missing=
for c in cc rdma ip timeout python3 apt-get dpkg flock; do
    command -v "$c" >/dev/null || missing="$missing $c"
done
[ -z "$missing" ] || fail_early prerequisites "missing on this machine:$missing (gcc, iproute2, coreutils, python3; make deps)"
[ -e "$UPSTREAM_INCLUDE/infiniband/verbs.h" ] || fail_early prerequisites "$UPSTREAM_INCLUDE/infiniband/verbs.h missing (libibverbs-dev; make deps)"
[ -e "$UPSTREAM_LIB" ] || fail_early prerequisites "UPSTREAM_LIB $UPSTREAM_LIB missing (libibverbs1; make deps)"
[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
    fail_early prerequisites "rxe provider missing (ibverbs-providers; make deps)"

ld_for() { # LD_LIBRARY_PATH for a library ("" = the system's default search)
    local d; d=$(cd "$(dirname "$1")" 2>/dev/null && pwd -P) || { echo "$(dirname "$1")"; return; }
    case "$d" in
        /usr/lib/x86_64-linux-gnu|/lib/x86_64-linux-gnu) echo "" ;;
        *) echo "$d" ;;
    esac
}
UPSTREAM_LD=$(ld_for "$UPSTREAM_LIB")
OUR_LD=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || OUR_LD=$PWD/$(dirname "$OUR_LIB")
case "$OUR_LD" in
    "$(cd "$(dirname "$0")/../.." && pwd)"/*) ;;  # inside the repository: the VM keeps it visible
    /tmp|/tmp/*|/run|/run/*|/var/tmp|/var/tmp/*|/dev/*|/proc/*|/sys/*)
        fail_early prerequisites "OUR_LIB ($OUR_LIB) is under $OUR_LD, which the VM does not see; put it elsewhere" ;;
esac

# ---- build fork-mr on the host: with Debian's headers (runs on both
# libraries) and with ours (source compatibility; runs on ours).  Both link
# -libverbs by soname, so LD_LIBRARY_PATH picks the library at run time.
BIN=$PWD/$OUT/bin
mkdir -p "$BIN"
cc -O2 -Wall -Wextra -Werror -I"$UPSTREAM_INCLUDE" -o "$BIN/fork-mr" "$HERE/fork-mr.c" \
    -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 > "$OUT/build.log" 2>&1 ||
    fail_early build "fork-mr.c does not build with Debian's headers: $(head -5 "$OUT/build.log")"
if ! cc -O2 -Wall -Wextra -Werror -I"$OUR_INCLUDE" -o "$BIN/fork-mr-our-headers" "$HERE/fork-mr.c" \
        -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 > "$OUT/build-ours.log" 2>&1; then
    # the runs of the program built with our headers fail (no binary); the
    # reason is in the build log
    rm -f "$BIN/fork-mr-our-headers"
    echo "$SUITE: fork-mr.c does not build with our headers ($OUR_INCLUDE):" >&2
    sed 's/^/  | /' "$OUT/build-ours.log" >&2
fi

script=$PWD/$OUT/guest-script.sh
cat > "$script" <<EOS
export UPSTREAM_LD=$(printf %q "$UPSTREAM_LD") OUR_LD=$(printf %q "$OUR_LD") BIN=$(printf %q "$BIN")
exec bash $(printf %q "$HERE/fork-guest.sh")
EOS
t0=$(date +%s.%N)
VM_RUN_DIR=$RUN VM_TIMEOUT=${VM_TIMEOUT:-600} bash "$HERE/vm-run.sh" "$script" \
    > "$OUT/guest.out" 2> "$OUT/guest.err"
vrc=$?
secs=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
if [ "$vrc" -ne 0 ]; then
    echo "$SUITE: the VM run failed (exit status $vrc); its messages:" >&2
    sed 's/^/  | /' "$OUT/guest.err" >&2
fi
python3 "$HERE/fork-report.py" --results "$RUN/results" --tests "$HERE/fork-tests.txt" \
    --json "$JSON" --vm-status "$vrc" --vm-log "$(grep '^vm:' "$OUT/guest.err")" \
    --seconds "$secs" --our-lib "$OUR_LIB" --upstream-lib "$UPSTREAM_LIB"
rc=$?
echo "(VM run: ${secs}s; details: $JSON, raw outputs: $OUT/run/results/)" >&2
exit $rc
