#!/usr/bin/python3
"""rdma-core's Python test suite (python3-pyverbs) on the software device,
with a deadline for every test.

Each test module runs in a child process that imports the suite the way
rdma-core's run_tests.py does (the 'tests' package, --dev/--gid parsed by its
args_parser) and reports every test as it starts and ends into an events file.
The parent watches the clock: a test that outlives its deadline gets its
Python stack dumped (faulthandler, SIGUSR1), its process group is killed, the
test is recorded as "timeout", and a new child goes on with the rest of the
module.  A child that dies inside a test (a crash in C code) records "crash"
and the rest of the module goes on the same way.

  runner.py run --tests-dir D --dev swr0 [--gid 1] --out results.json
                --expected expected-failures.txt --table results.txt
                [--deadline 60] [--budget 900] [--only REGEX] [--logs DIR]
  runner.py report --out results.json --expected ... --table ...
                (re-judges an existing results.json against the list)

Verdicts (printed one per line, then the closing line):
  pass              -> PASS
  skip (SkipTest)   -> SKIP  (the test itself decided the device lacks it)
  fail/error/timeout/crash/not-run
      listed in expected-failures.txt -> SKIP "expected failure: <reason>"
      not listed                      -> FAIL
  listed but passed or skipped        -> FAIL (the list is stale: update it)
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUTSIDE_TESTS = 120.0  # child's allowance outside tests (imports, start-up)


# --------------------------------------------------------------------- child
def load_tests(tests_dir, dev, gid, port):
    """The suite as run_tests.py builds it: {id: test}, in its order."""
    import unittest
    from importlib.machinery import SourceFileLoader
    sys.path.insert(0, tests_dir)
    sys.argv = ["run_tests.py", "--dev", dev, "--port", str(port)]
    if gid is not None:
        sys.argv += ["--gid", str(gid)]
    pkg = SourceFileLoader("tests", os.path.join(tests_dir, "__init__.py")).load_module()
    from args_parser import parser
    parser.parse_args()
    suite = unittest.TestLoader().loadTestsFromModule(pkg)
    found = {}

    def walk(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                walk(t)
            else:
                found[t.id()] = t
    walk(suite)
    return found


def child(a):
    import faulthandler
    import traceback
    import unittest

    ev = open(a.events, "a", buffering=1)
    faulthandler.enable(file=sys.stderr, all_threads=True)  # crashes: where
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)  # timeouts

    def emit(**kw):
        ev.write(json.dumps(kw) + "\n")
        ev.flush()

    alltests = load_tests(a.tests_dir, a.dev, a.gid, a.port)
    wanted = [l.strip() for l in open(a.ids) if l.strip()]

    class Result(unittest.TestResult):
        def startTest(self, test):
            super().startTest(test)
            self._t0 = time.monotonic()
            self._done = False
            emit(ev="start", id=test.id())
            print(f"--- {test.id()}", file=sys.stderr, flush=True)

        def _end(self, test, status, message="", details=""):
            if self._done:  # an error in tearDown after a failure: keep the first
                return
            self._done = True
            emit(ev="end", id=test.id(), status=status, message=message,
                 details=details, secs=round(time.monotonic() - self._t0, 3))

        @staticmethod
        def _fmt(err):
            tb = "".join(traceback.format_exception(*err))
            last = traceback.format_exception_only(err[0], err[1])[-1].strip()
            return last, tb

        def addSuccess(self, test):
            super().addSuccess(test)
            self._end(test, "pass")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._end(test, "fail", *self._fmt(err))

        def addError(self, test, err):
            super().addError(test, err)
            self._end(test, "error", *self._fmt(err))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            self._end(test, "skip", str(reason))

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._end(test, "pass", "expected failure (unittest)")

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._end(test, "fail", "unexpected success")

        def stopTest(self, test):
            if not self._done:
                self._end(test, "error", "test ended without a result")
            super().stopTest(test)

    result = Result()
    for tid in wanted:
        t = alltests.get(tid)
        if t is None:
            emit(ev="start", id=tid)
            emit(ev="end", id=tid, status="error", message="test not found in the suite",
                 details="", secs=0)
            continue
        t(result)
    emit(ev="done")
    ev.close()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a provider bug there must not be blamed on
    # the last test (it is still seen: the parent checks the exit status).
    os._exit(0)


# -------------------------------------------------------------------- parent
def list_ids(a):
    """Test ids in run_tests.py's order (a short child of its own)."""
    cmd = [sys.executable, os.path.abspath(__file__), "list-child",
           "--tests-dir", a.tests_dir, "--dev", a.dev, "--port", str(a.port)]
    if a.gid is not None:
        cmd += ["--gid", str(a.gid)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=OUTSIDE_TESTS)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"cannot list the tests (exit {p.returncode})")
    return [l for l in p.stdout.split("\n") if l.strip()]


def list_child(a):
    for tid in load_tests(a.tests_dir, a.dev, a.gid, a.port):
        print(tid)


def module_of(tid):
    parts = tid.split(".")
    return parts[1] if len(parts) > 2 else parts[0]


