#!/usr/bin/env python3
"""A hostile peer on the carrier of swrdma-cm (compat-tests/soft-rdmacm-bad).

The carrier: Unix SOCK_DGRAM sockets in the abstract namespace, one per
process (swrdma-cm/<uid>/p<pid>-<hex>) and one per bound port
(swrdma-cm/<uid>/<ps as 4 hex digits>/<port>); each datagram one 256-byte
CM MAD (providers/swrdma/cm/src/mad.rs: a 24-byte MAD header, then the
message; every offset below is a message offset + 24).  This script binds
a name of its own so that answers come back to it, sends, and reads back
what comes.  Each mode prints one line ("ok: ..." or "bad: ...") and exits
0 when what came back is what the kernel's CM would send, 1 otherwise, 2
on a usage or setup error.

  hostile.py malformed PORT PID     junk to the port socket and PID's sockets
  hostile.py forge PORT PID         messages of no connection (guessed IDs)
  hostile.py forge-live LOG SPID CPID
                                    messages naming a live connection's real
                                    comm IDs (read from the server's
                                    SWRDMA_CM_TRACE log) from a non-peer
  hostile.py flood PORT N BACKLOG PID
                                    N valid REQs to a listener (process PID)
                                    that accepts nothing: N - BACKLOG REJs
                                    28, BACKLOG held (no answer; sent again,
                                    each gets an MRA), its RSS < +1 MB
  hostile.py flood-stopped PORT N BACKLOG PID AGENT
                                    (wire) the same, the listener SIGSTOPped
                                    while the REQs come: no answer until
                                    SIGCONT, then the same answers; the
                                    agent's (pid AGENT) RSS < +4 MB
  hostile.py foreign PORT           (root) a DREQ from uid 65534: no answer;
                                    the same DREQ from us: one DREP
  hostile.py repsent PORT           against `ucmatose -c 1`: its accepted id,
                                    destroyed with its REP unanswered, says REJ

On a wire device (compat-tests/wire-rdmacm-bad): hostile.py --wire SRC DST
[DST2 SRC2] MODE ARGS... plays a host of its own, SRC (an address of its
own network namespace): every MAD goes as RoCE v2 (a UD SEND to QPN 1,
P_Key 0xffff, the GSI Q_Key, a valid ICRC) from SRC:4791 to DST:4791, the
wire agent of the victim's host, and answers come back to SRC:4791.  The
process sockets are not reachable from another host: the agent is the one
target (DST2, the client's host, too in forge-live and forge, from SRC2).  malformed
adds what the agent must drop before any MAD is looked at: another Q_Key,
P_Key, destination QP or opcode, a wrong ICRC, datagrams too short for a
BTH.  foreign has no wire form (a datagram from the wire has no user).
"""

import os
import random
import re
import select
import signal
import socket
import struct
import sys
import time
import zlib

UID = os.getuid()
# --wire SRC DST [DST2]: see above.
WIRE = None
PS_TCP = 0x0106
PS_UDP = 0x0111
MAD_LEN = 256
HDR = 24

REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP = range(0x10, 0x19)
NAMES = {REQ: "REQ", MRA: "MRA", REJ: "REJ", REP: "REP", RTU: "RTU", DREQ: "DREQ",
         DREP: "DREP", SIDR_REQ: "SIDR_REQ", SIDR_REP: "SIDR_REP"}

rng = random.Random(os.getpid() ^ int(time.time() * 1e6))


def port_name(port, ps=PS_TCP):
    """Where the REQs for PORT go: its socket; on the wire the agent of
    the victim's host."""
    if WIRE:
        return WIRE[1]
    return "swrdma-cm/%d/%04x/%d" % (UID, ps, port)


def proc_names(pid):
    """The abstract names of process PID's own sockets (/proc/net/unix)."""
    pre = "@swrdma-cm/%d/p%d-" % (UID, pid)
    out = []
    with open("/proc/net/unix") as f:
        for line in f:
            p = line.split()
            if len(p) >= 8 and p[7].startswith(pre):
                out.append(p[7][1:])
    return sorted(set(out))


def addr(name):
    return "\0" + name


