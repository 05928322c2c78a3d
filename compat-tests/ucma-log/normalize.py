#!/usr/bin/env python3
"""Normalises a ucma log (SWRDMA_UCMA_LOG, providers/swrdma/ucma/src/log.rs)
so that a workload recorded on the kernel's rdma_cm and on ours compares
line by line: the values that differ by nature become symbols numbered in
their order of first appearance (ids, user pointers, QPNs, PSNs, ports,
service IDs, GUIDs, flow labels), addresses and IP GIDs become ADDR / GID
(two ends on one address on swr0, two on rxe), and what a device decides
(its MTU, index, ACK-delay-derived timeout) is kept, so that its
differences show and are listed with their reasons.

    normalize.py LOG > NORMALISED
"""
import re
import sys


class Sym:
    def __init__(self, prefix):
        self.prefix, self.map = prefix, {}

    def __call__(self, v, zero=("0", "0x0")):
        if v in zero:
            return v
        if v not in self.map:
            self.map[v] = f"{self.prefix}{len(self.map) + 1}"
        return self.map[v]


def ordered(lines):
    """The lines in the order of their seq= (when a command was issued or
    an event taken), without it."""
    keyed = []
    for n, line in enumerate(lines):
        m = re.match(r"^seq=(\d+) ", line)
        keyed.append((int(m[1]) if m else n, n, line[m.end():] if m else line))
    return [line for _, _, line in sorted(keyed)]


def normalise(lines):
    lines = ordered(list(lines))
    ids, uids, lqpns, rqpns, psns, ports, sids, guids, flows, mcs = (
        Sym(p) for p in ("I", "U", "QL", "QR", "P", "PORT", "S", "N", "F", "M"))
    out = []
    for line in lines:
        line = line.rstrip("\n")
        line = re.sub(r"^fd=\d+ ", "", line)
        # multicast handles: a space of their own (LEAVE_MCAST's and a
        # join's mc=, a multicast event's id=), numbered apart from ids
        mc_event = re.search(r" event=1[23] ", line) is not None
        line = re.sub(r"\b(mc)=(\d+)", lambda m: f"{m[1]}={mcs(m[2], ())}", line)
        line = re.sub(r"\b(id)=(\d+)", lambda m: f"{m[1]}={(mcs if mc_event else ids)(m[2], ())}", line)
        line = re.sub(r"\b(uid)=(0x[0-9a-f]+)", lambda m: f"{m[1]}={uids(m[2])}", line)
        # the process's own QPs (what it passes to CONNECT and ACCEPT) and
        # its peers' (in events, as INIT_QP_ATTR's destination): two rxe
        # devices number QPs each from 17, swr0 uniquely for the user
        own = re.match(r"^(CONNECT|ACCEPT) ", line) is not None
        line = re.sub(r"\b(qp_num|dest_qp)=(\d+)", lambda m: f"{m[1]}={(lqpns if own else rqpns)(m[2])}", line)
        line = re.sub(r"\b(rq_psn|sq_psn)=(\d+)", lambda m: f"{m[1]}={psns(m[2])}", line)
        line = re.sub(r"\bport=(\d{3,})", lambda m: f"port={ports(m[1])}", line)
        line = re.sub(r"\bsid=(0x[0-9a-f]+)", lambda m: f"sid={sids(m[1])}", line)
        line = re.sub(r"\bnode_guid=(0x[0-9a-f]+)", lambda m: f"node_guid={guids(m[1])}", line)
        line = re.sub(r"\bflow_label=(\d+)", lambda m: f"flow_label={flows(m[1])}", line)
        line = re.sub(r"\baddr=[0-9a-f.:]+", lambda m: "addr=0.0.0.0" if m[0] in ("addr=0.0.0.0", "addr=::") else "addr=ADDR", line)
        line = re.sub(r"\b(gid|dgid|sgid)=(::ffff:[0-9.]+|[0-9a-f:]+)",
                      lambda m: f"{m[1]}={m[2]}" if m[2] in ("::", "::ffff:0.0.0.0") else f"{m[1]}=GID", line)
        # the kernel's RoCE path record carries its route's resolved flag and
        # the destination MAC in the LID fields (a union): masked
        line = re.sub(r"\b(dlid|slid)=(\d+)(?= slid| flow_label)", r"\1=X", line)
        out.append(line)
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print("\n".join(normalise(f)))
