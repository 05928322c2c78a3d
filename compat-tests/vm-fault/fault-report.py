#!/usr/bin/env python3
"""Compares the vm-fault results (written by fault-guest.sh inside the VM):
a table per kind of test, one PASS/FAIL line per check, the closing line
(CONVENTIONS.md), JSON.  Exit status 0 only when nothing failed.

Checks (ours against upstream in the same boot):
  <pair>-delete    ibv_rc_pingpong / ib_write_bw / ib_send_bw while rxe0 is
                   deleted: the same exit statuses (no signal, no timeout),
                   the delete's exit status, whether the delete waited for the
                   server on rxe0 to end, and what a new ibv_devices listed
                   during the delete; rxe0 re-added afterwards
  faultprog-*      the same exit status and byte-identical stdout apart from
                   the "# " figure lines (every step's return value/errno,
                   the async events, descriptors/mappings after the close)
  faultprog-*-leak descriptors and /dev/infiniband mappings after the close:
                   the same deltas as upstream's; heap blocks the cycle left
                   unfreed (glibc's malloc trace): none when upstream left none
  reuse-after-readd  on the re-added rxe0: ibv_devinfo (status and stdout)
                   and a pingpong (statuses) as upstream's
  kernel           no oops, warning or hung task in the guest's kernel log
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
from reportlib import (begin, entries, finish, fmt_status, print_table, read, read_int,  # noqa: E402
                       resolved, vm_run_checks)

SUITE = "vm-fault"
RELEASE_MS = 3000  # the delete must end within this after the server on rxe0 exited


def ms_between(d, a, b):
    x, y = read_int(os.path.join(d, a)), read_int(os.path.join(d, b))
    return None if x is None or y is None else y - x


def restore_of(d):
    rc = read_int(os.path.join(d, "restore.rc"))
    return rc, read_int(os.path.join(d, "restore.ms"))


def bad_status(st):
    """Why an exit status is a failure in itself (signal, timeout), or ''."""
    if st is None:
        return "no exit status"
    if st in (124, 137):
        return "timeout"
    if st > 128:
        return f"signal {st - 128}"
    return ""


def pair_delete_side(d):
    src, crc = read_int(os.path.join(d, "server.rc")), read_int(os.path.join(d, "client.rc"))
    if src is None or crc is None:
        return None
    dend = read_int(os.path.join(d, "delete.end"))
    send = read_int(os.path.join(d, "server.end"))
    r = {
        "status": [src, crc],
        "delete_status": read_int(os.path.join(d, "delete.rc")),
        "alive_at_delete": (read(os.path.join(d, "alive-at-delete"), "") or "").strip(),
        "blocked_after_1s": (read(os.path.join(d, "blocked-after-1s"), "") or "").strip(),
        "devices_during": read(os.path.join(d, "devices-during"), ""),
        "delete_ms": ms_between(d, "delete.start", "delete.end"),
        "server_end_after_delete_start_ms": ms_between(d, "delete.start", "server.end"),
        "client_end_after_delete_start_ms": ms_between(d, "delete.start", "client.end"),
        # the delete ends when the server's last uverbs file is closed, i.e. at
        # its exit; server.end is written by the shell after it reaped it
        "delete_end_minus_server_end_ms": None if dend is None or send is None else dend - send,
        "restore": restore_of(d),
    }
    r["alive_after_1s"] = (read(os.path.join(d, "alive-after-1s"), "") or "").strip()
    # blocked: still running 1 s after it started, with the server still there;
    # released: done at most RELEASE_MS after the shell saw the server exit
    r["waited_for_server"] = r["blocked_after_1s"] == "yes"
    r["released"] = (r["delete_end_minus_server_end_ms"] is not None
                     and r["delete_end_minus_server_end_ms"] <= RELEASE_MS)
    for who in ("server", "client"):
        r[who + "_stderr"] = read(os.path.join(d, who + ".err"), "", 4000)
        r[who + "_stdout_tail"] = "".join((read(os.path.join(d, who + ".out"), "") or "").splitlines(True)[-3:])
    return r


def pair_delete_check(up, ours):
    if up is None or ours is None:
        return "no result: the VM run ended before this test finished"
    for who, r in (("upstream", up), ("ours", ours)):
        for st in r["status"] + [r["delete_status"]]:
            if bad_status(st):
                return f"{who}: {bad_status(st)} (server/client {r['status']}, delete {r['delete_status']})"
        if r["restore"][0] != 0:
            return f"{who}: rxe0 could not be added again afterwards (status {r['restore'][0]})"
    for who, r in (("upstream", up), ("ours", ours)):
        if "server=yes" not in r["alive_at_delete"] or "server=yes" not in r["alive_after_1s"]:
            return (f"harness: {who}'s server had ended before the delete had run 1 s "
                    f"(at the start: {r['alive_at_delete']}; 1 s later: {r['alive_after_1s']})")
    diffs = []
    if ours["status"] != up["status"]:
        diffs.append(f"server/client exit ours {fmt_status(ours['status'])} vs upstream {fmt_status(up['status'])}")
    if ours["delete_status"] != up["delete_status"]:
        diffs.append(f"delete exit ours {ours['delete_status']} vs upstream {up['delete_status']}")
    if ours["waited_for_server"] != up["waited_for_server"]:
        diffs.append(f"delete waited for the server: ours {ours['waited_for_server']} vs upstream {up['waited_for_server']}")
    if ours["released"] != up["released"]:
        diffs.append(f"delete done within {RELEASE_MS} ms of the server's exit: ours {ours['released']} "
                     f"vs upstream {up['released']}")
    if ours["devices_during"] != up["devices_during"]:
        diffs.append("ibv_devices during the delete differs: ours %r vs upstream %r"
                     % (ours["devices_during"].strip()[-60:], up["devices_during"].strip()[-60:]))
    return "; ".join(diffs)


def mtrace_kept(path):
    """glibc's malloc trace (mtrace(3) format: "@ WHERE[CALLER] + ADDR SIZE",
    "- ADDR", "< ADDR" / "> ADDR SIZE" for realloc): the blocks allocated in
    it and not freed, as {"bytes", "blocks", "by": {library: bytes}}; None
    without a trace."""
    text = read(path)
    if text is None or "= Start" not in text:
        return None
    live = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[0] != "@":
            continue
        op, addr = parts[-3], parts[-2]
        if parts[-2] in ("-", "<"):
            op, addr = parts[-2], parts[-1]
        if op in ("+", ">"):
            where = parts[1].split(":")[0].split("[")[0].rsplit("/", 1)[-1]
            try:
                live[addr] = (int(parts[-1], 16), where)
            except ValueError:
                pass
        elif op in ("-", "<"):
            live.pop(addr, None)
    by = {}
    for size, where in live.values():
        by[where] = by.get(where, 0) + size
    return {"bytes": sum(by.values()), "blocks": len(live), "by": by}


def prog_side(d):
    rc = read_int(os.path.join(d, "rc"))
    if rc is None:
        return None
    out = read(os.path.join(d, "out"), "") or ""
    figures = {}
    for line in out.splitlines():
        if line.startswith("# "):
            for kv in line[2:].split():
                k, _, v = kv.partition("=")
                try:
                    figures[k] = int(v)
                except ValueError:
                    pass
            if line.startswith("# event "):
                figures.setdefault("events", []).append(line[8:])
    r = {"status": rc, "stdout": out, "stderr": read(os.path.join(d, "err"), "", 4000),
         "steps": [l for l in out.splitlines() if not l.startswith("# ")],
         "figures": figures, "restore": restore_of(d),
         "delete_status": read_int(os.path.join(d, "delete.rc")),
         "delete_ms": ms_between(d, "delete.start", "delete.end"),
         "kept": mtrace_kept(os.path.join(d, "mtrace"))}
    return r


def prog_checks(tid, up, ours):
    """(result, name, why) for the steps and for the leak figures."""
    if up is None or ours is None:
        why = "no result: the VM run ended before this test finished"
        return [("FAIL", tid, why), ("FAIL", tid + "-leak", why)]
    out = []
    why = ""
    if up["status"] != 0:
        why = f"upstream itself failed (exit {up['status']}): {up['steps'][-1:]} - harness or VM problem?"
    elif bad_status(ours["status"]) or ours["status"] != up["status"]:
        why = f"exit status ours {ours['status']} vs upstream {up['status']}: {(ours['stderr'] or '').strip()[-200:]}"
    elif ours["steps"] != up["steps"]:
        d = [f"{i}: ours {o!r} vs upstream {u!r}" for i, (u, o) in
             enumerate(zip(up["steps"] + [""] * 99, ours["steps"] + [""] * 99)) if u != o]
        why = "stdout differs: " + " | ".join(d[:3])
    for who, r in (("upstream", up), ("ours", ours)):
        if not why and r["delete_status"] not in (None, 0):
            why = f"{who}: rdma link delete exited {r['delete_status']}"
        if not why and r["restore"][0] not in (None, 0):
            why = f"{who}: rxe0 could not be restored afterwards (status {r['restore'][0]})"
    out.append(("FAIL" if why else "PASS", tid, why))

    uf, of = up["figures"], ours["figures"]
    why = ""
    keys = ("fd_delta", "maps_delta", "heap_delta")
    if any(k not in uf or k not in of for k in keys):
        why = "no figures (fd_delta, maps_delta, heap_delta) from both"
    elif of["fd_delta"] != uf["fd_delta"] or of["maps_delta"] != uf["maps_delta"]:
        why = (f"descriptors/mappings after the close: ours {of['fd_delta']:+d}/{of['maps_delta']:+d} "
               f"vs upstream {uf['fd_delta']:+d}/{uf['maps_delta']:+d}")
    elif up["kept"] is None or ours["kept"] is None:
        why = "no malloc trace from both (libc_malloc_debug.so.0 missing in the guest?)"
    elif (ours["kept"]["bytes"] == 0) != (up["kept"]["bytes"] == 0):
        why = (f"heap blocks the cycle did not free: ours {ours['kept']['blocks']} ({ours['kept']['bytes']} bytes: "
               f"{ours['kept']['by']}) vs upstream {up['kept']['blocks']} ({up['kept']['bytes']} bytes)")
    out.append(("FAIL" if why else "PASS", tid + "-leak", why))
    return out


def reuse_side(d):
    rc = read_int(os.path.join(d, "devinfo.rc"))
    src, crc = read_int(os.path.join(d, "server.rc")), read_int(os.path.join(d, "client.rc"))
    if rc is None or src is None or crc is None:
        return None
    return {"devinfo_status": rc, "devinfo": read(os.path.join(d, "devinfo.out"), ""),
            "pair_status": [src, crc], "pair_ms": read_int(os.path.join(d, "pair.ms")),
            "pair_stderr": (read(os.path.join(d, "server.err"), "") or "") + (read(os.path.join(d, "client.err"), "") or "")}


def reuse_check(up, ours):
    if up is None or ours is None:
        return "no result: the VM run ended before this test finished"
    if up["devinfo_status"] != 0 or up["pair_status"] != [0, 0]:
        return (f"upstream itself failed on the re-added rxe0 (ibv_devinfo {up['devinfo_status']}, "
                f"pingpong {fmt_status(up['pair_status'])}) - harness or VM problem?")
    if ours["devinfo_status"] != 0 or ours["devinfo"] != up["devinfo"]:
        return f"ibv_devinfo -d rxe0: ours exit {ours['devinfo_status']}, stdout {'same' if ours['devinfo'] == up['devinfo'] else 'differs'}"
    if ours["pair_status"] != up["pair_status"]:
        return f"pingpong: ours {fmt_status(ours['pair_status'])} vs upstream 0/0: {ours['pair_stderr'].strip()[-200:]}"
    return ""


def fmt_ms(v):
    return "-" if v is None else f"{v / 1000:.1f}s"


def main():
    a, info, complete = begin("--tests")
    checks, tests_out = [], []
    pair_rows, prog_rows, leak_rows, reuse_rows = [], [], [], []
    for line in entries(a.tests):
        tid, kind, args = (line.split("|") + ["", ""])[:3]
        d = os.path.join(a.results, tid)
        if kind in ("pingpong-delete", "perftest-delete"):
            up, ours = pair_delete_side(os.path.join(d, "upstream")), pair_delete_side(os.path.join(d, "ours"))
            why = pair_delete_check(up, ours)
            checks.append(("FAIL" if why else "PASS", tid, why))
            for who, r in (("upstream", up), ("ours", ours)):
                if r:
                    pair_rows.append((tid if who == "upstream" else "", who, fmt_status(r["status"]),
                                      str(r["delete_status"]), fmt_ms(r["delete_ms"]),
                                      fmt_ms(r["server_end_after_delete_start_ms"]),
                                      ("yes" if r["waited_for_server"] else "no") + ("" if r["released"] else ", kept after exit"),
                                      " ".join(l.split()[0] for l in r["devices_during"].splitlines()[2:]) or "-",
                                      fmt_ms(r["restore"][1])))
        elif kind == "prog":
            up, ours = prog_side(os.path.join(d, "upstream")), prog_side(os.path.join(d, "ours"))
            cs = prog_checks(tid, up, ours)
            checks.extend(cs)
            why = "; ".join(c[2] for c in cs if c[2])
            for who, r in (("upstream", up), ("ours", ours)):
                if not r:
                    continue
                f = r["figures"]
                steps = r["steps"]
                destroys = [s.split(": ")[-1] for s in steps if s.startswith(("destroy_", "dereg_", "dealloc_pd "))]
                events = [s.split(": ", 1)[1] for s in steps if s.startswith("async events on ")]
                noticed = f.get("wait_for_delete_ms", f.get("wait_for_port_err_ms"))
                prog_rows.append((tid if who == "upstream" else "", who, str(r["status"]),
                                  fmt_ms(noticed), "/".join(sorted(set(destroys))) or "-",
                                  " | ".join(events) or "-",
                                  fmt_ms(f.get("delete_done_after_close_ms"))))
                k = r["kept"]
                leak_rows.append((tid if who == "upstream" else "", who, str(f.get("fd_delta", "-")),
                                  str(f.get("maps_delta", "-")),
                                  "-" if k is None else f"{k['blocks']}/{k['bytes']}",
                                  str(f.get("heap_delta", "-")), str(f.get("clean_cycle_heap_delta", "-"))))
        elif kind == "reuse":
            up, ours = reuse_side(os.path.join(d, "upstream")), reuse_side(os.path.join(d, "ours"))
            why = reuse_check(up, ours)
            checks.append(("FAIL" if why else "PASS", tid, why))
            for who, r in (("upstream", up), ("ours", ours)):
                if r:
                    reuse_rows.append((who, str(r["devinfo_status"]), fmt_status(r["pair_status"]), fmt_ms(r["pair_ms"])))
        else:
            up = ours = None
            why = f"unknown kind {kind!r} in the test list"
            checks.append(("FAIL", tid, why))
        tests_out.append({"id": tid, "kind": kind, "args": args, "upstream": up, "ours": ours,
                          "why": why})

    problems = read(os.path.join(a.results, "kernel-problems"))
    if complete:
        checks.append(("FAIL" if problems and problems.strip() else "PASS", "kernel",
                       "the guest's kernel log has: " + " | ".join((problems or "").strip().splitlines()[:3])))

    checks, ran = vm_run_checks(checks, a, complete)
    if ran:
        print("Faults on Soft-RoCE rxe0, kernel %s; %s" % (info.get("kernel", "?"), resolved(info)))
        print("rxe disassociate_ucontext in kallsyms: %s (ib_uverbs_remove_one: %s): without it "
              "`rdma link delete` waits for every user to close; no IBV_EVENT_DEVICE_FATAL, no EIO"
              % (info.get("kallsyms_rxe_disassociate_ucontext", "?"), info.get("kallsyms_ib_uverbs_remove_one", "?")))
        if pair_rows:
            print()
            print_table(("delete during", "library", "server/client", "delete", "delete took",
                         "server ended", "delete waited", "ibv_devices during", "re-add"), pair_rows)
        if prog_rows:
            print()
            print_table(("faultprog", "library", "exit", "noticed", "destroys", "async events", "delete done"),
                        prog_rows)
            print()
            print_table(("faultprog after close", "library", "fd delta", "uverbs maps delta",
                         "not freed (blocks/B)", "mallinfo delta", "clean cycle"), leak_rows)
            print("(not freed: malloc trace of the cycle; mallinfo counts glibc's thread cache too, as the "
                  "fault-free cycle's figure shows)")
        if reuse_rows:
            print()
            print_table(("re-added rxe0", "ibv_devinfo", "pingpong", "pingpong time"), reuse_rows)
        print()
    return finish(SUITE, a, complete, info, checks, tail={"tests": tests_out})


if __name__ == "__main__":
    sys.exit(main())
