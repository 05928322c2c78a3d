#!/bin/bash
# `make deb`: the Debian binary packages of this tree, built with Debian's
# tooling (dpkg-buildpackage + debhelper, debian/) from a copy of the tree
# in build/deb-src/, written to build/deb/ (the .debs and the .buildinfo/.changes).
#
#   tools/deb.sh                 packages for this machine's architecture
#   DEB_ARCH=arm64 tools/deb.sh  cross-built arm64 packages (needs the Rust
#                                target aarch64-unknown-linux-gnu and
#                                gcc-aarch64-linux-gnu)
#   DEB_OUT=DIR                  another output directory (default build/deb)
#   DEB_SRC_DIR=DIR              where the copy of the tree is built
#                                (default build/deb-src/<arch>)
#   DEB_VERSION=V                build as version V (an entry on top of
#                                debian/changelog in the copy; for upgrade tests)
# The copy lives at a fixed path, so two builds of one commit are byte-identical
# (the date comes from debian/changelog: SOURCE_DATE_EPOCH).
set -eu
cd "$(dirname "$0")/.."
REPO=$PWD
arch=${DEB_ARCH:-$(dpkg --print-architecture)}
out=${DEB_OUT:-$REPO/build/deb}
# Debian's packaging tools, installed when missing (as `make demo` and
# `make test` install what they need): apt-get as root, else through sudo.
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
    SUDO=
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    echo "deb: installing the build dependencies (dpkg-dev debhelper)"
    $SUDO apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends dpkg-dev debhelper ||
        { echo "deb: could not install dpkg-dev and debhelper (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
fi
for t in dpkg-buildpackage dh; do
    command -v $t >/dev/null || { echo "deb: $t is missing (apt-get install dpkg-dev debhelper)" >&2; exit 1; }
done
work=${DEB_SRC_DIR:-$REPO/build/deb-src/$arch}
case $work in /*) ;; *) work=$REPO/$work;; esac
case $out in /*) ;; *) out=$REPO/$out;; esac
src=$work/libibverbs-rs
rm -rf "$src"; mkdir -p "$src" "$out"
# The tree as git sees it (tracked and new files; nothing ignored, no build output).
git ls-files -z --cached --others --exclude-standard | grep -zv '^fuzz/' |
    (cd "$REPO" && xargs -0 cp --parents -t "$src" 2>/dev/null) || true
[ -f "$src/debian/control" ] || { echo "deb: copying the tree failed" >&2; exit 1; }
if [ -n "${DEB_VERSION:-}" ]; then
    { printf 'libibverbs-rs (%s) unstable; urgency=medium\n\n  * Rebuild as %s.\n\n' "$DEB_VERSION" "$DEB_VERSION"
      printf ' -- %s  %s\n\n' "$(dpkg-parsechangelog -l "$src/debian/changelog" -S Maintainer)" \
          "$(dpkg-parsechangelog -l "$src/debian/changelog" -S Date)"
      cat "$src/debian/changelog"; } >"$src/debian/changelog.new"
    mv "$src/debian/changelog.new" "$src/debian/changelog"
fi
# A cross build needs its linker and the Rust target.
flags=(-us -uc -b)
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    flags+=(-a"$arch" -d)
fi
log=$work/build.log
echo "deb: building $arch packages (log: $log)"
if ! (cd "$src" && dpkg-buildpackage "${flags[@]}") >"$log" 2>&1; then
    tail -n 30 "$log"; echo "deb: dpkg-buildpackage failed (log: $log)" >&2; exit 1
fi
ver=$(cd "$src" && dpkg-parsechangelog -S Version)
rm -f "$out"/*_"$arch".deb "$out"/*_"$ver"_"$arch".changes "$out"/*_"$ver"_"$arch".buildinfo
mv "$work"/*_"$ver"_*.deb "$work"/*_"$ver"_"$arch".changes "$work"/*_"$ver"_"$arch".buildinfo "$out"/
ls -1 "$out"/*_"$ver"_*"$arch".deb
