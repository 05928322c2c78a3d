#!/usr/bin/env python3
"""Compares the vm-rcerr results written by guest.sh inside the VM
(results/{upstream-rxe0,ours-rxe0,ours-swr0,ours-rw0}.out, one line per case,
see rcerr.c): per case and per field (post, A, B, qpA, qpB, evA, evB), ours
on rxe0 ("rxe0/CASE"), on swr0 ("swr0/CASE") and on rw0 ("rw0/CASE")
against Debian's libibverbs on rxe0, the oracle.

A check PASSes when every field is the same, or each field that differs is
listed in expected-differences.txt (COMPARISONS|CASE|FIELD|reason;
COMPARISONS: rxe0, swr0, rw0 or a comma list).  A listed field that no
longer differs FAILs (the list cannot go stale), and so does a listed case
that does not exist.  SKIP: upstream could not set the case up.

  report.py --host SWR0_FILE [RW0_FILE]   ours on this machine only: the
      two devices side by side, PASS per case that did not crash or time out
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
from reportlib import (entries, parse_args, print_table, read, read_info, read_int,  # noqa: E402
                       is_complete, resolved, vm_run_checks)

SUITE = "vm-rcerr"
RUNS = ("upstream-rxe0", "ours-rxe0", "ours-swr0", "ours-rw0")
COMPS = ("rxe0", "swr0", "rw0")
FIELDS = ("post", "A", "B", "qpA", "qpB", "evA", "evB")


def parse(text):
    """{case: {field: value}} in program order; a setup failure or a crash:
    {"setup": what} / {"signal": name}."""
    res = {}
    for line in (text or "").splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1] in ("setup", "signal"):
            res[parts[0]] = {parts[1]: parts[2]}
        elif len(parts) == 1 + len(FIELDS):
            res[parts[0]] = dict(p.split("=", 1) for p in parts[1:])
    return res


def fmt(r):
    if r is None:
        return "-"
    if "setup" in r or "signal" in r:
        return ", ".join(f"{k} {v}" for k, v in r.items())
    a = "A:" + r["A"] + ("" if r["post"] == "0" else f" (post {r['post']})")
    return f"{a} B:{r['B']} {r['qpA']}/{r['qpB']}" + (
        f" ev {r['evA']}/{r['evB']}" if (r["evA"], r["evB"]) != ("-", "-") else "")


def diff_fields(up, ours):
    if "setup" in up or "signal" in up or "setup" in ours or "signal" in ours:
        return None if up == ours else ["*"]
    return [f for f in FIELDS if up.get(f) != ours.get(f)]


def load_expected(path):
    exp = {}
    for line in entries(path):
        parts = [p.strip() for p in line.split("|", 3)]
        if len(parts) < 4:
            continue
        for comp in parts[0].split(","):
            exp[(comp.strip(), parts[1], parts[2])] = parts[3]
    return exp


def compare(case, comp, up, ours, expected, used):
    """(result, why) for one comparison."""
    if up is None or ours is None:
        return "FAIL", "no result (the run ended early)"
    if "setup" in up:
        return "SKIP", f"upstream could not set up: {up['setup']}"
    fields = diff_fields(up, ours)
    listed = {f for (c, k, f) in expected if c == comp and k == case}
    for f in listed:
        used.add((comp, case, f))
    if fields is None:
        fields = []
    stale = sorted(listed - set(fields))
    if stale:
        return "FAIL", (f"listed in expected-differences.txt ({', '.join(stale)}) but ours and upstream agree "
                        "there now: remove the line")
    unlisted = [f for f in fields if f not in listed]
    if unlisted:
        det = "; ".join(f"{f}: upstream {up.get(f, fmt(up))}, ours {ours.get(f, fmt(ours))}" for f in unlisted)
        return "FAIL", det
    if fields:
        return "PASS", "expected: " + "; ".join(
            f"{f} {up.get(f)} vs {ours.get(f)}: {expected[(comp, case, f)]}" for f in fields)
    return "PASS", ""


def host(paths):
    runs = [parse(read(p, "")) for p in paths]
    cases = list(runs[0])
    checks, rows = [], []
    for c in cases:
        rs = [r.get(c) for r in runs]
        rows.append(tuple([c] + [fmt(r) for r in rs]))
        bad = [r for r in rs if r and ("signal" in r or "TIMEOUT" in r.get("A", ""))]
        checks.append(("FAIL" if bad else "PASS", c, "crash or timeout" if bad else ""))
    print_table(("case", "ours swr0 (host)", "ours rw0@lo (host)")[:1 + len(paths)], rows)
    print()
    return close(checks, "host mode: no comparison, FAIL = crash or timeout")


def close(checks, extra=""):
    n = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for result, name, why in checks:
        n[result] += 1
        print(f"{result} {name}" + (f": {why}" if why and result != "PASS" else "")
              + (f" ({why})" if why and result == "PASS" else ""))
    print(f"{SUITE}: {n['PASS']} passed, {n['FAIL']} failed, {n['SKIP']} skipped" + (f", {extra}" if extra else ""))
    return 0 if n["FAIL"] == 0 else 1


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--host":
        return host([p for p in sys.argv[2:] if os.path.getsize(p) > 0] or sys.argv[2:3])
    a = parse_args("--expected")
    info, complete = read_info(a.results), is_complete(a.results)
    runs = {r: parse(read(os.path.join(a.results, r + ".out"), "")) for r in RUNS}
    rcs = {r: read_int(os.path.join(a.results, r + ".rc")) for r in RUNS}
    # --self-check has no swr0/rw0 run (guest.sh, RCERR_OURS=0)
    skipped = {c: "no run (--self-check)" for c in ("swr0", "rw0") if complete and rcs[f"ours-{c}"] is None}
    if rcs["ours-rw0"] == 99:
        skipped["rw0"] = "no network namespace for rw0 in the guest"
    expected, used = load_expected(a.expected), set()
    cases = list(runs["upstream-rxe0"])
    for r in RUNS:
        cases += [c for c in runs[r] if c not in cases]
    checks, rows, out = [], [], []
    for case in cases:
        up = runs["upstream-rxe0"].get(case)
        row = [case, fmt(up)]
        for comp in COMPS:
            ours = runs[f"ours-{comp}"].get(case)
            if comp in skipped:
                result, why = "SKIP", skipped[comp]
            else:
                result, why = compare(case, comp, up, ours, expected, used)
            checks.append((result, f"{comp}/{case}", why))
            row.append("=" if result == "PASS" and not why else
                       "expected" if result == "PASS" else "skip" if result == "SKIP" else fmt(ours))
            out.append({"case": case, "comparison": comp, "upstream": up, "ours": ours, "result": result,
                        "why": why})
        rows.append(tuple(row))
    for key in sorted(set(expected) - used):
        checks.append(("FAIL", f"{key[0]}/{key[1]}", f"listed in expected-differences.txt ({key[2]}) but the "
                       "case does not exist"))
    for r in RUNS:
        if rcs[r] not in (0, None, 99):
            checks.insert(0, ("FAIL", f"run/{r}", f"the rcerr program exited {rcs[r]}: "
                              + " | ".join((read(os.path.join(a.results, r + ".err"), "") or "").strip()
                                           .splitlines()[-3:])))
    checks, ran = vm_run_checks(checks, a, complete)
    if rows and ran:
        ms = {r: read_int(os.path.join(a.results, r + ".ms")) for r in RUNS}
        print("rcerr on rxe0 (gid %s), swr0, rw0@lo; kernel %s; %s" % (info.get("gid_rxe0", "?"),
                                                                     info.get("kernel", "?"), resolved(info)))
        print("run times: " + ", ".join(f"{r} {ms[r]} ms" for r in RUNS))
        print("(upstream: A's statuses, B's statuses, QP states A/B, async events A/B; "
              "ours: = same, expected = a listed difference)")
        print_table(("case", "upstream rxe0", "ours rxe0", "ours swr0", "ours rw0"), rows)
        print()
    doc = {"suite": SUITE, "vm_status": a.vm_status, "complete": complete, "seconds": a.seconds, "info": info,
           "our_lib": a.our_lib, "upstream_lib": a.upstream_lib,
           "checks": [{"result": r, "name": n, "why": y} for r, n, y in checks], "cases": out}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return close(checks)


if __name__ == "__main__":
    sys.exit(main())
