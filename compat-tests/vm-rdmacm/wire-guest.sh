# vm-rdmacm's wire part (sourced by guest.sh in the VM, after the rest):
# rdma_cm between ours on the wire device (rw0@veth1 in netns far,
# 192.0.2.2: guest-lib.sh's veth1_to_far) and the kernel's rdma_cm on rxe0
# (192.0.2.1), Debian's unmodified programs on both sides, ours passive (its
# server, the kernel's client) and ours active (the kernel's server, its
# client).  The CM's MADs cross as RoCE v2 on QP1: on our side through the
# wire agent (providers/swrdma/wired/src/qp1.rs).  Results in
# $VM_RUN_DIR/wire/<direction>/<name>.{server,client}.{out,rc}; run.sh
# gives the verdicts.
. compat-tests/vm/guest-lib.sh
netfail=
veth1_to_far
W=$VM_RUN_DIR/wire
mkdir -p "$W/ours-passive" "$W/ours-active"
printf '%s\n' "${netfail:-}" >"$W/netfail"
mkdir -p -m 0700 /tmp/xw
OURS=(ip netns exec far env XDG_RUNTIME_DIR=/tmp/xw LD_LIBRARY_PATH="$PWD/build/lib" RDMAV_SOFT_DEVICES=rw0@veth1
      SWRDMA_WIRED_IDLE_MS=10000 ${WIRE_CM_ENV:-} "$PWD/build/bin/swrdma-cm")
