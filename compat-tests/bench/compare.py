#!/usr/bin/env python3
"""compare.py RUNS_DIR BASE_NAME OURS_NAME: the perftest figures of
base-<n>.json and ours-<n>.json (compare.sh) side by side.

Latency: t_typical (us, lower is better); bandwidth: BW average (GB/s,
higher is better); with the VM wire section (BENCH_SECTIONS=wire), its
three tables too, each figure as a ratio to rxe<->rxe of the same run (the
runs' text output, base-<n>.txt / ours-<n>.txt).  Each side's figure is its best run (as the bench's
limits are: a run slowed down by anything else on the machine is not the
code's figure).  For each figure: the runs, ours / base (best to best),
the noise (the larger spread of either side's runs, max/min - 1, and at
least the printed precision, 0.01 us of the value) and a verdict: "slower"
when ours is worse than the base by more than the noise, "faster" when
better by more, else "same".
"""
import glob
import json
import os
import re
import statistics
import sys


def figures(path):
    try:
        d = json.load(open(path))
    except (OSError, ValueError):
        return {}
    s = d.get("soft") or {}
    out = {}
    for r in s.get("latency", []):
        if r.get("t_typical_us") is not None:
            out[(r["test"], r["bytes"], "us")] = r["t_typical_us"]
    for r in s.get("bandwidth", []):
        if r.get("bw_avg_GBps") is not None:
            out[(r["test"], r["bytes"], "GB/s")] = r["bw_avg_GBps"]
    return out


# The VM wire section (wire-report.py's three tables in the run's text
# output): for each test and pair, the ratio to rxe<->rxe of the same run,
# which cancels the VM's speed of the moment (TCG).  Key: (table test,
# pair, unit); unit "x" (higher better: bandwidth) or "us" (lower better:
# latency and CPU time, as ratios).  A 0 (a run that measured nothing) is
# left out and counted.
WIRE_TABLES = (("RoCE v2 over", "perf"), ("CPU time per message, both", "cpu-proc"),
               ("CPU time per message, the whole", "cpu-vm"))
WIRE_ROW = re.compile(r"^(ib_\w+)" + r"\s+([\d.]+)" * 7 + r"\s*$")


def wire_figures(path):
    out, tab, failed = {}, None, 0
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return {}, 0
    for line in lines:
        for head, name in WIRE_TABLES:
            if line.startswith(head):
                tab = name
        m = WIRE_ROW.match(line)
        if not (m and tab):
            continue
        v = [float(x) for x in m.groups()[1:]]
        unit = "x" if tab == "perf" and m.group(1).endswith("_bw") else "us"
        for pair, r in (("rxe-ours", v[2]), ("ours-rxe", v[4]), ("ours-ours", v[6])):
            if r > 0:
                out[(f"{tab} {m.group(1)}", pair, unit)] = r
            else:
                failed += 1
    return out, failed


# Issue 34, item 3: ours on memory that is shared already (perftest
# --use_hugepages, shared_ref's memfd), from the runs' text output, beside
# the base's perftest figure of the same test and size on private memory
# (its results.json): what "no slower than the shared-registration design
# reached on private memory" asks.
HUGE_ROW = re.compile(r"perftest (ib_\w+) --use_hugepages (\d+) (B|KiB|MiB): shared object: (?:typical )?([\d.]+) (us|GB/s)")
MEMFD_ROW = re.compile(r"shared_ref (write|read)\s+memfd\s*: (.*)$")
MEMFD_FIG = re.compile(r"(\d+) (B|KiB|MiB) ([\d.]+) us(?: = ([\d.]+) GB/s)?")
SCALE = {"B": 1, "KiB": 1024, "MiB": 1024 * 1024}


