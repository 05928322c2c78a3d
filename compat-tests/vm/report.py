#!/usr/bin/env python3
"""Compares the vm suite's results (written by suite-guest.sh inside the VM):
prints the side-by-side table, one PASS/FAIL line per test and the closing
line (CONVENTIONS.md), writes results.json.  Exit status 0 only when nothing
failed."""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from reportlib import (NO_RESULT, begin, each_test, entries, finish, fmt_status,  # noqa: E402
                       known_same, known_stale, pair_side, pair_text, print_table,
                       read, read_int, resolved, vm_run_checks)

SUITE = "vm"


def load_tests(path):
    tests = []
    for line in entries(path):
        tid, kind, cmd = line.split("|", 2)
        tests.append({"id": tid, "kind": kind, "command": cmd})
    return tests


def side(d, t):
    """One library's result of one test, or None when absent."""
    if t["kind"] == "single":
        rc = read_int(os.path.join(d, "cmd.rc"))
        if rc is None:
            return None
        return {"status": rc, "ms": read_int(os.path.join(d, "cmd.ms")),
                "stdout": read(os.path.join(d, "cmd.out"), ""),
                "stderr": read(os.path.join(d, "cmd.err"), "")}
    return pair_side(d)


_VOLATILE = [
    (re.compile(r"\b(QPN|PSN|LID) 0x[0-9a-fA-F]+"), r"\1 <n>"),
    (re.compile(r"\d+\.\d+"), "<t>"),
]


def normalize(text):
    for rx, rep in _VOLATILE:
        text = rx.sub(rep, text)
    return text


def first_line(*texts):
    for t in texts:
        for line in (t or "").splitlines():
            if line.strip():
                return line.strip()[:160]
    return ""


def main():
    a, info, complete = begin("--tests", "--known")
    rows, checks, out_tests = [], [], []
    for t, up, ours, reason in each_test(a, load_tests(a.tests), side):
        tid, kind = t["id"], t["kind"]
        result, why, same = "FAIL", "", None
        if up is None or ours is None:
            why = NO_RESULT
        else:
            if kind == "single":
                same = up["stdout"] == ours["stdout"]
            else:
                same = normalize(pair_text(up)) == normalize(pair_text(ours))
            up_ok = up["status"] in (0, [0, 0])
            status_same = up["status"] == ours["status"]
            if reason is not None and up_ok:
                why = known_stale(a.known)
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
            elif kind == "single" and a.compare_stderr and up["stderr"] != ours["stderr"]:
                why = ("stderr differs from upstream's; ours said: "
                       f"{first_line(ours['stderr']) or '(nothing)'} / upstream said: "
                       f"{first_line(up['stderr']) or '(nothing)'}")
            elif reason is not None and not same:
                # a device limit: ours must hit it, not fail for another reason
                why = ("upstream fails at a device limit, ours fails differently; ours said: "
                       f"{first_line(ours.get('server_stderr'), ours.get('client_stderr'), ours.get('server_stdout'))}"
                       f" / upstream said: {first_line(up.get('server_stderr'), up.get('client_stderr'), up.get('server_stdout'))}")
            else:
                result, why = "PASS", known_same(reason)
        checks.append((result, tid, why))
        rows.append((t["command"], fmt_status(up and up["status"]),
                     fmt_status(ours and ours["status"]),
                     "-" if same is None else ("yes" if same else "no"),
                     result + (" (known upstream failure)" if reason is not None else "")))
        out_tests.append({"id": tid, "command": t["command"], "kind": kind,
                          "known_upstream_failure": reason, "upstream": up, "ours": ours,
                          "same_output": same, "result": result, "why": why})

    checks, ran = vm_run_checks(checks, a, complete)
    if rows and ran:
        print("Soft-RoCE VM: kernel %s, rxe0 gid %s (%s), rxe1 gid %s (%s); pingpong status = server/client"
              % (info.get("kernel", "?"), info.get("gid_rxe0", "?"), info.get("gid_value_rxe0", "?"),
                 info.get("gid_rxe1", "?"), info.get("gid_value_rxe1", "?")))
        print(resolved(info))
        print_table(("test", "upstream", "ours", "same output", "result"), rows)
        print()
    return finish(SUITE, a, complete, info, checks, tail={"tests": out_tests})


if __name__ == "__main__":
    sys.exit(main())
