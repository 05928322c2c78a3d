"""What the VM suites' report scripts share (report.py, perftest-report.py,
pyverbs-report.py, asyncwatch-report.py, fork-report.py): reading the files
the guest scripts wrote, the common command line, the known-failure lists,
the side-by-side tables, and the end of every report: one PASS/FAIL line per
check, the closing line `<suite>: N passed, N failed` (CONVENTIONS.md) and
the JSON file.

A report's checks are (result, name, why) tuples, result "PASS" or "FAIL".
"""
import argparse
import json
import os


# ---- files written by the guest scripts

def read(path, default=None, limit=None):
    """The file's text (invalid UTF-8 replaced), or default when it cannot be
    read; longer than limit characters: cut, with a note saying how much."""
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
    """The integer in the file (an exit status, milliseconds), or None."""
    try:
        return int(read(path).strip())
    except (AttributeError, ValueError):
        return None


def entries(path):
    """The lines of a list file (tests, actions, known failures), stripped,
    without blank lines and #-comments."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def load_known(path):
    """A known-upstream-failures file: {test id: reason}; {} when missing."""
    known = {}
    if os.path.exists(path):
        for line in entries(path):
            tid, _, reason = line.partition("|")
            known[tid.strip()] = reason.strip()
    return known


def read_info(results):
    """results/info, the guest's "key=value" lines, as a dict."""
    info = {}
    for line in (read(os.path.join(results, "info"), "") or "").splitlines():
        k, _, v = line.partition("=")
        info[k] = v
    return info


def pair_side(d, limit=20000):
    """One library's run of a server/client pair (DIR/{server,client}.{out,
    err,rc}, DIR/pair.ms), or None when it has no exit statuses."""
    src = read_int(os.path.join(d, "server.rc"))
    crc = read_int(os.path.join(d, "client.rc"))
    if src is None or crc is None:
        return None
    r = {"status": [src, crc], "ms": read_int(os.path.join(d, "pair.ms"))}
    for who in ("server", "client"):
        r[who + "_stdout"] = read(os.path.join(d, who + ".out"), "", limit)
        r[who + "_stderr"] = read(os.path.join(d, who + ".err"), "", limit)
    return r


def pair_text(r):
    """All that a pair printed, server first."""
    return "".join(r[k] for k in ("server_stdout", "server_stderr", "client_stdout", "client_stderr"))


def fmt_status(st, names=None):
    """An exit status (or a list of them, shown a/b) for the table; names:
    {status: word}, by default 124 (timeout(1)) and 137 (killed) = timeout."""
    if names is None:
        names = {124: "timeout", 137: "timeout"}
    if st is None:
        return "-"
    if isinstance(st, list):
        return "/".join(names.get(v, str(v)) for v in st)
    return names.get(st, str(st))


# ---- the verdicts

NO_RESULT = "no result: the VM run ended before this test finished"


def known_stale(known_file, upstream_now="passes"):
    """Why a test on the known-upstream-failures list FAILs when upstream no
    longer fails it: the list must not go stale."""
    return (f"listed in {os.path.basename(known_file)} but upstream {upstream_now} now: "
            "remove it from the list")


def known_same(reason):
    """Why a test PASSes when it is on the known-upstream-failures list
    (reason: its reason there), "" when it is not (reason None)."""
    return "" if reason is None else f"known upstream failure, ours fails the same way: {reason}"


def each_test(a, tests, side):
    """Per test of a test list (dicts with an "id"): (the test, upstream's
    result, ours, the reason it is on the known-upstream-failures list a.known
    or None); side(DIR, test) reads one library's result in
    a.results/<id>/{upstream,ours}."""
    known = load_known(a.known)
    for t in tests:
        d = os.path.join(a.results, t["id"])
        yield t, side(os.path.join(d, "upstream"), t), side(os.path.join(d, "ours"), t), known.get(t["id"])


# ---- the command line

