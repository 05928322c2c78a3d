#!/bin/bash
# Runs inside the VM (started by perftest.sh through vm-run.sh): every
# perftest of perftest-tests.txt, once per library, interleaved (upstream,
# then ours, per test).  Server on rxe0, client on rxe1 -> 127.0.0.1.
# Results: $VM_RUN_DIR/results/<test>/<lib>/{server,client}.{out,err,rc}, pair.ms
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   SUITE_TESTS: the test list
set -u
. "$(dirname "$0")/guest-lib.sh"
T_UP=${T_UP:-60}                # one side, upstream
T_OURS_MIN=${T_OURS_MIN:-20}    # ours: 4x upstream's time, within [T_OURS_MIN, T_UP]
T_SERVER_GRACE=${T_SERVER_GRACE:-10}  # the server's time left once the client ended

G0=$(gid_index rxe0) G1=$(gid_index rxe1)
{
    echo "gid_rxe0=$G0"
    echo "gid_rxe1=$G1"
    echo "kernel=$(uname -r)"
    echo "perftest=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
    echo "upstream_ld=$UPSTREAM_LD"
    echo "our_ld=$OUR_LD"
    resolved_info "$(command -v ib_send_bw)"
} > "$R/info"
[ -n "$G0" ] && [ -n "$G1" ] || { echo "perftest-guest: no RoCE v2 GID on rxe0/rxe1" >&2; exit 3; }

# server on rxe0, client on rxe1 (run_pair: guest-lib.sh)
PAIR_PORT=18700
PAIR_SERVER=(-d rxe0 -x "$G0" -F --report_gbits)
PAIR_CLIENT=(-d rxe1 -x "$G1" -F --report_gbits)
PAIR_SERVER_GRACE=$T_SERVER_GRACE

while IFS='|' read -r id cmd; do
    [ -n "$id" ] || continue
    case "$id" in \#*) continue ;; esac
    # shellcheck disable=SC2086
    set -- $cmd
    echo "perftest-guest: $id" >&2
    run_pair "$R/$id/upstream" "$UPSTREAM_LD" "$T_UP" "$@"
    ours_limit "$R/$id/upstream/pair.ms" "$T_OURS_MIN" "$T_UP"
    run_pair "$R/$id/ours" "$OUR_LD" "$LIMIT" "$@"
done < "$SUITE_TESTS"
echo done > "$R/complete"
