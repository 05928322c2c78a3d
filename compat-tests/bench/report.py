#!/usr/bin/env python3
"""compat-tests/bench: formats the raw outputs of run.sh (build/bench/...).

    report.py header|soft|vm    print that part
    report.py json              write build/bench/results.json (everything found)
"""
import glob
import json
import os
import re
import statistics
import sys

B = "build/bench"
LAT_TESTS = ["ib_send_lat", "ib_write_lat", "ib_read_lat"]
ROUND_TRIP_TESTS = ("ib_read_lat", "ib_atomic_lat")    # perftest reports the round trip
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
    print(f"tree:    {m.get('git', '?')}, perftest {m.get('perftest', '?')}, ucx-utils {m.get('ucx') or 'missing'}, "
          f"{m.get('date', '')}")
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
    last = errl[-1].strip() if errl else f"last output: {out[-1].strip()}" if out else "no output"
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


def run_base(base):
    """test, size and status of one run <dir>/<prefix.>test.size"""
    test, size = os.path.basename(base).rsplit(".", 1)
    test = test.rsplit(".", 1)[-1]
    crc, src, _ = run_status(base)
    return {"test": test, "bytes": int(size), "status": {"client": crc, "server": src}}


def failed(r, base):
    r["error"] = perftest_error(base)
    if os.path.exists(base + ".try1.rc"):
        r["error"] = "twice; " + r["error"]
    return r


def lat_run(base, one_way=None):
    """one perftest latency run: t_min .. t_p999 in us, or error"""
    r = run_base(base)
    row = perftest_row(base + ".client") if r["status"]["client"] == "0" else None
    notes = run_notes(base, row is not None)
    if notes:
        r["notes"] = notes
    if not (row and len(row) >= 6):
        return failed(r, base)
    # perftest 4.5: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
    r.update(iterations=int(row[1]), t_min_us=row[2], t_max_us=row[3], t_typical_us=row[4], t_avg_us=row[5])
    if len(row) >= 9:
        r.update(t_p99_us=row[7], t_p999_us=row[8])
    if one_way:
        # perftest reports one-way latency for send/write, the round trip for read and atomics
        lim_ns = one_way * (2 if r["test"] in ROUND_TRIP_TESTS else 1)
        r["limit_ns"] = lim_ns
        r["typical_over_limit"] = round(row[4] * 1000 / lim_ns, 2)
        r["avg_over_limit"] = round(row[5] * 1000 / lim_ns, 2)
    return r


def bw_run(base, cache=None, dram=None):
    """one perftest bandwidth run: BW average and peak in GB/s, or error"""
    r = run_base(base)
    row = perftest_row(base + ".client") if r["status"]["client"] == "0" else None
    notes = run_notes(base, row is not None)
    if notes:
        r["notes"] = notes
    if not (row and len(row) >= 5):
        return failed(r, base)
    # perftest 4.5: #bytes #iterations BW_peak BW_average MsgRate, MB/s = 2^20 B/s
    avg = row[3] * MIB / 1e9
    peak = row[2] * MIB / 1e9
    r.update(iterations=int(row[1]), bw_avg_GBps=round(avg, 4), bw_peak_GBps=round(peak, 4), msg_rate_Mpps=row[4])
    if cache:
        r["avg_over_memcpy_cache"] = round(avg / cache, 4)
    if dram:
        r["avg_over_memcpy_dram"] = round(avg / dram, 4)
    return r


def ucx_run(base):
    """one ucx_perftest client: the Final line (UCX 1.13: iterations, 50.0%ile,
    latency average, latency overall (us, one way for ping-pong tests),
    bandwidth average, overall (MB/s = 2^20 B/s), message rate average, overall)"""
    crc, src, to = run_status(base)
    r = {"test": os.path.basename(base), "status": {"client": crc, "server": src}}
    row = None
    for line in (read(base + ".client") or "").splitlines():
        if line.startswith("Final:"):
            try:
                row = [float(x) for x in line.split()[1:9]]
            except ValueError:
                row = None
    if crc != "0" or not row or len(row) < 8:
        if crc == "skip":
            r["error"] = "not run"
            return r
        out = (read(base + ".client") or "").strip().splitlines()
        errl = [l for l in out if re.search(r"(?i)err|fail|unable|refused|timeout", l)]
        last = errl[-1].strip() if errl else f"last output: {out[-1].strip()}" if out else "no output"
        r["error"] = f"client {status_str(crc, to)}, server {status_str(src, to)}: {last[:90]}"
        if os.path.exists(base + ".try1.rc"):
            r["error"] = "twice; " + r["error"]
        return r
    r.update(iterations=int(row[0]), lat_p50_us=row[1], lat_avg_us=row[3],
             bw_overall_GBps=round(row[5] * MIB / 1e9, 4), msg_rate_overall=row[7])
    notes = []
    if os.path.exists(base + ".try1.rc"):
        notes.append("first attempt failed, this is the second")
    if src != "0":
        notes.append(f"server {status_str(src, to)}")
    if notes:
        r["notes"] = notes
    return r


def times(base):
    try:
        a, b = (read(base + ".times") or "").split()[:2]
        return float(a), float(b)
    except ValueError:
        return None


def cma_ref(T):
    """cma_ref.c's runs (before and after the perftest runs): per direction and size
    the median of each run's trials, the better of the runs (us per call, GB/s);
    "per_run": the same of each run alone (cma_ref.1, cma_ref.2)"""
    runs = [read(f) for f in sorted(glob.glob(f"{T}/cma_ref.[0-9]"))]
    if not runs:
        return None
    out = {"runs": len(runs), "per_run": []}
    for text in runs:
        one = {}
        for line in (text or "").splitlines():
            p = line.split()
            if len(p) < 4 or p[0] != "cma" or not p[2].isdigit():
                if line.strip() and not line.startswith("cma "):
                    out.setdefault("errors", []).append(line.strip()[:200])
                continue
            f = fields(line)
            if "median_us" not in f:
                continue
            k = f"{p[1]}.{p[2]}"
            one[k] = {"op": p[1], "bytes": int(p[2]), "us_per_call": f["median_us"], "GBps": f.get("median_gbps")}
            e = out.setdefault(k, {"op": p[1], "bytes": int(p[2])})
            if "us_per_call" not in e or f["median_us"] < e["us_per_call"]:
                e["us_per_call"] = f["median_us"]
                e["GBps"] = f.get("median_gbps")
        out["per_run"].append(one)
    return out


