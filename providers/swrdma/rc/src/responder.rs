//! The responder's checks of a remote access and their execution, in one
//! order for both transports:
//!
//! 1. the QP's own rights (`qp_access_flags`) for the operation — else
//!    `InvalidRequest`: the operation is not enabled on the QP, so the
//!    request is not valid for it (rxe's opcode check, NAK invalid request;
//!    IBTA 9.7.4.1.3 counts the QP's enables with the opcode's validity);
//! 2. an atomic's address is 8-aligned — else `InvalidRequest`;
//! 3. a zero-length READ or WRITE touches nothing: no R_Key and no address
//!    is checked (IBTA C9-88; UCX flushes with rkey and address 0);
//! 4. the R_Key grants the right over the whole range (its PD, a window's
//!    MR and QP, the range inside) — else `RemoteAccess`;
//! 5. the copy itself: memory the owner no longer maps — `RemoteAccess`.
//!
//! A WRITE with immediate passes step 1 before its receive WQE is taken
//! (none: RNR NAK), the others after: a fault then completes that receive
//! with [`Fault::imm_receive_status`] (rxe's order: opcode, resources,
//! length, R_Key).
//!
//! Errors are [`Fault`]s: the caller answers with `fault.nak_code()` (the
//! wire) or `fault.requester_status()` (the ring), raises
//! `fault.async_event()` and moves the QP to the error state.

use crate::fault::Fault;
use crate::keys::Keys;
use crate::memory::{Atomic, Memory};
use crate::op::Op;

/// A path MTU (`IBV_MTU_*`) in bytes (anything else: 4096, the largest).
pub fn pmtu_bytes(code: u32) -> u32 {
    match code {
        1 => 256,
        2 => 512,
        3 => 1024,
        4 => 2048,
        _ => 4096,
    }
}

/// A message of `total` bytes whose sender cuts it at path MTU `sender`
/// bytes (0: not known) comes in packets the responder's path MTU `own`
/// allows: its first one is no longer (rxe refuses a longer packet with
/// NAK invalid request; so do we, on the wire and on the same-machine
/// link, where the requester says its path MTU).
pub fn first_packet_fits(total: u64, sender: u32, own: u32) -> bool {
    sender == 0 || total.min(sender as u64) <= own as u64
}

/// The QP a request is for, as the checks see it.
pub struct Target<'a> {
    pub qpn: u32,
    /// The PD remote accesses are checked against (an XRC target QP: the
    /// PD of the SRQ the request names).
    pub pd: u32,
    /// The QP's `qp_access_flags`.
    pub qp_access: u32,
    pub keys: &'a Keys,
}

impl Target<'_> {
    /// Step 1: the QP enables `op` (`qp_access_flags`).
    pub fn enabled(&self, op: Op) -> Result<(), Fault> {
        let right = op.remote_access();
        if self.qp_access & right != right {
            return Err(Fault::InvalidRequest);
        }
        Ok(())
    }

    /// Steps 1 to 4 for `op` on [va, va + len): Ok(Some(process address)),
    /// Ok(None) for a zero-length access (nothing to touch).
    pub fn check(&self, op: Op, rkey: u32, va: u64, len: u64) -> Result<Option<u64>, Fault> {
        self.enabled(op)?;
        let right = op.remote_access();
        if op.is_atomic() && !va.is_multiple_of(8) {
            return Err(Fault::InvalidRequest);
        }
        if len == 0 && !op.is_atomic() {
            return Ok(None);
        }
        let len = if op.is_atomic() { 8 } else { len };
        match self.keys.grant(self.qpn, self.pd, rkey, va, len, right) {
            // (An MR whose process address and IOVA differ modulo 8 would
            // hand an aligned IOVA to a misaligned address.)
            Some(a) if op.is_atomic() && !a.is_multiple_of(8) => Err(Fault::InvalidRequest),
            Some(a) => Ok(Some(a)),
            None => Err(Fault::RemoteAccess),
        }
    }

    /// An RDMA WRITE's data (one piece) to `va`.
    pub fn write(&self, mem: &dyn Memory, rkey: u32, va: u64, data: &[u8]) -> Result<(), Fault> {
        match self.check(Op::Write, rkey, va, data.len() as u64)? {
            Some(a) if !mem.write(a, data) => Err(Fault::RemoteAccess),
            _ => Ok(()),
        }
    }

    /// An RDMA READ's data (one piece) from `va`.
    pub fn read(&self, mem: &dyn Memory, rkey: u32, va: u64, out: &mut [u8]) -> Result<(), Fault> {
        match self.check(Op::Read, rkey, va, out.len() as u64)? {
            Some(a) if !mem.read(a, out) => Err(Fault::RemoteAccess),
            _ => Ok(()),
        }
    }

    /// An atomic (`op`: CmpSwap, FetchAdd or AtomicWrite with its
    /// operands): the value before it.
    pub fn atomic(&self, mem: &dyn Memory, op: Op, rkey: u32, va: u64, a: Atomic) -> Result<u64, Fault> {
        let Some(addr) = self.check(op, rkey, va, 8)? else {
            return Err(Fault::InvalidRequest);
        };
        mem.atomic(addr, a).ok_or(Fault::RemoteAccess)
    }
}

