#!/bin/bash
# `make fuzz`: every cargo-fuzz target in fuzz/ (its own workspace, nightly
# toolchain) for a bounded number of executions each, then one line per
# target with its executions and crashes.  Exit status 0 only when every
# target reached FUZZ_RUNS executions without a crash.
#
#   tools/fuzz.sh [TARGET...]        default: every target of fuzz/Cargo.toml
# Environment: FUZZ_RUNS (executions per target, default 1000000),
#   FUZZ_SECONDS (time limit per target, default 900: a target that runs out
#   of time before FUZZ_RUNS fails), FUZZ_TOOLCHAIN (default +nightly),
#   FUZZ_JOBS (cargo build jobs), FUZZ_FLAGS (more cargo-fuzz build options,
#   e.g. "-O --target-dir fuzz/target-O": optimised, without overflow checks).
# Corpora (kept between runs) and crash artifacts: build/fuzz/{corpus,artifacts}/TARGET/;
# each target's libFuzzer output: build/fuzz/TARGET.log.
set -u
cd "$(dirname "$0")/.." || exit 2
RUNS=${FUZZ_RUNS:-1000000}
SECS=${FUZZ_SECONDS:-900}
TC=${FUZZ_TOOLCHAIN:-+nightly}
OUT=$PWD/build/fuzz
mkdir -p "$OUT"

if ! cargo "$TC" fuzz --version >/dev/null 2>&1; then
    echo "fuzz: cargo-fuzz or the $TC toolchain is missing (cargo install cargo-fuzz --locked; rustup toolchain install nightly)" >&2
    exit 1
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd fuzz && cargo "$TC" fuzz list)
fi

[ -z "${FUZZ_JOBS:-}" ] || export CARGO_BUILD_JOBS=$FUZZ_JOBS
echo "fuzz: building ${targets[*]}"
# shellcheck disable=SC2086
(cd fuzz && cargo "$TC" fuzz build ${FUZZ_FLAGS:-}) >"$OUT/build.log" 2>&1 ||
    { tail -n 30 "$OUT/build.log"; echo "fuzz: build failed (log: $OUT/build.log)"; exit 1; }

bad=0
declare -a rows
for t in "${targets[@]}"; do
    mkdir -p "$OUT/corpus/$t" "$OUT/artifacts/$t"
    before=$(ls "$OUT/artifacts/$t" | wc -l)
    t0=$(date +%s)
    # shellcheck disable=SC2086
    (cd fuzz && cargo "$TC" fuzz run ${FUZZ_FLAGS:-} "$t" "$OUT/corpus/$t" -- \
        -runs="$RUNS" -max_total_time="$SECS" -print_final_stats=1 \
        -artifact_prefix="$OUT/artifacts/$t/") >"$OUT/$t.log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$t.log" | tail -n1)
    execs=${execs:-0}
    crashes=$(($(ls "$OUT/artifacts/$t" | wc -l) - before))
    corpus=$(ls "$OUT/corpus/$t" | wc -l)
    verdict=ok
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        verdict="FAILED (exit status $rc; see $OUT/$t.log, artifacts in $OUT/artifacts/$t/)"
        grep -m3 -E '^==[0-9]+==ERROR|panicked at|deadly signal' "$OUT/$t.log" | sed 's/^/    /'
        bad=1
    elif [ "$execs" -lt "$RUNS" ]; then
        verdict="FAILED (only $execs of $RUNS executions in ${SECS}s)"
        bad=1
    fi
    line=$(printf '%-16s %10s executions  %2s crashes  %5s s  corpus %5s  %s' "$t" "$execs" "$crashes" "$secs" "$corpus" "$verdict")
    echo "$line"
    rows+=("$line")
done
echo
echo "=== fuzz summary (FUZZ_RUNS=$RUNS, FUZZ_SECONDS=$SECS${FUZZ_FLAGS:+, FUZZ_FLAGS=$FUZZ_FLAGS})"
printf '%s\n' "${rows[@]}"
exit $bad