def shm_ns(T, name):
    """one shm_pingpong run's best one-way figure (ns), None when it did not run"""
    return fields(read(f"{T}/{name}") or "").get("one_way_ns_best")


def one_placement(xs):
    """whether shared-memory ping-pongs say one placement of the vCPUs held
    (largest <= 1.5 x smallest: the host's two placements give 40 and 160 ns);
    None when one of them did not run (one CPU, or a bench from before the probes)"""
    if not xs or any(x is None for x in xs):
        return None
    return max(xs) <= 1.5 * min(xs)


def shm_str(xs):
    return " / ".join("-" if x is None else f"{x:.0f}" for x in xs) + " ns"


def shared34(T):
    """issue 34 item 3, memory already shared: perftest --use_hugepages as is
    (huge1.*) and with SWRDMA_SHARED=0 (huge0.*), and shared_ref.c's lines"""
    out = {"huge_missing": (read(f"{T}/huge-missing") or "").strip() or None, "perftest": {}, "shared_ref": {}}
    for base in sorted(glob.glob(f"{T}/huge[01].*.rc")):
        base = base[:-3]
        mode, t, size = base.rsplit("/", 1)[1].split(".")
        run = lat_run(base) if t.endswith("_lat") else bw_run(base)
        out["perftest"][f"{mode}.{t}.{size}"] = run
    for line in (read(f"{T}/shared_ref") or "").splitlines():
        p = line.split()
        if len(p) >= 6 and p[0] == "shared" and p[3].isdigit():
            f = fields(line)
            out["shared_ref"][f"{p[1]}.{p[2]}.{p[3]}"] = {"us_per_op": f.get("us"), "GBps": f.get("gbps")}
        elif line.strip():
            out.setdefault("errors", []).append(line.strip()[:200])
    return out


def print_shared34(sh):
    """the rows of memory already shared, beside the private-memory ones"""
    if sh is None:
        return
    print("     memory already shared (issue 34 item 3; targets of the issue: 0.18-0.37 us, 26-71 GB/s at 64 KiB):")
    if sh.get("huge_missing"):
        print(f"       perftest --use_hugepages: not run: {sh['huge_missing']}")
    pt = sh.get("perftest", {})
    rows = [("ib_write_lat", 2), ("ib_read_lat", 2)]
    rows += [(t, z) for t in ("ib_write_bw", "ib_read_bw") for z in (4096, 65536, 1048576)]
    for t, size in rows:
        cells = []
        for mode, lab in (("huge1", "shared object"), ("huge0", "SWRDMA_SHARED=0, private path")):
            r = pt.get(f"{mode}.{t}.{size}")
            if r is None:
                continue
            if "error" in r:
                cells.append(f"{lab}: failed")
            elif t.endswith("_lat"):
                cells.append(f"{lab}: typical {r['t_typical_us']:.3f} us")
            else:
                cells.append(f"{lab}: {r['bw_avg_GBps']:.2f} GB/s")
        if cells:
            print(f"       perftest {t} --use_hugepages {size_str(size)}: " + "; ".join(cells))
    sr = sh.get("shared_ref", {})
    for op in ("write", "read"):
        for mem in ("memfd", "private"):
            cells = [f"{size_str(int(k.split('.')[2]))} {v['us_per_op']:.3f} us" +
                     (f" = {v['GBps']:.2f} GB/s" if int(k.split(".")[2]) >= 4096 else "")
                     for k, v in sorted(sr.items(), key=lambda kv: int(kv[0].split(".")[2]))
                     if k.startswith(f"{mem}.{op}.") and v.get("us_per_op") is not None]
            if cells:
                print(f"       shared_ref {op:<5} {mem:<7}: " + "; ".join(cells))
    for e in sh.get("errors", []):
        print(f"       note: {e}")


