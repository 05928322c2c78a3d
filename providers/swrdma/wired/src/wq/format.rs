//! The entries of the work queues: send WQEs (SQ), receive WQEs (RQ and
//! SRQ) and CQEs (CQ).  Pure encoding and decoding, no I/O.  Decoding takes
//! a private copy of an entry (what [`super::Consumer::try_pop`] wrote) and
//! gives a typed value whose every field was checked; encoding checks the
//! same rules, so what encodes decodes to the same value.
//!
//! All integers are little-endian; offsets are from the start of the entry
//! (the slot's bytes after its 16-byte header, [`SLOT_HEADER`]).
//! "Reserved" bytes are written as 0 and must read as 0.
//!
//! # Send WQE
//!
//! A fixed core, then the sections its opcode and its queue's transport
//! call for, in this order, then the data.  Entries are only as long as
//! what they carry, so a connected SEND or WRITE with one SGE (or up to
//! 24 inline bytes for a SEND) fits a 64-byte slot: one cache line.
//!
//! Core (24 bytes):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | `wr_id` |
//! | 8 | 1 | opcode: the `ibv_wr_opcode` value |
//! | 9 | 1 | sections: 1 = UD, 2 = XRC (the queue's transport); 0x80 = direct (a connected queue's request whose only packet the client sent itself: `wq/mod.rs`, "Direct transmit"); no other bit |
//! | 10 | 2 | count: SGEs, or inline bytes when `send_flags` has `IBV_SEND_INLINE` |
//! | 12 | 4 | `send_flags` (`IBV_SEND_*` bits only) |
//! | 16 | 4 | immediate data (`*_WITH_IMM`, as `ibv_send_wr` holds it) or the rkey to invalidate (`SEND_WITH_INV`, `LOCAL_INV`); else reserved |
//! | 20 | 4 | rkey: the remote key (RDMA, atomics) or the new rkey (`BIND_MW`); else reserved |
//!
//! Then, by opcode (at most one):
//!
//! | opcodes | size | fields |
//! |---|---|---|
//! | `RDMA_WRITE`, `RDMA_WRITE_WITH_IMM`, `RDMA_READ`, `ATOMIC_WRITE` | 8 | remote address |
//! | `ATOMIC_CMP_AND_SWP`, `ATOMIC_FETCH_AND_ADD` | 24 | remote address, compare_add, swap (reserved for fetch-and-add) |
//! | `BIND_MW` | 32 | address (8), length (8), the window's handle (4), the MR's lkey (4), access flags (4), reserved (4) |
//!
//! Then, on a UD queue, the UD section (32 bytes):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | remote QPN (24 bits) |
//! | 4 | 4 | remote Q_Key |
//! | 8 | 16 | destination GID |
//! | 24 | 4 | flow label (20 bits) |
//! | 28 | 1 | source GID index |
//! | 29 | 1 | hop limit |
//! | 30 | 1 | traffic class |
//! | 31 | 1 | `is_global` (0 or 1) |
//!
//! Then, on an XRC queue, the XRC section (8 bytes): the remote SRQ
//! number (4, 24 bits), reserved (4).
//!
//! Then the data: `count` SGEs of 16 bytes (address 8, length 4, lkey 4),
//! or `count` inline bytes.  Nothing may follow.
//!
//! # Receive WQE (RQ, SRQ)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | `wr_id` |
//! | 8 | 4 | number of SGEs |
//! | 12 | 4 | reserved |
//! | 16 | 16 each | the SGEs, as above |
//!
//! # CQE (40 bytes: a 64-byte slot holds one)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | `wr_id` |
//! | 8 | 1 | status (`ibv_wc_status`) |
//! | 9 | 1 | opcode (`ibv_wc_opcode`) |
//! | 10 | 2 | `pkey_index` |
//! | 12 | 4 | `vendor_err` |
//! | 16 | 4 | `byte_len` |
//! | 20 | 4 | `imm_data` / `invalidated_rkey` (as `ibv_wc` holds it) |
//! | 24 | 4 | `qp_num` (24 bits) |
//! | 28 | 4 | `src_qp` (24 bits) |
//! | 32 | 4 | `wc_flags` (`GRH`, `WITH_IMM`, `IP_CSUM_OK`, `WITH_INV`; not both `WITH_IMM` and `WITH_INV`) |
//! | 36 | 2 | `slid` |
//! | 38 | 1 | `sl` (4 bits) |
//! | 39 | 1 | `dlid_path_bits` (7 bits) |

use super::slots::{MAX_SLOT, SLOT_HEADER};
use ibverbs_abi::verbs::*;

/// Bytes of an SGE in an entry.
pub const SGE_BYTES: usize = 16;
/// Bytes of a send WQE's core.
pub const SEND_CORE: usize = 24;
/// The most bytes a send WQE's sections take (a `BIND_MW` on a UD queue:
/// structurally allowed; which opcodes a transport takes is the agent's
/// check).
pub const SEND_SECTIONS_MAX: usize = BIND_SECTION + UD_SECTION;
/// Bytes of a receive WQE before its SGEs.
pub const RECV_FIXED: usize = 16;
/// Bytes of a CQE.
pub const CQE_BYTES: usize = 40;
/// The slot size of a CQ.
pub const CQE_SLOT: usize = 64;
const _: () = assert!(SLOT_HEADER + CQE_BYTES <= CQE_SLOT);

/// Bytes of the remote-address section (RDMA, `ATOMIC_WRITE`).
pub const RDMA_SECTION: usize = 8;
/// Bytes of the atomics' section.
pub const ATOMIC_SECTION: usize = 24;
/// Bytes of the `BIND_MW` section.
pub const BIND_SECTION: usize = 32;
/// Bytes of the UD section.
pub const UD_SECTION: usize = 32;
/// Bytes of the XRC section.
pub const XRC_SECTION: usize = 8;

/// The sections byte's bits.
const PART_UD: u8 = 1;
const PART_XRC: u8 = 2;
/// In the sections byte of a connected queue's entry: the client sent the
/// request's only packet itself, with the direct-transmit window's PSN
/// (`wq/mod.rs`, "Direct transmit").
const PART_DIRECT: u8 = 0x80;

/// Marks an encoded send entry (of a connected queue) direct.
pub fn mark_direct(entry: &mut [u8]) {
    if let Some(b) = entry.get_mut(9) {
        *b |= PART_DIRECT;
    }
}

/// Whether an encoded send entry is marked direct.
pub fn is_direct(entry: &[u8]) -> bool {
    entry.get(9).is_some_and(|b| b & PART_DIRECT != 0)
}

/// The `send_flags` bits an entry may carry.
pub const SEND_FLAGS: u32 =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE | IBV_SEND_IP_CSUM;
/// The `wc_flags` bits a CQE may carry.
pub const WC_FLAGS: u32 = IBV_WC_GRH | IBV_WC_WITH_IMM | IBV_WC_IP_CSUM_OK | IBV_WC_WITH_INV;
/// The largest QP or SRQ number (24 bits).
pub const MAX_QPN: u32 = 0xff_ffff;
/// The largest flow label (20 bits).
pub const MAX_FLOW_LABEL: u32 = 0xf_ffff;

fn round64(n: usize) -> usize {
    (n + 63) & !63
}

/// The slot size of a send queue whose QP takes `max_sge` SGEs and
/// `max_inline` inline bytes per request, or None when that is over
/// [`MAX_SLOT`].
pub fn send_slot_size(max_sge: u32, max_inline: u32) -> Option<usize> {
    let data = (max_sge as usize).checked_mul(SGE_BYTES)?.max(max_inline as usize);
    let n = round64(SLOT_HEADER + SEND_CORE + SEND_SECTIONS_MAX + data.min(MAX_SLOT + 1));
    (n <= MAX_SLOT).then_some(n)
}