def mad(attr, tid=None, base=1, cls=0x07, cver=2, method=0x03, status=0):
    b = bytearray(MAD_LEN)
    b[0], b[1], b[2], b[3] = base, cls, cver, method
    struct.pack_into(">H", b, 4, status)
    struct.pack_into(">Q", b, 8, rng.getrandbits(64) if tid is None else tid)
    struct.pack_into(">H", b, 16, attr)
    return b


def put32(b, off, v):
    struct.pack_into(">I", b, HDR + off, v & 0xFFFFFFFF)


def msg(attr, local, remote, **kw):
    """A message naming comm IDs LOCAL (the sender's) and REMOTE (ours)."""
    b = mad(attr, **kw)
    if attr == SIDR_REP:
        put32(b, 0, remote)  # request ID
        b[HDR + 4] = 0       # status success
    else:
        put32(b, 0, local)
        put32(b, 4, remote)
    if attr == REJ:
        b[HDR + 8] = 2 << 6                        # message rejected: other
        struct.pack_into(">H", b, HDR + 10, 28)    # consumer defined
    elif attr == MRA:
        b[HDR + 8] = 2 << 6                        # message MRAed: other
        b[HDR + 9] = 24 << 3                       # service timeout
    elif attr == DREQ:
        put32(b, 8, 0x000100 << 8)                 # remote QPN
    return b


def ipcm(src_port, src="127.0.0.1", dst="127.0.0.1"):
    """The IP CM private-data header (providers/swrdma/cm/src/ipcm.rs)."""
    h = bytearray(36)
    h[0] = 0x00
    h[1] = 4 << 4
    struct.pack_into(">H", h, 2, src_port)
    h[4 + 12:4 + 16] = socket.inet_aton(src)
    h[20 + 12:20 + 16] = socket.inet_aton(dst)
    return h


def v4mapped(a):
    return bytes(10) + b"\xff\xff" + socket.inet_aton(a)


def req(comm, port, src_port, qpn, psn):
    """A REQ as rdma_cm sends it for 127.0.0.1 -> 127.0.0.1:PORT (mad.rs req_at);
    on the wire SRC -> DST:PORT."""
    sa, da = (WIRE[0], WIRE[1]) if WIRE else ("127.0.0.1", "127.0.0.1")
    b = mad(REQ)
    put32(b, 0, comm)                                           # local comm ID
    struct.pack_into(">Q", b, HDR + 8, (PS_TCP << 16) | port)   # service ID
    struct.pack_into(">Q", b, HDR + 16, 0x0002c9fffe000001)     # local CA GUID
    put32(b, 32, (qpn << 8) | 1)                # local QPN, responder resources 1
    put32(b, 36, 1)                             # local EECN 0, initiator depth 1
    b[HDR + 43] = 20 << 3                       # remote CM response timeout, RC
    put32(b, 44, (psn << 8) | (20 << 3) | 7)    # starting PSN, local timeout, retry 7
    struct.pack_into(">H", b, HDR + 48, 0xFFFF)  # P_Key
    b[HDR + 50] = (3 << 4) | 7                  # path MTU 1024, RNR retry 7
    b[HDR + 51] = 15 << 4                       # max CM retries
    struct.pack_into(">H", b, HDR + 52, 0xFFFF)  # local LID (RoCE: permissive)
    struct.pack_into(">H", b, HDR + 54, 0xFFFF)  # remote LID
    b[HDR + 56:HDR + 72] = v4mapped(sa)         # local GID
    b[HDR + 72:HDR + 88] = v4mapped(da)         # remote GID
    b[HDR + 93] = 64                            # hop limit
    b[HDR + 95] = 19 << 3                       # local ACK timeout
    b[HDR + 140:HDR + 176] = ipcm(src_port, sa, da)  # private data: the IP CM header
    return b


def Peer(tag="phostile"):
    return WirePeer() if WIRE else UnixPeer(tag)


class Answers:
    """What both kinds of peer share: the answers that came back (`got`),
    read from the sockets `fds()` names by `drain()`."""

    def settle(self, quiet=0.5, most=5.0):
        """Reads answers until none came for QUIET s (MOST s at most)."""
        end = time.monotonic() + most
        last = time.monotonic()
        n = len(self.got)
        while time.monotonic() < end:
            r, _, _ = select.select(self.fds(), [], [], 0.05)
            if r:
                self.drain()
            if len(self.got) != n:
                n = len(self.got)
                last = time.monotonic()
            elif time.monotonic() - last >= quiet:
                break


