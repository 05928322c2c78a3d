#!/usr/bin/env python3
"""compat-tests/wire-hostile/compare.py: the device's answers per hostile
kind against the kernel's rxe's.

    compare.py OURS RXE EXPECTED

OURS and RXE: lines "KIND<TAB>CLASSES<TAB>hstate=N" (lib.sh's hostile_run;
RXE recorded in the VM by compat-tests/vm/hostile.sh).  EXPECTED: the
differences that are known, one a line,
    KIND | ours: CLASSES hstate=N | rxe: CLASSES hstate=N | reason
('#' starts a comment).  Prints one line per kind: "PASS rxe/KIND (...)"
when the answers are the same, or differ exactly as a line of EXPECTED
says; "FAIL rxe/KIND: ..." for a difference not listed, and for a listed
line that does not hold any more (stale).  The flood's answers are random
(not compared).  Then a table of both sides, for the report.
"""
import sys

NOT_COMPARED = {"flood": "random packets: the answers depend on timing"}


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                out[parts[0]] = f"{parts[1] or 'none'} {parts[2]}"
    return out


def expected(path):
    exp = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = [p.strip() for p in line.split("|")]
            if len(parts) != 4 or not parts[1].startswith("ours: ") or not parts[2].startswith("rxe: "):
                sys.exit(f"{path}:{n}: not 'KIND | ours: ... | rxe: ... | reason'")
            exp[parts[0]] = (parts[1][6:], parts[2][5:], parts[3], n)
    return exp


def main():
    ours_p, rxe_p, exp_p = sys.argv[1:4]
    ours = load(ours_p)
    try:
        rxe = load(rxe_p)
    except OSError:
        print(f"SKIP rxe: no answers of rxe recorded ({rxe_p}: run compat-tests/vm/hostile.sh)")
        return 0
    exp = expected(exp_p)
    bad = 0
    for kind, o in ours.items():
        if kind in NOT_COMPARED:
            continue
        r = rxe.get(kind)
        e = exp.get(kind)
        if r is None:
            print(f"FAIL rxe/{kind}: no answer of rxe recorded for this kind (record it again in the VM)")
            bad += 1
        elif e and (e[0], e[1]) == (o, r):
            print(f"PASS rxe/{kind} (listed difference: ours {o}, rxe {r})")
        elif e:
            print(f"FAIL rxe/{kind}: stale line {exp_p}:{e[3]} (it says ours {e[0]}, rxe {e[1]}; now ours {o}, rxe {r})")
            bad += 1
        elif o == r:
            print(f"PASS rxe/{kind} (same answer: {o})")
        else:
            print(f"FAIL rxe/{kind}: ours {o}, rxe {r} (not in {exp_p})")
            bad += 1
    for kind in exp:
        if kind not in ours:
            print(f"FAIL rxe/{kind}: stale line {exp_p}:{exp[kind][3]} (no such kind was run)")
            bad += 1
    print()
    print(f"{'kind':22} {'ours (rw0)':34} {'rxe':34}")
    for kind, o in ours.items():
        print(f"{kind:22} {o:34} {rxe.get(kind, '-'):34}{'  (not compared)' if kind in NOT_COMPARED else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
