#!/bin/bash
# compat-tests/compat10: the IBVERBS_1.0 compat ABI (ibv_open_device@IBVERBS_1.0
# and the other 32 names with a 1.0 version, the old object layouts, the 1.0
# op table's data-path wrappers, event translation).
#
# compat10.c is linked so that the dynamic linker binds the 1.0 versions
# (.symver references), like a binary built against libibverbs 1.0.  It is
# run on Debian's library and on ours:
#
#   nodev       on this host, without devices: device list, event
#               acknowledgement and event reads through the 1.0 wrappers.
#               Both libraries must pass every check and print the same INFO.
#   swr0        on this host, ours only: the software device
#               (RDMAV_SOFT_DEVICES=swr0, provider in $(dirname OUR_LIB)/libibverbs/).
#               open, query, PD, MR, CQs + channel, SRQ, RC QPs RESET->RTS,
#               loopback send/recv through the 1.0 op table (bad_wr mapping,
#               completion and SRQ-limit events on the 1.0 objects), UD through
#               a 1.0 address handle, teardown.
#   vm          the same nodev + device program on rxe0 in the Soft-RoCE VM
#               (compat-tests/vm), Debian's library and ours; ours must pass
#               what upstream passes and print the same INFO.
#               COMPAT10_VM=0 leaves it out.
#
# Follows compat-tests/CONVENTIONS.md.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin compat10
here=$ROOT/compat-tests/compat10
out=$SCRATCH
OUR_LIB=$(abspath "$OUR_LIB")
UPSTREAM_LIB=$(abspath "$UPSTREAM_LIB")

# --- setup -------------------------------------------------------------------
need "$UPSTREAM_LIB=install libibverbs1" "$UPSTREAM_INCLUDE/infiniband/verbs.h=install libibverbs-dev" \
    "$OUR_LIB=run make" cc readelf=binutils

# Each library is found through LD_LIBRARY_PATH under its soname.  Ours is
# used from its own directory (the software provider sits beside it).
up_dir=$out/upstream-lib
mkdir -p "$up_dir" && ln -sfn "$UPSTREAM_LIB" "$up_dir/libibverbs.so.1"
our_dir=$(dirname "$OUR_LIB")
if [ "$(readlink -f "$our_dir/libibverbs.so.1")" != "$(readlink -f "$OUR_LIB")" ]; then
    fail_early setup "$our_dir/libibverbs.so.1 is not $OUR_LIB"
fi

bin=$out/compat10
if ! cc -std=gnu11 -O1 -g -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
        -I"$UPSTREAM_INCLUDE" -o "$bin" "$here/compat10.c" "$up_dir/libibverbs.so.1" -ldl \
        >"$out/cc.log" 2>&1; then
    cat "$out/cc.log"; fail_early setup "compiling compat10.c failed"
fi
# The references must carry the 1.0 version.
n10=$(readelf --dyn-syms -W "$bin" | grep -c '@IBVERBS_1\.0\b' || true)
if [ "$n10" -ge 33 ]; then pass "binary references the IBVERBS_1.0 versions ($n10 symbols)"
else fail "binary references the IBVERBS_1.0 versions" "only $n10 @IBVERBS_1.0 references"; fi

# run_prog <logfile> <libdir> <args...> (extra environment from the caller)
run_prog() {
    local log=$1 dir=$2; shift 2
    LD_LIBRARY_PATH=$dir timeout -k 5 150 "$bin" "$@" >"$log" 2>"$log.err"
    echo $? >"$log.rc"
}

# lib_ok <logfile> <expected library>: the program ran on that library.
lib_ok() {
    local got; got=$(sed -n 's/^LIB //p' "$1" | head -n1)
    [ -n "$got" ] && [ "$(readlink -f "$got")" = "$(readlink -f "$2")" ]
}

