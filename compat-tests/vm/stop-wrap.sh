#!/bin/bash
# stop-wrap.sh WHO SECS PROG ARGS...: one side of a vm-wire pair (the
# harness appends the side's -d/-g/-p and, on the client, the server's
# address), with ours' processes through the transport agent
# (SWRDMA_WIRE_AGENT=1, issue 33; Debian's library ignores it).  On the
# side WHO (server or client), PROG is stopped (SIGSTOP) 1 s after its
# start for SECS s, then continued: both sides must still finish.  Exit:
# PROG's, or 3 when PROG had ended before the stop (a run too short to
# show anything).
who=$1 secs=$2
shift 2
# The client's last argument is the server's address.
side=server
case "${!#}" in *.*.*.* | *:*) side=client ;; esac
export SWRDMA_WIRE_AGENT=1 SWRDMA_WIRED_IDLE_MS=500
"$@" &
p=$!
if [ "$who" = "$side" ]; then
    sleep 1
    if ! kill -STOP "$p" 2>/dev/null; then
        wait "$p"
        echo "stop-wrap.sh: $1 ended before the stop" >&2
        exit 3
    fi
    echo "stop-wrap.sh: $1 ($side) stopped for $secs s" >&2
    sleep "$secs"
    kill -CONT "$p"
fi
wait "$p"
