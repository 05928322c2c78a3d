#!/bin/bash
# Runs `cargo test` (the unit tests of every crate: the library, its ABI
# crate, and the software device's ring and RoCE crates; the provider
# crate itself links only inside libibverbs.so.1; the wire agent's life
# tests, which run its programs) and
# every compat suite named on the command line, then prints the totals with
# each one's time.  Exit status 0 only when nothing failed.
set -u
cd "$(dirname "$0")/.."
# (When this run began: a suite may use what an earlier suite of the same
# run built, e.g. vm-deb the deb suite's packages.)
RUN_ALL_START=$(date +%s)
export RUN_ALL_START
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

# Processes a suite leaves behind.  A test program still running after its
# suite (a pingpong whose peer was killed and whose own wrapper went first,
# say) spins beside every later suite and slows the whole run: it is killed
# and the suite fails.  The wire agent of a finished test exits by itself
# after its idle time; it is ended here instead (no failure).  Anything
# else new is named, not touched.
ours_re='^(ibv_|ib_|rping|ucmatose|udaddy|mckey|rdma_|cmtime|riostream|rstream|qemu-system|pingpong)'
pids_now() { ps -e -o pid= -o ppid= | awk '$2 != 2 && $1 != 2 {print $1}' | LC_ALL=C sort; }
leftovers() { # SUITE BEFORE_FILE: a FAIL line per test program killed, a note for others
    local suite=$1 before=$2 pid comm others=()
    for pid in $(LC_ALL=C comm -13 "$before" <(pids_now)); do
        [ "$pid" = "$$" ] && continue
        comm=$(cat "/proc/$pid/comm" 2>/dev/null) || continue
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && continue
        case $comm in ps|sort|awk|comm|bash|sh|cat|sleep|tee|grep) continue ;; esac
        if [[ $comm == swrdma-wired* ]]; then
            kill -9 "$pid" 2>/dev/null
        elif [[ $comm =~ $ours_re ]]; then
            echo "FAIL $suite: left running after the suite: pid $pid ($comm, ran$(ps -o etime= -o pcpu= -p "$pid" | awk '{printf " %s, %s%% CPU", $1, $2}')): killed"
            kill -9 "$pid" 2>/dev/null
        else
            others+=("$pid($comm)")
        fi
    done
    if [ "${#others[@]}" -gt 0 ]; then echo "note: $suite: still running after it: ${others[*]}"; fi
}

# 2. the compat suites
pids_before=$(mktemp)
trap 'rm -f "$pids_before"' EXIT
for suite in "$@"; do
    # The time so far on the header: a CI report cut off by its time limit
    # still tells how far each suite got.
    echo "=== $suite (at $SECONDS s)"
    pids_now >"$pids_before"
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
    leftovers "$suite" "$pids_before" | tee -a "$log"
    left=$(grep -c "^FAIL $suite: left running" "$log")
    f=$((f + left))
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
