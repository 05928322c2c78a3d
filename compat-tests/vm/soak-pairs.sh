#!/bin/bash
# soak-pairs.sh N PINGPONG ARGS...: N copies of one side of an ibv_*_pingpong
# at once (the vm-wire suite's concurrent soak, wire-tests.txt).  The harness
# appends "-d DEV -g GID -p PORT" and, on the client side, the server's
# address; copy i uses port PORT + 1000 * i (copy 0 is the harness' own port,
# started last on the server side, so that once it listens all do; the
# clients start a second later).  Each copy's output goes to stdout prefixed
# with its number; the exit status is 0 when every copy exited 0, else the
# first non-zero status.
set -u
n=$1; shift
args=("$@")
p=-1
for ((i = 0; i < ${#args[@]}; i++)); do
    [ "${args[$i]}" = -p ] && p=$((i + 1))
done
[ "$p" -gt 0 ] && [ "$p" -lt "${#args[@]}" ] || { echo "soak-pairs.sh: no -p PORT in: $*" >&2; exit 2; }
port=${args[$p]}
client=0
[ $((p + 1)) -lt "${#args[@]}" ] && client=1
[ "$client" = 1 ] && sleep 1
pids=()
for ((i = n - 1; i >= 0; i--)); do
    a=("${args[@]}")
    a[$p]=$((port + 1000 * i))
    ( "${a[@]}" 2>&1 | sed "s/^/[$i] /"; exit "${PIPESTATUS[0]}" ) &
    pids[$i]=$!
    [ "$client" = 0 ] && [ "$i" -gt 0 ] && sleep 0.2
done
rc=0
for ((i = 0; i < n; i++)); do
    wait "${pids[$i]}"
    st=$?
    [ "$rc" = 0 ] && rc=$st
done
exit $rc
