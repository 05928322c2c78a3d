#!/bin/bash
# Boot the Soft-RoCE VM and run a shell script in it (as root, cwd = yours,
# the host's root read-only, this repo at the same path; rxe0 on veth0 =
# 192.0.2.1, rxe1 on veth1 = 192.0.2.2).  Prints the script's stdout/stderr,
# exits with its exit status (125: VM could not start / setup failed,
# 124: hard timeout).
#
#   vm-run.sh SCRIPT            run SCRIPT (or - for stdin)
#   vm-run.sh -c 'COMMANDS'     run COMMANDS
#   vm-run.sh --shell           interactive root shell on the serial console
#                               (Ctrl-A x quits qemu)
#   vm-run.sh --prepare         only fill the cache (download, unpack, build)
#   -v / --verbose              show the guest console live
set -u
. "$(dirname "$0")/lib.sh"
usage() { sed -n '2,15s/^# \{0,1\}//p' "$0" >&2; exit 2; }
mode= script= tmp=
while [ $# -gt 0 ]; do
    case "$1" in
        -v|--verbose) export VM_VERBOSE=1 ;;
        --shell) mode=shell ;;
        --prepare) mode=prepare ;;
        -c) [ $# -ge 2 ] || usage
            tmp=$(mktemp); printf '%s\n' "$2" > "$tmp"; script=$tmp; shift ;;
        -h|--help) usage ;;
        -) tmp=$(mktemp); cat > "$tmp"; script=$tmp ;;
        -*) usage ;;
        *) script=$1 ;;
    esac
    shift
done
[ -n "$tmp" ] && trap 'rm -f "$tmp"' EXIT
case "$mode" in
    prepare) vm_prepare && echo "vm: cache ready: kernel $VM_KVER, $VM_VMLINUX, $VM_INITRD"; exit ;;
    shell) vm_run "" shell; exit ;;
esac
[ -n "$script" ] || usage
[ -r "$script" ] || { echo "vm-run.sh: cannot read $script" >&2; exit 2; }
vm_run "$script"
