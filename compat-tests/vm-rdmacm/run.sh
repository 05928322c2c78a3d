#!/bin/bash
# compat-tests/vm-rdmacm: command for command, ours against the kernel's
# rdma_cm.  The same workloads (workloads.sh: rping, ucmatose, udaddy,
# rdma_server/rdma_client, rdma_xserver/rdma_xclient, rstream
# (rsockets), misuse.c (calls in the wrong state or with bad arguments), a
# connect to a port nobody listens on) run
#   * in the VM on the kernel's rdma_cm over rxe (Debian's 6.1 kernel,
#     rdma_ucm; Debian's libibverbs and librdmacm), every ucma command,
#     answer and event recorded by libswrdma-ucma.so in pass-through mode
#     (SWRDMA_UCMA_KERNEL=1: it only records what the real device answers);
#   * on the host on ours (swr0 through swrdma-cm), recorded the same way;
# and each process's log is compared line by line after normalize.py
# (handles, pointers, QPNs, PSNs, ports, service IDs, GUIDs, flow labels
# numbered in order of appearance; addresses and IP GIDs as ADDR / GID).
# What differs by the device and not by the CM is listed, each with its
# reason, in expected-differences.txt as a pattern masked on both sides; a
# listed pattern that masks nothing any more is a FAIL (the list cannot go
# stale).  One PASS/FAIL line per workload and role.
# Then ours beside the kernel's, in the VM: the same workloads on rxe's
# address through the interposer in its normal mode (our libibverbs, swr0
# listed beside rxe0/rxe1): each id must reach the kernel's rdma_cm and the
# log must be the kernel's (hybrid-differences.txt: none listed); and
# mixed.c, one channel with a connection on swr0 and one on rxe at once.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin vm-rdmacm --clean
OUT=$SCRATCH
HERE=$ROOT/compat-tests/vm-rdmacm
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
need "$ROOT/build/bin/swrdma-cm=run: make swrdma" "$LIBDIR/libswrdma-ucma.so=run: make swrdma" \
    rping=rdmacm-utils ucmatose=rdmacm-utils udaddy=rdmacm-utils rdma_server=rdmacm-utils python3

# the misuse workload, built against Debian's librdmacm
if gcc -O1 -Wall -o "$OUT/misuse" "$HERE/misuse.c" -lrdmacm -lpthread 2>"$OUT/misuse.build"; then
    export MISUSE=$OUT/misuse
else
    fail "misuse.c builds" "$(head -n3 "$OUT/misuse.build" | tr '\n' ' ')"
fi
MIXED=
if gcc -O1 -Wall -o "$OUT/mixed" "$HERE/mixed.c" -lrdmacm -libverbs 2>"$OUT/mixed.build"; then
    MIXED=$OUT/mixed
else
    fail "mixed.c builds" "$(head -n3 "$OUT/mixed.build" | tr '\n' ' ')"
fi

# rsecho (soft-rdmacm's plain TCP echo) for librspreload.so on the wire
# part, built against Debian's librdmacm headers
if gcc -O2 -Wall -o "$OUT/rsecho" "$ROOT/compat-tests/soft-rdmacm/rsecho.c" 2>"$OUT/rsecho.build"; then
    RSECHO=$OUT/rsecho
else
    fail "rsecho.c builds" "$(head -n3 "$OUT/rsecho.build" | tr '\n' ' ')"
fi

# ---- ours: swr0 on the host
export XDG_RUNTIME_DIR=$OUT/rt
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
LD_LIBRARY_PATH=$LIBDIR RDMAV_SOFT_DEVICES=swr0 SWRDMA_UCMA_LIB=$LIBDIR/libswrdma-ucma.so \
    bash "$HERE/workloads.sh" "$OUT/ours" 127.0.0.1 "$ROOT/build/bin/swrdma-cm"

# ---- the kernel's: rxe in the VM
export VM_RUN_DIR=$OUT/vm
cache=$(mkdir -p "${VM_CACHE:-build/vm-cache}" && cd "${VM_CACHE:-build/vm-cache}" && pwd)
{ printf 'GUEST_VM_CACHE=%q\nGUEST_MISUSE=%q\nGUEST_MIXED=%q\nGUEST_RSECHO=%q\n' "$cache" "${MISUSE:-}" "$MIXED" \
    "${RSECHO:-}"; cat "$HERE/guest.sh"; } >"$OUT/guest-run.sh"
