#!/bin/bash
# fakedev.sh SCRATCH "uverbs0 uverbs1 ..." PROGRAM [ARGS...]
#
# Runs PROGRAM in a private mount namespace whose /dev is a fresh tmpfs with
# the usual character devices bind-mounted back, plus /dev/infiniband/<name>
# for each name given.  Discovery only stat()s /dev/infiniband/uverbsN
# (upstream's try_access_device), so empty files stand in for the char
# devices.  With PROVIDER_OVERLAY=DIR, DIR is also bind-mounted over the
# provider directory (/usr/lib/<multiarch>/libibverbs).
#
# Needs root or unprivileged user namespaces; `fakedev.sh --check` says
# whether either works (exit 0).
set -eu

inner() {
    local scratch=$1 names=$2
    shift 2
    local keep=$scratch/realdev.$$
    mkdir -p "$keep"
    mount --rbind /dev "$keep"
    mount -t tmpfs -o mode=755 tmpfs /dev
    for n in null zero full random urandom tty; do
        if [ -e "$keep/$n" ]; then
            touch "/dev/$n"
            mount --bind "$keep/$n" "/dev/$n"
        fi
    done
    ln -s /proc/self/fd /dev/fd
    ln -s /proc/self/fd/0 /dev/stdin
    ln -s /proc/self/fd/1 /dev/stdout
    ln -s /proc/self/fd/2 /dev/stderr
    mkdir /dev/infiniband
    for n in $names; do
        : > "/dev/infiniband/$n"
    done
    if [ -n "${PROVIDER_OVERLAY:-}" ]; then
        mount --bind "$PROVIDER_OVERLAY" "$PROVIDER_DIR"
    fi
    exec "$@"
}

ns() {
    if [ "$(id -u)" = 0 ]; then
        unshare -m --propagation private "$@"
    else
        unshare -r -m --propagation private "$@"
    fi
}

if [ "${1:-}" = --check ]; then
    ns true 2>/dev/null && ns sh -c 'mount -t tmpfs tmpfs /mnt 2>/dev/null || mount -t tmpfs tmpfs /tmp' 2>/dev/null
    exit $?
fi
if [ "${1:-}" = --inner ]; then
    shift
    inner "$@"
fi

PROVIDER_DIR=${PROVIDER_DIR:-/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/libibverbs}
export PROVIDER_DIR
ns bash "$0" --inner "$@"
