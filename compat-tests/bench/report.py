#!/usr/bin/env python3
"""compat-tests/bench: formats the raw outputs of run.sh (build/bench/...).

    report.py header|soft|vm    print that part
    report.py json              write build/bench/results.json (everything found)
"""
import glob
import json
import os
import re
import sys

B = "build/bench"
LAT_TESTS = ["ib_send_lat", "ib_write_lat", "ib_read_lat"]
BW_TESTS = ["ib_send_bw", "ib_write_bw", "ib_read_bw"]
MIB = 1 << 20
TARGET_LAT_US = 1.0      # ib_send_lat 2 B, typical
TARGET_BW_GBPS = 6.0     # ib_write_bw 64 KiB, BW average, 10^9 B/s


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def kv_lines(path):
    d = {}
    for line in (read(path) or "").splitlines():
        k, _, v = line.partition(" ")
        if k:
            d[k] = v.strip()
    return d


def fields(s):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", s)}


# ---- header -------------------------------------------------------------------
def machine():
    return kv_lines(f"{B}/machine")


def print_header():
    m = machine()
    print("== libibverbs (Rust) benchmarks: numbers, not pass/fail ==")
    print(f"machine: {m.get('nproc', '?')} CPUs, {m.get('cpu', '?')}, {m.get('kernel', '?')}, "
          f"load average {m.get('loadavg', '?')} at start")
    print(f"tree:    {m.get('git', '?')}, perftest {m.get('perftest', '?')}, {m.get('date', '')}")
    print(f"ours:    {m.get('library', '?')} (benchmarked from a copy in {B}/lib)")
    sys.stdout.flush()


# ---- A. software device -----------------------------------------------------------
def limits():
    lim = {}
    for line in (read(f"{B}/limits/memcpy") or "").splitlines():
        p = line.split()
        if len(p) >= 3 and p[0] == "memcpy":
            f = fields(line)
            key = {65536: "memcpy_64KiB", 64 * MIB: "memcpy_64MiB"}.get(int(p[1]), f"memcpy_{p[1]}")
            lim[key] = {"bytes": int(p[1]), "best_GBps": f.get("best_gbps"), "median_GBps": f.get("median_gbps")}
    s = read(f"{B}/limits/shm_pingpong") or ""
    if s.startswith("shm_pingpong one_way"):
        f = fields(s)
        lim["shm_pingpong"] = {"one_way_ns_best": f.get("one_way_ns_best"),
                               "one_way_ns_median": f.get("one_way_ns_median"),
                               "pinned": bool(f.get("pinned")), "round_trips": int(f.get("round_trips", 0))}
    elif s:
        lim["shm_pingpong"] = {"error": s.strip()}
    return lim


def perftest_row(path):
    """first result row of a perftest client output: list of numbers"""
    for line in (read(path) or "").splitlines():
        if re.match(r"^\s*\d+\s+\d+\s+[0-9.]", line):
            try:
                return [float(x) for x in line.split()]
            except ValueError:
                return None
    return None


def status_str(rc, timeout):
    if rc == "124":
        return f"hung, killed after {timeout} s"
    if rc.isdigit() and int(rc) > 128:
        sig = {6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}.get(int(rc) - 128)
        return f"killed by {sig or 'signal %d' % (int(rc) - 128)}"
    return f"exit status {rc}"


def run_status(base):
    """(client rc, server rc, timeout) of one perftest run"""
    rc = (read(base + ".rc") or "? ? ?").split() + ["?", "?", "?"]
    return rc[0], rc[1], rc[2]


def perftest_error(base):
    crc, src, to = run_status(base)
    if crc == "skip":
        return "not run: the perftest time budget (BENCH_SOFT_BUDGET) was used up"
    out = (read(base + ".client") or "").strip().splitlines()
    errl = [l for l in out if re.search(r"(?i)err|fail|couldn|unable|timeout", l)]
    last = (errl or out or ["no output"])[-1].strip()
    return f"client {status_str(crc, to)}, server {status_str(src, to)}: {last[:90]}"


def run_notes(base, ok):
    """what went wrong besides the client's result: a first attempt, the server"""
    notes = []
    if ok and os.path.exists(base + ".try1.rc"):
        notes.append("first attempt failed (" + perftest_error(base + ".try1") + "), this is the second")
    crc, src, to = run_status(base)
    if ok and src != "0":
        notes.append(f"server {status_str(src, to)}")
    return notes


