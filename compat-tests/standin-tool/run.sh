#!/bin/bash
# compat-tests/standin-tool: the command ibv-standin (make standin;
# compat-tests/providers/standin/ibv-standin.in), as a user runs it.
#
# For every provider of its device table (18: bookworm's, trixie's and sid's
# providers), programs run THROUGH THE COMMAND, once on upstream's
# libibverbs (the system's, or UPSTREAM_LIB's directory) and once on ours
# (LD_LIBRARY_PATH=<dir of OUR_LIB>), and a second time on upstream's:
#   ibv_devinfo -v, ibv_devices  Debian's tools (position-independent)
#   verbs-pie, verbs-nopie       verbs.c (context, queries, GID table into a
#                                larger buffer filled differently each run,
#                                PD, MRs on the heap and in static memory,
#                                channel, CQ, RC and UD QPs, AH), built with
#                                -pie and with -no-pie
#   pyverbs                      pyverbs_prog.py on Debian's /usr/bin/python3
#                                (not position-independent) and python3-pyverbs
# Checks, per provider x program:
#   "<p> <prog>: stable"         two runs on upstream's library give the
#                                same command log (addresses masked wherever
#                                the program's memory lies; outputs only as
#                                far as the kernel wrote them)
#   "<p> <prog>: ours"           ours gives the same log, stdout+stderr and
#                                exit status as upstream's
# and per provider:
#   "<p> fixture"                the sysfs fixture the command writes is the
#                                one runner.py --fixture writes
#   "<p> --fail"                 --fail 5:ENOMEM fails the 5th command
#                                (logged), the same way on both libraries
# plus the command's own: --help lists every provider, --release sid sets
# the latest kernel, a bad --fail or --device is refused, the exit status
# is the program's and the temporary fixture is gone after it.
# A provider whose library on this machine has no provider file for it
# (ionic before sid) sends no command: its checks are SKIPs, and a FAIL if
# the provider file exists.
# Follows compat-tests/CONVENTIONS.md.
set -u
. "$(dirname "$0")/../lib.sh"
suite_begin standin-tool --clean
need "$OUR_LIB=run make" "$UPSTREAM_LIB=libibverbs1" cc python3 /usr/bin/python3=python3 readelf=binutils \
    /usr/bin/ibv_devinfo=ibverbs-utils /usr/bin/ibv_devices=ibverbs-utils \
    /usr/include/infiniband/verbs.h=libibverbs-dev \
    "$(/usr/bin/python3 -c 'import importlib.util as u; print(u.find_spec("pyverbs").origin)' 2>/dev/null || echo /nonexistent/pyverbs)=python3-pyverbs"
HERE=compat-tests/standin-tool
OUT=$SCRATCH
OUR_LIB=$(abspath "$OUR_LIB")
UPSTREAM_LIB=$(abspath "$UPSTREAM_LIB")

if ! make -s standin >"$OUT/build.log" 2>&1; then
    fail_early "build" "make standin: $(tail -n 3 "$OUT/build.log" | tr '\n' ' ')"
fi
TOOL=$ROOT/build/standin/ibv-standin
FIXTURES=$ROOT/build/standin/fixtures.txt

# The libraries: ours by LD_LIBRARY_PATH; upstream's is the system's
# (nothing set) unless UPSTREAM_LIB names another file.
our_dir=$OUT/lib-ours; mkdir -p "$our_dir"; ln -sf "$OUR_LIB" "$our_dir/libibverbs.so.1"
up_env=()
sys_lib=$(ldconfig -p 2>/dev/null | awk '/libibverbs\.so\.1 .*x86-64/ { print $NF; exit }')
if [ -z "$sys_lib" ] || [ "$(readlink -f "$sys_lib")" != "$(readlink -f "$UPSTREAM_LIB")" ]; then
    mkdir -p "$OUT/lib-up"; ln -sf "$UPSTREAM_LIB" "$OUT/lib-up/libibverbs.so.1"
    up_env=(LD_LIBRARY_PATH="$OUT/lib-up")
fi
pdir=$(dirname "$(readlink -f "$UPSTREAM_LIB")")/libibverbs

# The programs.
ok=1
cc -O1 -g -Wall -Werror -fPIE -pie -o "$OUT/verbs-pie" "$HERE/verbs.c" -libverbs 2>"$OUT/cc.log" &&
    cc -O1 -g -Wall -Werror -fno-pie -no-pie -o "$OUT/verbs-nopie" "$HERE/verbs.c" -libverbs 2>>"$OUT/cc.log" || ok=0
