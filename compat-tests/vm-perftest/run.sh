#!/bin/bash
# The vm-perftest suite; it lives with the other Soft-RoCE VM suites in
# compat-tests/vm/ (see perftest.sh there and compat-tests/vm/README.md).
exec bash "$(dirname "$0")/../vm/perftest.sh" "$@"
