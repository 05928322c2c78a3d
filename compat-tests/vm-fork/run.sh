#!/bin/bash
# The vm-fork suite; it lives with the other Soft-RoCE VM suites in
# compat-tests/vm/ (see fork.sh there and compat-tests/vm/README.md).
exec bash "$(dirname "$0")/../vm/fork.sh" "$@"
