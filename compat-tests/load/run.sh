#!/bin/bash
# compat-tests/load: the library and the software device under load
# (issue 10, item 5).  load.c (built here against Debian's headers, linked
# -libverbs by soname; LD_LIBRARY_PATH picks the library) has two modes:
#
#   threads  16 threads of one process loop for LOAD_SECONDS over
#            get/free device list, open/close, alloc/dealloc PD, reg/dereg MR
#            (4 KiB .. 512 KiB), create/destroy CQ, create/destroy RC QP
#            (one per context connected to itself: INIT/RTR/RTS + one RDMA
#            write, data checked).  Samples at quiescent points (every
#            worker parked with nothing open): descriptors, VmRSS, VmData,
#            VmSize, RssShmem, threads, /proc/meminfo Shmem; the value at the
#            end must be within the tolerance of the value after the warm-up
#            (see load.c), and no call may fail.
#   pairs    LOAD_PAIRS (64) connected RC process pairs at once, each
#            LOAD_MESSAGES (1000) sends + 16 RDMA writes of 4 KiB, data
#            checked; all alive at once (the peak), then all exit.
#
# Checks:
#   threads/swr0        on the software device (ours; this machine)
#   pairs/swr0          every side succeeded; the peak cost per pair is printed
#   pairs/swr0 after    Shmem within 16 MiB and MemAvailable within 256 MiB of
#                       the baseline (system-wide figures: other processes move
#                       them too), and the device's private directory
#                       ($XDG_RUNTIME_DIR/ibverbs-soft-<uid>/: sockets, QPN
#                       links) as it was before, within 10 s of the exit
#   threads/rxe0 upstream  Debian's library on Soft-RoCE in the project's VM
#                       (the reference: it must pass, else the harness or the VM
#                       is at fault)
#   threads/rxe0 ours   ours in the same boot: flat, and no error, or only
#                       errors (call, errno) that upstream's run returned too
#
#   run.sh [--parts "host vm"]     both by default
# Environment: OUR_LIB, UPSTREAM_LIB, UPSTREAM_INCLUDE (CONVENTIONS.md);
# LOAD_SECONDS (60), LOAD_WARMUP (LOAD_SECONDS/6, at least 2), LOAD_THREADS
# (16), LOAD_PAIRS (64), LOAD_MESSAGES (1000); VM_CACHE, VM_TIMEOUT as for the
# VM suites.  Run the host part under `flock /tmp/suites.lock`, the VM part
# under `flock /tmp/vm.lock` when others share the machine.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin load
parts="host vm"
while [ $# -gt 0 ]; do
    case "$1" in
        --parts) parts=$2; shift ;;
        *) echo "usage: run.sh [--parts 'host vm']" >&2; exit 2 ;;
    esac
    shift
done
LOAD_SECONDS=${LOAD_SECONDS:-60}
LOAD_WARMUP=${LOAD_WARMUP:-$(awk -v s="$LOAD_SECONDS" 'BEGIN { w = s / 6; if (w < 2) w = 2; if (w >= s) w = s / 2; printf "%g\n", int(w * 10 + 0.5) / 10 }')}
LOAD_THREADS=${LOAD_THREADS:-16}
LOAD_PAIRS=${LOAD_PAIRS:-64}
LOAD_MESSAGES=${LOAD_MESSAGES:-1000}
T0=$(date +%s)

need cc=gcc "$UPSTREAM_LIB=libibverbs1" "$UPSTREAM_INCLUDE/infiniband/verbs.h=libibverbs-dev" timeout=coreutils awk
LIBDIR=$(cd "$(dirname "$OUR_LIB")" 2>/dev/null && pwd) || fail_early library "missing $OUR_LIB (run: make)"
[ -e "$LIBDIR/libibverbs.so.1" ] || fail_early library "missing $LIBDIR/libibverbs.so.1 (run: make)"

BIN=$SCRATCH/bin
mkdir -p "$BIN"
cc -O2 -Wall -Wextra -Werror -pthread -I"$UPSTREAM_INCLUDE" -o "$BIN/load" compat-tests/load/load.c \
    -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 > "$SCRATCH/build.log" 2>&1 ||
    fail_early build "load.c does not build: $(head -5 "$SCRATCH/build.log")"

detail() { sed 's/^/    /'; }

# the figures of a threads run: ops, errors, the sample series, flatness
threads_figures() { # OUTFILE
    awk '
        /^elapsed / { print "elapsed " $2 " s" }
        /^ops / { ops = ops sprintf(" %s=%s", $2, $3) }
        /^errors / { errs = errs sprintf(" %s:%s=%s", $2, $3, $4) }
        /^error-example / { print }
        /^sample / { print }
        /^flat / { print }
        END { if (ops != "") print "ops:" ops; if (errs != "") print "errors:" errs }
    ' "$1" | detail
}

