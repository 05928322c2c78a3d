#!/bin/bash
# Every provider of Debian bookworm (rdma-core 44, IBVERBS_PRIVATE_34),
# trixie (56.1, PRIVATE_34 in its later form) and sid (65.0, PRIVATE_65)
# loads with dlopen(RTLD_NOW) into a process that uses our library, and
# registers with its generation.
#
#   compat-tests/generations/run.sh
#
# Each release's providers are loaded by that release's own ibv_devices, in
# the release's own root (chroot; bookworm is this machine) with our library
# first on the search path (LD_LIBRARY_PATH, our build dir bound into the
# root) and the software device listed so that providers are loaded
# (RDMAV_SOFT_DEVICES=swr0): one run per provider file, named by its
# absolute path in RDMAV_DRIVERS.  PASS when ibv_devices succeeds, prints no
# warning, and our debug log shows the provider registered at the expected
# private-ABI generation.  Also: the same with the release's own library
# (a provider that does not load there is a SKIP, not ours to fix), and the
# loading rule (RDMAV_PROVIDER_ABI) on the host.
# Needs: root (chroot, mount), mmdebstrap (roots.sh).
. "$(dirname "$0")/../lib.sh"
suite_begin generations --clean
need "$OUR_LIB=run make" chroot mount
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (chroot)"
OURDIR=$(cd "$(dirname "$OUR_LIB")" && pwd)
[ -e "$OURDIR/libibverbs/libswrdma-rdmav34.so" ] || fail_early prerequisites "$OURDIR/libibverbs/libswrdma-rdmav34.so missing (make swrdma)"
roots=$(bash compat-tests/roots.sh trixie sid) || fail_early roots "compat-tests/roots.sh trixie sid failed"

MNT=()
cleanup() { local m; for m in "${MNT[@]}"; do umount -l "$m" 2>/dev/null; done; }
trap cleanup EXIT

# run_in ROOT CMD...: CMD in ROOT ("/" = this machine), our build dir at /mnt.
run_in() {
    local root=$1; shift
    if [ "$root" = / ]; then "$@"; else chroot "$root" "$@"; fi
}

check_release() { # REL ROOT PABI LIBDIR_IN_ROOT
    local rel=$1 root=$2 pabi=$3 ourdir=$4 f name log out rc base
    local pdir=/usr/lib/x86_64-linux-gnu/libibverbs
    for f in "$root$pdir"/lib*-rdmav"$pabi".so; do
        [ -e "$f" ] || continue
        base=$(basename "$f"); name=${base#lib}; name=${name%-rdmav"$pabi".so}
        [ "$name" = swrdma ] && continue
        log=$SCRATCH/$rel-$name.log
        rm -f "$log"
        out=$(run_in "$root" env LD_LIBRARY_PATH="$ourdir" RDMAV_SOFT_DEVICES=swr0 \
                  RDMAV_DRIVERS="$pdir/lib$name" VERBS_LOG_LEVEL=4 VERBS_LOG_FILE=/tmp/gen.log \
                  ibv_devices 2>&1); rc=$?
        run_in "$root" cat /tmp/gen.log >"$log" 2>/dev/null; run_in "$root" rm -f /tmp/gen.log
        if [ $rc -ne 0 ] || printf '%s\n' "$out" | grep -q 'Warning'; then
            # Does the release's own library load it?
            if run_in "$root" env RDMAV_DRIVERS="$pdir/lib$name" ibv_devices 2>&1 | grep -q Warning; then
                skip "$rel: $base" "does not load with the release's own library either"
            else
                fail "$rel: $base" "exit $rc: $(printf '%s' "$out" | grep Warning | head -2 | tr '\n' ' ')"
            fi
        elif ! grep -q "registered (IBVERBS_PRIVATE_$pabi.* from $pdir/$base\$" "$log"; then
            fail "$rel: $base" "loaded, but not registered from it at IBVERBS_PRIVATE_$pabi: $(grep "from $pdir/$base" "$log" | head -1)"
        else
            pass "$rel: $base (IBVERBS_PRIVATE_$pabi)"
        fi
    done
}

# The enum texts of each release's own library against ours, both in the
# release's root (its python3, ctypes; one process per library): every
# value from -3 to 40 of the *_str functions that release exports.
strs_probe='import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
for f in sys.argv[2:]:
    fn = getattr(lib, f)
    fn.restype = ctypes.c_char_p
    for v in range(-3, 41):
        s = fn(v)
        print(f, v, "NULL" if s is None else s.decode())'
strs_check() { # REL ROOT OURDIR
    local rel=$1 root=$2 ourdir=$3 fns="ibv_node_type_str ibv_port_state_str ibv_event_type_str ibv_wc_status_str"
    [ "$rel" = bookworm ] || fns="$fns ibv_wr_opcode_str"
    local theirs ours
    # Before rdma-core 65 the event after IBV_EVENT_WQ_FATAL (20) had no
    # name; the one library gives 65's text to everyone.
    local skip=x
    [ "$rel" = sid ] || skip='^ibv_event_type_str 20 '
    theirs=$(run_in "$root" python3 -c "$strs_probe" /usr/lib/x86_64-linux-gnu/libibverbs.so.1 $fns 2>&1 | grep -v "$skip")
    ours=$(run_in "$root" python3 -c "$strs_probe" "$ourdir/libibverbs.so.1" $fns 2>&1 | grep -v "$skip")
    if [ -z "$theirs" ] || [ "$theirs" != "$ours" ]; then
        fail "$rel: enum texts" "$(diff <(printf '%s\n' "$theirs") <(printf '%s\n' "$ours") | head -4 | tr '\n' ' ')"
    elif [ "$rel" != sid ]; then
        pass "$rel: enum texts of $fns (-3..40) as its own library, but for IBV_EVENT_DEVICE_SPEED_CHANGE (rdma-core 65's text)"
    else
        pass "$rel: enum texts of $fns (-3..40) as its own library"
    fi
}

check_release bookworm / 34 "$OURDIR"
for r in $roots; do
    rel=$(basename "$r")
    mount --bind "$OURDIR" "$r/mnt" && MNT+=("$r/mnt") || { fail "$rel: mount" "cannot bind $OURDIR"; continue; }
    for d in proc tmp; do
        if [ $d = proc ]; then mount -t proc proc "$r/proc"; else mount -t tmpfs tmpfs "$r/tmp"; fi && MNT+=("$r/$d")
    done
    case $rel in sid) pabi=65 ;; *) pabi=34 ;; esac
    check_release "$rel" "$r" "$pabi" /mnt
    strs_check "$rel" "$r" /mnt
    cleanup; MNT=()
