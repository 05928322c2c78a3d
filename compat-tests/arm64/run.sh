#!/bin/bash
# compat-tests/arm64: the library and the software-device provider built for
# aarch64-unknown-linux-gnu (cross, from this machine), checked against
# Debian's arm64 packages under qemu-user (issue 11):
#
#   build       DEB_ARCH=arm64 tools/deb.sh (make deb: make lib swrdma
#               cross, RUST_TARGET=aarch64-unknown-linux-gnu
#               CC=aarch64-linux-gnu-gcc) writes the arm64 packages to
#               build/deb/; the parts below test the library and provider
#               unpacked from them (AArch64 ELF; one cross build)
#   symbols:*   compat-tests/symbols with OUR_LIB = our arm64 library and
#               Debian's arm64 libibverbs1 (bookworm) in the union it compares
#               with (trixie's and sid's from their amd64 roots: the version
#               script is the same on every architecture)
#   layout:*    compat-tests/layout against the arm64 libibverbs-dev headers
#               (and sid's, for what grew since 44; not the pinned x86-64
#               provider-ABI numbers of driver.h),
#               every probe compiled by aarch64-linux-gnu-gcc/g++ (clang
#               --target=aarch64-linux-gnu) and run by qemu-aarch64
#   soft:*      compat-tests/soft (SOFT_QUICK=1, no stress repeats): Debian's
#               arm64 ibverbs-utils and perftest, run by qemu-aarch64-static
#               in an arm64 root, on our arm64 library and provider (swr0)
# The arm64 root: `mmdebstrap --arch=arm64 --variant=extract` of bookworm
# with libibverbs1, ibverbs-providers, ibverbs-utils, libibverbs-dev and
# perftest (unpacked, no maintainer scripts: this machine has no binfmt_misc,
# so each arm64 program is started by qemu-aarch64-static -L <root>), cached
# in build/roots/arm64/bookworm.
# Needs: the Rust target (rustup target add aarch64-unknown-linux-gnu),
# gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, qemu-user-static,
# mmdebstrap, dpkg-dev, debhelper, lintian, and libc6:arm64 (dpkg's
# foreign architecture: dpkg-shlibdeps reads it).  ARM64_PARTS="symbols
# layout soft deb" chooses parts.
#   deb         the packages of the build: lintian, no error, no warning;
#               their Architecture
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin arm64 --clean
OUT=$SCRATCH
TARGET=aarch64-unknown-linux-gnu
parts=${ARM64_PARTS:-symbols layout soft deb}
need aarch64-linux-gnu-gcc=gcc-aarch64-linux-gnu aarch64-linux-gnu-g++=g++-aarch64-linux-gnu \
    qemu-aarch64-static=qemu-user-static mmdebstrap=mmdebstrap readelf=binutils
if ! rustup target list --installed 2>/dev/null | grep -qx $TARGET; then
    rustup target add $TARGET >"$OUT/rustup.log" 2>&1 ||
        fail_early prerequisites "the Rust target $TARGET is missing (rustup target add $TARGET)"
fi

# --- cross build: the arm64 packages, and the tests run their binaries -------
# (One cross build: `make deb DEB_ARCH=arm64` runs `make lib swrdma` for the
# target; the library and the provider the parts below test are those the
# packages install, unpacked with dpkg-deb.)
DEBS=$ROOT/build/deb
ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
PKG=$OUT/pkgroot
A=$PKG/usr/lib/aarch64-linux-gnu
unpack() { local p; for p in libibverbs1-rs ibverbs-provider-swrdma; do dpkg-deb -x "$DEBS/${p}_${ver}_arm64.deb" "$PKG" || return 1; done; }
if DEB_ARCH=arm64 bash tools/deb.sh >"$OUT/deb.out" 2>&1 && unpack &&
        readelf -h "$A/libibverbs.so.1" | grep -q 'Machine:.*AArch64' &&
        readelf -h "$A/libibverbs/libswrdma-rdmav34.so" | grep -q 'Machine:.*AArch64'; then
    pass "build (make deb DEB_ARCH=arm64: libibverbs.so.1 and libswrdma-rdmav34.so for AArch64)"
    blog=$ROOT/build/deb-src/arm64/build.log
    if grep -q '^warning' "$blog"; then
        fail "build: no warnings" "$(grep -m3 -A3 '^warning' "$blog" | tr '\n' ' ')"
    else
        pass "build: no warnings"
    fi
else
    fail build "$(tail -n 3 "$OUT/deb.out" | tr '\n' ' ') (log: $OUT/deb.out)"
    finish
fi

R=$ROOT/build/roots/arm64/bookworm
mkdir -p "$(dirname "$R")"
(
    flock 9
    if [ ! -e "$R/.complete" ]; then
        rm -rf "$R" "$R.tmp"
        mmdebstrap --quiet --arch=arm64 --variant=extract \
            --include=libc6,libgcc-s1,libibverbs1,ibverbs-providers,ibverbs-utils,libibverbs-dev,perftest \
            bookworm "$R.tmp" >"$R.log" 2>&1 || exit 1
        mv "$R.tmp" "$R" && touch "$R/.complete"
    fi
) 9>"$(dirname "$R")/.bookworm.lock" || fail_early "arm64 root" "mmdebstrap failed: $(tail -n2 "$R.log" | tr '\n' ' ')"