def run_module(a, mod, ids, logdir, deadline_for, budget_end):
    """Runs the ids of one module; returns {id: record}."""
    res = {}
    remaining = list(ids)
    log = open(os.path.join(logdir, mod + ".log"), "a")
    attempt = 0
    while remaining:
        attempt += 1
        if time.monotonic() > budget_end:
            for tid in remaining:
                res[tid] = dict(id=tid, status="not-run", message="suite time budget exhausted",
                                details="", secs=0)
            break
        evfile = os.path.join(logdir, f"{mod}.events.{attempt}")
        idfile = os.path.join(logdir, f"{mod}.ids.{attempt}")
        with open(idfile, "w") as f:
            f.write("\n".join(remaining) + "\n")
        open(evfile, "w").close()
        cmd = [sys.executable, os.path.abspath(__file__), "child",
               "--tests-dir", a.tests_dir, "--dev", a.dev, "--port", str(a.port),
               "--ids", idfile, "--events", evfile]
        if a.gid is not None:
            cmd += ["--gid", str(a.gid)]
        log.write(f"=== {mod} attempt {attempt}: {len(remaining)} tests\n")
        log.flush()
        p = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True,
                             cwd=a.tests_dir)
        cur, t0 = None, time.monotonic()
        done = False
        outcome = None  # why the child stopped early
        pos = 0
        buf = ""
        while True:
            with open(evfile) as f:
                f.seek(pos)
                chunk = f.read()
                pos = f.tell()
            buf += chunk
            while "\n" in buf:
                line, buf = buf.split("\n", 1)
                e = json.loads(line)
                if e["ev"] == "start":
                    cur, t0 = e["id"], time.monotonic()
                elif e["ev"] == "end":
                    res[e["id"]] = dict(id=e["id"], status=e["status"], message=e["message"],
                                        details=e["details"], secs=e["secs"])
                    cur, t0 = None, time.monotonic()
                elif e["ev"] == "done":
                    done = True
            rc = p.poll()
            if rc is not None:
                if chunk == "" and "\n" not in buf:
                    break
                continue
            now = time.monotonic()
            limit = deadline_for(cur) if cur else OUTSIDE_TESTS
            if now - t0 > limit:
                # Where was it?  Dump the stacks into the log, then kill.
                try:
                    os.killpg(p.pid, signal.SIGUSR1)
                    time.sleep(1.0)
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
                outcome = ("timeout", f"no result after {limit:.0f} s (killed; stack dump in {mod}.log)")
                break
            time.sleep(0.02)
        rc = p.wait()
        if cur is not None and cur not in res:
            if outcome is None:
                why = f"signal {-rc}" if rc < 0 else f"exit status {rc}"
                outcome = ("crash", f"the test process died ({why}) inside the test")
            res[cur] = dict(id=cur, status=outcome[0], message=outcome[1], details="",
                            secs=round(time.monotonic() - t0, 3))
        elif not done and cur is None and outcome is None and rc != 0:
            # died outside a test (start-up): the remaining tests cannot run
            for tid in remaining:
                if tid not in res:
                    res[tid] = dict(id=tid, status="error",
                                    message=f"test process failed before the test (exit {rc}; see {mod}.log)",
                                    details="", secs=0)
        elif done and rc != 0:
            # every test has its result; the process failed on its way out
            log.write(f"=== {mod}: child exit status {rc} after the last test\n")
        new_remaining = [t for t in remaining if t not in res]
        if new_remaining == remaining:
            for tid in remaining:
                res[tid] = dict(id=tid, status="not-run", message="the test process made no progress",
                                details="", secs=0)
            break
        remaining = new_remaining
    log.close()
    return res


def run(a):
    a.logs = os.path.abspath(a.logs)
    a.tests_dir = os.path.abspath(a.tests_dir)
    os.makedirs(a.logs, exist_ok=True)
    for f in os.listdir(a.logs):
        os.unlink(os.path.join(a.logs, f))
    start = time.time()
    t_start = time.monotonic()
    ids = list_ids(a)
    if a.only:
        rx = re.compile(a.only)
        ids = [t for t in ids if rx.search(t)]
    mods = []
    for t in ids:
        m = module_of(t)
        if not mods or mods[-1][0] != m:
            mods.append((m, []))
        mods[-1][1].append(t)
    deadlines = {}
    for spec in a.test_deadline or []:
        k, v = spec.rsplit("=", 1)
        deadlines[k] = float(v)

    def deadline_for(tid):
        return deadlines.get(tid, a.deadline)
    budget_end = t_start + a.budget
    results = {}
    for m, mids in mods:
        t0 = time.monotonic()
        r = run_module(a, m, mids, a.logs, deadline_for, budget_end)
        results.update(r)
        if a.progress:
            c = {}
            for x in r.values():
                c[x["status"]] = c.get(x["status"], 0) + 1
            print(f"# {m}: {len(mids)} tests in {time.monotonic() - t0:.1f} s "
                  + " ".join(f"{k}={v}" for k, v in sorted(c.items())), file=sys.stderr, flush=True)
    doc = dict(suite="soft-pyverbs", dev=a.dev, gid=a.gid, port=a.port,
               started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
               seconds=round(time.monotonic() - t_start, 1),
               deadline=a.deadline,
               tests=[results[t] for t in ids])
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    return report(a)


