#!/bin/bash
# Every Debian provider of bookworm (rdma-core 44), trixie (56.1) and sid
# (65.0) runs a workload of every verb it implements on the uverbs stand-in
# (standin/: a user-space model of /dev/infiniband/uverbsN), once on its
# release's own libibverbs and once on ours; the stand-in's command logs
# must be the same, step for step (README.md).
#
#   compat-tests/providers/run.sh [--only PROV,...] [--faults PROV,...]
#
# PROVIDERS_ONLY / PROVIDERS_FAULTS do the same as the options.  Fault runs
# (each command of the workload failed in turn) are made for every provider
# unless --faults names some ("" none), each command failed in up to three
# ways: an errno (EINVAL, ENOMEM, EIO, EOPNOTSUPP in rotation), the device's
# disassociation, the same with RDMAV_ALLOW_DISASSOC_DESTROY.  In `make
# test`, for its time: bookworm and sid every command with an errno;
# bookworm every other command (the 1st, 3rd, ...) by disassociation, sid
# the others (2nd, 4th, ...) by disassociation with ALLOW_DISASSOC_DESTROY;
# trixie (between the two; its clean runs compared as the others') none.
# Every kind on every release, each command, costs about 6 more minutes on
# a quiet 2-CPU machine: PROVIDERS_FAULT_KINDS="" (runner.py --fault-kinds:
# REL=KIND[/N]+...,... with KIND errno, fatal or allow; REL= none).
# Needs: root (chroot, mount) for the trixie and sid roots (roots.sh).
. "$(dirname "$0")/../lib.sh"
suite_begin providers
# PROVIDERS_SCRATCH: another scratch directory, so that runs can go on side
# by side (each binds its own into the roots).
if [ -n "${PROVIDERS_SCRATCH:-}" ]; then
    SCRATCH=$(abspath "$PROVIDERS_SCRATCH")
    mkdir -p "$SCRATCH"
fi
need "$OUR_LIB=run make" cc python3 chroot mount
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (chroot)"
only=${PROVIDERS_ONLY:-}
faults=${PROVIDERS_FAULTS-all}
while [ $# -gt 0 ]; do
    case $1 in
        --only) only=$2; shift 2 ;;
        --faults) faults=$2; shift 2 ;;
        *) echo "usage: $0 [--only PROV,...] [--faults PROV,...]" >&2; exit 2 ;;
    esac
done
HERE=compat-tests/providers
rm -rf "$SCRATCH/logs" "$SCRATCH/fx"
mkdir -p "$SCRATCH/ourlib"
cp -L "$OUR_LIB" "$SCRATCH/ourlib/libibverbs.so.1"
make -s -C "$HERE/standin" OUT="$SCRATCH" >"$SCRATCH/standin-build.log" 2>&1 ||
    fail_early "build the stand-in" "$(tail -3 "$SCRATCH/standin-build.log" | tr '\n' ' ')"
roots=$(bash compat-tests/roots.sh trixie sid) || fail_early roots "compat-tests/roots.sh trixie sid failed"

# The workload, once per release against that release's headers.
build_workload() { # REL INCLUDE_DIR
    if ! cc -O1 -g -Wall -Werror -I"$2" -o "$SCRATCH/workload-$1" "$HERE/workload.c" \
            -L"$SCRATCH/ourlib" -l:libibverbs.so.1 -ldl 2>"$SCRATCH/workload-$1.build.log"; then
        fail "workload $1" "does not build: $(grep -m2 error "$SCRATCH/workload-$1.build.log" | tr '\n' ' ')"
        return 1
    fi
}
args=()
build_workload bookworm /usr/include && args+=(--release "bookworm:/:$SCRATCH:34")

MNT=()
cleanup() { local m; for m in "${MNT[@]}"; do umount -l "$m" 2>/dev/null; done; }
trap cleanup EXIT
for r in $roots; do
    rel=$(basename "$r")
    case $rel in sid) pabi=65 ;; *) pabi=34 ;; esac
    build_workload "$rel" "$r/usr/include" || continue
    inner=/mnt/sti-$(basename "$SCRATCH")
    mkdir -p "$r$inner"
    if mount --bind "$SCRATCH" "$r$inner"; then
        MNT+=("$r$inner")
    else
        fail "$rel: mount" "cannot bind $SCRATCH"
        continue
    fi
    mountpoint -q "$r/proc" || { mount -t proc proc "$r/proc" && MNT+=("$r/proc"); }
    args+=(--release "$rel:$r:$inner:$pabi")
done

# The runner prints the closing line, counting what failed here too (not
# exec'ed: the trap unmounts the roots' binds when it is done).
python3 "$HERE/runner.py" --scratch "$SCRATCH" --only "$only" --faults "$faults" \
    --fault-kinds "${PROVIDERS_FAULT_KINDS-bookworm=errno+fatal/2,trixie=,sid=errno+allow/2}" --prior-fail "$nfail" "${args[@]}"