# (the wire part, rw0 against rxe, takes a few minutes more under TCG)
VM_TIMEOUT=${VM_TIMEOUT:-700} bash "$ROOT/compat-tests/vm/vm-run.sh" "$OUT/guest-run.sh" >"$OUT/vm.out" 2>&1
vrc=$?
if [ $vrc -ne 0 ] || [ ! -d "$VM_RUN_DIR/kernel" ]; then
    fail_early vm "the VM run failed (exit $vrc): $(tail -n3 "$OUT/vm.out" | tr '\n' ' ')"
fi

# ---- compare
python3 "$HERE/compare.py" "$VM_RUN_DIR/kernel" "$OUT/ours" "$HERE/expected-differences.txt" "$OUT/diff" \
    >"$OUT/compare.out"
cat "$OUT/compare.out"
# misuse: every call's result as the program saw it (librdmacm over each)
if [ -n "${MISUSE:-}" ]; then
    if [ -s "$OUT/ours/misuse.client.out" ] && cmp -s "$VM_RUN_DIR/kernel/misuse.client.out" "$OUT/ours/misuse.client.out"; then
        pass "misuse: $(wc -l <"$OUT/ours/misuse.client.out") calls, each the same return value and errno as on the kernel"
    else
        fail "misuse: each call's return value and errno" "$(diff "$VM_RUN_DIR/kernel/misuse.client.out" "$OUT/ours/misuse.client.out" | head -n4 | tr '\n' ' ')"
    fi
fi
# ours beside the kernel's: the same workloads on rxe's address, through
# our interposer in its normal mode: the kernel's log, line for line
python3 "$HERE/compare.py" "$VM_RUN_DIR/kernel" "$VM_RUN_DIR/hybrid" "$HERE/hybrid-differences.txt" "$OUT/diff-hybrid" \
    "beside the kernel (ids on rxe through our interposer):" >>"$OUT/compare.out"
if [ -n "$MIXED" ]; then
    mo=$VM_RUN_DIR/mixed.out
    if [ "$(cat "$VM_RUN_DIR/mixed.rc" 2>/dev/null)" = 0 ] && grep -q '^127.0.0.1: on device swr0$' "$mo" \
        && grep -q '^192.0.2.1: on device rxe[01]$' "$mo" && [ "$(grep -c 'message exchanged' "$mo")" = 2 ] \
        && grep -q '^both connections done$' "$mo"; then
        pass "beside the kernel: one channel, two connections: 127.0.0.1 on swr0 (ours), 192.0.2.1 on rxe (the kernel's rdma_cm), a message each way on both"
    else
        fail "beside the kernel: one channel, two connections (swr0 and rxe)" "exit $(cat "$VM_RUN_DIR/mixed.rc" 2>/dev/null): $(tr '\n' ' ' <"$mo" | cut -c1-300)"
    fi
fi
# ours on the wire device against the kernel's rdma_cm over rxe (wire-guest.sh)
W=$VM_RUN_DIR/wire
if [ ! -d "$W" ]; then
    fail "rw0 <-> rxe" "the VM's wire part did not run: $(tail -n3 "$OUT/vm.out" | tr '\n' ' ')"
elif [ -n "$(tr -d ' \n' <"$W/netfail")" ]; then
    fail "rw0 <-> rxe: the namespace set-up" "$(cat "$W/netfail")"
