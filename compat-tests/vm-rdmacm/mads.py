#!/usr/bin/env python3
"""vm-rdmacm: the CM MADs our wire device sends against those the kernel's
rdma_cm on rxe sends, field by field (IBTA Vol 1 chapter 12's layouts,
written here from the specification, not from either implementation).

The VM runs each program twice across rw0 <-> rxe0: ours passive (the
kernel's client sends REQ, RTU ...; ours REP ...) and ours active (ours
sends REQ, RTU ...).  mad-capture.py records every datagram to QPN 1 on
rxe0's interface.  For each program and each MAD type that both sides
sent, the first one ours sent is compared with the first one the kernel
sent: every field of the RoCE headers (BTH, DETH), of the MAD header and
of the CM message, with the fields that are random or belong to one end
masked (comm IDs, transaction ID, QPN, PSN, CA GUID, the ephemeral port in
the IP private-data header, the UDP source port) and the address fields
checked for what they must hold (the sender's or the receiver's address)
rather than compared.  One PASS/FAIL line per program and MAD type.
    mads.py WIRE_DIR OURS_IP KERNEL_IP PROGRAM...
    mads.py --sequence FILE OURS_IP   (one capture's MADs in order: a failure's message)
(WIRE_DIR/<direction>/<program>.mads, as mad-capture.py writes them.)
"""
import ipaddress
import os
import sys

# (name, byte offset in the CM message (after the 24-byte MAD header),
#  first bit (0 = most significant of that byte), width in bits)
PATH = [
    ("primary local LID", 52, 0, 16), ("primary remote LID", 54, 0, 16),
    ("primary local GID", 56, 0, 128), ("primary remote GID", 72, 0, 128),
    ("primary flow label", 88, 0, 20), ("primary packet rate", 88, 26, 6),
    ("primary traffic class", 92, 0, 8), ("primary hop limit", 93, 0, 8),
    ("primary SL", 94, 0, 4), ("primary subnet local", 94, 4, 1),
    ("primary local ACK timeout", 95, 0, 5),
    ("alternate path (44 bytes)", 96, 0, 44 * 8),
]
LAYOUT = {
    0x10: ("REQ", [
        ("local comm ID", 0, 0, 32), ("vendor ID (ECE)", 5, 0, 24), ("service ID", 8, 0, 64),
        ("local CA GUID", 16, 0, 64),
        ("local Q_Key", 28, 0, 32), ("local QPN", 32, 0, 24), ("responder resources", 35, 0, 8),
        ("local EECN", 36, 0, 24), ("initiator depth", 39, 0, 8), ("remote EECN", 40, 0, 24),
        ("remote CM response timeout", 43, 0, 5), ("transport service type", 43, 5, 2),
        ("end-to-end flow control", 43, 7, 1), ("starting PSN", 44, 0, 24),
        ("local CM response timeout", 47, 0, 5), ("retry count", 47, 5, 3), ("P_Key", 48, 0, 16),
        ("path MTU", 50, 0, 4), ("RDC exists", 50, 4, 1), ("RNR retry count", 50, 5, 3),
        ("max CM retries", 51, 0, 4), ("SRQ", 51, 4, 1), ("extended transport type", 51, 5, 3),
    ] + PATH, 140),
    0x11: ("MRA", [("local comm ID", 0, 0, 32), ("remote comm ID", 4, 0, 32), ("message MRAed", 8, 0, 2),
                   ("service timeout", 9, 0, 5)], 10),
    0x12: ("REJ", [("local comm ID", 0, 0, 32), ("remote comm ID", 4, 0, 32), ("message rejected", 8, 0, 2),
                   ("reject info length", 9, 0, 7), ("reason", 10, 0, 16), ("ARI (72 bytes)", 12, 0, 72 * 8)], 84),
    0x13: ("REP", [
        ("local comm ID", 0, 0, 32), ("remote comm ID", 4, 0, 32), ("local Q_Key", 8, 0, 32),
        ("local QPN", 12, 0, 24), ("vendor ID (ECE) high", 15, 0, 8), ("local EE context", 16, 0, 24),
        ("vendor ID (ECE) middle", 19, 0, 8), ("starting PSN", 20, 0, 24), ("vendor ID (ECE) low", 23, 0, 8),
        ("responder resources", 24, 0, 8), ("initiator depth", 25, 0, 8), ("target ACK delay", 26, 0, 5),
        ("failover accepted", 26, 5, 2), ("end-to-end flow control", 26, 7, 1), ("RNR retry count", 27, 0, 3),
        ("SRQ", 27, 3, 1), ("local CA GUID", 28, 0, 64),
    ], 36),
    0x14: ("RTU", [("local comm ID", 0, 0, 32), ("remote comm ID", 4, 0, 32)], 8),
    0x15: ("DREQ", [("local comm ID", 0, 0, 32), ("remote comm ID", 4, 0, 32), ("remote QPN/EECN", 8, 0, 24)], 12),
    0x16: ("DREP", [("local comm ID", 0, 0, 32), ("remote comm ID", 4, 0, 32)], 8),
    0x17: ("SIDR_REQ", [("request ID", 0, 0, 32), ("P_Key", 4, 0, 16), ("service ID", 8, 0, 64)], 16),
    0x18: ("SIDR_REP", [("request ID", 0, 0, 32), ("status", 4, 0, 8), ("additional info length", 5, 0, 8),
                        ("vendor ID (ECE) high", 6, 0, 16), ("QPN", 8, 0, 24), ("vendor ID (ECE) low", 11, 0, 8), ("service ID", 12, 0, 64), ("Q_Key", 20, 0, 32),
                        ("class port info (72 bytes)", 24, 0, 72 * 8)], 96),
}
# Random, or one end's own: masked.
MASKED = {"local comm ID", "remote comm ID", "request ID", "local CA GUID", "local QPN", "QPN", "starting PSN",
          "remote QPN/EECN", "transaction ID", "UDP source port", "BTH PSN", "private data: source port"}
