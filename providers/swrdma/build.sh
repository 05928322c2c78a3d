#!/bin/sh
# Builds the software RDMA provider and puts it where our libibverbs looks
# for it: next to the library, in build/lib/libibverbs/.
# Usage: providers/swrdma/build.sh [<build dir>]   (default: <repo>/build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
cargo=${CARGO:-cargo}
# RUST_TARGET (from the Makefile): a cross build, linked by $CC.
out=${CARGO_TARGET_DIR:-$here/../../target}
# link against the library of this build (its IBVERBS_PRIVATE_34 versions)
[ -e "$build/lib/libibverbs.so.1" ] && export SWRDMA_LINK_LIBIBVERBS="${SWRDMA_LINK_LIBIBVERBS:-$build/lib/libibverbs.so.1}"
if [ -n "${RUST_TARGET:-}" ]; then
    linker_var=CARGO_TARGET_$(echo "$RUST_TARGET" | tr 'a-z-' 'A-Z_')_LINKER
    export "$linker_var=${CC:-cc}"
    (cd "$here" && "$cargo" build --release -p swrdma -p swrdma-ucma -p swrdma-wired --target "$RUST_TARGET")
    out=$out/$RUST_TARGET/release
else
    (cd "$here" && "$cargo" build --release -p swrdma -p swrdma-ucma -p swrdma-wired)
    out=$out/release
fi
mkdir -p "$build/lib/libibverbs"
cp "$out/libswrdma_rdmav34.so" "$build/lib/libibverbs/libswrdma-rdmav34.so.tmp"
mv "$build/lib/libibverbs/libswrdma-rdmav34.so.tmp" "$build/lib/libibverbs/libswrdma-rdmav34.so"
# rdma_cm on the soft devices: the user-space ucma (LD_PRELOAD) and the
# command that loads it (ucma/swrdma-cm).
cp "$out/libswrdma_ucma.so" "$build/lib/libswrdma-ucma.so.tmp"
mv "$build/lib/libswrdma-ucma.so.tmp" "$build/lib/libswrdma-ucma.so"
mkdir -p "$build/bin"
cp "$here/ucma/swrdma-cm" "$build/bin/swrdma-cm.tmp"
mv "$build/bin/swrdma-cm.tmp" "$build/bin/swrdma-cm"
# The wire device's transport agent (wired/, issue 33: started on demand by
# the provider from ../swrdma/ beside its own directory).
mkdir -p "$build/lib/swrdma"
cp "$out/swrdma-wired" "$build/lib/swrdma/swrdma-wired.tmp"
mv "$build/lib/swrdma/swrdma-wired.tmp" "$build/lib/swrdma/swrdma-wired"
