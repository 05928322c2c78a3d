#!/usr/bin/env python3
"""vm-rdmacm's MAD capture (in the VM): every RoCE v2 datagram to QPN 1
(the CM's MADs) seen on an interface, in both directions, one line each:
    <source IP> <destination IP> <UDP source port> <hex of the UDP payload>
written to OUT until SIGTERM.  READY is created once the socket is bound.
    mad-capture.py IFACE OUT READY
(An AF_PACKET socket: root; IPv4 over Ethernet only, as the VM's veth.)
"""
import signal
import socket
import struct
import sys

iface, out, ready = sys.argv[1:4]
ETH_P_ALL = 0x0003
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
s.bind((iface, 0))
s.settimeout(0.2)
stop = False


def on_term(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
open(ready, "w").close()
with open(out, "w") as f:
    while not stop:
        try:
            frame = s.recv(65536)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if len(frame) < 14 + 20 + 8 + 12 or struct.unpack("!H", frame[12:14])[0] != 0x0800:
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        if ip[9] != 17:
            continue
        udp = ip[ihl:]
        sport, dport = struct.unpack("!HH", udp[:4])
        pay = udp[8:]
        if dport != 4791 or len(pay) < 12 or int.from_bytes(pay[5:8], "big") != 1:
            continue
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        f.write(f"{src} {dst} {sport} {pay.hex()}\n")
        f.flush()
