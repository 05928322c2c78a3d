#!/bin/bash
# The vm-asyncwatch suite; it lives with the other Soft-RoCE VM suites in
# compat-tests/vm/ (see asyncwatch.sh there and compat-tests/vm/README.md).
exec bash "$(dirname "$0")/../vm/asyncwatch.sh" "$@"
