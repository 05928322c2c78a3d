#!/usr/bin/env python3
"""The vm-wire report (results written by wire-guest.sh inside the VM):
the setup checks, a table of every pair x condition x test with exit
statuses, times and the figures perftest / the pingpongs printed, one
PASS/FAIL/SKIP line per check and the closing line
`vm-wire: N passed, N failed, N skipped` (CONVENTIONS.md); writes the JSON
(every run's statuses, outputs and parsed figures, for the bench).  Exit
status 0 only when nothing failed.

A test PASSes when server and client both exit 0, the pair's link (veth0;
vA for ours-ours) carried packets both ways, at least one per iteration in
all (so a pair that loops back inside the machine fails; not checked for the
self-check's stand-ins, whose rxe0 talks to itself), and
  * pingpongs: neither side printed "invalid data" (-c: the server checks the
    received buffer, weakly: one byte per page);
  * perftest: the client printed its result row (perftest has no data
    check: completing is all it proves).
SKIP: combinations wire-tests.txt leaves out (UC/UD under loss/reorder:
no retransmission, so upstream hangs too), the reference when not run, the
tests WIRE_ONLY did not select.
A test the guest did not run (no GID on ours' device, network setup failed,
time budget used up) FAILs with the reason.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import json  # noqa: E402

import reportlib  # noqa: E402
from reportlib import NO_RESULT, begin, entries, pair_side, read, table_lines, vm_run_checks  # noqa: E402

SUITE = "vm-wire"
PAIRS = ["rxe-rxe", "rxe-ours", "ours-rxe", "ours-ours"]
CONDITIONS = ["clean", "loss", "reorder"]
PAIR_TEXT = {
    "rxe-rxe": "server rxe0, client rxe1 (root netns, before the move; reference)",
    "rxe-ours": "server rxe0 (root netns), client {far} in netns far -> 192.0.2.1",
    "ours-rxe": "server {far} in netns far, client rxe0 (root netns) -> 192.0.2.2",
    "ours-ours": "server {na} in netns na, client {nb} in netns nb -> 10.9.0.1",
}


def side_text(info, ns):
    """How a netns's side ran: its device, GID index and environment."""
    return "%s (gid %s; %s)" % (info.get("dev_" + ns) or "?", info.get("gid_" + ns) or "none",
                               info.get("env_" + ns) or "-")


def load_tests(path):
    tests = []
    for line in entries(path):
        tid, conds, cmd = (x.strip() for x in line.split("|", 2))
        tests.append({"id": tid, "conditions": conds.split(), "command": cmd})
    return tests


# ---- figures

_PP_BYTES = re.compile(r"(\d+) bytes in ([\d.]+) seconds = ([\d.]+) Mbit/sec")
_PP_ITERS = re.compile(r"(\d+) iters in ([\d.]+) seconds = ([\d.]+) usec/iter")
# perftest's header: "#bytes #iterations BW peak[MB/sec] ..." / "... t_min[usec] ...
# 99% percentile[usec] ..."; names are #word or words ending in [unit]
_PT_HEADER = re.compile(r"^\s*#bytes\b")
_PT_NAME = re.compile(r"#\w+|[^\s#\[\]][^#\[\]]*?\[[^\]]*\]")
_NUM = re.compile(r"^-?(\d+(\.\d+)?|inf|nan)$")


def pingpong_figures(text):
    out = {}
    m = _PP_BYTES.search(text or "")
    if m:
        out.update({"bytes": int(m.group(1)), "seconds": float(m.group(2)), "Mbit/sec": float(m.group(3))})
    m = _PP_ITERS.search(text or "")
    if m:
        out.update({"iters": int(m.group(1)), "usec/iter": float(m.group(3))})
    return out


def perftest_figures(text):
    """{column name: value} of perftest's result row (the line after the
    '#bytes' header), {} when there is none."""
    lines = (text or "").splitlines()
    for i, line in enumerate(lines):
        if not _PT_HEADER.match(line):
            continue
        names = [n.strip() for n in _PT_NAME.findall(line)]
        for nxt in lines[i + 1:i + 4]:
            vals = nxt.split()
            if len(vals) >= 3 and all(_NUM.match(v) for v in vals):
                return {n: (float(v) if "." in v or v in ("inf", "nan") or v.startswith("-") else int(v))
                        for n, v in zip(names, vals)}
    return {}


def is_pingpong(t):
    """An ibv_*_pingpong test (also run N at once through soak-pairs.sh, or
    with one side stopped through stop-wrap.sh)."""
    return re.match(r"(soak-pairs\.sh \d+ |stop-wrap\.sh \w+ \d+ )?ibv_", t["command"]) is not None


def headline(t, figs):
    """The one figure the table shows."""
    if not figs:
        return "-"
    if is_pingpong(t):
        if "usec/iter" in figs:
            return "%.1f us/iter, %.1f Mbit/s" % (figs["usec/iter"], figs.get("Mbit/sec", 0))
        return "-"
    for k, v in figs.items():
        if k.startswith("BW average"):
            return "%s %s" % (v, k[len("BW average"):].strip("[]"))
        if k.startswith("t_typical"):
            return "%s us typ" % v
    return "-"