# ---------------------------------------------------------------- host part
if [[ " $parts " == *" host "* ]]; then
    PROV="$LIBDIR/libibverbs/libswrdma-rdmav34.so"
    if ! [ -e "$PROV" ]; then
        fail threads/swr0 "missing $PROV (run: make swrdma)"
        fail pairs/swr0 "missing $PROV (run: make swrdma)"
    else
        # a private runtime directory: the suite never meets other users' devices
        RT=$SCRATCH/rt
        rm -rf "$RT"
        mkdir -p -m 0700 "$RT"
        export XDG_RUNTIME_DIR=$RT RDMAV_SOFT_DEVICES=swr0 LD_LIBRARY_PATH=$LIBDIR
        unset RDMAV_DRIVERS IBV_DRIVERS
        SOFTDIR=$RT/ibverbs-soft-$(id -u)

        # --- threads on swr0
        out=$SCRATCH/threads-swr0
        timeout -k 5 "$(awk -v s="$LOAD_SECONDS" 'BEGIN { print int(s) + 120 }')" \
            "$BIN/load" threads swr0 1 "$LOAD_SECONDS" "$LOAD_WARMUP" "$LOAD_THREADS" > "$out.out" 2> "$out.err"
        rc=$?
        verdict=$(sed -n 's/^threads-verdict //p' "$out.out")
        if [ $rc -eq 0 ] && [ "$verdict" = ok ]; then
            pass "threads/swr0 ($LOAD_THREADS threads, $LOAD_SECONDS s, warm-up $LOAD_WARMUP s)"
        else
            fail "threads/swr0 ($LOAD_THREADS threads, $LOAD_SECONDS s, warm-up $LOAD_WARMUP s)" \
                "exit status $rc, ${verdict:-no verdict}$( [ -s "$out.err" ] && echo "; stderr: $(tail -n 2 "$out.err" | tr '\n' ' ')")"
        fi
        threads_figures "$out.out"

        # --- pairs on swr0
        listing() { (cd "$SOFTDIR" 2>/dev/null && find . -mindepth 1 -maxdepth 1 ! -name ids ! -name 'swr*' | sort); }
        meminfo() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }
        before=$(listing)
        shmem0=$(meminfo Shmem) avail0=$(meminfo MemAvailable)
        out=$SCRATCH/pairs-swr0
        timeout -k 5 600 "$BIN/load" pairs swr0 1 "$LOAD_PAIRS" "$LOAD_MESSAGES" > "$out.out" 2> "$out.err"
        rc=$?
        name="pairs/swr0 ($LOAD_PAIRS pairs, $LOAD_MESSAGES messages + 16 RDMA writes each)"
        res=$(sed -n 's/^pairs-result //p' "$out.out")
        if [ $rc -eq 0 ] && [ "$res" = "ok=$((2 * LOAD_PAIRS)) failed=0${res#*failed=0}" ]; then
            pass "$name"
        else
            fail "$name" "exit status $rc, ${res:-no result}$(grep -m3 '^pair-failure' "$out.out" | sed 's/^pair-failure /; /' | tr -d '\n')"
        fi
        awk -v n="$LOAD_PAIRS" '
            function kv(k,   i, a) { for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == k) return a[2] } }
            /^pairs-baseline / { b_av = kv("memavail_kb"); b_sh = kv("shmem_kb") }
            /^pairs-peak / {
                p_av = kv("memavail_kb"); p_sh = kv("shmem_kb"); rss = kv("children_rss_kb"); rsh = kv("children_rssshmem_kb")
                printf "peak (all %s processes alive, after the traffic, %s s in): Shmem +%d MiB, MemAvailable -%d MiB\n", \
                    kv("ready"), kv("seconds"), (p_sh - b_sh) / 1024, (b_av - p_av) / 1024
                if (n > 0) printf "per pair: Shmem %.1f MiB, MemAvailable %.1f MiB, RSS of both sides %.1f MiB (of it shared memory %.1f MiB, mapped by both sides)\n", \
                    (p_sh - b_sh) / 1024 / n, (b_av - p_av) / 1024 / n, rss / 1024 / n, rsh / 1024 / n
            }
            /^pairs-result / { print "result: " substr($0, 14) }
            /^pair-failure / { print }
        ' "$out.out" | detail

        # --- back to baseline after the exit (10 s at most)
        name="pairs/swr0 after: memory and $SOFTDIR back to baseline"
        for _ in $(seq 1 20); do
            after=$(listing)
            shmem1=$(meminfo Shmem) avail1=$(meminfo MemAvailable)
            [ "$after" = "$before" ] && [ $((shmem1 - shmem0)) -le 16384 ] && [ $((avail0 - avail1)) -le 262144 ] && break
            sleep 0.5
        done
        why=
        [ "$after" = "$before" ] || why="$why left in the directory: $(echo "$after" | head -8 | tr '\n' ' ')($(echo "$after" | grep -c .) entries);"
        [ $((shmem1 - shmem0)) -le 16384 ] || why="$why Shmem +$(((shmem1 - shmem0) / 1024)) MiB;"
        [ $((avail0 - avail1)) -le 262144 ] || why="$why MemAvailable -$(((avail0 - avail1) / 1024)) MiB;"
        if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
        echo "Shmem ${shmem0} -> ${shmem1} kB (tolerance 16 MiB), MemAvailable ${avail0} -> ${avail1} kB (tolerance 256 MiB), directory entries $(echo "$before" | grep -c .) -> $(echo "$after" | grep -c .)" | detail
        unset XDG_RUNTIME_DIR RDMAV_SOFT_DEVICES LD_LIBRARY_PATH
    fi