/// The slot size of a receive queue (RQ or SRQ) of `max_sge` SGEs per
/// request, or None when that is over [`MAX_SLOT`].
pub fn recv_slot_size(max_sge: u32) -> Option<usize> {
    let data = (max_sge as usize).checked_mul(SGE_BYTES)?.min(MAX_SLOT + 1);
    let n = round64(SLOT_HEADER + RECV_FIXED + data);
    (n <= MAX_SLOT).then_some(n)
}

/// Why an entry does not encode or decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatError {
    /// The entry is shorter or longer than its fields say.
    Length,
    /// An opcode this format does not know.
    Opcode(u32),
    /// A flag bit this format does not take (or inconsistent flags).
    Flags(u32),
    /// The sections do not match the queue's transport (or an unknown
    /// section bit).
    Parts,
    /// More SGEs than the queue takes.
    Sges(u32),
    /// More inline bytes than the queue takes.
    Inline(u32),
    /// A reserved field is not 0.
    Reserved,
    /// A field outside its range (named).
    Range(&'static str),
    /// An SGE or a window whose range wraps around, or SGEs longer than
    /// 4 GiB - 1 bytes in all.
    Overflow,
    /// (Encoding) the output has no room for the entry.
    NoRoom,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::Length => write!(f, "entry length does not match its fields"),
            FormatError::Opcode(o) => write!(f, "unknown opcode {o}"),
            FormatError::Flags(x) => write!(f, "flags {x:#x} not allowed"),
            FormatError::Parts => write!(f, "sections do not match the queue"),
            FormatError::Sges(n) => write!(f, "{n} SGEs: more than the queue takes"),
            FormatError::Inline(n) => write!(f, "{n} inline bytes: more than the queue takes"),
            FormatError::Reserved => write!(f, "a reserved field is not 0"),
            FormatError::Range(what) => write!(f, "{what} out of range"),
            FormatError::Overflow => write!(f, "an address range wraps around or is too long"),
            FormatError::NoRoom => write!(f, "no room for the entry"),
        }
    }
}

impl std::error::Error for FormatError {}

/// A cursor reading little-endian integers from an entry; running past its
/// end is [`FormatError::Length`].
struct Rd<'a>(&'a [u8]);

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        if n > self.0.len() {
            return Err(FormatError::Length);
        }
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        Ok(h)
    }

    fn arr<const N: usize>(&mut self) -> Result<[u8; N], FormatError> {
        let (h, t) = self.0.split_first_chunk::<N>().ok_or(FormatError::Length)?;
        self.0 = t;
        Ok(*h)
    }

    fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.arr::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, FormatError> {
        self.arr().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32, FormatError> {
        self.arr().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, FormatError> {
        self.arr().map(u64::from_le_bytes)
    }

    /// A reserved 32-bit field: it must be 0.
    fn zero32(&mut self) -> Result<(), FormatError> {
        if self.u32()? != 0 {
            return Err(FormatError::Reserved);
        }
        Ok(())
    }

    /// Nothing may follow.
    fn end(&self) -> Result<(), FormatError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(FormatError::Length)
        }
    }
}

/// A cursor writing into an output buffer; running past its end is
/// [`FormatError::NoRoom`].
struct Wr<'a> {
    b: &'a mut [u8],
    pos: usize,
}

impl Wr<'_> {
    fn put(&mut self, s: &[u8]) -> Result<(), FormatError> {
        let end = self.pos.checked_add(s.len()).ok_or(FormatError::NoRoom)?;
        self.b
            .get_mut(self.pos..end)
            .ok_or(FormatError::NoRoom)?
            .copy_from_slice(s);
        self.pos = end;
        Ok(())
    }

    fn u8(&mut self, v: u8) -> Result<(), FormatError> {
        self.put(&[v])
    }

    fn u16(&mut self, v: u16) -> Result<(), FormatError> {
        self.put(&v.to_le_bytes())
    }

    fn u32(&mut self, v: u32) -> Result<(), FormatError> {
        self.put(&v.to_le_bytes())
    }

    fn u64(&mut self, v: u64) -> Result<(), FormatError> {
        self.put(&v.to_le_bytes())
    }
}

/// One scatter/gather element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sge {
    /// The address in the client.
    pub addr: u64,
    /// Its length in bytes.
    pub length: u32,
    /// The local key of the MR it is in.
    pub lkey: u32,
}

impl From<ibv_sge> for Sge {
    fn from(s: ibv_sge) -> Sge {
        Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        }
    }
}

impl Sge {
    fn read(r: &mut Rd<'_>) -> Result<Sge, FormatError> {
        Ok(Sge {
            addr: r.u64()?,
            length: r.u32()?,
            lkey: r.u32()?,
        })
    }
}

/// A list of SGEs: the caller's (to encode) or an entry's (decoded, read
/// in place from the private copy).
#[derive(Clone, Copy)]
pub struct SgeList<'a>(SgeRepr<'a>);

#[derive(Clone, Copy)]
enum SgeRepr<'a> {
    Ours(&'a [Sge]),
    Verbs(&'a [ibv_sge]),
    /// `SGE_BYTES` per SGE (a length checked when decoding).
    Encoded(&'a [u8]),
}

impl<'a> SgeList<'a> {
    /// A list of [`Sge`]s.
    pub fn new(s: &'a [Sge]) -> SgeList<'a> {
        SgeList(SgeRepr::Ours(s))
    }

    /// The SGEs of an `ibv_send_wr` or `ibv_recv_wr`.
    pub fn from_verbs(s: &'a [ibv_sge]) -> SgeList<'a> {
        SgeList(SgeRepr::Verbs(s))
    }

    /// The number of SGEs.
    pub fn len(&self) -> usize {
        match self.0 {
            SgeRepr::Ours(s) => s.len(),
            SgeRepr::Verbs(s) => s.len(),
            SgeRepr::Encoded(b) => b.len() / SGE_BYTES,
        }
    }

    /// No SGE.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SGE `i`.
    pub fn get(&self, i: usize) -> Option<Sge> {
        match self.0 {
            SgeRepr::Ours(s) => s.get(i).copied(),
            SgeRepr::Verbs(s) => s.get(i).map(|&x| x.into()),
            SgeRepr::Encoded(b) => {
                let at = i.checked_mul(SGE_BYTES)?;
                Sge::read(&mut Rd(b.get(at..)?)).ok()
            }
        }
    }

    /// The SGEs in order.
    pub fn iter(&self) -> impl Iterator<Item = Sge> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The list as the verbs' SGEs.
    pub fn to_verbs(&self) -> Vec<ibv_sge> {
        self.iter()
            .map(|s| ibv_sge {
                addr: s.addr,
                length: s.length,
                lkey: s.lkey,
            })
            .collect()
    }

    /// The sum of the lengths (checked not to exceed `u32::MAX` in a
    /// decoded or encoded entry).
    pub fn total(&self) -> u64 {
        self.iter().map(|s| s.length as u64).sum()
    }

    /// Each SGE's range must not wrap around, and all of them together be
    /// at most `u32::MAX` bytes.
    fn check(&self, max: u32) -> Result<(), FormatError> {
        if self.len() > max as usize {
            return Err(FormatError::Sges(self.len().min(u32::MAX as usize) as u32));
        }
        let mut total = 0u64;
        for s in self.iter() {
            if s.addr.checked_add(s.length as u64).is_none() {
                return Err(FormatError::Overflow);
            }
            total += s.length as u64;
        }
        if total > u32::MAX as u64 {
            return Err(FormatError::Overflow);
        }
        Ok(())
    }

    fn write(&self, w: &mut Wr<'_>) -> Result<(), FormatError> {
        for s in self.iter() {
            w.u64(s.addr)?;
            w.u32(s.length)?;
            w.u32(s.lkey)?;
        }
        Ok(())
    }
}

impl PartialEq for SgeList<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.len() == o.len() && self.iter().eq(o.iter())
    }
}

impl std::fmt::Debug for SgeList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The remote side of an RDMA or atomic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Remote {
    /// The remote address.
    pub addr: u64,
    /// The remote key.
    pub rkey: u32,
}

/// What a `BIND_MW` request binds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MwBind {
    /// The memory window (its handle in the client's context).
    pub mw: u32,
    /// The lkey of the MR the window is bound to.
    pub mr_lkey: u32,
    /// The window's start.
    pub addr: u64,
    /// The window's length (`addr + length` must not wrap around).
    pub length: u64,
    /// The window's `ibv_access_flags` (checked by the agent's keys).
    pub access: u32,
}

/// A send WQE's operation and its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOp {
    /// `IBV_WR_SEND`
    Send,
    /// `IBV_WR_SEND_WITH_IMM` (the immediate data as `ibv_send_wr` holds it)
    SendWithImm {
        /// The immediate data.
        imm: u32,
    },
    /// `IBV_WR_SEND_WITH_INV`
    SendWithInv {
        /// The rkey the responder invalidates.
        rkey: u32,
    },
    /// `IBV_WR_RDMA_WRITE`
    RdmaWrite(Remote),
    /// `IBV_WR_RDMA_WRITE_WITH_IMM`
    RdmaWriteWithImm(Remote, u32),
    /// `IBV_WR_RDMA_READ`
    RdmaRead(Remote),
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`
    CompareAndSwap {
        /// Where.
        remote: Remote,
        /// The value compared with.
        compare: u64,
        /// The value stored when equal.
        swap: u64,
    },
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`
    FetchAndAdd {
        /// Where.
        remote: Remote,
        /// The value added.
        add: u64,
    },
    /// `IBV_WR_ATOMIC_WRITE` (the 8 bytes come from the data)
    AtomicWrite(Remote),
    /// `IBV_WR_LOCAL_INV`
    LocalInv {
        /// The key invalidated.
        rkey: u32,
    },
    /// `IBV_WR_BIND_MW`
    BindMw {
        /// The window's new rkey.
        rkey: u32,
        /// What it binds.
        bind: MwBind,
    },
}