# report <prefix> <ours log> [<upstream log>]: one line per CHECK of ours
# (and of upstream's, which must pass too); INFO lines compared.
report() {
    local prefix=$1 ours=$2 up=${3:-} name res line
    while IFS= read -r line; do
        name=${line#CHECK }
        case $name in
            *" ok") pass "$prefix: ${name% ok}" ;;
            *" bad: "*) fail "$prefix: ${name%% bad: *}" "${name#* bad: }" ;;
        esac
    done < <(grep '^CHECK ' "$ours")
    if [ -n "$up" ]; then
        # Checks upstream reached that ours never printed (ours stopped early).
        local missing
        missing=$(comm -23 <(grep '^CHECK ' "$up" | sed 's/ ok$//; s/ bad: .*//' | sort -u) \
                          <(grep '^CHECK ' "$ours" | sed 's/ ok$//; s/ bad: .*//' | sort -u) | sed 's/^CHECK //')
        if [ -n "$missing" ]; then
            fail "$prefix: $(echo "$missing" | wc -l) checks not reached by ours" \
                "$(echo "$missing" | head -n 3 | tr '\n' ';') ... (see $ours)"
        fi
        if grep -q '^CHECK .* bad: ' "$up"; then
            fail "$prefix: upstream passes its own checks" "$(grep '^CHECK .* bad: ' "$up" | head -n 3 | tr '\n' ';')"
        fi
        if diff <(grep '^INFO ' "$up") <(grep '^INFO ' "$ours") >"$ours.infodiff"; then
            pass "$prefix: same INFO output as upstream ($(grep -c '^INFO ' "$ours") lines)"
        else
            fail "$prefix: same INFO output as upstream" "$(grep '^[<>]' "$ours.infodiff" | head -n 4 | tr '\n' ';')"
        fi
    fi
}

# --- 1. this host, no device: upstream and ours ---------------------------------
(
    unset RDMAV_SOFT_DEVICES
    run_prog "$out/nodev.upstream" "$up_dir" nodev
    run_prog "$out/nodev.ours" "$our_dir" nodev
)
if ! lib_ok "$out/nodev.upstream" "$UPSTREAM_LIB" || ! lib_ok "$out/nodev.ours" "$OUR_LIB"; then
    fail "nodev: libraries under test" "upstream ran on '$(sed -n 's/^LIB //p' "$out/nodev.upstream")', ours on '$(sed -n 's/^LIB //p' "$out/nodev.ours")'"
fi
report nodev "$out/nodev.ours" "$out/nodev.upstream"
for l in upstream ours; do
    rc=$(cat "$out/nodev.$l.rc")
    [ "$rc" = 0 ] || fail "nodev: $l exit status" "$rc ($(tail -n 2 "$out/nodev.$l.err" | tr '\n' ' '))"
done

# --- 2. this host, the software device (ours) -------------------------------------
prov=$our_dir/libibverbs/libswrdma-rdmav34.so
if [ ! -e "$prov" ]; then
    skip swr0 "no software device: $prov not built (make swrdma)"
else
    rt=$out/rt
    rm -rf "$rt"; mkdir -p -m 0700 "$rt"
    (
        export XDG_RUNTIME_DIR=$rt RDMAV_SOFT_DEVICES=swr0
        unset RDMAV_DRIVERS IBV_DRIVERS
        run_prog "$out/swr0.ours" "$our_dir" device swr0
    )
    rc=$(cat "$out/swr0.ours.rc")
    if [ "$rc" = 77 ]; then
        fail "swr0: device listed" "$(grep '^SKIP' "$out/swr0.ours" | head -n1)"
    else
        lib_ok "$out/swr0.ours" "$OUR_LIB" || fail "swr0: library under test" "ran on '$(sed -n 's/^LIB //p' "$out/swr0.ours")'"
        report swr0 "$out/swr0.ours"
        d=$(sed -n 's/^DIFF query_qp_1_0-without-srq //p' "$out/swr0.ours")
        if [ "$d" = ok ]; then pass "swr0: query_qp_1_0 on a QP without SRQ"
        elif [ -n "$d" ]; then fail "swr0: query_qp_1_0 on a QP without SRQ" "$d"; fi
        [ "$rc" = 0 ] || fail "swr0: exit status" "$rc ($(tail -n 2 "$out/swr0.ours.err" | tr '\n' ' '))"
    fi