def shared_figures(path):
    """{(test, bytes, unit, kind): figure} of one run's text output."""
    out = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = HUGE_ROW.search(line)
        if m:
            out[(m.group(1), int(m.group(2)) * SCALE[m.group(3)], m.group(5), "--use_hugepages")] = float(m.group(4))
        m = MEMFD_ROW.search(line)
        if m:
            for f in MEMFD_FIG.finditer(m.group(2)):
                n = int(f.group(1)) * SCALE[f.group(2)]
                if n <= 2:
                    out[(f"ib_{m.group(1)}_lat", n, "us", "memfd")] = float(f.group(3))
                elif f.group(4):
                    out[(f"ib_{m.group(1)}_bw", n, "GB/s", "memfd")] = float(f.group(4))
    return out


def shared_table(runs, base):
    ours = [shared_figures(p) for p in sorted(glob.glob(os.path.join(runs, "ours-*.txt")))]
    if not any(ours):
        return 0
    print("\n== issue 34, item 3: ours on memory shared already (perftest --use_hugepages; memfd: shared_ref, "
          "its own WRITE/READ loop) beside the base's perftest on private memory, same test and size ==")
    label = lambda k: (f"{k[0]} {k[3]}", k[1], k[2])
    o = [{label(k): v for k, v in f.items()} for f in ours]
    b = [{label(k): f[k[:3]] for f2 in ours for k in f2 if k[:3] in f} for f in base]
    return table(b, o)


def main():
    runs, base_name, ours_name = sys.argv[1:4]
    base = [figures(p) for p in sorted(glob.glob(os.path.join(runs, "base-*.json")))]
    ours = [figures(p) for p in sorted(glob.glob(os.path.join(runs, "ours-*.json")))]
    print(f"== the software device, {base_name} (base) and {ours_name} (ours), {len(base)} + {len(ours)} runs alternated ==")
    slower = table(base, ours)
    slower += shared_table(runs, base)
    wb = [wire_figures(p) for p in sorted(glob.glob(os.path.join(runs, "base-*.txt")))]
    wo = [wire_figures(p) for p in sorted(glob.glob(os.path.join(runs, "ours-*.txt")))]
    if any(f for f, _ in wb + wo):
        print("\n== the VM wire section: each figure ours' pair / rxe<->rxe of the same run ==")
        print(f"   figures that measured nothing (0, left out): base {sum(n for _, n in wb)}, ours {sum(n for _, n in wo)}")
        slower += table([f for f, _ in wb], [f for f, _ in wo])
    print(f"compare: {slower} slower beyond the noise")


def table(base, ours):
    keys = sorted({k for f in base + ours for k in f})
    if not keys:
        return 0
    print(f"{'test':32} {'size':>9} {'unit':5} {'base runs':>30} {'ours runs':>30} {'best/best':>9} {'noise':>6}  verdict")
    slower = 0
    for k in keys:
        b = [f[k] for f in base if k in f]
        o = [f[k] for f in ours if k in f]
        if not b or not o:
            print(f"{k[0]:32} {k[1]:>9} {k[2]:5} {'not measured in both':>30}")
            continue
        lower_better = k[2] == "us"
        best = min if lower_better else max
        bb, ob = best(b), best(o)
        ratio = ob / bb if bb else float("nan")
        spread = lambda v: (max(v) / min(v) - 1) if min(v) > 0 else 0.0
        noise = max(spread(b), spread(o), (0.01 / bb) if lower_better and bb else 0.0)
        worse_by = (ratio - 1) if lower_better else (1 / ratio - 1 if ratio else float("inf"))
        worse = worse_by > noise + 1e-9
        better = -worse_by > noise + 1e-9
        verdict = "slower" if worse else ("faster" if better else "same")
        slower += worse
        fmt = lambda v: " ".join(f"{x:.3g}" for x in v)
        print(f"{k[0]:32} {k[1]:>9} {k[2]:5} {fmt(b):>30} {fmt(o):>30} {ratio:9.2f} {noise:6.0%}  {verdict}")
    print(f"{len(keys)} figures, {slower} slower beyond the noise")
    return slower


if __name__ == "__main__":
    main()