impl SendOp {
    /// The `ibv_wr_opcode` value.
    pub fn opcode(&self) -> u32 {
        match self {
            SendOp::Send => IBV_WR_SEND,
            SendOp::SendWithImm { .. } => IBV_WR_SEND_WITH_IMM,
            SendOp::SendWithInv { .. } => IBV_WR_SEND_WITH_INV,
            SendOp::RdmaWrite(_) => IBV_WR_RDMA_WRITE,
            SendOp::RdmaWriteWithImm(..) => IBV_WR_RDMA_WRITE_WITH_IMM,
            SendOp::RdmaRead(_) => IBV_WR_RDMA_READ,
            SendOp::CompareAndSwap { .. } => IBV_WR_ATOMIC_CMP_AND_SWP,
            SendOp::FetchAndAdd { .. } => IBV_WR_ATOMIC_FETCH_AND_ADD,
            SendOp::AtomicWrite(_) => IBV_WR_ATOMIC_WRITE,
            SendOp::LocalInv { .. } => IBV_WR_LOCAL_INV,
            SendOp::BindMw { .. } => IBV_WR_BIND_MW,
        }
    }

    /// The core's immediate and rkey fields.
    fn core_words(&self) -> (u32, u32) {
        match *self {
            SendOp::SendWithImm { imm } => (imm, 0),
            SendOp::SendWithInv { rkey } | SendOp::LocalInv { rkey } => (rkey, 0),
            SendOp::RdmaWrite(r) | SendOp::RdmaRead(r) | SendOp::AtomicWrite(r) => (0, r.rkey),
            SendOp::RdmaWriteWithImm(r, imm) => (imm, r.rkey),
            SendOp::CompareAndSwap { remote, .. } | SendOp::FetchAndAdd { remote, .. } => (0, remote.rkey),
            SendOp::BindMw { rkey, .. } => (0, rkey),
            SendOp::Send => (0, 0),
        }
    }

    /// Checks the ranges of the operands.
    fn check(&self) -> Result<(), FormatError> {
        if let SendOp::BindMw { bind, .. } = self {
            if bind.addr.checked_add(bind.length).is_none() {
                return Err(FormatError::Overflow);
            }
        }
        Ok(())
    }

    fn write_section(&self, w: &mut Wr<'_>) -> Result<(), FormatError> {
        match *self {
            SendOp::RdmaWrite(r) | SendOp::RdmaRead(r) | SendOp::AtomicWrite(r) | SendOp::RdmaWriteWithImm(r, _) => {
                w.u64(r.addr)
            }
            SendOp::CompareAndSwap { remote, compare, swap } => {
                w.u64(remote.addr)?;
                w.u64(compare)?;
                w.u64(swap)
            }
            SendOp::FetchAndAdd { remote, add } => {
                w.u64(remote.addr)?;
                w.u64(add)?;
                w.u64(0)
            }
            SendOp::BindMw { bind, .. } => {
                w.u64(bind.addr)?;
                w.u64(bind.length)?;
                w.u32(bind.mw)?;
                w.u32(bind.mr_lkey)?;
                w.u32(bind.access)?;
                w.u32(0)
            }
            SendOp::Send | SendOp::SendWithImm { .. } | SendOp::SendWithInv { .. } | SendOp::LocalInv { .. } => Ok(()),
        }
    }

    /// Reads the operation of `opcode` from the core's fields and its
    /// section; fields it does not use must be 0.
    fn read(opcode: u8, imm: u32, rkey: u32, r: &mut Rd<'_>) -> Result<SendOp, FormatError> {
        let op = opcode as u32;
        let (uses_imm, uses_rkey) = match op {
            IBV_WR_SEND => (false, false),
            IBV_WR_SEND_WITH_IMM | IBV_WR_SEND_WITH_INV | IBV_WR_LOCAL_INV => (true, false),
            IBV_WR_RDMA_WRITE_WITH_IMM => (true, true),
            IBV_WR_RDMA_WRITE
            | IBV_WR_RDMA_READ
            | IBV_WR_ATOMIC_WRITE
            | IBV_WR_ATOMIC_CMP_AND_SWP
            | IBV_WR_ATOMIC_FETCH_AND_ADD
            | IBV_WR_BIND_MW => (false, true),
            _ => return Err(FormatError::Opcode(op)),
        };
        if (!uses_imm && imm != 0) || (!uses_rkey && rkey != 0) {
            return Err(FormatError::Reserved);
        }
        let remote = |addr| Remote { addr, rkey };
        Ok(match op {
            IBV_WR_SEND => SendOp::Send,
            IBV_WR_SEND_WITH_IMM => SendOp::SendWithImm { imm },
            IBV_WR_SEND_WITH_INV => SendOp::SendWithInv { rkey: imm },
            IBV_WR_LOCAL_INV => SendOp::LocalInv { rkey: imm },
            IBV_WR_RDMA_WRITE => SendOp::RdmaWrite(remote(r.u64()?)),
            IBV_WR_RDMA_WRITE_WITH_IMM => SendOp::RdmaWriteWithImm(remote(r.u64()?), imm),
            IBV_WR_RDMA_READ => SendOp::RdmaRead(remote(r.u64()?)),
            IBV_WR_ATOMIC_WRITE => SendOp::AtomicWrite(remote(r.u64()?)),
            IBV_WR_ATOMIC_CMP_AND_SWP => SendOp::CompareAndSwap {
                remote: remote(r.u64()?),
                compare: r.u64()?,
                swap: r.u64()?,
            },
            IBV_WR_ATOMIC_FETCH_AND_ADD => {
                let (addr, add) = (r.u64()?, r.u64()?);
                if r.u64()? != 0 {
                    return Err(FormatError::Reserved);
                }
                SendOp::FetchAndAdd {
                    remote: remote(addr),
                    add,
                }
            }
            IBV_WR_BIND_MW => {
                let (addr, length, mw, mr_lkey, access) = (r.u64()?, r.u64()?, r.u32()?, r.u32()?, r.u32()?);
                r.zero32()?;
                let bind = MwBind {
                    mw,
                    mr_lkey,
                    addr,
                    length,
                    access,
                };
                SendOp::BindMw { rkey, bind }
            }
            _ => return Err(FormatError::Opcode(op)),
        })
    }
}