# -------------------------------------------------------------------- report
def read_expected(path):
    exp = {}
    if not os.path.exists(path):
        return exp
    for n, line in enumerate(open(path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "|" not in line:
            raise SystemExit(f"{path}:{n}: expected '<test id> | <reason>'")
        tid, reason = (x.strip() for x in line.split("|", 1))
        if not reason:
            raise SystemExit(f"{path}:{n}: {tid}: a reason is required")
        exp[tid] = reason
    return exp


def one_line(s, n=200):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 3] + "..."


def report(a):
    doc = json.load(open(a.out))
    exp = read_expected(a.expected)
    counts = dict(passed=0, failed=0, skipped=0)
    bad = ("fail", "error", "timeout", "crash", "not-run")
    table = {}
    seen = set()
    for r in doc["tests"]:
        tid, st = r["id"], r["status"]
        name = tid[len("tests."):] if tid.startswith("tests.") else tid
        seen.add(tid)
        listed = tid in exp
        if st == "pass" and not listed:
            verdict = "pass"
            print(f"PASS {name}")
        elif st == "skip" and not listed:
            verdict = "skip"
            print(f"SKIP {name}: {one_line(r['message'])}")
        elif st in bad and listed:
            verdict = "xfail"
            print(f"SKIP {name}: expected failure ({st}): {one_line(exp[tid])}")
        elif st in bad:
            verdict = "fail"
            print(f"FAIL {name}: {st}: {one_line(r['message'], 400)}")
        else:  # listed, but passed or skipped
            verdict = "stale"
            print(f"FAIL {name}: listed in expected-failures.txt but {st}"
                  + (f" ({one_line(r['message'])})" if r["message"] else "")
                  + ": remove it from the list")
        r["verdict"] = verdict
        r["expected_failure"] = exp.get(tid)
        counts[{"pass": "passed", "skip": "skipped", "xfail": "skipped"}.get(verdict, "failed")] += 1
        m = module_of(tid)
        row = table.setdefault(m, dict(pass_=0, fail=0, error=0, skip=0, xfail=0, other=0))
        key = {"pass": "pass_", "skip": "skip", "xfail": "xfail"}.get(verdict)
        if key is None:
            key = "fail" if st == "fail" else "error" if st in bad else "other"
        row[key] += 1
    run_ids = set(seen)
    for tid in exp:
        if tid not in run_ids and not a.partial:
            print(f"FAIL {tid}: listed in expected-failures.txt but not in the suite: remove it")
            counts["failed"] += 1
    doc["totals"] = counts
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    cols = ("pass_", "fail", "error", "skip", "xfail", "other")
    heads = ("pass", "fail", "error", "skip", "xfail", "stale")
    lines = [f"# rdma-core {os.path.basename(a.tests_dir.rstrip('/'))} on {doc['dev']}"
             f" (gid {doc['gid']}), {doc['seconds']} s; xfail = listed in expected-failures.txt",
             f"{'module':<24}" + "".join(f"{h:>7}" for h in heads)]
    tot = dict.fromkeys(cols, 0)
    for m in sorted(table):
        lines.append(f"{m:<24}" + "".join(f"{table[m][c]:>7}" for c in cols))
        for c in cols:
            tot[c] += table[m][c]
    lines.append(f"{'total':<24}" + "".join(f"{tot[c]:>7}" for c in cols))
    with open(a.table, "w") as f:
        f.write("\n".join(lines) + "\n")
    for l in lines:
        print("# " + l)
    print(f"soft-pyverbs: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 0 if counts["failed"] == 0 else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["run", "report", "child", "list-child"])
    ap.add_argument("--tests-dir")
    ap.add_argument("--dev", default="swr0")
    ap.add_argument("--gid", type=int)
    ap.add_argument("--port", type=int, default=1)
    ap.add_argument("--ids")
    ap.add_argument("--events")
    ap.add_argument("--out")
    ap.add_argument("--expected", default=os.path.join(HERE, "expected-failures.txt"))
    ap.add_argument("--table")
    ap.add_argument("--logs")
    ap.add_argument("--deadline", type=float, default=60.0)
    ap.add_argument("--test-deadline", action="append", help="ID=SECONDS")
    ap.add_argument("--budget", type=float, default=900.0)
    ap.add_argument("--only")
    ap.add_argument("--partial", action="store_true",
                    help="do not complain about listed tests that were not run")
    ap.add_argument("--progress", action="store_true")
    a = ap.parse_args()
    if a.cmd == "child":
        child(a)
    elif a.cmd == "list-child":
        list_child(a)
    elif a.cmd == "run":
        if a.only:
            a.partial = True
        sys.exit(run(a))
    else:
        sys.exit(report(a))


if __name__ == "__main__":
    main()
