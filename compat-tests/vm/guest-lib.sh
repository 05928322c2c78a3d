# shellcheck shell=bash
# What the VM suites' guest scripts share (suite-guest.sh, perftest-guest.sh,
# pyverbs-guest.sh, asyncwatch-guest.sh, fork-guest.sh); they run inside the
# VM, started through vm-run.sh, with UPSTREAM_LD / OUR_LD (LD_LIBRARY_PATH
# for each library, "" = the system's default) in their environment.
# Processes are slow to start under TCG: what runs often here forks nothing.
#
# Sourcing it sets R ($VM_RUN_DIR/results, created), where the results go.
#
#   now_ms                    milliseconds since the epoch
#   nap SECONDS               sleep, without a process (a read's timeout)
#   gid_index DEV             index of DEV's RoCE v2 GID for its IPv4 address
#                             (else any RoCE v2 GID; nothing when it has none)
#   resolved_info BIN         the info lines upstream_resolved= / ours_resolved=:
#                             the libibverbs.so.1 that BIN loads with each library
#   listening PORT            is something listening on TCP port PORT?
#   run_pair DIR LD LIMIT CMD...
#                             a server/client pair of CMD, each side under
#                             `timeout LIMIT`, with LD_LIBRARY_PATH=LD, on the
#                             next TCP port (PAIR_PORT + 1): the server,
#                             CMD PAIR_SERVER... -p PORT, in the background;
#                             once it listens (or died), the client,
#                             CMD PAIR_CLIENT... -p PORT 127.0.0.1.
#                             Results: DIR/{server,client}.{out,err,rc},
#                             DIR/pair.ms.  With PAIR_SERVER_GRACE set, a server
#                             still running that many s after its client ended
#                             is killed (DIR/server.killed says so).
#   step DESCRIPTION CMD...   runs CMD; a failure (with its output) is
#                             added to $netfail
#   veth1_to_far              rxe1 deleted, veth1 (192.0.2.2) moved into a
#                             new netns far (no DAD, lo up), guest-init.sh's
#                             policy routing for two local addresses undone:
#                             the root netns (rxe0, whose kernel socket holds
#                             UDP 4791 there) reaches 192.0.2.2 through veth0
#                             as another machine; failures in $netfail
#   ours_limit MS_FILE MIN MAX
#                             LIMIT = 4x the time in MS_FILE (upstream's
#                             pair.ms) in s, within [MIN, MAX]: ours' hangs are
#                             caught sooner

R=$VM_RUN_DIR/results
mkdir -p "$R"

# (bash's EPOCHREALTIME: no date process, which costs tens of ms under TCG)
now_ms() {
    local t=${EPOCHREALTIME:-}
    if [ -n "$t" ]; then t=${t/[.,]/}; echo $(( 10#$t / 1000 )); return; fi
    local s ns; read -r s ns <<<"$(date '+%s %N')"; echo $(( s * 1000 + 10#$ns / 1000000 ))
}

# nap SECONDS: sleep without starting a process (read's timeout on a pipe
# this shell holds both ends of, so nothing ever arrives; opened at the
# first nap): the polling loops below look every 20 ms, where a sleep
# process each 100 ms cost more under TCG
NAP_FD=
nap() {
    [ -n "$NAP_FD" ] || exec {NAP_FD}<> <(:)
    read -r -t "$1" -u "$NAP_FD" _ 2>/dev/null
    return 0
}

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

resolved_info() {
    echo "upstream_resolved=$(LD_LIBRARY_PATH=$UPSTREAM_LD ldd "$1" | awk '/libibverbs.so.1/ {print $3}')"
    echo "ours_resolved=$(LD_LIBRARY_PATH=$OUR_LD ldd "$1" | awk '/libibverbs.so.1/ {print $3}')"
}

listening() {
    # /proc/net/tcp{,6}: "sl local_address rem_address st ...", the local
    # address ends in :PORT (hex), st 0A = LISTEN; read with builtins only
    local want _sl local _rem st _rest f
    printf -v want '%04X' "$1"
    for f in /proc/net/tcp /proc/net/tcp6; do
        [ -r "$f" ] || continue
        while read -r _sl local _rem st _rest; do
            [ "${local##*:}" = "$want" ] && [ "$st" = 0A ] && return 0
        done < "$f"
    done
    return 1
}

PAIR_PORT=${PAIR_PORT:-18600}
PAIR_SERVER=() PAIR_CLIENT=()
run_pair() {
    local d=$1 ld=$2 lim=$3 t0 sp i; shift 3
    PAIR_PORT=$((PAIR_PORT + 1))
    mkdir -p "$d"
    t0=$(now_ms)
    env LD_LIBRARY_PATH="$ld" timeout -k 5 "$lim" "$@" "${PAIR_SERVER[@]}" -p "$PAIR_PORT" \
        > "$d/server.out" 2> "$d/server.err" &
    sp=$!
    for ((i = 0; i < 1000; i++)); do    # up to 20 s for the server to listen (or die)
        listening "$PAIR_PORT" && break
        kill -0 "$sp" 2>/dev/null || break
        nap 0.02
    done
    env LD_LIBRARY_PATH="$ld" timeout -k 5 "$lim" "$@" "${PAIR_CLIENT[@]}" -p "$PAIR_PORT" 127.0.0.1 \
        > "$d/client.out" 2> "$d/client.err"
    echo $? > "$d/client.rc"
    if [ -n "${PAIR_SERVER_GRACE:-}" ]; then
        # a server whose client is gone would wait for the next client forever
        for ((i = 0; i < PAIR_SERVER_GRACE * 50; i++)); do
            kill -0 "$sp" 2>/dev/null || break
            nap 0.02
        done
        if kill -0 "$sp" 2>/dev/null; then
            kill -TERM "$sp" 2>/dev/null
            echo "server still running ${PAIR_SERVER_GRACE}s after the client ended: killed" > "$d/server.killed"
        fi
    fi
    wait "$sp"
    echo $? > "$d/server.rc"
    echo $(( $(now_ms) - t0 )) > "$d/pair.ms"
}

ours_limit() {
    local ms=0
    read -r ms < "$1"
    LIMIT=$(( ms * 4 / 1000 + 1 ))
    [ "$LIMIT" -ge "$2" ] || LIMIT=$2
    [ "$LIMIT" -le "$3" ] || LIMIT=$3
}

step() { # DESCRIPTION CMD...
    local out
    out=$("${@:2}" 2>&1) || netfail="${netfail:-} $1: $out;"
}

veth1_to_far() {
    step "rdma link delete rxe1" rdma link delete rxe1
    step "ip netns add far" ip netns add far
    step "accept_dad in far" ip netns exec far sysctl -q -w net.ipv6.conf.all.accept_dad=0 \
        net.ipv6.conf.default.accept_dad=0
    step "lo up in far" ip -n far link set lo up
    step "veth1 into far" ip link set veth1 netns far
    step "192.0.2.2 on veth1" ip -n far addr add 192.0.2.2/24 dev veth1
    step "veth1 up" ip -n far link set veth1 up
    # undo guest-init.sh's routing for two local addresses: 192.0.2.2 is now
    # another machine's, reached through veth0 (ARP as usual)
    step "rule pref 10 del" ip rule del pref 10 iif lo lookup 100
    step "table 100 flush" ip route flush table 100
    step "local table at pref 0" ip rule add pref 0 lookup local
    step "rule pref 1000 del" ip rule del pref 1000 lookup local
    step "neigh 192.0.2.2 del" ip neigh del 192.0.2.2 dev veth0
}
