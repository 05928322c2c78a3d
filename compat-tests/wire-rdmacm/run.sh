#!/bin/bash
# compat-tests/wire-rdmacm: Debian bookworm's unchanged rdma_cm programs on
# the wire device rw0, between two network namespaces over a veth pair
# (169.254.80.1 and .2, link-local only): soft-rdmacm's programs in its
# CM_WIRE=1 mode (see there), every server in one namespace, every client
# in the other, the CM's MADs carried as RoCE v2 on QP1 by each side's wire
# agent; and, in this mode only, libfabric's verbs provider (fi_pingpong
# msg, and rdm over ofi_rxm), UCX's rdmacm connection manager (io_demo),
# rdma-core's test_rdmacm (bookworm's, trixie's and sid's pyverbs) on rw0
# in one namespace.  Needs root (ip netns).  About two minutes.
CM_WIRE=1 exec bash "$(dirname "$0")/../soft-rdmacm/run.sh" "$@"