class UnixPeer(Answers):
    """Our socket on the carrier; what came back to it."""

    def __init__(self, tag="phostile"):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.name = "swrdma-cm/%d/%s-%d-%08x" % (UID, tag, os.getpid(), rng.getrandbits(32))
        self.s.bind(addr(self.name))
        self.s.setblocking(False)
        self.got = []      # (sender, bytes)
        self.gone = set()  # names nobody held

    def drain(self):
        while True:
            try:
                data, frm = self.s.recvfrom(8192)
            except (BlockingIOError, InterruptedError):
                return
            if isinstance(frm, bytes):
                frm = frm.decode("latin-1")
            self.got.append((frm.lstrip("\0"), bytes(data)))

    def send(self, to, data, deadline=None):
        """Sends one datagram, reading answers while the receiver is full."""
        deadline = deadline or time.monotonic() + 5
        while True:
            try:
                self.s.sendto(bytes(data), addr(to))
                return True
            except BlockingIOError:
                self.drain()
                if time.monotonic() > deadline:
                    return False
                select.select([self.s], [], [], 0.002)
            except (ConnectionRefusedError, FileNotFoundError):
                self.gone.add(to)
                return False

    def fds(self):
        return [self.s]


ROCE_PORT = 4791
GSI_QKEY = 0x80010000
UD_SEND_ONLY = 0x64


def roce(payload, src, dst, sport=ROCE_PORT, qkey=GSI_QKEY, pkey=0xFFFF, dqpn=1, opcode=UD_SEND_ONLY,
         deth=True, sqpn=1, bad_icrc=False):
    """The UDP payload of a RoCE v2 packet carrying PAYLOAD: BTH, DETH, the
    payload, its pad, and the ICRC (CRC-32 over the masked pseudo header:
    8 bytes 0xFF for the LRH, the IPv4 header with TOS, TTL and checksum
    all ones, identification 0 and DF as the kernel sends an unconnected
    socket's datagram with IP_PMTUDISC_DO, the UDP header with checksum
    0xFFFF, the BTH with its byte 4 all ones; least significant byte
    first), as providers/swrdma/roce/src/icrc.rs computes it."""
    pad = (4 - len(payload) % 4) % 4
    bth = bytearray(12)
    bth[0] = opcode
    bth[1] = pad << 4
    struct.pack_into(">H", bth, 2, pkey)
    struct.pack_into(">I", bth, 4, dqpn & 0xFFFFFF)
    struct.pack_into(">I", bth, 8, (1 << 31) | rng.getrandbits(24))
    ext = struct.pack(">II", qkey, sqpn & 0xFFFFFF) if deth else b""
    body = bytes(bth) + ext + bytes(payload) + bytes(pad)
    ulen = 8 + len(body) + 4
    iph = bytes([0x45, 0xFF]) + struct.pack(">HHBBBBH", 20 + ulen, 0, 0x40, 0, 0xFF, 17, 0xFFFF)
    iph += socket.inet_aton(src) + socket.inet_aton(dst)
    udph = struct.pack(">HHHH", sport, ROCE_PORT, ulen, 0xFFFF)
    masked = body[:4] + b"\xff" + body[5:]
    crc = zlib.crc32(b"\xff" * 8 + iph + udph + masked)
    if bad_icrc:
        crc ^= 0x00010000
    return body + struct.pack("<I", crc)