def soft_results():
    S = f"{B}/soft"
    if not os.path.isdir(S):
        return None
    res = {"skipped": (read(f"{S}/skipped") or "").strip() or None,
           "unpinned": (read(f"{S}/unpinned") or "").strip() or None,
           "latency": [], "bandwidth": []}
    lim = limits()
    one_way = lim.get("shm_pingpong", {}).get("one_way_ns_best")
    cache = lim.get("memcpy_64KiB", {}).get("best_GBps")
    dram = lim.get("memcpy_64MiB", {}).get("best_GBps")
    for base in sorted(glob.glob(f"{S}/ib_*.*.rc")):
        base = base[:-3]
        test, size = os.path.basename(base).rsplit(".", 1)
        if not size.isdigit():
            continue                      # <test>.<size>.try1: read through run_notes
        size = int(size)
        row = perftest_row(base + ".client")
        r = {"test": test, "bytes": size}
        crc, src, _ = run_status(base)
        r["status"] = {"client": crc, "server": src}
        if crc != "0":
            row = None
        notes = run_notes(base, row is not None)
        if notes:
            r["notes"] = notes
        if test in LAT_TESTS:
            if row and len(row) >= 6:
                r.update(iterations=int(row[1]), t_min_us=row[2], t_max_us=row[3], t_typical_us=row[4],
                         t_avg_us=row[5])
                if len(row) >= 9:
                    r.update(t_p99_us=row[7], t_p999_us=row[8])
                if one_way:
                    # perftest reports one-way latency for send/write, the round trip for read
                    lim_ns = one_way * (2 if test == "ib_read_lat" else 1)
                    r["limit_ns"] = lim_ns
                    r["typical_over_limit"] = round(row[4] * 1000 / lim_ns, 2)
                    r["avg_over_limit"] = round(row[5] * 1000 / lim_ns, 2)
            else:
                r["error"] = perftest_error(base)
                if os.path.exists(base + ".try1.rc"):
                    r["error"] = "twice; " + r["error"]
            res["latency"].append(r)
        elif test in BW_TESTS:
            if row and len(row) >= 5:
                avg = row[3] * MIB / 1e9
                peak = row[2] * MIB / 1e9
                r.update(iterations=int(row[1]), bw_avg_GBps=round(avg, 4), bw_peak_GBps=round(peak, 4),
                         msg_rate_Mpps=row[4])
                if cache:
                    r["avg_over_memcpy_cache"] = round(avg / cache, 4)
                if dram:
                    r["avg_over_memcpy_dram"] = round(avg / dram, 4)
            else:
                r["error"] = perftest_error(base)
                if os.path.exists(base + ".try1.rc"):
                    r["error"] = "twice; " + r["error"]
            res["bandwidth"].append(r)
    for k in ("latency", "bandwidth"):
        order = LAT_TESTS if k == "latency" else BW_TESTS
        res[k].sort(key=lambda r: (order.index(r["test"]), r["bytes"]))
    res["limits"] = lim
    res["targets"] = targets(res)
    return res


def find(rows, test, size):
    for r in rows:
        if r["test"] == test and r["bytes"] == size:
            return r
    return None


def targets(res):
    t = []
    r = find(res["latency"], "ib_send_lat", 2)
    e = {"target": "ib_send_lat 2 B typical <= 1 us", "limit": TARGET_LAT_US}
    if r and "t_typical_us" in r:
        e.update(value=r["t_typical_us"], unit="us", verdict="meets" if r["t_typical_us"] <= TARGET_LAT_US else "misses")
    else:
        e.update(value=None, verdict="not measured", error=(r or {}).get("error"))
    t.append(e)
    r = find(res["bandwidth"], "ib_write_bw", 65536)
    e = {"target": "ib_write_bw 64 KiB >= 6 GB/s (BW average)", "limit": TARGET_BW_GBPS}
    if r and "bw_avg_GBps" in r:
        e.update(value=r["bw_avg_GBps"], peak=r["bw_peak_GBps"], unit="GB/s",
                 verdict="meets" if r["bw_avg_GBps"] >= TARGET_BW_GBPS else "misses")
    else:
        e.update(value=None, verdict="not measured", error=(r or {}).get("error"))
    t.append(e)
    return t


