//! The receive side of SEND (and of RDMA WRITE with immediate): a receive
//! WQE taken and checked, the message's data placed in it piece by piece
//! (after the 40-byte GRH area on a UD QP), and its completion.

use crate::keys::Keys;
use crate::memory::{scatter, Memory};
use ibverbs_abi::*;
use std::net::{IpAddr, Ipv6Addr};

/// A receive WQE that a message is being placed in.  `C`: where its
/// completion goes (the provider's CQ handle).
pub struct Receive<C> {
    pub wr_id: u64,
    /// Its scatter list, in process addresses.
    pub sges: Vec<ibv_sge>,
    /// The status it completes with (0 so far).
    pub err: u32,
    pub cq: C,
    /// Bytes in front of the data: 40 on a UD QP (the GRH), else 0.
    pub base: u64,
    /// The layout of the GRH area (`l3_type`), reported in `ibv_wc.sl`.
    pub l3: u8,
    /// The scatter list as posted, where `sges` is its translation (IOVAs
    /// of an MR whose IOVA is not its address): see [`Receive::posted`].
    untranslated: Option<Vec<ibv_sge>>,
}

/// Takes receive WQE `wr_id`/`sges` of PD `pd` for a message: its list is
/// checked for writing (a bad one makes the receive complete with
/// `LOC_PROT_ERR`; nothing is placed in it).
pub fn accept<C>(keys: &Keys, pd: u32, wr_id: u64, sges: Vec<ibv_sge>, cq: C) -> Receive<C> {
    let (sges, err, untranslated) = match keys.check_local(pd, &sges, true) {
        Ok(None) => (sges, 0, None),
        Ok(Some(t)) => (t, 0, Some(sges)),
        Err(e) => (sges, e, None),
    };
    Receive {
        wr_id,
        sges,
        err,
        cq,
        base: 0,
        l3: 0,
        untranslated,
    }
}

/// What the completion of a receive says besides its WQE.
pub struct Completion {
    pub qpn: u32,
    pub src_qp: u32,
    /// `IBV_WC_RECV` or `IBV_WC_RECV_RDMA_WITH_IMM`.
    pub opcode: u32,
    /// The message's length (without the GRH area).
    pub len: u64,
    /// Immediate data as `ibv_wc.imm_data` holds it (network order).
    pub imm: Option<u32>,
    /// SEND with invalidate: the rkey to invalidate.
    pub inv: Option<u32>,
}

impl<C> Receive<C> {
    /// The receive WQE as it was posted (its `wr_id` and scatter list),
    /// for its queue again: the message that took it was dropped before it
    /// completed (its requester aborted it), and the WQE is to be taken
    /// anew, checked anew, by the next message.
    pub fn posted(self) -> (u64, Vec<ibv_sge>) {
        (self.wr_id, self.untranslated.unwrap_or(self.sges))
    }

    /// The scatter list's vector as posted, emptied, for the queue's next
    /// `ibv_post_recv` to fill again (no allocation, and no free here);
    /// nothing is placed after this, only `complete` is left.
    pub fn recycle(&mut self) -> Vec<ibv_sge> {
        let mut v = self
            .untranslated
            .take()
            .unwrap_or_else(|| std::mem::take(&mut self.sges));
        v.clear();
        v
    }

    /// A UD receive: the GRH area first (its data then starts at 40).
    pub fn place_grh(&mut self, mem: &dyn Memory, grh: &[u8; 40]) {
        self.base = 40;
        self.l3 = l3_type(grh);
        self.place_at(mem, 0, grh);
    }

    /// Data at byte `off` of the message; the receive completes with
    /// `LOC_LEN_ERR` once some does not fit (`LOC_PROT_ERR` once its memory
    /// is gone).
    pub fn place(&mut self, mem: &dyn Memory, off: u64, data: &[u8]) {
        self.place_at(mem, self.base + off, data);
    }

    /// `LOC_LEN_ERR` when the list is too short for the data, `LOC_PROT_ERR`
    /// when its memory is no longer mapped writable.
    fn place_at(&mut self, mem: &dyn Memory, at: u64, data: &[u8]) {
        if self.err != 0 || data.is_empty() {
            return;
        }
        let room: u64 = self.sges.iter().map(|s| s.length as u64).sum();
        if at.saturating_add(data.len() as u64) > room {
            self.err = IBV_WC_LOC_LEN_ERR;
        } else if !scatter(mem, &self.sges, at, data) {
            self.err = IBV_WC_LOC_PROT_ERR;
        }
    }

