#!/bin/bash
# compat-tests/deb: the Debian packages (`make deb`, debian/) and their
# installation in place of Debian's libibverbs1 (issue 11).
#
#   build           tools/deb.sh writes libibverbs1-rs and
#                   ibverbs-provider-swrdma (+ -dbgsym) to build/deb/
#   lintian         no error and no warning (pedantic tags are information)
#   symbols         debian/libibverbs1-rs.symbols lists exactly what the packaged
#                   library exports, each with its first Debian version
#   reproducible    a second build from another copy of the tree, at another
#                   path, gives byte-identical .debs (DEB_REPRO=0: skipped,
#                   as make test does for its time)
#   <release>:...   in a copy of a clean root of Debian <release> made with
#                   mmdebstrap from Debian's packages, with the RDMA userspace
#                   installed first (libibverbs1 and everything above it:
#                   ibverbs-providers, librdmacm1, ibverbs-utils, perftest,
#                   python3-pyverbs, libucx0, libfabric1, qperf, Open MPI,
#                   libibverbs-dev), run by chroot:
#       install     `apt-get install ./our .debs` replaces Debian's
#                   libibverbs1 and removes nothing else: Debian's
#                   libibverbs-dev stays (libibverbs1-rs provides its exact
#                   libibverbs1 dependency)
#       ldconfig    libibverbs.so.1 resolves to our file (dpkg -V clean)
#       bind        Debian's tools and libraries (ibv_devinfo, librdmacm,
#                   libfabric, UCX's IB transport, Open MPI) bind ours with
#                   no environment variable
#       dev         what Debian's libibverbs-dev gives a developer
#                   (devcheck.sh: headers, direct-verbs headers, pkg-config
#                   of libibverbs/libmlx5/libmlx4/libefa/libmana, a program
#                   built with them, static link, man pages of sections 3
#                   and 7): the same lines before and after ours; the
#                   program built after runs on ours and lists swr0
#       dev-again   Debian's libibverbs-dev removed and installed again
#                   beside ours: apt keeps ours, the dev lines stay the same
#       soft        RDMAV_SOFT_DEVICES=swr0 ibv_devinfo, and an RC pingpong
#                   on swr0, from the installed system
#       pyverbs     Debian's python3-pyverbs lists swr0
#       standin     `apt-get install ./ibverbs-standin_*.deb`, then
#                   `ibv-standin --device efa -- ibv_devinfo -v` with no other
#                   step: on Debian's libibverbs1 (before ours) and on ours
#                   (after); the package is purged again afterwards
#       upgrade     a later version of ours (the same build repacked with
#                   a later version) installs over this one
#       back        Debian's own libibverbs1 of the release reinstalled:
#                   the package set is exactly as before ours,
#                   dpkg -V is clean and no file of ours is left
# Releases: bookworm (this machine's; its own root for this suite, cached
# under build/roots/deb/), trixie and sid (the roots of compat-tests/roots.sh,
# which carry the RDMA userspace without UCX, libfabric, qperf and Open MPI).
# The copies of the roots get gcc, libc6-dev, pkgconf and man-db from the
# release's mirror first (for dev; part of "before").
# Needs root (chroot, mount), mmdebstrap, dpkg-dev, debhelper, lintian.
# Follows compat-tests/CONVENTIONS.md.
set -u
. "$(dirname "$0")/../lib.sh"
# DEB_REUSE=1 (for working on this suite): reuse build/deb and the upgrade
# build of the last run; no build, lintian, symbols or reproducibility checks.
if [ "${DEB_REUSE:-0}" = 1 ]; then suite_begin deb; else suite_begin deb --clean; fi
need dpkg-buildpackage=dpkg-dev dh=debhelper lintian mmdebstrap=mmdebstrap chroot mount cmp
[ "$(id -u)" = 0 ] || fail_early prerequisites "needs root (chroot)"
OUT=$SCRATCH
DEBS=$ROOT/build/deb
arch=$(dpkg --print-architecture)

