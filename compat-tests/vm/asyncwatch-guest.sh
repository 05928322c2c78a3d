#!/bin/bash
# Runs inside the VM (started by asyncwatch.sh through vm-run.sh):
# ibv_asyncwatch -d rxe0 and -d rxe1, each on Debian's libibverbs and on ours,
# all four at once, while the actions of asyncwatch-actions.txt happen.
# Results: $VM_RUN_DIR/results/<lib>/<dev>.{out,err,rc,alive}, and per action
# results/actions/<id>.{marks,rc,err}: each watcher's output line count
# before and after the action.
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/guest-lib.sh"
mkdir -p "$R/upstream" "$R/ours" "$R/actions"
QUIET=${QUIET:-2}       # an action's events are over after QUIET s without output
MAXWAIT=${MAXWAIT:-20}  # ... or after MAXWAIT s
{
    echo "kernel=$(uname -r)"
    resolved_info "$(command -v ibv_asyncwatch)"
} > "$R/info"

W=()        # "lib/dev" of each watcher
declare -A PID
for lib in upstream ours; do
    [ $lib = upstream ] && ld=$UPSTREAM_LD || ld=$OUR_LD
    for dev in rxe0 rxe1; do
        # stdbuf: a line-buffered stdout, so that every event is in the file
        # when it happens (and nothing is lost when the watcher is stopped)
        env LD_LIBRARY_PATH="$ld" stdbuf -oL timeout -k 5 600 ibv_asyncwatch -d $dev \
            > "$R/$lib/$dev.out" 2> "$R/$lib/$dev.err" < /dev/null &
        PID[$lib/$dev]=$!
        W+=("$lib/$dev")
    done
done
# every watcher printed its header ("rxeN: async event FD n") or died
for _ in $(seq 200); do
    ready=1
    for w in "${W[@]}"; do
        if ! [ -s "$R/$w.out" ] && kill -0 "${PID[$w]}" 2>/dev/null; then ready=; fi
    done
    [ -n "$ready" ] && break
    sleep 0.1
done
sleep 1     # the header is printed just before the watcher blocks in ibv_get_async_event

# each watcher's line count, without forking (processes are slow under TCG)
counts() {
    local w out=
    for w in "${W[@]}"; do
        mapfile -t _lines < "$R/$w.out"
        out+="$w=${#_lines[@]} "
    done
    echo "$out"
}
uptime_ds() { local up _; read -r up _ < /proc/uptime; up=${up/./}; echo $((10#$up / 10)); }

while IFS='|' read -r id cmd; do
    [ -n "$id" ] || continue
    case "$id" in \#*) continue ;; esac
    echo "asyncwatch-guest: $id: $cmd" >&2
    before=$(counts)
    # shellcheck disable=SC2086
    $cmd > "$R/actions/$id.out" 2> "$R/actions/$id.err"
    echo $? > "$R/actions/$id.rc"
    t0=$(uptime_ds)
    last=$(counts) t_change=$t0 t=$t0
    while [ $((t - t_change)) -lt $((QUIET * 10)) ] && [ $((t - t0)) -lt $((MAXWAIT * 10)) ]; do
        sleep 0.2
        now=$(counts)
        t=$(uptime_ds)
        if [ "$now" != "$last" ]; then t_change=$t; last=$now; fi
    done
    waited=$((t - t0))
    { echo "before $before"; echo "after $last"; echo "waited_ds $waited"; } > "$R/actions/$id.marks"
    echo "$id" >> "$R/actions/order"
done < "$HERE/asyncwatch-actions.txt"

for w in "${W[@]}"; do
    if kill -0 "${PID[$w]}" 2>/dev/null; then
        echo yes > "$R/$w.alive"
        kill -TERM "${PID[$w]}"
    else
        echo no > "$R/$w.alive"
    fi
done
for w in "${W[@]}"; do
    wait "${PID[$w]}"
    echo $? > "$R/$w.rc"
done
echo done > "$R/complete"