def size_str(n):
    if n >= MIB and n % MIB == 0:
        return f"{n // MIB} MiB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} B"


def num(x, w=7):
    if x is None:
        return "-".rjust(w)
    if x >= 100:
        return f"{x:{w}.1f}"
    if x >= 10:
        return f"{x:{w}.2f}"
    return f"{x:{w}.3f}" if x < 1 else f"{x:{w}.2f}"


def print_soft():
    res = soft_results()
    print()
    print('A. Software device swr0 (issue "kernel-free software device", item 6)')
    if res is None:
        print("   not run")
        return
    if res["skipped"]:
        print(f"   skipped: {res['skipped']}")
        return
    if res["unpinned"]:
        print(f"   note: {res['unpinned']}")
    lim = res["limits"]
    c, d, s = lim.get("memcpy_64KiB", {}), lim.get("memcpy_64MiB", {}), lim.get("shm_pingpong", {})
    print("   limits of this machine (best of 7 trials):")
    print(f"     memcpy 64 KiB (in cache)      {num(c.get('best_GBps'))} GB/s   (median {num(c.get('median_GBps'), 0)})")
    print(f"     memcpy 64 MiB (DRAM)          {num(d.get('best_GBps'))} GB/s   (median {num(d.get('median_GBps'), 0)})")
    if "error" in s:
        print(f"     shm ping-pong                 {s['error']}")
    else:
        print(f"     shm ping-pong, one way        {num(s.get('one_way_ns_best'))} ns     (median "
              f"{num(s.get('one_way_ns_median'), 0)}; CPUs 0/1, {'pinned' if s.get('pinned') else 'NOT pinned'})")
    print()
    print("   latency, us (perftest -n 10000, server CPU 0, client CPU 1): typical / average, x = typical / limit")
    print("   (limit = shm one-way latency; ib_read_lat reports a round trip, so its limit is 2x one way)")
    hdr = "   " + "bytes".rjust(7) + "".join(f" | {t:^26}" for t in LAT_TESTS)
    print(hdr)
    print("   " + "-" * (len(hdr) - 3))
    sizes = sorted({r["bytes"] for r in res["latency"]})
    for sz in sizes:
        line = "   " + size_str(sz).rjust(7)
        for t in LAT_TESTS:
            r = find(res["latency"], t, sz)
            if r is None:
                cell = "-"
            elif "error" in r:
                cell = "not run" if r["error"].startswith("not run") else "failed"
            else:
                x = r.get("typical_over_limit")
                cell = f"{num(r['t_typical_us'])} /{num(r['t_avg_us'])} " + (f"{x:6.1f}x" if x is not None else "")
            line += f" | {cell:>26}"
        print(line)
    print()
    print("   bandwidth, GB/s = 10^9 B/s (perftest BW average): GB/s (GB/s / memcpy in cache | / memcpy DRAM)")
    print("   (swrdma copies each message twice, through 4 MiB rings that stay in L3: ratios to DRAM can pass 1)")
    hdr = "   " + "bytes".rjust(7) + "".join(f" | {t:^25}" for t in BW_TESTS)
    print(hdr)
    print("   " + "-" * (len(hdr) - 3))
    sizes = sorted({r["bytes"] for r in res["bandwidth"]})
    for sz in sizes:
        line = "   " + size_str(sz).rjust(7)
        for t in BW_TESTS:
            r = find(res["bandwidth"], t, sz)
            if r is None:
                cell = "-"
            elif "error" in r:
                cell = "not run" if r["error"].startswith("not run") else "failed"
            else:
                cell = (f"{num(r['bw_avg_GBps'])} ({r.get('avg_over_memcpy_cache', 0):.3f} | "
                        f"{r.get('avg_over_memcpy_dram', 0):.3f})")
            line += f" | {cell:>25}"
        print(line)
    for r in res["latency"] + res["bandwidth"]:
        if "error" in r:
            print(f"   failed: {r['test']} -s {r['bytes']}: {r['error']}")
        for n in r.get("notes", []):
            print(f"   note: {r['test']} -s {r['bytes']}: {n}")
    m = machine()
    print(f"   load average (1 min) before / after this section: {m.get('loadavg_before_soft', '?')} / "
          f"{m.get('loadavg_after_soft', '?')} on {m.get('nproc', '?')} CPUs")
    print()
    print("   targets (from the issue; reported, not enforced):")
    for t in res["targets"]:
        if t["value"] is None:
            print(f"     {t['target']:<44} not measured")
        elif t["unit"] == "us":
            print(f"     {t['target']:<44} {t['value']:.2f} us         {t['verdict']}")
        else:
            print(f"     {t['target']:<44} {t['value']:.2f} GB/s (peak {t['peak']:.2f})  {t['verdict']}")
    sys.stdout.flush()