/// The responder resources of atomics: the results of the last ones, by
/// PSN, so that a duplicate request is answered with the saved result and
/// never executed twice.
#[derive(Default)]
pub struct AtomicHistory {
    saved: std::collections::VecDeque<(u32, u64)>,
}

impl AtomicHistory {
    /// At least this many results are kept (more when the QP allows more
    /// outstanding: `max_dest_rd_atomic`).
    pub const MIN_KEEP: usize = 32;

    pub fn save(&mut self, psn: u32, value: u64, max_dest_rd_atomic: u8) {
        self.saved.push_back((psn, value));
        let keep = (max_dest_rd_atomic as usize).max(Self::MIN_KEEP);
        while self.saved.len() > keep {
            self.saved.pop_front();
        }
    }

    /// The saved result of the atomic with this PSN.
    pub fn replay(&self, psn: u32) -> Option<u64> {
        self.saved.iter().rev().find(|(p, _)| *p == psn).map(|&(_, v)| v)
    }

    pub fn clear(&mut self) {
        self.saved.clear();
    }
}

/// One READ the responder executed: its first PSN, how many response
/// packets it took, and what it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRes {
    pub psn: u32,
    pub npkts: u32,
    pub va: u64,
    pub rkey: u32,
    pub len: u64,
}

/// The responder resources of READs: the last READs executed, so that a
/// duplicate READ request (its responses were lost) is answered again —
/// from the packet it asks for, within that READ, with the R_Key the READ
/// was checked with — and a duplicate for any other PSN or range is
/// dropped (no replay of arbitrary ranges for whoever asks).
#[derive(Default)]
pub struct ReadHistory {
    saved: std::collections::VecDeque<ReadRes>,
}

impl ReadHistory {
    /// At least this many READs are kept (more when the QP allows more
    /// outstanding: `max_dest_rd_atomic`).
    pub const MIN_KEEP: usize = 16;

    pub fn save(&mut self, r: ReadRes, max_dest_rd_atomic: u8) {
        self.saved.push_back(r);
        let keep = (max_dest_rd_atomic as usize).max(Self::MIN_KEEP);
        while self.saved.len() > keep {
            self.saved.pop_front();
        }
    }

    /// A duplicate READ request with PSN `psn` for [va, va + len), on a
    /// path MTU of `pmtu` bytes: the rest of the saved READ it belongs to,
    /// from that packet on (its PSN is `psn`), or None — no saved READ has
    /// that PSN, or the request does not ask for the rest of it.
    pub fn replay(&self, psn: u32, va: u64, len: u64, pmtu: u64) -> Option<ReadRes> {
        let r = self.saved.iter().rev().find(|r| {
            let d = swrdma_roce::psn_diff(psn, r.psn);
            d >= 0 && (d as u32) < r.npkts
        })?;
        let d = swrdma_roce::psn_diff(psn, r.psn) as u32;
        let skip = d as u64 * pmtu;
        let part = ReadRes {
            psn,
            npkts: r.npkts - d,
            va: r.va + skip,
            rkey: r.rkey,
            len: r.len.saturating_sub(skip),
        };
        (part.va == va && part.len == len).then_some(part)
    }

    pub fn clear(&mut self) {
        self.saved.clear();
    }
}
