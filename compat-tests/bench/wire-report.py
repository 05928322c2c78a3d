#!/usr/bin/env python3
"""The RoCE v2 section of `make bench`: perftest over the VM's veth pairs
(compat-tests/vm-wire run with WIRE_CPU=1, clean link) -- latency and
bandwidth of rxe<->ours (both directions) and ours<->ours beside rxe<->rxe of
the same VM run, as ratios, and the CPU time per message of each pair beside
rxe-rxe's, with the ratio: both processes' user+system time (bash's `times`)
and the whole guest's busy time around the pair (/proc/stat, which also
counts rxe's kernel work), over the iterations.  Reads build/compat-tests/vm-wire/results.json and the
PAIR/clean/TEST/{server,client}.cpu files; prints the tables and writes
build/bench/wire.json.  Numbers, never pass/fail."""
import json
import os
import re
import sys

RES = "build/compat-tests/vm-wire"
PAIRS = ["rxe-rxe", "rxe-ours", "ours-rxe", "ours-ours"]
TESTS = ["ib_send_lat", "ib_write_lat", "ib_read_lat", "ib_atomic_lat",
         "ib_send_bw", "ib_write_bw", "ib_read_bw", "ib_atomic_bw"]


def cpu_seconds(path):
    """bash `times`: line 2 is the children's 'XmY.YYYs XmY.YYYs'."""
    try:
        lines = open(path).read().split("\n")
    except OSError:
        return None
    if len(lines) < 2:
        return None
    tot = 0.0
    for m in re.finditer(r"(\d+)m([\d.]+)s", lines[1]):
        tot += int(m.group(1)) * 60 + float(m.group(2))
    return tot


def guest_busy_seconds(d):
    """The whole guest's busy CPU time over a pair (/proc/stat's "cpu" line
    before and after: user nice system idle iowait irq softirq steal ...,
    in USER_HZ = 100 ticks a second); None without both lines."""
    vals = []
    for n in ("stat0", "stat1"):
        try:
            f = open(os.path.join(d, n)).read().split()
        except OSError:
            return None
        if len(f) < 8 or f[0] != "cpu":
            return None
        t = [int(x) for x in f[1:9]]
        vals.append(sum(t) - t[3] - t[4])
    return (vals[1] - vals[0]) / 100.0


def figure(t):
    f = t.get("figures") or {}
    if "t_typical[usec]" in f:
        return f["t_typical[usec]"], "us"
    if "BW average[MB/sec]" in f:
        return f["BW average[MB/sec]"], "MB/s"
    return None, ""


def main():
    try:
        doc = json.load(open(os.path.join(RES, "results.json")))
    except (OSError, ValueError) as e:
        print(f"wire: no vm-wire results ({e})")
        return 0
    by = {}
    for t in doc.get("tests", []):
        if t.get("condition") != "clean" or t.get("result") != "PASS":
            continue
        v, unit = figure(t)
        iters = (t.get("figures") or {}).get("#iterations")
        d = os.path.join(RES, "run", "results", t["pair"], "clean", t["id"])
        cs = [cpu_seconds(os.path.join(d, s + ".cpu")) for s in ("server", "client")]
        cpu = None
        if iters and all(c is not None for c in cs):
            cpu = sum(cs) / iters * 1e6
        g = guest_busy_seconds(d)
        gcpu = g / iters * 1e6 if (iters and g is not None) else None
        by[(t["pair"], t["id"])] = {"value": v, "unit": unit, "cpu_us_per_msg": cpu, "iterations": iters,
                                    "guest_cpu_us_per_msg": gcpu}
    out = {"tests": {f"{p}/{t}": by[(p, t)] for (p, t) in by}}
    print()
    print("RoCE v2 over the VM's veth (Soft-RoCE rxe0 vs ours' wire device; perftest, clean link)")
    print("latency: t_typical us (ratio = ours/rxe-rxe time, < 1 faster); bandwidth: MB/s (ratio = ours/rxe-rxe, > 1 faster)")
    hdr = f"{'test':<14} {'rxe-rxe':>10}" + "".join(f" {p:>10} {'ratio':>6}" for p in PAIRS[1:])
    print(hdr)
    print("-" * len(hdr))
    ratios = {}
    for t in TESTS:
        ref = by.get(("rxe-rxe", t), {}).get("value")
        row = f"{t:<14} {ref if ref is not None else '-':>10}"
        for p in PAIRS[1:]:
            v = by.get((p, t), {}).get("value")
            r = (v / ref) if (v is not None and ref) else None
            ratios[f"{p}/{t}"] = r
            row += f" {v if v is not None else '-':>10} {('%.2f' % r) if r is not None else '-':>6}"
        print(row)
    for key, title in (("cpu_us_per_msg", "CPU time per message, both processes (us; user+system over the"
                        " iterations; rxe's kernel work in softirqs is not in its processes' time)"),
                       ("guest_cpu_us_per_msg", "CPU time per message, the whole VM (us; /proc/stat busy time"
                        " around the pair over the iterations: rxe's kernel work included)")):
        print()
        print(title)
        print("ratio = ours' pair / rxe-rxe (< 1: less CPU per message)")
        hdr = f"{'test':<14} {'rxe-rxe':>10}" + "".join(f" {p:>10} {'ratio':>6}" for p in PAIRS[1:])
        print(hdr)
        print("-" * len(hdr))
        for t in TESTS:
            ref = by.get(("rxe-rxe", t), {}).get(key)
            row = f"{t:<14} {('%.1f' % ref) if ref is not None else '-':>10}"
            for p in PAIRS[1:]:
                c = by.get((p, t), {}).get(key)
                r = c / ref if (c is not None and ref) else None
                ratios[f"{key}/{p}/{t}"] = r
                row += f" {('%.1f' % c) if c is not None else '-':>10} {('%.2f' % r) if r is not None else '-':>6}"
            print(row)
    out["ratios"] = ratios
    os.makedirs("build/bench", exist_ok=True)
    with open("build/bench/wire.json", "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
