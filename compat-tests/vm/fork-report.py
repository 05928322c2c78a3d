#!/usr/bin/env python3
"""Compares the vm-fork results (written by fork-guest.sh inside the VM):
table, one PASS/FAIL line per run, the closing line (CONVENTIONS.md), JSON.
A run PASSes when upstream's fork-mr succeeded (exit 0) and ours exited the
same way with byte-identical stdout (every step, ibv_is_fork_initialized(),
what happened to the child).  Exit status 0 only when nothing failed."""
import argparse
import difflib
import json
import os
import sys

SUITE = "vm-fork"


def read(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def side(d):
    rc = read(os.path.join(d, "rc"))
    if rc is None:
        return None
    try:
        rc = int(rc.strip())
    except ValueError:
        rc = None
    return {"status": rc, "stdout": read(os.path.join(d, "out"), ""),
            "stderr": read(os.path.join(d, "err"), "")}


def child_fate(out):
    for line in (out or "").splitlines():
        if line.startswith("child_write:"):
            return line.split(":", 1)[1].strip().split(" (")[0]
    return "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--tests", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--vm-status", type=int, default=0)
    ap.add_argument("--vm-log", default="")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--our-lib", default="")
    ap.add_argument("--upstream-lib", default="")
    a = ap.parse_args()

    info = {}
    for line in (read(os.path.join(a.results, "info"), "") or "").splitlines():
        k, _, v = line.partition("=")
        info[k] = v
    complete = os.path.exists(os.path.join(a.results, "complete"))
    rows, checks, out_tests = [], [], []
    for line in open(a.tests):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tid, binary, envs, args = (line.split("|") + ["", "", ""])[:4]
        cmd = " ".join(x for x in (envs, binary, "rxe0 <gid>", args) if x)
        up = side(os.path.join(a.results, tid, "upstream"))
        ours = side(os.path.join(a.results, tid, "ours"))
        result, why, same = "FAIL", "", None
        if up is None or ours is None:
            why = "no result: the VM run ended before this run finished"
        else:
            same = up["stdout"] == ours["stdout"]
            if up["status"] != 0:
                why = (f"upstream itself failed (exit {up['status']}): "
                       f"{(up['stderr'] or up['stdout']).strip().splitlines()[-1:]} - harness or VM problem?")
            elif ours["status"] != up["status"]:
                last = [l for l in ours["stdout"].splitlines() if "FAILED" in l][:1] or \
                       (ours["stderr"].strip().splitlines()[-1:])
                why = f"exit status ours {ours['status']} vs upstream 0; ours: {'; '.join(last)}"
            elif not same:
                diff = [l for l in difflib.unified_diff(up["stdout"].splitlines(), ours["stdout"].splitlines(),
                                                        "upstream", "ours", lineterm="", n=0)
                        if l[:1] in "+-" and not l.startswith(("+++", "---"))]
                why = "stdout differs: " + " | ".join(diff[:4])
            else:
                result = "PASS"
        checks.append((result, tid, why))
        rows.append((cmd, "-" if not up else str(up["status"]), "-" if not ours else str(ours["status"]),
                     "-" if same is None else ("yes" if same else "no"),
                     child_fate(up and up["stdout"]), result))
        out_tests.append({"id": tid, "command": cmd, "upstream": up, "ours": ours,
                          "same_stdout": same, "result": result, "why": why})

    if a.vm_status != 0 or not complete:
        msg = f"the VM run did not complete (vm-run.sh exit status {a.vm_status})"
        log = (a.vm_log or "").strip()
        if log:
            msg += ": " + " | ".join(l.strip() for l in log.splitlines() if l.strip().startswith("vm:"))[:600]
        checks.insert(0, ("FAIL", "vm-run", msg))
    if not os.path.isdir(a.results):
        checks = [c for c in checks if c[1] == "vm-run"] or [("FAIL", "vm-run", "no results")]
        rows = []
    if rows:
        hdr = ("run", "upstream", "ours", "same stdout", "the child (upstream)", "result")
        w = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
        print("fork-mr on rxe0 (gid %s), kernel %s; upstream: %s   ours: %s" % (
            info.get("gid_rxe0", "?"), info.get("kernel", "?"),
            info.get("upstream_resolved", "?") or "not found", info.get("ours_resolved", "?") or "not found"))
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)).rstrip())
        print("  ".join("-" * w[i] for i in range(len(hdr))))
        for r in rows:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
        print()
    passed = sum(1 for c in checks if c[0] == "PASS")
    failed = sum(1 for c in checks if c[0] == "FAIL")
    for res, name, why in checks:
        print(f"PASS {name}" if res == "PASS" else f"FAIL {name}: {why}")
    print(f"{SUITE}: {passed} passed, {failed} failed")
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json + ".tmp", "w") as f:
        json.dump({"suite": SUITE, "vm_status": a.vm_status, "complete": complete,
                   "seconds": a.seconds, "info": info, "our_lib": a.our_lib,
                   "upstream_lib": a.upstream_lib,
                   "checks": [{"result": r, "name": n, "why": y} for r, n, y in checks],
                   "tests": out_tests, "passed": passed, "failed": failed}, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
