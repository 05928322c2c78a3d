#!/usr/bin/env python3
"""Compares the vm-fork results (written by fork-guest.sh inside the VM):
table, one PASS/FAIL line per run, the closing line (CONVENTIONS.md), JSON.
A run PASSes when upstream's fork-mr succeeded (exit 0) and ours exited the
same way with byte-identical stdout (every step, ibv_is_fork_initialized(),
what happened to the child).  Exit status 0 only when nothing failed."""
import difflib
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from reportlib import (begin, entries, finish, print_table, read, resolved,  # noqa: E402
                       vm_run_checks)

SUITE = "vm-fork"


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
    a, info, complete = begin("--tests")
    rows, checks, out_tests = [], [], []
    for line in entries(a.tests):
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

    checks, ran = vm_run_checks(checks, a, complete)
    if rows and ran:
        print("fork-mr on rxe0 (gid %s), kernel %s; %s"
              % (info.get("gid_rxe0", "?"), info.get("kernel", "?"), resolved(info)))
        print_table(("run", "upstream", "ours", "same stdout", "the child (upstream)", "result"), rows)
        print()
    return finish(SUITE, a, complete, info, checks, tail={"tests": out_tests})


if __name__ == "__main__":
    sys.exit(main())
