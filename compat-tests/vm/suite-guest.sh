#!/bin/bash
# Runs inside the VM (started by run.sh through vm-run.sh): every test of the
# vm suite, once per library, interleaved (upstream, then ours, per test).
# Results go to $VM_RUN_DIR/results/<test>/<lib>/{server,client}.{out,err,rc,ms}
# (single commands: cmd.{out,err,rc,ms}); run.sh's report.py reads them.
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   SUITE_TESTS: file with one "<id>|<kind>|<command>" per line
set -u
R=$VM_RUN_DIR/results
mkdir -p "$R"
T_SINGLE=${T_SINGLE:-30}        # ibv_devices / ibv_devinfo
T_PP=${T_PP:-45}                # one pingpong side (upstream)
T_PP_OURS_MIN=${T_PP_OURS_MIN:-25}

now_ms() { local s ns; read -r s ns <<<"$(date '+%s %N')"; echo $(( s * 1000 + 10#$ns / 1000000 )); }

# gid index of rxeN's RoCE v2 GID for its IPv4 address (else any RoCE v2 GID)
gid_index() {
    local dev=$1 f i t g fallback=
    for f in /sys/class/infiniband/$dev/ports/1/gid_attrs/types/*; do
        i=${f##*/}
        t=$(cat "$f" 2>/dev/null) || continue
        [ "$t" = "RoCE v2" ] || continue
        read -r g < "/sys/class/infiniband/$dev/ports/1/gids/$i"
        case "$g" in
            0000:0000:0000:0000:0000:ffff:*) echo "$i"; return ;;
            0000:0000:0000:0000:0000:0000:0000:0000) ;;
            *) [ -n "$fallback" ] || fallback=$i ;;
        esac
    done
    [ -n "$fallback" ] && echo "$fallback"
}

# is something listening on TCP port $1?
listening() {
    local hex; hex=$(printf ':%04X ' "$1")
    # local_address ends in :PORT, then rem_address, then st 0A (LISTEN)
    grep -q "$hex[0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

G0=$(gid_index rxe0) G1=$(gid_index rxe1)
{
    echo "gid_rxe0=$G0"
    echo "gid_rxe1=$G1"
    echo "gid_value_rxe0=$(cat /sys/class/infiniband/rxe0/ports/1/gids/${G0:-0} 2>/dev/null)"
    echo "gid_value_rxe1=$(cat /sys/class/infiniband/rxe1/ports/1/gids/${G1:-0} 2>/dev/null)"
    echo "kernel=$(uname -r)"
    echo "upstream_ld=$UPSTREAM_LD"
    echo "our_ld=$OUR_LD"
    echo "upstream_resolved=$(LD_LIBRARY_PATH=$UPSTREAM_LD ldd "$(command -v ibv_devices)" | awk '/libibverbs.so.1/ {print $3}')"
    echo "ours_resolved=$(LD_LIBRARY_PATH=$OUR_LD ldd "$(command -v ibv_devices)" | awk '/libibverbs.so.1/ {print $3}')"
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

port=18600
run_pair() { # dir ld limit cmd...
    local d=$1 ld=$2 lim=$3 t0 sp i; shift 3
    port=$((port + 1))
    mkdir -p "$d"
    t0=$(now_ms)
    env LD_LIBRARY_PATH="$ld" timeout -k 5 "$lim" "$@" -d rxe0 -g "$G0" -p "$port" \
        > "$d/server.out" 2> "$d/server.err" &
    sp=$!
    for i in $(seq 200); do     # up to 20 s for the server to listen (or die)
        listening "$port" && break
        kill -0 "$sp" 2>/dev/null || break
        sleep 0.1
    done
    env LD_LIBRARY_PATH="$ld" timeout -k 5 "$lim" "$@" -d rxe1 -g "$G1" -p "$port" 127.0.0.1 \
        > "$d/client.out" 2> "$d/client.err"
    echo $? > "$d/client.rc"
    wait "$sp"
    echo $? > "$d/server.rc"
    echo $(( $(now_ms) - t0 )) > "$d/pair.ms"
}

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
        up_ms=$(cat "$R/$id/upstream/pair.ms")
        lim=$(( up_ms * 4 / 1000 + 1 ))
        [ "$lim" -ge "$T_PP_OURS_MIN" ] || lim=$T_PP_OURS_MIN
        [ "$lim" -le "$T_PP" ] || lim=$T_PP
        run_pair "$R/$id/ours" "$OUR_LD" "$lim" "$@"
    fi
done < "$SUITE_TESTS"
echo done > "$R/complete"
