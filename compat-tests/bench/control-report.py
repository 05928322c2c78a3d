#!/usr/bin/env python3
"""Section D of `make bench`: the control path on the host (issue 25, item 4).

vm_bench ran on the uverbs stand-in (compat-tests/providers/standin) with
Debian's rxe and mlx5 user-space drivers, on Debian's libibverbs (the
reference) and on ours, alternating, BENCH_CONTROL_ROUNDS rounds
(run.sh: section_control).  Per provider and operation: ours (the figure),
upstream (the reference), ratio = ours / upstream, the target (first-call
startup <= 0.5, every create/destroy pair <= 1.0) and meets / misses / n/a.
Each library's figure is the lowest of its rounds' medians (the least
disturbed round); the round spread says how far the rounds disagree.

For a miss it prints where the time goes: the sub-steps of the operation
(ours and upstream, us), and, from the callgrind runs of both libraries
(control_profile in run.sh), the instructions each shared object executed
in the same run (startup: one fresh process; pairs: 50 iterations of each
pair) and our library's costliest functions.  Numbers, never pass/fail.
Writes build/bench/control.json."""
import glob
import json
import os
import re
import sys

C = "build/bench/control"
STARTUP_API = ["ibv_get_device_list", "ibv_open_device", "ibv_query_device", "ibv_query_port"]
ROWS = [
    # key, label, target, sub-steps, the verbs it calls (profiled per call)
    ("startup_process", "first call, whole process (spawn..exit)", 0.5,
     ["startup_null", "startup_list", "startup_open", "startup_query"], STARTUP_API),
    ("startup_calls", "first call: get_device_list+open+query", 0.5,
     ["startup_list", "startup_open", "startup_query"], STARTUP_API),
    ("pd", "PD alloc+dealloc", 1.0, ["pd_create", "pd_destroy"], ["ibv_alloc_pd", "ibv_dealloc_pd"]),
    ("mr_4k", "MR reg+dereg 4 KiB", 1.0, ["mr_4k_reg", "mr_4k_dereg"], ["ibv_reg_mr", "ibv_dereg_mr"]),
    ("mr_1m", "MR reg+dereg 1 MiB", 1.0, ["mr_1m_reg", "mr_1m_dereg"], ["ibv_reg_mr", "ibv_dereg_mr"]),
    ("cq", "CQ create+destroy (256)", 1.0, ["cq_create", "cq_destroy"], ["ibv_create_cq", "ibv_destroy_cq"]),
    ("qp", "RC QP create>INIT>RTR>RTS>destroy", 1.0,
     ["qp_create", "qp_init", "qp_rtr", "qp_rts", "qp_destroy"],
     ["ibv_create_qp", "ibv_modify_qp", "ibv_destroy_qp"]),
    ("srq", "SRQ create+destroy (256)", 1.0, ["srq_create", "srq_destroy"], ["ibv_create_srq", "ibv_destroy_srq"]),
    ("ah", "AH create+destroy (GRH)", 1.0, ["ah_create", "ah_destroy"], ["ibv_create_ah", "ibv_destroy_ah"]),
]


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def parse_run(base):
    """One vm_bench output: {results: name -> median, failures, status}."""
    r = {"results": {}, "failures": {}, "status": None}
    s = (read(base + ".rc") or "").strip()
    r["status"] = int(s) if s.lstrip("-").isdigit() else None
    for line in (read(base + ".out") or "").splitlines():
        p = line.split(" ", 2)
        if p[0] == "result" and len(p) >= 3:
            m = re.search(r"median=([\d.]+)", p[2])
            if m:
                r["results"][p[1]] = float(m.group(1))
        elif p[0] == "fail" and len(p) >= 2:
            r["failures"].setdefault(p[1], p[2] if len(p) > 2 else "")
        elif p[0] == "lib":
            r["lib"] = line[4:]
    return r


def lib_results(prov, lib):
    rounds = [parse_run(o[:-4]) for o in sorted(glob.glob(f"{C}/{prov}.{lib}.*.out"),
                                                  key=lambda p: int(p.split(".")[-2]))]
    best, spread = {}, {}
    for r in rounds:
        for k, v in r["results"].items():
            best[k] = min(best.get(k, v), v)
    for k in best:
        meds = [r["results"][k] for r in rounds if k in r["results"]]
        if len(meds) > 1 and min(meds) > 0:
            spread[k] = (max(meds) - min(meds)) / min(meds)
    fails = {}
    for r in rounds:
        for k, why in r["failures"].items():
            fails.setdefault(k, why)
    return {"rounds": len(rounds), "median_us": best, "spread": spread, "failures": fails,
            "lib": sorted({r.get("lib", "?") for r in rounds})}