    /// The completion (and where it goes).  A SEND with invalidate of a
    /// window that `invalidate` refuses completes with `REM_INV_REQ_ERR`.
    pub fn complete(self, c: &Completion, invalidate: &mut dyn FnMut(u32, u32) -> bool) -> (ibv_wc, C) {
        // SAFETY: `ibv_wc` is integers and a union of integers: all-zero is
        // a valid value.
        let mut wc: ibv_wc = unsafe { std::mem::zeroed() };
        wc.wr_id = self.wr_id;
        wc.status = self.err;
        wc.opcode = c.opcode;
        wc.byte_len = (c.len + self.base) as u32;
        wc.qp_num = c.qpn;
        wc.src_qp = c.src_qp;
        if let Some(i) = c.imm {
            wc.imm.imm_data = i;
            wc.wc_flags |= IBV_WC_WITH_IMM;
        }
        if let (Some(k), 0) = (c.inv, wc.status) {
            if invalidate(k, c.qpn) {
                wc.imm.invalidated_rkey = k;
                wc.wc_flags |= IBV_WC_WITH_INV;
            } else {
                wc.status = IBV_WC_REM_INV_REQ_ERR;
            }
        }
        if self.base > 0 {
            wc.wc_flags |= IBV_WC_GRH;
            wc.sl = self.l3;
        }
        (wc, self.cq)
    }
}

/// The kind of GID a UD datagram was sent from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GidKind {
    /// RoCE v1 / IB: an IPv6-style GRH (next header 0x1b: the BTH).
    RoceV1,
    /// RoCE v2: the IP header of the datagram (IPv4 in the last 20 bytes
    /// for an IPv4-mapped GID, else IPv6), as rxe fills it.
    RoceV2,
}

/// What a UD completion of a RoCE port says in `ibv_wc.sl` (which RoCE
/// has no use for: no SL on Ethernet): the layout of the receive's GRH
/// area, as mlx5 devices report it there (0: a GRH, RoCE v1; 1: an IPv6
/// header; 2: an IPv4 header in the area's last 20 bytes).  UCX's UD
/// transport reads it to know where the destination address lies (its
/// last 4 bytes or its last 16) and drops the datagram when that address
/// is not one of the port's GIDs: rxe reports 0 with an IPv4 header (UCX
/// 1.13's `ud_verbs` on rxe with an IPv4 GID drops every datagram unless
/// `UCX_UD_VERBS_ETH_DGID_CHECK=n`; measured in the VM).
pub fn l3_type(g: &[u8; 40]) -> u8 {
    match (g[0] >> 4, g[6]) {
        (6, 17) => 1,
        (6, _) => 0,
        _ => 2,
    }
}

/// The IP address a RoCE v2 GID stands for.
pub fn gid_ip(g: &[u8; 16]) -> IpAddr {
    let v6 = Ipv6Addr::from(*g);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    }
}

/// The bytes of a UD datagram on the wire after the IP and UDP headers:
/// BTH, DETH, immediate data, payload, pad, ICRC.
pub fn ud_udp_len(payload: usize, imm: bool) -> usize {
    12 + 8 + if imm { 4 } else { 0 } + payload + (4 - payload % 4) % 4 + 4
}

/// The 40-byte GRH area of a UD receive.
pub fn grh(
    kind: GidKind,
    sgid: &[u8; 16],
    dgid: &[u8; 16],
    tclass: u8,
    hop: u8,
    payload: usize,
    imm: bool,
) -> [u8; 40] {
    match kind {
        GidKind::RoceV2 => swrdma_roce::grh(gid_ip(sgid), gid_ip(dgid), tclass, hop, ud_udp_len(payload, imm)),
        GidKind::RoceV1 => {
            let mut g = [0u8; 40];
            g[0] = 0x60 | (tclass >> 4);
            g[1] = tclass << 4;
            // Payload length: what follows the GRH (BTH, DETH, immediate,
            // data, pad, ICRC) but not the VCRC.
            let paylen = (ud_udp_len(payload, imm)) as u16;
            g[4..6].copy_from_slice(&paylen.to_be_bytes());
            g[6] = 0x1b;
            g[7] = hop;
            g[8..24].copy_from_slice(sgid);
            g[24..40].copy_from_slice(dgid);
            g
        }
    }
}
