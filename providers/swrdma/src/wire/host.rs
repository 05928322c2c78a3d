//! This process's objects (`Objects`, `Qp`, `QpSt`) as the host of the
//! wire engine (`swrdma_wired::wire::engine`, whose traits these implement:
//! `swrdma_wired::wire::host`).

use crate::mem::ProcessMemory;
use crate::objects::{Cq, CurRecv, Objects, Qp, QpSt};
use crate::sys::lock;
use ibverbs_abi::*;
use std::sync::{Arc, MutexGuard};
use swrdma_rc::budget::Budget;
use swrdma_rc::keys::Keys;
use swrdma_rc::memory::Memory;
use swrdma_rc::recv::Completion;
pub use swrdma_wired::wire::host::{Host, HostQp, HostSt};
use swrdma_wired::wire::state::WQp;

impl HostQp for Qp {
    type St = QpSt;
    fn qpn(&self) -> u32 {
        self.qpn
    }
    fn qpt(&self) -> u32 {
        self.qpt
    }
    fn pd(&self) -> u32 {
        self.pd
    }
    fn lock(&self) -> MutexGuard<'_, QpSt> {
        lock(&self.st)
    }
}

impl HostSt for QpSt {
    type RecvCq = Option<Arc<Cq>>;
    fn state(&self) -> u32 {
        self.state
    }
    fn attr(&self) -> &ibv_qp_attr {
        &self.attr
    }
    fn wq(&self) -> &WQp {
        &self.wq
    }
    fn wq_mut(&mut self) -> &mut WQp {
        &mut self.wq
    }
    fn budget(&mut self) -> &mut Budget {
        &mut self.budget
    }
    fn cur(&mut self) -> &mut Option<CurRecv> {
        &mut self.cur
    }
    fn sq_mark(&mut self, seq: u64) -> Option<&mut Option<u32>> {
        self.sq.iter_mut().find(|w| w.seq == seq).map(|w| &mut w.done)
    }
}

impl Host for Objects {
    type Qp = Qp;
    type St = QpSt;
    fn mem(&self, _qp: &Qp) -> &dyn Memory {
        &ProcessMemory
    }
    fn qp(&self, qpn: u32) -> Option<Arc<Qp>> {
        Objects::qp(self, qpn)
    }
    fn all_qps(&self) -> Vec<Arc<Qp>> {
        Objects::all_qps(self)
    }
    fn gid(&self, index: usize) -> [u8; 16] {
        Objects::gid(self, index)
    }
    fn with_keys<R>(&self, _qp: &Qp, f: impl FnOnce(&Keys) -> R) -> R {
        Objects::with_keys(self, f)
    }
    fn complete_sq(&self, qp: &Qp, st: &mut QpSt) {
        Objects::complete_sq(self, qp, st)
    }
    fn to_err(&self, qp: &Qp, st: &mut QpSt) {
        Objects::to_err(self, qp, st)
    }
    fn accept_recv(&self, qp: &Qp, st: &mut QpSt) -> Option<CurRecv> {
        Objects::accept_recv(self, qp, st, &swrdma_ring::Msg::default())
    }
    fn finish_recv(&self, cur: CurRecv, done: &Completion) -> (ibv_wc, Option<Arc<Cq>>) {
        Objects::finish_recv(self, cur, done)
    }
    fn push_recv(&self, cq: &Option<Arc<Cq>>, wc: ibv_wc, solicited: bool) {
        if let Some(cq) = cq {
            cq.push(wc, solicited);
        }
    }
    fn qp_event(&self, qp: &Qp, ev: u32) {
        self.async_event(qp.ibqp as u64, ev);
    }
}