def callgrind_objects(path):
    """Self instructions per shared object and per function of a callgrind
    output file (the name-compressed format: ob=/fn= set the context, a
    calls= line's next line is the call's inclusive cost, not self cost)."""
    text = read(path)
    if text is None:
        return None
    names = {"ob": {}, "fn": {}}
    ob = fn = cfn = "?"
    per_ob, per_fn, calls = {}, {}, {}
    skip_next = False

    def name(kind, v):
        m = re.match(r"\((\d+)\)(?: (.*))?", v)
        if not m:
            return v
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), v)

    for line in text.splitlines():
        if line.startswith("ob="):
            ob = name("ob", line[3:])
        elif line.startswith("fn="):
            fn = name("fn", line[3:])
        elif line.startswith("cob="):
            name("ob", line[4:])
        elif line.startswith("cfn="):
            cfn = name("fn", line[4:])
        elif line.startswith("calls="):
            skip_next = int(line[6:].split()[0])
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            parts = line.split()
            if skip_next:
                # a call's inclusive cost: per callee, calls and instructions
                c = calls.setdefault(cfn.split("@")[0], [0, 0])
                c[0] += skip_next
                c[1] += int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 0
                skip_next = False
                continue
            if len(parts) >= 2 and parts[1].isdigit():
                ir = int(parts[1])
                per_ob[ob] = per_ob.get(ob, 0) + ir
                per_fn[(ob, fn)] = per_fn.get((ob, fn), 0) + ir
    return per_ob, per_fn, calls


def short_ob(ob):
    b = os.path.basename(ob)
    if "libuverbs-standin" in b:
        return "stand-in"
    if b.startswith("libibverbs.so"):
        return "libibverbs"
    if b.startswith("ld-linux"):
        return "ld.so"
    if b.startswith("libc.so"):
        return "libc"
    if b.endswith("-rdmav34.so"):
        return "providers" if not b.startswith(("librxe", "libmlx5")) else b.split("-")[0][3:] + " provider"
    if b.startswith("vgpreload") or b == "???":
        return "valgrind"
    return b


def profile(prov, kind):
    """{lib: (objects Ir, top functions of libibverbs)} for startup/pairs."""
    out = {}
    for lib in ("upstream", "ours"):
        r = callgrind_objects(f"{C}/cg.{prov}.{lib}.{kind}")
        if r is None:
            continue
        per_ob, per_fn, calls = r
        objs = {}
        for ob, ir in per_ob.items():
            k = short_ob(ob)
            objs[k] = objs.get(k, 0) + ir
        top = sorted(((ir, fn) for (ob, fn), ir in per_fn.items() if short_ob(ob) == "libibverbs"),
                     reverse=True)[:6]
        out[lib] = {"objects": objs, "total": sum(per_ob.values()), "top_libibverbs": top, "calls": calls}
    return out


def fmt_ir(n):
    return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.1f} k"


def explain(prov, key, subs, api, up, ours, prof_cache):
    """Lines naming where a missed target's time goes."""
    lines = []
    parts = []
    for s in subs:
        u, o = up["median_us"].get(s), ours["median_us"].get(s)
        if u is not None and o is not None:
            parts.append(f"{s} {o:.2f} vs {u:.2f}")
    if parts:
        lines.append("sub-steps, ours vs upstream (us): " + "; ".join(parts))
    kind = "startup" if key.startswith("startup") else "pairs"
    if (prov, kind) not in prof_cache:
        prof_cache[(prov, kind)] = profile(prov, kind)
    pr = prof_cache[(prov, kind)]
    if len(pr) == 2:
        what = "one fresh process" if kind == "startup" else "50 iterations of every pair"
        keys = sorted(set(pr["ours"]["objects"]) | set(pr["upstream"]["objects"]),
                      key=lambda k: -pr["upstream"]["objects"].get(k, 0))
        keys = [k for k in keys if k != "valgrind"]
        row = ", ".join(f"{k} {fmt_ir(pr['ours']['objects'].get(k, 0))} vs {fmt_ir(pr['upstream']['objects'].get(k, 0))}"
                        for k in keys[:7])
        per = []
        for fn in api:
            cu, co = pr["upstream"]["calls"].get(fn), pr["ours"]["calls"].get(fn)
            if cu and co and cu[0] and co[0]:
                iu, io = cu[1] / cu[0], co[1] / co[0]
                per.append(f"{fn} {io:,.0f} vs {iu:,.0f} ({io - iu:+,.0f})")
        if per:
            lines.append("callgrind, instructions per call, everything under the verb (our library or "
                         "upstream's, the provider, the stand-in), ours vs upstream: " + "; ".join(per))
        lines.append(f"callgrind, instructions ({what}), ours vs upstream: total "
                     f"{fmt_ir(pr['ours']['total'])} vs {fmt_ir(pr['upstream']['total'])}; {row}")
        np_o, np_u = ours["median_us"].get("startup_providers"), up["median_us"].get("startup_providers")
        if kind == "startup" and np_o is not None and np_u is not None:
            lines.append(f"provider files the first call loaded (dlopen: mappings, relocations, page faults, "
                         f"which instruction counts do not show): ours {np_o:.0f}, upstream {np_u:.0f}")
        top = ", ".join(f"{fn.split('::')[-1] if len(fn) > 60 else fn} {fmt_ir(ir)}"
                        for ir, fn in pr["ours"]["top_libibverbs"][:4])
        if top:
            lines.append(f"our library's costliest functions (self): {top}")
    else:
        lines.append("no callgrind profile (valgrind missing or BENCH_CONTROL_PROFILE empty)")
    return lines


