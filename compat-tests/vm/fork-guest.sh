#!/bin/bash
# Runs inside the VM (started by fork.sh through vm-run.sh): fork-mr on rxe0
# once per library for every line of fork-tests.txt.
# Results: $VM_RUN_DIR/results/<id>/{upstream,ours}/{out,err,rc}
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   BIN: the directory holding fork-mr and fork-mr-our-headers
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/guest-lib.sh"
G0=$(gid_index rxe0)
{
    echo "gid_rxe0=$G0"
    echo "kernel=$(uname -r)"
    resolved_info "$BIN/fork-mr"
} > "$R/info"
[ -n "$G0" ] || { echo "fork-guest: no RoCE v2 GID on rxe0" >&2; exit 3; }

run() { # dir ld binary env args
    local d=$1 ld=$2 bin=$3 envs=$4 args=$5
    mkdir -p "$d"
    # shellcheck disable=SC2086
    env LD_LIBRARY_PATH="$ld" $envs timeout -k 5 60 "$BIN/$bin" rxe0 "$G0" $args \
        > "$d/out" 2> "$d/err" < /dev/null
    echo $? > "$d/rc"
}
while IFS='|' read -r id bin envs args; do
    [ -n "$id" ] || continue
    case "$id" in \#*) continue ;; esac
    echo "fork-guest: $id" >&2
    # upstream always runs the binary built with Debian's headers
    run "$R/$id/upstream" "$UPSTREAM_LD" fork-mr "$envs" "$args"
    run "$R/$id/ours" "$OUR_LD" "$bin" "$envs" "$args"
done < "$HERE/fork-tests.txt"
echo done > "$R/complete"
