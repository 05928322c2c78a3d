#!/bin/bash
# The vm-trixie suite: Debian trixie's own userland (ibverbs-utils, perftest,
# rdma-core's Python tests) on Soft-RoCE in the qemu VM, on trixie's libibverbs
# and on ours; see release.sh in compat-tests/vm/ and compat-tests/vm/README.md.
# Known device limits: the *known-upstream-failures.txt files here.
exec bash "$(dirname "$0")/../vm/release.sh" trixie "$@"
