#!/bin/bash
# The release suites vm-trixie and vm-sid: Debian RELEASE's own userland
# (its ibverbs-utils, perftest and rdma-core Python tests, from the root
# compat-tests/roots.sh builds) on Soft-RoCE inside the qemu VM, once on the
# release's own libibverbs and once on ours, in ONE boot.  The guest enters
# the root with chroot (release-guest.sh) and runs the vm, vm-perftest and
# vm-pyverbs guest scripts there; their reports judge each part as for
# bookworm, with the release's own known-upstream-failure lists
# (compat-tests/vm-RELEASE/{,perftest-,pyverbs-}known-upstream-failures.txt),
# and ibv_devices / ibv_devinfo must match on stderr too.  Check names are
# tools/..., perftest/..., pyverbs/...; the closing line sums the three.
#
#   release.sh RELEASE                the suite (OUR_LIB as in CONVENTIONS.md)
#   release.sh RELEASE --self-check   the release's own library plays "ours"
#                                     (a copy of it): every test must PASS
#   release.sh RELEASE --parts 'tools perftest' [--only REGEX]
#                                     for debugging: some parts only; pyverbs
#                                     test ids matching REGEX only
# Environment: ROOTS_DIR (roots.sh's, default build/roots), VM_CACHE, VM_TIMEOUT;
#   RELEASE_ROOTFS (a root instead of roots.sh's) and RELEASE_SWAP=1 (see below)
#   for compat-tests/vm-deb.
set -u
export VM_CPU=${VM_CPU:-qemu64} # (user-space work in the guest: lib.sh)
REL=${1:?usage: release.sh RELEASE [--self-check] [--parts LIST] [--only REGEX]}
shift
. "$(dirname "$0")/suite-lib.sh"
suite_init "vm-$REL"
SD=compat-tests/vm-$REL           # the suite's own directory (known failures)
# (VM_PARTS_<release>, e.g. VM_PARTS_trixie="tools pyverbs": the parts
# that run when --parts does not say; the others are counted skipped.)
pv=VM_PARTS_${REL//-/_}
ALL_PARTS="tools perftest pyverbs"
PARTS=${!pv:-$ALL_PARTS} ONLY= SELF=0
while [ $# -gt 0 ]; do
    case "$1" in
        --self-check) SELF=1 ;;
        --parts) PARTS=${2:-}; shift ;;
        --only) ONLY=${2:-}; shift ;;
        *) echo "usage: release.sh RELEASE [--self-check] [--parts LIST] [--only REGEX]" >&2; exit 2 ;;
    esac
    shift
done
[ -d "$SD" ] || fail_early prerequisites "$SD missing: no suite for release $REL"

suite_need_commands "iproute2, coreutils, python3, util-linux" rdma ip timeout python3 apt-get dpkg flock
# the release's root (built once and cached by roots.sh), or RELEASE_ROOTFS
# (compat-tests/vm-deb: a root with our packages installed)
if [ -n "${RELEASE_ROOTFS:-}" ]; then
    ROOTFS=$RELEASE_ROOTFS; echo > "$OUT/roots.err"
else
    ROOTFS=$(bash compat-tests/roots.sh "$REL" 2> "$OUT/roots.err" | tail -1)
fi
if [ -z "$ROOTFS" ] || [ ! -e "$ROOTFS/.complete" ]; then
    fail_early prerequisites "no $REL root (compat-tests/roots.sh $REL failed: $(tail -3 "$OUT/roots.err" | tr '\n' ' '))"
fi
ROOTFS=$(cd "$ROOTFS" && pwd -P)
vm_path "$ROOTFS"
UPSTREAM_LIB=$(readlink -f "$ROOTFS/usr/lib/x86_64-linux-gnu/libibverbs.so.1")
[ -e "$UPSTREAM_LIB" ] || fail_early prerequisites "the $REL root has no libibverbs.so.1 (libibverbs1)"
for f in usr/bin/ibv_devinfo usr/bin/ib_send_bw usr/share/doc/rdma-core/tests/run_tests.py; do
    [ -e "$ROOTFS/$f" ] || fail_early prerequisites "the $REL root lacks /$f (roots.sh --rebuild $REL?)"
done
ls "$ROOTFS"/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so >/dev/null 2>&1 ||
    fail_early prerequisites "the $REL root has no rxe provider (ibverbs-providers)"

if [ $SELF = 1 ]; then
    # a copy, so that the "ours" side really loads it from /mnt
    mkdir -p "$OUT/self-check"
    cp -f "$UPSTREAM_LIB" "$OUT/self-check/libibverbs.so.1"
    OUR_LIB=$OUT/self-check/libibverbs.so.1
    JSON=$OUT/results-self-check.json
    echo "$SUITE: self-check: $REL's own $UPSTREAM_LIB plays ours (a copy: $OUR_LIB)" >&2