class WirePeer(Answers):
    """A host of our own on the wire: SRC:4791; what came back to it
    (the MADs of UD SENDs to QPN 1, by sender address)."""

    def __init__(self):
        self.src = WIRE[0]
        # DST2 is reached from SRC2 (another interface of ours)
        self.srcs = {WIRE[1]: WIRE[0]}
        if len(WIRE) == 4:
            self.srcs[WIRE[2]] = WIRE[3]
        self.socks = {}
        for a in sorted(set(self.srcs.values())):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER = IP_PMTUDISC_DO: DF, id 0
            try:
                s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE (root): a flood's answers
            except OSError:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
            s.bind((a, ROCE_PORT))
            s.setblocking(False)
            self.socks[a] = s
        self.s = self.socks[self.src]
        self.name = "%s:%d" % (self.src, ROCE_PORT)
        self.got = []
        self.gone = set()
        self.junk = 0      # datagrams back that were no MAD to QP1

    def drain(self):
        for s in self.socks.values():
            self.drain_one(s)

    def drain_one(self, s):
        while True:
            try:
                data, frm = s.recvfrom(8192)
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionRefusedError:
                continue
            if len(data) == 12 + 8 + MAD_LEN + 4 and data[0] == UD_SEND_ONLY:
                self.got.append((frm[0], bytes(data[20:20 + MAD_LEN])))
            else:
                self.junk += 1

    def send(self, to, data, deadline=None, raw=False, **kw):
        """Sends MAD bytes DATA (any length) to host TO's QP1; RAW: DATA is
        the whole UDP payload; KW: roce()'s header fields."""
        src = self.srcs.get(to, self.src)
        pkt = bytes(data) if raw else roce(data, src, to, **kw)
        try:
            self.socks[src].sendto(pkt, (to, ROCE_PORT))
        except ConnectionRefusedError:
            self.socks[src].sendto(pkt, (to, ROCE_PORT))
        time.sleep(0.0005)
        return True

    def fds(self):
        return list(self.socks.values())


def parse(b):
    """(attr, local comm ID, remote comm ID, extra) of an answer."""
    if len(b) != MAD_LEN:
        return ("len %d" % len(b), 0, 0, None)
    attr = struct.unpack_from(">H", b, 16)[0]
    local, remote = struct.unpack_from(">II", b, HDR)
    extra = None
    if attr == REJ:
        extra = struct.unpack_from(">H", b, HDR + 10)[0]   # reason
    elif attr == MRA:
        extra = b[HDR + 8] >> 6                            # message MRAed
    return (attr, local, remote, extra)


def describe(got):
    out = []
    for frm, b in got[:6]:
        a, l, r, x = parse(b)
        out.append("%s(%08x,%08x%s) from %s" % (NAMES.get(a, a), l, r,
                                               "" if x is None else ",%s" % x, frm))
    return "; ".join(out) + (" ..." if len(got) > 6 else "")


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()[0]
        return st not in ("Z", "X")
    except OSError:
        return False


def targets(port, pid):
    if WIRE:
        return list(WIRE[1:3])
    t = [port_name(port)]
    pn = proc_names(pid)
    if not pn:
        print("bad: no process socket @swrdma-cm/%d/p%d-* in /proc/net/unix" % (UID, pid))
        sys.exit(2)
    return t + pn


def dreq_control(p, to):
    """A valid DREQ for no connection: the kernel's CM answers one DREP."""
    local, remote = rng.getrandbits(32) | 1, rng.getrandbits(32) | 1
    before = len(p.got)
    p.send(to, msg(DREQ, local, remote))
    p.settle(quiet=0.3, most=3)
    new = p.got[before:]
    ok = (len(new) == 1 and parse(new[0][1])[:3] == (DREP, remote, local))
    return ok, new


# --- modes ------------------------------------------------------------------------------

