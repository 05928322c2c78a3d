#!/usr/bin/env python3
"""Runs the provider workload on the uverbs stand-in, once on each release's
own libibverbs and once on ours, and compares the two command logs step by
step (compat-tests/providers/README.md).

Prints one line per provider x release x step (PASS/FAIL/SKIP), the fault
runs' lines, and the closing line `providers: N passed, N failed, N skipped`.
run.sh prepares everything (builds, roots, mounts) and passes:

  --release NAME:ROOT:INNER:PABI   a release; ROOT its root ("/" = this
                                   machine), INNER the scratch directory as
                                   seen from inside ROOT (repeatable)
  --scratch DIR                    the scratch directory (host path)
  --only PROV[,PROV]               these providers only
  --faults PROV[,PROV]             fault runs for these providers
"""
import argparse
import concurrent.futures
import errno
import os
import re
import subprocess
import sys
from collections import OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
ERRNOS = ["EINVAL", "ENOMEM", "EIO", "EOPNOTSUPP"]
TIMEOUT = 60
# Heap that ours may keep beyond what upstream keeps after a fault run:
# malloc's per-thread caches hold freed blocks of either library.
HEAP_SLACK = 1024
# Providers also run on a kernel without the ioctl interface (write() only).
WRITE_ONLY = {"rxe", "mlx5", "efa", "hns"}

counts = {"pass": 0, "fail": 0, "skip": 0}
# provider x release: [steps, identical, differing (listed), differing,
# commands, calls that succeeded on upstream's library]
table = {}


def out(kind, name, why=None):
    counts[kind] += 1
    word = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[kind]
    print(f"{word} {name}" + (f": {why}" if why else ""), flush=True)


def load_fixtures():
    """uverbs index, ibdev, modalias, abi, node type per provider: the
    discovery suite's table (fixture.sh), the one place it is written."""
    text = open(os.path.join(HERE, "..", "discovery", "fixture.sh")).read()
    table = re.search(r'FX_PROVIDERS="\n(.*?)\n"', text, re.S).group(1)
    fx = {}
    for line in table.splitlines():
        parts = line.split()
        if len(parts) == 5:
            idx, ibdev, modalias, abi, nt = parts
            name = re.sub(r"_?\d+$", "", ibdev)
            fx[name] = dict(ibdev=ibdev, modalias=modalias, abi=abi, nt=nt)
    for name, (ibdev, modalias, abi, nt, _, _) in EXTRA_FIXTURES.items():
        fx.setdefault(name, dict(ibdev=ibdev, modalias=modalias, abi=abi, nt=nt))
    return fx


# Which provider file serves which device (file name -> fixture name).
FILE_TO_DEV = {"hfi1verbs": "hfi1", "ipathverbs": "qib"}


def make_fixture(d, ent, link_layer):
    """A sysfs tree with one uverbs device (as the kernel lays it out)."""
    uv = os.path.join(d, "class/infiniband_verbs/uverbs0")
    ib = os.path.join(d, "class/infiniband", ent["ibdev"])
    os.makedirs(uv, exist_ok=True)
    os.makedirs(os.path.join(ib, "device"), exist_ok=True)

    def w(p, s):
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(s + "\n")

    w(os.path.join(d, "class/infiniband_verbs/abi_version"), "6")
    w(os.path.join(uv, "ibdev"), ent["ibdev"])
    w(os.path.join(uv, "dev"), "231:0")
    w(os.path.join(uv, "abi_version"), ent["abi"])
    w(os.path.join(ib, "node_type"), {"1": "1: CA", "4": "4: RNIC"}.get(ent["nt"], ent["nt"]))
    w(os.path.join(ib, "node_guid"), "0002:c903:00a1:b200")
    w(os.path.join(ib, "sys_image_guid"), "0002:c903:00a1:b200")
    w(os.path.join(ib, "fw_ver"), "16.35.2000")
    w(os.path.join(ib, "hca_type"), "MT4115")
    w(os.path.join(ib, "board_id"), "MT_0000000008")
    w(os.path.join(ib, "node_desc"), "standin HCA-1")
    if ent["modalias"] != "-":
        w(os.path.join(ib, "device/modalias"), ent["modalias"])
    port = os.path.join(ib, "ports/1")
    w(os.path.join(port, "link_layer"), "Ethernet" if link_layer == 2 else "InfiniBand")
    w(os.path.join(port, "state"), "4: ACTIVE")
    w(os.path.join(port, "phys_state"), "5: LinkUp")
    w(os.path.join(port, "rate"), "100 Gb/sec (4X EDR)")
    w(os.path.join(port, "lid"), "0x1")
    w(os.path.join(port, "pkeys/0"), "0xffff")
    w(os.path.join(port, "gids/0"), "fe80:0000:0000:0000:0002:c903:00a1:b200")
    w(os.path.join(port, "gid_attrs/types/0"), "RoCE v2" if link_layer == 2 else "IB")
    w(os.path.join(port, "gid_attrs/ndevs/0"), "eth0")