def target_runs():
    """the runs of build/bench/targets (run.sh section_targets)"""
    T = f"{B}/targets"
    if not os.path.isdir(T):
        return None
    res = {"ucx_missing": (read(f"{T}/ucx-missing") or "").strip() or None, "ucx": {}, "busy": {}}
    if not res["ucx_missing"]:
        res["ucx"]["tag_lat"] = ucx_run(f"{T}/ucx.tag_lat")
        if os.path.exists(f"{T}/ucx.ucp_put_lat.rc"):
            res["ucx"]["ucp_put_lat"] = ucx_run(f"{T}/ucx.ucp_put_lat")
        for base in sorted(glob.glob(f"{T}/ucx.ucp_put_bw.*.rc")):
            base = base[:-3]
            size = base.rsplit(".", 1)[1]
            if size.isdigit():
                r = ucx_run(base)
                r["bytes"] = int(size)
                res["ucx"][f"ucp_put_bw.{size}"] = r
    if os.path.exists(f"{T}/ib_atomic_lat.8.rc"):
        res["ib_atomic_lat"] = lat_run(f"{T}/ib_atomic_lat.8")
    if os.path.exists(f"{T}/t34.ib_send_lat.2.1.rc"):
        # three alternated pairs: UCX sm tag_lat (the first is ucx.tag_lat), then ib_send_lat
        res["t34"] = {"runs": [lat_run(f"{T}/t34.ib_send_lat.2.{k}") for k in (1, 2, 3)],
                      "ucx": [(res["ucx"].get("tag_lat") if k == 1 else ucx_run(f"{T}/t34.ucx.tag_lat.{k}"))
                              if not res["ucx_missing"] else None for k in (1, 2, 3)],
                      "shm_ns": [shm_ns(T, f"t34.shm.{i}") for i in range(4)]}
    elif os.path.exists(f"{T}/t34.ib_send_lat.2.rc"):
        # (a bench from before the pairs: one run after the reference)
        res["t34"] = {"ib_send_lat": lat_run(f"{T}/t34.ib_send_lat.2"),
                      "shm_ns": [shm_ns(T, f"t34.shm.{i}") for i in range(3)]}
    res["cma_ref"] = cma_ref(T)
    # private memory (issue 34, item 3): the ping-pongs around segments A, B, C
    # (run.sh: A = loop + latency runs, B = the -D bandwidth runs, C = A again)
    if glob.glob(f"{T}/pm.*"):
        res["pm"] = {"shm_ns": [shm_ns(T, f"pm.{i}") for i in range(4)]}
        for seg in ("A", "C"):
            for t in ("ib_write_lat", "ib_read_lat"):
                if os.path.exists(f"{T}/pm.{seg}.{t}.2.rc"):
                    res["pm"][f"{seg}.{t}"] = lat_run(f"{T}/pm.{seg}.{t}.2")
    res["shared34"] = shared34(T)
    res["dur"] = {}
    for base in sorted(glob.glob(f"{T}/dur.*.rc")):
        base = base[:-3]
        _, t, size = base.rsplit("/", 1)[1].split(".")
        if size.isdigit():
            res["dur"][f"{t}.{size}"] = bw_run(base)
    pairs = {}
    for k in ("pair1", "pairA", "pairB"):
        base = f"{T}/{k}.ib_write_bw.65536"
        if os.path.exists(base + ".rc"):
            pairs[k] = bw_run(base)
            t = times(base)
            if t:
                pairs[k]["client_start_end"] = t
    ta, tb = times(f"{T}/pairA.ib_write_bw.65536"), times(f"{T}/pairB.ib_write_bw.65536")
    if ta and tb:
        pairs["clients_overlap_s"] = round(min(ta[1], tb[1]) - max(ta[0], tb[0]), 3)
        pairs["clients_lifetime_s"] = [round(ta[1] - ta[0], 3), round(tb[1] - tb[0], 3)]
    res["pairs"] = pairs
    skipped = (read(f"{T}/busy.skipped") or "").strip()
    if skipped:
        res["busy"]["skipped"] = skipped
    else:
        res["busy"]["busy_processes"] = (read(f"{T}/busy.cpus") or "").strip() or None
        for t in ("ib_send_lat", "ib_write_lat"):
            if os.path.exists(f"{T}/busy.{t}.2.rc"):
                res["busy"][t] = lat_run(f"{T}/busy.{t}.2")
            if os.path.exists(f"{T}/quiet.{t}.2.rc"):
                res["busy"].setdefault("quiet", {})[t] = lat_run(f"{T}/quiet.{t}.2")
        if glob.glob(f"{T}/busy.shm.*"):
            res["busy"]["shm_ns"] = [shm_ns(T, f"busy.shm.{i}") for i in range(3)]
        if os.path.exists(f"{T}/busy.ucx.tag_lat.rc"):
            res["busy"]["ucx_tag_lat"] = ucx_run(f"{T}/busy.ucx.tag_lat")
    return res


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
        if test in LAT_TESTS:
            res["latency"].append(lat_run(base, one_way))
        elif test in BW_TESTS:
            res["bandwidth"].append(bw_run(base, cache, dram))
    for k in ("latency", "bandwidth"):
        order = LAT_TESTS if k == "latency" else BW_TESTS
        res[k].sort(key=lambda r: (order.index(r["test"]), r["bytes"]))
    res["limits"] = lim
    res["targets"] = targets(res)
    res["target_runs"] = target_runs()
    res["targets_issue12"] = targets12(res)
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


# ---- the targets of issue 12, item 3 ---------------------------------------------
def target(name, fig, ref, op, limit, unit, ref_label, why=None, context=False):
    """one row: figure (ours), reference, ratio = figure / reference, the limit on
    the ratio (op "<=" or ">="); a missing figure or reference gives "n/a" and why"""
    e = {"target": name, "figure": fig, "reference": ref, "reference_is": ref_label, "unit": unit,
         "limit": f"{op} {limit}" if not context else "context", "ratio": None}
    if fig is None or ref is None or ref <= 0:
        e["verdict"] = "n/a"
        e["not_measured"] = why or "no figure"
        return e
    ratio = fig / ref
    e["ratio"] = round(ratio, 4)
    if context:
        e["verdict"] = "-"
    else:     # on the ratio before rounding
        e["verdict"] = "meets" if (ratio <= limit if op == "<=" else ratio >= limit) else "misses"
    return e


def why_missing(*runs):
    for what, r in runs:
        if r is None:
            return f"{what}: not run"
        if "error" in r:
            return f"{what}: {r['error']}"
    return None