/// The address of a UD request (from its address handle, and the
/// request's remote QPN and Q_Key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdAddr {
    /// The destination QP (24 bits).
    pub remote_qpn: u32,
    /// The destination's Q_Key.
    pub remote_qkey: u32,
    /// The destination GID.
    pub dgid: [u8; 16],
    /// The flow label (20 bits).
    pub flow_label: u32,
    /// The source GID's index.
    pub sgid_index: u8,
    /// The hop limit.
    pub hop_limit: u8,
    /// The traffic class.
    pub traffic_class: u8,
    /// The address handle has a GRH.
    pub is_global: bool,
}

impl UdAddr {
    fn check(&self) -> Result<(), FormatError> {
        if self.remote_qpn > MAX_QPN {
            return Err(FormatError::Range("remote QPN"));
        }
        if self.flow_label > MAX_FLOW_LABEL {
            return Err(FormatError::Range("flow label"));
        }
        Ok(())
    }

    fn write(&self, w: &mut Wr<'_>) -> Result<(), FormatError> {
        w.u32(self.remote_qpn)?;
        w.u32(self.remote_qkey)?;
        w.put(&self.dgid)?;
        w.u32(self.flow_label)?;
        w.put(&[
            self.sgid_index,
            self.hop_limit,
            self.traffic_class,
            self.is_global as u8,
        ])
    }

    fn read(r: &mut Rd<'_>) -> Result<UdAddr, FormatError> {
        let (remote_qpn, remote_qkey, dgid, flow_label) = (r.u32()?, r.u32()?, r.arr::<16>()?, r.u32()?);
        let [sgid_index, hop_limit, traffic_class, g] = r.arr::<4>()?;
        if g > 1 {
            return Err(FormatError::Range("is_global"));
        }
        Ok(UdAddr {
            remote_qpn,
            remote_qkey,
            dgid,
            flow_label,
            sgid_index,
            hop_limit,
            traffic_class,
            is_global: g == 1,
        })
    }
}

/// A send request's local data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Data<'a> {
    /// A gather (or, for READ and atomics, scatter) list.
    Sges(SgeList<'a>),
    /// Inline bytes (`IBV_SEND_INLINE`).
    Inline(&'a [u8]),
}

/// The transport of a send queue's QP, as far as the format cares: which
/// sections its entries carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpKind {
    /// RC or UC: no section.
    Connected,
    /// UD: the UD section.
    Ud,
    /// An XRC initiator: the XRC section.
    Xrc,
}

impl QpKind {
    /// The sections byte of this transport's entries.
    fn parts(self) -> u8 {
        match self {
            QpKind::Connected => 0,
            QpKind::Ud => PART_UD,
            QpKind::Xrc => PART_XRC,
        }
    }
}

/// What a send queue takes, fixed when the QP is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendShape {
    /// The QP's transport.
    pub kind: QpKind,
    /// SGEs per request.
    pub max_sge: u32,
    /// Inline bytes per request.
    pub max_inline: u32,
}

impl SendShape {
    /// The slot size of this queue ([`send_slot_size`]).
    pub fn slot_size(&self) -> Option<usize> {
        send_slot_size(self.max_sge, self.max_inline)
    }
}

/// A send WQE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SendWqe<'a> {
    /// The application's id.
    pub wr_id: u64,
    /// The operation.
    pub op: SendOp,
    /// `IBV_SEND_*` bits; `IBV_SEND_INLINE` exactly when `data` is inline.
    pub send_flags: u32,
    /// The address (exactly on a UD queue).
    pub ud: Option<UdAddr>,
    /// The remote SRQ (exactly on an XRC queue; 24 bits).
    pub xrc_srqn: Option<u32>,
    /// The local data.
    pub data: Data<'a>,
}

impl SendWqe<'_> {
    /// Checks every rule the decoder checks.
    fn check(&self, shape: &SendShape) -> Result<(), FormatError> {
        if self.send_flags & !SEND_FLAGS != 0 {
            return Err(FormatError::Flags(self.send_flags));
        }
        let inline = self.send_flags & IBV_SEND_INLINE != 0;
        match self.data {
            Data::Inline(b) if inline => {
                if b.len() > shape.max_inline as usize || b.len() > u16::MAX as usize {
                    return Err(FormatError::Inline(b.len().min(u32::MAX as usize) as u32));
                }
            }
            Data::Sges(s) if !inline => s.check(shape.max_sge.min(u16::MAX as u32))?,
            _ => return Err(FormatError::Flags(self.send_flags)),
        }
        let parts_ok = match shape.kind {
            QpKind::Connected => self.ud.is_none() && self.xrc_srqn.is_none(),
            QpKind::Ud => self.ud.is_some() && self.xrc_srqn.is_none(),
            QpKind::Xrc => self.ud.is_none() && self.xrc_srqn.is_some(),
        };
        if !parts_ok {
            return Err(FormatError::Parts);
        }
        if let Some(ud) = &self.ud {
            ud.check()?;
        }
        if self.xrc_srqn.is_some_and(|n| n > MAX_QPN) {
            return Err(FormatError::Range("remote SRQ number"));
        }
        self.op.check()
    }
}

/// Encodes `w`, a request for a queue of `shape`, into `out`: the entry's
/// length.
pub fn encode_send(w: &SendWqe<'_>, shape: &SendShape, out: &mut [u8]) -> Result<usize, FormatError> {
    w.check(shape)?;
    let count = match w.data {
        Data::Inline(b) => b.len(),
        Data::Sges(s) => s.len(),
    };
    let (imm, rkey) = w.op.core_words();
    let mut o = Wr { b: out, pos: 0 };
    o.u64(w.wr_id)?;
    o.u8(w.op.opcode() as u8)?;
    o.u8(shape.kind.parts())?;
    o.u16(count as u16)?;
    o.u32(w.send_flags)?;
    o.u32(imm)?;
    o.u32(rkey)?;
    w.op.write_section(&mut o)?;
    if let Some(ud) = &w.ud {
        ud.write(&mut o)?;
    }
    if let Some(n) = w.xrc_srqn {
        o.u32(n)?;
        o.u32(0)?;
    }
    match w.data {
        Data::Inline(b) => o.put(b)?,
        Data::Sges(s) => s.write(&mut o)?,
    }
    Ok(o.pos)
}

/// Decodes a send WQE (the whole entry, `buf`) of a queue of `shape`.
pub fn decode_send<'a>(buf: &'a [u8], shape: &SendShape) -> Result<SendWqe<'a>, FormatError> {
    let mut r = Rd(buf);
    let wr_id = r.u64()?;
    let [opcode, parts] = r.arr::<2>()?;
    let (count, send_flags, imm, rkey) = (r.u16()?, r.u32()?, r.u32()?, r.u32()?);
    if send_flags & !SEND_FLAGS != 0 {
        return Err(FormatError::Flags(send_flags));
    }
    // (Direct: connected queues only.)
    let parts = match shape.kind {
        QpKind::Connected => parts & !PART_DIRECT,
        _ => parts,
    };
    if parts != shape.kind.parts() {
        return Err(FormatError::Parts);
    }
    let op = SendOp::read(opcode, imm, rkey, &mut r)?;
    let ud = if parts & PART_UD != 0 {
        Some(UdAddr::read(&mut r)?)
    } else {
        None
    };
    let xrc_srqn = if parts & PART_XRC != 0 {
        let n = r.u32()?;
        r.zero32()?;
        Some(n)
    } else {
        None
    };
    let data = if send_flags & IBV_SEND_INLINE != 0 {
        if count as u32 > shape.max_inline {
            return Err(FormatError::Inline(count as u32));
        }
        Data::Inline(r.take(count as usize)?)
    } else {
        if count as u32 > shape.max_sge {
            return Err(FormatError::Sges(count as u32));
        }
        Data::Sges(SgeList(SgeRepr::Encoded(r.take(count as usize * SGE_BYTES)?)))
    };
    r.end()?;
    let w = SendWqe {
        wr_id,
        op,
        send_flags,
        ud,
        xrc_srqn,
        data,
    };
    w.check(shape)?;
    Ok(w)
}

