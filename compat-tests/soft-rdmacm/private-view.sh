#!/bin/bash
# soft-rdmacm (CM_WIRE=1): runs a command in a private mount namespace
# (run it under unshare -m, inside the network namespace) where two files
# of the machine read differently; nothing outside the namespace changes.
#   private-view.sh [--localhost ADDR] [--dev NAME] COMMAND [ARGS...]
# (no "--" before COMMAND: soft-rdmacm's pair takes the first "--" for
# the end of the server's command line)
# --localhost ADDR: /etc/hosts (bind-mounted over) says only "ADDR
#   localhost".  fi_pingpong's server has no option for its own address:
#   libfabric's verbs provider binds its passive endpoint to "localhost",
#   an address of lo, which no RoCE device answers for (the kernel's
#   rdma_bind_addr: ENODEV, as ours); so there "localhost" is the address
#   of the namespace's veth, the wire device's.
# --dev NAME: a tmpfs over /dev/infiniband holds NAME -> /dev/null.  UCX
#   uses a verbs device only when stat("/dev/infiniband/<name>") shows a
#   character device it may read and write (see
#   debian/ibverbs-provider-swrdma.tmpfiles, which has swr0 only).
set -u
hosts="" dev=""
while [ $# -gt 0 ]; do
    case $1 in
        --localhost) hosts=$2; shift 2 ;;
        --dev) dev=$2; shift 2 ;;
        --*) echo "private-view.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
if [ -n "$hosts" ]; then
    f=$(mktemp) || exit 3
    printf '%s\tlocalhost\n' "$hosts" >"$f"
    mount --bind "$f" /etc/hosts || exit 3
    rm -f "$f"
fi
if [ -n "$dev" ]; then
    mkdir -p /dev/infiniband 2>/dev/null
    mount -t tmpfs -o mode=0755 none /dev/infiniband && ln -s /dev/null "/dev/infiniband/$dev" || exit 3
fi
exec "$@"
