#!/bin/bash
# The rxe half of compat-tests/wire-hostile: the same hostile-packet kinds
# (roce_hostile) at the same victim program (wire-hostile/victim.c), whose
# server runs on the kernel's rxe (Debian's libibverbs) inside the qemu VM
# and whose client is ours (rw0), in ONE boot (guest: hostile-guest.sh).
# Prints the guest's checks (the same per-kind checks as the host suite:
# rxe must pass them too, which also proves the harness) and compares rxe's
# answers with rw0's (OURS_ANSWERS, default the host suite's last
# build/compat-tests/wire-hostile/answers-rw0.txt) through
# wire-hostile/compare.py and expected-differences.txt.
#
#   hostile.sh            the run
#   hostile.sh --record   also writes rxe's answers to
#                         compat-tests/wire-hostile/rxe-answers.txt (what the
#                         host suite compares with)
# Environment: VM_CACHE, VM_TIMEOUT (default 1200 s), FLOOD_SECS (5),
# FLOOD_RATE (2000/s), HOSTILE_WAIT (1000 ms).
set -u
. "$(dirname "$0")/suite-lib.sh"
suite_init vm-hostile
RECORD=0
[ "${1:-}" = --record ] && RECORD=1
suite_need_commands "iproute2, gcc, cargo, python3" ip gcc cargo python3
suite_need_upstream
suite_lib_dirs "the client (ours, rw0) will not start"
VM_CACHE=$(mkdir -p "${VM_CACHE:-build/vm-cache}" && cd "${VM_CACHE:-build/vm-cache}" && pwd)
export VM_CACHE
mkdir -p "$OUT/bin"
cargo build -q --release -p swrdma-roce --example roce_hostile 2>"$OUT/craft.log" ||
    fail_early roce_hostile "does not build (see $OUT/craft.log)"
cp "$(cargo metadata -q --format-version 1 --no-deps |
    sed -nE 's/.*"target_directory":"([^"]*)".*/\1/p')/release/examples/roce_hostile" "$OUT/bin/" ||
    fail_early roce_hostile "not found"
gcc -Wall -O1 -Iinclude -o "$OUT/bin/victim" compat-tests/wire-hostile/victim.c \
    -L"$OUR_LD" -libverbs 2>"$OUT/victim.log" || fail_early victim.c "does not build (see $OUT/victim.log)"

suite_run_vm hostile-guest.sh 1200 VICTIM="$PWD/$OUT/bin/victim" CRAFT_HOSTILE="$PWD/$OUT/bin/roce_hostile" \
    FLOOD_SECS="${FLOOD_SECS:-5}" FLOOD_RATE="${FLOOD_RATE:-2000}" HOSTILE_WAIT="${HOSTILE_WAIT:-1000}"
RES=$RUN/results
[ -e "$RES/complete" ] || fail_early vm "the guest did not finish (VM status $vrc, ${secs}s; see $OUT/guest.err, $RES/log)"
np=0 nf=0 ns=0
while IFS= read -r l; do
    echo "$l"
    case "$l" in PASS*) np=$((np + 1)) ;; FAIL*) nf=$((nf + 1)) ;; SKIP*) ns=$((ns + 1)) ;; esac
done <"$RES/checks"
if [ "$RECORD" = 1 ] && [ -s "$RES/answers-rxe.txt" ]; then
    {
        echo "# rxe's answers per kind (compat-tests/vm/hostile.sh --record, kernel $(sed -n 's/^kernel=//p' "$RES/info"))"
        cat "$RES/answers-rxe.txt"
    } >compat-tests/wire-hostile/rxe-answers.txt
    echo "recorded: compat-tests/wire-hostile/rxe-answers.txt" >&2
fi
OURS=${OURS_ANSWERS:-build/compat-tests/wire-hostile/answers-rw0.txt}
if [ -s "$OURS" ]; then
    python3 compat-tests/wire-hostile/compare.py "$OURS" "$RES/answers-rxe.txt" \
        compat-tests/wire-hostile/expected-differences.txt >"$OUT/compare.out" 2>&1
    while IFS= read -r l; do
        case "$l" in
            PASS*) echo "$l"; np=$((np + 1)) ;;
            FAIL*) echo "$l"; nf=$((nf + 1)) ;;
        esac
    done <"$OUT/compare.out"
else
    echo "SKIP compare: no answers of rw0 ($OURS: run compat-tests/wire-hostile/run.sh first)"
    ns=$((ns + 1))
fi
echo "(VM run ${secs}s; raw: $RES; table: $OUT/compare.out)" >&2
echo "vm-hostile: $np passed, $nf failed, $ns skipped"
[ "$nf" = 0 ]