# Matched only by the kernel's driver id (no modalias or name match), which
# only RDMA netlink gives: these run with the stand-in answering netlink.
NETLINK = {"siw", "mana"}
NETLINK_ENV = {"STANDIN_NETLINK": "1"}

# sid's library (rdma-core 65) once more on a stand-in answering as the
# latest kernel (STANDIN_KERNEL=latest): the methods newer than Linux 6.1
# that these providers reach (query_port_speed, REG_MR, DMAH, DMABUF,
# completion counters, QUERY_PORT's active_speed_ex), not their fallbacks.
KERNEL_LATEST = {"rxe", "mlx5", "efa"}

ETH = {"mlx5", "bnxt_re", "cxgb4", "erdma", "hns", "irdma", "ocrdma", "qedr", "vmw_pvrdma", "rxe", "siw", "mana"}

# Providers the discovery suite's table (fixture.sh) does not know: ibdev,
# device/modalias ("-": none), uverbs ABI version, node type, link layer (1
# IB, 2 Ethernet), matched by the kernel's driver id only (netlink).
EXTRA_FIXTURES = {
    # sid's AMD Pensando provider: VERBS_DRIVER_ID(RDMA_DRIVER_IONIC) only,
    # IONIC_ABI_VERSION 1; the kernel's ib device sits on the ionic
    # Ethernet driver's auxiliary device.
    "ionic": ("ionic_0", "auxiliary:ionic.rdma", "1", "1", 2, True),
}
ETH |= {n for n, e in EXTRA_FIXTURES.items() if e[4] == 2}
NETLINK |= {n for n, e in EXTRA_FIXTURES.items() if e[5]}


def parse_steps(text):
    """The log as an ordered map step -> lines (commands and the workload's
    lines from its @step to the next), plus the @res lines."""
    steps = OrderedDict()
    res = []
    cur = "(before the first step)"
    steps[cur] = []
    seen = {}
    for line in text.splitlines():
        if line.startswith("@res"):
            res.append(line)
            continue
        if line.startswith("@step "):
            name = line[6:].strip()
            seen[name] = seen.get(name, 0) + 1
            cur = name if seen[name] == 1 else f"{name} #{seen[name]}"
            steps[cur] = []
        steps[cur].append(line)
    if not steps["(before the first step)"]:
        del steps["(before the first step)"]
    return steps, res


def run(rel, root, inner, scratch, prov, lib, extra_env=None, tag=""):
    """One workload run; returns (log text, exit status)."""
    logname = f"logs/{rel}-{prov}-{lib}{tag}.log"
    host_log = os.path.join(scratch, logname)
    os.makedirs(os.path.dirname(host_log), exist_ok=True)
    # Created empty here: the workload opens it for appending, not creating.
    open(host_log, "w").close()
    env = [
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        f"SYSFS_PATH={inner}/fx/{prov}",
        f"STANDIN_LOG={inner}/{logname}",
        f"LD_PRELOAD={inner}/libuverbs-standin.so",
    ]
    if lib == "ours":
        env.append(f"LD_LIBRARY_PATH={inner}/ourlib")
    for k, v in (extra_env or {}).items():
        env.append(f"{k}={v}")
    args = ["env", "-i"] + env + [f"{inner}/workload-{rel}"]
    if extra_env and extra_env.get("_ARGS"):
        args += extra_env["_ARGS"].split()
    if root != "/":
        args = ["chroot", root] + args
    try:
        p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
        rc = p.returncode
        stderr = p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired:
        rc, stderr = "timeout", ""
    try:
        text = open(host_log, errors="replace").read()
    except FileNotFoundError:
        text = ""
    with open(host_log + ".stderr", "w") as f:
        f.write(stderr)
    return text, rc