fi

# --- 3. the Soft-RoCE VM: rxe0, upstream and ours -------------------------------------
if [ "${COMPAT10_VM:-1}" = 0 ]; then
    skip vm "COMPAT10_VM=0"
elif [ ! -f compat-tests/vm/vm-run.sh ]; then
    skip vm "compat-tests/vm/vm-run.sh missing"
else
    guest=$out/guest.sh
    cat >"$guest" <<EOF
# generated by compat-tests/compat10/run.sh
for lib in upstream ours; do
    case \$lib in upstream) dir='$up_dir' ;; ours) dir='$our_dir' ;; esac
    for mode in nodev device; do
        echo "=== \$lib \$mode"
        if [ \$mode = nodev ]; then args=nodev; else args="device rxe0"; fi
        LD_LIBRARY_PATH=\$dir timeout -k 5 100 '$bin' \$args 2>&1
        echo "=== rc \$?"
    done
done
EOF
    VM_TIMEOUT=${COMPAT10_VM_TIMEOUT:-400} bash compat-tests/vm/vm-run.sh "$guest" >"$out/vm.log" 2>"$out/vm.err"
    vrc=$?
    if [ "$vrc" = 125 ]; then
        skip vm "the VM could not be started: $(grep -m1 -i 'error' "$out/vm.err" || tail -n1 "$out/vm.err")"
    elif [ "$vrc" = 124 ]; then
        fail vm "hard timeout (see $out/vm.err)"
    else
        # Split the guest's output into one file per (library, mode).
        awk -v o="$out/vm" '
            /^=== rc / { if (f) { print "RC " $3 > f; close(f) } f = ""; next }
            /^=== /    { f = o "." $2 "." $3; printf "" > f; next }
            f          { print > f }' "$out/vm.log"
        for m in nodev device; do
            for l in upstream ours; do
                [ -f "$out/vm.$l.$m" ] || { fail "vm $m: $l ran" "no output (see $out/vm.log)"; continue 2; }
            done
            lib_ok "$out/vm.upstream.$m" "$UPSTREAM_LIB" && lib_ok "$out/vm.ours.$m" "$OUR_LIB" ||
                fail "vm $m: libraries under test" "upstream '$(sed -n 's/^LIB //p' "$out/vm.upstream.$m")', ours '$(sed -n 's/^LIB //p' "$out/vm.ours.$m")'"
            if grep -q '^SKIP' "$out/vm.upstream.$m"; then
                skip "vm $m" "$(grep -m1 '^SKIP' "$out/vm.upstream.$m")"
                continue
            fi
            report "vm $m" "$out/vm.ours.$m" "$out/vm.upstream.$m"
            for l in upstream ours; do
                rc=$(sed -n 's/^RC //p' "$out/vm.$l.$m")
                [ "$rc" = 0 ] || fail "vm $m: $l exit status" "$rc"
            done
        done
        # Upstream reads through NULL in ibv_query_qp@IBVERBS_1.0 for a QP
        # without SRQ; ours answers with NULL there.
        if [ -f "$out/vm.ours.device" ] && grep -q '^DIFF query_qp_1_0-without-srq' "$out/vm.ours.device"; then
            d=$(sed -n 's/^DIFF query_qp_1_0-without-srq //p' "$out/vm.ours.device")
            u=$(sed -n 's/^DIFF query_qp_1_0-without-srq //p' "$out/vm.upstream.device")
            if [ "$d" = ok ]; then pass "vm device: query_qp_1_0 on a QP without SRQ (upstream: $u)"
            else fail "vm device: query_qp_1_0 on a QP without SRQ" "$d (upstream: $u)"; fi
        fi
    fi
fi

finish