# ---- B. VM ---------------------------------------------------------------------
VM_ROWS = [
    ("startup_process", "first-call startup, whole process (ms)", 1e-3),
    ("startup_calls", "  of which the 4 calls, in-process (ms)", 1e-3),
    ("mr_4k", "MR reg+dereg 4 KiB (us/op)", 1),
    ("mr_1m", "MR reg+dereg 1 MiB (us/op)", 1),
    ("cq", "CQ create+destroy, 256 cqe (us/op)", 1),
    ("qp", "RC QP create>INIT>RTR>RTS>destroy (us/op)", 1),
]


def vm_results():
    V = f"{B}/vm"
    if not os.path.isdir(V):
        return None
    res = {"vm_run_status": None, "info": kv_lines(f"{V}/vminfo"), "libs": {}}
    rc = (read(f"{V}/vm-run.rc") or "").strip()
    res["vm_run_status"] = int(rc) if rc.lstrip("-").isdigit() else None
    if res["vm_run_status"] not in (0, None) and not glob.glob(f"{V}/*.1.out"):
        out = (read(f"{V}/vm-run.out") or "").strip().splitlines()
        res["error"] = "; ".join(l.strip() for l in out if "ERROR" in l or "vm:" in l)[:400] or \
            (out[-1] if out else "no output")
    for lib in ("upstream", "ours"):
        rounds = []
        for out in sorted(glob.glob(f"{V}/{lib}.*.out"), key=lambda p: int(p.split(".")[-2])):
            base = out[:-4]
            r = {"round": int(base.split(".")[-1]), "status": None, "results": {}, "failures": {}}
            s = (read(base + ".rc") or "").strip()
            r["status"] = int(s) if s.lstrip("-").isdigit() else None
            for line in (read(out) or "").splitlines():
                p = line.split(" ", 2)
                if p[0] == "lib" and len(p) >= 2:
                    r["lib"] = line[4:]
                elif p[0] == "result" and len(p) >= 3:
                    r["results"][p[1]] = fields(p[2])
                elif p[0] == "fail" and len(p) >= 2:
                    r["failures"].setdefault(p[1], p[2] if len(p) > 2 else "")
            err = (read(base + ".err") or "").strip()
            if err:
                r["stderr"] = err[-500:]
            if r["status"] == 124:
                r["failures"].setdefault("timeout", "killed after 60 s")
            rounds.append(r)
        # per benchmark: the lower of the rounds' medians (the least disturbed round)
        best = {}
        for r in rounds:
            for k, v in r["results"].items():
                if "median" in v and (k not in best or v["median"] < best[k]):
                    best[k] = v["median"]
        # how much the rounds disagree: (max - min) / min of the rounds' medians
        spread = {}
        for k in best:
            meds = [r["results"][k]["median"] for r in rounds if k in r["results"]]
            if len(meds) > 1 and min(meds) > 0:
                spread[k] = round((max(meds) - min(meds)) / min(meds), 3)
        res["libs"][lib] = {"rounds": rounds, "median_us": best, "round_spread": spread}
    up, ours = res["libs"].get("upstream", {}).get("median_us", {}), res["libs"].get("ours", {}).get("median_us", {})
    res["ratio_ours_over_upstream"] = {k: round(ours[k] / up[k], 3) for k in ours if k in up and up[k] > 0}
    return res


