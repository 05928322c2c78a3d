#!/bin/bash
# Runs inside the VM (started by run.sh through compat-tests/vm/vm-run.sh):
# faults on rxe0 while programs use it, once per library, upstream first,
# test by test (the list: tests.txt here).
# Results: $VM_RUN_DIR/results/<id>/{upstream,ours}/... (see run_* below),
# $VM_RUN_DIR/results/info, results/kernel-problems, results/complete.
#   UPSTREAM_LD / OUR_LD: LD_LIBRARY_PATH for each library ("" = system default)
#   BIN: the directory holding faultprog
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../vm/guest-lib.sh"
G0=$(gid_index rxe0) G1=$(gid_index rxe1)
{
    echo "gid_rxe0=$G0"
    echo "gid_rxe1=$G1"
    echo "kernel=$(uname -r)"
    resolved_info "$BIN/faultprog"
    # does the driver disassociate?  (rxe in 6.1 has no disassociate_ucontext)
    # (kallsyms lists modules' static functions too: ib_uverbs_remove_one is one)
    echo "kallsyms_rxe_disassociate_ucontext=$(grep -c ' rxe_disassociate_ucontext' /proc/kallsyms)"
    echo "kallsyms_ib_uverbs_remove_one=$(grep -c ' ib_uverbs_remove_one' /proc/kallsyms)"
} > "$R/info"
[ -n "$G0" ] && [ -n "$G1" ] || { echo "fault-guest: no RoCE v2 GID on rxe0/rxe1" >&2; exit 3; }

# ---- helpers

# rxe0 back (after a delete) and ACTIVE with its RoCE v2 GID, or rxe0's port
# ACTIVE again (after veth0 was down); DIR/restore.{rc,ms}
rxe0_ready() {
    local i u
    for ((i = 0; i < 150; i++)); do
        if [ "$(cat /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null)" = "4: ACTIVE" ] &&
           [ "$(cat /sys/class/infiniband/rxe1/ports/1/state 2>/dev/null)" = "4: ACTIVE" ] &&
           [ "$(gid_index rxe0)" = "$G0" ]; then
            for u in /sys/class/infiniband_verbs/uverbs*; do
                [ "$(cat "$u/ibdev" 2>/dev/null)" = rxe0 ] && [ -e "/dev/infiniband/${u##*/}" ] && return 0
            done
        fi
        sleep 0.1
    done
    return 1
}
restore() { # DIR KIND: the device (re-add) or the port (veth0 up)
    local d=$1 t0 rc=0
    t0=$(now_ms)
    case "$2" in
        readd)
            if [ -d /sys/class/infiniband/rxe0 ]; then
                echo "rxe0 still there before the re-add" > "$d/restore.note"
            else
                rdma link add rxe0 type rxe netdev veth0 > "$d/restore.out" 2>&1 || rc=$?
            fi ;;
        portup) ip link set veth0 up > "$d/restore.out" 2>&1 || rc=$? ;;
    esac
    [ "$rc" -eq 0 ] && { rxe0_ready || rc=99; }
    echo "$rc" > "$d/restore.rc"
    echo $(( $(now_ms) - t0 )) > "$d/restore.ms"
}
# `rdma link delete rxe0` in the background: DIR/delete.{start,end,rc,out}
start_delete() {
    local d=$1
    now_ms > "$d/delete.start"
    ( timeout -k 5 120 rdma link delete rxe0 > "$d/delete.out" 2>&1; echo $? > "$d/delete.rc"; now_ms > "$d/delete.end" ) &
    DELETE_PID=$!
}
alive() { kill -0 "$1" 2>/dev/null && echo yes || echo no; }