def targets12(res):
    tr = res.get("target_runs") or {}
    rows = []
    ucx = tr.get("ucx", {})
    nucx = tr.get("ucx_missing")
    tag = ucx.get("tag_lat") if not nucx else {"error": nucx}
    p50 = (tag or {}).get("lat_p50_us")
    # 2. latency at 2 B (atomics: 8 B) against 3 x UCX tag_lat p50, and p99 <= 5 x typical
    lat = [(t, find(res["latency"], t, 2)) for t in LAT_TESTS] + [("ib_atomic_lat", tr.get("ib_atomic_lat"))]
    for t, r in lat:
        size = 8 if t == "ib_atomic_lat" else 2
        rt = " (round trip)" if t in ROUND_TRIP_TESTS else ""
        rows.append(target(f"{t} {size} B typical{rt} / UCX sm tag_lat p50", (r or {}).get("t_typical_us"), p50,
                           "<=", 3, "us", "UCX sm tag_lat p50, one way",
                           why_missing((t, r), ("ucx tag_lat", tag))))
    rows.append(target34_send(tr.get("t34") or {}, tag, p50))
    for t, r in lat:
        size = 8 if t == "ib_atomic_lat" else 2
        rows.append(target(f"{t} {size} B p99 / its typical", (r or {}).get("t_p99_us"),
                           (r or {}).get("t_typical_us"), "<=", 5, "us", f"{t} typical",
                           why_missing((t, r)) or (None if (r or {}).get("t_p99_us") is not None
                                                   else "no 99% column in perftest's output")))
    # 3. bandwidth: write and read against UCX ucp_put_bw; send against write
    dur = tr.get("dur") or {}

    def bw(t, size):
        # the -D run of the targets; the sweep's point when there is none
        return dur.get(f"{t}.{size}") or find(res["bandwidth"], t, size)

    for t in ("ib_write_bw", "ib_read_bw"):
        for size in (4096, 65536, 1048576):
            r = bw(t, size)
            u = ucx.get(f"ucp_put_bw.{size}") if not nucx else {"error": nucx}
            rows.append(target(f"{t} {size_str(size)} / UCX sm ucp_put_bw", (r or {}).get("bw_avg_GBps"),
                               (u or {}).get("bw_overall_GBps"), ">=", 0.5, "GB/s", "UCX sm ucp_put_bw",
                               why_missing((t, r), ("ucx ucp_put_bw", u))))
    for size in (4096, 65536, 1048576):
        r, w = bw("ib_send_bw", size), bw("ib_write_bw", size)
        rows.append(target(f"ib_send_bw {size_str(size)} / ib_write_bw", (r or {}).get("bw_avg_GBps"),
                           (w or {}).get("bw_avg_GBps"), ">=", 0.5, "GB/s", "ib_write_bw, same size",
                           why_missing(("ib_send_bw", r), ("ib_write_bw", w))))
    # issue 34, item 3: private memory against a plain process_vm_writev/readv loop
    rows.extend(targets34(res, tr, bw))
    # issue 34, item 3: memory already shared against the figures of the issue
    rows.extend(targets34_shared(tr, ucx if not nucx else {}))
    # 4. two concurrent ib_write_bw pairs against one
    pairs = tr.get("pairs", {})
    a, b, one = pairs.get("pairA"), pairs.get("pairB"), pairs.get("pair1")
    agg = None
    if a and b and "bw_avg_GBps" in a and "bw_avg_GBps" in b:
        agg = round(a["bw_avg_GBps"] + b["bw_avg_GBps"], 4)
    e = target("ib_write_bw 64 KiB, 2 pairs at once (sum) / 1 pair", agg, (one or {}).get("bw_avg_GBps"),
               ">=", 1, "GB/s", "one pair alone",
               why_missing(("pair A", a), ("pair B", b), ("one pair", one)))
    if "clients_overlap_s" in pairs:
        e["clients_overlap_s"] = pairs["clients_overlap_s"]
        e["clients_lifetime_s"] = pairs["clients_lifetime_s"]
    rows.append(e)
    # 5. busy CPUs: ours against the quiet figure; UCX's as context
    # (the quiet runs right before the busy ones, ping-pongs before, between and
    # after: the host's placement of the vCPUs moves both figures by 2x; a bench
    # from before those runs: the sweep's 2 B point, no placement judged)
    busy = tr.get("busy", {})
    bshm = busy.get("shm_ns")
    held = one_placement(bshm)
    for t in ("ib_send_lat", "ib_write_lat"):
        quiet = busy.get("quiet")
        q, r = (quiet.get(t) if quiet is not None else find(res["latency"], t, 2)), busy.get(t)
        why = busy.get("skipped") or why_missing((f"{t} busy", r), (f"{t} quiet", q))
        where = f"; shm {bshm[1]:.0f} ns" if held else ""
        e = target(f"{t} 2 B typical, CPUs busy / quiet{where}", (r or {}).get("t_typical_us"),
                   (q or {}).get("t_typical_us"), "<=", 2, "us",
                   f"{t} 2 B typical, quiet" + (", the run before" if quiet is not None else ""), why)
        if bshm is not None:
            e["shm_pingpong_ns"] = bshm
        if held is False and e["verdict"] != "n/a":
            e["verdict"] = "n/a"
            e["not_measured"] = ("the host moved the vCPUs between the runs: shm ping-pong "
                                 + shm_str(bshm) + " before quiet / before busy / after")
        rows.append(e)
    u = busy.get("ucx_tag_lat")
    rows.append(target("(context) UCX sm tag_lat p50, CPUs busy / quiet", (u or {}).get("lat_p50_us"), p50,
                       "", 0, "us", "UCX sm tag_lat p50, quiet",
                       busy.get("skipped") or why_missing(("ucx tag_lat busy", u), ("ucx tag_lat quiet", tag)),
                       context=True))
    return rows


def target34_send(t34, tag, p50):
    """issue 34, item 2: the send path within 2 x a shared-memory handoff.
    Three alternated pairs (UCX sm tag_lat, then ib_send_lat 2 B), right
    after one another, shared-memory ping-pongs before and after each pair:
    the median of the three typicals beside the median of the three p50s,
    when the ping-pongs say one placement of the vCPUs held.  A bench from
    before the pairs: its one run beside the reference (tag, p50)."""
    shm = t34.get("shm_ns") or []
    runs = t34.get("runs")
    if runs is None:
        r = t34.get("ib_send_lat")
        fig, ref = (r or {}).get("t_typical_us"), p50
        why = why_missing(("ib_send_lat (issue 34 run)", r), ("ucx tag_lat", tag))
        label = ""
    else:
        ucx = t34.get("ucx") or []
        figs = [r.get("t_typical_us") for r in runs if r and r.get("t_typical_us") is not None]
        refs = [u.get("lat_p50_us") for u in ucx if u and u.get("lat_p50_us") is not None]
        fig = statistics.median(figs) if len(figs) == len(runs) else None
        ref = statistics.median(refs) if len(refs) == len(runs) else None
        why = why_missing(*[(f"ib_send_lat (issue 34 run {k + 1})", r) for k, r in enumerate(runs)],
                          *[(f"ucx tag_lat (issue 34 run {k + 1})", u) for k, u in enumerate(ucx)])
        label = "; median of 3 alternated runs"
    held = one_placement(shm)
    where = f"; shm {statistics.median(shm):.0f} ns" if held else ""
    e = target(f"ib_send_lat 2 B typical / UCX sm tag_lat p50 (issue 34{label}{where})", fig, ref,
               "<=", 2, "us", "UCX sm tag_lat p50, one way", why)
    e["shm_pingpong_ns"] = shm
    if runs is not None:
        e["runs_us"] = [(r or {}).get("t_typical_us") for r in runs]
        e["references_us"] = [(u or {}).get("lat_p50_us") for u in t34.get("ucx") or []]
    if held is False and e["verdict"] != "n/a":
        e["verdict"] = "n/a"
        e["not_measured"] = "the host moved the vCPUs between the runs: shm ping-pong " + shm_str(shm)
    return e