def malformed(port, pid):
    to = targets(port, pid)
    p = Peer()
    body = msg(DREQ, rng.getrandbits(32) | 1, rng.getrandbits(32) | 1)
    junk = [
        ("empty", b""),
        ("1 byte", b"\x01"),
        ("255 bytes (a DREQ cut short)", body[:255]),
        ("257 bytes (a DREQ and 1 byte)", body + b"\0"),
        # (on the wire: 1024, what a datagram with DF set can carry here)
        ("%d bytes (a DREQ and %d zero bytes)" % (1024 if WIRE else 4096, (1024 if WIRE else 4096) - MAD_LEN),
         body + bytes((1024 if WIRE else 4096) - MAD_LEN)),
    ]
    for i in range(16):
        junk.append(("random blob %d" % i, bytes(rng.getrandbits(8) for _ in range(MAD_LEN))))
    for what, off, val in [("base version 0", 0, 0), ("base version 2", 0, 2),
                           ("class 0x03", 1, 0x03), ("class 0x81", 1, 0x81),
                           ("class version 1", 2, 1), ("class version 3", 2, 3),
                           ("method 0x01 (Get)", 3, 0x01), ("method 0x81 (GetResp)", 3, 0x81),
                           ("method 0x83", 3, 0x83),
                           ("status 0x8000", 4, 0x80), ("status 0x001c", 5, 0x1C)]:
        b = bytearray(body)
        b[off] = val
        junk.append((what, b))
    for attr in (0x19, 0x1A, 0xFFFF, 0x0000, 0x0F):
        b = bytearray(body)
        struct.pack_into(">H", b, 16, attr)
        junk.append(("attribute 0x%04x" % attr, b))
    junk = [(what, b, {}) for what, b in junk]
    if WIRE:
        # The valid DREQ, in what QP1 must drop before the MAD is looked at.
        for what, kw in [("Q_Key 0x12345678", dict(qkey=0x12345678)), ("Q_Key 0x80010001", dict(qkey=0x80010001)),
                         ("Q_Key 0", dict(qkey=0)), ("P_Key 0x8001", dict(pkey=0x8001)),
                         ("P_Key 0x1234", dict(pkey=0x1234)), ("P_Key 0x0000", dict(pkey=0)),
                         ("P_Key 0xfffe", dict(pkey=0xFFFE)), ("P_Key 0x7ffe", dict(pkey=0x7FFE)),
                         ("destination QP 0", dict(dqpn=0)), ("destination QP 2", dict(dqpn=2)),
                         ("destination QP 0xffffff", dict(dqpn=0xFFFFFF)),
                         ("opcode RC SEND only, no DETH", dict(opcode=0x04, deth=False)),
                         ("opcode UC SEND only, no DETH", dict(opcode=0x24, deth=False)),
                         ("opcode UD SEND only with immediate", dict(opcode=0x65)),
                         ("a wrong ICRC", dict(bad_icrc=True))]:
            junk.append(("wire: " + what, body, kw))
        for n in (0, 1, 11, 12, 19, 24):
            junk.append(("wire: a UDP payload of %d bytes" % n, bytes(rng.getrandbits(8) for _ in range(n)),
                         dict(raw=True)))
        for i in range(4):
            junk.append(("wire: random 300-byte UDP payload %d" % i,
                         bytes(rng.getrandbits(8) for _ in range(300)), dict(raw=True)))
    answered = []
    for t in to:
        for what, b, kw in junk:
            before = len(p.got)
            if not p.send(t, b, **kw) and t in p.gone:
                print("bad: %s: nobody holds that name any more" % t)
                return 1
            p.settle(quiet=0.01, most=0.2)
            if len(p.got) != before:
                answered.append("%s -> %s: %s" % (what, t, describe(p.got[before:])))
    p.settle(quiet=0.3)
    if not alive(pid):
        print("bad: the victim (pid %d) died" % pid)
        return 1
    if answered:
        print("bad: %d of %d malformed datagrams answered: %s" % (len(answered), len(junk) * len(to),
                                                                 " | ".join(answered)[:900]))
        return 1
    ok, new = dreq_control(p, to[0])
    if not ok:
        print("bad: no reply to any of %d malformed datagrams, but the control DREQ (no connection) "
              "got %s, not one DREP" % (len(junk) * len(to), describe(new) or "nothing"))
        return 1
    print("ok: %d malformed datagrams (%d kinds) to %s: none answered; a valid DREQ afterwards got its "
          "one DREP" % (len(junk) * len(to), len(junk), ", ".join(to)))
    return 0