def main():
    print()
    print("D. Control path on the host (issue 25, item 4): the uverbs stand-in, the same provider on both libraries")
    if not os.path.isdir(C):
        print("   not run")
        return 0
    why = read(f"{C}/skipped")
    if why:
        print(f"   not run: {why.strip()}")
        return 0
    info = dict(l.split(" ", 1) for l in (read(f"{C}/info") or "").splitlines() if " " in l)
    print(f"   vm_bench {info.get('args', '?')}, {info.get('rounds', '?')} round(s), order flipped every round, "
          f"pinned: {info.get('cpu', '?')}")
    print(f"   reference: {info.get('upstream', '?')}; figure: {info.get('ours', '?')} (both via LD_LIBRARY_PATH);")
    print(f"   providers: Debian's, {info.get('providers_dir', '?')}; per op the lowest of the rounds' medians, us")
    out = {"info": info, "providers": {}}
    prof_cache = {}
    tables = info.get("tables", "").split() or [f.split("fx-", 1)[1] for f in sorted(glob.glob(f"{C}/fx-*"))]
    for prov in tables:
        up, ours = lib_results(prov, "upstream"), lib_results(prov, "ours")
        out["providers"][prov] = {"upstream": up, "ours": ours, "rows": []}
        print()
        if prov.endswith("+sysfs"):
            print(f"   {prov[:-6]}, on a kernel without RDMA netlink (both libraries find the device through sysfs "
                  "alone): the first call only")
        else:
            print(f"   {prov} (the stand-in answers RDMA netlink, as a kernel with RDMA does)")
        print(f"   {'operation':<42}{'figure':>10}{'reference':>11}{'ratio':>8}{'spread':>8}{'target':>8}  verdict")
        print("   " + "-" * 96)
        notes = []
        for key, label, lim, subs, api in ROWS:
            u, o = up["median_us"].get(key), ours["median_us"].get(key)
            if prov.endswith("+sysfs") and not key.startswith("startup"):
                continue
            sp = max([x for x in (up["spread"].get(key), ours["spread"].get(key)) if x is not None], default=None)
            ratio = o / u if u and o is not None else None
            if ratio is None:
                why = up["failures"].get(key) or ours["failures"].get(key) or "no result"
                verdict = f"n/a ({why})"
            else:
                verdict = "meets" if ratio <= lim else "misses"
            us = f"{o:10.2f}" if o is not None else f"{'-':>10}"
            rs = f"{u:11.2f}" if u is not None else f"{'-':>11}"
            ra = f"{ratio:8.2f}" if ratio is not None else f"{'-':>8}"
            ss = f"{round(100 * sp):7d}%" if sp is not None else f"{'-':>8}"
            print(f"   {label:<42}{us}{rs}{ra}{ss}{'<= %.1f' % lim:>8}  {verdict}")
            if key == "startup_process" and (up["median_us"].get("startup_null") or ours["median_us"].get("startup_null")):
                nu, no = up["median_us"].get("startup_null"), ours["median_us"].get("startup_null")
                print(f"   {'  (floor: a child that calls no verb)':<42}" + (f"{no:10.2f}" if no else f"{'-':>10}") +
                      (f"{nu:11.2f}" if nu else f"{'-':>11}") +
                      (f"{no / nu:8.2f}" if no and nu else f"{'-':>8}") + "          context")
            row = {"op": key, "figure_us": o, "reference_us": u, "ratio": ratio, "limit": lim,
                   "verdict": verdict.split(" ")[0], "spread": sp}
            if verdict == "misses":
                row["limited_by"] = explain(prov, key, subs, api, up, ours, prof_cache)
                notes.append((label, row["limited_by"]))
            out["providers"][prov]["rows"].append(row)
        for label, lines in notes:
            print(f"   misses {label}:")
            for l in lines:
                print(f"     {l}")
    m = dict(l.split(" ", 1) for l in (read("build/bench/machine") or "").splitlines() if " " in l)
    print(f"   host load average (1 min) before / after this section: {m.get('loadavg_before_control', '?')} / "
          f"{m.get('loadavg_after_control', '?')}")
    with open("build/bench/control.json.tmp", "w") as f:
        json.dump(out, f, indent=1)
    os.replace("build/bench/control.json.tmp", "build/bench/control.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