def targets34(res, tr, bw):
    """issue 34, item 3 (private memory): ib_write_bw / ib_read_bw at 4 KiB .. 1 MiB
    >= 0.9 x a process_vm_writev / readv loop of the same size; ib_write_lat 2 B
    <= 1.3 x one process_vm_writev call (ib_read_lat's round trip beside one readv).
    A figure is set beside a reference measured in the same placement of the
    vCPUs (placement34); a bench from before the probes: the better of the runs."""
    rows = []
    cma = tr.get("cma_ref")
    nocma = "cma_ref not run" if cma is None else None
    pm = tr.get("pm")
    pl = placement34(pm, cma) if pm is not None else {
        # (no probes: the better of the loops beside the sweep's 2 B points)
        "bw_refs": [cma or {}], "bw_why": None, "bw_where": "",
        "lat_refs": [cma or {}], "lat_segs": [], "lat_why": None, "lat_where": ""}
    for t, op in (("ib_write_bw", "write"), ("ib_read_bw", "read")):
        for size in (4096, 65536, 1048576):
            r = bw(t, size)
            cs = [c for c in (run.get(f"{op}.{size}") for run in pl["bw_refs"]) if c]
            c = max(cs, key=lambda c: c.get("GBps") or 0) if cs else None
            e = target(f"{t} {size_str(size)} / process_vm_{op}v loop{pl['bw_where']}", (r or {}).get("bw_avg_GBps"),
                       (c or {}).get("GBps"), ">=", 0.9, "GB/s", f"process_vm_{op}v, one call per message",
                       why_missing((t, r)) or nocma or pl["bw_why"] or (None if c else f"no {op} {size} in cma_ref"))
            if pm is not None:
                e["shm_pingpong_ns"] = pm["shm_ns"]
            rows.append(e)
    for t, op in (("ib_write_lat", "write"), ("ib_read_lat", "read")):
        if pm is not None:
            named = [(f"{t} segment {seg}", pm.get(f"{seg}.{t}")) for seg in pl["lat_segs"]]
        else:
            named = [(t, find(res["latency"], t, 2))]
        cs = [c for c in (run.get(f"{op}.2") for run in pl["lat_refs"]) if c]
        r = min((x for _, x in named if x and "t_typical_us" in x), key=lambda x: x["t_typical_us"], default=None)
        c = min(cs, key=lambda c: c["us_per_call"]) if cs else None
        rt = " (round trip)" if t in ROUND_TRIP_TESTS else ""
        why = pl["lat_why"] or why_missing(*named)
        e = target(f"{t} 2 B typical{rt} / one process_vm_{op}v call{pl['lat_where']}",
                   (r or {}).get("t_typical_us"), (c or {}).get("us_per_call"), "<=", 1.3, "us",
                   f"one process_vm_{op}v call, 2 B", why or nocma or (None if c else f"no {op} 2 in cma_ref"))
        if pm is not None:
            e["shm_pingpong_ns"] = pm["shm_ns"]
            e["segments"] = pl["lat_segs"]
        rows.append(e)
    return rows


def placement34(pm, cma):
    """which runs of the private-memory segments share one placement of the vCPUs.
    Ping-pongs pm.0 .. pm.3 bracket A (loop cma_ref.1, latency runs), B (the -D
    bandwidth runs), C (loop cma_ref.2, latency runs again).  Bandwidth: B beside
    the loops of A and C whose ping-pongs agree with B's.  Latency: the segments
    whose own ping-pongs agree, and agree with the first such; each figure the
    better of those segments' runs, the reference the better of their loops."""
    shm = pm["shm_ns"]
    per_run = (cma or {}).get("per_run") or []
    loop = {"A": per_run[0] if len(per_run) > 0 else {}, "C": per_run[1] if len(per_run) > 1 else {}}
    idx = {"A": (0, 1), "B": (1, 2), "C": (2, 3)}

    def agree(*segs):
        return one_placement([shm[i] for s in segs for i in idx[s]])

    out = {"bw_why": None, "bw_where": "", "lat_why": None, "lat_where": ""}
    if agree("B") is False:
        out["bw_refs"] = []
        out["bw_why"] = ("the host moved the vCPUs during the bandwidth runs: shm ping-pong "
                         + shm_str(shm[1:3]) + " before / after")
    else:
        out["bw_refs"] = [loop[s] for s in ("A", "C") if agree(s, "B") is not False]
        if not out["bw_refs"]:
            out["bw_why"] = ("no process_vm loop in the placement of the bandwidth runs: shm ping-pong "
                             + shm_str(shm) + " (A, B, C between)")
        elif agree("B"):
            out["bw_where"] = f"; shm {shm[1]:.0f} ns"
    segs = [s for s in ("A", "C") if agree(s) is not False]
    if segs:
        segs = [s for s in segs if agree(segs[0], s) is not False]
    out["lat_segs"] = segs
    out["lat_refs"] = [loop[s] for s in segs]
    if not segs:
        out["lat_why"] = ("the host moved the vCPUs during both latency segments: shm ping-pong "
                          + shm_str(shm) + " (A, B, C between)")
    elif agree(*segs):
        out["lat_where"] = f"; shm {shm[idx[segs[0]][0]]:.0f} ns, {'+'.join(segs)}"
    return out


