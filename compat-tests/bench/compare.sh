#!/bin/bash
# compat-tests/bench/compare.sh BASE_REV: the software device's figures of
# BASE_REV and of this tree, measured in one run on this machine, so that a
# change can be shown to cost nothing (`make bench-compare BASE=<rev>`).
#
# BASE_REV is built from a clean checkout in build/bench-compare/base-src
# (make lib swrdma); this tree's build/lib is used as it is (make lib
# swrdma first).  The section runs BENCH_ROUNDS_COMPARE times (default 2),
# alternating base, ours, base, ours ... (BENCH_QUICK=1 unless set;
# BENCH_SECTIONS=soft unless set), and compare.py prints each figure as
# ours ÷ base beside the spread of the base's own runs (the noise): a
# figure is "slower" only when it is worse than every base run by more
# than that spread.
# Output: build/bench-compare/{base,ours}-<n>.{txt,json}, the table on stdout.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../.." || exit 2
BASE=${1:?usage: compare.sh BASE_REV}
W=build/bench-compare
rounds=${BENCH_ROUNDS_COMPARE:-3}
rm -rf "$W/runs"; mkdir -p "$W/runs"
if [ ! -e "$W/base-src/.git" ] || [ "$(git -C "$W/base-src" rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$BASE")" ]; then
    rm -rf "$W/base-src"
    git worktree prune
    git worktree add --detach "$W/base-src" "$BASE" >/dev/null || exit 2
fi
echo "compare: building $BASE in $W/base-src"
(cd "$W/base-src" && make lib swrdma >"$PWD/../runs/base-build.log" 2>&1) || { echo "compare: $BASE does not build (see $W/runs/base-build.log)"; exit 2; }
[ -e build/lib/libibverbs/libswrdma-rdmav34.so ] || { echo "compare: no build/lib here (make lib swrdma)"; exit 2; }
for n in $(seq 1 "$rounds"); do
    for who in base ours; do
        lib=$PWD/build/lib/libibverbs.so.1
        [ $who = base ] && lib=$PWD/$W/base-src/build/lib/libibverbs.so.1
        echo "compare: round $n, $who"
        # (results.json holds every section found in build/bench: a
        # section not run this time must not be compared from an old run)
        rm -rf build/bench
        BENCH_QUICK=${BENCH_QUICK:-1} BENCH_SECTIONS=${BENCH_SECTIONS:-soft} OUR_LIB=$lib \
            bash compat-tests/bench/run.sh >"$W/runs/$who-$n.txt" 2>&1
        cp build/bench/results.json "$W/runs/$who-$n.json" 2>/dev/null
    done
done
python3 "$HERE/compare.py" "$W/runs" "$(git rev-parse --short "$BASE")" "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src providers || echo +)"