def forge(port, pid):
    to = targets(port, pid)
    p = Peer()
    ids = [0, 1, rng.getrandbits(32), 0xFFFFFFFF]
    sent = 0
    for t in to:
        for attr in (REP, RTU, DREQ, DREP, REJ, MRA, SIDR_REP):
            for c in ids:
                # LOCAL and REMOTE both the guess, and the guess as ours
                # with a random sender's ID.
                for local in (c, rng.getrandbits(32)):
                    p.send(t, msg(attr, local, c))
                    sent += 1
                    p.drain()
    p.settle(quiet=0.5)
    if WIRE:
        # (each host's agent answers its DREQs: on a loaded machine an
        # agent's first answer may come after half a second of quiet, so
        # the answers are waited for until every host has answered, 5 s at
        # most; what is missing after that is missing)
        end = time.monotonic() + 5.0
        while {frm for frm, _ in p.got} != set(to) and time.monotonic() < end:
            p.settle(quiet=0.5, most=max(0.1, end - time.monotonic()))
        p.settle(quiet=0.5)
    drep = rejstale = 0
    wrong = []
    for frm, b in p.got:
        a, l, r, x = parse(b)
        if a == DREP:
            drep += 1
        elif a == REJ and x == 10:
            rejstale += 1
        else:
            wrong.append((frm, b))
    n_dreq = len(to) * len(ids) * 2
    n_rep = n_dreq
    if not alive(pid):
        print("bad: the victim (pid %d) died" % pid)
        return 1
    if wrong or drep > n_dreq or rejstale:
        print("bad: %d forged messages; answers other than one DREP per DREQ: "
              "%d DREPs, %d REJ stale, others: %s" % (sent, drep, rejstale, describe(wrong)))
        return 1
    by = {}
    for frm, b in p.got:
        by[frm] = by.get(frm, 0) + 1
    if WIRE and set(by) != set(to):
        # (each host's agent answers its DREQs: what was sent got there)
        print("bad: %d forged messages to %s: DREPs only from %s" % (sent, ", ".join(to), sorted(by) or "nobody"))
        return 1
    print("ok: %d forged REP/RTU/DREQ/DREP/REJ/MRA/SIDR_REP (comm IDs 0, 1, random, 0xffffffff) to %s: "
          "answered %d DREPs (of %d DREQs; from %s), nothing else (no REJ for the %d REPs, as Linux 6.1)"
          % (sent, ", ".join(to), drep, n_dreq, ", ".join("%s: %d" % kv for kv in sorted(by.items())) or "none",
             n_rep))
    return 0


def forge_live(log, spid, cpid):
    """The server's trace names the client's comm ID (its REQ's local comm
    ID) and its own (the RTU's remote comm ID)."""
    cl = sv = None
    end = time.monotonic() + 5
    rx = re.compile(r"Rtu\(Rtu \{ local_comm_id: (\d+), remote_comm_id: (\d+)")
    while time.monotonic() < end and cl is None:
        with open(log, errors="replace") as f:
            for line in f:
                m = rx.search(line)
                if m:
                    cl, sv = int(m.group(1)), int(m.group(2))
                    break
        if cl is None:
            time.sleep(0.05)
    if cl is None:
        print("bad: no RTU in the server's trace %s: cannot name the connection" % log)
        return 2
    if WIRE:
        # The server's agent takes what names the server's comm ID, the
        # client's agent what names the client's.
        sto, cto = [WIRE[1]], list(WIRE[2:3])
    else:
        sto, cto = proc_names(spid), proc_names(cpid)
    if not sto or not cto:
        print("bad: process sockets not found (server %s, client %s)" % (sto, cto))
        return 2
    p = Peer()
    sent = 0
    for t_list, local, remote in ((sto, cl, sv), (cto, sv, cl)):
        for t in t_list:
            for attr in (DREQ, REJ, DREP, RTU, MRA, REP):
                p.send(t, msg(attr, local, remote))
                sent += 1
    p.settle(quiet=0.5)
    for pid in (spid, cpid):
        if not alive(pid):
            print("bad: pid %d died" % pid)
            return 1
    if p.got:
        print("bad: %d messages naming the live connection (%08x/%08x) answered: %s"
              % (sent, cl, sv, describe(p.got)))
        return 1
    print("ok: %d DREQ/REJ/DREP/RTU/MRA/REP naming the live connection's comm IDs %08x/%08x "
          "from a non-peer to both processes: nothing answered" % (sent, cl, sv))
    return 0


def wait_for(p, pred, secs):
    """The first answer (from index 0 on) PRED accepts, reading for SECS."""
    end = time.monotonic() + secs
    while True:
        p.drain()
        for frm, b in p.got:
            if pred(parse(b)):
                return frm, b
        left = end - time.monotonic()
        if left <= 0:
            return None
        select.select([p.s], [], [], min(left, 0.05))


