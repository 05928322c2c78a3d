#!/bin/bash
# Discovery and provider loading, no RDMA hardware needed: sysfs fixture
# trees (SYSFS_PATH) and a private /dev/infiniband (mount namespace), with
# RDMA netlink refused (seccomp) so both libraries take the sysfs path.
# Every scenario runs on Debian's library and on ours; stdout (what the
# library reports) and stderr (its warnings) are compared, and checked
# against what upstream's source says they must be.
#
# Not covered here (no kernel RDMA support on the test hosts):
# * netlink discovery: covered by the unit tests in src/device/netlink/
#   (crafted kernel replies, libnl's validation rules) and the fuzz target;
# * /dev/char/M:m: upstream uses it when opening a device (open_cdev), not
#   in discovery, which only stat()s /dev/infiniband/uverbsN;
# * setuid programs ignoring SYSFS_PATH / RDMAV_DRIVERS.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin discovery --clean
HERE=compat-tests/discovery
S=$SCRATCH
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
PROVIDER_DIR=/usr/lib/$MULTIARCH/libibverbs
CC=${CC:-cc}
. $HERE/fixture.sh

mkdir -p "$S/ours" "$S/upstream" "$S/fake" "$S/stub"
need "$OUR_LIB=make" "$UPSTREAM_LIB=libibverbs1" "$UPSTREAM_INCLUDE/infiniband/verbs.h=libibverbs-dev" "$CC" readelf=binutils
ls "$PROVIDER_DIR"/lib*-rdmav34.so > /dev/null 2>&1 || fail_early prerequisites "no providers in $PROVIDER_DIR (ibverbs-providers)"
ln -sf "$(realpath "$OUR_LIB")" "$S/ours/libibverbs.so.1"
ln -sf "$(realpath "$UPSTREAM_LIB")" "$S/upstream/libibverbs.so.1"

build() {
    local log=$S/build.log
    $CC -O1 -Wall -o "$S/lister" $HERE/lister.c -I"$UPSTREAM_INCLUDE" -L"$S/upstream" -l:libibverbs.so.1 >> "$log" 2>&1 &&
        $CC -O1 -Wall -o "$S/nonl" $HERE/nonl.c >> "$log" 2>&1 &&
        $CC -shared -fPIC -o "$S/stub/libibverbs.so" $HERE/stub57.c -Wl,-soname,libibverbs.so.1 \
            -Wl,--version-script=$HERE/stub57.map >> "$log" 2>&1 &&
        $CC -shared -fPIC -o "$S/fake/libfake57-rdmav34.so" $HERE/fake57.c -L"$S/stub" -libverbs >> "$log" 2>&1
}
if build; then pass build; else fail_early build "$(tail -5 "$S/build.log")"; fi
if readelf -V "$S/fake/libfake57-rdmav34.so" | grep -q 'Name: IBVERBS_PRIVATE_57'; then
    pass fake57-needs-private-57
else
    fail fake57-needs-private-57 "the fake provider does not need IBVERBS_PRIVATE_57"
fi

if ! bash $HERE/fakedev.sh --check; then
    skip namespaces "neither root nor user namespaces: /dev/infiniband cannot be faked, scenarios with devices skipped"
    NS=0
else
    NS=1
fi

# Normalises the loader's name for whichever libibverbs.so.1 was loaded.
norm() { sed -E "s#[^ ']*libibverbs\.so\.1(\.[0-9.]+)?:#LIBIBVERBS:#g"; }

# run LIB NAME DEVNAMES FIXTURE [VAR=VALUE...] -- STEP...
# -> $S/NAME.LIB.out / .err (normalised)
run() {
    local lib=$1 name=$2 devs=$3 fx=$4
    shift 4
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local cmd=(env -u IBV_SHOW_WARNINGS -u RDMAV_DRIVERS -u IBV_DRIVERS -u VERBS_LOG_LEVEL -u VERBS_LOG_FILE
        LD_LIBRARY_PATH="$S/$lib" SYSFS_PATH="$fx" "${envs[@]}" "$S/nonl" "$S/lister" "$@")
    if [ "$NS" = 1 ]; then
        bash $HERE/fakedev.sh "$S" "$devs" "${cmd[@]}" > "$S/$name.$lib.out" 2> "$S/$name.$lib.raw"
    else
        "${cmd[@]}" > "$S/$name.$lib.out" 2> "$S/$name.$lib.raw"
    fi
    norm < "$S/$name.$lib.raw" > "$S/$name.$lib.err"
}

