#!/usr/bin/env python3
"""Compares the vm-perftest results (written by perftest-guest.sh inside the
VM): prints the side-by-side table, one PASS/FAIL line per test and the
closing line (CONVENTIONS.md), writes the JSON.  Exit status 0 only when
nothing failed.

A test PASSes when
  * upstream passed (server and client exit 0, the client printed its result
    row) and ours did too;
  * or it is listed in perftest-known-upstream-failures.txt, upstream failed,
    and ours failed the same way (same exit statuses, same output once
    numbers are masked).
"""
import argparse
import json
import os
import re
import sys

SUITE = "vm-perftest"


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
    try:
        return int(read(path).strip())
    except (AttributeError, ValueError):
        return None


def load_tests(path):
    tests = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        tid, cmd = line.split("|", 1)
        tests.append({"id": tid.strip(), "command": cmd.strip()})
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


_HEADER = re.compile(r"^\s*#bytes\b")
_ROW = re.compile(r"^\s*\d+\s+\d+\s+\S+")   # latencies may be "inf" under TCG


def result_row(text):
    """The client's result row (the line after the '#bytes' header), or None."""
    lines = (text or "").splitlines()
    for i, line in enumerate(lines):
        if _HEADER.match(line):
            for nxt in lines[i + 1:i + 4]:
                if _ROW.match(nxt):
                    return " ".join(nxt.split())
    return None


def side(d):
    src = read_int(os.path.join(d, "server.rc"))
    crc = read_int(os.path.join(d, "client.rc"))
    if src is None or crc is None:
        return None
    r = {"status": [src, crc], "ms": read_int(os.path.join(d, "pair.ms"))}
    for who in ("server", "client"):
        r[who + "_stdout"] = read(os.path.join(d, who + ".out"), "", 20000)
        r[who + "_stderr"] = read(os.path.join(d, who + ".err"), "", 20000)
    r["server_killed"] = read(os.path.join(d, "server.killed"))
    r["result_row"] = result_row(r["client_stdout"])
    return r


def fmt_status(st):
    def one(v):
        return {124: "timeout", 137: "killed", 143: "killed"}.get(v, str(v))
    if st is None:
        return "-"
    return "/".join(one(v) for v in st)


_VOLATILE = [
    (re.compile(r"0x[0-9a-fA-F]+"), "<x>"),
    (re.compile(r"\b[0-9a-fA-F]{2}(:[0-9a-fA-F]{2,3}){5,}\b"), "<gid>"),
    (re.compile(r"-?\b(nan|inf)\b"), "<n>"),
    (re.compile(r"\d+(\.\d+)?"), "<n>"),
    (re.compile(r"[ \t]+"), " "),
    (re.compile(r" +$", re.M), ""),
]


# timing-dependent warnings (TCG's clock is noisy)
_NOISE = re.compile(r"(?m)^.*(Correlation coefficient|Conflicting CPU frequency|CPU is not "
                    r"Intel|cpu-freq|CPU frequency).*\n?")


def normalize(text):
    text = _NOISE.sub("", text)
    for rx, rep in _VOLATILE:
        text = rx.sub(rep, text)
    return text


def pair_text(r):
    return "".join(r[k] for k in ("server_stdout", "server_stderr", "client_stdout", "client_stderr"))


def first_error(r):
    """The first line that looks like perftest's complaint."""
    for k in ("client_stderr", "client_stdout", "server_stderr", "server_stdout"):
        for line in (r.get(k) or "").splitlines():
            s = line.strip()
            if not s or set(s) <= set("-*#") or "Waiting for client" in s:
                continue
            if re.search(r"(?i)fail|couldn|unable|error|not supported|unsupported|invalid|cannot|can't", s):
                return s[:160]
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
        tid = t["id"]
        up = side(os.path.join(a.results, tid, "upstream"))
        ours = side(os.path.join(a.results, tid, "ours"))
        reason = known.get(tid)
        same = None
        result, why = "FAIL", ""
        if up is None or ours is None:
            why = "no result: the VM run ended before this test finished"
        else:
            same = normalize(pair_text(up)) == normalize(pair_text(ours))
            up_ok = up["status"] == [0, 0]
            ours_ok = ours["status"] == [0, 0]
            if reason is not None and up_ok:
                why = ("listed in perftest-known-upstream-failures.txt but upstream passes now: "
                       "remove it from the list")
            elif reason is None and not up_ok:
                why = (f"upstream itself failed (exit {fmt_status(up['status'])}): {first_error(up)}"
                       " - not a known device limit; harness or VM problem?")
            elif reason is None and up["result_row"] is None:
                why = "upstream exited 0 but printed no result row: harness problem?"
            elif reason is None and not ours_ok:
                why = f"exit status ours {fmt_status(ours['status'])} vs upstream 0/0"
                msg = first_error(ours)
                if msg:
                    why += f"; ours said: {msg}"
                if ours.get("server_killed"):
                    why += "; " + ours["server_killed"].strip()
            elif reason is None and ours["result_row"] is None:
                why = "ours exited 0 but the client printed no result row (did not complete)"
            elif reason is not None and up["status"] != ours["status"]:
                why = (f"exit status ours {fmt_status(ours['status'])} vs upstream "
                       f"{fmt_status(up['status'])}; ours said: {first_error(ours)}")
            elif reason is not None and not same:
                why = ("upstream fails at a device limit, ours fails differently; ours said: "
                       f"{first_error(ours)} / upstream said: {first_error(up)}")
            else:
                result = "PASS"
                if reason is not None:
                    why = f"known upstream failure, ours fails the same way: {reason}"
        checks.append((result, tid, why))
        rows.append((t["command"], fmt_status(up and up["status"]),
                     fmt_status(ours and ours["status"]),
                     "-" if not up or up["ms"] is None else "%.1f" % (up["ms"] / 1000),
                     "-" if not ours or ours["ms"] is None else "%.1f" % (ours["ms"] / 1000),
                     "-" if same is None else ("yes" if same else "no"),
                     result + (" (known upstream failure)" if reason is not None else "")))
        out_tests.append({"id": tid, "command": t["command"],
                          "known_upstream_failure": reason, "upstream": up, "ours": ours,
                          "same_output": same, "result": result, "why": why})

    if a.vm_status != 0 or not complete:
        msg = f"the VM run did not complete (vm-run.sh exit status {a.vm_status})"
        log = (a.vm_log or "").strip()
        if log:
            msg += ": " + " | ".join(l.strip() for l in log.splitlines() if l.strip().startswith("vm:"))[:600]
        checks.insert(0, ("FAIL", "vm-run", msg))
    if not os.path.isdir(a.results):
        checks = [c for c in checks if c[1] == "vm-run"] or [("FAIL", "vm-run", "no results")]
        rows = []

    hdr = ("test", "upstream", "ours", "up s", "ours s", "same output", "result")
    if rows:
        w = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
        print("perftest %s on Soft-RoCE: kernel %s, server rxe0 gid %s, client rxe1 gid %s; status = server/client"
              % (info.get("perftest", "?"), info.get("kernel", "?"), info.get("gid_rxe0", "?"),
                 info.get("gid_rxe1", "?")))
        print("upstream: %s   ours: %s" % (info.get("upstream_resolved", "?") or "not found",
                                           info.get("ours_resolved", "?") or "not found"))
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
                   "seconds": a.seconds, "info": info,
                   "our_lib": a.our_lib, "upstream_lib": a.upstream_lib,
                   "checks": [{"result": r, "name": n, "why": y} for r, n, y in checks],
                   "tests": out_tests, "passed": passed, "failed": failed}, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