/// A receive WQE (RQ or SRQ).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecvWqe<'a> {
    /// The application's id.
    pub wr_id: u64,
    /// Where a message goes.
    pub sges: SgeList<'a>,
}

/// Encodes `w`, a request for a queue of `max_sge` SGEs per request, into
/// `out`: the entry's length.
pub fn encode_recv(w: &RecvWqe<'_>, max_sge: u32, out: &mut [u8]) -> Result<usize, FormatError> {
    w.sges.check(max_sge)?;
    let mut o = Wr { b: out, pos: 0 };
    o.u64(w.wr_id)?;
    o.u32(w.sges.len() as u32)?;
    o.u32(0)?;
    w.sges.write(&mut o)?;
    Ok(o.pos)
}

/// Decodes a receive WQE (the whole entry, `buf`) of a queue of `max_sge`
/// SGEs per request.
pub fn decode_recv(buf: &[u8], max_sge: u32) -> Result<RecvWqe<'_>, FormatError> {
    let mut r = Rd(buf);
    let wr_id = r.u64()?;
    let n = r.u32()?;
    r.zero32()?;
    if n > max_sge {
        return Err(FormatError::Sges(n));
    }
    let sges = SgeList(SgeRepr::Encoded(r.take(n as usize * SGE_BYTES)?));
    r.end()?;
    sges.check(max_sge)?;
    Ok(RecvWqe { wr_id, sges })
}

/// A completion: every field of `ibv_wc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cqe {
    /// `wr_id`
    pub wr_id: u64,
    /// `status` (an `ibv_wc_status`)
    pub status: u32,
    /// `opcode` (an `ibv_wc_opcode` this device completes)
    pub opcode: u32,
    /// `vendor_err`
    pub vendor_err: u32,
    /// `byte_len`
    pub byte_len: u32,
    /// `imm_data` or `invalidated_rkey`, as `ibv_wc` holds it
    pub imm: u32,
    /// `qp_num` (24 bits)
    pub qp_num: u32,
    /// `src_qp` (24 bits)
    pub src_qp: u32,
    /// `wc_flags` ([`WC_FLAGS`] bits)
    pub wc_flags: u32,
    /// `pkey_index`
    pub pkey_index: u16,
    /// `slid`
    pub slid: u16,
    /// `sl` (4 bits)
    pub sl: u8,
    /// `dlid_path_bits` (7 bits)
    pub dlid_path_bits: u8,
}

/// The `ibv_wc_opcode` values a CQE may carry: those this device completes.
const WC_OPCODES: [u32; 10] = [
    IBV_WC_SEND,
    IBV_WC_RDMA_WRITE,
    IBV_WC_RDMA_READ,
    IBV_WC_COMP_SWAP,
    IBV_WC_FETCH_ADD,
    IBV_WC_BIND_MW,
    IBV_WC_LOCAL_INV,
    IBV_WC_ATOMIC_WRITE,
    IBV_WC_RECV,
    IBV_WC_RECV_RDMA_WITH_IMM,
];

impl Cqe {
    /// The completion as `ibv_poll_cq` returns it.
    pub fn to_wc(&self) -> ibv_wc {
        ibv_wc {
            wr_id: self.wr_id,
            status: self.status,
            opcode: self.opcode,
            vendor_err: self.vendor_err,
            byte_len: self.byte_len,
            imm: ibv_wc_imm { imm_data: self.imm },
            qp_num: self.qp_num,
            src_qp: self.src_qp,
            wc_flags: self.wc_flags,
            pkey_index: self.pkey_index,
            slid: self.slid,
            sl: self.sl,
            dlid_path_bits: self.dlid_path_bits,
        }
    }

    /// A completion from an `ibv_wc`.
    pub fn from_wc(wc: &ibv_wc) -> Cqe {
        Cqe {
            wr_id: wc.wr_id,
            status: wc.status,
            opcode: wc.opcode,
            vendor_err: wc.vendor_err,
            byte_len: wc.byte_len,
            // SAFETY: both members of the union are a `u32`.
            imm: unsafe { wc.imm.imm_data },
            qp_num: wc.qp_num,
            src_qp: wc.src_qp,
            wc_flags: wc.wc_flags,
            pkey_index: wc.pkey_index,
            slid: wc.slid,
            sl: wc.sl,
            dlid_path_bits: wc.dlid_path_bits,
        }
    }

    fn check(&self) -> Result<(), FormatError> {
        if self.status > IBV_WC_TM_RNDV_INCOMPLETE {
            return Err(FormatError::Range("status"));
        }
        if !WC_OPCODES.contains(&self.opcode) {
            return Err(FormatError::Opcode(self.opcode));
        }
        let both = IBV_WC_WITH_IMM | IBV_WC_WITH_INV;
        if self.wc_flags & !WC_FLAGS != 0 || self.wc_flags & both == both {
            return Err(FormatError::Flags(self.wc_flags));
        }
        if self.qp_num > MAX_QPN {
            return Err(FormatError::Range("qp_num"));
        }
        if self.src_qp > MAX_QPN {
            return Err(FormatError::Range("src_qp"));
        }
        if self.sl > 15 {
            return Err(FormatError::Range("sl"));
        }
        if self.dlid_path_bits > 127 {
            return Err(FormatError::Range("dlid_path_bits"));
        }
        Ok(())
    }
}

/// Encodes `c` into `out`: its length ([`CQE_BYTES`]).
pub fn encode_cqe(c: &Cqe, out: &mut [u8]) -> Result<usize, FormatError> {
    c.check()?;
    let mut o = Wr { b: out, pos: 0 };
    o.u64(c.wr_id)?;
    o.u8(c.status as u8)?;
    o.u8(c.opcode as u8)?;
    o.u16(c.pkey_index)?;
    for v in [c.vendor_err, c.byte_len, c.imm, c.qp_num, c.src_qp, c.wc_flags] {
        o.u32(v)?;
    }
    o.u16(c.slid)?;
    o.u8(c.sl)?;
    o.u8(c.dlid_path_bits)?;
    Ok(o.pos)
}

