#!/bin/bash
# The vm-wire suite; it lives with the other Soft-RoCE VM suites in
# compat-tests/vm/ (see wire.sh there and compat-tests/vm/README.md).
exec bash "$(dirname "$0")/../vm/wire.sh" "$@"