else
    for dir in ours-passive ours-active; do
        case $dir in
            ours-passive) how="ours passive (rw0 server in netns far, the kernel's client on rxe0)" ;;
            *) how="ours active (the kernel's server on rxe0, rw0 client in netns far)" ;;
        esac
        d=$W/$dir
        for t in rping ucmatose udaddy mckey rdma_server rdma_xserver rstream riostream cmtime ib_send_lat ib_write_lat \
            ib_read_lat ib_send_bw ib_write_bw ib_read_bw qperf fio-write fio-read rsecho; do
            c=$d/$t.client.out s=$d/$t.server.out
            crc=$(cat "$d/$t.client.rc" 2>/dev/null) src=$(cat "$d/$t.server.rc" 2>/dev/null)
            case $t in
                rping) ok=$([ "$(grep -c '^ping data: rdma-ping-' "$c")" = 100 ] &&
                    [ "$(grep -c '^server ping data: rdma-ping-' "$s")" = 100 ] && echo y) ;;
                mckey) ok=$(grep -q '^return status 0' "$c" && grep -q '^return status 0' "$s" &&
                    grep -q '^data transfers complete' "$s" && echo y) ;;
                ucmatose | udaddy) ok=$(grep -q '^return status 0' "$c" && grep -q '^return status 0' "$s" &&
                    grep -q '^data transfers complete' "$c" && echo y) ;;
                rdma_server) ok=$(grep -q 'rdma_server: end 0' "$s" && grep -q 'rdma_client: end 0' "$c" && echo y) ;;
                rdma_xserver) ok=$(grep -q 'rdma_xserver: end 0' "$s" && grep -q 'rdma_xclient: end 0' "$c" && echo y) ;;
                rstream | riostream) ok=$(grep -qE '^custom ' "$c" && grep -qE '^custom ' "$s" && echo y) ;;
                # (servers that go on listening: ended by wpair)
                cmtime) ok=$([ "$(grep -cE '^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy) *: +[0-9.]+' "$c")" = 7 ] &&
                    ! grep -qiE 'error|failure|failing|event: ' "$c" && echo y) src=0 ;;
                qperf) ok=$([ "$(grep -cE '^(rc_bw|rc_lat):' "$c")" = 2 ] && ! grep -qi 'failed\|error' "$c" && echo y) src=0 ;;
                fio-*) ok=$(grep -q 'err= 0' "$c" && grep -q 'err= 0' "$s" && grep -qE 'WRITE: .*io=4096KiB' "$c" && echo y) ;;
                rsecho) ok=$(grep -q 'checked and echoed on an rsocket' "$s" &&
                    grep -q 'echoed back and checked on an rsocket' "$c" && echo y) ;;
                # (the 200 iterations done, the connection by rdma_cm; the
                # figures may read "inf" when perftest's own estimate of
                # the CPU clock came out 0 in the VM under TCG: seen once,
                # from Debian's perftest on the rxe side, the exchange
                # complete and the other side's figures finite)
                ib_*) ok=$(grep -qE '^ *[0-9]+ +200 +([0-9.]+|inf) ' "$c" && grep -q 'Data ex. method : rdma_cm' "$c" && echo y) ;;
            esac
            if [ "$crc" = 0 ] && [ "$src" = 0 ] && [ "$ok" = y ]; then
                pass "rw0 <-> rxe, $how: $t"
            else
                # the first error line, else the last lines of both
                # outputs (what a run that ended well but printed no
                # result did print)
                why=$(grep -h -m1 -iE 'error|fail|unable|reject|timed? ?out' "$c" "$s" | head -n1 | cut -c1-200)
                [ -n "$why" ] || why="client: $(tail -n2 "$c" 2>/dev/null | tr -s ' \n' ' ' | cut -c1-200) | server: $(tail -n2 "$s" 2>/dev/null | tr -s ' \n' ' ' | cut -c1-200)"
                # (and the CM's MADs as captured: which side ended it)
                why="$why; MADs: $(python3 "$HERE/mads.py" --sequence "$d/$t.mads" 192.0.2.2 2>&1 | cut -c1-300)"
                fail "rw0 <-> rxe, $how: $t" "server rc=$src client rc=$crc: $why"
            fi
        done
        c=$d/nolistener.client.out
        if grep -q 'RDMA_CM_EVENT_REJECTED, error 8' "$c"; then
            pass "rw0 <-> rxe, $how: a connect to a port nobody listens on (another one listened on): REJECTED, status 8"
        else
            fail "rw0 <-> rxe, $how: no listener" "rc=$(cat "$d/nolistener.client.rc"): $(head -n2 "$c" | tr '\n' ' ')"
        fi
        # command for command: each side's ucma log against the kernel's
        # own run of the same workloads (rxe0 <-> rxe1)
        if [ -d "$W/log/$dir" ]; then
            COMPARE_SKIP=misuse python3 "$HERE/compare.py" "$VM_RUN_DIR/kernel" "$W/log/$dir" "$HERE/wire-differences.txt" \
                "$OUT/diff-wire-$dir" "rw0 <-> rxe, $how, the ucma's log against the kernel's:" >>"$OUT/compare.out"
        else
            fail "rw0 <-> rxe, $how: the ucma logs" "the workloads did not run ($W/log/$dir missing)"
        fi
    done
    # the CM MADs ours sent against the kernel's, field by field
    if python3 "$HERE/mads.py" "$W" 192.0.2.2 192.0.2.1 rping ucmatose udaddy mckey rdma_server rdma_xserver \
        rstream nolistener >"$OUT/mads.out" 2>&1; then
        grep -E '^(PASS|FAIL) ' "$OUT/mads.out" >>"$OUT/compare.out"
    else
        echo "FAIL CM MADs field by field: mads.py failed: $(tail -n1 "$OUT/mads.out")" >>"$OUT/compare.out"
    fi
fi
while read -r verdict rest; do
    case $verdict in
        PASS) pass "$rest" ;;
        FAIL) fail "${rest%%: *}" "${rest#*: }" ;;
    esac
done < <(grep -E '^(PASS|FAIL) ' "$OUT/compare.out")
finish
