#!/usr/bin/env python3
"""Compares the vm-asyncwatch results (written by asyncwatch-guest.sh inside
the VM): for every watched device, ibv_asyncwatch's start (its header line,
and that it was still running at the end) and, for every action, the events
it printed; upstream's and ours side by side.  One PASS/FAIL line per
(device, action), the closing line (CONVENTIONS.md), JSON.  Exit status 0
only when nothing failed."""
import argparse
import json
import os
import re
import sys

SUITE = "vm-asyncwatch"
DEVS = ("rxe0", "rxe1")


def read(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return default


def marks(line):
    """'before upstream/rxe0=3 ours/rxe0=3 ...' -> {'upstream/rxe0': 3, ...}"""
    out = {}
    for tok in line.split()[1:]:
        k, _, v = tok.partition("=")
        try:
            out[k] = int(v)
        except ValueError:
            pass
    return out


_EVENT = re.compile(r"^\s*event_type\s")


def short(events):
    """'  event_type IBV_EVENT_PORT_ERR (10), port 1' -> 'PORT_ERR p1'"""
    out = []
    for e in events:
        m = re.match(r"\s*event_type (?:IBV_EVENT_)?(\S+) \(\d+\)(?:, (port|QP|CQ|SRQ|WQ) (\S+))?", e)
        if m:
            out.append(m.group(1) + (f" {m.group(2)[0].lower()}{m.group(3)}" if m.group(2) else ""))
        else:
            out.append(e.strip())
    return ", ".join(out) if out else "(none)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    ap.add_argument("--actions", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--vm-status", type=int, default=0)
    ap.add_argument("--vm-log", default="")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--our-lib", default="")
    ap.add_argument("--upstream-lib", default="")
    a = ap.parse_args()
    R = a.results

    info = {}
    for line in (read(os.path.join(R, "info"), "") or "").splitlines():
        k, _, v = line.partition("=")
        info[k] = v
    complete = os.path.exists(os.path.join(R, "complete"))
    actions = []
    for line in open(a.actions):
        line = line.strip()
        if line and not line.startswith("#"):
            aid, _, cmd = line.partition("|")
            actions.append((aid.strip(), cmd.strip()))

    lines = {}
    for lib in ("upstream", "ours"):
        for dev in DEVS:
            lines[f"{lib}/{dev}"] = (read(os.path.join(R, lib, dev + ".out"), "") or "").splitlines()

    def watcher(lib, dev):
        d = os.path.join(R, lib, dev)
        rc = read(d + ".rc")
        return {"header": next((l for l in lines[f"{lib}/{dev}"] if not _EVENT.match(l)), None),
                "alive_at_end": (read(d + ".alive", "") or "").strip() == "yes",
                "status": int(rc) if rc and rc.strip().lstrip("-").isdigit() else None,
                "stderr": read(d + ".err", ""),
                "stdout": "\n".join(lines[f"{lib}/{dev}"])}

    checks, rows, out = [], [], {"watchers": {}, "actions": []}
    # 1. the watchers started, printed their header and ran until the end
    for dev in DEVS:
        up, ours = watcher("upstream", dev), watcher("ours", dev)
        out["watchers"][dev] = {"upstream": up, "ours": ours}
        mask = lambda h: re.sub(r"FD \d+", "FD <n>", h) if h else h
        result, why = "FAIL", ""
        if not up["alive_at_end"] or not up["header"]:
            why = (f"upstream's ibv_asyncwatch -d {dev} did not run to the end "
                   f"(exit {up['status']}): {up['stderr'].strip()[:200]} - harness or VM problem?")
        elif not ours["alive_at_end"]:
            why = (f"ours ended early (exit {ours['status']}): "
                   f"{(ours['stderr'] or ours['stdout']).strip()[:200]}")
        elif mask(ours["header"]) != mask(up["header"]):
            why = f"header: ours '{ours['header']}' vs upstream '{up['header']}'"
        else:
            result = "PASS"
        checks.append((result, f"{dev}/start", why))
        rows.append((dev, "start", up["header"] or f"exit {up['status']}",
                     ours["header"] or f"exit {ours['status']}", result))

    # 2. the events of every action
    for aid, cmd in actions:
        m = (read(os.path.join(R, "actions", aid + ".marks"), "") or "").splitlines()
        before = marks(next((l for l in m if l.startswith("before")), ""))
        after = marks(next((l for l in m if l.startswith("after")), ""))
        arc = read(os.path.join(R, "actions", aid + ".rc"))
        entry = {"id": aid, "command": cmd, "status": arc and arc.strip(), "events": {}}
        for dev in DEVS:
            ev = {}
            for lib in ("upstream", "ours"):
                k = f"{lib}/{dev}"
                ev[lib] = (lines[k][before[k]:after[k]] if k in before and k in after else None)
            entry["events"][dev] = ev
            result, why = "FAIL", ""
            if ev["upstream"] is None:
                why = "no result: the VM run ended before this action"
            elif arc is None or arc.strip() != "0":
                why = (f"the action '{cmd}' failed (exit {arc and arc.strip()}): "
                       f"{(read(os.path.join(R, 'actions', aid + '.err'), '') or '').strip()[:200]}")
            elif ev["ours"] != ev["upstream"]:
                why = f"events: ours [{short(ev['ours'] or [])}] vs upstream [{short(ev['upstream'])}]"
            else:
                result = "PASS"
            checks.append((result, f"{dev}/{aid}", why))
            rows.append((dev, cmd, short(ev["upstream"] or []), short(ev["ours"] or []), result))
        out["actions"].append(entry)

    if a.vm_status != 0 or not complete:
        msg = f"the VM run did not complete (vm-run.sh exit status {a.vm_status})"
        log = (a.vm_log or "").strip()
        if log:
            msg += ": " + " | ".join(l.strip() for l in log.splitlines() if l.strip().startswith("vm:"))[:600]
        checks.insert(0, ("FAIL", "vm-run", msg))
    if not os.path.isdir(R):
        checks = [c for c in checks if c[1] == "vm-run"] or [("FAIL", "vm-run", "no results")]
        rows = []
    if rows:
        print("ibv_asyncwatch -d rxe0 / -d rxe1 on both libraries at once, kernel %s; upstream: %s   ours: %s"
              % (info.get("kernel", "?"), info.get("upstream_resolved", "?") or "not found",
                 info.get("ours_resolved", "?") or "not found"))
        hdr = ("device", "action", "upstream's events", "ours", "result")
        w = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
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
        json.dump(dict(out, suite=SUITE, vm_status=a.vm_status, complete=complete,
                       seconds=a.seconds, info=info, our_lib=a.our_lib, upstream_lib=a.upstream_lib,
                       checks=[{"result": r, "name": n, "why": y} for r, n, y in checks],
                       passed=passed, failed=failed), f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