KERN=(env)
# the same under librspreload.so (the interposer's wrapper puts itself
# first in LD_PRELOAD)
RSPRELOAD=$(dpkg -L librdmacm1 2>/dev/null | grep -m1 '/rsocket/librspreload\.so$')
OURS_RS=("${OURS[@]:0:$((${#OURS[@]} - 1))}" LD_PRELOAD="${RSPRELOAD:-}" "${OURS[@]: -1}")
KERN_RS=(env LD_PRELOAD="${RSPRELOAD:-}")
# cap_start DIR NAME / cap_stop: every datagram to QPN 1 on rxe0's veth0
# (the CM's MADs, both ways) into DIR/NAME.mads (mad-capture.py; run.sh
# compares ours with the kernel's field by field, mads.py).
# (cap_begin starts it, cap_ready waits up to 5 s for it to listen: wpair
# starts its server meanwhile, python's start under TCG being a second of
# the pair's time; no program started per look: nap is bash's read -t)
cap_begin() {
    rm -f "$1/$2.ready"
    python3 compat-tests/vm-rdmacm/mad-capture.py veth0 "$1/$2.mads" "$1/$2.ready" 2>"$1/$2.mads.err" &
    CAP=$! CAP_READY=$1/$2.ready
}
cap_ready() {
    local i
    for ((i = 0; i < 100; i++)); do [ -e "$CAP_READY" ] && break; nap 0.05; done
}
cap_start() { cap_begin "$@"; cap_ready; }
cap_stop() { kill -TERM "$CAP" 2>/dev/null; wait "$CAP" 2>/dev/null; }
# wpair DIR NAME SERVER_PREFIX_VAR CLIENT_PREFIX_VAR SERVER_ARGS -- CLIENT_ARGS:
# the server, then (2 s later) its client, each under timeout 60; a server
# still there 10 s after its client ended is killed (rc 137).
wpair() {
    local dir=$1 name=$2; local -n sp=$3 cp=$4; shift 4
    [[ "$name" =~ ${WIRE_CM_ONLY:-.} ]] || return 0
    local s=(); while [ "$1" != "--" ]; do s+=("$1"); shift; done; shift
    cap_begin "$dir" "$name"
    timeout -k 5 70 stdbuf -oL -eL "${sp[@]}" "${s[@]}" </dev/null >"$dir/$name.server.out" 2>&1 &
    local spid=$! i
    sleep 2
    cap_ready
    timeout -k 5 60 stdbuf -oL -eL "${cp[@]}" "$@" </dev/null >"$dir/$name.client.out" 2>&1
    echo "$?" >"$dir/$name.client.rc"
    for ((i = 0; i < 100; i++)); do kill -0 "$spid" 2>/dev/null || break; nap 0.1; done
    kill -0 "$spid" 2>/dev/null && kill -TERM "$spid"
    wait "$spid"; echo "$?" >"$dir/$name.server.rc"
    cap_stop
    grep -H . /sys/class/infiniband/rxe0/ports/1/hw_counters/* >"$dir/$name.rxe0-counters" 2>/dev/null
}
workloads() { # DIR SERVER_PREFIX_VAR CLIENT_PREFIX_VAR SERVER_ADDR
    local d=$1 s=$2 c=$3 a=$4
    wpair "$d" rping "$s" "$c" rping -s -a "$a" -p 7501 -v -V -C 100 -- rping -c -a "$a" -p 7501 -v -V -C 100
    wpair "$d" ucmatose "$s" "$c" ucmatose -b "$a" -p 7502 -c 20 -C 50 -- ucmatose -s "$a" -p 7502 -c 20 -C 50
    wpair "$d" udaddy "$s" "$c" udaddy -b "$a" -C 10 -- udaddy -s "$a" -C 10
    wpair "$d" rdma_server "$s" "$c" rdma_server -s "$a" -p 7503 -- rdma_client -s "$a" -p 7503
    wpair "$d" rdma_xserver "$s" "$c" rdma_xserver -p 7504 -c r -- rdma_xclient -s "$a" -p 7504 -c r
    # multicast: our wire agent's peer is rxe's multicast path (IGMP join,
    # datagrams to 239.1.1.1:4791, QPN 0xffffff); the server receives, the
    # client sends from the other host's address
    local b=192.0.2.1; [ "$a" = 192.0.2.1 ] && b=192.0.2.2
    wpair "$d" mckey "$s" "$c" mckey -m 239.1.1.1 -b "$a" -C 10 -- mckey -m 239.1.1.1 -b "$b" -s -C 10
    wpair "$d" rstream "$s" "$c" rstream -T v -S 4096 -C 200 -b "$a" -p 7505 -- rstream -T v -S 4096 -C 200 -s "$a" -p 7505
    # cmtime, riostream, perftest -R and qperf -cm1 (RC), as soft-rdmacm
    # runs them (rping, ucmatose and cmtime with issue 32's counts, as
    # there); -d names each side's device.  perftest's and qperf's
    # clients may race their server's next listen (REJECTED 8, as the
    # kernel's CM answers it): run again, three times at most.
    local sd=rxe0 cd=rxe0 t i
    [ "$s" = OURS ] && sd=rw0
    [ "$c" = OURS_C ] && cd=rw0
    wpair "$d" cmtime "$s" "$c" cmtime -b "$a" -p 7506 -- cmtime -s "$a" -p 7506 -c 200
    wpair "$d" riostream "$s" "$c" riostream -T v -S 4096 -C 100 -b "$a" -p 7507 -- \
        riostream -T v -S 4096 -C 100 -s "$a" -p 7507
    for t in ib_send_lat ib_write_lat ib_read_lat ib_send_bw ib_write_bw ib_read_bw; do
        for i in 1 2 3; do
            wpair "$d" "$t" "$s" "$c" "$t" -d "$sd" -R -F -p 7508 -n 200 -- "$t" -d "$cd" -R -F -p 7508 -n 200 "$a"
            grep -q 'RDMA_CM_EVENT_REJECTED; error: 8' "$d/$t.client.out" 2>/dev/null || break
        done
    done
    for i in 1 2 3; do
        wpair "$d" qperf "$s" "$c" qperf -lp 7509 -- qperf "$a" -lp 7509 -cm1 -t 2 rc_bw rc_lat
        grep -q 'Event rejected' "$d/qperf.client.out" 2>/dev/null || break
    done
    # fio's rdma engine, 4 MiB in 4 KiB blocks: the client moves them with
    # RDMA WRITE (verb=write) or RDMA READ (verb=read) into and out of the
    # server's buffers; the server binds the wildcard address (its bindname
    # is read as one character)
    local verb
    for verb in write read; do
        wpair "$d" "fio-$verb" "$s" "$c" fio --name=server --ioengine=rdma --port=7510 --rw=read --bs=4k --size=4m \
            --iodepth=16 -- fio --name=client --ioengine=rdma --hostname="$a" --port=7510 --verb=$verb --rw=write \
            --bs=4k --size=4m --iodepth=4
    done
    # an unchanged TCP program under librdmacm's librspreload.so on both
    # sides (rsecho: each connected socket must answer SOL_RDMA, which only
    # an rsocket does; 256 KiB echoed and compared)
    if [ -n "${GUEST_RSECHO:-}" ] && [ -e "${RSPRELOAD:-}" ]; then
        wpair "$d" rsecho "${s}_RS" "${c}_RS" "$GUEST_RSECHO" server 7511 262144 "$a" -- \
            "$GUEST_RSECHO" client 7511 262144 "$a"
    fi
    # no listener on the port: the kernel's (or our agent's) REJ 8, while
    # the server's host runs rdma_cm (a listener on another port; with no
    # process of ours using rdma_cm on rw0 there is no agent to answer,
    # the provider's README says so)
    [[ nolistener =~ ${WIRE_CM_ONLY:-.} ]] || return 0
    local -n cl=$c sv=$s
    timeout 60 "${sv[@]}" rping -s -a "$a" -p 7598 </dev/null >"$d/nolistener.other.out" 2>&1 &
    local other=$!
    sleep 2
    cap_start "$d" nolistener
    timeout 60 "${cl[@]}" rping -c -a "$a" -p 7599 -C 1 </dev/null >"$d/nolistener.client.out" 2>&1
    echo "$?" >"$d/nolistener.client.rc"
    cap_stop
    kill -TERM "$other" 2>/dev/null
    wait "$other" || true
}
OURS_C=("${OURS[@]}")
OURS_C_RS=("${OURS_RS[@]}")
[[ ours-passive =~ ${WIRE_CM_DIRS:-.} ]] && workloads "$W/ours-passive" OURS KERN 192.0.2.2
[[ ours-active =~ ${WIRE_CM_DIRS:-.} ]] && workloads "$W/ours-active" KERN OURS_C 192.0.2.1
# Command for command: vm-rdmacm's workloads (workloads.sh) once more with
# the server on one side and the client on the other, each side's ucma
# logged (ours by its interposer, the kernel's by the interposer in
# pass-through mode): run.sh compares each log with the kernel's own run.
KREC="env SWRDMA_UCMA_KERNEL=1 LD_PRELOAD=$PWD/build/lib/libswrdma-ucma.so"
if [[ logs =~ ${WIRE_CM_DIRS:-.} ]]; then
    B=192.0.2.1 WL_CLIENT="$KREC" bash compat-tests/vm-rdmacm/workloads.sh "$W/log/ours-passive" 192.0.2.2 "${OURS[@]}"
    read -ra krec <<<"$KREC"
    B=192.0.2.2 WL_CLIENT="${OURS[*]}" bash compat-tests/vm-rdmacm/workloads.sh "$W/log/ours-active" 192.0.2.1 "${krec[@]}"
fi
# (the guest's status is the run's: what failed is in the results)
true
