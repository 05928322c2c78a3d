#!/bin/bash
# compat-tests/wire-rdmacm-bad: bad input and hostile peers for rdma_cm on
# the wire device rw0, between network namespaces over a veth pair
# (169.254.81.1 and .2, link-local only) and a third host of hostile.py's
# (169.254.81.3, a macvlan): soft-rdmacm-bad's cases in its CM_WIRE=1 mode
# (see there), every server in one namespace, every client in the other,
# the CM's MADs (and hostile.py's forged or malformed ones, as RoCE v2 with
# a valid ICRC) carried on QP1 by each side's wire agent.  Needs root
# (ip netns).  Run it alone: flock /tmp/suites.lock compat-tests/wire-rdmacm-bad/run.sh
CM_WIRE=1 exec bash "$(dirname "$0")/../soft-rdmacm-bad/run.sh" "$@"
