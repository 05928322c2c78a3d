#!/bin/bash
# The vm-pyverbs suite; it lives with the other Soft-RoCE VM suites in
# compat-tests/vm/ (see pyverbs.sh there and compat-tests/vm/README.md).
exec bash "$(dirname "$0")/../vm/pyverbs.sh" "$@"