# What the shared-registration design reached on private memory (issue 34,
# item 3: `make bench-compare BASE=9edc1ee`, 0.18-0.37 us, 26-71 GB/s at
# 64 KiB): memory that is already shared is to be no slower.  These are the
# issue's fixed figures, not a measurement of this run (there is no
# reference of this run for them); UCX's shared memory is printed beside as
# context.
SHARED_LAT_US = 0.37
SHARED_BW64_GBPS = 26.0


def targets34_shared(tr, ucx):
    """issue 34, item 3 (memory already shared): perftest --use_hugepages
    (SysV huge pages) and shared_ref's memfd rows: 2 B latency <= 0.37 us and
    64 KiB bandwidth >= 26 GB/s; every size beside UCX sm ucp_put_lat/bw"""
    rows = []
    sh = tr.get("shared34") or {}
    pt, sr = sh.get("perftest", {}), sh.get("shared_ref", {})
    huge_why = sh.get("huge_missing") or "not run"
    put_lat = (ucx.get("ucp_put_lat") or {}).get("lat_p50_us")
    lab_lat = "issue 34: the shared-registration design on private memory, upper end"
    lab_bw = "issue 34: the shared-registration design on private memory at 64 KiB, lower end"
    for t in ("ib_write_lat", "ib_read_lat"):
        r = pt.get(f"huge1.{t}.2")
        rt = " (round trip)" if t in ROUND_TRIP_TESTS else ""
        rows.append(target(f"{t} --use_hugepages 2 B typical{rt} / 0.37 us", (r or {}).get("t_typical_us"),
                           SHARED_LAT_US, "<=", 1, "us", lab_lat, why_missing((t, r)) or (None if r else huge_why)))
    for op in ("write", "read"):
        v = sr.get(f"memfd.{op}.2")
        rows.append(target(f"memfd RDMA {op.upper()} 2 B (shared_ref) / 0.37 us", (v or {}).get("us_per_op"),
                           SHARED_LAT_US, "<=", 1, "us", lab_lat, None if v else "no memfd 2 B row from shared_ref"))
    for t in ("ib_write_bw", "ib_read_bw"):
        r = pt.get(f"huge1.{t}.65536")
        rows.append(target(f"{t} --use_hugepages 64 KiB / 26 GB/s", (r or {}).get("bw_avg_GBps"),
                           SHARED_BW64_GBPS, ">=", 1, "GB/s", lab_bw,
                           why_missing((t, r)) or (None if r else huge_why)))
    for op in ("write", "read"):
        v = sr.get(f"memfd.{op}.65536")
        rows.append(target(f"memfd RDMA {op.upper()} 64 KiB (shared_ref) / 26 GB/s", (v or {}).get("GBps"),
                           SHARED_BW64_GBPS, ">=", 1, "GB/s", lab_bw, None if v else "no memfd 64 KiB row from shared_ref"))
    # context: beside UCX's own shared memory, this run
    for t in ("ib_write_lat", "ib_read_lat"):
        r = pt.get(f"huge1.{t}.2")
        rt = " (round trip)" if t in ROUND_TRIP_TESTS else ""
        rows.append(target(f"(context) {t} --use_hugepages 2 B{rt} / UCX sm ucp_put_lat p50",
                           (r or {}).get("t_typical_us"), put_lat, "", 0, "us", "UCX sm ucp_put_lat p50, one way",
                           why_missing((t, r)) or (None if put_lat else "no UCX ucp_put_lat"), context=True))
    for op in ("write", "read"):
        v = sr.get(f"memfd.{op}.2")
        rows.append(target(f"(context) memfd RDMA {op.upper()} 2 B / UCX sm ucp_put_lat p50", (v or {}).get("us_per_op"),
                           put_lat, "", 0, "us", "UCX sm ucp_put_lat p50, one way",
                           (None if v else "no memfd 2 B row") or (None if put_lat else "no UCX ucp_put_lat"),
                           context=True))
    for size in (4096, 65536, 1048576):
        u = (ucx.get(f"ucp_put_bw.{size}") or {}).get("bw_overall_GBps")
        for t in ("ib_write_bw", "ib_read_bw"):
            r = pt.get(f"huge1.{t}.{size}")
            rows.append(target(f"(context) {t} --use_hugepages {size_str(size)} / UCX sm ucp_put_bw",
                               (r or {}).get("bw_avg_GBps"), u, "", 0, "GB/s", "UCX sm ucp_put_bw",
                               why_missing((t, r)) or (None if u else "no UCX ucp_put_bw"), context=True))
        for op in ("write", "read"):
            v = sr.get(f"memfd.{op}.{size}")
            rows.append(target(f"(context) memfd RDMA {op.upper()} {size_str(size)} / UCX sm ucp_put_bw",
                               (v or {}).get("GBps"), u, "", 0, "GB/s", "UCX sm ucp_put_bw",
                               (None if v else f"no memfd {size} row") or (None if u else "no UCX ucp_put_bw"),
                               context=True))
    return rows


def fig_str(x, unit):
    if x is None:
        return "-"
    return f"{x:.3f} {unit}" if x < 10 else f"{x:.2f} {unit}" if x < 100 else f"{x:.1f} {unit}"


def ratio_str(x):
    # 3 significant digits at least: 0.497 must not print as 0.50 beside a limit of 0.5
    return f"{x:.3f}x" if x < 10 else f"{x:.1f}x"


