#!/usr/bin/env python3
"""vm-rdmacm's comparison: for every workload and role, the kernel's log
and ours, normalised (normalize.py), with the listed device differences
masked; one PASS/FAIL line each; a listed pattern that never masked a
difference is a FAIL.
    compare.py KERNEL_DIR OURS_DIR EXPECTED DIFF_DIR [LABEL]
LABEL prefixes each line's name (e.g. "hybrid").
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ucma-log"))
from normalize import normalise  # noqa: E402

kdir, odir, expected, ddir = sys.argv[1:5]
label = sys.argv[5] + " " if len(sys.argv) > 5 else ""
os.makedirs(ddir, exist_ok=True)
masks = []
for line in open(expected):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    pat, _, why = line.partition(" | ")
    masks.append([re.compile(pat.strip()), why.strip(), False])


def logs(d):
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "*.*.*"))):
        base = os.path.basename(f)
        m = re.match(r"^(.+)\.(server|client)\.(\d+)$", base)
        if m:
            out.setdefault((m[1], m[2]), []).append(f)
    return out


def fold_races(lines):
    """A DISCONNECTED event taken just before the id's DESTROY_ID, or not
    taken because the destroy came first, is a race between the program's
    threads and the peer's DREP (fast on swr0, slow on rxe under TCG): the
    event is dropped and the destroy's count lowered by it, on both sides.
    So is one whose log line comes just after the DESTROY_ID that counted
    it: the event thread took it before the destroy and the destroying
    thread wrote its line first (rping's client on rw0, seen once)."""
    out = []
    for line in lines:
        m = re.match(r"^DESTROY_ID id=(\S+) -> ok events_reported=(\d+)$", line)
        if m and out:
            prev = re.match(r"^GET_EVENT  -> ok uid=\S+ id=(\S+) event=10 ", out[-1])
            if prev and prev[1] == m[1]:
                out.pop()
                line = f"DESTROY_ID id={m[1]} -> ok events_reported={int(m[2]) - 1}"
        ev = re.match(r"^GET_EVENT  -> ok uid=\S+ id=(\S+) event=10 ", line)
        if ev and out:
            before = re.match(r"^DESTROY_ID id=(\S+) -> ok events_reported=(\d+)$", out[-1])
            if before and before[1] == ev[1] and int(before[2]) > 0:
                out[-1] = f"DESTROY_ID id={before[1]} -> ok events_reported={int(before[2]) - 1}"
                continue
        out.append(line)
    return out


def drop_empty_polls(lines):
    """A non-blocking GET_EVENT that found nothing (EAGAIN) says how often
    a program polled, not what the CM did: dropped on both sides."""
    return [ln for ln in lines if not re.match(r"^GET_EVENT .*-> errno=11$", ln)]


def trim_exit(lines):
    """A program whose one thread ends it while another still works races
    itself, not the CM: a GET_EVENT on a channel its other thread closed
    (EBADF) is dropped, and so are the DESTROY_IDs its exit left undone or
    did at the very end (rping after REJECTED, on rxe or on swr0 alike)."""
    lines = [ln for ln in lines if not re.match(r"^GET_EVENT .*-> errno=9$", ln)]
    while lines and re.match(r"^DESTROY_ID ", lines[-1]):
        lines.pop()
    return lines


def sort_disconnects(lines):
    """Several connections ended by the peer (ucmatose -c 2): each one's
    DISCONNECTED event and the DISCONNECT that answers it come in the
    order of the peer's DREQs, which its threads race for, on the kernel
    as on ours: a run of such pairs is sorted."""
    pair = re.compile(r"^GET_EVENT  -> ok uid=\S+ id=(\S+) event=10 ")
    out, i = [], 0
    while i < len(lines):
        run = []
        while i + 1 < len(lines):
            m = pair.match(lines[i])
            if not m or lines[i + 1] != f"DISCONNECT id={m[1]} -> ok":
                break
            run.append(lines[i:i + 2])
            i += 2
        if run:
            for b in sorted(run):
                out += b
        else:
            out.append(lines[i])
            i += 1
    return out


def rsockets_route_timeout(lines):
    """rsockets (librdmacm's rsocket.c, rs_do_connect) asks for its route
    with a timeout of 1000 << retries, and does not reset the retry count
    when the address was resolved at once: a non-blocking connect whose
    ADDR_RESOLVED event was already there when it looked (no EAGAIN)
    passes 2000, one that found it later 1000.  Which one is the timing
    of the program's first look, on the kernel as on ours (rstream's
    client, hybrid run of vm-rdmacm): after a RESOLVE_ADDR or RESOLVE_IP
    of timeout 1000, the same id's RESOLVE_ROUTE of 2000 is read as 1000,
    on both sides."""
    last, out = {}, []
    for ln in lines:
        m = re.match(r"^RESOLVE_(?:ADDR|IP) id=(\S+) .*timeout=(\d+) -> ", ln)
        if m:
            last[m[1]] = m[2]
        m = re.match(r"^RESOLVE_ROUTE id=(\S+) arg=2000 (-> .*)$", ln)
        if m and last.get(m[1]) == "1000":
            ln = f"RESOLVE_ROUTE id={m[1]} arg=1000 {m[2]}"
        out.append(ln)
    return out


def read(files):
    lines = []
    for f in files:
        with open(f) as fh:
            lines += normalise(fh)
    return sort_disconnects(fold_races(rsockets_route_timeout(drop_empty_polls(lines))))


def mask(lines, used):
    res = []
    for line in lines:
        for m in masks:
            new = m[0].sub("<masked>", line)
            if new != line and used is not None:
                used.append(m)
            line = new
        res.append(line)
    return res


kl, ol = logs(kdir), logs(odir)
# COMPARE_SKIP: workloads one side did not run (comma-separated)
skip = set(filter(None, os.environ.get("COMPARE_SKIP", "").split(",")))
for key in sorted(set(kl) | set(ol)):
    if key[0] in skip:
        continue
    name = f"{label}{key[0]} {key[1]}"
    if key not in kl or key not in ol:
        print(f"FAIL {name}: log missing on the {'kernel' if key not in kl else 'our'} side")
        continue
    k, o = read(kl[key]), read(ol[key])
    # a listed pattern is needed where the values it masks differ
    for m in masks:
        kv = [x for ln in k for x in m[0].findall(ln)]
        ov = [x for ln in o for x in m[0].findall(ln)]
        if kv != ov:
            m[2] = True
    km, om = mask(k, None), mask(o, None)
    if km == om:
        print(f"PASS {name}: {len(k)} commands and events, the same")
    elif trim_exit(km) == trim_exit(om):
        print(f"PASS {name}: {len(trim_exit(k))} commands and events, the same (the program's exit raced its last destroys)")
    else:
        with open(os.path.join(ddir, f"{key[0]}.{key[1]}.diff"), "w") as fh:
            for i in range(max(len(km), len(om))):
                a = km[i] if i < len(km) else "<none>"
                b = om[i] if i < len(om) else "<none>"
                if a != b:
                    fh.write(f"line {i + 1}\n  kernel: {a}\n  ours:   {b}\n")
        first = next(i for i in range(max(len(km), len(om))) if (km[i:i + 1] or [None]) != (om[i:i + 1] or [None]))
        a = km[first] if first < len(km) else "<none>"
        b = om[first] if first < len(om) else "<none>"
        print(f"FAIL {name}: line {first + 1}: kernel '{a[:160]}' ours '{b[:160]}'")
for m in masks:
    if not m[2]:
        print(f"FAIL expected difference '{m[0].pattern}': masks nothing any more ({m[1]})")
    else:
        print(f"PASS expected difference '{m[0].pattern}' still needed ({m[1]})")
