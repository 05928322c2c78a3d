#!/usr/bin/env python3
"""Compares the vm-pyverbs results (written by pyverbs-guest.sh inside the
VM): per-module table, totals per library, one PASS/FAIL line per test and
the closing line (CONVENTIONS.md); writes the JSON (test id -> upstream/ours
status) and a per-test table (table.txt).  Exit status 0 only when nothing
failed.

A test PASSes when ours ends like upstream:
  * upstream pass  -> ours pass;
  * upstream skip  -> ours skip, for the same reason;
  * upstream fail/error, listed in pyverbs-known-upstream-failures.txt
                   -> ours the same status with the same exception message.
Anything else is a FAIL: ours differs, upstream failed a test that is not
listed (harness or VM problem), or a listed test passes on upstream now.
"""
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from reportlib import (NO_RESULT, begin, finish, known_same, known_stale,  # noqa: E402
                       load_known, read, table_lines, vm_run_checks)

SUITE = "vm-pyverbs"
STATUSES = ["pass", "skip", "fail", "error", "timeout", "crash", "not-run", "xfail", "xpass"]


def load_jsonl(path):
    res, extras = {}, []
    for line in (read(path, "") or "").splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("extra"):
            extras.append(r)
        else:
            res[r["id"]] = r
    return res, extras


_ADDR = re.compile(r"0x[0-9a-fA-F]{6,}")


def norm_msg(m):
    return _ADDR.sub("0x<addr>", (m or "").strip())


def short_id(tid):
    return tid[len("tests."):] if tid.startswith("tests.") else tid


def main():
    a, info, complete = begin("--known", "--table")
    ids = [l.strip() for l in (read(os.path.join(a.results, "ids"), "") or "").splitlines() if l.strip()]
    up, up_extra = load_jsonl(os.path.join(a.results, "upstream.jsonl"))
    ours, ours_extra = load_jsonl(os.path.join(a.results, "ours.jsonl"))
    known = load_known(a.known)

    checks, out_tests, table = [], [], []
    for tid in ids:
        u, o = up.get(tid), ours.get(tid)
        reason = known.get(tid)
        us = u["status"] if u else None
        os_ = o["status"] if o else None
        result, why = "FAIL", ""
        if u is None or o is None:
            why = NO_RESULT
        elif reason is not None and us in ("pass", "skip"):
            why = known_stale(a.known, f"says {us}")
        elif reason is None and us not in ("pass", "skip"):
            why = (f"upstream itself: {us}: {u.get('message', '')} - not a known device limit; "
                   "harness or VM problem?")
        elif os_ != us:
            why = f"ours {os_} vs upstream {us}"
            if o.get("message"):
                why += f"; ours: {o['message']}"
            if us == "skip":
                why += f"; upstream skipped: {u.get('message', '')}"
        elif us == "skip" and norm_msg(o.get("message")) != norm_msg(u.get("message")):
            why = f"both skip, for other reasons: ours '{o.get('message')}' vs upstream '{u.get('message')}'"
        elif us in ("fail", "error") and norm_msg(o.get("message")) != norm_msg(u.get("message")):
            why = (f"upstream fails at a device limit, ours fails differently: ours '{o.get('message')}'"
                   f" vs upstream '{u.get('message')}'")
        else:
            result, why = "PASS", known_same(reason)
        checks.append((result, short_id(tid), why))
        out_tests.append({"id": tid, "upstream": us, "ours": os_, "result": result, "why": why,
                          "known_upstream_failure": reason,
                          "upstream_detail": u, "ours_detail": o})
        table.append((short_id(tid), us or "-", os_ or "-",
                      result + (" (known)" if reason is not None else ""),
                      (u or {}).get("message", "") if us != "pass" else ""))

    checks, _ = vm_run_checks(checks, a, complete, ran=bool(ids), why="no test list")

    def counts(res):
        c = {s: 0 for s in STATUSES}
        for tid in ids:
            if tid in res:
                c[res[tid]["status"]] = c.get(res[tid]["status"], 0) + 1
        return c

    cu, co = counts(up), counts(ours)

    def fmt_counts(c):
        return ", ".join(f"{v} {k}" for k, v in c.items() if v) or "nothing"

    # per-module summary
    mods = {}
    for t in out_tests:
        m = t["id"].split(".")[1] if t["id"].count(".") >= 2 else t["id"]
        d = mods.setdefault(m, {"n": 0, "up": {}, "ours": {}, "PASS": 0, "FAIL": 0})
        d["n"] += 1
        d["up"][t["upstream"]] = d["up"].get(t["upstream"], 0) + 1
        d["ours"][t["ours"]] = d["ours"].get(t["ours"], 0) + 1
        d[t["result"]] += 1

    def compact(c):
        abbrev = {"pass": "p", "skip": "s", "fail": "F", "error": "E", "timeout": "T",
                  "crash": "C", "not-run": "N", "xfail": "xf", "xpass": "xp", None: "-"}
        return " ".join(f"{v}{abbrev.get(k, k)}" for k, v in sorted(c.items(), key=lambda kv: str(kv[0])))

    if ids:
        print("rdma-core's pyverbs tests (python3-pyverbs %s) on rxe0 (gid %s), kernel %s: %s of %s tests"
              % (info.get("pyverbs", "?"), info.get("gid_rxe0", "?"), info.get("kernel", "?"),
                 info.get("tests", "?"), info.get("tests_all", "?")))
        print("upstream: %s (%ss)   ours: %s (%ss)" % (
            info.get("upstream_resolved", "?") or "not found", info.get("upstream_secs", "?"),
            info.get("ours_resolved", "?") or "not found", info.get("ours_secs", "?")))
        rows = [(m, str(d["n"]), compact(d["up"]), compact(d["ours"]), f"{d['PASS']}/{d['n']}")
                for m, d in sorted(mods.items())]
        for line in table_lines(("module", "tests", "upstream", "ours", "PASS"), rows):
            print(line)
        print("(p pass, s skip, F fail, E error, T timeout, C crash, N not run; "
              "per-test table: %s)" % a.table)
        print(f"upstream: {len(ids)} tests: {fmt_counts(cu)}")
        print(f"ours:     {len(ids)} tests: {fmt_counts(co)}")
        loaded = lambda ex: next((x["message"] for x in ex if x["id"] == "libibverbs loaded"), "?")
        print(f"libibverbs mapped by the test processes: upstream {loaded(up_extra)}, ours {loaded(ours_extra)}")
        for tid in ids:
            for who, res in (("upstream", up), ("ours", ours)):
                first = (res.get(tid) or {}).get("retried")
                if first:
                    print(f"note: {who}: {short_id(tid)}: first run: {first.get('status')}: "
                          f"{first.get('message', '')}; run again in a new process: {res[tid]['status']}")
        extras = [x for x in ours_extra if x["status"] not in ("pass", "skip", "info")]
        for x in extras:
            print(f"note: ours: {x['id']}: {x['status']}: {x.get('message', '')}")
        print()

    os.makedirs(os.path.dirname(os.path.abspath(a.table)), exist_ok=True)
    with open(a.table, "w") as f:
        for line in table_lines(("test", "upstream", "ours", "result", "upstream's message"), table,
                                rule=False):
            f.write(line + "\n")
    return finish(SUITE, a, complete, info, checks,
                  mid={"totals": {"upstream": cu, "ours": co},
                       "results": {t["id"]: {"upstream": t["upstream"], "ours": t["ours"]}
                                   for t in out_tests}},
                  tail={"tests": out_tests, "fixtures": {"upstream": up_extra, "ours": ours_extra}})


if __name__ == "__main__":
    sys.exit(main())