def repsent(port):
    """An active side that never sends its RTU, against `ucmatose -c 1`:
    REQ A is accepted (MRA, REP); REQ B is refused by rdma_reject (REJ 28);
    the server then gives up and destroys A's id while its REP is
    unanswered: the kernel's cm_destroy_id sends REJ consumer defined
    (IB_CM_REP_SENT / IB_CM_MRA_REP_RCVD), so A's peer learns of it."""
    to = port_name(port)
    p = Peer()
    a, b = rng.getrandbits(32) | 1, rng.getrandbits(32) | 1
    p.send(to, req(a, port, 41000, 0x2000, rng.getrandbits(24)))
    rep = wait_for(p, lambda m: m[0] == REP and m[2] == a, 5)
    if rep is None:
        print("bad: no REP for REQ %08x (answers: %s)" % (a, describe(p.got) or "none"))
        return 2
    srv = parse(rep[1])[1]
    p.send(to, req(b, port, 41001, 0x2001, rng.getrandbits(24)))
    rej_b = wait_for(p, lambda m: m[0] == REJ and m[2] == b, 5)
    if rej_b is None:
        print("bad: REQ %08x (no room left) not rejected (answers: %s)" % (b, describe(p.got) or "none"))
        return 1
    rej_a = wait_for(p, lambda m: m[0] == REJ and m[2] == a and m[1] == srv, 3)
    p.settle(quiet=0.3, most=1)
    if rej_a is None:
        print("bad: the REP of %08x was never answered by us, the server gave up (REJ %d for %08x), "
              "but no REJ came for %08x (its id destroyed with the REP outstanding); all answers: %s"
              % (a, parse(rej_b[1])[3], b, a, describe(p.got)))
        return 1
    print("ok: REP for %08x left unanswered; REJ %d for %08x (rdma_reject); then REJ %d for %08x "
          "(its id destroyed)" % (a, parse(rej_b[1])[3], b, parse(rej_a[1])[3], a))
    return 0


