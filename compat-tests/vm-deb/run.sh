#!/bin/bash
# compat-tests/vm-deb: the Soft-RoCE VM suites against our INSTALLED Debian
# packages (issue 11).  A copy of a clean bookworm root (compat-tests/roots.sh:
# Debian's ibverbs-utils, ibverbs-providers, perftest, python3-pyverbs,
# rdma-core, libibverbs-dev) gets our .debs (make deb) with
# `apt-get install`; then compat-tests/vm/release.sh runs in ONE boot, in
# that root by chroot, Debian's tools, pingpongs, perftest and rdma-core's
# Python suite on rxe: "ours" is the root's own libibverbs.so.1 — our
# package, found by the dynamic linker with no LD_LIBRARY_PATH — and the
# reference is Debian's libibverbs1 of the same root before the install
# (a copy, by LD_LIBRARY_PATH).  Same checks and known-upstream-failure
# lists as vm, vm-perftest and vm-pyverbs (links to compat-tests/vm's).
# Needs root (chroot, mount), mmdebstrap, dpkg-dev, debhelper; the VM's.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin vm-deb --clean
OUT=$SCRATCH
need dpkg-buildpackage=dpkg-dev dh=debhelper chroot mount
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (chroot)"

ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
arch=$(dpkg --print-architecture)
# The packages: built here, unless this run of compat-tests/run-all.sh
# built them already (the deb suite, earlier in `make test`: packages
# written since the run began, RUN_ALL_START, are this tree's).
fresh=1
for p in libibverbs1-rs ibverbs-provider-swrdma; do
    f=build/deb/${p}_${ver}_$arch.deb
    [ -n "${RUN_ALL_START:-}" ] && [ -e "$f" ] && [ "$(stat -c %Y "$f")" -ge "$RUN_ALL_START" ] || fresh=0
done
if [ "$fresh" = 1 ]; then
    echo "vm-deb: the packages the deb suite built in this run (build/deb/)" >"$OUT/deb.out"
else
    bash tools/deb.sh >"$OUT/deb.out" 2>&1 || fail_early "make deb" "$(tail -n2 "$OUT/deb.out" | tr '\n' ' ')"
fi
base=$(bash compat-tests/roots.sh bookworm 2>"$OUT/roots.err" | tail -1) ||
    fail_early prerequisites "no bookworm root: $(tail -n2 "$OUT/roots.err" | tr '\n' ' ')"

# The root with our packages: under build/ (the VM sees the host's / but
# not its /tmp), remade each run.
R=$ROOT/build/roots/vm-deb-bookworm
rm -rf "$R"; cp -a "$base" "$R" || fail_early root "cannot copy $base"
DL=$ROOT/build/roots/vm-deb-debian-lib; rm -rf "$DL"; mkdir -p "$DL"
cp "$(readlink -f "$R/usr/lib/x86_64-linux-gnu/libibverbs.so.1")" "$DL/libibverbs.so.1"
mkdir -p "$R/debs"
for p in libibverbs1-rs ibverbs-provider-swrdma; do cp "build/deb/${p}_${ver}_$arch.deb" "$R/debs/"; done
mount -t proc proc "$R/proc" && mount --bind /dev "$R/dev"
chroot "$R" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c 'apt-get install -y -q /debs/*.deb' >"$OUT/install.out" 2>&1; irc=$?
umount -l "$R/dev" "$R/proc"
rm -rf "$R/debs"
installed=$(dpkg-query --admindir="$R/var/lib/dpkg" -W -f '${Version}' libibverbs1-rs 2>/dev/null)
if [ $irc -ne 0 ] || [ "$installed" != "$ver" ]; then
    fail_early install "apt-get install of our packages in the root failed: $(tail -n2 "$OUT/install.out" | tr '\n' ' ')"
fi
echo "vm-deb: libibverbs1-rs $installed (ours) installed in $R; reference: Debian's $(basename "$(readlink -f "$base/usr/lib/x86_64-linux-gnu/libibverbs.so.1")")" >&2

# release.sh prints the PASS/FAIL lines and the closing line (vm-deb: ...).
RELEASE_ROOTFS=$R RELEASE_SWAP=1 OUR_LIB=$DL/libibverbs.so.1 bash compat-tests/vm/release.sh deb "$@"
