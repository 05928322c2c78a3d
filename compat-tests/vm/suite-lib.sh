# shellcheck shell=bash
# What the VM suites' host-side scripts share (run.sh, perftest.sh,
# pyverbs.sh, asyncwatch.sh, fork.sh).  Sourcing it moves to the repository
# root.  Each suite then goes
#
#   suite_init SUITE          HERE (compat-tests/vm), OUT (build/compat-tests/SUITE,
#                             created), RUN (OUT/run, the VM's run directory),
#                             OUR_LIB / UPSTREAM_LIB (CONVENTIONS.md defaults),
#                             JSON (OUT/results.json)
#   suite_self_check          for --self-check: Debian's library plays "ours"
#                             (OUR_LIB -> OUT/self-check/, JSON results-self-check.json)
#   suite_need_commands HINT CMD...
#                             fails early naming the CMDs this machine lacks
#                             (an absolute path: must be executable); HINT
#                             names the packages
#   suite_need_upstream       fails early without UPSTREAM_LIB or rxe's provider
#   suite_lib_dirs [NOTE]     UPSTREAM_LD / OUR_LD (LD_LIBRARY_PATH for each
#                             library); adds OUR_LD to VM_PATHS (vm_run shares it with the
#                             guest or says why it cannot); NOTE: said on stderr when
#                             OUR_LD has no libibverbs.so.1
#   suite_run_vm GUEST TIMEOUT [NAME=VALUE...]
#                             boots the VM once to run compat-tests/vm/GUEST
#                             with UPSTREAM_LD, OUR_LD and the NAME=VALUEs in
#                             its environment, under VM_TIMEOUT (default
#                             TIMEOUT s); sets vrc (vm-run.sh's exit status)
#                             and secs; its output: OUT/guest.{out,err}
#   suite_report REPORT [ARG...]
#                             runs compat-tests/vm/REPORT with ARGs and the
#                             arguments every report takes (--results, --json,
#                             --vm-status, --vm-log, --seconds, --our-lib,
#                             --upstream-lib), then says where the details
#                             are (SUITE_DETAILS: what follows "details: $JSON, ")
#                             and exits with the report's status
#   fail_early NAME WHY       FAIL NAME: WHY, the closing line, exit 1

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2

suite_init() {
    SUITE=$1
    HERE=$PWD/compat-tests/vm
    OUT=build/compat-tests/$SUITE
    RUN=$PWD/$OUT/run
    OUR_LIB=${OUR_LIB:-build/lib/libibverbs.so.1}
    UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
    JSON=$OUT/results.json
    mkdir -p "$OUT"
}

suite_self_check() {
    mkdir -p "$OUT/self-check"
    ln -sfn "$UPSTREAM_LIB" "$OUT/self-check/libibverbs.so.1"
    OUR_LIB=$OUT/self-check/libibverbs.so.1
    JSON=$OUT/results-self-check.json
    echo "$SUITE: self-check: Debian's $UPSTREAM_LIB plays ours ($OUR_LIB)" >&2
}

fail_early() {
    echo "FAIL $1: $2"
    echo "$SUITE: 0 passed, 1 failed"
    exit 1
}

suite_need_commands() {
    local hint=$1 c missing=; shift
    for c; do
        case "$c" in
            /*) [ -x "$c" ] || missing="$missing $c" ;;
            *) command -v "$c" >/dev/null || missing="$missing $c" ;;
        esac
    done
    [ -z "$missing" ] || fail_early prerequisites "missing on this machine:$missing ($hint; make deps)"
}

suite_need_upstream() {
    [ -e "$UPSTREAM_LIB" ] || fail_early prerequisites "UPSTREAM_LIB $UPSTREAM_LIB missing (libibverbs1; make deps)"
    [ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ] ||
        fail_early prerequisites "rxe provider missing (ibverbs-providers; make deps)"
}

ld_for() { # LD_LIBRARY_PATH for a library ("" = the system's default search)
    local d; d=$(cd "$(dirname "$1")" 2>/dev/null && pwd -P) || { echo "$(dirname "$1")"; return; }
    case "$d" in
        /usr/lib/x86_64-linux-gnu|/lib/x86_64-linux-gnu) echo "" ;;
        *) echo "$d" ;;
    esac
}

# vm_path DIR: the guest must see DIR (vm/lib.sh's vm_run shares it when
# it must, or says why it cannot)
vm_path() { export VM_PATHS=${VM_PATHS:+$VM_PATHS:}$1; }

suite_lib_dirs() {
    UPSTREAM_LD=$(ld_for "$UPSTREAM_LIB")
    OUR_LD=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || OUR_LD=$PWD/$(dirname "$OUR_LIB")
    vm_path "$OUR_LD"
    if [ $# -gt 0 ] && ! [ -e "$OUR_LD/libibverbs.so.1" ]; then
        echo "$SUITE: note: $OUR_LD/libibverbs.so.1 does not exist (make lib?); $1" >&2
    fi
}

suite_run_vm() {
    local guest=$1 timeout=$2 kv script=$PWD/$OUT/guest-script.sh t0; shift 2
    {
        echo "export UPSTREAM_LD=$(printf %q "$UPSTREAM_LD") OUR_LD=$(printf %q "$OUR_LD")"
        for kv; do
            echo "export ${kv%%=*}=$(printf %q "${kv#*=}")"
        done
        echo "exec bash $(printf %q "$HERE/$guest")"
    } > "$script"
    rm -rf "$RUN"
    t0=$(date +%s.%N)
    VM_RUN_DIR=$RUN VM_TIMEOUT=${VM_TIMEOUT:-$timeout} bash "$HERE/vm-run.sh" "$script" \
        > "$OUT/guest.out" 2> "$OUT/guest.err"
    vrc=$?
    secs=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
    if [ "$vrc" -ne 0 ]; then
        echo "$SUITE: the VM run failed (exit status $vrc); its messages:" >&2
        sed 's/^/  | /' "$OUT/guest.err" >&2
    fi
}

suite_report() {
    local report=$1 rc; shift
    python3 "$HERE/$report" "$@" --results "$RUN/results" --json "$JSON" \
        --vm-status "$vrc" --vm-log "$(grep '^vm:' "$OUT/guest.err")" --seconds "$secs" \
        --our-lib "$OUR_LIB" --upstream-lib "$UPSTREAM_LIB"
    rc=$?
    echo "(VM run: ${secs}s; details: $JSON, ${SUITE_DETAILS:-raw outputs: $OUT/run/results/})" >&2
    exit $rc
}
