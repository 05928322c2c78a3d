#!/usr/bin/env python3
"""Compares the vm-asyncwatch results (written by asyncwatch-guest.sh inside
the VM): for every watched device, ibv_asyncwatch's start (its header line,
and that it was still running at the end) and, for every action, the events
it printed; upstream's and ours side by side.  One PASS/FAIL line per
(device, action), the closing line (CONVENTIONS.md), JSON.  Exit status 0
only when nothing failed."""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from reportlib import (begin, entries, finish, print_table, read, resolved,  # noqa: E402
                       vm_run_checks)

SUITE = "vm-asyncwatch"
DEVS = ("rxe0", "rxe1")


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
    a, info, complete = begin("--actions")
    R = a.results
    actions = []
    for line in entries(a.actions):
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

    checks, ran = vm_run_checks(checks, a, complete)
    if rows and ran:
        print("ibv_asyncwatch -d rxe0 / -d rxe1 on both libraries at once, kernel %s; %s"
              % (info.get("kernel", "?"), resolved(info)))
        print_table(("device", "action", "upstream's events", "ours", "result"), rows)
        print()
    return finish(SUITE, a, complete, info, checks, lead=out)


if __name__ == "__main__":
    sys.exit(main())
