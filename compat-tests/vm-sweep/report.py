#!/usr/bin/env python3
"""Compares the vm-sweep results written by guest.sh inside the VM
(results/{upstream-rxe0,ours-rxe0,ours-swr0}.out, lines NAME|CLASS|DETAIL,
see sweep.c): per case, ours on rxe0 against Debian's libibverbs on rxe0
("rxe0/CASE") and ours on swr0 against Debian's on rxe0 ("swr0/CASE").

A check PASSes when
  * both return the same thing: class (the return convention: NULL+errno,
    an error code, -1+errno, ...) and detail (errno, code, value), or
  * upstream crashes (signal) and ours returns (ours fails cleanly), or
  * both crash (noted "undefined as upstream": NULL object pointers, double
    destroy; the README says these are undefined as in upstream), or
  * the difference is listed in expected-differences.txt (COMPARISON|CASE|
    reason) -- a listed case that no longer differs FAILs, so the list
    cannot go stale.
It FAILs when ours crashes where upstream returns, or returns something
else.  SKIP: upstream itself could not set up the good objects.

  report.py --host FILE     ours on swr0 on this machine only: PASS per case
                            that did not crash (no comparison)
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
from reportlib import (entries, parse_args, print_table, read, read_info, read_int,  # noqa: E402
                       is_complete, resolved, vm_run_checks)

SUITE = "vm-sweep"
RUNS = ("upstream-rxe0", "ours-rxe0", "ours-swr0")


def parse(text):
    """{case: (class, detail)} in program order (dict order)."""
    res = {}
    for line in (text or "").splitlines():
        parts = line.split("|")
        if len(parts) == 3:
            res[parts[0]] = (parts[1], parts[2])
    return res


def fmt(r):
    if r is None:
        return "-"
    cls, det = r
    return cls if det in ("-", "") else f"{cls} {det}"


def verdict(up, ours):
    """(result, why, kind) for one case; kind: same, clean, undefined, setup,
    differ, crash, missing."""
    if up is None or ours is None:
        return "FAIL", "no result (the run ended early)", "missing"
    if up[0] == "setup":
        return "SKIP", f"upstream could not set up: {up[1]}", "setup"
    if up == ours:
        if up[0] == "signal":
            return "PASS", f"both crash ({up[1]}): undefined as upstream", "undefined"
        return "PASS", "", "same"
    if up[0] == "signal" and ours[0] != "signal":
        return "PASS", f"upstream crashes ({up[1]}), ours returns {fmt(ours)}", "clean"
    if up[0] == "signal" and ours[0] == "signal":
        return "PASS", f"both crash (upstream {up[1]}, ours {ours[1]}): undefined as upstream", "undefined"
    if ours[0] == "signal":
        return "FAIL", f"ours crashes ({ours[1]}) where upstream returns {fmt(up)}", "crash"
    return "FAIL", f"upstream {fmt(up)}, ours {fmt(ours)}", "differ"


def host(path):
    res = parse(read(path, ""))
    checks = []
    for case, r in res.items():
        if r[0] == "signal":
            checks.append(("FAIL", case, f"ours crashes ({r[1]})"))
        elif r[0] == "setup":
            checks.append(("SKIP", case, f"setup: {r[1]}"))
        else:
            checks.append(("PASS", case, fmt(r)))
    print_table(("case", "ours on swr0 (host)"), [(c, fmt(r)) for c, r in res.items()])
    print()
    return close(checks, "host mode: no comparison, FAIL = crash")


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
        return host(sys.argv[2])
    a = parse_args("--expected")
    info, complete = read_info(a.results), is_complete(a.results)
    runs = {r: parse(read(os.path.join(a.results, r + ".out"), "")) for r in RUNS}
    # --self-check has no swr0 run (guest.sh, SWEEP_SWR0=0): its comparisons are skipped
    no_swr0 = complete and read(os.path.join(a.results, "ours-swr0.rc")) is None
    expected = {}
    for line in entries(a.expected):
        comp, case, reason = (line.split("|", 2) + ["", ""])[:3]
        expected[(comp.strip(), case.strip())] = reason.strip()
    cases = list(runs["upstream-rxe0"]) or list(runs["ours-rxe0"]) or list(runs["ours-swr0"])
    for r in RUNS:
        cases += [c for c in runs[r] if c not in cases]
    checks, rows, kinds, out = [], [], {}, []
    for case in cases:
        up = runs["upstream-rxe0"].get(case)
        row = [case, fmt(up)]
        for comp in ("rxe0", "swr0"):
            ours = runs[f"ours-{comp}"].get(case)
            result, why, kind = verdict(up, ours)
            reason = expected.pop((comp, case), None)
            if comp == "swr0" and no_swr0:
                result, why, kind, reason = "SKIP", "no swr0 run (--self-check)", "setup", None
            if reason is not None:
                if result == "FAIL" and kind in ("differ", "crash"):
                    result, why, kind = "PASS", f"expected difference ({fmt(up)} vs {fmt(ours)}): {reason}", "expected"
                else:
                    result, why = "FAIL", ("listed in expected-differences.txt but ours and upstream agree now "
                                           f"({fmt(up)} / {fmt(ours)}): remove the line")
            kinds.setdefault(comp, {}).setdefault(kind, 0)
            kinds[comp][kind] += 1
            checks.append((result, f"{comp}/{case}", why))
            row += [fmt(ours), {"same": "=", "clean": "clean", "undefined": "both crash",
                                "expected": "expected"}.get(kind, "DIFF") if result != "SKIP" else "skip"]
            out.append({"case": case, "comparison": comp, "upstream": up, "ours": ours, "result": result,
                        "why": why, "kind": kind})
        rows.append(tuple(row))
    for (comp, case), reason in expected.items():
        checks.append(("FAIL", f"{comp}/{case}", "listed in expected-differences.txt but the case does not exist"))
    for r in RUNS:
        rc = read_int(os.path.join(a.results, r + ".rc"))
        if rc not in (0, None):
            checks.insert(0, ("FAIL", f"run/{r}", f"the sweep program exited {rc}: "
                              + " | ".join((read(os.path.join(a.results, r + ".err"), "") or "").strip()
                                           .splitlines()[-3:])))
    checks, ran = vm_run_checks(checks, a, complete)
    if rows and ran:
        ms = {r: read_int(os.path.join(a.results, r + ".ms")) for r in RUNS}
        print("sweep on rxe0 (gid %s) and swr0, kernel %s; %s" % (info.get("gid_rxe0", "?"), info.get("kernel", "?"),
                                                                  resolved(info)))
        print("run times: " + ", ".join(f"{r} {ms[r]} ms" for r in RUNS))
        print_table(("case", "upstream rxe0", "ours rxe0", "vs", "ours swr0", "vs"), rows)
        for comp in ("rxe0", "swr0"):
            print(f"ours/{comp}: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.get(comp, {}).items())))
        print()
    crashes = {r: sum(1 for v in runs[r].values() if v[0] == "signal") for r in RUNS}
    doc = {"suite": SUITE, "vm_status": a.vm_status, "complete": complete, "seconds": a.seconds, "info": info,
           "our_lib": a.our_lib, "upstream_lib": a.upstream_lib, "crashes": crashes,
           "checks": [{"result": r, "name": n, "why": y} for r, n, y in checks], "cases": out}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return close(checks, "crashes: " + ", ".join(f"{r} {crashes[r]}" for r in RUNS))


if __name__ == "__main__":
    sys.exit(main())