MNT=()
cleanup() { local i; for ((i = ${#MNT[@]} - 1; i >= 0; i--)); do umount -l "${MNT[$i]}" 2>/dev/null; done; }
trap cleanup EXIT

# --- build, lintian, symbols, reproducibility ------------------------------
if [ "${DEB_REUSE:-0}" = 1 ]; then
    skip build "DEB_REUSE=1"
elif bash tools/deb.sh >"$OUT/build.out" 2>&1; then
    pass build
else
    fail build "$(tail -n 3 "$OUT/build.out" | tr '\n' ' ')"
    finish
fi
ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
pkgs=(libibverbs1-rs ibverbs-provider-swrdma)
files=()
for p in "${pkgs[@]}"; do files+=("$DEBS/${p}_${ver}_$arch.deb"); done

rm -rf "$OUT/x"; mkdir -p "$OUT/x"
dpkg-deb -x "${files[0]}" "$OUT/x"
if [ "${DEB_REUSE:-0}" != 1 ]; then
lintian --pedantic --display-info "$DEBS/libibverbs-rs_${ver}_$arch.changes" >"$OUT/lintian.out" 2>&1
errs=$(grep -c '^E: ' "$OUT/lintian.out"); warns=$(grep -c '^W: ' "$OUT/lintian.out")
if [ "$errs" = 0 ] && [ "$warns" = 0 ]; then
    pass "lintian (0 errors, 0 warnings; $(grep -cE '^[IPX]: ' "$OUT/lintian.out") information tags)"
else
    fail lintian "$errs errors, $warns warnings"; grep -E '^[EW]: ' "$OUT/lintian.out" | sed 's/^/    /'
fi

if bash tools/deb-symbols.sh --check "$(ls "$OUT"/x/usr/lib/*/libibverbs.so.1)" >"$OUT/symbols.out" 2>&1; then
    pass "symbols ($(grep -c '^ ' debian/libibverbs1-rs.symbols) entries)"
else
    fail symbols "debian/libibverbs1-rs.symbols differs from the library (tools/deb-symbols.sh)"; sed 's/^/    /' "$OUT/symbols.out" | head -20
fi

if [ "${DEB_REPRO:-1}" = 0 ]; then
    skip reproducible "DEB_REPRO=0 (make test, for its time: a second full package build, ~1.5 min)"
elif DEB_SRC_DIR=$OUT/second-build DEB_OUT=$OUT/deb2 bash tools/deb.sh >"$OUT/build2.out" 2>&1; then
    diffs=""
    for f in "$DEBS"/*_"${ver}"_"$arch".deb; do
        cmp -s "$f" "$OUT/deb2/$(basename "$f")" || diffs="$diffs $(basename "$f")"
    done
    if [ -z "$diffs" ]; then pass "reproducible ($(ls "$DEBS"/*_"${ver}"_"$arch".deb | wc -l) .debs identical from two trees)"
    else fail reproducible "differ:$diffs"; fi
else
    fail reproducible "second build failed: $(tail -n 2 "$OUT/build2.out" | tr '\n' ' ')"
fi
fi
# A later version, for the upgrade check: the packages just built, each
# repacked (dpkg-deb -R / -b) with the later version in its control file
# (Version and the exact-version relations between our packages).  What
# the check is about is dpkg's and apt's upgrade of our packages (their
# relations, conffiles and maintainer scripts, file hand-over), which the
# binaries' bytes do not change; a third build from source would cost
# minutes for nothing more.
up_ver="$ver+upgradetest"
repack_later() { # FROM-DIR TO-DIR
    local f d name re
    re=$(printf '%s' "$ver" | sed 's/[.+~]/\\&/g')
    rm -rf "$2"; mkdir -p "$2"
    for f in "$1"/*_"${ver}"_"$arch".deb; do
        [ -e "$f" ] || return 1
        d=$(mktemp -d "$OUT/repack.XXXXXX")
        dpkg-deb -R "$f" "$d/pkg" || return 1
        sed -i -E "s/^Version: $re\$/Version: $up_ver/; s/\(= $re\)/(= $up_ver)/g" "$d/pkg/DEBIAN/control"
        grep -qx "Version: $up_ver" "$d/pkg/DEBIAN/control" || return 1
        name=$(basename "$f" "_${ver}_$arch.deb")
        dpkg-deb -b "$d/pkg" "$2/${name}_${up_ver}_$arch.deb" >/dev/null || return 1
        rm -rf "$d"
    done
}
[ "${DEB_REUSE:-0}" = 1 ] || repack_later "$DEBS" "$OUT/deb-up" >"$OUT/build-up.out" 2>&1 ||
    echo "upgrade repack failed" >>"$OUT/build-up.out"

# --- installation in a release's root ---------------------------------------
RDMA_PKGS=ibverbs-providers,librdmacm1,ibverbs-utils,perftest,python3-pyverbs,libucx0,libfabric1,qperf,libopenmpi3,rdmacm-utils,libibverbs-dev,iproute2

in_root() { # ROOT CMD...: a clean environment, no LD_LIBRARY_PATH
    local r=$1; shift
    chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
        DEBIAN_FRONTEND=noninteractive "$@"
}
pkgset() { in_root "$1" dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' | awk '$1 ~ /^.i/ { print $2, $3 }' | sort; }

# dev_lines ROOT: devcheck.sh's lines in ROOT (a fresh build each time)
dev_lines() {
    local d=$1/tmp/devcheck
    rm -rf "$d"; mkdir -p "$d"
    cp "$ROOT/compat-tests/deb/devcheck.c" "$ROOT/compat-tests/deb/devcheck.sh" "$d/"
    in_root "$1" sh -c 'cd /tmp/devcheck && sh devcheck.sh' 2>&1
}
# dev_test RELEASE ROOT PHASE: the lines as before ours, the program built
# now runs on ours (swr0 listed)
dev_test() {
    local rel=$1 r=$2 phase=$3 name=dev
    [ "$phase" = again ] && name=dev-again
    dev_lines "$r" >"$OUT/$rel-dev-$phase.txt"
    local d; d=$(diff "$OUT/$rel-dev-before.txt" "$OUT/$rel-dev-$phase.txt" | grep '^[<>]' | head -6 | tr '\n' ' ')
    if [ -n "$d" ]; then
        fail "$rel: $name" "differs from before ours: $d"
    elif ! grep -q '^compile: ok' "$OUT/$rel-dev-$phase.txt" || grep -q '^man .*: *$\|^man .*No manual' "$OUT/$rel-dev-$phase.txt"; then
        fail "$rel: $name" "as before, but not usable: $(grep -E '^compile|^man .*(No manual|: *$)' "$OUT/$rel-dev-$phase.txt" | head -3 | tr '\n' ' ')"
    elif ! in_root "$r" env RDMAV_SOFT_DEVICES=swr0 /tmp/devcheck/devcheck >"$OUT/$rel-devrun-$phase.out" 2>&1 ||
            ! grep -q '^swr0 mlx5dv_is_supported=0$' "$OUT/$rel-devrun-$phase.out"; then
        fail "$rel: $name" "the program built with Debian's libibverbs-dev over ours: $(head -c 200 "$OUT/$rel-devrun-$phase.out" | tr '\n' ' ')"
    else
        pass "$rel: $name ($(grep -c . "$OUT/$rel-dev-$phase.txt") lines as before ours: $(grep -oE '^(compile|static): [a-z]+' "$OUT/$rel-dev-$phase.txt" | tr '\n' ' ')$(grep -c '^man .*/man' "$OUT/$rel-dev-$phase.txt") man pages found, $(grep -o 'libibverbs-dev: [0-9]*' "$OUT/$rel-dev-$phase.txt" | cut -d' ' -f2) in section 3; built program lists swr0)"
    fi
}

# standin_test RELEASE ROOT PHASE: the ibverbs-standin package installed
# by apt in ROOT and its command run with nothing else done: efa's device
# on whichever libibverbs1 ROOT has (Debian's before ours, ours after)
STANDIN_DEB=$DEBS/ibverbs-standin_${ver}_$arch.deb
standin_test() {
    local rel=$1 r=$2 phase=$3 o lib
    o=$OUT/$rel-standin-$phase.out
    if [ ! -e "$STANDIN_DEB" ]; then
        fail "$rel: standin ($phase ours)" "no $(basename "$STANDIN_DEB") was built"
        return
    fi
    if ! in_root "$r" apt-get install -y -q "/debs/standin/$(basename "$STANDIN_DEB")" >"$o" 2>&1; then
        fail "$rel: standin ($phase ours)" "apt-get install: $(tail -n 2 "$o" | tr '\n' ' ')"
        return
    fi
    lib=$(in_root "$r" sh -c 'readlink -f "$(ldconfig -p | awk '"'"'$1 == "libibverbs.so.1" { print $NF; exit }'"'"')" | xargs dpkg -S' 2>/dev/null | cut -d: -f1)
    if in_root "$r" ibv-standin --device efa -- ibv_devinfo -v >"$o.run" 2>&1 &&
            grep -q 'hca_id:[[:space:]]*efa_0' "$o.run" && grep -q 'vendor_part_id:[[:space:]]*61344' "$o.run" &&
            grep -q 'max_qp:' "$o.run"; then
        pass "$rel: standin ($phase ours: apt-get install ./ibverbs-standin, then ibv-standin --device efa -- ibv_devinfo -v on $lib's library: efa_0, $(grep -c . "$o.run") lines)"
    else
        fail "$rel: standin ($phase ours)" "ibv-standin --device efa -- ibv_devinfo -v: $(head -c 300 "$o.run" | tr '\n' ' ')"
    fi
}

install_test() { # RELEASE CACHED_ROOT DEBIAN_DEB_DIR
    local rel=$1 cached=$2 back=$3 r t
    r=$OUT/root-$rel
    rm -rf "$r"; cp -a "$cached" "$r" || { fail "$rel: root" "cannot copy $cached"; return; }
    mount -t proc proc "$r/proc" && MNT+=("$r/proc")
    mount -t tmpfs tmpfs "$r/tmp" && MNT+=("$r/tmp")
    # a /dev of its own (tmpfs with the host's basic nodes bound in): what
    # the packages' scripts create there (ibverbs-provider-swrdma's
    # tmpfiles link /dev/infiniband/swr0) stays in the test root
    mount -t tmpfs -o mode=755 tmpfs "$r/dev" && MNT+=("$r/dev")
    local n
    for n in null zero full random urandom tty; do
        touch "$r/dev/$n" && mount --bind "/dev/$n" "$r/dev/$n" && MNT+=("$r/dev/$n")
    done
    mkdir -p "$r/dev/pts" && mount --bind /dev/pts "$r/dev/pts" 2>/dev/null && MNT+=("$r/dev/pts")
    cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null
    mkdir -p "$r/debs/ours" "$r/debs/up" "$r/debs/debian"
    cp "${files[@]}" "$r/debs/ours/"
    for p in "${pkgs[@]}"; do cp "$OUT/deb-up/${p}_${up_ver}_$arch.deb" "$r/debs/up/" 2>/dev/null; done
    cp "$back"/*.deb "$r/debs/debian/" 2>/dev/null
    mkdir -p "$r/debs/standin"; cp "$STANDIN_DEB" "$r/debs/standin/" 2>/dev/null

    # a developer's tools, from the release's mirror (part of "before")
    if ! in_root "$r" sh -c 'apt-get update -q -o Acquire::Check-Valid-Until=false &&
            apt-get install -y -q --no-install-recommends gcc libc6-dev pkgconf man-db' >"$OUT/$rel-tools.out" 2>&1; then
        fail "$rel: root" "cannot install gcc, libc6-dev, pkgconf, man-db: $(tail -n 2 "$OUT/$rel-tools.out" | tr '\n' ' ')"
        return
    fi
    local before after libpath
    before=$(pkgset "$r")
    local debver; debver=$(echo "$before" | awk '$1 == "libibverbs1" { print $2 }')
    local devver; devver=$(echo "$before" | awk '$1 == "libibverbs-dev" { print $2 }')
    dev_lines "$r" >"$OUT/$rel-dev-before.txt"
    standin_test "$rel" "$r" before

    # install
    if ! dpkg-deb -f "${files[0]}" Provides | grep -qF "libibverbs1 (= $debver)"; then
        fail "$rel: install" "Debian's libibverbs-dev $devver wants libibverbs1 (= $debver), which libibverbs1-rs does not provide: add it to Provides in debian/control"
        return
    fi
    if in_root "$r" apt-get install -y -q /debs/ours/libibverbs1-rs_"$ver"_"$arch".deb \
            /debs/ours/ibverbs-provider-swrdma_"$ver"_"$arch".deb \
            >"$OUT/$rel-install.out" 2>&1; then
        after=$(pkgset "$r")
        local removed; removed=$(comm -23 <(echo "$before" | awk '{print $1}') <(echo "$after" | awk '{print $1}') | tr '\n' ' ')
        local v1; v1=$(echo "$after" | awk '$1 == "libibverbs1-rs" { print $2 }')
        local dv; dv=$(echo "$after" | awk '$1 == "libibverbs-dev" { print $2 }')
        if [ "$removed" != "libibverbs1 " ]; then fail "$rel: install" "removed: '$removed' (expected: libibverbs1 alone)"
        elif [ "$v1" != "$ver" ]; then fail "$rel: install" "libibverbs1-rs is '$v1', not $ver"
        elif [ "$dv" != "$devver" ]; then fail "$rel: install" "Debian's libibverbs-dev $devver is now '$dv'"
        else pass "$rel: install (replaces Debian's libibverbs1 $debver, keeps its libibverbs-dev $devver, removes nothing else, $(($(echo "$before" | wc -l) - 1)) packages kept)"; fi
    else
        fail "$rel: install" "apt-get failed: $(tail -n 3 "$OUT/$rel-install.out" | tr '\n' ' ')"
        return
    fi

    # ldconfig resolves to ours, our files intact
    libpath=$(in_root "$r" ldconfig -p | awk '$1 == "libibverbs.so.1" && /x86-64|AArch64/ { print $NF; exit }')
    t=$(in_root "$r" readlink -f "$libpath")
    if [ -n "$libpath" ] && in_root "$r" dpkg -S "$t" 2>/dev/null | grep -q "^libibverbs1-rs:" &&
            [ -z "$(in_root "$r" dpkg -V libibverbs1-rs libibverbs-dev ibverbs-provider-swrdma)" ] &&
            cmp -s "$r$t" "$(ls "$OUT"/x/usr/lib/*/libibverbs.so.1.*)"; then
        pass "$rel: ldconfig ($libpath -> $t, ours)"
    else
        fail "$rel: ldconfig" "libibverbs.so.1 -> '$t', not our packaged file"
    fi

    dev_test "$rel" "$r" after
    # Debian's libibverbs-dev goes and comes back beside ours
    if in_root "$r" sh -c "apt-get remove -y -q libibverbs-dev && apt-get install -y -q /debs/debian/libibverbs-dev_*.deb" \
            >"$OUT/$rel-dev-again.out" 2>&1 &&
            [ "$(pkgset "$r" | awk '$1 == "libibverbs1-rs" || $1 == "libibverbs-dev" { print $1, $2 }' | tr '\n' ' ')" = \
              "libibverbs-dev $devver libibverbs1-rs $ver " ]; then
        dev_test "$rel" "$r" again
    else
        fail "$rel: dev-again" "$(pkgset "$r" | grep -E '^libibverbs(1|1-rs|-dev) ' | tr '\n' ' ') $(tail -n 2 "$OUT/$rel-dev-again.out" | tr '\n' ' ')"
    fi

    # Debian's programs and libraries bind ours without any environment
    local bad="" obj
    local objs n=0
    objs=$(in_root "$r" sh -c 'ls /usr/bin/ibv_devinfo /usr/bin/ib_write_bw /usr/bin/qperf /usr/bin/rping \
        /usr/lib/*/librdmacm.so.1 /usr/lib/*/libfabric.so.1 /usr/lib/*/ucx/libuct_ib.so.0 \
        /usr/lib/*/openmpi/lib/openmpi3/mca_btl_openib.so /usr/lib/python3/dist-packages/pyverbs/device.*.so 2>/dev/null')
    for obj in $objs; do
        n=$((n + 1))
        t=$(in_root "$r" ldd "$obj" 2>&1 | awk '$1 == "libibverbs.so.1" { print $3 }')
        [ -n "$t" ] && [ "$(in_root "$r" readlink -f "$t")" = "$(in_root "$r" readlink -f "$libpath")" ] || bad="$bad $obj(${t:-none})"
    done
    if [ -z "$bad" ] && [ $n -ge 4 ]; then pass "$rel: bind ($n programs and libraries resolve libibverbs.so.1 to ours: $(echo $objs | xargs -n1 basename | tr '\n' ' '))"
    else fail "$rel: bind" "not ours:$bad"; fi

    # the software device from the installed system
    if in_root "$r" env RDMAV_SOFT_DEVICES=swr0 ibv_devinfo -d swr0 >"$OUT/$rel-devinfo.out" 2>&1 &&
            grep -q 'hca_id:[[:space:]]*swr0' "$OUT/$rel-devinfo.out"; then
        local port=$((19000 + RANDOM % 1000))
        in_root "$r" env RDMAV_SOFT_DEVICES=swr0 timeout 30 ibv_rc_pingpong -d swr0 -g 1 -p $port >"$OUT/$rel-pp-server.out" 2>&1 &
        local spid=$!
        sleep 1
        in_root "$r" env RDMAV_SOFT_DEVICES=swr0 timeout 30 ibv_rc_pingpong -d swr0 -g 1 -p $port 127.0.0.1 >"$OUT/$rel-pp-client.out" 2>&1
        local crc=$?; wait $spid; local src=$?
        if [ $crc = 0 ] && [ $src = 0 ]; then pass "$rel: soft (ibv_devinfo -d swr0, ibv_rc_pingpong on swr0: $(grep -m1 -o '[0-9.]* Mbit/sec' "$OUT/$rel-pp-client.out"))"
        else fail "$rel: soft" "ibv_rc_pingpong exit server $src client $crc: $(tail -n1 "$OUT/$rel-pp-client.out")"; fi
    else
        fail "$rel: soft" "ibv_devinfo -d swr0: $(tail -n2 "$OUT/$rel-devinfo.out" | tr '\n' ' ')"
    fi
    if in_root "$r" env RDMAV_SOFT_DEVICES=swr0 python3 -c 'import pyverbs.device as d; print([x.name.decode() for x in d.get_device_list()])' \
            >"$OUT/$rel-pyverbs.out" 2>&1 && grep -q "'swr0'" "$OUT/$rel-pyverbs.out"; then
        pass "$rel: pyverbs (get_device_list: $(cat "$OUT/$rel-pyverbs.out"))"
    else
        fail "$rel: pyverbs" "$(tail -n1 "$OUT/$rel-pyverbs.out")"
    fi

    standin_test "$rel" "$r" after
    in_root "$r" dpkg --purge ibverbs-standin >>"$OUT/$rel-standin-after.out" 2>&1

    # upgrade to a later build of ours
    if [ -e "$r/debs/up/libibverbs1-rs_${up_ver}_$arch.deb" ]; then
        if in_root "$r" sh -c "apt-get install -y -q /debs/up/*.deb" >"$OUT/$rel-upgrade.out" 2>&1 &&
                [ "$(pkgset "$r" | awk '$1 == "libibverbs1-rs" { print $2 }')" = "$up_ver" ] &&
                [ "$(comm -23 <(echo "$before" | awk '{print $1}') <(pkgset "$r" | awk '{print $1}'))" = libibverbs1 ] &&
                [ -z "$(in_root "$r" dpkg -V libibverbs1-rs libibverbs-dev ibverbs-provider-swrdma)" ] &&
                in_root "$r" env RDMAV_SOFT_DEVICES=swr0 ibv_devices >/dev/null 2>&1; then
            pass "$rel: upgrade ($ver -> $up_ver)"
        else
            fail "$rel: upgrade" "$(tail -n 3 "$OUT/$rel-upgrade.out" | tr '\n' ' ')"
        fi
    else
        fail "$rel: upgrade" "no build of $up_ver ($(tail -n1 "$OUT/build-up.out"))"
    fi

    # back to Debian's library
    if ! ls "$r"/debs/debian/libibverbs1_*.deb >/dev/null 2>&1; then
        skip "$rel: back" "Debian's libibverbs1 $debver .deb not available here"
        return
    fi
    in_root "$r" sh -c "apt-get install -y -q /debs/debian/libibverbs1_*.deb && dpkg --purge ibverbs-provider-swrdma libibverbs1-rs" \
        >"$OUT/$rel-back.out" 2>&1
    after=$(pkgset "$r")
    local left="" f
    for f in $(for d in "${files[@]}"; do dpkg-deb -c "$d"; done | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' | sort -u); do
        [ -e "$r$f" ] || [ -L "$r$f" ] || continue
        in_root "$r" dpkg -S "$f" >/dev/null 2>&1 || { left="$left $f"; continue; }
    done
    if [ "$after" = "$before" ] && [ -z "$left" ] && [ -z "$(in_root "$r" dpkg -V libibverbs1 libibverbs-dev)" ] &&
            in_root "$r" dpkg -S "$(in_root "$r" readlink -f "$libpath")" | grep -q '^libibverbs1:'; then
        pass "$rel: back (Debian's $debver again; package set as before, no file of ours left)"
    else
        fail "$rel: back" "package set differs: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | tr '\n' ' ') left:$left"
    fi
}

# bookworm: this machine's release; its own root with the whole RDMA userspace
if bk=$(ROOTS_DIR=$ROOT/build/roots/deb ROOT_PKGS=$RDMA_PKGS bash compat-tests/roots.sh bookworm 2>"$OUT/root-bookworm.err"); then
    mkdir -p "$OUT/debian-bookworm"
    v=$(dpkg-query --admindir="$bk/var/lib/dpkg" -W -f '${Version}' libibverbs1)
    (cd "$OUT/debian-bookworm" && apt-get download -q "libibverbs1=$v" "libibverbs-dev=$v") >"$OUT/debian-bookworm.out" 2>&1
    install_test bookworm "$bk" "$OUT/debian-bookworm"
else
    fail "bookworm: root" "$(tail -n2 "$OUT/root-bookworm.err" | tr '\n' ' ')"
fi

# trixie and sid: the roots of the generation suites; Debian's .debs of the
# release fetched by a copy of the root's own apt
for rel in trixie sid; do
    if rr=$(bash compat-tests/roots.sh $rel 2>"$OUT/root-$rel.err"); then
        mkdir -p "$OUT/debian-$rel"
        v=$(dpkg-query --admindir="$rr/var/lib/dpkg" -W -f '${Version}' libibverbs1)
        tr=$OUT/fetch-$rel; rm -rf "$tr"; cp -a "$rr" "$tr" && cp /etc/resolv.conf "$tr/etc/resolv.conf" &&
            chroot "$tr" sh -c "apt-get update -q -o Acquire::Check-Valid-Until=false && mkdir -p /fetch && cd /fetch && apt-get download -q libibverbs1=$v libibverbs-dev=$v" \
                >"$OUT/debian-$rel.out" 2>&1 && cp "$tr"/fetch/*.deb "$OUT/debian-$rel/"
        rm -rf "$tr"
        install_test $rel "$rr" "$OUT/debian-$rel"
    else
        fail "$rel: root" "$(tail -n2 "$OUT/root-$rel.err" | tr '\n' ' ')"
    fi
done
cleanup; MNT=()
rm -rf "$OUT"/root-*
finish