# ---- verdicts

def first_error(r):
    for k in ("client_stderr", "client_stdout", "server_stderr", "server_stdout"):
        for line in (r.get(k) or "").splitlines():
            s = line.strip()
            if not s or set(s) <= set("-*#") or "Waiting for client" in s:
                continue
            if re.search(r"(?i)fail|couldn|unable|error|not supported|unsupported|invalid|cannot|can't|"
                         r"no such|timed out|warning", s):
                return s[:200]
    return ""


def fmt_status(st):
    return reportlib.fmt_status(st, {124: "timeout", 137: "killed", 143: "killed"})


def side(d, t):
    skip = read(os.path.join(d, "skip"))
    if skip is not None:
        return {"skip": skip.strip()}
    notrun = read(os.path.join(d, "notrun"))
    if notrun is not None:
        return {"notrun": notrun.strip()}
    r = pair_side(d)
    if r is None:
        return None
    r["server_killed"] = read(os.path.join(d, "server.killed"))
    # (the command as run, where WIRE_SOAK_PCT changed its iterations)
    r["command"] = (read(os.path.join(d, "command")) or "").strip()
    r["rxe_counters"] = counter_delta(d)
    link = (read(os.path.join(d, "link")) or "").split()
    r["link"] = {"if": link[0], "sent": int(link[1]), "received": int(link[2])} if len(link) == 3 else None
    if is_pingpong(t):
        r["figures"] = pingpong_figures(r["client_stdout"])
        r["server_figures"] = pingpong_figures(r["server_stdout"])
    else:
        r["figures"] = perftest_figures(r["client_stdout"])
        r["server_figures"] = perftest_figures(r["server_stdout"])
    return r


def counter_delta(d):
    """rxe0's hw_counters that moved while the pair ran ("name +N, ..."),
    from rxe0-counters.{before,after}; None when there are none."""
    def load(name):
        vals = {}
        for line in (read(os.path.join(d, name)) or "").splitlines():
            k, _, v = line.partition(" ")
            if v.strip().isdigit():
                vals[k] = int(v)
        return vals
    a, b = load("rxe0-counters.before"), load("rxe0-counters.after")
    moved = [f"{k} +{b[k] - a[k]}" for k in sorted(b) if k in a and b[k] != a[k]]
    return ", ".join(moved) or None


def iterations(t):
    m = re.search(r"(?:^|\s)-n\s+(\d+)", t["command"])
    return int(m.group(1)) if m else 1


def verdict(t, r, check_link=True):
    if r is None:
        return "FAIL", NO_RESULT
    if "notrun" in r:
        return "FAIL", r["notrun"]
    if r["status"] != [0, 0]:
        why = f"exit status server/client {fmt_status(r['status'])}"
        msg = first_error(r)
        if msg:
            why += f"; said: {msg}"
        if r.get("server_killed"):
            why += "; " + r["server_killed"].strip()
        if r.get("rxe_counters"):
            why += "; rxe0 counted " + r["rxe_counters"]
        return "FAIL", why
    if is_pingpong(t):
        text = reportlib.pair_text(r)
        if "invalid data" in text:
            return "FAIL", "both exited 0, but the server found invalid data in the received buffer"
        if not r["figures"]:
            return "FAIL", "both exited 0, but the client printed no 'bytes in ... seconds' line"
    elif not r["figures"]:
        return "FAIL", "both exited 0, but the client printed no result row"
    if check_link:
        # the messages must have crossed the veth: at least one packet per
        # iteration, both ways together, and some each way (a pair whose
        # packets loop back inside the machine moves only its TCP exchange)
        ln, n = r.get("link"), iterations({"command": r.get("command") or t["command"]})
        if ln is None:
            return "FAIL", "both exited 0, but the link's packet counters could not be read"
        if ln["sent"] + ln["received"] < n or not ln["sent"] or not ln["received"]:
            return "FAIL", (f"both exited 0, but {ln['if']} carried only {ln['sent']} packets out and "
                            f"{ln['received']} in during the test, fewer than its {n} iterations: the "
                            "traffic did not cross the link")
    return "PASS", ""


def not_applicable(t, cond):
    if re.match(r"(soak-pairs\.sh \d+ |stop-wrap\.sh \w+ \d+ )?ibv_(uc|ud)_", t["command"]):
        return (f"not applicable under {cond}: UC/UD do not retransmit, a lost message makes the pingpong "
                "wait forever (upstream on rxe too)")
    return f"not listed for condition {cond} in wire-tests.txt"


