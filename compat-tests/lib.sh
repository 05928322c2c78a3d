# shellcheck shell=bash
# What every host suite's run.sh shares (compat-tests/CONVENTIONS.md).  The
# VM suites have their own, compat-tests/vm/suite-lib.sh.
#
#   . "$(dirname "$0")/../lib.sh"     moves to the repository root ($ROOT)
#   suite_begin SUITE [--clean]       SUITE (the name on the closing line),
#                                     SCRATCH ($ROOT/build/compat-tests/SUITE,
#                                     created; --clean: emptied first)
#
# Environment defaults (set when unset or empty, not exported):
#   OUR_LIB           build/lib/libibverbs.so.1
#   UPSTREAM_LIB      /usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0
#   OUR_INCLUDE       include
#   UPSTREAM_INCLUDE  /usr/include
#
# Results:
#   pass NAME                 PASS NAME
#   fail NAME WHY             FAIL NAME: WHY
#   skip NAME WHY             SKIP NAME: WHY
#   finish                    the closing line "SUITE: N passed, N failed,
#                             N skipped", exit 0 only when nothing failed
#   fail_early NAME WHY       fail NAME WHY, then finish
#   need WHAT...              fail_early "prerequisites" naming every WHAT
#                             this machine lacks.  WHAT is a command
#                             ("readelf") or a path (has a '/': must
#                             exist), each optionally followed by
#                             "=HINT" (what provides it: "readelf=binutils",
#                             "$OUR_LIB=run make")
#   abspath PATH              PATH made absolute (relative to $ROOT)
#   veth_netns NA DA AA NB DB AB
#                             network namespaces NA and NB (made anew)
#                             joined by a veth pair, NA's end DA with
#                             address AA/24, NB's DB with AB/24, both up,
#                             lo up in both; status 0 when all of it worked
#                             (suites use link-local 169.254.x.x addresses)
#
# Counters: npass, nfail, nskip (a suite may read them).

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$PWD

OUR_LIB=${OUR_LIB:-build/lib/libibverbs.so.1}
UPSTREAM_LIB=${UPSTREAM_LIB:-/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0}
OUR_INCLUDE=${OUR_INCLUDE:-include}
UPSTREAM_INCLUDE=${UPSTREAM_INCLUDE:-/usr/include}

npass=0 nfail=0 nskip=0
SUITE=$(basename "$(dirname "$(readlink -f "$0")")")

suite_begin() {
    SUITE=$1
    SCRATCH=$ROOT/build/compat-tests/$SUITE
    [ "${2:-}" = --clean ] && rm -rf "$SCRATCH"
    mkdir -p "$SCRATCH" || fail_early prerequisites "cannot create $SCRATCH"
}

pass() { echo "PASS $1"; npass=$((npass + 1)); }
fail() { echo "FAIL $1: $2"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $1: $2"; nskip=$((nskip + 1)); }

finish() {
    echo "$SUITE: $npass passed, $nfail failed, $nskip skipped"
    [ "$nfail" -eq 0 ]
    exit
}

fail_early() {
    fail "$1" "$2"
    finish
}

need() {
    local w what hint missing=
    for w; do
        what=${w%%=*}
        hint=
        [ "$what" = "$w" ] || hint=" (${w#*=})"
        case "$what" in
            */*) [ -e "$what" ] || missing="$missing $what$hint" ;;
            *) command -v "$what" >/dev/null 2>&1 || missing="$missing $what$hint" ;;
        esac
    done
    [ -z "$missing" ] || fail_early prerequisites "missing on this machine:$missing"
}

abspath() {
    case $1 in
        /*) printf '%s\n' "$1" ;;
        *) printf '%s\n' "$ROOT/$1" ;;
    esac
}

veth_netns() {
    local na=$1 da=$2 aa=$3 nb=$4 db=$5 ab=$6
    ip netns del "$na" 2>/dev/null
    ip netns del "$nb" 2>/dev/null
    ip netns add "$na" && ip netns add "$nb" &&
        ip link add "$da" type veth peer name "$db" &&
        ip link set "$da" netns "$na" && ip link set "$db" netns "$nb" &&
        ip -n "$na" addr add "$aa/24" dev "$da" && ip -n "$nb" addr add "$ab/24" dev "$db" &&
        ip -n "$na" link set "$da" up && ip -n "$nb" link set "$db" up &&
        ip -n "$na" link set lo up && ip -n "$nb" link set lo up
}
