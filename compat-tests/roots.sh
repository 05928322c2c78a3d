#!/bin/bash
# The userland roots of Debian's newer releases, built from Debian's packages
# and cached: build/roots/<release>/ (override the parent with ROOTS_DIR).
#
#   bash compat-tests/roots.sh trixie sid      build what is missing, print the paths
#   bash compat-tests/roots.sh --rebuild sid   build again
#
# Each root is `mmdebstrap --variant=apt` of the release with the RDMA
# userspace the suites run (ROOT_PKGS), made once and reused: a root is
# complete when its .complete marker exists (written last, with the versions
# of libibverbs1 and ibverbs-providers in it).  sid's Release file may be
# past its Valid-Until date on a mirror snapshot, so validity is not checked.
# Builds of one root are serialised with flock.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
ROOTS_DIR=${ROOTS_DIR:-$REPO/build/roots}
ROOT_PKGS=${ROOT_PKGS:-ibverbs-utils,ibverbs-providers,perftest,python3-pyverbs,rdma-core,rdmacm-utils,iproute2,libibverbs-dev}

rebuild=0
[ "${1:-}" = --rebuild ] && { rebuild=1; shift; }
[ $# -gt 0 ] || { echo "usage: $0 [--rebuild] RELEASE..." >&2; exit 2; }

if ! command -v mmdebstrap >/dev/null; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get install -y -qq --no-install-recommends mmdebstrap >/dev/null ||
        { echo "roots: mmdebstrap is needed (apt-get install mmdebstrap)" >&2; exit 1; }
fi
mkdir -p "$ROOTS_DIR"
for rel in "$@"; do
    case $rel in *[!a-z0-9-]*|'') echo "roots: bad release name '$rel'" >&2; exit 2;; esac
    dir=$ROOTS_DIR/$rel
    (
        flock 9
        if [ $rebuild = 1 ] || [ ! -e "$dir/.complete" ]; then
            rm -rf "$dir" "$dir.tmp"
            echo "roots: building $rel (mmdebstrap, about 30 s and 400 MB)" >&2
            if ! mmdebstrap --quiet --variant=apt \
                    --aptopt='Acquire::Check-Valid-Until "false"' \
                    --include="$ROOT_PKGS" "$rel" "$dir.tmp" >"$ROOTS_DIR/$rel.log" 2>&1; then
                echo "roots: mmdebstrap $rel failed; see $ROOTS_DIR/$rel.log" >&2
                tail -5 "$ROOTS_DIR/$rel.log" >&2
                rm -rf "$dir.tmp"
                exit 1
            fi
            mv "$dir.tmp" "$dir"
            dpkg-query --admindir="$dir/var/lib/dpkg" -W libibverbs1 ibverbs-providers >"$dir/.complete"
        fi
    ) 9>"$ROOTS_DIR/.$rel.lock" || exit 1
    echo "$dir"
done