def print_targets12(rows):
    print()
    print("   targets (issue 12, item 3; issue 34, items 2 and 3: the rows that say issue 34, process_vm,"
          " --use_hugepages and memfd); ratio = figure / reference:")
    print("   every figure and reference from this run, except the fixed 0.37 us and 26 GB/s of issue 34"
          " (the shared-registration design on private memory, bench-compare BASE=9edc1ee)")
    w = max(len(r["target"]) for r in rows)
    print(f"   {'target':<{w}}  {'figure':>12}  {'reference':>12}  {'ratio':>7}  {'limit':>7}  verdict")
    print("   " + "-" * (w + 60))
    for r in rows:
        if r["verdict"] == "n/a":
            fig = "not measured" if r["figure"] is None else fig_str(r["figure"], r["unit"])
            ref = "-" if r["reference"] is None else fig_str(r["reference"], r["unit"])
            why = r["not_measured"] if len(r["not_measured"]) <= 100 else r["not_measured"][:97] + "..."
            print(f"   {r['target']:<{w}}  {fig:>12}  {ref:>12}  {'-':>7}  {r['limit']:>7}  n/a (not measured: {why})")
            continue
        print(f"   {r['target']:<{w}}  {fig_str(r['figure'], r['unit']):>12}  {fig_str(r['reference'], r['unit']):>12}"
              f"  {ratio_str(r['ratio']):>7}  {r['limit']:>7}  {r['verdict']}")
        if "clients_overlap_s" in r:
            lt = r["clients_lifetime_s"]
            print(f"   {'':<{w}}  (the two clients ran together {r['clients_overlap_s']:.1f} s; "
                  f"lifetimes {lt[0]:.1f} s, {lt[1]:.1f} s)")
    print("   latency: perftest's t_typical / 99% percentile as printed (ib_read_lat and ib_atomic_lat report a")
    print("   round trip, ib_send_lat / ib_write_lat half of one); UCX's 50.0%ile is one way.")
    print("   bandwidth: GB/s = 10^9 B/s (perftest's BW average, ucx_perftest's overall bandwidth)")


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
    print('A. Software device swr0 (issue "kernel-free software device", item 6; issue 12, item 3)')
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
    print('   targets of issue "kernel-free software device", item 6 (reported, not enforced):')
    for t in res["targets"]:
        if t["value"] is None:
            print(f"     {t['target']:<44} not measured")
        elif t["unit"] == "us":
            print(f"     {t['target']:<44} {t['value']:.2f} us         {t['verdict']}")
        else:
            print(f"     {t['target']:<44} {t['value']:.2f} GB/s (peak {t['peak']:.2f})  {t['verdict']}")
    print_target_runs(res.get("target_runs"))
    print_targets12(res["targets_issue12"])
    sys.stdout.flush()


def print_target_runs(tr):
    print()
    print("   runs for the targets of issue 12 (server CPU 0, client CPU 1 unless said):")
    if tr is None:
        print("     not run")
        return
    ucx = tr.get("ucx", {})
    if tr.get("ucx_missing"):
        print(f"     UCX reference: not measured ({tr['ucx_missing']})")
    else:
        # (ucp_put_lat: absent from runs made before it was measured)
        for test in ("tag_lat", "ucp_put_lat"):
            t = ucx.get(test)
            if t is None:
                continue
            if "error" in t:
                print(f"     UCX_TLS=sm ucx_perftest {test} (8 B): failed: {t['error']}")
            else:
                print(f"     UCX_TLS=sm ucx_perftest {test} (8 B), one way: p50 {t['lat_p50_us']:.3f} us, "
                      f"average {t['lat_avg_us']:.3f} us ({t['iterations']} iterations)")
        for k in sorted((k for k in ucx if k.startswith("ucp_put_bw.")), key=lambda k: int(k.split(".")[1])):
            r = ucx[k]
            lab = f"UCX_TLS=sm ucx_perftest ucp_put_bw {size_str(r['bytes'])}:"
            if "error" in r:
                print(f"     {lab} failed: {r['error']}")
            else:
                print(f"     {lab} {r['bw_overall_GBps']:.2f} GB/s ({r['iterations']} iterations)")
        for r in ucx.values():
            for n in r.get("notes", []):
                print(f"     note: ucx {r['test']}: {n}")
    t34 = tr.get("t34") or {}
    if t34.get("runs") is not None:
        def cells(xs, key):
            return " / ".join("failed" if not x or key not in x else f"{x[key]:.3f}" for x in xs)
        print("     issue 34, three alternated pairs, one after another: UCX_TLS=sm tag_lat p50 "
              f"{cells(t34.get('ucx') or [], 'lat_p50_us')} us, ib_send_lat 2 B typical "
              f"{cells(t34['runs'], 't_typical_us')} us; shm ping-pong {shm_str(t34.get('shm_ns') or [])}"
              " before the first, after each")
    cma = tr.get("cma_ref")
    if cma is not None:
        print(f"     process_vm_writev/readv loop, one call per message (cma_ref.c, CPUs 0 -> 1, median of 7 "
              f"trials, the better of {cma['runs']} runs):")
        for op in ("write", "read"):
            cells = [f"{size_str(e['bytes'])} {e['us_per_call']:.3f} us" + (f" = {e['GBps']:.2f} GB/s"
                                                                            if e["bytes"] >= 4096 else "")
                     for e in sorted((v for v in cma.values() if isinstance(v, dict) and v.get("op") == op),
                                     key=lambda v: v["bytes"])]
            print(f"       {op:<5}: " + ("; ".join(cells) or "no figure"))
        for e in cma.get("errors", []):
            print(f"       note: {e}")
    pm = tr.get("pm")
    if pm is not None:
        print(f"     private memory, placement of the vCPUs (shm ping-pong, one way): {shm_str(pm['shm_ns'])}"
              " before A / before B / before C / after C")
        per_run = (cma or {}).get("per_run") or []
        for i, seg in enumerate(("A", "C")):
            cells = []
            for t, op in (("ib_write_lat", "write"), ("ib_read_lat", "read")):
                r = pm.get(f"{seg}.{t}")
                if r is not None:
                    cells.append(f"{t} 2 B " + (f"failed: {r['error']}" if "error" in r
                                                else f"typical {r['t_typical_us']:.3f} us"))
                c = (per_run[i] if i < len(per_run) else {}).get(f"{op}.2")
                if c:
                    cells.append(f"one process_vm_{op}v 2 B {c['us_per_call']:.3f} us")
            print(f"       segment {seg} (loop cma_ref.{i + 1}): " + ("; ".join(cells) or "no figure"))
        print("       segment B: the -D bandwidth runs (the target table)")
    print_shared34(tr.get("shared34"))
    r = tr.get("ib_atomic_lat")
    if r is not None:
        if "error" in r:
            print(f"     ib_atomic_lat 8 B fetch-and-add: failed: {r['error']}")
        else:
            print(f"     ib_atomic_lat 8 B fetch-and-add, round trip: typical {r['t_typical_us']:.2f} us, "
                  f"average {r['t_avg_us']:.2f}, 99% {r.get('t_p99_us', float('nan')):.2f}")
        for n in r.get("notes", []):
            print(f"     note: ib_atomic_lat: {n}")
    pairs = tr.get("pairs", {})
    for k, lab in (("pair1", "one pair alone"), ("pairA", "pair A (server CPU 0, client CPU 1)"),
                   ("pairB", "pair B (server CPU 1, client CPU 0)")):
        r = pairs.get(k)
        if r is None:
            continue
        if "error" in r:
            print(f"     ib_write_bw 64 KiB -D, {lab}: failed: {r['error']}")
        else:
            print(f"     ib_write_bw 64 KiB -D, {lab}: {r['bw_avg_GBps']:.2f} GB/s")
        for n in r.get("notes", []):
            print(f"     note: {k}: {n}")
    busy = tr.get("busy", {})
    if busy.get("skipped"):
        print(f"     busy CPUs: not measured ({busy['skipped']})")
    else:
        def lat_lines(runs, lead):
            for t in ("ib_send_lat", "ib_write_lat"):
                r = runs.get(t)
                if r is None:
                    continue
                if "error" in r:
                    print(f"{lead}{t} 2 B: failed: {r['error']}")
                else:
                    print(f"{lead}{t} 2 B: typical {r['t_typical_us']:.2f} us, average {r['t_avg_us']:.2f}, "
                          f"99% {r.get('t_p99_us', float('nan')):.2f}")

        lat_lines(busy.get("quiet") or {}, "     quiet, right before the busy runs: ")
        if busy.get("shm_ns") is not None:
            print(f"     shm ping-pong, one way: {shm_str(busy['shm_ns'])} before quiet / before busy / after busy")
        print(f"     with {busy.get('busy_processes', '?')} spinning processes, one per CPU (nice 0):")
        lat_lines(busy, "       ")
        u = busy.get("ucx_tag_lat")
        if u is not None:
            if "error" in u:
                print(f"       UCX sm tag_lat: failed: {u['error']}")
            else:
                print(f"       UCX sm tag_lat: p50 {u['lat_p50_us']:.3f} us, average {u['lat_avg_us']:.3f}")


