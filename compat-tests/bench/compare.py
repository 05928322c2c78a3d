#!/usr/bin/env python3
"""compare.py RUNS_DIR BASE_NAME OURS_NAME: the perftest figures of
base-<n>.json and ours-<n>.json (compare.sh) side by side.

Latency: t_typical (us, lower is better); bandwidth: BW average (GB/s,
higher is better).  Each side's figure is its best run (as the bench's
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
    print(f"{'test':14} {'size':>8} {'unit':5} {'base runs':>22} {'ours runs':>22} {'best/best':>9} {'noise':>6}  verdict")
    slower = 0
    for k in keys:
        b = [f[k] for f in base if k in f]
        o = [f[k] for f in ours if k in f]
        if not b or not o:
            print(f"{k[0]:14} {k[1]:>8} {k[2]:5} {'not measured in both':>22}")
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
        print(f"{k[0]:14} {k[1]:>8} {k[2]:5} {fmt(b):>22} {fmt(o):>22} {ratio:9.2f} {noise:6.0%}  {verdict}")
    print(f"compare: {len(keys)} figures, {slower} slower beyond the noise")


if __name__ == "__main__":
    main()
