#!/bin/bash
# The vm-pyverbs suite: rdma-core's own Python tests (Debian's python3-pyverbs,
# /usr/share/doc/rdma-core/tests, all 273 of them) on Soft-RoCE rxe0 inside
# the qemu VM, once on Debian's libibverbs and once on ours
# (LD_LIBRARY_PATH=$(dirname $OUR_LIB)), in ONE boot.  Each test has a
# deadline (pyverbs-runner.py).  PASS per test when ours ends like upstream
# (pass/pass, skip/skip for the same reason; known device limits of rxe in
# pyverbs-known-upstream-failures.txt: the same failure).  The full suite
# takes about 15 s per library under TCG, so it always runs in full.
#
#   pyverbs.sh                 the suite (OUR_LIB, UPSTREAM_LIB as in CONVENTIONS.md)
#   pyverbs.sh --self-check    Debian's library plays "ours" too: all must PASS
#   pyverbs.sh --only REGEX    only the test ids matching the extended REGEX
#                              (e.g. --only 'test_qp\.|test_mr\.'), for debugging
set -u
cd "$(dirname "$0")/../.."
SUITE=vm-pyverbs
HERE=$PWD/compat-tests/vm
OUT=build/compat-tests/$SUITE
OUR_LIB=${OUR_LIB:-build/lib/libibverbs.so.1}
UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
JSON=$OUT/results.json
TABLE=$OUT/table.txt
ONLY=
mkdir -p "$OUT"
while [ $# -gt 0 ]; do
    case "$1" in
        --self-check)
            mkdir -p "$OUT/self-check"
            ln -sfn "$UPSTREAM_LIB" "$OUT/self-check/libibverbs.so.1"
            OUR_LIB=$OUT/self-check/libibverbs.so.1
            JSON=$OUT/results-self-check.json
            TABLE=$OUT/table-self-check.txt
            echo "$SUITE: self-check: Debian's $UPSTREAM_LIB plays ours ($OUR_LIB)" >&2 ;;
        --only) ONLY=${2:-}; shift ;;
        *) echo "usage: $0 [--self-check] [--only REGEX]" >&2; exit 2 ;;
    esac
    shift
done
RUN=$PWD/$OUT/run
rm -rf "$RUN"

fail_early() {
    echo "FAIL $1: $2"
    echo "$SUITE: 0 passed, 1 failed"
    exit 1
}

missing=
for c in rdma ip timeout python3 gunzip apt-get dpkg flock; do
    command -v "$c" >/dev/null || missing="$missing $c"
done
[ -x /usr/bin/python3 ] || missing="$missing /usr/bin/python3"
[ -z "$missing" ] || fail_early prerequisites "missing on this machine:$missing (iproute2, coreutils, python3, gzip; make deps)"
[ -e /usr/share/doc/rdma-core/tests/run_tests.py ] && [ -d /usr/lib/python3/dist-packages/pyverbs ] ||
    fail_early prerequisites "rdma-core's tests missing (python3-pyverbs; make deps)"
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
[ -e "$OUR_LD/libibverbs.so.1" ] ||
    echo "$SUITE: note: $OUR_LD/libibverbs.so.1 does not exist (make lib?); pyverbs will fall back to Debian's library" >&2

script=$PWD/$OUT/guest-script.sh
cat > "$script" <<EOS
export UPSTREAM_LD=$(printf %q "$UPSTREAM_LD") OUR_LD=$(printf %q "$OUR_LD")
export PYV_ONLY=$(printf %q "$ONLY")
exec bash $(printf %q "$HERE/pyverbs-guest.sh")
EOS
t0=$(date +%s.%N)
# a normal run needs about 1 minute; each library's run is capped at 600 s
# (pyverbs-guest.sh BUDGET), so even a hanging ours cannot exceed this
VM_RUN_DIR=$RUN VM_TIMEOUT=${VM_TIMEOUT:-1500} bash "$HERE/vm-run.sh" "$script" \
    > "$OUT/guest.out" 2> "$OUT/guest.err"
vrc=$?
secs=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
if [ "$vrc" -ne 0 ]; then
    echo "$SUITE: the VM run failed (exit status $vrc); its messages:" >&2
    sed 's/^/  | /' "$OUT/guest.err" >&2
fi
python3 "$HERE/pyverbs-report.py" --results "$RUN/results" \
    --known "$HERE/pyverbs-known-upstream-failures.txt" --json "$JSON" --table "$TABLE" \
    --vm-status "$vrc" --vm-log "$(grep '^vm:' "$OUT/guest.err")" --seconds "$secs" \
    --our-lib "$OUR_LIB" --upstream-lib "$UPSTREAM_LIB"
rc=$?
echo "(VM run: ${secs}s; details: $JSON, per-test table: $TABLE, raw: $OUT/run/results/)" >&2
exit $rc