# scenario NAME DEVNAMES FIXTURE [VAR=VALUE...] -- STEP...: both libraries,
# stdout and stderr compared.
scenario() {
    local name=$1
    [ -z "${RESET:-}" ] || eval "$RESET"
    run upstream "$@"
    [ -z "${RESET:-}" ] || eval "$RESET"
    run ours "$@"
    if cmp -s "$S/$name.upstream.out" "$S/$name.ours.out"; then
        pass "$name-stdout-same"
    else
        fail "$name-stdout-same" "$(diff "$S/$name.upstream.out" "$S/$name.ours.out" | head -8 | tr '\n' '|')"
    fi
    if [ -n "${EXTRA_STDERR:-}" ]; then
        :
    elif cmp -s "$S/$name.upstream.err" "$S/$name.ours.err"; then
        pass "$name-stderr-same"
    else
        fail "$name-stderr-same" "$(diff "$S/$name.upstream.err" "$S/$name.ours.err" | head -8 | tr '\n' '|')"
    fi
}

# expect NAME LIB FILE-SUFFIX TEXT: a line of the output equals TEXT.
expect() {
    if grep -qxF -- "$4" "$S/$1.$2.$3"; then
        pass "$1-$2-$3-has:${4:0:60}"
    else
        fail "$1-$2-$3-has" "no line '$4' in $S/$1.$2.$3"
    fi
}

FX=$S/fx

# --- no RDMA support at all, and RDMA support without devices ------------
mkdir -p "$FX/none"
scenario no-rdma "" "$FX/none" -- list
expect no-rdma ours out "list 1: NULL num=0 errno=38 (Function not implemented)"
fx_new "$FX/empty"
scenario empty "" "$FX/empty" -- list list
expect empty ours out "list 2: num=0"

