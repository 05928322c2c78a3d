#!/bin/bash
# Runs `cargo test` (the unit tests of every crate: the library, its ABI
# crate, and the software device's ring and RoCE crates; the provider
# crate itself links only inside libibverbs.so.1; the wire agent's life
# tests, which run its programs) and
# every compat suite named on the command line, then prints the totals with
# each one's time.  Exit status 0 only when nothing failed.
set -u
cd "$(dirname "$0")/.."
mkdir -p build/compat-tests
total_pass=0 total_fail=0 total_skip=0
declare -a rows failed_suites=()

add_counts() { # suite logfile
    local line p f s
    line=$(grep -E '[0-9]+ passed, [0-9]+ failed' "$2" | tail -1)
    p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+'); p=${p:-0}
    f=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+'); f=${f:-0}
    s=$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+'); s=${s:-0}
    echo "$p $f $s"
}

# 1. cargo test (unit tests and Rust-side layout checks)
echo "=== cargo test"
log=build/compat-tests/cargo-test.log
t0=$SECONDS
cargo test -p ibverbs_rs -p ibverbs-abi -p swrdma -p swrdma-ring -p swrdma-roce -p swrdma-rc -p swrdma-cm -p swrdma-ucma -p swrdma-wired --lib 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# The wire device's agent (swrdma-wired): its life, with the real programs
# (processes started, raced, killed; a second uid when root).
cargo test -p swrdma-wired --test life 2>&1 | tee -a "$log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
p=$(grep -E '^test result:' "$log" | grep -oE '[0-9]+ passed' | awk '{s+=$1} END {print s+0}')
f=$(grep -E '^test result:' "$log" | grep -oE '[0-9]+ failed' | awk '{s+=$1} END {print s+0}')
if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
rows+=("cargo-test $p $f 0 $((SECONDS - t0))")
[ "$f" -gt 0 ] && failed_suites+=("cargo-test")
total_pass=$((total_pass + p)); total_fail=$((total_fail + f))

# 2. the compat suites
for suite in "$@"; do
    echo "=== $suite"
    log=build/compat-tests/$suite.log
    t0=$SECONDS
    if [ ! -x "compat-tests/$suite/run.sh" ] && [ ! -f "compat-tests/$suite/run.sh" ]; then
        echo "FAIL $suite: compat-tests/$suite/run.sh missing" | tee "$log"
        echo "$suite: 0 passed, 1 failed" >> "$log"
        rc=1
    else
        bash "compat-tests/$suite/run.sh" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
    fi
    read -r p f s < <(add_counts "$suite" "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    rows+=("$suite $p $f $s $((SECONDS - t0))")
    [ "$f" -gt 0 ] && failed_suites+=("$suite")
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))
done

echo
echo "=== totals"
printf '%-14s %8s %8s %8s %8s\n' suite passed failed skipped seconds
for r in "${rows[@]}"; do
    set -- $r
    printf '%-14s %8s %8s %8s %8s\n' "$1" "$2" "$3" "$4" "$5"
done
echo
echo "total: $total_pass passed, $total_fail failed, $total_skip skipped ($SECONDS s)"
# What failed, again, at the very end, below the totals: a CI report that
# keeps only the last twenty-odd lines of a long run still says which test
# failed and why (the table above it is longer than that).
if [ "${#failed_suites[@]}" -gt 0 ]; then
    echo "=== failures"
    for suite in "${failed_suites[@]}"; do
        grep -E '^(FAIL|not ok)|^test .* FAILED$|panicked at' "build/compat-tests/$suite.log" | head -3 | cut -c1-300 | sed "s/^/$suite: /"
    done
fi
[ "$total_fail" -eq 0 ]
