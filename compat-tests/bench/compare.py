#!/usr/bin/env python3
"""compare.py RUNS_DIR BASE_NAME OURS_NAME: the perftest figures of
base-<n>.json and ours-<n>.json (compare.sh) side by side.

Latency: t_typical (us, lower is better); bandwidth: BW average (GB/s,
higher is better).  For each figure: the base's runs, ours, ours / base
(of the base's median), the noise (the base runs' spread, max/min - 1)
and a verdict: "slower" when ours is worse than the worst base run by
more than the noise, else "same" (or "faster").
"""
import glob
import json
import os
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


def main():
    runs, base_name, ours_name = sys.argv[1:4]
    base = [figures(p) for p in sorted(glob.glob(os.path.join(runs, "base-*.json")))]
    ours = [figures(p) for p in sorted(glob.glob(os.path.join(runs, "ours-*.json")))]
    keys = sorted({k for f in base + ours for k in f})
    print(f"== the software device, {base_name} (base) and {ours_name} (ours), {len(base)} + {len(ours)} runs alternated ==")
    print(f"{'test':14} {'size':>8} {'unit':5} {'base runs':>22} {'ours runs':>22} {'ours/base':>9} {'noise':>6}  verdict")
    slower = 0
    for k in keys:
        b = [f[k] for f in base if k in f]
        o = [f[k] for f in ours if k in f]
        if not b or not o:
            print(f"{k[0]:14} {k[1]:>8} {k[2]:5} {'not measured in both':>22}")
            continue
        lower_better = k[2] == "us"
        bm, om = statistics.median(b), statistics.median(o)
        ratio = om / bm if bm else float("nan")
        noise = (max(b) / min(b) - 1) if min(b) > 0 else 0.0
        worst_base = max(b) if lower_better else min(b)
        worse = (om > worst_base * (1 + noise)) if lower_better else (om < worst_base / (1 + noise))
        better = (om < min(b)) if lower_better else (om > max(b))
        verdict = "slower" if worse else ("faster" if better else "same")
        slower += worse
        fmt = lambda v: " ".join(f"{x:.3g}" for x in v)
        print(f"{k[0]:14} {k[1]:>8} {k[2]:5} {fmt(b):>22} {fmt(o):>22} {ratio:9.2f} {noise:6.0%}  {verdict}")
    print(f"compare: {len(keys)} figures, {slower} slower beyond the noise")


if __name__ == "__main__":
    main()