def first_diff(a, b):
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "(nothing)"
        y = b[i] if i < len(b) else "(nothing)"
        if x != y:
            return f"upstream: {x[:300]} | ours: {y[:300]}"
    return ""


def load_known():
    known = {}
    path = os.path.join(HERE, "differences.txt")
    if os.path.exists(path):
        for line in open(path):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            prov, rel, step, why = (x.strip() for x in line.split("|", 3))
            known[(prov, rel, step)] = why
    return known


def compare(prov, rel, root, inner, scratch, known, used, env=None, mode=""):
    """One provider x release: both libraries' runs, step by step.  `mode`
    names a variant of the stand-in (its lines read "<prov> <rel> <mode>
    <step>"; `env` carries its settings)."""
    tag = f"-{mode}" if mode else ""
    up, rc_up = run(rel, root, inner, scratch, prov, "upstream", env, tag)
    ours, rc_ours = run(rel, root, inner, scratch, prov, "ours", env, tag)
    su, _ = parse_steps(up)
    so, _ = parse_steps(ours)
    label = f"{prov} {rel}" + (f" {mode}" if mode else "")
    if "@nodev" in up:
        out("skip", label, "upstream's library finds no device on the fixture")
        return
    if rc_up != rc_ours:
        out("fail", f"{label} exit status", f"upstream {rc_up}, ours {rc_ours}")
    names = list(su.keys()) + [k for k in so.keys() if k not in su]
    row = table.setdefault((prov, rel + (f" {mode}" if mode else "")),
                           [0, 0, 0, 0, count_cmds(up), len(re.findall(r"^@ret .* rc=[01] errno=0$", up, re.M))])
    for step in names:
        row[0] += 1
        if su.get(step) == so.get(step):
            row[1] += 1
        elif known.get((prov, label[len(prov) + 1:], step)) is not None:
            row[2] += 1
        else:
            row[3] += 1
        a, b = su.get(step), so.get(step)
        name = f"{label} {step}"
        key = (prov, label[len(prov) + 1:], step)
        why = known.get(key)
        if why is not None:
            used.add(key)
        if a == b:
            if why is not None:
                out("fail", name, f"listed in differences.txt ({why}) but identical now")
            else:
                out("pass", name)
        elif a is None or b is None:
            msg = f"step only in {'ours' if a is None else 'upstream'}"
            out("pass" if why else "fail", name, f"known: {why}" if why else msg)
        elif why is not None:
            out("pass", name, f"known: {why}")
        else:
            out("fail", name, first_diff(a, b))
    refusals(label, up)
    ok = re.search(r"@ret open_device rc=1", up)
    if not ok:
        m = re.search(r"@ret open_device .*", up)
        print(f"  note: {label}: context creation fails on upstream's library too"
              f" ({m.group(0) if m else 'no open_device step'})", flush=True)


