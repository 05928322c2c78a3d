#!/bin/bash
# Builds sysfs fixture trees (for SYSFS_PATH) the way the kernel lays them
# out for discovery:
#
#   class/infiniband_verbs/abi_version
#   class/infiniband_verbs/uverbsN/{ibdev,dev,abi_version}
#   class/infiniband/<ibdev>/{node_type,node_guid}
#   class/infiniband/<ibdev>/device/modalias        (when given)
#
# Sourced by run.sh; every function takes the fixture root first.

# fx_new ROOT [ABI]: an empty tree (class directory and global abi_version).
fx_new() {
    rm -rf "$1"
    mkdir -p "$1/class/infiniband_verbs" "$1/class/infiniband"
    echo "${2:-6}" > "$1/class/infiniband_verbs/abi_version"
}

# fx_dev ROOT UVERBS IBDEV MODALIAS [DEV_ABI] [NODE_TYPE] [GUID]
# MODALIAS "-" leaves device/modalias out (name or driver-id matching).
fx_dev() {
    local root=$1 uv=$2 ib=$3 ma=$4 abi=${5:-1} nt=${6:-1} guid=${7:-0002:c903:0042:f1b0}
    local u=$root/class/infiniband_verbs/$uv i=$root/class/infiniband/$ib
    mkdir -p "$u" "$i/device"
    echo "$ib" > "$u/ibdev"
    echo "231:${uv#uverbs}" > "$u/dev"
    echo "$abi" > "$u/abi_version"
    case $nt in
        1) echo "1: CA" > "$i/node_type" ;;
        4) echo "4: RNIC" > "$i/node_type" ;;
        *) echo "$nt" > "$i/node_type" ;;
    esac
    echo "$guid" > "$i/node_guid"
    if [ "$ma" != - ]; then
        echo "$ma" > "$i/device/modalias"
    fi
}

# fx_rm ROOT UVERBS IBDEV: the device disappears.
fx_rm() {
    rm -rf "$1/class/infiniband_verbs/$2" "$1/class/infiniband/$3"
}

# One device per Debian provider: uverbs index, ibdev name, modalias, ABI,
# node type.  rxe matches by name; siw and mana only by the kernel's driver
# id (netlink), so a sysfs fixture cannot match them.
FX_PROVIDERS="
0 mlx5_0 pci:v000015B3d00001013sv000015B3sd00000008bc02sc00i00 1 1
1 mlx4_0 pci:v000015B3d00001003sv000015B3sd00000006bc02sc80i00 4 1
2 mthca0 pci:v000015B3d00006282sv000015B3sd00000001bc0Csc06i00 1 1
3 bnxt_re0 pci:v000014E4d00001614sv000014E4sd00000000bc02sc00i00 1 1
4 cxgb4_0 pci:v00001425d00005401sv00001425sd00000000bc02sc00i00 1 4
5 efa_0 pci:v00001D0Fd0000EFA0sv00001D0Fsd00000000bc02sc00i00 1 1
6 erdma_0 pci:v00001DEDd0000107Fsv00001DEDsd00000000bc02sc00i00 1 1
7 hfi1_0 pci:v00008086d000024F0sv00008086sd00000000bc0Csc06i00 1 1
8 hns_0 pci:v000019E5d0000A222sv000019E5sd00000000bc02sc00i00 1 1
9 qib0 pci:v00001077d00007322sv00001077sd00000000bc0Csc06i00 1 1
10 irdma0 pci:v00008086d0000124Csv00008086sd00000000bc02sc00i00 1 4
11 ocrdma0 pci:v000010DFd00000720sv000010DFsd00000000bc02sc00i00 2 1
12 qedr0 pci:v00001077d00001629sv00001077sd00000000bc02sc00i00 8 1
13 vmw_pvrdma0 pci:v000015ADd00000820sv000015ADsd00000000bc02sc00i00 3 1
14 rxe0 - 2 1
15 siw0 - 1 4
16 mana_0 - 1 1
"

# fx_all_providers ROOT: the devices above (uverbs0 .. uverbs16).
fx_all_providers() {
    local idx ib ma abi nt
    while read -r idx ib ma abi nt; do
        [ -n "$idx" ] || continue
        fx_dev "$1" "uverbs$idx" "$ib" "$ma" "$abi" "$nt" "0000:0000:0000:$(printf %04x "$idx")"
    done <<< "$FX_PROVIDERS"
}

# uverbs0 .. uverbsN-1
fx_names() {
    local n=$1 i out=
    for ((i = 0; i < n; i++)); do out="$out uverbs$i"; done
    echo "$out"
}