def stopped(pid):
    """Every thread of PID in the stopped state (T)."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
        for t in tids:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "T":
                    return False
        return True
    except OSError:
        return False


def vmrss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def flood(port, n, backlog, pid, agent=None):
    """AGENT (wire only): the pid of the victim host's agent; the listener
    is then SIGSTOPped while the REQs come (the agent keeps what its port
    socket cannot take), and SIGCONTed once they are all sent."""
    to = port_name(port)
    p = Peer()
    rss0 = vmrss(pid)
    arss0 = arss1 = vmrss(agent) if agent else 0
    comms = set()
    reqs = {}
    end = time.monotonic() + 10
    if agent:
        os.kill(pid, signal.SIGSTOP)
        # (every thread of it stopped before the first REQ)
        stop_end = time.monotonic() + 2
        while time.monotonic() < stop_end and not stopped(pid):
            time.sleep(0.005)
    for i in range(n):
        c = rng.getrandbits(32) | 1
        while c in comms:
            c = rng.getrandbits(32) | 1
        comms.add(c)
        reqs[c] = req(c, port, 40000 + i, 0x1000 + i, rng.getrandbits(24))
        if not p.send(to, reqs[c], deadline=end):
            print("bad: REQ %d of %d not taken by %s%s" % (i + 1, n, to, " (gone)" if to in p.gone else ""))
            return 1
        p.drain()
    if agent:
        time.sleep(0.3)
        arss1 = vmrss(agent)
        early = len(p.got)
        os.kill(pid, signal.SIGCONT)
    p.settle(quiet=1.0 if agent else 0.5, most=20 if agent else 8)
    time.sleep(0.2)
    p.drain()
    # The requests handed to the listener get no answer yet (the kernel
    # only prepares their MRA, IB_CM_MRA_FLAG_DELAY): each is sent again,
    # as a peer whose timer ran out would, and the duplicate gets it.
    refused = {parse(b)[2] for _, b in p.got if parse(b)[0] == REJ}
    silent = [c for c in comms if c not in refused]
    first = len(p.got)
    for c in silent:
        p.send(to, reqs[c], deadline=time.monotonic() + 5)
    p.settle(quiet=0.5, most=8)
    p.drain()
    dup_answers = p.got[first:]
    mra = rej = 0
    other = []
    answered = set()
    for frm, b in p.got:
        a, l, r, x = parse(b)
        if r not in comms:
            other.append((frm, b))
        elif a == MRA and x == 0:
            mra += 1
            answered.add(r)
        elif a == REJ and x == 28:
            rej += 1
            answered.add(r)
        else:
            other.append((frm, b))
    rss1 = vmrss(pid)
    if not alive(pid):
        print("bad: the listener (pid %d) died" % pid)
        return 1
    grow = rss1 - rss0
    line = ("%d REQs: %d REJs (28), %d held with no answer, whose duplicates got %d MRAs (REQ); %d other answers; "
            "listener RSS %d -> %d kB") % (n, rej, len(silent), mra, len(other), rss0, rss1)
    early_mras = sum(1 for _, b in p.got[:first] if parse(b)[0] == MRA)
    if early_mras:
        other += [x for x in p.got[:first] if parse(x[1])[0] == MRA]
    agrow = 0
    if agent:
        if not alive(agent):
            print("bad: the agent (pid %d) died" % agent)
            return 1
        agrow = arss1 - arss0
        line = ("listener stopped: %d answers while it was; " % early) + line + (
            "; the agent's RSS %d -> %d kB with the REQs queued, %d kB after" % (arss0, arss1, vmrss(agent)))
    if other:
        line += "; other: " + describe(other)
    if (mra != backlog or rej != n - backlog or len(answered) != n or other or grow >= 1024
            or agrow >= 4096 or (agent and early) or len(dup_answers) != len(silent)):
        print("bad: " + line + (" (expected %d REJs 28, %d held, an MRA for each duplicate of those and nothing "
                                "else, RSS growth < 1 MB%s)")
              % (n - backlog, backlog, ", the agent's < 4 MB, no answer while stopped" if agent else ""))
        return 1
    print("ok: " + line)
    return 0


def foreign(port):
    if os.getuid() != 0:
        print("bad: needs root")
        return 2
    to = port_name(port)
    local, remote = rng.getrandbits(32) | 1, rng.getrandbits(32) | 1
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(r)
        code = 3
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            # Our name still says uid 0: only the credentials differ.
            p = Peer("pforeign")
            p.send(to, msg(DREQ, local, remote))
            p.settle(quiet=1.0, most=2.0)
            os.write(w, ("%d %d" % (os.getuid(), len(p.got))).encode())
            code = 0
        except Exception as e:  # noqa: BLE001
            os.write(w, ("error %s" % e).encode())
        os._exit(code)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        out += chunk
    os.waitpid(child, 0)
    parts = out.decode().split()
    if len(parts) != 2 or parts[0] == "error":
        print("bad: the uid-65534 child failed: %s" % out.decode())
        return 2
    uid, n = int(parts[0]), int(parts[1])
    p = Peer()
    ok, new = dreq_control(p, to)
    if n != 0:
        print("bad: a DREQ from uid %d (SCM_CREDENTIALS) was answered with %d messages" % (uid, n))
        return 1
    if not ok:
        print("bad: nothing answered the DREQ from uid %d, but the same DREQ from uid %d got %s, "
              "not one DREP" % (uid, UID, describe(new) or "nothing"))
        return 1
    print("ok: a DREQ from uid %d: no answer; the same DREQ from uid %d: one DREP" % (uid, UID))
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    global WIRE
    if argv[1] == "--wire":
        n = 0
        while 2 + n < len(argv) and argv[2 + n].count(".") == 3:
            n += 1
        WIRE = tuple(argv[2:2 + n])
        argv = argv[:1] + argv[2 + n:]
        if n not in (2, 4):
            print("bad: usage: --wire SRC DST [DST2 SRC2]")
            return 2
        if argv[1] == "foreign":
            print("bad: foreign has no wire form")
            return 2
    m = argv[1]
    try:
        if m == "malformed":
            return malformed(int(argv[2]), int(argv[3]))
        if m == "forge":
            return forge(int(argv[2]), int(argv[3]))
        if m == "forge-live":
            return forge_live(argv[2], int(argv[3]), int(argv[4]))
        if m == "flood":
            return flood(int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]))
        if m == "flood-stopped":
            return flood(int(argv[2]), int(argv[3]), int(argv[4]), int(argv[5]), int(argv[6]))
        if m == "foreign":
            return foreign(int(argv[2]))
        if m == "repsent":
            return repsent(int(argv[2]))
    except (IndexError, ValueError) as e:
        print("bad: usage (%s)" % e)
        return 2
    print("bad: unknown mode %s" % m)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