# Runs a sub-suite and counts its PASS/FAIL/SKIP lines as this suite's, prefixed.
sub() { # PREFIX CMD...
    local prefix=$1 line; shift
    "$@" >"$OUT/$prefix.out" 2>&1
    while IFS= read -r line; do
        case $line in
            "PASS "*) pass "$prefix: ${line#PASS }";;
            "FAIL "*) fail "$prefix: ${line#FAIL }" "";;
            "SKIP "*) skip "$prefix: ${line#SKIP }" "";;
        esac
    done < <(grep -E '^(PASS|FAIL|SKIP) ' "$OUT/$prefix.out")
    grep -qE '^[a-z0-9-]+: [0-9]+ passed' "$OUT/$prefix.out" || fail "$prefix" "no closing line (see $OUT/$prefix.out)"
}

case " $parts " in *" symbols "*)
    up=$(readlink -f "$R/usr/lib/aarch64-linux-gnu/libibverbs.so.1")
    libs=$up
    for r in $(bash compat-tests/roots.sh trixie sid); do libs="$libs $(readlink -f "$r/usr/lib/x86_64-linux-gnu/libibverbs.so.1")"; done
    sub symbols env OUR_LIB="$A/libibverbs.so.1" UPSTREAM_LIB="$up" UPSTREAM_LIBS="$libs" bash compat-tests/symbols/run.sh
;; esac

case " $parts " in *" layout "*)
    # The compilers the layout suite calls, as cross compilers; its probes run under qemu.
    W=$OUT/cross-bin; mkdir -p "$W"
    printf '#!/bin/sh\nexec aarch64-linux-gnu-gcc "$@"\n' >"$W/gcc"
    printf '#!/bin/sh\nexec aarch64-linux-gnu-g++ "$@"\n' >"$W/g++"
    printf '#!/bin/sh\nexec %s --target=aarch64-linux-gnu "$@"\n' "$(command -v clang)" >"$W/clang"
    chmod +x "$W"/*
    # Both passes (sid's headers are the same text on every architecture).
    # Not the provider-ABI facts of driver.h (provider_abi.expected): they
    # are x86-64's numbers (pthread_mutex_t is 40 bytes there, 48 here).
    sub layout env PATH="$W:$PATH" CC=aarch64-linux-gnu-gcc UPSTREAM_INCLUDE="$R/usr/include" LAYOUT_NOCACHE=1 \
        LAYOUT_NO_HOOK=1 LAYOUT_EXEC="qemu-aarch64-static -L /usr/aarch64-linux-gnu" bash compat-tests/layout/run.sh
;; esac

case " $parts " in *" soft "*)
    # Debian's arm64 programs, each started by qemu-aarch64 in the root.
    W=$OUT/arm64-bin; mkdir -p "$W"
    for p in "$R"/usr/bin/ibv_* "$R"/usr/bin/ib_*; do
        printf '#!/bin/sh\nexec qemu-aarch64-static -L %s %s "$@"\n' "$R" "$p" >"$W/$(basename "$p")"
    done
    chmod +x "$W"/*
    sub soft env PATH="$W:$PATH" OUR_LIB="$A/libibverbs.so.1" SOFT_QUICK=1 SOFT_STRESS=0 \
        SOFT_CC=aarch64-linux-gnu-gcc SOFT_EXEC="qemu-aarch64-static -L $R" SOFT_RING_TESTS=0 \
        SOFT_RING_WHY="its multi-threaded stress tests take over 10 min under qemu-user; qemu on x86-64 would not show AArch64's weaker memory ordering anyway" \
        bash compat-tests/soft/run.sh
;; esac
case " $parts " in *" deb "*)
    pass "deb (make deb DEB_ARCH=arm64: $(grep -c '_arm64.deb$' "$OUT/deb.out") packages)"
    lintian --pedantic "$DEBS/libibverbs-rs_${ver}_arm64.changes" >"$OUT/lintian.out" 2>&1
    n=$(grep -cE '^[EW]: ' "$OUT/lintian.out")
    if [ "$n" = 0 ]; then pass "deb: lintian (0 errors, 0 warnings)"
    else fail "deb: lintian" "$n errors/warnings: $(grep -m3 -E '^[EW]: ' "$OUT/lintian.out" | tr '\n' ' ')"; fi
    for p in libibverbs1-rs ibverbs-provider-swrdma; do
        arch=$(dpkg-deb -f "$DEBS/${p}_${ver}_arm64.deb" Architecture)
        [ "$arch" = arm64 ] || fail "deb: $p" "Architecture: $arch"
    done
;; esac
finish
