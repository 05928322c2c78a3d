#!/bin/bash
# Installs what the build and the tests need on a Debian bookworm machine:
# the real upstream pieces we compare against and the tools the suites use.
# Idempotent: does nothing when everything is present.
set -eu
PKGS="libibverbs1 libibverbs-dev ibverbs-utils ibverbs-providers perftest python3-pyverbs pkg-config clang gcc g++ make python3 binutils util-linux dpkg-dev debhelper fakeroot lintian mmdebstrap ucx-utils openmpi-bin libopenmpi-dev libfabric-bin qperf iproute2 rdmacm-utils librdmacm-dev fio"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# install_missing PRE PKG...: installs the PKGs not installed yet, after
# running the command PRE (a function name, or true) when any is missing.
install_missing() {
    local pre=$1 p missing=""; shift
    for p; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
    done
    [ -n "$missing" ] || return 0
    echo "installing:$missing"
    "$pre"
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
}
apt_update() { $SUDO apt-get update -qq; }
# shellcheck disable=SC2086
install_missing apt_update $PKGS
# arm64 (compat-tests/arm64, DEB_ARCH=arm64 make deb): the cross toolchain,
# qemu-user, and the arm64 C runtime that dpkg-shlibdeps reads for the
# packages' dependencies (a foreign architecture of dpkg).
ARM64_PKGS="gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static libc6:arm64 libgcc-s1:arm64"
add_arm64() {
    dpkg --print-foreign-architectures | grep -qx arm64 || { $SUDO dpkg --add-architecture arm64 && apt_update; }
}
# shellcheck disable=SC2086
install_missing add_arm64 $ARM64_PKGS
command -v cargo >/dev/null || { echo "cargo (Rust toolchain) is required: https://rustup.rs" >&2; exit 1; }
# The code-shape checks (compat-tests/structure) need rustfmt and clippy;
# the prototype check (compat-tests/prototypes) needs cbindgen, built from
# crates.io at a pinned version when it is not installed yet.
for c in rustfmt clippy; do
    cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1 ||
        { command -v rustup >/dev/null && rustup component add "$c"; } ||
        echo "warning: cargo $c unavailable (compat-tests/structure will fail)" >&2
done
rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu ||
    rustup target add aarch64-unknown-linux-gnu || echo "warning: no aarch64 Rust target (compat-tests/arm64 will fail)" >&2
CBINDGEN_VERSION=0.29.4
CBINDGEN=$(command -v cbindgen || echo "$HOME/.cargo/bin/cbindgen")
if ! "$CBINDGEN" --version 2>/dev/null | grep -qx "cbindgen $CBINDGEN_VERSION"; then
    echo "installing cbindgen $CBINDGEN_VERSION"
    cargo install --locked --quiet cbindgen --version "$CBINDGEN_VERSION"
fi