def parse_args(*options):
    """The report's arguments: the given required options (e.g. "--tests",
    "--known") and the ones every suite's host script passes."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    for opt in options:
        ap.add_argument(opt, required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--vm-status", type=int, default=0)
    ap.add_argument("--vm-log", default="")
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--our-lib", default="")
    ap.add_argument("--upstream-lib", default="")
    # the release suites (release.sh) run several reports for one suite:
    # their closing line's name and a prefix for each check's name
    ap.add_argument("--suite", default=None)
    ap.add_argument("--prefix", default="")
    # report.py: the single commands' stderr must be byte-identical too
    ap.add_argument("--compare-stderr", action="store_true")
    return ap.parse_args()


def is_complete(results):
    """Did the guest script get to its end?"""
    return os.path.exists(os.path.join(results, "complete"))


def begin(*options):
    """parse_args(*options), and the guest's info and whether it completed:
    (args, info, complete)."""
    a = parse_args(*options)
    return a, read_info(a.results), is_complete(a.results)


# ---- the end of every report

def vm_run_checks(checks, a, complete, ran=None, why="no results"):
    """Puts a FAIL vm-run check first when the VM run failed or did not
    complete, with vm-run.sh's "vm:" messages.  Returns (checks, ran): when
    the VM never ran the suite (ran: by default, whether the results
    directory exists), only the vm-run failure (why, when there is no other
    one) instead of a FAIL per test, and the report leaves its table out."""
    if a.vm_status != 0 or not complete:
        msg = f"the VM run did not complete (vm-run.sh exit status {a.vm_status})"
        log = (a.vm_log or "").strip()
        if log:
            msg += ": " + " | ".join(l.strip() for l in log.splitlines() if l.strip().startswith("vm:"))[:600]
        checks.insert(0, ("FAIL", "vm-run", msg))
    if ran is None:
        ran = os.path.isdir(a.results)
    if not ran:
        checks = [c for c in checks if c[1] == "vm-run"] or [("FAIL", "vm-run", why)]
    return checks, ran


def resolved(info):
    """Which libibverbs.so.1 each side loaded in the guest, for the heading."""
    return "upstream: %s   ours: %s" % (info.get("upstream_resolved", "?") or "not found",
                                         info.get("ours_resolved", "?") or "not found")


def table_lines(hdr, rows, rule=True):
    """The columns left-aligned, two spaces apart; a dashed rule under the
    header unless rule is False."""
    w = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
    out = ["  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)).rstrip()]
    if rule:
        out.append("  ".join("-" * w[i] for i in range(len(hdr))))
    for r in rows:
        out.append("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
    return out


def print_table(hdr, rows):
    for line in table_lines(hdr, rows):
        print(line)


def finish(suite, a, complete, info, checks, lead=None, mid=None, tail=None):
    """Prints one PASS/FAIL line per check and the closing line, writes the
    JSON file a.json (atomically) and returns the exit status: 0 only when
    nothing failed.  The JSON: lead's keys, suite, vm_status, complete,
    seconds, info, our_lib, upstream_lib, mid's keys, checks, tail's keys,
    passed, failed.  a.suite (when given) replaces suite, a.prefix goes
    before every check's name."""
    suite = a.suite or suite
    checks = [(r, a.prefix + n, y) for r, n, y in checks]
    passed = sum(1 for c in checks if c[0] == "PASS")
    failed = sum(1 for c in checks if c[0] == "FAIL")
    for res, name, why in checks:
        print(f"PASS {name}" if res == "PASS" else f"FAIL {name}: {why}")
    print(f"{suite}: {passed} passed, {failed} failed")

    doc = dict(lead or {})
    doc.update({"suite": suite, "vm_status": a.vm_status, "complete": complete,
                "seconds": a.seconds, "info": info,
                "our_lib": a.our_lib, "upstream_lib": a.upstream_lib})
    doc.update(mid or {})
    doc["checks"] = [{"result": r, "name": n, "why": y} for r, n, y in checks]
    doc.update(tail or {})
    doc.update({"passed": passed, "failed": failed})
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(a.json + ".tmp", a.json)
    return 0 if failed == 0 else 1
