#!/usr/bin/env python3
"""Compares the vm suite's results (written by suite-guest.sh inside the VM):
prints the side-by-side table, one PASS/FAIL line per test and the closing
line (CONVENTIONS.md), writes results.json.  Exit status 0 only when nothing
failed."""
import argparse
import json
import os
import re
import sys


def read(path, default=None, limit=None):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return default
    text = data.decode("utf-8", "replace")
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters]\n"
    return text


def read_int(path):
    v = read(path)
    try:
        return int(v.strip())
    except (AttributeError, ValueError):
        return None


def load_tests(path):
    tests = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tid, kind, cmd = line.split("|", 2)
        tests.append({"id": tid, "kind": kind, "command": cmd})
    return tests


def load_known(path):
    known = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            tid, _, reason = line.partition("|")
            known[tid.strip()] = reason.strip()
    return known


def side(d, kind):
    """One library's result of one test, or None when absent."""
    if kind == "single":
        rc = read_int(os.path.join(d, "cmd.rc"))
        if rc is None:
            return None
        return {"status": rc, "ms": read_int(os.path.join(d, "cmd.ms")),
                "stdout": read(os.path.join(d, "cmd.out"), ""),
                "stderr": read(os.path.join(d, "cmd.err"), "")}
    src = read_int(os.path.join(d, "server.rc"))
    crc = read_int(os.path.join(d, "client.rc"))
    if src is None or crc is None:
        return None
    r = {"status": [src, crc], "ms": read_int(os.path.join(d, "pair.ms"))}
    for who in ("server", "client"):
        r[who + "_stdout"] = read(os.path.join(d, who + ".out"), "", 20000)
        r[who + "_stderr"] = read(os.path.join(d, who + ".err"), "", 20000)
    return r


def fmt_status(st):
    def one(v):
        return "timeout" if v in (124, 137) else str(v)
    if st is None:
        return "-"
    if isinstance(st, list):
        return "/".join(one(v) for v in st)
    return one(st)


_VOLATILE = [
    (re.compile(r"\b(QPN|PSN|LID) 0x[0-9a-fA-F]+"), r"\1 <n>"),
    (re.compile(r"\d+\.\d+"), "<t>"),
]


def normalize(text):
    for rx, rep in _VOLATILE:
        text = rx.sub(rep, text)
    return text


def pair_text(r):
    return "".join(r[k] for k in ("server_stdout", "server_stderr", "client_stdout", "client_stderr"))