fi
# the VM cache (as lib.sh picks it): the guest loads rdma_ucm from there
VM_CACHE=$(mkdir -p "${VM_CACHE:-build/vm-cache}" && cd "${VM_CACHE:-build/vm-cache}" && pwd)
suite_lib_dirs "the tools will fall back to $REL's own library"

# One boot.  A normal run: tools ~1.5 min, perftest ~3 min, pyverbs ~2 min.
# Hard limit: room for ours hanging in many tests (pyverbs caps each
# library's run at 600 s by itself).
# RELEASE_SWAP=1 (compat-tests/vm-deb): "ours" is the root's own library
# (our installed package, no LD_LIBRARY_PATH) and OUR_LIB's directory holds
# Debian's library, the reference, reached through LD_LIBRARY_PATH.
swap=()
if [ "${RELEASE_SWAP:-0}" = 1 ]; then
    swap=(GUEST_UPSTREAM_LD=/mnt GUEST_OUR_LD=)
    UPSTREAM_LIB="$OUR_LIB (Debian's, by LD_LIBRARY_PATH)"
    OUR_LIB="the root's own /usr/lib/x86_64-linux-gnu/libibverbs.so.1 (our installed package)"
fi
suite_run_vm release-guest.sh 2400 VM_ROOTFS="$ROOTFS" RELEASE_SUITE="vm-$REL" \
    RELEASE_PARTS="$PARTS" PYV_ONLY="$ONLY" VM_CACHE="$VM_CACHE" "${swap[@]}"

# ---- the reports, one per part; the closing line sums them
vm_log=$(grep '^vm:' "$OUT/guest.err")
tp=0 tf=0 rc=0
for part in $PARTS; do
    case $part in
        tools) args=(report.py --tests "$(ls "$SD/tests.txt" 2>/dev/null || echo "$HERE/tests.txt")"
                     --known "$SD/known-upstream-failures.txt" --compare-stderr) ;;
        perftest) args=(perftest-report.py --tests "$(ls "$SD/perftest-tests.txt" 2>/dev/null || echo "$HERE/perftest-tests.txt")"
                        --known "$SD/perftest-known-upstream-failures.txt") ;;
        pyverbs) t=$OUT/pyverbs-table.txt; [ $SELF = 1 ] && t=$OUT/pyverbs-table-self-check.txt
                 args=(pyverbs-report.py --known "$SD/pyverbs-known-upstream-failures.txt" --table "$t") ;;
    esac
    # the part's own exit status counts as the VM's when the VM run itself worked
    pst=$vrc plog=$vm_log
    if [ "$vrc" -eq 0 ]; then
        pst=$(cat "$RUN/$part/guest.rc" 2>/dev/null || echo 125)
        [ "$pst" -eq 0 ] || plog="vm: $part: $(tail -3 "$RUN/$part/guest.err" 2>/dev/null | tr '\n' ' ')"
    fi
    pjson=${JSON%.json}-$part.json
    python3 "$HERE/${args[0]}" "${args[@]:1}" --results "$RUN/$part/results" --json "$pjson" \
        --vm-status "$pst" --vm-log "$plog" --seconds "$(cat "$RUN/$part/guest.secs" 2>/dev/null || echo 0)" \
        --our-lib "$OUR_LIB" --upstream-lib "$UPSTREAM_LIB" --suite "$SUITE-$part" --prefix "$part/" \
        > "$OUT/$part.report" 2>&1 || rc=1
    grep -v "^$SUITE-$part: [0-9]* passed" "$OUT/$part.report"
    line=$(grep "^$SUITE-$part: [0-9]* passed" "$OUT/$part.report" | tail -1)
    p=$(sed -nE 's/.*: ([0-9]+) passed.*/\1/p' <<<"$line"); f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
    [ -n "$line" ] || { echo "FAIL $part/report: ${args[0]} printed no closing line"; p=0 f=1 rc=1; }
    echo "($part: ${p:-0} passed, ${f:-0} failed; $(cat "$RUN/$part/guest.secs" 2>/dev/null || echo '?')s; details: $pjson)"
    tp=$((tp + ${p:-0})) tf=$((tf + ${f:-0}))
done
ts=0
for part in $ALL_PARTS; do
    case " $PARTS " in *" $part "*) ;; *) echo "SKIP $part: not run ($pv or --parts names: $PARTS)"; ts=$((ts + 1)) ;; esac
done
echo "(VM run: ${secs}s; $REL root: $ROOTFS; raw outputs: $OUT/run/<part>/results/)" >&2
echo "$SUITE: $tp passed, $tf failed, $ts skipped"
[ "$rc" -eq 0 ] && [ "$tf" -eq 0 ]