def print_vm():
    res = vm_results()
    print()
    print('B. Ours vs upstream on Soft-RoCE (issue "real devices", item 7): numbers only')
    if res is None:
        print("   not run")
        return
    info = res["info"]
    if "error" in res or not res["libs"].get("upstream", {}).get("rounds"):
        print(f"   VM run failed (vm-run.sh status {res['vm_run_status']}): {res.get('error', 'no results')}")
        return
    nr = len(res["libs"]["upstream"]["rounds"])
    print(f"   one VM boot: Debian kernel {info.get('kernel', '?')}, qemu/TCG, {info.get('cpus', '?')} vCPUs; "
          f"device rxe0, RoCE v2 GID {info.get('gid_index', '?')}")
    print(f"   the same binary (build/bench/vm_bench) with and without LD_LIBRARY_PATH={info.get('our_ld', '?')};")
    print(f"   {nr} round(s) alternating upstream/ours; per op: median, the lower of the rounds' medians;")
    print("   round spread = how far the rounds' medians differ ((max-min)/min, worse library): TCG and host noise")
    libs = {k: v for k, v in res["libs"].items()}
    for lib in ("upstream", "ours"):
        rs = libs.get(lib, {}).get("rounds", [])
        paths = sorted({r.get("lib", "?") for r in rs})
        if paths:
            print(f"   {lib:<9} runs {', '.join(paths)}")
    ours_fail = None
    o = libs.get("ours", {})
    if o.get("rounds") and not o.get("median_us"):
        f = {}
        for r in o["rounds"]:
            f.update(r["failures"])
        why = f.get("open") or f.get("startup") or f.get("timeout") or \
            next(iter(f.values()), None) or f"exit status {o['rounds'][0]['status']}"
        ours_fail = why
    print()
    print(f"   {'operation':<44}{'upstream':>11}{'ours':>11}{'ours/upstream':>15}{'round spread':>14}")
    print("   " + "-" * 95)
    up = libs.get("upstream", {}).get("median_us", {})
    om = o.get("median_us", {})
    for key, label, scale in VM_ROWS:
        u, v = up.get(key), om.get(key)
        us = f"{u * scale:11.2f}" if u is not None else f"{'failed':>11}"
        vs = f"{v * scale:11.2f}" if v is not None else f"{'-' if ours_fail else 'failed':>11}"
        ratio = res["ratio_ours_over_upstream"].get(key)
        rs = f"{ratio:15.2f}" if ratio is not None else f"{'-':>15}"
        sp = [libs.get(l, {}).get("round_spread", {}).get(key) for l in ("upstream", "ours")]
        sp = [x for x in sp if x is not None]
        ss = f"{'up to %d%%' % round(100 * max(sp)):>14}" if sp else f"{'-':>14}"
        print(f"   {label:<44}{us}{vs}{rs}{ss}")
    if ours_fail:
        print(f"   ours: failed to open device ({ours_fail})")
    for lib in ("upstream", "ours"):
        seen = set()
        for r in libs.get(lib, {}).get("rounds", []):
            for k, why in r["failures"].items():
                if (lib == "ours" and ours_fail) or (k, why) in seen:
                    continue
                seen.add((k, why))
                print(f"   {lib}: {k} failed ({why})")
    m = machine()
    print(f"   host load average (1 min) before / after this section: {m.get('loadavg_before_vm', '?')} / "
          f"{m.get('loadavg_after_vm', '?')}")
    sys.stdout.flush()


def write_json():
    m = machine()
    out = {
        "machine": {k: m.get(k) for k in ("date", "nproc", "cpu", "kernel", "loadavg", "git", "perftest", "library",
                                          "loadavg_before_soft", "loadavg_after_soft", "loadavg_before_vm",
                                          "loadavg_after_vm")},
        "elapsed_s": int(m["elapsed"]) if m.get("elapsed", "").isdigit() else None,
        "units": {"latency": "us (perftest), ns (shm ping-pong)",
                  "bandwidth": "GB/s = 10^9 bytes/s (perftest MB/s are MiB/s, converted)",
                  "vm": "us per op (median); ratios ours/upstream"},
        "soft": soft_results(),
        "vm": vm_results(),
    }
    if out["machine"]["nproc"] and out["machine"]["nproc"].isdigit():
        out["machine"]["nproc"] = int(out["machine"]["nproc"])
    with open(f"{B}/results.json.tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(f"{B}/results.json.tmp", f"{B}/results.json")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    {"header": print_header, "soft": print_soft, "vm": print_vm, "json": write_json}.get(
        what, lambda: sys.exit(__doc__))()
