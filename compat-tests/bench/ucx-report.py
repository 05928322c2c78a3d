#!/usr/bin/env python3
"""Section "ucx" of `make bench` (issue 34, item 1): reads what ucx.sh left in
build/bench/ucx/ and prints UCX over swr0 beside the references measured in
the same run, as ratios, with the issue's bound and "meets" / "misses" /
"n/a (why)"; writes build/bench/ucx.json.  Never a failing exit status.

Each figure is the median of the rounds (the spread, lowest-highest, beside
it).  Latency: ucx_perftest's 50.0%ile (one way: UCX halves each round
trip) and perftest's t_typical of ib_send_lat (half a round trip).
Bandwidth: ucx_perftest's overall bandwidth (MB/s = 2^20 B/s), in GB/s =
10^9 B/s."""
import json
import os
import re
import statistics
import sys

D = os.environ.get("UCX_BENCH_DIR", "build/bench/ucx")
MIB = 1 << 20
SIZES = (4096, 65536, 1048576)


def read(name):
    try:
        return open(os.path.join(D, name)).read()
    except OSError:
        return ""


def rounds():
    rs = set()
    for n in os.listdir(D) if os.path.isdir(D) else []:
        m = re.match(r"ib_send_lat\.8\.(\d+)\.rc$", n)
        if m:
            rs.add(int(m.group(1)))
    return sorted(rs)


def ucx_final(name):
    """ucx_perftest's Final line: (p50 us, overall GB/s) or the reason."""
    t = read(name + ".client")
    m = re.search(r"^Final:\s+(.*)$", t, re.M)
    if not m:
        errs = [ln.strip() for ln in (t + read(name + ".server")).splitlines() if "ERROR" in ln or "rror" in ln]
        rc = read(name + ".rc").strip() or "?"
        return None, f"{name}: exit {rc}: " + (" | ".join(errs[:2])[:160] or "no Final line")
    f = [float(x) for x in m.group(1).split()[:8]]
    return (f[1], f[5] * MIB / 1e9), None


def send_lat(name):
    """ib_send_lat's t_typical (us) or the reason."""
    t = read(name + ".client")
    lines = t.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip().startswith("#bytes") and i + 1 < len(lines):
            f = lines[i + 1].split()
            if len(f) >= 5:
                return float(f[4]), None
    return None, f"{name}: exit {read(name + '.rc').strip() or '?'}: no result line"


def series(get, name, idx, rs):
    """The median over the rounds of one figure, its spread and the reasons
    of the rounds that gave none."""
    vals, whys = [], []
    for r in rs:
        v, why = get(f"{name}.{r}")
        if v is None:
            whys.append(why)
        else:
            vals.append(v if idx is None else v[idx])
    if not vals:
        return dict(value=None, why=whys[0] if whys else "not run")
    out = dict(value=statistics.median(vals), rounds=vals)
    if whys:
        out["failed_rounds"] = whys
    return out


def ratio(a, b):
    if a.get("value") is None or b.get("value") is None or not b["value"]:
        return None
    return a["value"] / b["value"]


def verdict(rt, limit, a, b):
    if rt is None:
        why = a.get("why") or b.get("why") or "not measured"
        return f"n/a ({why})"
    return "meets" if rt <= limit else "misses"


def fmt(s, digits):
    v = s.get("value")
    if v is None:
        return "n/a"
    rs = s.get("rounds", [])
    if len(rs) > 1:
        return f"{v:.{digits}f} ({min(rs):.{digits}f}-{max(rs):.{digits}f})"
    return f"{v:.{digits}f}"


def row(fig, ours, ref, rt, target, verd):
    print(f"{fig:<40} {ours:>22} {ref:>22} {rt:>6} {target:>6}  {verd}")


def main():
    print()
    print("== UCX over swr0 beside its references (issue 34, item 1), same run, server CPU 0, client CPU 1")
    skipped = read("skipped").strip() or read("nodev").strip()
    rs = rounds()
    res = {"rounds": len(rs), "rows": []}
    if skipped or not rs:
        print(f"not run: {skipped or 'no rounds'}")
        res["skipped"] = skipped or "no rounds"
        json.dump(res, open(D + ".json", "w"), indent=1)
        return
    print(f"median of {len(rs)} rounds (lowest-highest); latency us one way, bandwidth GB/s (10^9 B/s)")
    row("figure", "ours", "reference", "ratio", "target", "verdict")
    sl = series(send_lat, "ib_send_lat.8", None, rs)
    lat = {k: series(ucx_final, f"{k}.tag_lat.8", 0, rs) for k in ("sm", "rc", "ud")}

    def add(fig, ours, ref, ref_is, limit, digits):
        rt = ratio(ours, ref)
        if limit is None:
            verd, target = "-", "-"
        else:
            verd, target = verdict(rt, limit, ours, ref), f"<= {limit:g}"
        row(fig, fmt(ours, digits), fmt(ref, digits), "n/a" if rt is None else f"{rt:.2f}", target, verd)
        res["rows"].append(dict(figure=fig, ours=ours, reference=ref, reference_is=ref_is,
                                ratio=rt, limit=limit, verdict=verd))

    add("tag_lat 8 B rc_verbs swr0, p50", lat["rc"], sl, "swr0 ib_send_lat -s 8 typical", 2, 3)
    add("tag_lat 8 B rc_verbs swr0, p50", lat["rc"], lat["sm"], "UCX sm tag_lat p50", None, 3)
    add("tag_lat 8 B ud_verbs swr0, p50", lat["ud"], sl, "swr0 ib_send_lat -s 8 typical", None, 3)
    for t in ("tag_bw", "ucp_put_bw"):
        for s in SIZES:
            ours = series(ucx_final, f"rc.{t}.{s}", 1, rs)
            ref = series(ucx_final, f"sm.{t}.{s}", 1, rs)
            add(f"{t} {s // 1024} KiB rc_verbs swr0", ours, ref, f"UCX sm {t} {s} B", None, 2)
    print("(references: ib_send_lat -s 8 on swr0 with our library for the bound; UCX_TLS=sm on Debian's "
          "libibverbs beside every UCX figure; '-': printed beside, no bound)")
    with open(D + ".json", "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
