#!/bin/bash
# The vm suite: Debian's unmodified ibverbs-utils on Soft-RoCE (rxe0/rxe1 on
# a veth pair) inside a qemu VM running Debian bookworm's 6.1 kernel, once on
# Debian's libibverbs and once on ours (LD_LIBRARY_PATH=$(dirname $OUR_LIB)),
# all in ONE boot.  PASS when ours behaves like upstream: same exit statuses
# (server and client for the pingpongs), byte-identical stdout for
# ibv_devices / ibv_devinfo.  Tests: compat-tests/vm/tests.txt; device limits
# of rxe: compat-tests/vm/known-upstream-failures.txt.  See README.md.
#
#   run.sh               the suite (OUR_LIB, UPSTREAM_LIB as in CONVENTIONS.md)
#   run.sh --self-check  checks the harness itself: Debian's library plays
#                        "ours" too, so every test must PASS
#                        (results-self-check.json)
set -u
cd "$(dirname "$0")/../.."
HERE=$PWD/compat-tests/vm
OUT=build/compat-tests/vm
OUR_LIB=${OUR_LIB:-build/lib/libibverbs.so.1}
UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
JSON=$OUT/results.json
mkdir -p "$OUT"
if [ "${1:-}" = --self-check ]; then
    mkdir -p "$OUT/self-check"
    ln -sfn "$UPSTREAM_LIB" "$OUT/self-check/libibverbs.so.1"
    OUR_LIB=$OUT/self-check/libibverbs.so.1
    JSON=$OUT/results-self-check.json
    echo "vm: self-check: Debian's $UPSTREAM_LIB plays ours ($OUR_LIB)" >&2
fi
RUN=$PWD/$OUT/run
rm -rf "$RUN"

fail_early() {
    echo "FAIL $1: $2"
    echo "vm: 0 passed, 1 failed"
    exit 1
}

# ---- prerequisites (the guest runs the host's installed packages)
missing=
for c in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong \
         ibv_srq_pingpong ibv_xsrq_pingpong rdma ip timeout python3 apt-get dpkg flock; do
    command -v "$c" >/dev/null || missing="$missing $c"
done
[ -z "$missing" ] || fail_early prerequisites "missing on this machine:$missing (ibverbs-utils, iproute2, coreutils, python3, util-linux; make deps)"
[ -e "$UPSTREAM_LIB" ] || fail_early prerequisites "UPSTREAM_LIB $UPSTREAM_LIB missing (libibverbs1; make deps)"
[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
    fail_early prerequisites "rxe provider missing (ibverbs-providers; make deps)"

# ---- LD_LIBRARY_PATH for each library ("" = the system's default search)
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
        fail_early prerequisites "OUR_LIB ($OUR_LIB) is under $OUR_LD, which the VM does not see (its /tmp, /run, /var/tmp are private); put it elsewhere" ;;
esac
[ -e "$OUR_LD/libibverbs.so.1" ] ||
    echo "vm: note: $OUR_LD/libibverbs.so.1 does not exist (make lib?); the tools will fall back to Debian's library and the report's 'ours' line says so" >&2

# ---- one VM boot runs everything
script=$PWD/$OUT/guest-script.sh
cat > "$script" <<EOS
export UPSTREAM_LD=$(printf %q "$UPSTREAM_LD") OUR_LD=$(printf %q "$OUR_LD")
export SUITE_TESTS=$(printf %q "$HERE/tests.txt")
exec bash $(printf %q "$HERE/suite-guest.sh")
EOS
t0=$(date +%s.%N)
# hard limit of the whole boot: a normal run needs 60-110 s; if ours hangs
# in every pingpong, its per-side timeouts (25-45 s) add up to ~4 min more
VM_RUN_DIR=$RUN VM_TIMEOUT=${VM_TIMEOUT:-420} bash "$HERE/vm-run.sh" "$script" \
    > "$OUT/guest.out" 2> "$OUT/guest.err"
vrc=$?
secs=$(python3 -c "import sys; print(round($(date +%s.%N) - $t0, 1))")
if [ "$vrc" -ne 0 ]; then
    echo "vm: the VM run failed (exit status $vrc); its messages:" >&2
    sed 's/^/  | /' "$OUT/guest.err" >&2
fi
python3 "$HERE/report.py" --results "$RUN/results" --tests "$HERE/tests.txt" \
    --known "$HERE/known-upstream-failures.txt" --json "$JSON" \
    --vm-status "$vrc" --vm-log "$(grep '^vm:' "$OUT/guest.err")" --seconds "$secs" \
    --our-lib "$OUR_LIB" --upstream-lib "$UPSTREAM_LIB"
rc=$?
echo "(VM run: ${secs}s; details: $JSON, raw outputs: $OUT/run/results/)" >&2
exit $rc