def refusals(label, up):
    """The kernel's refusals: a workload call followed by "@want <ERRNO>
    [after <step>]" ("OK": accepted, a device limit itself) must be
    answered <ERRNO> by the stand-in wherever it
    reached it (a command in its step) and the object in use was made by a
    command (the "after" step sent one: an object a provider keeps to
    itself is none of the kernel's).  What upstream's library then returns
    is the provider's to choose: other errnos than the kernel's are named."""
    steps, _ = parse_steps(up)
    reached, not_reached, bad, mapped = 0, 0, [], []

    def sent(lines):
        return [l for l in lines if l.startswith(("ioctl ", "write ", "invoke "))]

    for step, lines in steps.items():
        m = [re.match(r"@want (\w+)(?: after (.*))?$", l) for l in lines if l.startswith("@want ")]
        if not m or not m[0]:
            continue
        want, after = m[0].group(1), m[0].group(2)
        cmds = sent(lines)
        if not cmds or (after and not sent(steps.get(after, []))):
            not_reached += 1
            continue
        reached += 1
        # the first command refused (the provider may clean up after it)
        answers = [int(a) for c in cmds for a in re.findall(r" -> (-?\d+)", c) if a != "0"]
        got = answers[0] if answers else 0
        if got != (0 if want == "OK" else getattr(errno, want, None)):
            bad.append(f"{step}: the stand-in answered {got}, the kernel {want}")
            continue
        ret = [l.rsplit("errno=", 1)[1] for l in lines if l.startswith("@ret ")]
        if ret and ret[-1] != ("0" if want == "OK" else want):
            mapped.append(f"{step}: {ret[-1]}")
    if not reached and not not_reached:
        return
    name = f"{label} refusals ({reached} reached the stand-in, {not_reached} did not)"
    if bad:
        out("fail", name, f"{len(bad)} not as the kernel: " + "; ".join(bad))
    else:
        note = ("; the provider returns its own errno for " + ", ".join(mapped)) if mapped else ""
        out("pass", name + f": each answered as the kernel{note}")


def count_cmds(text):
    return sum(1 for l in text.splitlines() if l.startswith(("ioctl ", "write ")))


def leaks(res):
    v = {}
    for line in res:
        kind = line.split()[0]
        v[kind] = {k: int(x) for k, x in re.findall(r"(\w+)=(-?\d+)", line)}
    if "@res1" not in v or "@res" not in v:
        return None
    return {k: v["@res"][k] - v["@res1"][k] for k in v["@res"]}


def faults(prov, rel, root, inner, scratch, stride, env0=None, only_kinds=None):
    """Each command of a workload run fails in turn, with each kind of
    fault: the workload runs three times (the first fills what the
    libraries allocate once; the second and third get the same fault at
    the same command); the two libraries must give the same results, and
    what the third run leaves behind beyond the second (a leak on the fault
    path) must be no more for ours than for upstream's."""
    if only_kinds is not None and not only_kinds:
        return  # (--fault-kinds REL= : no fault run for this release)
    base, _ = run(rel, root, inner, scratch, prov, "upstream", dict(env0 or {}, _ARGS="--faults"), "-f0")
    m = re.search(r"^@res0 .*?$(.*?)^@res1 ", base, re.S | re.M)
    if not m:
        out("skip", f"{prov} {rel} faults", "the workload's runs did not finish on upstream's library")
        return
    n = count_cmds(m.group(1))
    if not n:
        out("skip", f"{prov} {rel} faults", "the workload sends no command")
        return
    # Each command fails once with an errno (EINVAL, ENOMEM, EIO and
    # EOPNOTSUPP in rotation), once as the device's disassociation, and
    # once so with RDMAV_ALLOW_DISASSOC_DESTROY; the two libraries' runs
    # of each go side by side (two cores).
    # only_kinds: kind -> its own stride (1: every command; 2: every other
    # one, the disassociation on the odd ones, with ALLOW_DISASSOC_DESTROY
    # on the even ones, so that the two together fail each command once).
    kinds = {"errno": [], "fatal": [], "fatal+ALLOW_DISASSOC_DESTROY": []}
    every = {k: 1 for k in kinds}
    if only_kinds is not None:
        kinds = {k: v for k, v in kinds.items() if k in only_kinds}
        every = {k: only_kinds[k] for k in kinds}
    offset = {"errno": 0, "fatal": 0, "fatal+ALLOW_DISASSOC_DESTROY": 1}
    tried = {k: 0 for k in kinds}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for i, k in enumerate(range(1, n + 1, stride)):
            for kind, bad in kinds.items():
                if i % every[kind] != offset[kind] % every[kind]:
                    continue
                tried[kind] += 1
                what = ERRNOS[(k - 1) % len(ERRNOS)] if kind == "errno" else "fatal"
                # No per-thread malloc cache: the freed blocks it would hold
                # count as in use (mallinfo2), and which it holds depends on
                # each library's pattern of allocation.  A fixed mmap
                # threshold (the default's value): once a large block was
                # freed, malloc's moving one would serve the next large
                # ones from the heap, and whether a provider's queue (the
                # limits section's are MBs) is a mapping of its own would
                # depend on what either library freed before.
                env = dict(env0 or {}, _ARGS="--faults", STANDIN_FAIL=f"{k}:{what}",
                           GLIBC_TUNABLES="glibc.malloc.tcache_count=0:glibc.malloc.mmap_threshold=131072")
                if kind.endswith("DESTROY"):
                    env["RDMAV_ALLOW_DISASSOC_DESTROY"] = "1"
                tag = f"-f{k}-{what}{'-allow' if kind.endswith('DESTROY') else ''}"
                fu = pool.submit(run, rel, root, inner, scratch, prov, "upstream", env, tag)
                fo = pool.submit(run, rel, root, inner, scratch, prov, "ours", env, tag)
                (up, rc_up), (ours, rc_ours) = fu.result(), fo.result()
                why = fault_diff(up, rc_up, ours, rc_ours)
                if why:
                    bad.append(f"#{k} {what}: {why}")
    for kind, bad in kinds.items():
        desc = "EINVAL, ENOMEM, EIO, EOPNOTSUPP in rotation" if kind == "errno" else kind
        part = f"each of {tried[kind]} commands" if every[kind] == 1 else \
            f"every {every[kind]}{'nd' if every[kind] == 2 else 'th'} command ({tried[kind]})"
        name = f"{prov} {rel} faults {kind} ({desc}): {part} failed in turn"
        if bad:
            out("fail", name, f"{len(bad)} differ; first: {bad[0]}")
        else:
            out("pass", name + ", same results, no leak beyond upstream's")