# Fields that name an end: checked against the datagram's addresses.
LOCAL_GID, REMOTE_GID = "primary local GID", "primary remote GID"


def bits(b, off, first, width):
    n = int.from_bytes(b[off:off + (first + width + 7) // 8], "big")
    total = ((first + width + 7) // 8) * 8
    return (n >> (total - first - width)) & ((1 << width) - 1)


def gid_of(ip):
    return int.from_bytes(b"\0" * 10 + b"\xff\xff" + ipaddress.IPv4Address(ip).packed, "big")


def decode(src, dst, sport, pay):
    """The fields of one captured datagram (name -> value), or None."""
    if len(pay) < 12 + 8 + 256:
        return None
    f = {}
    bth, deth, mad = pay[:12], pay[12:20], pay[20:276]
    f["BTH opcode"] = bth[0]
    f["BTH solicited/migreq/pad/version"] = bth[1]
    f["BTH P_Key"] = bits(bth, 2, 0, 16)
    f["BTH destination QP"] = bits(bth, 5, 0, 24)
    f["BTH ack request"] = bits(bth, 8, 0, 1)
    f["BTH PSN"] = bits(bth, 9, 0, 24)
    f["DETH Q_Key"] = bits(deth, 0, 0, 32)
    f["DETH source QP"] = bits(deth, 5, 0, 24)
    f["UDP source port"] = sport
    f["payload length"] = len(pay)
    f["base version"], f["management class"], f["class version"] = mad[0], mad[1], mad[2]
    f["method"] = mad[3]
    f["MAD status"] = bits(mad, 4, 0, 16)
    f["class specific"] = bits(mad, 6, 0, 16)
    f["transaction ID"] = bits(mad, 8, 0, 64)
    f["attribute ID"] = bits(mad, 16, 0, 16)
    f["attribute modifier"] = bits(mad, 20, 0, 32)
    attr = f["attribute ID"]
    if attr not in LAYOUT:
        return attr, f
    name, fields, pd_off = LAYOUT[attr]
    cm = mad[24:]
    # every bit no field names (reserved ones): compared as they are
    rest = bytearray(cm[:pd_off])
    for fname, off, first, width in fields:
        for k in range(first, first + width):
            rest[off + k // 8] &= ~(0x80 >> (k % 8)) & 0xFF
    f["reserved bits of the message"] = rest.hex()
    for fname, off, first, width in fields:
        v = bits(cm, off, first, width)
        if fname == LOCAL_GID:
            v = "the sender's address" if v == gid_of(src) else f"{v:#x}"
        elif fname == REMOTE_GID:
            v = "the receiver's address" if v == gid_of(dst) else f"{v:#x}"
        f[fname] = v
    pd = cm[pd_off:232]
    if attr in (0x10, 0x17):
        # rdma_cm's IP private-data header (IBTA Annex A11): version, IP
        # version, source port, source and destination addresses; then the
        # application's private data
        f["private data: CM header version"] = pd[0]
        f["private data: IP version"] = pd[1] >> 4
        f["private data: source port"] = bits(pd, 2, 0, 16)
        sa, da = pd[4:20], pd[20:36]
        f["private data: source address"] = ("the sender's address"
                                             if sa[12:] == ipaddress.IPv4Address(src).packed else sa.hex())
        f["private data: destination address"] = ("the receiver's address"
                                                  if da[12:] == ipaddress.IPv4Address(dst).packed else da.hex())
        f["private data: the rest"] = pd[36:].hex()
    else:
        f["private data"] = pd.hex()
    if attr == 0x10:
        # RoCE v2's flow label from the ports (the kernel's
        # cma_get_roce_udp_flow_label: source port * 31 + destination port)
        want = (f["private data: source port"] * 31 + (f["service ID"] & 0xFFFF)) & 0xFFFFF
        if f["primary flow label"] == want:
            f["primary flow label"] = "source port * 31 + destination port"
    return attr, f


def load(path, sender):
    """The first datagram of each MAD type `sender` sent, decoded."""
    first = {}
    if not os.path.exists(path):
        return first
    for line in open(path):
        parts = line.split()
        if len(parts) != 4 or parts[0] != sender:
            continue
        d = decode(parts[0], parts[1], int(parts[2]), bytes.fromhex(parts[3]))
        if d and d[0] not in first:
            first[d[0]] = d[1]
    return first


# Per program: fields whose value is the application's own (PATTERN of
# the field name, reason).
PROGRAM_MASKS = {
    "rstream": [("private data", "rsocket's connection data: its buffers' addresses, keys and sizes")],
}


def sequence(path, ours_ip):
    """One capture's CM MADs in order, for a failure's message: e.g.
    "REQ> <REP REJ>(reason 28)" ("X>": ours sent it, "<X": the kernel)."""
    out = []
    if not os.path.exists(path):
        return "no capture"
    for line in open(path):
        parts = line.split()
        if len(parts) != 4:
            continue
        d = decode(parts[0], parts[1], int(parts[2]), bytes.fromhex(parts[3]))
        if not d:
            continue
        attr, f = d
        name = LAYOUT.get(attr, (f"{attr:#x}",))[0]
        if attr == 0x12:
            name += f"(reason {f['reason']}, rejecting {('REQ', 'REP', 'other')[min(f['message rejected'], 2)]})"
        elif attr == 0x11:
            name += f"(service timeout {f['service timeout']})"
        out.append(f"{name}>" if parts[0] == ours_ip else f"<{name}")
    return " ".join(out) or "none captured"


def main():
    if sys.argv[1:2] == ["--sequence"]:
        # mads.py --sequence FILE OURS_IP
        print(sequence(sys.argv[2], sys.argv[3]))
        return
    wdir, ours_ip, kern_ip = sys.argv[1:4]
    progs = sys.argv[4:]
    compared = 0
    for prog in progs:
        ours, kern = {}, {}
        for direction in ("ours-passive", "ours-active"):
            p = os.path.join(wdir, direction, prog + ".mads")
            for a, f in load(p, ours_ip).items():
                ours.setdefault(a, (direction, f))
            for a, f in load(p, kern_ip).items():
                kern.setdefault(a, (direction, f))
        for attr in sorted(set(ours) | set(kern)):
            name = LAYOUT.get(attr, (f"attribute {attr:#x}",))[0]
            label = f"CM MADs field by field, {prog}: {name}"
            if attr not in ours or attr not in kern:
                who = "ours" if attr in ours else "the kernel"
                print(f"INFO {label}: only {who} sent one (the other side's role never does)")
                continue
            (od, of), (kd, kf) = ours[attr], kern[attr]
            masked = MASKED | {k for k in kf for pat, _ in PROGRAM_MASKS.get(prog, []) if k.startswith(pat)}
            diff = [k for k in kf if k not in masked and of.get(k) != kf[k]]
            diff += [k for k in of if k not in kf]
            compared += 1
            n = sum(1 for k in kf if k not in masked)
            if diff:
                what = "; ".join(f"{k}: ours {of.get(k)!s:.60} kernel {kf.get(k)!s:.60}" for k in diff[:4])
                print(f"FAIL {label}: {len(diff)} of {n} fields differ (ours in {od}, the kernel's in {kd}): {what}")
            else:
                print(f"PASS {label}: {n} fields the same ({len(kf) - n} masked: random, one end's own or the "
                      "application's)")
    if compared == 0:
        print("FAIL CM MADs field by field: nothing to compare (no capture?)")


main()
