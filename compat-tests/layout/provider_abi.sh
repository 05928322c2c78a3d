#!/bin/bash
# Provider-ABI check: our include/infiniband/driver.h against the rdma-core 44
# facts pinned in provider_abi.expected.  The work (and the one reader of the
# table) is provider_abi.py; see its docstring for the table's key syntax.
#
#   compat-tests/layout/provider_abi.sh           check, one PASS/FAIL line per key
#   compat-tests/layout/provider_abi.sh --print   only print what the probe measures
#
# Environment: OUR_INCLUDE, CC, PROVIDER_ABI_CFLAGS, LAYOUT_QUIET=1.
# Scratch: build/compat-tests/layout/provider_abi/.
. "$(dirname "$0")/../lib.sh"
SUITE=provider_abi
need python3
export OUR_INCLUDE
exec python3 compat-tests/layout/provider_abi.py "$@"
