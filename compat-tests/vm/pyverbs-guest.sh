#!/bin/bash
# Runs inside the VM (started by pyverbs.sh through vm-run.sh): rdma-core's
# own Python tests (python3-pyverbs) on rxe0, once on Debian's libibverbs and
# once on ours, through pyverbs-runner.py (a deadline per test).
# Results: $VM_RUN_DIR/results/{upstream,ours}.jsonl, ids, info
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   PYV_ONLY: extended regex; only the test ids matching it run ("" = all)
#   PYV_RETRY_CRASHES=1: pyverbs-runner.py --retry-crashes (both libraries)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/guest-lib.sh"
PY=/usr/bin/python3      # Debian's python, where python3-pyverbs lives
T_UP=${T_UP:-120}                # per test, upstream
BUDGET=${BUDGET:-600}            # per library, the whole run
TD=/tmp/pyverbs-tests            # the guest's own tmpfs

G0=$(gid_index rxe0)
pyv_so=$(ls /usr/lib/python3/dist-packages/pyverbs/device.cpython-*.so 2>/dev/null | head -1)
{
    echo "gid_rxe0=$G0"
    echo "kernel=$(uname -r)"
    echo "pyverbs=$(dpkg-query -W -f='${Version}' python3-pyverbs 2>/dev/null)"
    echo "upstream_ld=$UPSTREAM_LD"
    echo "our_ld=$OUR_LD"
    resolved_info "$pyv_so"
} > "$R/info"
[ -n "$G0" ] || { echo "pyverbs-guest: no RoCE v2 GID on rxe0" >&2; exit 3; }

# the package ships most test modules gzip'ed
rm -rf "$TD"
cp -r /usr/share/doc/rdma-core/tests "$TD" || exit 3
gunzip -f "$TD"/*.gz || exit 3

common=(--tests-dir "$TD" --dev rxe0 --gid "$G0")
retry=()
[ -n "${PYV_RETRY_CRASHES:-}" ] && retry=(--retry-crashes)
cd "$R" || exit 3
# the list comes from upstream's library (ours might not even import)
if ! LD_LIBRARY_PATH=$UPSTREAM_LD $PY "$HERE/pyverbs-runner.py" list "${common[@]}" \
        > ids.all 2> list.err; then
    echo "pyverbs-guest: cannot list the tests:" >&2; cat list.err >&2; exit 3
fi
if [ -n "${PYV_ONLY:-}" ]; then grep -E -- "$PYV_ONLY" ids.all > ids; else cp ids.all ids; fi
echo "tests=$(wc -l < ids)" >> info
echo "tests_all=$(wc -l < ids.all)" >> info

t0=$(date +%s)
echo "pyverbs-guest: upstream ($(wc -l < ids) tests)" >&2
LD_LIBRARY_PATH=$UPSTREAM_LD $PY "$HERE/pyverbs-runner.py" run "${common[@]}" --ids ids \
    --tag upstream --out upstream.jsonl --deadline "$T_UP" --budget "$BUDGET" "${retry[@]}"
t1=$(date +%s)
echo "upstream_secs=$((t1 - t0))" >> info
# ours: 10x upstream's time per test, within [30 s, T_UP]
echo "pyverbs-guest: ours" >&2
LD_LIBRARY_PATH=$OUR_LD $PY "$HERE/pyverbs-runner.py" run "${common[@]}" --ids ids \
    --tag ours --out ours.jsonl --deadline "$T_UP" --deadlines-from upstream.jsonl \
    --factor 10 --min 30 --max "$T_UP" --budget "$BUDGET" "${retry[@]}"
echo "ours_secs=$(( $(date +%s) - t1 ))" >> info
echo done > complete