def main():
    a, info, complete = begin("--tests")
    tests = load_tests(a.tests)
    checks, rows, out = [], [], []

    # setup checks, in the guest's order
    sdir = os.path.join(a.results, "setup")
    setup = []
    for f in sorted(os.listdir(sdir)) if os.path.isdir(sdir) else []:
        lines = (read(os.path.join(sdir, f), "") or "").split("\n", 1)
        res, why = lines[0].strip(), (lines[1].strip() if len(lines) > 1 else "")
        name = "setup/" + f.split("-", 1)[-1]
        setup.append({"name": name, "result": res, "why": why})
        checks.append(("PASS" if res == "PASS" else "FAIL", name, why))

    ref = {}
    for pair in PAIRS:
        for cond in CONDITIONS:
            for t in tests:
                name = f"{pair}/{cond}/{t['id']}"
                entry = {"name": name, "pair": pair, "condition": cond, "id": t["id"], "command": t["command"]}
                if cond not in t["conditions"]:
                    why = not_applicable(t, cond)
                    checks.append(("SKIP", name, why))
                    entry.update(result="SKIP", why=why)
                    out.append(entry)
                    continue
                if pair == "rxe-rxe" and info.get("reference") == "0":
                    why = "the reference was not run (WIRE_REFERENCE=0)"
                    checks.append(("SKIP", name, why))
                    entry.update(result="SKIP", why=why)
                    out.append(entry)
                    continue
                r = side(os.path.join(a.results, pair, cond, t["id"]), t)
                if r is not None and "skip" in r:
                    checks.append(("SKIP", name, r["skip"]))
                    entry.update(result="SKIP", why=r["skip"])
                    out.append(entry)
                    continue
                # in the self-check, the namespaces' rxe0 talks to itself
                # (loopback): only the reference crosses the link
                res, why = verdict(t, r, pair == "rxe-rxe" or info.get("self_check") != "1")
                checks.append((res, name, why))
                figs = (r or {}).get("figures") or {}
                if pair == "rxe-rxe":
                    ref[(cond, t["id"])] = figs
                entry.update(result=res, why=why, run=r, figures=figs)
                out.append(entry)
                ran = r is not None and "notrun" not in r
                rows.append((pair, cond, t["id"], fmt_status(r["status"]) if ran else "-",
                             "%.1f" % (r["ms"] / 1000) if ran and r["ms"] is not None else "-",
                             "%d/%d" % (r["link"]["sent"], r["link"]["received"]) if ran and r.get("link") else "-",
                             headline(t, figs),
                             "-" if pair == "rxe-rxe" else headline(t, ref.get((cond, t["id"]), {})),
                             res if ran or r is None else "FAIL (not run)"))

    checks, ran = vm_run_checks(checks, a, complete)
    if ran:
        print("vm-wire: ours' RoCE v2 wire transport vs Soft-RoCE, kernel %s, ibverbs-utils %s, perftest %s%s"
              % (info.get("kernel", "?"), info.get("ibverbs_utils", "?"), info.get("perftest", "?"),
                 "; SELF-CHECK: rxe0 with Debian's library plays ours" if info.get("self_check") == "1" else ""))
        sides = {ns: side_text(info, ns) for ns in ("far", "na", "nb")}
        for p in PAIRS:
            print(f"  {p}: " + PAIR_TEXT[p].format(**sides))
        print("  rxe0 gid %s, rxe1 gid %s" % (info.get("gid_rxe0") or "none", info.get("gid_rxe1") or "none"))
        print("  " + reportlib.resolved(info) + "   ours in far: " + (info.get("resolved_far") or "?"))
        drops = ", ".join(f"{k[len('netem_dropped_'):]} {v}" for k, v in info.items()
                          if k.startswith("netem_dropped_"))
        print("  packets netem dropped: " + (drops or "-"))
        if info.get("soak_pct", "100") != "100":
            print("  the rc_soak* tests at %s %% of wire-tests.txt's iterations (WIRE_SOAK_PCT)" % info["soak_pct"])
        print("  status = server/client; pkts out/in: packets on veth0 (vA for ours-ours) while the test ran;"
              " UC/UD only on the clean link (no retransmission)")
        if rows:
            for line in table_lines(("pair", "condition", "test", "status", "s", "pkts out/in", "figure", "rxe-rxe figure",
                                     "result"), rows):
                print(line)
        print()

    checks = [(r, a.prefix + n, y) for r, n, y in checks]
    n = {k: sum(1 for c in checks if c[0] == k) for k in ("PASS", "FAIL", "SKIP")}
    for res, name, why in checks:
        print(f"PASS {name}" if res == "PASS" else f"{res} {name}: {why}")
    suite = a.suite or SUITE
    print(f"{suite}: {n['PASS']} passed, {n['FAIL']} failed, {n['SKIP']} skipped")

    doc = {"suite": suite, "vm_status": a.vm_status, "complete": complete, "seconds": a.seconds,
           "info": info, "our_lib": a.our_lib, "upstream_lib": a.upstream_lib, "setup": setup,
           "checks": [{"result": r, "name": nm, "why": y} for r, nm, y in checks],
           "tests": out, "passed": n["PASS"], "failed": n["FAIL"], "skipped": n["SKIP"]}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return 0 if n["FAIL"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