done

# The loading rule on this machine: newest generation first; RDMAV_PROVIDER_ABI
# chooses.  A directory with both generations of one provider (sid's rxe
# beside bookworm's) shows which of its files registers (the system's own
# configured rxe registers too, from the provider directory).
both=$SCRATCH/both; mkdir -p "$both"
sid_root=$(printf '%s\n' $roots | grep '/sid$')
cp /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so "$both/"
cp "$sid_root/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav65.so" "$both/"
for order in "" 34 65 "34,65"; do
    case $order in ''|65) want=65 ;; *) want=34 ;; esac
    log=$SCRATCH/order-${order:-default}.log; rm -f "$log"
    env LD_LIBRARY_PATH="$OURDIR" RDMAV_SOFT_DEVICES=swr0 RDMAV_DRIVERS="$both/librxe" \
        ${order:+RDMAV_PROVIDER_ABI=$order} VERBS_LOG_LEVEL=4 VERBS_LOG_FILE="$log" ibv_devices >/dev/null 2>&1
    got=$(grep "from $both/" "$log" | grep -o "provider 'rxe' registered (IBVERBS_PRIVATE_[0-9]*" | grep -o '[0-9]*$' | tr '\n' ' ')
    if [ "$got" = "$want " ]; then
        pass "RDMAV_PROVIDER_ABI=${order:-(unset)}: rxe served by IBVERBS_PRIVATE_$want"
    else
        fail "RDMAV_PROVIDER_ABI=${order:-(unset)}" "expected rxe registered once at $want, got '${got}'"
    fi
done
# Our driver.h describes both generations' op tables as upstream orders
# them (ops65.expected / ops34.expected: upstream's member lists): default
# (IBVERBS_PABI_VERSION 65) and -DIBVERBS_PABI_VERSION=34.
for g in 65 34; do
    exp=compat-tests/generations/ops$g.expected
    prog=$SCRATCH/ops$g.c
    {
        echo '#include <stddef.h>'
        echo '#include <stdio.h>'
        echo '#include <infiniband/driver.h>'
        echo 'int main(void) { int bad = 0;'
        i=0
        for m in $(grep -v '^#' "$exp"); do
            echo "if (offsetof(struct verbs_context_ops, $m) != $i * sizeof(void *)) { printf(\"$m\\n\"); bad++; }"
            i=$((i + 1))
        done
        echo "if (sizeof(struct verbs_context_ops) != $i * sizeof(void *)) { printf(\"sizeof\\n\"); bad++; }"
        echo 'return bad; }'
    } >"$prog"
    if ! out=$(cc -I"$OUR_INCLUDE" -DIBVERBS_PABI_VERSION=$g -o "$prog.bin" "$prog" 2>&1); then
        fail "driver.h verbs_context_ops (PABI $g)" "does not compile: $(printf '%s' "$out" | grep error | head -2 | tr '\n' ' ')"
    elif ! out=$("$prog.bin"); then
        fail "driver.h verbs_context_ops (PABI $g)" "members out of place: $(printf '%s' "$out" | tr '\n' ' ')"
    else
        pass "driver.h verbs_context_ops (PABI $g): $(grep -vc '^#' "$exp") members in upstream's order"
    fi
done

finish
