#!/usr/bin/python3
"""Runs rdma-core's own Python tests (python3-pyverbs, the tests of
/usr/share/doc/rdma-core/tests) with a deadline per test, inside the VM.

The tests run the way run_tests.py runs them (one unittest run over the
'tests' package, in its order, so class fixtures behave as upstream's), but
in a child process that reports every test as it starts and ends.  A test
that passes its deadline is stopped (faulthandler dumps the child's Python
stack and exits; the parent kills the process group a little later if even
that does not happen), recorded as "timeout", and a new child continues with
the next test.  A child that dies inside a test records "crash".

  pyverbs-runner.py list --tests-dir D --dev rxe0 --gid 1 > ids
  pyverbs-runner.py run  --tests-dir D --dev rxe0 --gid 1 --ids ids --out R.jsonl
          [--deadline S | --deadlines-from UP.jsonl --factor F --min S --max S]
          [--budget S]
          [--retry-crashes]
  (the library under test comes from LD_LIBRARY_PATH, as for any program)

--retry-crashes: a test whose process crashes runs once more, first in a new
process; its record then says how the first run ended ("retried").

R.jsonl holds one JSON object per test:
  {"id", "status": pass|fail|error|skip|xfail|xpass|timeout|crash|not-run,
   "message", "details", "secs"[, "retried": {how the first run ended}]}
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

BETWEEN_TESTS = 120   # child's deadline outside tests (class fixtures, imports)


# ---------------------------------------------------------------- the child
def load_suite(tests_dir, dev, gid, port):
    """Imports the tests package the way run_tests.py does and returns
    {id: test} in run_tests.py's order."""
    import unittest
    from importlib.machinery import SourceFileLoader
    sys.path.insert(0, tests_dir)
    sys.argv = ["run_tests.py", "--dev", dev, "--port", str(port)]
    if gid is not None:
        sys.argv += ["--gid", str(gid)]
    # run_tests.py's order: import the package, parse the arguments, load
    tests = SourceFileLoader("tests", os.path.join(tests_dir, "__init__.py")).load_module()
    from args_parser import parser
    parser.parse_args()
    suite = unittest.TestLoader().loadTestsFromModule(tests)
    ordered = {}

    def walk(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                walk(t)
            else:
                ordered[t.id()] = t
    walk(suite)
    return ordered


def child_main(a):
    import faulthandler
    import traceback
    import unittest

    out = open(a.events, "a", buffering=1)

    def emit(**kw):
        out.write(json.dumps(kw) + "\n")
        out.flush()

    faulthandler.dump_traceback_later(BETWEEN_TESTS, exit=True)
    alltests = load_suite(a.tests_dir, a.dev, a.gid, a.port)
    # which libibverbs this process really runs on
    libs = sorted({l.split()[-1] for l in open("/proc/self/maps")
                   if "libibverbs.so" in l and len(l.split()) >= 6})
    emit(ev="lib", paths=libs)
    wanted = []
    deadline = {}
    for line in open(a.ids):
        parts = line.split()
        if parts:
            wanted.append(parts[0])
            deadline[parts[0]] = float(parts[1]) if len(parts) > 1 else a.deadline
    missing = [i for i in wanted if i not in alltests]
    for i in missing:
        emit(ev="end", id=i, status="not-run", message="no such test in this pyverbs", secs=0)
    suite = unittest.TestSuite([alltests[i] for i in wanted if i in alltests])

    def last_line(err):
        text = "".join(traceback.format_exception_only(err[0], err[1])).strip()
        return text.splitlines()[-1] if text else str(err[0])

    class Result(unittest.TestResult):
        def __init__(self):
            super().__init__()
            self.cur = None

        def startTest(self, test):
            super().startTest(test)
            tid = test.id()
            self.cur = {"id": tid, "status": "pass", "message": "", "details": "", "t0": time.time()}
            emit(ev="start", id=tid, t=self.cur["t0"], deadline=deadline.get(tid, a.deadline))
            faulthandler.dump_traceback_later(deadline.get(tid, a.deadline), exit=True)

        def stopTest(self, test):
            super().stopTest(test)
            faulthandler.dump_traceback_later(BETWEEN_TESTS, exit=True)
            c, self.cur = self.cur, None
            if c is None:
                return
            emit(ev="end", id=c["id"], status=c["status"], message=c["message"],
                 details=c["details"], secs=round(time.time() - c["t0"], 3))

        def _set(self, test, status, err=None, message=""):
            details = self._exc_info_to_string(err, test) if err else ""
            if err:
                message = last_line(err)
            if self.cur is not None and self.cur["id"] == test.id():
                # the first problem decides (a failing subtest, then tearDown...)
                if self.cur["status"] in ("pass", "skip", "xfail"):
                    self.cur.update(status=status, message=message[:500], details=details[-6000:])
            else:
                # a class/module fixture (setUpClass ...): not a test of ours
                emit(ev="extra", id=test.id() if hasattr(test, "id") else str(test),
                     status=status, message=message[:500], details=details[-6000:])

        def addSuccess(self, test):
            super().addSuccess(test)

        def addError(self, test, err):
            super().addError(test, err)
            self._set(test, "error", err)

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._set(test, "fail", err)

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            if self.cur is not None and self.cur["id"] == test.id():
                self._set(test, "skip", message=str(reason))
            else:
                emit(ev="extra", id=str(test), status="skip", message=str(reason)[:500], details="")

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._set(test, "xfail", err)

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._set(test, "xpass", message="unexpected success")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                failure = issubclass(err[0], test.failureException)
                self._set(test, "fail" if failure else "error", err)

    suite.run(Result())
    emit(ev="done")
    faulthandler.cancel_dump_traceback_later()
    out.close()
    sys.stdout.flush()
    # skip interpreter teardown: destructors of leftover pyverbs objects
    # must not hang or crash the run after the results are written
    os._exit(0)


# ---------------------------------------------------------------- the parent
def child_cmd(a, events, ids):
    cmd = [sys.executable, os.path.abspath(__file__), "child", "--tests-dir", a.tests_dir,
           "--dev", a.dev, "--port", str(a.port), "--events", events, "--ids", ids,
           "--deadline", str(a.deadline)]
    if a.gid is not None:
        cmd += ["--gid", str(a.gid)]
    return cmd


def read_events(path, pos):
    evs = []
    try:
        with open(path) as f:
            f.seek(pos)
            data = f.read()
    except OSError:
        return evs, pos
    # only complete lines
    end = data.rfind("\n")
    if end < 0:
        return evs, pos
    for line in data[:end + 1].splitlines():
        try:
            evs.append(json.loads(line))
        except ValueError:
            pass
    return evs, pos + len(data[:end + 1].encode())


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except OSError:
        pass


def run_main(a):
    ids = [l.split()[0] for l in open(a.ids) if l.strip()]
    deadline = {i: a.deadline for i in ids}
    if a.deadlines_from:
        up = {}
        for line in open(a.deadlines_from):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            up[r["id"]] = r.get("secs") or 0
        for i in ids:
            if i in up:
                deadline[i] = max(a.min, min(a.max, a.factor * up[i]))
            else:
                deadline[i] = a.max
    results = {}
    extras = []
    loaded = []
    work = os.path.dirname(os.path.abspath(a.out))
    t_start = time.time()
    out = open(a.out, "w", buffering=1)

    retried = {}        # --retry-crashes: test id -> how its first run ended

    def record(r):
        if r["id"] in retried:
            r["retried"] = retried[r["id"]]
        results[r["id"]] = r
        out.write(json.dumps(r) + "\n")

    round_no = 0
    while True:
        remaining = [i for i in ids if i not in results]
        if not remaining:
            break
        if a.budget and time.time() - t_start > a.budget:
            for i in remaining:
                record({"id": i, "status": "not-run", "secs": 0, "details": "",
                        "message": f"the run's time budget ({a.budget:.0f} s) was used up"})
            break
        round_no += 1
        idfile = os.path.join(work, f"{a.tag}.ids.{round_no}")
        events = os.path.join(work, f"{a.tag}.events.{round_no}")
        errfile = os.path.join(work, f"{a.tag}.stderr.{round_no}")
        with open(idfile, "w") as f:
            for i in remaining:
                f.write(f"{i} {deadline[i]:.1f}\n")
        open(events, "w").close()
        err = open(errfile, "w")
        p = subprocess.Popen(child_cmd(a, events, idfile), stdin=subprocess.DEVNULL,
                             stdout=err, stderr=subprocess.STDOUT, start_new_session=True,
                             cwd=work)
        pos = 0
        cur = None          # (id, start time, deadline)
        last_activity = time.time()
        progressed = False
        killed = None
        done = False
        got_lib = False     # the child loaded the tests (its "lib" event)
        while True:
            rc = p.poll()
            evs, pos = read_events(events, pos)
            for ev in evs:
                last_activity = time.time()
                if ev["ev"] == "start":
                    cur = (ev["id"], time.time(), ev.get("deadline", a.deadline))
                elif ev["ev"] == "end":
                    r = {k: ev.get(k) for k in ("id", "status", "message", "details", "secs")}
                    record(r)
                    progressed = True
                    cur = None
                elif ev["ev"] == "extra":
                    extras.append({k: ev.get(k) for k in ("id", "status", "message", "details")})
                elif ev["ev"] == "done":
                    done = True
                elif ev["ev"] == "lib":
                    got_lib = True
                    if not loaded:
                        loaded.extend(ev["paths"])
            if rc is not None:
                break
            now = time.time()
            # the child's own watchdog should have fired: the safety net
            if cur and now - cur[1] > cur[2] + 15:
                killed = f"killed by the runner after {now - cur[1]:.0f} s"
                kill_group(p)
            elif not cur and now - last_activity > BETWEEN_TESTS + 15:
                killed = f"no progress for {now - last_activity:.0f} s outside tests: killed"
                kill_group(p)
            time.sleep(0.1)
        kill_group(p)       # stragglers (forked helpers) of this child
        err.close()
        evs, pos = read_events(events, pos)
        for ev in evs:
            if ev["ev"] == "end":
                record({k: ev.get(k) for k in ("id", "status", "message", "details", "secs")})
                progressed = True
                cur = None
            elif ev["ev"] == "start":
                cur = (ev["id"], time.time(), ev.get("deadline", a.deadline))
            elif ev["ev"] == "extra":
                extras.append({k: ev.get(k) for k in ("id", "status", "message", "details")})
            elif ev["ev"] == "done":
                done = True
            elif ev["ev"] == "lib":
                got_lib = True
                if not loaded:
                    loaded.extend(ev["paths"])
        stderr_tail = open(errfile, errors="replace").read()[-6000:]
        if done:
            # the tests the child never started (a failed setUpClass skips them)
            for i in remaining:
                if i not in results:
                    cls, mod = i.rsplit(".", 1)[0], i.rsplit(".", 2)[0]
                    why = [x for x in extras if f"({cls})" in x["id"] or f"({mod})" in x["id"]]
                    msg = (f"never started: {why[0]['id']}: {why[0]['message']}" if why
                           else "never started (a class or module fixture failed?)")
                    record({"id": i, "status": "not-run", "secs": 0, "message": msg,
                            "details": why[0]["details"] if why else ""})
            break
        if cur is not None:
            elapsed = time.time() - cur[1]
            if killed or "Timeout (" in stderr_tail:
                status, msg = "timeout", f"no result after {elapsed:.0f} s (deadline {cur[2]:.0f} s)"
            else:
                status = "crash"
                msg = (f"the test process died (signal {-rc})" if rc < 0
                       else f"the test process exited with status {rc} inside the test")
            if status == "crash" and a.retry_crashes and cur[0] not in retried:
                # once more, first in a fresh process: a crash caused by what
                # earlier tests left behind (objects freed in the wrong order
                # by a later garbage collection) does not repeat there
                retried[cur[0]] = {"status": status, "message": msg, "details": stderr_tail,
                                   "secs": round(elapsed, 3)}
            else:
                record({"id": cur[0], "status": status, "message": msg,
                        "details": stderr_tail, "secs": round(elapsed, 3)})
        elif not progressed and not got_lib:
            # died before the tests were even loaded (pyverbs or the tests
            # cannot be imported with this library): every remaining test
            # would fail the same way, so charge them all at once instead of
            # starting one child per test
            for i in remaining:
                record({"id": i, "status": "crash",
                        "message": f"the test process could not load the tests (exit status {rc}"
                                   + (f", {killed}" if killed else "") + ")",
                        "details": stderr_tail, "secs": 0})
        elif not progressed:
            # died outside any test (import, fixture): charge the next test,
            # so the run always moves on
            record({"id": remaining[0], "status": "crash",
                    "message": f"the test process ended outside a test (exit status {rc}"
                               + (f", {killed}" if killed else "") + ")",
                    "details": stderr_tail, "secs": 0})
    out.write(json.dumps({"id": "libibverbs loaded", "extra": True, "status": "info",
                          "message": " ".join(loaded) or "unknown", "details": ""}) + "\n")
    seen = set()
    for x in extras:
        if (x["id"], x["message"]) in seen:
            continue
        seen.add((x["id"], x["message"]))
        out.write(json.dumps(dict(x, extra=True)) + "\n")
    out.close()
    return 0


def list_main(a):
    # like run_tests.py --list-tests, but from our loader (same order)
    for tid in load_suite(a.tests_dir, a.dev, a.gid, a.port):
        print(tid)
    sys.stdout.flush()
    os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["list", "run", "child"])
    ap.add_argument("--tests-dir", required=True)
    ap.add_argument("--dev", required=True)
    ap.add_argument("--port", type=int, default=1)
    ap.add_argument("--gid", type=int, default=None)
    ap.add_argument("--ids")
    ap.add_argument("--out")
    ap.add_argument("--events")
    ap.add_argument("--tag", default="run")
    ap.add_argument("--deadline", type=float, default=120)
    ap.add_argument("--deadlines-from")
    ap.add_argument("--factor", type=float, default=10)
    ap.add_argument("--min", type=float, default=30)
    ap.add_argument("--max", type=float, default=120)
    ap.add_argument("--budget", type=float, default=0)
    ap.add_argument("--retry-crashes", action="store_true")
    a = ap.parse_args()
    if a.mode == "list":
        return list_main(a)
    if a.mode == "child":
        return child_main(a)
    return run_main(a)


if __name__ == "__main__":
    sys.exit(main())