types="$(readelf -h "$OUT/verbs-pie" 2>/dev/null | awk '/Type:/ { print $2 }') $(readelf -h "$OUT/verbs-nopie" 2>/dev/null | awk '/Type:/ { print $2 }') $(readelf -h /usr/bin/python3 | awk '/Type:/ { print $2 }')"
if [ $ok = 1 ] && [ "$types" = "DYN EXEC EXEC" ]; then
    pass "programs (verbs-pie is position-independent, verbs-nopie and /usr/bin/python3 are not)"
else
    fail_early programs "build: $(head -c 300 "$OUT/cc.log") types (pie, nopie, python3): $types"
fi
PROGS="devinfo devices verbs-pie verbs-nopie pyverbs"
prog_cmd() { # NAME -> the command line
    case $1 in
        devinfo) echo "ibv_devinfo -v" ;;
        devices) echo "ibv_devices" ;;
        verbs-pie|verbs-nopie) echo "$OUT/$1" ;;
        pyverbs) echo "/usr/bin/python3 $ROOT/$HERE/pyverbs_prog.py" ;;
    esac
}

# run TAG PROVIDER PROG LIB [OPTION...]: through the command; the log in
# $OUT/logs/TAG.log, stdout+stderr in TAG.out, the status in TAG.rc
mkdir -p "$OUT/logs"
run() {
    local tag=$1 p=$2 prog=$3 lib=$4; shift 4
    local env=(env -u LD_LIBRARY_PATH -u LD_PRELOAD)
    if [ "$lib" = ours ]; then env+=(LD_LIBRARY_PATH="$our_dir"); else env+=("${up_env[@]}"); fi
    # shellcheck disable=SC2046
    (cd "$OUT" && timeout 60 "${env[@]}" "$TOOL" --device "$p" --log "$OUT/logs/$tag.log" "$@" -- $(prog_cmd "$prog")) \
        >"$OUT/logs/$tag.out" 2>&1
    echo $? >"$OUT/logs/$tag.rc"
}
ncmds() { grep -cE '^(ioctl|write|invoke) ' "$1" 2>/dev/null; }
first_diff() { diff "$1" "$2" | grep -m2 '^[<>]' | cut -c1-240 | tr '\n' ' '; }

while read -r p _ _ _ _ _ _; do
    [ -n "$p" ] || continue
    # the provider file of this machine's library for p
    case $p in hfi1) f=hfi1verbs ;; qib) f=ipathverbs ;; *) f=$p ;; esac
    have=0; ls "$pdir"/lib"$f"-rdmav*.so >/dev/null 2>&1 && have=1

    # the fixture
    rm -rf "$OUT/fx-$p" "$OUT/fx-$p.runner"
    if "$TOOL" --device "$p" --fixture "$OUT/fx-$p" -- true &&
            python3 compat-tests/providers/runner.py --fixture "$p" "$OUT/fx-$p.runner" >/dev/null &&
            d=$(diff -r "$OUT/fx-$p" "$OUT/fx-$p.runner" 2>&1) && [ -z "$d" ] &&
            [ -e "$OUT/fx-$p/class/infiniband_verbs/uverbs0/ibdev" ]; then
        pass "$p fixture (as runner.py --fixture writes it: $(find "$OUT/fx-$p" -type f | wc -l) files)"
    else
        fail "$p fixture" "differs from runner.py's: $(echo "${d:-not written}" | head -3 | tr '\n' ' ')"
    fi

    for prog in $PROGS; do
        run "$p-$prog-up1" "$p" "$prog" upstream
        run "$p-$prog-up2" "$p" "$prog" upstream
        run "$p-$prog-ours" "$p" "$prog" ours
        L=$OUT/logs/$p-$prog
        n=$(ncmds "$L-up1.log")
        if [ "$prog" = devices ] && [ $have = 0 ]; then
            skip "$p $prog" "no provider file for $p in $pdir"
            continue
        elif [ "$prog" = devices ]; then
            # ibv_devices reads sysfs only: no command; the device listed
            # is what it shows of the stand-in
            ib=$(awk -v p="$p" '$1 == p { print $2 }' "$FIXTURES")
            if ! grep -qw "$ib" "$L-up1.out"; then
                fail "$p $prog" "upstream's ibv_devices does not list $ib: $(head -c 200 "$L-up1.out" | tr '\n' ' ')"
                continue
            fi
            what="no command; lists $ib"
        elif [ "${n:-0}" = 0 ]; then
            if [ $have = 1 ]; then
                fail "$p $prog" "no command reached the stand-in with upstream's library: $(head -c 200 "$L-up1.out" | tr '\n' ' ')"
            else
                skip "$p $prog" "no provider file for $p in $pdir (upstream's library sends nothing)"
            fi
            continue
        else
            what="$n commands"
        fi
        if cmp -s "$L-up1.log" "$L-up2.log"; then
            pass "$p $prog: stable ($what, $(grep -o '<ptr>' "$L-up1.log" | wc -l) addresses masked, two runs the same)"
        else
            fail "$p $prog: stable" "two runs on upstream's library differ: $(first_diff "$L-up1.log" "$L-up2.log")"
        fi
        if ! cmp -s "$L-up1.log" "$L-ours.log"; then
            fail "$p $prog: ours" "log differs: $(first_diff "$L-up1.log" "$L-ours.log")"
        elif ! cmp -s "$L-up1.out" "$L-ours.out"; then
            fail "$p $prog: ours" "output differs: $(first_diff "$L-up1.out" "$L-ours.out")"
        elif [ "$(cat "$L-up1.rc")" != "$(cat "$L-ours.rc")" ]; then
            fail "$p $prog: ours" "exit status upstream $(cat "$L-up1.rc"), ours $(cat "$L-ours.rc")"
        else
            pass "$p $prog: ours (log, output and exit status $(cat "$L-up1.rc") as upstream's)"
        fi
    done

    # --fail: the 5th command fails with ENOMEM, on both libraries alike
    if [ $have = 1 ]; then
        run "$p-fail-up" "$p" verbs-pie upstream --fail 5:ENOMEM
        run "$p-fail-ours" "$p" verbs-pie ours --fail 5:ENOMEM
        L=$OUT/logs/$p-fail
        if ! grep -q '^inject 5 errno=12$' "$L-up.log"; then
            fail "$p --fail" "no 'inject 5 errno=12' in the log ($(ncmds "$L-up.log") commands)"
        elif ! cmp -s "$L-up.log" "$L-ours.log" || ! cmp -s "$L-up.out" "$L-ours.out" ||
                [ "$(cat "$L-up.rc")" != "$(cat "$L-ours.rc")" ]; then
            fail "$p --fail" "ours differs: $(first_diff "$L-up.log" "$L-ours.log") $(first_diff "$L-up.out" "$L-ours.out")"
        else
            pass "$p --fail 5:ENOMEM (the 5th command fails; log, output, status $(cat "$L-up.rc") as upstream's)"
        fi
    fi
