#!/bin/sh
# Builds the software RDMA provider and puts it where our libibverbs looks
# for it: next to the library, in build/lib/libibverbs/.
# Usage: providers/swrdma/build.sh [<build dir>]   (default: <repo>/build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
cargo=${CARGO:-cargo}
(cd "$here" && "$cargo" build --release -p swrdma)
mkdir -p "$build/lib/libibverbs"
cp "$here/../../target/release/libswrdma_rdmav34.so" "$build/lib/libibverbs/libswrdma-rdmav34.so.tmp"
mv "$build/lib/libibverbs/libswrdma-rdmav34.so.tmp" "$build/lib/libibverbs/libswrdma-rdmav34.so"
