#!/bin/bash
# The vm-fork suite: registered memory across fork() on Soft-RoCE rxe0 inside
# the qemu VM, once on Debian's libibverbs and once on ours
# (LD_LIBRARY_PATH=$(dirname $OUR_LIB)), in ONE boot.  fork-mr.c (compiled
# here, on the host, into build/compat-tests/vm-fork/) registers a buffer,
# connects an RC QP to itself, forks; the child writes its copy of the
# buffer; the parent checks its own is unchanged and RDMA-writes into it
# through the MR (while the child lives and after).  Runs: fork-tests.txt
# (RDMAV_FORK_SAFE=1, ibv_fork_init(), neither, +RDMAV_HUGEPAGES_SAFE; and
# the program built with our headers on ours).  PASS when ours exits like
# upstream with byte-identical output.
#
#   fork.sh               the suite (OUR_LIB, UPSTREAM_LIB, OUR_INCLUDE,
#                         UPSTREAM_INCLUDE as in CONVENTIONS.md)
#   fork.sh --self-check  Debian's library plays "ours" too: all must PASS
set -u
. "$(dirname "$0")/suite-lib.sh"
suite_init vm-fork
OUR_INCLUDE=${OUR_INCLUDE:-include}
UPSTREAM_INCLUDE=${UPSTREAM_INCLUDE:-/usr/include}
[ "${1:-}" = --self-check ] && suite_self_check

suite_need_commands "gcc, iproute2, coreutils, python3" cc rdma ip timeout python3 apt-get dpkg flock
[ -e "$UPSTREAM_INCLUDE/infiniband/verbs.h" ] || fail_early prerequisites "$UPSTREAM_INCLUDE/infiniband/verbs.h missing (libibverbs-dev; make deps)"
suite_need_upstream
suite_lib_dirs

# ---- build fork-mr on the host: with Debian's headers (runs on both
# libraries) and with ours (source compatibility; runs on ours).  Both link
# -libverbs by soname, so LD_LIBRARY_PATH picks the library at run time.
BIN=$PWD/$OUT/bin
mkdir -p "$BIN"
cc -O2 -Wall -Wextra -Werror -I"$UPSTREAM_INCLUDE" -o "$BIN/fork-mr" "$HERE/fork-mr.c" \
    -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 > "$OUT/build.log" 2>&1 ||
    fail_early build "fork-mr.c does not build with Debian's headers: $(head -5 "$OUT/build.log")"
if ! cc -O2 -Wall -Wextra -Werror -I"$OUR_INCLUDE" -o "$BIN/fork-mr-our-headers" "$HERE/fork-mr.c" \
        -L"$(dirname "$UPSTREAM_LIB")" -l:libibverbs.so.1 > "$OUT/build-ours.log" 2>&1; then
    # the runs of the program built with our headers fail (no binary); the
    # reason is in the build log
    rm -f "$BIN/fork-mr-our-headers"
    echo "$SUITE: fork-mr.c does not build with our headers ($OUR_INCLUDE):" >&2
    sed 's/^/  | /' "$OUT/build-ours.log" >&2
fi

suite_run_vm fork-guest.sh 600 BIN="$BIN"
suite_report fork-report.py --tests "$HERE/fork-tests.txt"
