#!/bin/bash
# Layout/API equality of our include/infiniband headers with upstream's, in
# two passes:
#   1. [rdma-core 65]  against sid's libibverbs-dev (the root that
#      compat-tests/roots.sh builds; SID_INCLUDE overrides): every entity
#      must equal sid's;
#   2. [rdma-core 44]  against bookworm's (UPSTREAM_INCLUDE, /usr/include):
#      every entity must equal bookworm's, or, where upstream's grew since
#      (ibv_port_attr, ibv_qp_ex, verbs_context, ...), equal sid's (checked
#      in pass 1; such checks say "as in rdma-core 65").  The provider-ABI
#      checks (driver.h, provider_abi.expected) run in this pass.
#   compat-tests/layout/run.sh                 all covered headers
#   compat-tests/layout/run.sh verbs.h sa.h    only those headers (quick feedback)
# Environment: OUR_INCLUDE, UPSTREAM_INCLUDE (compat-tests/lib.sh defaults),
#   SID_INCLUDE, LAYOUT_ONLY=sid|bookworm (one pass), LAYOUT_QUIET=1 hides
#   PASS lines, LAYOUT_VERBOSE=1 shows compiler errors, LAYOUT_NOCACHE=1
#   recomputes the (cached) upstream side.
# Needs: gcc, g++, clang, python3, and the sid root (mmdebstrap, once).
. "$(dirname "$0")/../lib.sh"
suite_begin layout
need python3
export OUR_INCLUDE
only=${LAYOUT_ONLY:-}
rec=$SCRATCH/rdma-core-65.passed.json
rm -f "$rec" "$SCRATCH"/counts-*.json

# A pass that died before writing its counts is one failure.
ended() {
    [ -f "$SCRATCH/counts-$1.json" ] && return
    echo "FAIL [rdma-core $1] layout.py: ended without a result"
    echo '{"failed": 1}' >"$SCRATCH/counts-$1.json"
}

if [ "$only" != bookworm ]; then
    if [ -z "${SID_INCLUDE:-}" ]; then
        sid=$(bash compat-tests/roots.sh sid | tail -1) ||
            fail_early prerequisites "the sid root (compat-tests/roots.sh sid) could not be built"
        SID_INCLUDE=$sid/usr/include
    fi
    [ -f "$SID_INCLUDE/infiniband/verbs.h" ] ||
        fail_early prerequisites "no infiniband/verbs.h under $SID_INCLUDE (libibverbs-dev of sid)"
    UPSTREAM_INCLUDE=$SID_INCLUDE LAYOUT_LABEL="rdma-core 65" LAYOUT_NO_HOOK=1 \
        LAYOUT_RECORD=$rec LAYOUT_COUNTS=$SCRATCH/counts-65.json \
        python3 compat-tests/layout/layout.py "$@"
    ended 65
fi
if [ "$only" != sid ]; then
    newer=()
    [ -f "$rec" ] && newer=(LAYOUT_NEWER="$rec" LAYOUT_NEWER_LABEL="rdma-core 65")
    env UPSTREAM_INCLUDE="$UPSTREAM_INCLUDE" LAYOUT_LABEL="rdma-core 44" "${newer[@]}" \
        LAYOUT_COUNTS="$SCRATCH/counts-44.json" python3 compat-tests/layout/layout.py "$@"
    ended 44
fi

# The closing line: both passes summed.
python3 - "$SCRATCH" <<'EOF'
import glob, json, sys
t = {'passed': 0, 'failed': 0, 'skipped': 0, 'diffs': 0, 'warns': 0, 'newer': 0}
files = sorted(glob.glob(sys.argv[1] + '/counts-*.json'))
for f in files:
    for k, v in json.load(open(f)).items():
        t[k] += v
if not files:
    t['failed'] = 1
    print('FAIL layout: no pass ran to its end')
print('layout: %(passed)d passed, %(failed)d failed, %(skipped)d skipped, differences: %(diffs)d, '
      'warnings: %(warns)d, grown as in rdma-core 65: %(newer)d' % t)
sys.exit(1 if t['failed'] else 0)
EOF