# ---- a server/client pair on rxe0/rxe1 while rxe0 is deleted
# DIR: server.{out,err,rc,end}, client.{out,err,rc,end}, delete.*,
# alive-at-delete, blocked-after-1s (is the delete still running 1 s later?),
# devices-during (ibv_devices, a new process, during the delete), restore.*
run_pair_delete() { # DIR LD DELAY CMD... (PAIR_SERVER/PAIR_CLIENT args as in guest-lib.sh)
    local d=$1 ld=$2 delay=$3 sp cp i; shift 3
    PAIR_PORT=$((PAIR_PORT + 1))
    mkdir -p "$d"
    ( env LD_LIBRARY_PATH="$ld" stdbuf -oL timeout -k 5 120 "$@" "${PAIR_SERVER[@]}" -p "$PAIR_PORT" \
        > "$d/server.out" 2> "$d/server.err"; echo $? > "$d/server.rc"; now_ms > "$d/server.end" ) &
    sp=$!
    for ((i = 0; i < 200; i++)); do
        listening "$PAIR_PORT" && break
        kill -0 "$sp" 2>/dev/null || break
        sleep 0.1
    done
    ( env LD_LIBRARY_PATH="$ld" stdbuf -oL timeout -k 5 120 "$@" "${PAIR_CLIENT[@]}" -p "$PAIR_PORT" 127.0.0.1 \
        > "$d/client.out" 2> "$d/client.err"; echo $? > "$d/client.rc"; now_ms > "$d/client.end" ) &
    cp=$!
    # the delete starts DELAY s after the client printed the peer's address
    # (connected; its traffic starts): a fixed time after the start would
    # land anywhere from the setup to the end, the VM's speed varies that much
    for ((i = 0; i < 300; i++)); do
        grep -q 'remote address' "$d/client.out" 2>/dev/null && break
        kill -0 "$cp" 2>/dev/null || break
        sleep 0.1
    done
    sleep "$delay"
    echo "server=$(alive "$sp") client=$(alive "$cp")" > "$d/alive-at-delete"
    start_delete "$d"
    sleep 1
    [ -e "$d/delete.end" ] && echo no > "$d/blocked-after-1s" || echo yes > "$d/blocked-after-1s"
    echo "server=$(alive "$sp") client=$(alive "$cp")" > "$d/alive-after-1s"
    env LD_LIBRARY_PATH="$ld" timeout 20 ibv_devices > "$d/devices-during" 2>&1
    wait "$sp" "$cp" "$DELETE_PID"
    restore "$d" readd
}

# ---- faultprog: start, wait for READY, cause the fault, wait
run_prog() { # DIR LD MODE ENV...
    local d=$1 ld=$2 mode=$3 pp i; shift 3
    mkdir -p "$d"
    rm -f "$d/ready"
    now_ms > "$d/start"
    # glibc's malloc trace of the measured cycle (faultprog.c): DIR/mtrace
    ( env LD_LIBRARY_PATH="$ld" "$@" LD_PRELOAD="$MALLOC_DEBUG" FAULTPROG_MTRACE="$d/mtrace" \
        timeout -k 5 90 "$BIN/faultprog" "$mode" rxe0 "$G0" rxe1 "$G1" "$d/ready" \
        > "$d/out" 2> "$d/err" < /dev/null; echo $? > "$d/rc"; now_ms > "$d/end" ) &
    pp=$!
    for ((i = 0; i < 600; i++)); do
        [ -e "$d/ready" ] && break
        kill -0 "$pp" 2>/dev/null || break
        sleep 0.1
    done
    now_ms > "$d/fault"
    case "$mode" in
        delete)
            if [ -e "$d/ready" ]; then start_delete "$d"; wait "$pp" "$DELETE_PID"; else wait "$pp"; fi
            [ -d /sys/class/infiniband/rxe0 ] || restore "$d" readd ;;
        portdown)
            [ -e "$d/ready" ] && ip link set veth0 down
            wait "$pp"
            restore "$d" portup ;;
        *) wait "$pp" ;;
    esac
}

MALLOC_DEBUG=/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0
[ -e "$MALLOC_DEBUG" ] || MALLOC_DEBUG=

# ---- the tests
PAIR_SERVER=(-d rxe0 -g "$G0")
PAIR_CLIENT=(-d rxe1 -g "$G1")
PERF_SERVER=(-d rxe0 -x "$G0" -F)
PERF_CLIENT=(-d rxe1 -x "$G1" -F)
while IFS='|' read -r id kind args; do
    [ -n "$id" ] || continue
    case "$id" in \#*) continue ;; esac
    for side in upstream ours; do
        echo "fault-guest: $id $side" >&2
        ld=$UPSTREAM_LD; [ "$side" = ours ] && ld=$OUR_LD
        d=$R/$id/$side
        # shellcheck disable=SC2086
        case "$kind" in
            pingpong-delete)
                PAIR_SERVER=(-d rxe0 -g "$G0") PAIR_CLIENT=(-d rxe1 -g "$G1")
                run_pair_delete "$d" "$ld" 0.3 $args ;;
            perftest-delete)
                PAIR_SERVER=("${PERF_SERVER[@]}") PAIR_CLIENT=("${PERF_CLIENT[@]}")
                run_pair_delete "$d" "$ld" 1 $args ;;
            prog) run_prog "$d" "$ld" $args ;;
            reuse)
                mkdir -p "$d"
                env LD_LIBRARY_PATH="$ld" timeout 30 ibv_devinfo -d rxe0 > "$d/devinfo.out" 2> "$d/devinfo.err"
                echo $? > "$d/devinfo.rc"
                PAIR_SERVER=(-d rxe0 -g "$G0") PAIR_CLIENT=(-d rxe1 -g "$G1")
                run_pair "$d" "$ld" 60 $args ;;
        esac
    done
done < "$HERE/tests.txt"
dmesg | grep -E 'BUG|WARNING|Oops|general protection|hung_task|blocked for more than|refcount_t|use-after-free' \
    > "$R/kernel-problems"
dmesg > "$R/dmesg"
echo done > "$R/complete"