# ---- B. VM ---------------------------------------------------------------------
VM_ROWS = [
    ("startup_process", "first-call startup, whole process (ms)", 1e-3),
    ("startup_calls", "  of which the 4 calls, in-process (ms)", 1e-3),
    ("mr_4k", "MR reg+dereg 4 KiB (us/op)", 1),
    ("mr_1m", "MR reg+dereg 1 MiB (us/op)", 1),
    ("cq", "CQ create+destroy, 256 cqe (us/op)", 1),
    ("qp", "RC QP create>INIT>RTR>RTS>destroy (us/op)", 1),
]
# issue 12, item 4: the limit on ours/upstream of each row
VM_TARGETS = {"startup_process": 0.5, "startup_calls": 0.5, "mr_4k": 1.0, "mr_1m": 1.0, "cq": 1.0, "qp": 1.0}


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
    print(f"   {'operation':<44}{'upstream':>11}{'ours':>11}{'ours/upstream':>15}{'round spread':>14}"
          f"{'target (item 4)':>18}")
    print("   " + "-" * 113)
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
        lim = VM_TARGETS.get(key)
        verdict = "n/a" if ratio is None else ("meets" if ratio <= lim else "misses")
        ts = f"{'<= %.1f %s' % (lim, verdict):>18}" if lim is not None else f"{'':>18}"
        print(f"   {label:<44}{us}{vs}{rs}{ss}{ts}")
        if lim is not None:
            res.setdefault("targets_issue12_item4", {})[key] = {"ratio": ratio, "limit": lim, "verdict": verdict}
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
        "machine": {k: m.get(k) for k in ("date", "nproc", "cpu", "kernel", "loadavg", "git", "perftest", "ucx",
                                          "library",
                                          "loadavg_before_soft", "loadavg_after_soft", "loadavg_before_vm",
                                          "loadavg_after_vm")},
        "elapsed_s": int(m["elapsed"]) if m.get("elapsed", "").isdigit() else None,
        "units": {"latency": "us (perftest; ucx_perftest one way), ns (shm ping-pong)",
                  "bandwidth": "GB/s = 10^9 bytes/s (perftest's and ucx_perftest's MB/s are MiB/s, converted)",
                  "targets_issue12": "ratio = figure / reference; limit applies to the ratio",
                  "vm": "us per op (median); ratios ours/upstream"},
        "soft": soft_results(),
        "vm": vm_results(),
    }
    try:
        with open(f"{B}/ucx.json") as f:
            out["ucx"] = json.load(f)
    except (OSError, ValueError):
        pass
    if out["machine"]["nproc"] and out["machine"]["nproc"].isdigit():
        out["machine"]["nproc"] = int(out["machine"]["nproc"])
    with open(f"{B}/results.json.tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace(f"{B}/results.json.tmp", f"{B}/results.json")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    {"header": print_header, "soft": print_soft, "vm": print_vm, "json": write_json}.get(
        what, lambda: sys.exit(__doc__))()
