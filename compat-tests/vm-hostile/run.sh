#!/bin/bash
# The vm-hostile suite: the rxe half of wire-hostile (the same hostile
# packets at the kernel's rxe in the qemu VM, answers compared with rw0's
# from the host suite's last run); it lives with the other Soft-RoCE VM
# suites in compat-tests/vm/ (see hostile.sh there).  Runs after wire-hostile.
exec bash "$(dirname "$0")/../vm/hostile.sh" "$@"
