#!/bin/bash
# The vm-perftest suite: Debian's perftest (ib_send/write/read/atomic _bw/_lat;
# RC, UC, UD where perftest allows them) on Soft-RoCE inside the qemu VM,
# server on rxe0, client on rxe1 (TCP exchange on 127.0.0.1), once on Debian's
# libibverbs and once on ours (LD_LIBRARY_PATH=$(dirname $OUR_LIB)), all in
# ONE boot.  PASS when ours completes wherever upstream completes (exit
# status 0 on both sides and a result row); rxe's device limits are listed in
# perftest-known-upstream-failures.txt and ours must fail the same way there.
# Tests: perftest-tests.txt.
#
#   perftest.sh               the suite (OUR_LIB, UPSTREAM_LIB as in CONVENTIONS.md)
#   perftest.sh --self-check  Debian's library plays "ours" too: all must PASS
set -u
cd "$(dirname "$0")/../.."
SUITE=vm-perftest
HERE=$PWD/compat-tests/vm
OUT=build/compat-tests/$SUITE
OUR_LIB=${OUR_LIB:-build/lib/libibverbs.so.1}
UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
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
for c in ib_send_bw ib_send_lat ib_write_bw ib_write_lat ib_read_bw ib_read_lat \
         ib_atomic_bw ib_atomic_lat rdma ip timeout python3 apt-get dpkg flock; do
    command -v "$c" >/dev/null || missing="$missing $c"
done
[ -z "$missing" ] || fail_early prerequisites "missing on this machine:$missing (perftest, iproute2, coreutils, python3; make deps)"
[ -e "$UPSTREAM_LIB" ] || fail_early prerequisites "UPSTREAM_LIB $UPSTREAM_LIB missing (libibverbs1; make deps)"
[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
    fail_early prerequisites "rxe provider missing (ibverbs-providers; make deps)"

# LD_LIBRARY_PATH for each library ("" = the system's default search)
ld_for() {
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
[ -e "$OUR_LD/libibverbs.so.1" ] ||
    echo "$SUITE: note: $OUR_LD/libibverbs.so.1 does not exist (make lib?); perftest will fall back to Debian's library" >&2

script=$PWD/$OUT/guest-script.sh
cat > "$script" <<EOS
export UPSTREAM_LD=$(printf %q "$UPSTREAM_LD") OUR_LD=$(printf %q "$OUR_LD")
export SUITE_TESTS=$(printf %q "$HERE/perftest-tests.txt")
exec bash $(printf %q "$HERE/perftest-guest.sh")
EOS
t0=$(date +%s.%N)
# a normal run needs about 3 minutes under TCG; if ours hangs in every test,
# its per-side limits (20-60 s) add up to about 10 minutes more
VM_RUN_DIR=$RUN VM_TIMEOUT=${VM_TIMEOUT:-1200} bash "$HERE/vm-run.sh" "$script" \
    > "$OUT/guest.out" 2> "$OUT/guest.err"
vrc=$?
secs=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
if [ "$vrc" -ne 0 ]; then
    echo "$SUITE: the VM run failed (exit status $vrc); its messages:" >&2
    sed 's/^/  | /' "$OUT/guest.err" >&2
fi
python3 "$HERE/perftest-report.py" --results "$RUN/results" --tests "$HERE/perftest-tests.txt" \
    --known "$HERE/perftest-known-upstream-failures.txt" --json "$JSON" \
    --vm-status "$vrc" --vm-log "$(grep '^vm:' "$OUT/guest.err")" --seconds "$secs" \
    --our-lib "$OUR_LIB" --upstream-lib "$UPSTREAM_LIB"
rc=$?
echo "(VM run: ${secs}s; details: $JSON, raw outputs: $OUT/run/results/)" >&2
exit $rc
