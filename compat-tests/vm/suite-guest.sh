#!/bin/bash
# Runs inside the VM (started by run.sh through vm-run.sh): every test of the
# vm suite, once per library, interleaved (upstream, then ours, per test).
# Results go to $VM_RUN_DIR/results/<test>/<lib>/{server,client}.{out,err,rc,ms}
# (single commands: cmd.{out,err,rc,ms}); run.sh's report.py reads them.
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   SUITE_TESTS: file with one "<id>|<kind>|<command>" per line
set -u
. "$(dirname "$0")/guest-lib.sh"
T_SINGLE=${T_SINGLE:-30}        # ibv_devices / ibv_devinfo
T_PP=${T_PP:-45}                # one pingpong side (upstream)
T_PP_OURS_MIN=${T_PP_OURS_MIN:-25}

G0=$(gid_index rxe0) G1=$(gid_index rxe1)
{
    echo "gid_rxe0=$G0"
    echo "gid_rxe1=$G1"
    echo "gid_value_rxe0=$(cat /sys/class/infiniband/rxe0/ports/1/gids/${G0:-0} 2>/dev/null)"
    echo "gid_value_rxe1=$(cat /sys/class/infiniband/rxe1/ports/1/gids/${G1:-0} 2>/dev/null)"
    echo "kernel=$(uname -r)"
    echo "upstream_ld=$UPSTREAM_LD"
    echo "our_ld=$OUR_LD"
    resolved_info "$(command -v ibv_devices)"
} > "$R/info"
[ -n "$G0" ] && [ -n "$G1" ] || { echo "suite-guest: no RoCE v2 GID on rxe0/rxe1" >&2; exit 3; }

run_single() { # dir ld cmd...
    local d=$1 ld=$2 t0; shift 2
    mkdir -p "$d"
    t0=$(now_ms)
    env LD_LIBRARY_PATH="$ld" timeout -k 5 "$T_SINGLE" "$@" > "$d/cmd.out" 2> "$d/cmd.err"
    echo $? > "$d/cmd.rc"
    echo $(( $(now_ms) - t0 )) > "$d/cmd.ms"
}

# pingpongs: server on rxe0, client on rxe1 (run_pair: guest-lib.sh)
PAIR_PORT=18600
PAIR_SERVER=(-d rxe0 -g "$G0")
PAIR_CLIENT=(-d rxe1 -g "$G1")

while IFS='|' read -r id kind cmd; do
    [ -n "$id" ] || continue
    case "$id" in \#*) continue ;; esac
    # shellcheck disable=SC2086
    set -- $cmd
    echo "suite-guest: $id" >&2
    if [ "$kind" = single ]; then
        run_single "$R/$id/upstream" "$UPSTREAM_LD" "$@"
        run_single "$R/$id/ours" "$OUR_LD" "$@"
    else
        run_pair "$R/$id/upstream" "$UPSTREAM_LD" "$T_PP" "$@"
        # ours: a hang is detected sooner (4x upstream's time, >= T_PP_OURS_MIN s)
        ours_limit "$R/$id/upstream/pair.ms" "$T_PP_OURS_MIN" "$T_PP"
        run_pair "$R/$id/ours" "$OUR_LD" "$LIMIT" "$@"
    fi
done < "$SUITE_TESTS"
echo done > "$R/complete"
