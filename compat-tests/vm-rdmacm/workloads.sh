#!/bin/bash
# The rdma_cm workloads of vm-rdmacm, run once on the kernel's rdma_cm (in
# the VM, over rxe) and once on ours (swr0 on the host), each process's
# ucma log written to OUT/<workload>.<role>.<pid> (SWRDMA_UCMA_LOG).
#   [B=CLIENT_ADDR] workloads.sh OUT SERVER_ADDR RUN...
# RUN: the command prefix that puts a program on the rdma_cm under test
# (e.g. build/bin/swrdma-cm, or env LD_PRELOAD=... SWRDMA_UCMA_KERNEL=1).
# WL_CLIENT (words, no quoting): another prefix for the clients (a server
# on one rdma_cm, its client on another: the wire device against rxe).
# (perftest -R is not among them: its client retries a connect that may
# come before the server listens again, so its log depends on timing, not
# on the CM; compat-tests/soft-rdmacm runs it.)
set -u
OUT=$1 A=$2; shift 2
RUN=("$@")
CRUN=("${RUN[@]}")
[ -n "${WL_CLIENT:-}" ] && read -ra CRUN <<<"$WL_CLIENT"
mkdir -p "$OUT"
# pair NAME PORT SERVER_ARGS -- CLIENT_ARGS: a server, then its client
pair() {
    local name=$1 port=$2; shift 2
    local s=(); while [ "$1" != "--" ]; do s+=("$1"); shift; done; shift
    SWRDMA_UCMA_LOG=$OUT/$name.server timeout 60 "${RUN[@]}" "${s[@]}" >"$OUT/$name.server.out" 2>&1 &
    local sp=$!
    sleep 2
    SWRDMA_UCMA_LOG=$OUT/$name.client timeout 60 "${CRUN[@]}" "$@" >"$OUT/$name.client.out" 2>&1
    echo "$?" >"$OUT/$name.client.rc"
    wait $sp; echo "$?" >"$OUT/$name.server.rc"
}
pair rping 7301 rping -s -a "$A" -p 7301 -C 2 -v -- rping -c -a "$A" -p 7301 -C 2 -v
pair ucmatose 7302 ucmatose -b "$A" -p 7302 -c 2 -C 4 -- ucmatose -s "$A" -p 7302 -c 2 -C 4
pair udaddy 7174 udaddy -b "$A" -c 1 -C 2 -- udaddy -s "$A" -c 1 -C 2
pair rdma_server 7303 rdma_server -s "$A" -p 7303 -- rdma_client -s "$A" -p 7303
pair rdma_xserver 7304 rdma_xserver -p 7304 -c r -- rdma_xclient -s "$A" -p 7304 -c r
# multicast: a receiver joined on A, a sender joined on B (the VM: rxe0
# and rxe1, as a sender's datagrams leave by its own device)
pair mckey 0 mckey -m 239.1.1.1 -b "$A" -C 3 -- mckey -m 239.1.1.1 -b "${B:-$A}" -s -C 3
pair rstream 7306 rstream -T v -S 4096 -C 4 -b "$A" -p 7306 -- rstream -T v -S 4096 -C 4 -s "$A" -p 7306
# misuse.c: librdmacm calls in the wrong state or with bad arguments
if [ -n "${MISUSE:-}" ]; then
    SWRDMA_UCMA_LOG=$OUT/misuse.client timeout 60 "${RUN[@]}" "$MISUSE" "$A" >"$OUT/misuse.client.out" 2>&1
    echo "$?" >"$OUT/misuse.client.rc"
fi
# no listener: REJ 8
SWRDMA_UCMA_LOG=$OUT/nolistener.client timeout 60 "${CRUN[@]}" rping -c -a "$A" -p 7399 -C 1 >"$OUT/nolistener.client.out" 2>&1
echo "$?" >"$OUT/nolistener.client.rc"
exit 0