fi

# ------------------------------------------------------------------ VM part
# error kinds of a threads run: "call errno" per line
error_kinds() { awk '/^errors / { print $2, $3 }' "$1" 2>/dev/null | sort -u; }

if [[ " $parts " == *" vm "* ]]; then
    # the library's directory, for the guest (vm/lib.sh's VM_PATHS)
    export VM_PATHS=${VM_PATHS:+$VM_PATHS:}$LIBDIR
    if [ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ]; then
        UPSTREAM_LD=$(cd "$(dirname "$UPSTREAM_LIB")" && pwd -P)
        case "$UPSTREAM_LD" in /usr/lib/x86_64-linux-gnu|/lib/x86_64-linux-gnu) UPSTREAM_LD= ;; esac
        script=$SCRATCH/guest-script.sh
        {
            echo "export UPSTREAM_LD=$(printf %q "$UPSTREAM_LD") OUR_LD=$(printf %q "$LIBDIR")"
            echo "export BIN=$(printf %q "$BIN") LOAD_SECONDS=$LOAD_SECONDS LOAD_WARMUP=$LOAD_WARMUP LOAD_THREADS=$LOAD_THREADS"
            echo "exec bash $(printf %q "$ROOT/compat-tests/load/load-guest.sh")"
        } > "$script"
        RUN=$SCRATCH/vmrun
        rm -rf "$RUN"
        t0=$(date +%s)
        VM_RUN_DIR=$RUN VM_TIMEOUT=${VM_TIMEOUT:-$(awk -v s="$LOAD_SECONDS" 'BEGIN { print 2 * int(s) + 360 }')} \
            bash compat-tests/vm/vm-run.sh "$script" > "$SCRATCH/guest.out" 2> "$SCRATCH/guest.err"
        vrc=$?
        vsecs=$(($(date +%s) - t0))
        res=$RUN/results
        vmwhy=
        [ $vrc -eq 0 ] || vmwhy="the VM run failed (exit status $vrc): $(grep -v '^load-guest:' "$SCRATCH/guest.err" | tail -n 3 | tr '\n' ' ')"
        for lib in upstream ours; do
            d=$res/threads-$lib
            name="threads/rxe0 $lib ($LOAD_THREADS threads, $LOAD_SECONDS s, warm-up $LOAD_WARMUP s)"
            [ $lib = upstream ] && name="$name, the reference"
            if ! [ -e "$d/rc" ]; then
                fail "$name" "no result; ${vmwhy:-the VM run ended before this run finished}"
                continue
            fi
            rc=$(cat "$d/rc")
            verdict=$(sed -n 's/^threads-verdict //p' "$d/out")
            flatbad=$(grep -c '^flat .* GROWN$' "$d/out")
            if [ "$rc" = 0 ] && [ "$verdict" = ok ]; then
                pass "$name"
            elif [ $lib = ours ] && [ "$flatbad" = 0 ] && [ -n "$verdict" ] &&
                [ -z "$(comm -23 <(error_kinds "$d/out") <(error_kinds "$res/threads-upstream/out"))" ] &&
                ! grep -q 'a hang' "$d/out"; then
                pass "$name (errors, all of them of kinds upstream returned too: $(error_kinds "$d/out" | tr '\n' ' '))"
            else
                extra=
                [ $lib = ours ] && extra="; error kinds upstream did not return: $(comm -23 <(error_kinds "$d/out") <(error_kinds "$res/threads-upstream/out") | tr '\n' ' ')"
                [ $lib = upstream ] && extra=" (upstream is the reference: a harness or VM problem?)"
                fail "$name" "exit status $rc, ${verdict:-no verdict}$extra$( [ -s "$d/err" ] && echo "; stderr: $(tail -n 2 "$d/err" | tr '\n' ' ')")"
            fi
            threads_figures "$d/out"
        done
        echo "(VM run: ${vsecs} s, exit status $vrc; $(grep -E '^(kernel|gid_rxe0|nproc)=' "$res/info" 2>/dev/null | tr '\n' ' ')raw outputs: $res)" | detail
    else
        skip "threads/rxe0" "rxe provider missing (ibverbs-providers; make deps)"
    fi
fi

echo "(load: $(($(date +%s) - T0)) s in all)"
finish