done <"$FIXTURES"

# The command itself.
help=$("$TOOL" --help 2>&1)
missing=""
while read -r p _; do
    [ -n "$p" ] || continue
    echo "$help" | grep -qE "^  $p +[^ ]" || missing="$missing $p"
done <"$FIXTURES"
if [ -z "$missing" ] && [ "$(grep -c . "$FIXTURES")" -ge 18 ]; then
    pass "--help lists every provider ($(grep -c . "$FIXTURES")) with what the stand-in lacks for it"
else
    fail "--help" "providers not listed:${missing:- (fewer than 18 in the table)}"
fi
# shellcheck disable=SC2016
k=$("$TOOL" --device mlx5 --release sid -- sh -c 'echo "$STANDIN_KERNEL:$SYSFS_PATH"' 2>&1)
k2=$("$TOOL" --device mlx5 --release trixie -- sh -c 'echo "${STANDIN_KERNEL-unset}"' 2>&1)
k3=$("$TOOL" --device siw -- sh -c 'echo "${STANDIN_NETLINK-unset}"' 2>&1)
if [[ $k == latest:/* ]] && [ "$k2" = unset ] && [ "$k3" = 1 ] && [ ! -e "${k#latest:}" ]; then
    pass "--release sid answers as the latest kernel, trixie as 6.1; siw gets netlink; the temporary fixture is removed"
else
    fail "--release" "sid: '$k', trixie: '$k2', siw netlink: '$k3'"
fi
"$TOOL" --device mlx5 -- sh -c 'exit 7'; rc1=$?
"$TOOL" --device mlx5 --fail 3:ENOSUCHERR -- true 2>/dev/null; rc2=$?
"$TOOL" --device nosuch -- true 2>/dev/null; rc3=$?
"$TOOL" --device mlx5 -- "$OUT/no-such-program" 2>/dev/null; rc4=$?
if [ $rc1 = 7 ] && [ $rc2 = 2 ] && [ $rc3 = 2 ] && [ $rc4 = 127 ]; then
    pass "exit status: the program's (7), 2 for a bad --fail or --device, 127 for a missing program"
else
    fail "exit status" "program's 7 -> $rc1, bad errno -> $rc2, bad device -> $rc3, missing program -> $rc4"
fi
finish