/// Decodes a CQE (the whole entry, `buf`).
pub fn decode_cqe(buf: &[u8]) -> Result<Cqe, FormatError> {
    let mut r = Rd(buf);
    let wr_id = r.u64()?;
    let [status, opcode] = r.arr::<2>()?;
    let pkey_index = r.u16()?;
    let [vendor_err, byte_len, imm, qp_num, src_qp, wc_flags] =
        [r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?];
    let (slid, sl, dlid_path_bits) = (r.u16()?, r.u8()?, r.u8()?);
    r.end()?;
    let c = Cqe {
        wr_id,
        status: status as u32,
        opcode: opcode as u32,
        vendor_err,
        byte_len,
        imm,
        qp_num,
        src_qp,
        wc_flags,
        pkey_index,
        slid,
        sl,
        dlid_path_bits,
    };
    c.check()?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::super::tests::Rng;
    use super::*;

    const SGES: [Sge; 3] = [
        Sge {
            addr: 0x1000,
            length: 64,
            lkey: 7,
        },
        Sge {
            addr: u64::MAX - 100,
            length: 100,
            lkey: u32::MAX,
        },
        Sge {
            addr: 0,
            length: 0,
            lkey: 0,
        },
    ];

    fn remote() -> Remote {
        Remote {
            addr: 0xdead_beef_0000,
            rkey: 0x1234_5678,
        }
    }

    /// One of each operation, with operands that are not 0.
    fn ops() -> Vec<SendOp> {
        let bind = MwBind {
            mw: 3,
            mr_lkey: 9,
            addr: 0x7000,
            length: u64::MAX - 0x7000,
            access: 0xe,
        };
        vec![
            SendOp::Send,
            SendOp::SendWithImm { imm: 0xa1b2_c3d4 },
            SendOp::SendWithInv { rkey: 0x55 },
            SendOp::RdmaWrite(remote()),
            SendOp::RdmaWriteWithImm(remote(), 0xffff_ffff),
            SendOp::RdmaRead(remote()),
            SendOp::CompareAndSwap {
                remote: remote(),
                compare: 1,
                swap: u64::MAX,
            },
            SendOp::FetchAndAdd {
                remote: remote(),
                add: 42,
            },
            SendOp::AtomicWrite(remote()),
            SendOp::LocalInv { rkey: 0x66 },
            SendOp::BindMw { rkey: 0x77, bind },
        ]
    }

    fn ud() -> UdAddr {
        UdAddr {
            remote_qpn: MAX_QPN,
            remote_qkey: 0x8001_0000,
            dgid: *b"0123456789abcdef",
            flow_label: MAX_FLOW_LABEL,
            sgid_index: 255,
            hop_limit: 64,
            traffic_class: 0xb8,
            is_global: true,
        }
    }

    fn shape(kind: QpKind) -> SendShape {
        SendShape {
            kind,
            max_sge: 3,
            max_inline: 100,
        }
    }

    /// A request of `op` for a queue of `kind`, with `data`.
    fn wqe<'a>(op: SendOp, kind: QpKind, data: Data<'a>) -> SendWqe<'a> {
        let inline = if matches!(data, Data::Inline(_)) {
            IBV_SEND_INLINE
        } else {
            0
        };
        SendWqe {
            wr_id: 0x0102_0304_0506_0708,
            op,
            send_flags: IBV_SEND_SIGNALED | IBV_SEND_FENCE | inline,
            ud: (kind == QpKind::Ud).then(ud),
            xrc_srqn: (kind == QpKind::Xrc).then_some(MAX_QPN),
            data,
        }
    }

    fn section_bytes(op: &SendOp) -> usize {
        match op {
            SendOp::RdmaWrite(_) | SendOp::RdmaWriteWithImm(..) | SendOp::RdmaRead(_) | SendOp::AtomicWrite(_) => {
                RDMA_SECTION
            }
            SendOp::CompareAndSwap { .. } | SendOp::FetchAndAdd { .. } => ATOMIC_SECTION,
            SendOp::BindMw { .. } => BIND_SECTION,
            _ => 0,
        }
    }

    /// The encoding of `w`, checked to decode to `w` and to have the
    /// length the layout gives.
    fn round_trip(w: &SendWqe<'_>, sh: &SendShape) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let n = encode_send(w, sh, &mut buf).unwrap();
        let data = match w.data {
            Data::Inline(b) => b.len(),
            Data::Sges(s) => s.len() * SGE_BYTES,
        };
        let parts = match sh.kind {
            QpKind::Connected => 0,
            QpKind::Ud => UD_SECTION,
            QpKind::Xrc => XRC_SECTION,
        };
        assert_eq!(n, SEND_CORE + section_bytes(&w.op) + parts + data, "{w:?}");
        assert!(SLOT_HEADER + n <= sh.slot_size().unwrap());
        buf.truncate(n);
        assert_eq!(decode_send(&buf, sh).as_ref(), Ok(w));
        buf
    }

    #[test]
    fn send_round_trips() {
        let inline = [0xabu8; 100];
        for kind in [QpKind::Connected, QpKind::Ud, QpKind::Xrc] {
            let sh = shape(kind);
            for op in ops() {
                assert_eq!(wqe(op, kind, Data::Inline(&[])).op.opcode() as u8 as u32, op.opcode());
                for n in 0..=3 {
                    round_trip(&wqe(op, kind, Data::Sges(SgeList::new(&SGES[..n]))), &sh);
                }
                for n in [0, 1, 7, 8, 99, 100] {
                    round_trip(&wqe(op, kind, Data::Inline(&inline[..n])), &sh);
                }
            }
        }
        // The verbs' own SGEs encode as ours.
        let v = [ibv_sge {
            addr: 5,
            length: 6,
            lkey: 7,
        }];
        let sh = shape(QpKind::Connected);
        let b = round_trip(
            &wqe(SendOp::Send, QpKind::Connected, Data::Sges(SgeList::from_verbs(&v))),
            &sh,
        );
        let d = decode_send(&b, &sh).unwrap();
        assert_eq!(
            d.data,
            Data::Sges(SgeList::new(&[Sge {
                addr: 5,
                length: 6,
                lkey: 7
            }]))
        );
        if let Data::Sges(s) = d.data {
            assert_eq!((s.len(), s.total(), s.get(1)), (1, 6, None));
        }
    }

    /// The common requests of a connected QP fit one cache line, and so do
    /// a CQE and a one-SGE receive.
    #[test]
    fn small_entries_fit_a_line() {
        let sh = shape(QpKind::Connected);
        let one = Data::Sges(SgeList::new(&SGES[..1]));
        for op in [
            SendOp::Send,
            SendOp::SendWithImm { imm: 1 },
            SendOp::RdmaWrite(remote()),
        ] {
            assert!(SLOT_HEADER + round_trip(&wqe(op, QpKind::Connected, one), &sh).len() <= 64);
        }
        let b = round_trip(&wqe(SendOp::Send, QpKind::Connected, Data::Inline(&[1; 24])), &sh);
        assert!(SLOT_HEADER + b.len() <= 64);
        let mut buf = [0u8; 64];
        let r = RecvWqe {
            wr_id: 1,
            sges: SgeList::new(&SGES[..1]),
        };
        assert!(SLOT_HEADER + encode_recv(&r, 1, &mut buf).unwrap() <= 64);
        assert_eq!(recv_slot_size(1), Some(64));
        assert_eq!(SLOT_HEADER + encode_cqe(&Cqe::default(), &mut buf).unwrap(), 56);
    }

    #[test]
    fn slot_sizes() {
        assert_eq!(send_slot_size(1, 0), Some(128));
        assert_eq!(send_slot_size(0, 0), Some(128));
        assert_eq!(send_slot_size(4, 64), Some(192));
        assert_eq!(send_slot_size(32, 1024), Some(1152));
        assert_eq!(send_slot_size(32, 256), Some(640));
        assert_eq!(send_slot_size(249, 0), Some(4096));
        assert_eq!(send_slot_size(250, 0), None);
        assert_eq!(send_slot_size(0, 3992), Some(4096));
        assert_eq!(send_slot_size(0, 3993), None);
        assert_eq!(send_slot_size(u32::MAX, u32::MAX), None);
        assert_eq!(recv_slot_size(254), Some(4096));
        assert_eq!(recv_slot_size(255), None);
        assert_eq!(recv_slot_size(u32::MAX), None);
    }

    /// Encodes a valid request, lets `patch` change its bytes, and decodes.
    fn patched(kind: QpKind, op: SendOp, patch: impl FnOnce(&mut Vec<u8>)) -> Result<(), FormatError> {
        let sh = shape(kind);
        let mut b = round_trip(&wqe(op, kind, Data::Sges(SgeList::new(&SGES[..1]))), &sh);
        patch(&mut b);
        decode_send(&b, &sh).map(|_| ())
    }

    #[test]
    fn send_rejects_each_field() {
        use FormatError::*;
        let c = QpKind::Connected;
        for o in [10u8, 11, 12, 13, 14, 16, 128, 255] {
            assert_eq!(patched(c, SendOp::Send, |b| b[8] = o), Err(Opcode(o as u32)));
        }
        assert_eq!(patched(c, SendOp::Send, |b| b[12] |= 0x20), Err(Flags(0x22 | 0x1)));
        assert_eq!(patched(c, SendOp::Send, |b| b[15] = 0x80), Err(Flags(0x8000_0003)));
        // Sections that do not match the queue, or unknown.
        for p in [1u8, 2, 3, 4, 0x40, 0x81, 0x82] {
            assert_eq!(patched(c, SendOp::Send, |b| b[9] = p), Err(Parts));
        }
        // (Direct: a connected queue's entry only.)
        assert_eq!(patched(c, SendOp::Send, |b| b[9] = 0x80), Ok(()));
        assert_eq!(patched(QpKind::Ud, SendOp::Send, |b| b[9] = 0x81), Err(Parts));
        assert_eq!(patched(QpKind::Xrc, SendOp::Send, |b| b[9] = 0x82), Err(Parts));
        assert_eq!(patched(QpKind::Ud, SendOp::Send, |b| b[9] = 0), Err(Parts));
        assert_eq!(patched(QpKind::Xrc, SendOp::Send, |b| b[9] = 1), Err(Parts));
        // Fields the opcode does not use.
        assert_eq!(patched(c, SendOp::Send, |b| b[16] = 1), Err(Reserved));
        assert_eq!(patched(c, SendOp::Send, |b| b[23] = 1), Err(Reserved));
        assert_eq!(patched(c, SendOp::RdmaRead(remote()), |b| b[19] = 1), Err(Reserved));
        assert_eq!(patched(c, SendOp::LocalInv { rkey: 1 }, |b| b[20] = 1), Err(Reserved));
        let faa = SendOp::FetchAndAdd {
            remote: remote(),
            add: 1,
        };
        assert_eq!(patched(c, faa, |b| b[24 + 16] = 1), Err(Reserved));
        let bind = ops()[10];
        assert_eq!(patched(c, bind, |b| b[24 + 31] = 1), Err(Reserved));
        assert_eq!(patched(c, bind, |b| b[24 + 9] = 0xff), Err(Overflow));
        assert_eq!(patched(QpKind::Xrc, SendOp::Send, |b| b[24 + 4] = 1), Err(Reserved));
        // Ranges.
        assert_eq!(
            patched(QpKind::Ud, SendOp::Send, |b| b[24 + 3] = 1),
            Err(Range("remote QPN"))
        );
        assert_eq!(
            patched(QpKind::Ud, SendOp::Send, |b| b[24 + 26] = 0x10),
            Err(Range("flow label"))
        );
        assert_eq!(
            patched(QpKind::Ud, SendOp::Send, |b| b[24 + 31] = 2),
            Err(Range("is_global"))
        );
        let e = patched(QpKind::Xrc, SendOp::Send, |b| b[24 + 3] = 1);
        assert_eq!(e, Err(Range("remote SRQ number")));
        // Counts: more SGEs or inline bytes than the queue takes, or than
        // the entry holds.
        assert_eq!(patched(c, SendOp::Send, |b| b[10] = 4), Err(Sges(4)));
        assert_eq!(patched(c, SendOp::Send, |b| b[11] = 1), Err(Sges(257)));
        assert_eq!(patched(c, SendOp::Send, |b| b[10] = 2), Err(Length));
        assert_eq!(patched(c, SendOp::Send, |b| b[10] = 0), Err(Length));
        assert_eq!(patched(c, SendOp::Send, |b| b[12] |= 8), Err(Length));
        assert_eq!(
            patched(c, SendOp::Send, |b| (b[12], b[10]) = (8, 101)),
            Err(Inline(101))
        );
        // An SGE that wraps around.
        assert_eq!(patched(c, SendOp::Send, |b| b[24..32].fill(0xff)), Err(Overflow));
        // Any truncation, and any byte more.
        let sh = shape(QpKind::Ud);
        let b = round_trip(&wqe(ops()[7], QpKind::Ud, Data::Sges(SgeList::new(&SGES))), &sh);
        for n in 0..b.len() {
            assert_eq!(decode_send(&b[..n], &sh), Err(Length), "{n}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(decode_send(&longer, &sh), Err(Length));
        // Encoding checks the same, and the room.
        let mut out = vec![0u8; b.len()];
        for n in 0..b.len() {
            let w = wqe(ops()[7], QpKind::Ud, Data::Sges(SgeList::new(&SGES)));
            assert_eq!(encode_send(&w, &sh, &mut out[..n]), Err(NoRoom));
        }
    }

    #[test]
    fn send_boundaries() {
        use FormatError::*;
        let c = QpKind::Connected;
        let sh = shape(c);
        let mut out = [0u8; 512];
        let mut enc = |w: SendWqe<'_>, sh: &SendShape| encode_send(&w, sh, &mut out).map(|_| ());
        let four = [SGES[0]; 4];
        assert_eq!(
            enc(wqe(SendOp::Send, c, Data::Sges(SgeList::new(&four))), &sh),
            Err(Sges(4))
        );
        assert_eq!(
            enc(wqe(SendOp::Send, c, Data::Inline(&[0; 101])), &sh),
            Err(Inline(101))
        );
        // The INLINE flag must match the data.
        let mut w = wqe(SendOp::Send, c, Data::Inline(&[1]));
        w.send_flags = 0;
        assert_eq!(enc(w, &sh), Err(Flags(0)));
        let mut w = wqe(SendOp::Send, c, Data::Sges(SgeList::new(&[])));
        w.send_flags = IBV_SEND_INLINE;
        assert_eq!(enc(w, &sh), Err(Flags(IBV_SEND_INLINE)));
        let mut w = wqe(SendOp::Send, c, Data::Sges(SgeList::new(&[])));
        w.send_flags = 1 << 5;
        assert_eq!(enc(w, &sh), Err(Flags(1 << 5)));
        // Sections against the queue.
        let mut w = wqe(SendOp::Send, c, Data::Sges(SgeList::new(&[])));
        w.ud = Some(ud());
        assert_eq!(enc(w, &sh), Err(Parts));
        w.ud = None;
        assert_eq!(enc(w, &shape(QpKind::Ud)), Err(Parts));
        assert_eq!(enc(w, &shape(QpKind::Xrc)), Err(Parts));
        let mut w = wqe(SendOp::Send, QpKind::Ud, Data::Sges(SgeList::new(&[])));
        w.ud = Some(UdAddr {
            remote_qpn: MAX_QPN + 1,
            ..ud()
        });
        assert_eq!(enc(w, &shape(QpKind::Ud)), Err(Range("remote QPN")));
        w.ud = Some(UdAddr {
            flow_label: MAX_FLOW_LABEL + 1,
            ..ud()
        });
        assert_eq!(enc(w, &shape(QpKind::Ud)), Err(Range("flow label")));
        let mut w = wqe(SendOp::Send, QpKind::Xrc, Data::Sges(SgeList::new(&[])));
        w.xrc_srqn = Some(MAX_QPN + 1);
        assert_eq!(enc(w, &shape(QpKind::Xrc)), Err(Range("remote SRQ number")));
        // SGE ranges: up to the last byte, and at most 4 GiB - 1 in all.
        let edge = |addr, length| Sge { addr, length, lkey: 1 };
        let ok = [edge(u64::MAX - 10, 10)];
        assert_eq!(enc(wqe(SendOp::Send, c, Data::Sges(SgeList::new(&ok))), &sh), Ok(()));
        let wraps = [edge(u64::MAX - 9, 10)];
        assert_eq!(
            enc(wqe(SendOp::Send, c, Data::Sges(SgeList::new(&wraps))), &sh),
            Err(Overflow)
        );
        let big = [edge(0, u32::MAX), edge(0, 0)];
        assert_eq!(enc(wqe(SendOp::Send, c, Data::Sges(SgeList::new(&big))), &sh), Ok(()));
        let too_big = [edge(0, u32::MAX), edge(0, 1)];
        assert_eq!(
            enc(wqe(SendOp::Send, c, Data::Sges(SgeList::new(&too_big))), &sh),
            Err(Overflow)
        );
        // A window's range.
        let mut bind = MwBind {
            addr: 1,
            length: u64::MAX,
            ..Default::default()
        };
        let op = SendOp::BindMw { rkey: 1, bind };
        assert_eq!(enc(wqe(op, c, Data::Sges(SgeList::new(&[]))), &sh), Err(Overflow));
        bind.addr = 0;
        let op = SendOp::BindMw { rkey: 1, bind };
        assert_eq!(enc(wqe(op, c, Data::Sges(SgeList::new(&[]))), &sh), Ok(()));
        // The largest queue: 249 SGEs or 3992 inline bytes in a 4096-byte slot.
        let big = SendShape {
            kind: QpKind::Ud,
            max_sge: 249,
            max_inline: 3992,
        };
        let many = [SGES[2]; 249];
        let w = wqe(ops()[10], QpKind::Ud, Data::Sges(SgeList::new(&many)));
        assert!(SLOT_HEADER + round_trip(&w, &big).len() <= 4096);
        let w = wqe(ops()[10], QpKind::Ud, Data::Inline(&[9; 3992]));
        assert!(SLOT_HEADER + round_trip(&w, &big).len() <= 4096);
    }

    #[test]
    fn recv_round_trip_and_rejections() {
        use FormatError::*;
        let mut buf = [0u8; 128];
        for n in 0..=3 {
            let w = RecvWqe {
                wr_id: u64::MAX - n as u64,
                sges: SgeList::new(&SGES[..n]),
            };
            let len = encode_recv(&w, 3, &mut buf).unwrap();
            assert_eq!(len, RECV_FIXED + n * SGE_BYTES);
            assert_eq!(decode_recv(&buf[..len], 3), Ok(w));
            assert_eq!(encode_recv(&w, n as u32, &mut buf), Ok(len));
            if n > 0 {
                assert_eq!(encode_recv(&w, n as u32 - 1, &mut buf), Err(Sges(n as u32)));
                assert_eq!(decode_recv(&buf[..len], n as u32 - 1), Err(Sges(n as u32)));
            }
            for cut in 0..len {
                assert_eq!(decode_recv(&buf[..cut], 3), Err(Length));
                assert_eq!(encode_recv(&w, 3, &mut [0u8; 128][..cut]), Err(NoRoom));
            }
            assert_eq!(decode_recv(&buf[..len + 1], 3), Err(Length));
        }
        let w = RecvWqe {
            wr_id: 1,
            sges: SgeList::new(&SGES[..1]),
        };
        let len = encode_recv(&w, 3, &mut buf).unwrap();
        let mut b = buf[..len].to_vec();
        b[15] = 1;
        assert_eq!(decode_recv(&b, 3), Err(Reserved));
        b[15] = 0;
        b[8] = 0xff;
        assert_eq!(decode_recv(&b, 3), Err(Sges(255)));
        b[8] = 1;
        b[16..24].fill(0xff);
        assert_eq!(decode_recv(&b, 3), Err(Overflow));
    }

    fn cqe() -> Cqe {
        Cqe {
            wr_id: 0xfeed,
            status: IBV_WC_TM_RNDV_INCOMPLETE,
            opcode: IBV_WC_RECV_RDMA_WITH_IMM,
            vendor_err: 0xdead,
            byte_len: u32::MAX,
            imm: 0x0102_0304,
            qp_num: MAX_QPN,
            src_qp: 17,
            wc_flags: IBV_WC_GRH | IBV_WC_WITH_IMM | IBV_WC_IP_CSUM_OK,
            pkey_index: 0xffff,
            slid: 0xfffe,
            sl: 15,
            dlid_path_bits: 127,
        }
    }

    #[test]
    fn cqe_round_trip_and_rejections() {
        use FormatError::*;
        let mut buf = [0u8; 48];
        for c in [cqe(), Cqe::default()] {
            assert_eq!(encode_cqe(&c, &mut buf), Ok(CQE_BYTES));
            assert_eq!(decode_cqe(&buf[..CQE_BYTES]), Ok(c));
            assert_eq!(Cqe::from_wc(&c.to_wc()), c);
        }
        for op in WC_OPCODES {
            let c = Cqe { opcode: op, ..cqe() };
            assert_eq!(encode_cqe(&c, &mut buf), Ok(CQE_BYTES));
            assert_eq!(decode_cqe(&buf[..CQE_BYTES]), Ok(c));
        }
        assert_eq!(encode_cqe(&cqe(), &mut buf), Ok(CQE_BYTES));
        let good = buf;
        let patch = |off: usize, v: u8| {
            let mut b = good;
            b[off] = v;
            decode_cqe(&b[..CQE_BYTES])
        };
        assert_eq!(patch(8, 24), Err(Range("status")));
        for o in [7u8, 8, 10, 127, 130, 137, 255] {
            assert_eq!(patch(9, o), Err(Opcode(o as u32)));
        }
        assert_eq!(patch(32, 0x10 | 3), Err(Flags(0x13)));
        assert_eq!(patch(32, 0x0a), Err(Flags(0x0a)));
        assert_eq!(patch(27, 1), Err(Range("qp_num")));
        assert_eq!(patch(31, 1), Err(Range("src_qp")));
        assert_eq!(patch(38, 16), Err(Range("sl")));
        assert_eq!(patch(39, 128), Err(Range("dlid_path_bits")));
        for n in 0..CQE_BYTES {
            assert_eq!(decode_cqe(&good[..n]), Err(Length));
            assert_eq!(encode_cqe(&cqe(), &mut [0u8; 48][..n]), Err(NoRoom));
        }
        assert_eq!(decode_cqe(&good[..CQE_BYTES + 1]), Err(Length));
        for c in [
            Cqe { status: 24, ..cqe() },
            Cqe { status: 256, ..cqe() },
            Cqe { opcode: 256, ..cqe() },
            Cqe { sl: 16, ..cqe() },
            Cqe {
                src_qp: u32::MAX,
                ..cqe()
            },
        ] {
            assert!(encode_cqe(&c, &mut buf).is_err(), "{c:?}");
        }
    }

    /// Random bytes, and valid entries with random bytes changed, never
    /// make a decoder panic; whatever decodes encodes back to the same
    /// bytes (one encoding per value).
    #[test]
    fn random_bytes_never_panic() {
        let mut rng = Rng::new(0x5eed);
        let mut valid: Vec<(Vec<u8>, SendShape)> = Vec::new();
        for kind in [QpKind::Connected, QpKind::Ud, QpKind::Xrc] {
            for op in ops() {
                let sh = shape(kind);
                valid.push((
                    round_trip(&wqe(op, kind, Data::Sges(SgeList::new(&SGES[..2]))), &sh),
                    sh,
                ));
                valid.push((round_trip(&wqe(op, kind, Data::Inline(&[3; 20])), &sh), sh));
            }
        }
        let mut out = vec![0u8; 4096];
        let mut decoded = 0;
        for i in 0..60_000 {
            let (b, sh) = if i % 2 == 0 {
                let (mut b, sh) = valid[rng.below(valid.len())].clone();
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(b.len());
                    b[at] = rng.next() as u8;
                }
                if rng.below(8) == 0 {
                    b.truncate(rng.below(b.len() + 1));
                }
                (b, sh)
            } else {
                let b: Vec<u8> = (0..rng.below(200)).map(|_| rng.next() as u8).collect();
                let sh = SendShape {
                    kind: [QpKind::Connected, QpKind::Ud, QpKind::Xrc][rng.below(3)],
                    max_sge: rng.below(300) as u32,
                    max_inline: rng.next() as u32,
                };
                (b, sh)
            };
            if let Ok(w) = decode_send(&b, &sh) {
                decoded += 1;
                assert_eq!(encode_send(&w, &sh, &mut out), Ok(b.len()));
                // (The direct mark is the entry's, not the request's.)
                if is_direct(&b) {
                    mark_direct(&mut out[..b.len()]);
                }
                assert_eq!(out[..b.len()], b[..]);
            }
            if let Ok(w) = decode_recv(&b, sh.max_sge) {
                assert_eq!(encode_recv(&w, sh.max_sge, &mut out), Ok(b.len()));
                assert_eq!(out[..b.len()], b[..]);
            }
            if let Ok(c) = decode_cqe(&b) {
                assert_eq!(encode_cqe(&c, &mut out), Ok(b.len()));
                assert_eq!(out[..b.len()], b[..]);
            }
        }
        assert!(decoded > 1000, "{decoded}");
    }
}
