#!/bin/bash
# Runs inside the VM (started by perftest.sh through vm-run.sh): every
# perftest of perftest-tests.txt, once per library, interleaved (upstream,
# then ours, per test).  Server on rxe0, client on rxe1 -> 127.0.0.1.
# Results: $VM_RUN_DIR/results/<test>/<lib>/{server,client}.{out,err,rc}, pair.ms
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   SUITE_TESTS: the test list
set -u
R=$VM_RUN_DIR/results
mkdir -p "$R"
T_UP=${T_UP:-60}                # one side, upstream
T_OURS_MIN=${T_OURS_MIN:-20}    # ours: 4x upstream's time, within [T_OURS_MIN, T_UP]
T_SERVER_GRACE=${T_SERVER_GRACE:-10}  # the server's time left once the client ended

now_ms() { local s ns; read -r s ns <<<"$(date '+%s %N')"; echo $(( s * 1000 + 10#$ns / 1000000 )); }

# index of rxeN's RoCE v2 GID for its IPv4 address (else any RoCE v2 GID)
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

listening() { # is something listening on TCP port $1?  (no fork: slow under TCG)
    local want _sl local _rem st _rest f
    printf -v want ':%04X' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        while read -r _sl local _rem st _rest; do
            [ "${local##*:}" = "${want#:}" ] && [ "$st" = 0A ] && return 0
        done < "$f"
    done
    return 1
}

G0=$(gid_index rxe0) G1=$(gid_index rxe1)
{
    echo "gid_rxe0=$G0"
    echo "gid_rxe1=$G1"
    echo "kernel=$(uname -r)"
    echo "perftest=$(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
    echo "upstream_ld=$UPSTREAM_LD"
    echo "our_ld=$OUR_LD"
    echo "upstream_resolved=$(LD_LIBRARY_PATH=$UPSTREAM_LD ldd "$(command -v ib_send_bw)" | awk '/libibverbs.so.1/ {print $3}')"
    echo "ours_resolved=$(LD_LIBRARY_PATH=$OUR_LD ldd "$(command -v ib_send_bw)" | awk '/libibverbs.so.1/ {print $3}')"
} > "$R/info"
[ -n "$G0" ] && [ -n "$G1" ] || { echo "perftest-guest: no RoCE v2 GID on rxe0/rxe1" >&2; exit 3; }

port=18700
run_pair() { # dir ld limit cmd...
    local d=$1 ld=$2 lim=$3 t0 sp i crc src; shift 3
    port=$((port + 1))
    mkdir -p "$d"
    t0=$(now_ms)
    env LD_LIBRARY_PATH="$ld" timeout -k 5 "$lim" "$@" -d rxe0 -x "$G0" -F --report_gbits \
        -p "$port" > "$d/server.out" 2> "$d/server.err" &
    sp=$!
    for i in $(seq 200); do     # up to 20 s for the server to listen (or die)
        listening "$port" && break
        kill -0 "$sp" 2>/dev/null || break
        sleep 0.1
    done
    env LD_LIBRARY_PATH="$ld" timeout -k 5 "$lim" "$@" -d rxe1 -x "$G1" -F --report_gbits \
        -p "$port" 127.0.0.1 > "$d/client.out" 2> "$d/client.err"
    crc=$?
    echo $crc > "$d/client.rc"
    # a server whose client is gone would wait for the next client forever
    for i in $(seq $((T_SERVER_GRACE * 10))); do
        kill -0 "$sp" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$sp" 2>/dev/null; then
        kill -TERM "$sp" 2>/dev/null
        echo "server still running ${T_SERVER_GRACE}s after the client ended: killed" > "$d/server.killed"
    fi
    wait "$sp"
    src=$?
    echo $src > "$d/server.rc"
    echo $(( $(now_ms) - t0 )) > "$d/pair.ms"
}

while IFS='|' read -r id cmd; do
    [ -n "$id" ] || continue
    case "$id" in \#*) continue ;; esac
    # shellcheck disable=SC2086
    set -- $cmd
    echo "perftest-guest: $id" >&2
    run_pair "$R/$id/upstream" "$UPSTREAM_LD" "$T_UP" "$@"
    up_ms=$(cat "$R/$id/upstream/pair.ms")
    lim=$(( up_ms * 4 / 1000 + 1 ))
    [ "$lim" -ge "$T_OURS_MIN" ] || lim=$T_OURS_MIN
    [ "$lim" -le "$T_UP" ] || lim=$T_UP
    run_pair "$R/$id/ours" "$OUR_LD" "$lim" "$@"
done < "$SUITE_TESTS"
echo done > "$R/complete"