if [ "$NS" = 1 ]; then
    # --- one device, all fields ------------------------------------------
    fx_new "$FX/one"
    fx_dev "$FX/one" uverbs0 rxe0 - 2 1
    scenario one "uverbs0" "$FX/one//" -- list free:1
    expect one ours out "  1.0 name=rxe0 dev_name=uverbs0 dev_path=$FX/one/class/infiniband_verbs/uverbs0 ibdev_path=$FX/one/class/infiniband/rxe0 node_type=1 transport=0 guid=0002c9030042f1b0 index=-1"

    # --- many: one device per Debian provider (15 match; siw and mana match
    # only by the kernel's driver id, which only netlink reports) ----------
    fx_new "$FX/all"
    fx_all_providers "$FX/all"
    scenario all-providers "$(fx_names 17)" "$FX/all" IBV_SHOW_WARNINGS=1 -- list
    expect all-providers ours out "list 1: num=15"
    expect all-providers ours err "libibverbs: Warning: no userspace device-specific driver found for siw0"
    expect all-providers ours err "libibverbs: Warning: no userspace device-specific driver found for mana_0"
    fx_new "$FX/rxes"
    for i in 0 1 2 3 4; do fx_dev "$FX/rxes" "uverbs$i" "rxe$i" - 1 1; done
    scenario many-rxe "$(fx_names 5)" "$FX/rxes" -- list list free:1 list
    expect many-rxe ours out "list 3: num=5"

    # --- the container case: no /dev/infiniband/uverbsN --------------------
    scenario no-cdev "" "$FX/one" IBV_SHOW_WARNINGS=1 -- list
    expect no-cdev ours out "list 1: num=0"
    # The char device only needs to be visible: upstream stat()s it.
    scenario cdev-unreadable "uverbs0" "$FX/one" -- sh:"chmod 000 /dev/infiniband/uverbs0" list
    expect cdev-unreadable ours out "list 1: num=1"

    # --- the global abi_version --------------------------------------------
    fx_new "$FX/abi7" 7
    fx_dev "$FX/abi7" uverbs0 rxe0 - 1 1
    # Upstream remembers the bad value, so the second call passes.
    scenario bad-abi "uverbs0" "$FX/abi7" -- list list
    expect bad-abi ours out "list 1: NULL num=0 errno=38 (Function not implemented)"
    expect bad-abi ours err "libibverbs: Fatal: kernel ABI version 7 doesn't match library version 6."
    fx_new "$FX/abi0" 0
    fx_dev "$FX/abi0" uverbs0 rxe0 - 1 1
    scenario zero-abi "uverbs0" "$FX/abi0" -- list list
    fx_new "$FX/noabi"
    rm "$FX/noabi/class/infiniband_verbs/abi_version"
    fx_dev "$FX/noabi" uverbs0 rxe0 - 1 1
    scenario no-abi-file "uverbs0" "$FX/noabi" -- list
    expect no-abi-file ours out "list 1: NULL num=0 errno=38 (Function not implemented)"

    # --- a provider's kernel-ABI range -------------------------------------
    fx_new "$FX/abirange"
    fx_dev "$FX/abirange" uverbs0 rxe0 - 9 1
    scenario abi-range "uverbs0" "$FX/abirange" -- list
    expect abi-range ours err "libibverbs: Warning: Driver rxe does not support the kernel ABI of 9 (supports 1 to 2) for device $FX/abirange/class/infiniband/rxe0"

    # --- devices come and go between calls; old lists stay valid -------------
    fx_new "$FX/hot"
    fx_dev "$FX/hot" uverbs0 rxe0 - 1 1
    echo ". $PWD/$HERE/fixture.sh; fx_dev $FX/hot uverbs1 rxe1 - 1 4" > "$S/hot-add.sh"
    echo ". $PWD/$HERE/fixture.sh; fx_rm $FX/hot uverbs0 rxe0" > "$S/hot-del.sh"
    add="bash $S/hot-add.sh"
    del="bash $S/hot-del.sh"
    RESET='fx_new "$FX/hot"; fx_dev "$FX/hot" uverbs0 rxe0 - 1 1'
    scenario hotplug "uverbs0 uverbs1" "$FX/hot" -- list "sh:$add" list show:1 "sh:$del" list show:1 show:2 free:1 free:2 show:3 free:3 list
    RESET=
    expect hotplug ours out "list 2: num=2"
    expect hotplug ours out "list 3: num=1"
    expect hotplug ours out "show 1: rxe0"
    expect hotplug ours out "show 2: rxe1 rxe0"
    expect hotplug ours out "show 3: rxe1"

    # --- provider names from the environment ---------------------------------
    fx_new "$FX/unmatched"
    fx_dev "$FX/unmatched" uverbs0 foo0 - 1 1
    # Two calls: providers are loaded once per process.
    scenario env-missing-driver "uverbs0" "$FX/unmatched" RDMAV_DRIVERS="nosuchdrv:;/no/such/dir/libx" IBV_SHOW_WARNINGS=1 -- list list
    expect env-missing-driver ours err "libibverbs: Warning: couldn't load driver 'libnosuchdrv-rdmav34.so': libnosuchdrv-rdmav34.so: cannot open shared object file: No such file or directory"
    n=$(grep -c "couldn't load driver 'libnosuchdrv" "$S/env-missing-driver.ours.err")
    if [ "$n" = 1 ]; then pass env-missing-driver-loaded-once; else fail env-missing-driver-loaded-once "$n warnings"; fi
    # A provider already registered (preloaded) claims the device: nothing
    # is loaded, so the bad name is never tried.
    scenario preloaded-no-load "uverbs0" "$FX/one" LD_PRELOAD="$PROVIDER_DIR/librxe-rdmav34.so" RDMAV_DRIVERS=nosuch5 -- list
    expect preloaded-no-load ours out "list 1: num=1"
    if [ -s "$S/preloaded-no-load.ours.err" ]; then
        fail preloaded-no-load-quiet "$(head -3 "$S/preloaded-no-load.ours.err" | tr '\n' '|')"
    else
        pass preloaded-no-load-quiet
    fi
    scenario ibv-drivers "uverbs0" "$FX/unmatched" IBV_DRIVERS="nosuch2" -- list
    scenario rdmav-wins "uverbs0" "$FX/unmatched" RDMAV_DRIVERS="nosuch3" IBV_DRIVERS="nosuch4" -- list

    # --- a provider built for another private ABI ----------------------------
    EXTRA_STDERR=1 scenario fake57-abs "uverbs0" "$FX/unmatched" RDMAV_DRIVERS="$S/fake/libfake57" -- list
    extra=$(diff "$S/fake57-abs.upstream.err" "$S/fake57-abs.ours.err" | sed -n 's/^> //p')
    want="libibverbs: Warning: $S/fake/libfake57-rdmav34.so needs IBVERBS_PRIVATE_57, this library provides IBVERBS_PRIVATE_34"
    if [ "$extra" = "$want" ] && diff "$S/fake57-abs.upstream.err" "$S/fake57-abs.ours.err" | grep -q '^>' &&
        ! diff "$S/fake57-abs.upstream.err" "$S/fake57-abs.ours.err" | grep -q '^<'; then
        pass fake57-abs-explained
    else
        fail fake57-abs-explained "want upstream's stderr plus '$want'; got extra '$extra'"
    fi
    # In the provider directory upstream's message names only the last
    # attempt (the search path); ours adds the real cause.
    mkdir -p "$S/pdir"
    cp "$PROVIDER_DIR"/lib*-rdmav34.so "$S/pdir/"
    cp "$S/fake/libfake57-rdmav34.so" "$S/pdir/"
    export PROVIDER_OVERLAY=$S/pdir
    EXTRA_STDERR=1 scenario fake57-dir "uverbs0" "$FX/unmatched" RDMAV_DRIVERS=fake57 -- list
    unset PROVIDER_OVERLAY
    extra=$(diff "$S/fake57-dir.upstream.err" "$S/fake57-dir.ours.err" | sed -n 's/^> //p')
    want="libibverbs: Warning: $PROVIDER_DIR/libfake57-rdmav34.so needs IBVERBS_PRIVATE_57, this library provides IBVERBS_PRIVATE_34"
    if [ "$extra" = "$want" ]; then
        pass fake57-dir-explained
    else
        fail fake57-dir-explained "want upstream's stderr plus '$want'; got extra '$extra'"
    fi

    # --- every Debian provider loads (RTLD_NOW) and registers with us --------
    run ours registrations "uverbs0" "$FX/unmatched" VERBS_LOG_LEVEL=4 VERBS_LOG_FILE="$S/registrations.log" -- list
    want="bnxt_re cxgb4 efa erdma hfi1verbs hns ipathverbs irdma mana mlx4 mlx5 mthca ocrdma pvrdma qedr rxe siw"
    got=$(sed -n "s/^libibverbs: provider '\([^']*\)' registered.*/\1/p" "$S/registrations.log" 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')
    if [ "$got" = "$want" ]; then pass registrations-all-17; else fail registrations-all-17 "registered: '$got'"; fi
    if grep -q "couldn't load" "$S/registrations.ours.err"; then
        fail registrations-no-load-error "$(grep "couldn't load" "$S/registrations.ours.err" | head -3 | tr '\n' '|')"
    else
        pass registrations-no-load-error
    fi
    n=$(ls "$PROVIDER_DIR"/lib*-rdmav34.so | wc -l)
    if [ "$n" = 17 ]; then pass providers-installed-17; else fail providers-installed-17 "$n provider files"; fi
fi

finish
