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
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import reportlib  # noqa: E402
from reportlib import (NO_RESULT, begin, each_test, entries, finish, known_same,  # noqa: E402
                       known_stale, pair_side, pair_text, print_table, read,
                       resolved, vm_run_checks)

SUITE = "vm-perftest"


def load_tests(path):
    tests = []
    for line in entries(path):
        tid, cmd = line.split("|", 1)
        tests.append({"id": tid.strip(), "command": cmd.strip()})
    return tests


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


def side(d, _test=None):
    r = pair_side(d)
    if r is None:
        return None
    r["server_killed"] = read(os.path.join(d, "server.killed"))
    r["result_row"] = result_row(r["client_stdout"])
    return r


def fmt_status(st):
    return reportlib.fmt_status(st, {124: "timeout", 137: "killed", 143: "killed"})


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
    a, info, complete = begin("--tests", "--known")
    rows, checks, out_tests = [], [], []
    for t, up, ours, reason in each_test(a, load_tests(a.tests), side):
        tid = t["id"]
        result, why, same = "FAIL", "", None
        if up is None or ours is None:
            why = NO_RESULT
        else:
            same = normalize(pair_text(up)) == normalize(pair_text(ours))
            up_ok = up["status"] == [0, 0]
            ours_ok = ours["status"] == [0, 0]
            if reason is not None and up_ok:
                why = known_stale(a.known)
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
                result, why = "PASS", known_same(reason)
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

    checks, ran = vm_run_checks(checks, a, complete)
    if rows and ran:
        print("perftest %s on Soft-RoCE: kernel %s, server rxe0 gid %s, client rxe1 gid %s; status = server/client"
              % (info.get("perftest", "?"), info.get("kernel", "?"), info.get("gid_rxe0", "?"),
                 info.get("gid_rxe1", "?")))
        print(resolved(info))
        print_table(("test", "upstream", "ours", "up s", "ours s", "same output", "result"), rows)
        print()
    return finish(SUITE, a, complete, info, checks, tail={"tests": out_tests})


if __name__ == "__main__":
    sys.exit(main())