def first_line(*texts):
    for t in texts:
        for line in (t or "").splitlines():
            if line.strip():
                return line.strip()[:160]
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--tests", required=True)
    ap.add_argument("--known", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--vm-status", type=int, default=0)
    ap.add_argument("--vm-log", default="")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--our-lib", default="")
    ap.add_argument("--upstream-lib", default="")
    a = ap.parse_args()

    tests = load_tests(a.tests)
    known = load_known(a.known)
    info = {}
    for line in (read(os.path.join(a.results, "info"), "") or "").splitlines():
        k, _, v = line.partition("=")
        info[k] = v
    complete = os.path.exists(os.path.join(a.results, "complete"))

    rows, checks, out_tests = [], [], []
    for t in tests:
        tid, kind = t["id"], t["kind"]
        up = side(os.path.join(a.results, tid, "upstream"), kind)
        ours = side(os.path.join(a.results, tid, "ours"), kind)
        reason = known.get(tid)
        same = None
        result, why = "FAIL", ""
        if up is None or ours is None:
            why = "no result: the VM run ended before this test finished"
        else:
            if kind == "single":
                same = up["stdout"] == ours["stdout"]
            else:
                same = normalize(pair_text(up)) == normalize(pair_text(ours))
            up_ok = up["status"] in (0, [0, 0])
            status_same = up["status"] == ours["status"]
            if reason is not None and up_ok:
                why = ("listed in known-upstream-failures.txt but upstream passes now: "
                       "remove it from the list")
            elif reason is None and not up_ok:
                why = (f"upstream itself failed (exit {fmt_status(up['status'])}): "
                       f"{first_line(up.get('stderr'), up.get('server_stderr'), up.get('client_stderr'), up.get('stdout'), up.get('server_stdout'))}"
                       " - not a known device limit; harness or VM problem?")
            elif not status_same:
                why = (f"exit status ours {fmt_status(ours['status'])} vs upstream "
                       f"{fmt_status(up['status'])}")
                msg = first_line(ours.get("stderr"), ours.get("server_stderr"),
                                 ours.get("client_stderr"))
                if msg:
                    why += f"; ours said: {msg}"
            elif kind == "single" and not same:
                why = "stdout differs from upstream's"
            elif reason is not None and not same:
                # a device limit: ours must hit it, not fail for another reason
                why = ("upstream fails at a device limit, ours fails differently; ours said: "
                       f"{first_line(ours.get('server_stderr'), ours.get('client_stderr'), ours.get('server_stdout'))}"
                       f" / upstream said: {first_line(up.get('server_stderr'), up.get('client_stderr'), up.get('server_stdout'))}")
            else:
                result = "PASS"
                if reason is not None:
                    why = f"known upstream failure, ours fails the same way: {reason}"
        checks.append((result, tid, why))
        rows.append((t["command"], fmt_status(up and up["status"]),
                     fmt_status(ours and ours["status"]),
                     "-" if same is None else ("yes" if same else "no"),
                     result + (" (known upstream failure)" if reason is not None else "")))
        out_tests.append({"id": tid, "command": t["command"], "kind": kind,
                          "known_upstream_failure": reason, "upstream": up, "ours": ours,
                          "same_output": same, "result": result, "why": why})

    if a.vm_status != 0 or not complete:
        msg = f"the VM run did not complete (vm-run.sh exit status {a.vm_status})"
        log = (a.vm_log or "").strip()
        if log:
            msg += ": " + " | ".join(l.strip() for l in log.splitlines() if l.strip().startswith("vm:"))[:600]
        checks.insert(0, ("FAIL", "vm-run", msg))

    if not os.path.isdir(a.results):
        # the VM never ran the suite: one failure, no table of empty rows
        checks = [c for c in checks if c[1] == "vm-run"] or [("FAIL", "vm-run", "no results")]
        rows = []
    # the table
    w = [max(len(r[i]) for r in rows + [("test", "upstream", "ours", "same output", "result")])
         for i in range(5)]
    hdr = ("test", "upstream", "ours", "same output", "result")
    if rows:
        print("Soft-RoCE VM: kernel %s, rxe0 gid %s (%s), rxe1 gid %s (%s); pingpong status = server/client"
              % (info.get("kernel", "?"), info.get("gid_rxe0", "?"), info.get("gid_value_rxe0", "?"),
                 info.get("gid_rxe1", "?"), info.get("gid_value_rxe1", "?")))
        print("upstream: %s   ours: %s" % (info.get("upstream_resolved", "?") or "not found",
                                           info.get("ours_resolved", "?") or "not found"))
    if rows:
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)).rstrip())
        print("  ".join("-" * w[i] for i in range(5)))
        for r in rows:
            print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
        print()

    passed = sum(1 for c in checks if c[0] == "PASS")
    failed = sum(1 for c in checks if c[0] == "FAIL")
    for res, name, why in checks:
        if res == "PASS":
            print(f"PASS {name}")
        else:
            print(f"FAIL {name}: {why}")
    print(f"vm: {passed} passed, {failed} failed")

    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json + ".tmp", "w") as f:
        json.dump({"suite": "vm", "vm_status": a.vm_status, "complete": complete,
                   "seconds": a.seconds, "info": info,
                   "our_lib": a.our_lib, "upstream_lib": a.upstream_lib,
                   "checks": [{"result": r, "name": n, "why": y} for r, n, y in checks],
                   "tests": out_tests, "passed": passed, "failed": failed}, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