def fault_diff(up, rc_up, ours, rc_ours):
    """Why a fault run of ours differs from upstream's, or None."""
    su, ru = parse_steps(up)
    so, ro = parse_steps(ours)
    if rc_up != rc_ours:
        return f"exit upstream {rc_up}, ours {rc_ours}"
    if su != so:
        for step in su:
            if su.get(step) != so.get(step):
                return f"{step}: {first_diff(su[step], so.get(step) or [])}"
        return "ours has steps upstream has not"
    lu, lo = leaks(ru), leaks(ro)
    if lu is None and lo is None:
        # Both stopped at the same place (the provider crashed in both,
        # say): nothing to measure.
        return None
    if lu is None or lo is None:
        return f"@res figures from one library only (upstream {lu}, ours {lo})"
    if lo["fds"] > lu["fds"] or lo["maps"] > lu["maps"]:
        return f"leaks fds {lo['fds']} maps {lo['maps']} (upstream {lu['fds']}, {lu['maps']})"
    if lo["heap"] > max(lu["heap"], 0) + HEAP_SLACK:
        return f"heap grew {lo['heap']} B (upstream {lu['heap']} B)"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", action="append", default=[])
    ap.add_argument("--scratch")
    ap.add_argument("--fixture", nargs=2, metavar=("PROVIDER", "DIR"),
                    help="only write the sysfs fixture of PROVIDER's device into DIR (for the stand-in used on its own)")
    ap.add_argument("--fixture-table", action="store_true",
                    help="print every fixture's facts, one provider a line (for ibv-standin, standin/ibv-standin.in): "
                         "name ibdev modalias abi node-type link-layer netlink")
    ap.add_argument("--only", default="")
    ap.add_argument("--faults", default="")
    ap.add_argument("--fault-stride", type=int, default=1)
    ap.add_argument("--fault-kinds", default="",
                    help="REL=KIND[/N][+KIND[/N]...][,...]: only these kinds of fault runs (errno, fatal, allow: "
                         "fatal with RDMAV_ALLOW_DISASSOC_DESTROY) for release REL (REL= none), each on every "
                         "command or every Nth (fatal from the first, allow from the second); "
                         "the others get all three")
    ap.add_argument("--prior-fail", type=int, default=0, help="checks run.sh failed before")
    a = ap.parse_args()
    counts["fail"] += a.prior_fail
    fx = load_fixtures()
    if a.fixture_table:
        for dev in sorted(fx):
            e = fx[dev]
            print(dev, e["ibdev"], e["modalias"], e["abi"], e["nt"], 2 if dev in ETH else 1, int(dev in NETLINK))
        return 0
    if a.fixture:
        prov, d = a.fixture
        dev = FILE_TO_DEV.get(prov, prov)
        if dev not in fx:
            print(f"no fixture for {prov}; known: {' '.join(sorted(fx))}", file=sys.stderr)
            return 2
        make_fixture(d, fx[dev], 2 if dev in ETH else 1)
        if dev in NETLINK:
            print(f"{prov} is matched by the kernel's driver id only: run with STANDIN_NETLINK=1")
        return 0
    if not a.scratch:
        ap.error("--scratch is required")
    only = set(filter(None, a.only.split(",")))
    fault_provs = set(filter(None, a.faults.split(",")))
    fault_kinds = {}
    for spec in filter(None, a.fault_kinds.split(",")):
        rel, _, ks = spec.partition("=")
        names = {"errno": "errno", "fatal": "fatal", "allow": "fatal+ALLOW_DISASSOC_DESTROY"}
        fault_kinds[rel] = {}
        for k in filter(None, ks.split("+")):
            k, _, n = k.partition("/")
            if k not in names or not (n or "1").isdigit() or int(n or "1") < 1:
                ap.error(f"--fault-kinds: {spec}: not KIND[/N] with KIND errno, fatal or allow")
            fault_kinds[rel][names[k]] = int(n or "1")
    known = load_known()
    used = set()
    for spec in a.release:
        rel, root, inner, pabi = spec.split(":")
        pdir = os.path.join(root, "usr/lib/x86_64-linux-gnu/libibverbs")
        provs = sorted(re.sub(rf"^lib(.*)-rdmav{pabi}\.so$", r"\1", f)
                       for f in os.listdir(pdir) if f.endswith(f"-rdmav{pabi}.so"))
        for prov in provs:
            if prov == "swrdma" or (only and prov not in only):
                continue
            dev = FILE_TO_DEV.get(prov, prov)
            ent = fx.get(dev)
            if ent is None:
                out("skip", f"{prov} {rel}", "no sysfs fixture for it (discovery/fixture.sh)")
                continue
            if ent["modalias"] == "-" and dev not in ("rxe",) and dev not in NETLINK:
                out("skip", f"{prov} {rel}", "matched only by the kernel's driver id, which only RDMA netlink gives; the stand-in refuses netlink")
                continue
            env = NETLINK_ENV if dev in NETLINK else None
            d = os.path.join(a.scratch, "fx", prov)
            if not os.path.exists(d):
                make_fixture(d, ent, 2 if dev in ETH else 1)
            compare(prov, rel, root, inner, a.scratch, known, used, env)
            if rel == "sid" and prov in KERNEL_LATEST:
                compare(prov, rel, root, inner, a.scratch, known, used, dict(env or {}, STANDIN_KERNEL="latest"),
                        "kernel-latest")
            if prov in WRITE_ONLY:
                # A kernel without the ioctl interface: every command by write().
                compare(prov, rel, root, inner, a.scratch, known, used, dict(env or {}, STANDIN_WRITE_ONLY="1"),
                        "write-only")
            if prov in fault_provs or "all" in fault_provs:
                faults(prov, rel, root, inner, a.scratch, a.fault_stride, env, fault_kinds.get(rel))
    if not only:
        for k, why in known.items():
            if k not in used:
                out("fail", " ".join(k), f"listed in differences.txt ({why}) but no such step ran")
    if table:
        print("\nprovider   release/variant      steps identical listed differing commands succeeded-upstream")
        for (prov, rel), r in sorted(table.items()):
            print(f"  {prov:10} {rel:20} {r[0]:5} {r[1]:9} {r[2]:6} {r[3]:9} {r[4]:8} {r[5]:8}")
        print()
    print(f"providers: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
