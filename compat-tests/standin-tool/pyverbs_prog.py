# compat-tests/standin-tool: the control path of the first device through
# Debian's python3-pyverbs, run by Debian's /usr/bin/python3 (a program
# that is not position-independent: its heap lies below 2^32).  Each step's
# outcome on stdout.
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr


def step(name, fn):
    try:
        r = fn()
        print(name, "ok")
        return r
    except Exception as x:  # the outcome is what is compared
        print(name, "error", type(x).__name__, str(x).split("\n")[0][:120])
        return None


devs = d.get_device_list()
print("devices", [x.name.decode() for x in devs])
if devs:
    ctx = step("open", lambda: d.Context(name=devs[0].name.decode()))
    if ctx:
        a = step("query_device", ctx.query_device)
        step("query_port", lambda: ctx.query_port(1))
        pd = step("pd", lambda: PD(ctx))
        mr = pd and step("mr", lambda: MR(pd, 65536, e.IBV_ACCESS_LOCAL_WRITE))
        cq = step("cq", lambda: CQ(ctx, 32))
        if pd and cq:
            cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
            for t in (e.IBV_QPT_RC, e.IBV_QPT_UD):
                qp = step(f"qp {t}", lambda: QP(pd, QPInitAttr(qp_type=t, scq=cq, rcq=cq, cap=cap)))
                if qp:
                    step(f"qp {t} close", qp.close)
        for o, n in ((cq, "cq"), (mr, "mr"), (pd, "pd"), (ctx, "ctx")):
            if o:
                step(f"{n} close", o.close)
