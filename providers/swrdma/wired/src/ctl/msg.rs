//! The control messages of the verbs between a client context and the
//! agent (HOSTWIRE-DESIGN.md section 4, "Control path"): one request, one
//! reply, matched by a request id.  Pure encoding and decoding, and the
//! send and receive of one message with its descriptors (`SCM_RIGHTS`).
//!
//! All integers are little-endian.  A handle is a number the agent gave
//! out (never 0); where a handle is optional, 0 means none.  A user
//! handle is the client's own name of a CQ, QP or SRQ (the `user_handle`
//! of the kernel's `ib_uverbs_create_cq`/`_qp`/`_srq`: libibverbs gives
//! the `ibv_cq *`, `ibv_qp *` or `ibv_srq *`); it is carried as given,
//! and the agent writes it as the `element` of the object's async events
//! (`transport::event_record`).
//!
//! # Header (12 bytes)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | version and kind: the kind (the tables below) in the low byte, the version ([`VERSION`], the protocol's) in the high byte |
//! | 2 | 2 | flags: bits 0-3 the number of descriptors that travel with the message; other bits 0 |
//! | 4 | 4 | request id (the reply repeats the request's) |
//! | 8 | 4 | the body's length; it must equal the datagram's length less 12 |
//!
//! The first two bytes tell a control message from a hello-protocol one
//! (`proto.rs`), whose magic's first bytes are `0x57 0x52` or `0x53 0x57`:
//! the version byte of a control message is below `0x50`.
//!
//! # Requests
//!
//! | kind | request | body | descriptors |
//! |---|---|---|---|
//! | 1 | `AllocPd` | parent domain's PD (4; 0: a plain PD) | |
//! | 2 | `DeallocPd` | pd (4) | |
//! | 3 | `CreateCq` | user handle (8), cqe (4), queue (8), which descriptors (4: 1 doorbell, 2 channel) | queue, doorbell?, channel? |
//! | 4 | `ResizeCq` | cq (4), cqe (4), flags (4: 1 a new queue follows), [queue (8)] | new queue? |
//! | 5 | `DestroyCq` | cq (4) | |
//! | 6 | `CreateSrq` | user handle (8), pd (4), type (1: 0 basic, 1 XRC), 0 (3), xrcd (4), cq (4), max_wr (4), max_sge (4), srq_limit (4), queue (8) | queue |
//! | 7 | `ModifySrq` | srq (4), mask (4), max_wr (4), srq_limit (4) | |
//! | 8 | `QuerySrq` | srq (4) | |
//! | 9 | `DestroySrq` | srq (4) | |
//! | 10 | `CreateQp` | user handle (8), pd, xrcd, send_cq, recv_cq, srq (4 each), QP type (1: the `ibv_qp_type` value), sq_sig_all (1: 0 or 1), queues (1: 1 SQ, 2 RQ), 0 (1), caps (20), [SQ queue (8)], [RQ queue (8)] | SQ?, RQ? |
//! | 11 | `ModifyQp` | qp (4), attributes (below) | |
//! | 12 | `QueryQp` | qp (4), mask (4) | |
//! | 13 | `DestroyQp` | qp (4) | |
//! | 14 | `RegMr` | pd (4), access (4), addr (8), length (8), iova (8) | |
//! | 15 | `ReregMr` | mr (4), flags (4: `IBV_REREG_MR_CHANGE_*`), pd (4), access (4), addr (8), length (8) | |
//! | 16 | `DeregMr` | mr (4) | |
//! | 17 | `AllocMw` | pd (4), type (1: 1 or 2), 0 (3) | |
//! | 18 | `DeallocMw` | mw (4) | |
//! | 19 | `CreateAh` | pd (4), address vector (32) | |
//! | 20 | `DestroyAh` | ah (4) | |
//! | 21 | `AllocXrcd` | (none) | |
//! | 22 | `DeallocXrcd` | xrcd (4) | |
//! | 23 | `AttachMcast` | qp (4), gid (16), lid (2), 0 (2) | |
//! | 24 | `DetachMcast` | qp (4), gid (16), lid (2), 0 (2) | |
//!
//! A queue is its depth (4) and slot size (4), as `wq::slots::file_bytes`
//! takes them; the memfd travels as the message's descriptor.  Caps are
//! `max_send_wr`, `max_recv_wr`, `max_send_sge`, `max_recv_sge`,
//! `max_inline_data` (4 each).  An address vector (`ibv_ah_attr`, 32):
//! dgid (16), flow_label (4), sgid_index, hop_limit, traffic_class,
//! is_global (1 each), dlid (2), sl, src_path_bits, static_rate, port_num
//! (1 each), 0 (2).
//!
//! **QP attributes** (`ModifyQp`, and the `QpAttr` reply): the mask (4,
//! `IBV_QP_*` bits up to `IBV_QP_RATE_LIMIT`), then the field of each bit
//! set, in the order of the bits: state (1, `RESET`..`ERR`), cur_state (1,
//! up to `UNKNOWN`), en_sqd_async_notify (1), access flags (4), pkey_index
//! (2), port (1), qkey (4), AV (32), path_mtu (4), timeout, retry_cnt,
//! rnr_retry (1 each), rq_psn (4), max_rd_atomic (1), alt path (AV 32,
//! alt_pkey_index 2, alt_port_num 1, alt_timeout 1), min_rnr_timer (1),
//! sq_psn (4), max_dest_rd_atomic (1), path_mig_state (4), caps (20),
//! dest_qpn (4), rate_limit (4).  Bits 21-24 name no field.
//!
//! # Replies
//!
//! | kind | reply | body |
//! |---|---|---|
//! | 0x40 | `Err` | errno (4: 1..=4095) |
//! | 0x41 | `Done` | (none) |
//! | 0x42 | `Pd` | handle (4) |
//! | 0x43 | `Cq` | handle (4), cqe (4) |
//! | 0x44 | `Srq` | handle (4), SRQ number (4, 24 bits), max_wr (4), max_sge (4) |
//! | 0x45 | `SrqAttr` | max_wr (4), max_sge (4), srq_limit (4) |
//! | 0x46 | `Qp` | handle (4), QPN (4, 24 bits), caps (20) |
//! | 0x47 | `QpAttr` | QP attributes (as above) |
//! | 0x48 | `Mr` | handle (4), lkey (4), rkey (4) |
//! | 0x49 | `Mw` | handle (4), rkey (4) |
//! | 0x4a | `Ah` | handle (4) |
//! | 0x4b | `Xrcd` | handle (4) |
//!
//! Replies carry no descriptors.  [`Reply::answers`] says which replies
//! fit which request.
//!
//! # Decoding
//!
//! Every decode is total: any bytes give a valid typed value or an error.
//! Unknown kinds and versions, flag bits, reserved bytes that are not 0,
//! bodies shorter or longer than their fields, a descriptor count that
//! does not match the body, booleans other than 0 or 1, and values out of
//! their type's range are refused.  What decodes encodes back to the same
//! bytes ([`Request::encode`] checks it).
//!
//! # What the client answers itself
//!
//! The messages carry only what the agent must decide.  The client (the
//! provider) answers before it sends: unknown `comp_mask` bits, create
//! flags and `send_ops_flags` of a QP (`EOPNOTSUPP`), raw packet and driver
//! QPs (`EOPNOTSUPP`) and unknown QP types (`EINVAL`), tag-matching SRQs
//! (`EOPNOTSUPP`), `modify_qp`/`query_qp` mask bits past
//! `IBV_QP_RATE_LIMIT` (`EOPNOTSUPP`), a completion vector out of range,
//! CQ `wc_flags`, an XRCD's file (`EBADF`); and any value the encoder
//! refuses (a QP state past `ERR`, a window type other than 1 and 2):
//! `EINVAL`, as `ops.rs` answers those.

use crate::wq::slots::file_bytes;
use ibverbs_abi::verbs::*;
use rustix::io::Errno;
use rustix::net::{
    recvmsg, sendmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};

/// The version byte of every control message: the protocol's version
/// (`proto::VERSION`, also in the agent's socket name).
pub const VERSION: u8 = 3;
const _: () = assert!(crate::proto::VERSION == VERSION as u16 && VERSION < 0x50);

/// Bytes of the header.
pub const HEADER: usize = 12;
/// The longest message (a `ModifyQp` with every field is 152 bytes).
pub const MAX_MSG: usize = 256;
/// The most descriptors a message carries (`CreateCq`: queue, doorbell,
/// channel).
pub const MAX_FDS: usize = 3;
/// The largest errno an `Err` reply carries.
pub const MAX_ERRNO: i32 = 4095;
/// The largest QP or SRQ number (24 bits).
pub const MAX_NUM: u32 = 0xff_ffff;
/// Every `ibv_qp_attr_mask` bit up to `IBV_QP_RATE_LIMIT` (as `ops.rs`
/// takes them; bits 21-24 name no field).
pub const QP_ATTR_KNOWN: u32 = (IBV_QP_RATE_LIMIT << 1) - 1;
/// The mask bits that name a field of [`QpAttr`].
pub const QP_ATTR_FIELDS: u32 = ((1 << 21) - 1) | IBV_QP_RATE_LIMIT;

/// The header's flag bits that hold the descriptor count.
const FLAG_NFDS: u16 = 0xf;

/// Message kinds (the header's first byte).
pub mod kind {
    /// Request: a PD or a parent domain.
    pub const ALLOC_PD: u8 = 1;
    /// Request.
    pub const DEALLOC_PD: u8 = 2;
    /// Request, with the CQ's queue and its optional descriptors.
    pub const CREATE_CQ: u8 = 3;
    /// Request, with a new queue or none.
    pub const RESIZE_CQ: u8 = 4;
    /// Request.
    pub const DESTROY_CQ: u8 = 5;
    /// Request, with the SRQ's queue.
    pub const CREATE_SRQ: u8 = 6;
    /// Request.
    pub const MODIFY_SRQ: u8 = 7;
    /// Request.
    pub const QUERY_SRQ: u8 = 8;
    /// Request.
    pub const DESTROY_SRQ: u8 = 9;
    /// Request, with the SQ's and RQ's queues the QP has.
    pub const CREATE_QP: u8 = 10;
    /// Request.
    pub const MODIFY_QP: u8 = 11;
    /// Request.
    pub const QUERY_QP: u8 = 12;
    /// Request.
    pub const DESTROY_QP: u8 = 13;
    /// Request.
    pub const REG_MR: u8 = 14;
    /// Request.
    pub const REREG_MR: u8 = 15;
    /// Request.
    pub const DEREG_MR: u8 = 16;
    /// Request.
    pub const ALLOC_MW: u8 = 17;
    /// Request.
    pub const DEALLOC_MW: u8 = 18;
    /// Request.
    pub const CREATE_AH: u8 = 19;
    /// Request.
    pub const DESTROY_AH: u8 = 20;
    /// Request.
    pub const ALLOC_XRCD: u8 = 21;
    /// Request.
    pub const DEALLOC_XRCD: u8 = 22;
    /// Request: a QP joins a multicast group.
    pub const ATTACH_MCAST: u8 = 23;
    /// Request: a QP leaves a multicast group.
    pub const DETACH_MCAST: u8 = 24;
    /// Reply: the verb failed with an errno.
    pub const ERR: u8 = 0x40;
    /// Reply: the verb succeeded and returns nothing.
    pub const DONE: u8 = 0x41;
    /// Reply to `ALLOC_PD`.
    pub const PD: u8 = 0x42;
    /// Reply to `CREATE_CQ`.
    pub const CQ: u8 = 0x43;
    /// Reply to `CREATE_SRQ`.
    pub const SRQ: u8 = 0x44;
    /// Reply to `QUERY_SRQ`.
    pub const SRQ_ATTR: u8 = 0x45;
    /// Reply to `CREATE_QP`.
    pub const QP: u8 = 0x46;
    /// Reply to `QUERY_QP`.
    pub const QP_ATTR: u8 = 0x47;
    /// Reply to `REG_MR`.
    pub const MR: u8 = 0x48;
    /// Reply to `ALLOC_MW`.
    pub const MW: u8 = 0x49;
    /// Reply to `CREATE_AH`.
    pub const AH: u8 = 0x4a;
    /// Reply to `ALLOC_XRCD`.
    pub const XRCD: u8 = 0x4b;
}

/// `CreateCq`'s descriptor bits.
const CQ_DOORBELL: u32 = 1;
const CQ_CHANNEL: u32 = 2;
/// `ResizeCq`'s flag: a new queue follows.
const RESIZE_QUEUE: u32 = 1;
/// `CreateQp`'s queue bits.
const QP_SQ: u8 = 1;
const QP_RQ: u8 = 2;

/// Why a message does not encode, decode, send or arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MsgError {
    /// Shorter than a header, or the body length is not the datagram's.
    Length,
    /// Another protocol version (the byte found).
    Version(u8),
    /// A kind this side does not take here (a reply where a request was
    /// expected, or no kind at all).
    Kind(u8),
    /// Header flag bits that are not defined (or more descriptors than
    /// [`MAX_FDS`]).
    Flags(u16),
    /// The body is shorter or longer than its fields say.
    Body,
    /// A reserved byte is not 0.
    Reserved,
    /// A field outside its range (named).
    Range(&'static str),
    /// (Encoding) the value does not come back from its bytes: a field the
    /// encoding cannot carry (a field the mask does not name, a handle 0).
    NotCanonical,
    /// The message came with (or was given) another number of descriptors
    /// than it says it carries; those that came were closed.
    Fds {
        /// The count the message names.
        want: usize,
        /// The count that came.
        got: usize,
    },
    /// The datagram or its descriptors did not fit the buffers (all closed).
    Truncated,
    /// The peer closed the connection.
    Closed,
    /// The system call failed.
    Io(Errno),
}

impl std::fmt::Display for MsgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MsgError::Length => write!(f, "message length does not match its header"),
            MsgError::Version(v) => write!(f, "control protocol version {v} (we speak {VERSION})"),
            MsgError::Kind(k) => write!(f, "unexpected message kind {k:#x}"),
            MsgError::Flags(x) => write!(f, "header flags {x:#x} not allowed"),
            MsgError::Body => write!(f, "body length does not match its fields"),
            MsgError::Reserved => write!(f, "a reserved byte is not 0"),
            MsgError::Range(what) => write!(f, "{what} out of range"),
            MsgError::NotCanonical => write!(f, "a value the encoding cannot carry"),
            MsgError::Fds { want, got } => write!(f, "{got} descriptors where the message names {want}"),
            MsgError::Truncated => write!(f, "message or descriptors truncated"),
            MsgError::Closed => write!(f, "connection closed"),
            MsgError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for MsgError {}

// ---------------------------------------------------------------------------
// Cursors
// ---------------------------------------------------------------------------

/// A cursor reading little-endian fields of a body; running past its end
/// is [`MsgError::Body`].
struct Rd<'a>(&'a [u8]);

impl Rd<'_> {
    fn arr<const N: usize>(&mut self) -> Result<[u8; N], MsgError> {
        let (h, t) = self.0.split_first_chunk::<N>().ok_or(MsgError::Body)?;
        self.0 = t;
        Ok(*h)
    }

    fn u8(&mut self) -> Result<u8, MsgError> {
        Ok(self.arr::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, MsgError> {
        self.arr().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32, MsgError> {
        self.arr().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, MsgError> {
        self.arr().map(u64::from_le_bytes)
    }

    /// An optional handle (0: none).
    fn opt(&mut self) -> Result<Option<u32>, MsgError> {
        self.u32().map(|h| (h != 0).then_some(h))
    }

    /// A handle the agent gave out (never 0).
    fn handle(&mut self) -> Result<u32, MsgError> {
        self.opt()?.ok_or(MsgError::Range("handle"))
    }

    /// A boolean byte (0 or 1).
    fn bool(&mut self, what: &'static str) -> Result<bool, MsgError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(MsgError::Range(what)),
        }
    }

    /// `n` reserved bytes: all 0.
    fn zeros(&mut self, n: usize) -> Result<(), MsgError> {
        for _ in 0..n {
            if self.u8()? != 0 {
                return Err(MsgError::Reserved);
            }
        }
        Ok(())
    }

    /// Nothing may follow.
    fn end(&self) -> Result<(), MsgError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(MsgError::Body)
        }
    }
}

/// A message being written: the header (its body length filled in by
/// [`Wr::finish`]), then the body.
struct Wr(Vec<u8>);

impl Wr {
    fn new(kind: u8, nfds: usize, id: u32) -> Wr {
        let mut b = Vec::with_capacity(64);
        b.push(kind);
        b.push(VERSION);
        b.extend_from_slice(&(nfds as u16).to_le_bytes());
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        Wr(b)
    }

    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn opt(&mut self, h: Option<u32>) {
        self.u32(h.unwrap_or(0));
    }

    fn finish(mut self) -> Vec<u8> {
        let body = (self.0.len() - HEADER) as u32;
        self.0[8..12].copy_from_slice(&body.to_le_bytes());
        self.0
    }
}

/// The header of a control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The message's kind ([`kind`]).
    pub kind: u8,
    /// The descriptors that travel with it.
    pub nfds: usize,
    /// The request id.
    pub id: u32,
}

impl Header {
    /// The header of message `b` (a whole datagram), checked: the version,
    /// the flags, the body length.  The kind is left to the caller.
    pub fn parse(b: &[u8]) -> Result<Header, MsgError> {
        let (h, body) = b.split_first_chunk::<HEADER>().ok_or(MsgError::Length)?;
        if h[1] != VERSION {
            return Err(MsgError::Version(h[1]));
        }
        let flags = u16::from_le_bytes([h[2], h[3]]);
        let nfds = (flags & FLAG_NFDS) as usize;
        if flags & !FLAG_NFDS != 0 || nfds > MAX_FDS {
            return Err(MsgError::Flags(flags));
        }
        let len = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        if len as usize != body.len() {
            return Err(MsgError::Length);
        }
        Ok(Header {
            kind: h[0],
            nfds,
            id: u32::from_le_bytes([h[4], h[5], h[6], h[7]]),
        })
    }
}

/// Whether datagram `b` is a control message (rather than one of the
/// hello protocol's, `proto.rs`): its version byte is ours.
pub fn is_ctl(b: &[u8]) -> bool {
    b.get(1) == Some(&VERSION)
}

// ---------------------------------------------------------------------------
// Field types
// ---------------------------------------------------------------------------

/// A work queue's geometry (`wq::slots`): its memfd travels with the
/// message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queue {
    /// Entries (a power of two up to 65536).
    pub depth: u32,
    /// Bytes per slot (a multiple of 64 from 64 to 4096).
    pub slot_size: u32,
}

impl Queue {
    fn read(r: &mut Rd<'_>) -> Result<Queue, MsgError> {
        let q = Queue {
            depth: r.u32()?,
            slot_size: r.u32()?,
        };
        file_bytes(q.depth as usize, q.slot_size as usize).ok_or(MsgError::Range("queue geometry"))?;
        Ok(q)
    }

    fn write(&self, w: &mut Wr) {
        w.u32(self.depth);
        w.u32(self.slot_size);
    }
}

/// A QP's capabilities (`ibv_qp_cap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Caps {
    /// Send WRs outstanding.
    pub max_send_wr: u32,
    /// Receive WRs outstanding.
    pub max_recv_wr: u32,
    /// SGEs per send WR.
    pub max_send_sge: u32,
    /// SGEs per receive WR.
    pub max_recv_sge: u32,
    /// Inline bytes per send WR.
    pub max_inline_data: u32,
}

impl Caps {
    fn read(r: &mut Rd<'_>) -> Result<Caps, MsgError> {
        Ok(Caps {
            max_send_wr: r.u32()?,
            max_recv_wr: r.u32()?,
            max_send_sge: r.u32()?,
            max_recv_sge: r.u32()?,
            max_inline_data: r.u32()?,
        })
    }

    fn write(&self, w: &mut Wr) {
        for v in [
            self.max_send_wr,
            self.max_recv_wr,
            self.max_send_sge,
            self.max_recv_sge,
            self.max_inline_data,
        ] {
            w.u32(v);
        }
    }
}

impl From<ibv_qp_cap> for Caps {
    fn from(c: ibv_qp_cap) -> Caps {
        Caps {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }
}

impl From<Caps> for ibv_qp_cap {
    fn from(c: Caps) -> ibv_qp_cap {
        ibv_qp_cap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }
}

/// An address vector (`ibv_ah_attr`, with its GRH fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AhAttr {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Flow label (as given; the checks are the agent's).
    pub flow_label: u32,
    /// Source GID index.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Whether the GRH fields count (as given: any non-zero value is yes).
    pub is_global: u8,
    /// Destination LID.
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub src_path_bits: u8,
    /// Static rate (`ibv_rate`).
    pub static_rate: u8,
    /// Port number.
    pub port_num: u8,
}

impl AhAttr {
    /// Bytes of an encoded address vector.
    pub const BYTES: usize = 32;

    fn read(r: &mut Rd<'_>) -> Result<AhAttr, MsgError> {
        let a = AhAttr {
            dgid: r.arr()?,
            flow_label: r.u32()?,
            sgid_index: r.u8()?,
            hop_limit: r.u8()?,
            traffic_class: r.u8()?,
            is_global: r.u8()?,
            dlid: r.u16()?,
            sl: r.u8()?,
            src_path_bits: r.u8()?,
            static_rate: r.u8()?,
            port_num: r.u8()?,
        };
        r.zeros(2)?;
        Ok(a)
    }

    fn write(&self, w: &mut Wr) {
        w.0.extend_from_slice(&self.dgid);
        w.u32(self.flow_label);
        for b in [self.sgid_index, self.hop_limit, self.traffic_class, self.is_global] {
            w.u8(b);
        }
        w.u16(self.dlid);
        for b in [self.sl, self.src_path_bits, self.static_rate, self.port_num] {
            w.u8(b);
        }
        w.u16(0);
    }
}

impl From<&ibv_ah_attr> for AhAttr {
    fn from(a: &ibv_ah_attr) -> AhAttr {
        AhAttr {
            // SAFETY: every bit pattern of the 16-byte union is a valid `raw`.
            dgid: unsafe { a.grh.dgid.raw },
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
            is_global: a.is_global,
            dlid: a.dlid,
            sl: a.sl,
            src_path_bits: a.src_path_bits,
            static_rate: a.static_rate,
            port_num: a.port_num,
        }
    }
}

impl From<AhAttr> for ibv_ah_attr {
    fn from(a: AhAttr) -> ibv_ah_attr {
        ibv_ah_attr {
            grh: ibv_global_route {
                dgid: ibv_gid { raw: a.dgid },
                flow_label: a.flow_label,
                sgid_index: a.sgid_index,
                hop_limit: a.hop_limit,
                traffic_class: a.traffic_class,
            },
            dlid: a.dlid,
            sl: a.sl,
            src_path_bits: a.src_path_bits,
            static_rate: a.static_rate,
            is_global: a.is_global,
            port_num: a.port_num,
        }
    }
}

/// The QP types the agent serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QpType {
    /// Reliable connection.
    Rc,
    /// Unreliable connection.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// XRC initiator.
    XrcSend,
    /// XRC target.
    XrcRecv,
}

impl QpType {
    /// Every type.
    pub const ALL: [QpType; 5] = [QpType::Rc, QpType::Uc, QpType::Ud, QpType::XrcSend, QpType::XrcRecv];

    /// The type of `ibv_qp_type` value `t`, if the agent serves it.
    pub fn from_ibv(t: u32) -> Option<QpType> {
        Some(match t {
            IBV_QPT_RC => QpType::Rc,
            IBV_QPT_UC => QpType::Uc,
            IBV_QPT_UD => QpType::Ud,
            IBV_QPT_XRC_SEND => QpType::XrcSend,
            IBV_QPT_XRC_RECV => QpType::XrcRecv,
            _ => return None,
        })
    }

    /// Its `ibv_qp_type` value.
    pub fn ibv(self) -> u32 {
        match self {
            QpType::Rc => IBV_QPT_RC,
            QpType::Uc => IBV_QPT_UC,
            QpType::Ud => IBV_QPT_UD,
            QpType::XrcSend => IBV_QPT_XRC_SEND,
            QpType::XrcRecv => IBV_QPT_XRC_RECV,
        }
    }
}

/// The SRQ types the agent serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrqType {
    /// `IBV_SRQT_BASIC`
    Basic,
    /// `IBV_SRQT_XRC`: with an XRC domain and a CQ.
    Xrc,
}

/// The memory window types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MwType {
    /// `IBV_MW_TYPE_1`: bound by `ibv_bind_mw`.
    One,
    /// `IBV_MW_TYPE_2`: bound by a work request, to one QP.
    Two,
}

impl MwType {
    /// Its `ibv_mw_type` value.
    pub fn ibv(self) -> u32 {
        match self {
            MwType::One => IBV_MW_TYPE_1,
            MwType::Two => IBV_MW_TYPE_2,
        }
    }

    /// The type of `ibv_mw_type` value `t`.
    pub fn from_ibv(t: u32) -> Option<MwType> {
        match t {
            IBV_MW_TYPE_1 => Some(MwType::One),
            IBV_MW_TYPE_2 => Some(MwType::Two),
            _ => None,
        }
    }
}

/// QP attributes: the mask and the fields it names (the others are 0).
/// `qp_state` and `cur_qp_state` are checked at decoding (a state past
/// `ERR`, and past `UNKNOWN`, is no state); every other field is carried
/// as given and checked by the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QpAttr {
    /// `IBV_QP_*` bits (within [`QP_ATTR_KNOWN`]).
    pub mask: u32,
    /// `IBV_QP_STATE`
    pub qp_state: u8,
    /// `IBV_QP_CUR_STATE`
    pub cur_qp_state: u8,
    /// `IBV_QP_EN_SQD_ASYNC_NOTIFY`
    pub en_sqd_async_notify: u8,
    /// `IBV_QP_ACCESS_FLAGS`
    pub qp_access_flags: u32,
    /// `IBV_QP_PKEY_INDEX`
    pub pkey_index: u16,
    /// `IBV_QP_PORT`
    pub port_num: u8,
    /// `IBV_QP_QKEY`
    pub qkey: u32,
    /// `IBV_QP_AV`
    pub ah_attr: AhAttr,
    /// `IBV_QP_PATH_MTU` (an `ibv_mtu`, as given)
    pub path_mtu: u32,
    /// `IBV_QP_TIMEOUT`
    pub timeout: u8,
    /// `IBV_QP_RETRY_CNT`
    pub retry_cnt: u8,
    /// `IBV_QP_RNR_RETRY`
    pub rnr_retry: u8,
    /// `IBV_QP_RQ_PSN`
    pub rq_psn: u32,
    /// `IBV_QP_MAX_QP_RD_ATOMIC`
    pub max_rd_atomic: u8,
    /// `IBV_QP_ALT_PATH`: the alternate path's address vector ...
    pub alt_ah_attr: AhAttr,
    /// ... its P_Key index ...
    pub alt_pkey_index: u16,
    /// ... port ...
    pub alt_port_num: u8,
    /// ... and timeout.
    pub alt_timeout: u8,
    /// `IBV_QP_MIN_RNR_TIMER`
    pub min_rnr_timer: u8,
    /// `IBV_QP_SQ_PSN`
    pub sq_psn: u32,
    /// `IBV_QP_MAX_DEST_RD_ATOMIC`
    pub max_dest_rd_atomic: u8,
    /// `IBV_QP_PATH_MIG_STATE` (an `ibv_mig_state`, as given)
    pub path_mig_state: u32,
    /// `IBV_QP_CAP`
    pub cap: Caps,
    /// `IBV_QP_DEST_QPN`
    pub dest_qp_num: u32,
    /// `IBV_QP_RATE_LIMIT`
    pub rate_limit: u32,
}

/// A field's value as the other side's type: the verbs' `u32` states as
/// our `u8` (checked first by the caller), address vectors and caps as
/// ours or the verbs'.
trait Cvt<T> {
    fn cvt(&self) -> T;
}

impl Cvt<u8> for u32 {
    fn cvt(&self) -> u8 {
        *self as u8
    }
}

impl Cvt<u32> for u8 {
    fn cvt(&self) -> u32 {
        *self as u32
    }
}

impl<T: Copy> Cvt<T> for T {
    fn cvt(&self) -> T {
        *self
    }
}

impl Cvt<AhAttr> for ibv_ah_attr {
    fn cvt(&self) -> AhAttr {
        self.into()
    }
}

impl Cvt<ibv_ah_attr> for AhAttr {
    fn cvt(&self) -> ibv_ah_attr {
        (*self).into()
    }
}

impl Cvt<Caps> for ibv_qp_cap {
    fn cvt(&self) -> Caps {
        (*self).into()
    }
}

impl Cvt<ibv_qp_cap> for Caps {
    fn cvt(&self) -> ibv_qp_cap {
        (*self).into()
    }
}

/// Copies the field(s) of mask bit `$bit` from `$src` to `$dst` (each a
/// [`QpAttr`] or an `ibv_qp_attr`).
macro_rules! qp_field {
    ($bit:expr, $dst:expr, $src:expr) => {
        match $bit {
            IBV_QP_STATE => $dst.qp_state = $src.qp_state.cvt(),
            IBV_QP_CUR_STATE => $dst.cur_qp_state = $src.cur_qp_state.cvt(),
            IBV_QP_EN_SQD_ASYNC_NOTIFY => $dst.en_sqd_async_notify = $src.en_sqd_async_notify,
            IBV_QP_ACCESS_FLAGS => $dst.qp_access_flags = $src.qp_access_flags,
            IBV_QP_PKEY_INDEX => $dst.pkey_index = $src.pkey_index,
            IBV_QP_PORT => $dst.port_num = $src.port_num,
            IBV_QP_QKEY => $dst.qkey = $src.qkey,
            IBV_QP_AV => $dst.ah_attr = $src.ah_attr.cvt(),
            IBV_QP_PATH_MTU => $dst.path_mtu = $src.path_mtu,
            IBV_QP_TIMEOUT => $dst.timeout = $src.timeout,
            IBV_QP_RETRY_CNT => $dst.retry_cnt = $src.retry_cnt,
            IBV_QP_RNR_RETRY => $dst.rnr_retry = $src.rnr_retry,
            IBV_QP_RQ_PSN => $dst.rq_psn = $src.rq_psn,
            IBV_QP_MAX_QP_RD_ATOMIC => $dst.max_rd_atomic = $src.max_rd_atomic,
            IBV_QP_ALT_PATH => {
                $dst.alt_ah_attr = $src.alt_ah_attr.cvt();
                $dst.alt_pkey_index = $src.alt_pkey_index;
                $dst.alt_port_num = $src.alt_port_num;
                $dst.alt_timeout = $src.alt_timeout;
            }
            IBV_QP_MIN_RNR_TIMER => $dst.min_rnr_timer = $src.min_rnr_timer,
            IBV_QP_SQ_PSN => $dst.sq_psn = $src.sq_psn,
            IBV_QP_MAX_DEST_RD_ATOMIC => $dst.max_dest_rd_atomic = $src.max_dest_rd_atomic,
            IBV_QP_PATH_MIG_STATE => $dst.path_mig_state = $src.path_mig_state,
            IBV_QP_CAP => $dst.cap = $src.cap.cvt(),
            IBV_QP_DEST_QPN => $dst.dest_qp_num = $src.dest_qp_num,
            IBV_QP_RATE_LIMIT => $dst.rate_limit = $src.rate_limit,
            _ => {}
        }
    };
}

impl QpAttr {
    /// The fields of `a` that `mask` names (the others stay 0), checked as
    /// decoding checks them: mask bits past `IBV_QP_RATE_LIMIT` and states
    /// out of range are refused.
    pub fn from_verbs(mask: u32, a: &ibv_qp_attr) -> Result<QpAttr, MsgError> {
        if mask & !QP_ATTR_KNOWN != 0 {
            return Err(MsgError::Range("QP attribute mask"));
        }
        if mask & IBV_QP_STATE != 0 && a.qp_state > IBV_QPS_ERR {
            return Err(MsgError::Range("QP state"));
        }
        if mask & IBV_QP_CUR_STATE != 0 && a.cur_qp_state > IBV_QPS_UNKNOWN {
            return Err(MsgError::Range("current QP state"));
        }
        let mut o = QpAttr {
            mask,
            ..QpAttr::default()
        };
        for i in 0..32 {
            qp_field!(mask & (1 << i), o, a);
        }
        Ok(o)
    }

    /// The fields as an `ibv_qp_attr` (those the mask does not name are 0).
    pub fn to_verbs(&self) -> ibv_qp_attr {
        // SAFETY: `ibv_qp_attr` is integers, integer unions and arrays (no
        // pointers): all-zero is a valid value.
        let mut a: ibv_qp_attr = unsafe { std::mem::zeroed() };
        for i in 0..32 {
            qp_field!(self.mask & (1 << i), a, self);
        }
        a
    }

    fn read(r: &mut Rd<'_>) -> Result<QpAttr, MsgError> {
        let mask = r.u32()?;
        if mask & !QP_ATTR_KNOWN != 0 {
            return Err(MsgError::Range("QP attribute mask"));
        }
        let mut a = QpAttr {
            mask,
            ..QpAttr::default()
        };
        for i in 0..32 {
            a.read_field(r, mask & (1 << i))?;
        }
        if a.qp_state as u32 > IBV_QPS_ERR {
            return Err(MsgError::Range("QP state"));
        }
        if a.cur_qp_state as u32 > IBV_QPS_UNKNOWN {
            return Err(MsgError::Range("current QP state"));
        }
        Ok(a)
    }

    fn read_field(&mut self, r: &mut Rd<'_>, bit: u32) -> Result<(), MsgError> {
        match bit {
            IBV_QP_STATE => self.qp_state = r.u8()?,
            IBV_QP_CUR_STATE => self.cur_qp_state = r.u8()?,
            IBV_QP_EN_SQD_ASYNC_NOTIFY => self.en_sqd_async_notify = r.u8()?,
            IBV_QP_ACCESS_FLAGS => self.qp_access_flags = r.u32()?,
            IBV_QP_PKEY_INDEX => self.pkey_index = r.u16()?,
            IBV_QP_PORT => self.port_num = r.u8()?,
            IBV_QP_QKEY => self.qkey = r.u32()?,
            IBV_QP_AV => self.ah_attr = AhAttr::read(r)?,
            IBV_QP_PATH_MTU => self.path_mtu = r.u32()?,
            IBV_QP_TIMEOUT => self.timeout = r.u8()?,
            IBV_QP_RETRY_CNT => self.retry_cnt = r.u8()?,
            IBV_QP_RNR_RETRY => self.rnr_retry = r.u8()?,
            IBV_QP_RQ_PSN => self.rq_psn = r.u32()?,
            IBV_QP_MAX_QP_RD_ATOMIC => self.max_rd_atomic = r.u8()?,
            IBV_QP_ALT_PATH => {
                self.alt_ah_attr = AhAttr::read(r)?;
                self.alt_pkey_index = r.u16()?;
                self.alt_port_num = r.u8()?;
                self.alt_timeout = r.u8()?;
            }
            IBV_QP_MIN_RNR_TIMER => self.min_rnr_timer = r.u8()?,
            IBV_QP_SQ_PSN => self.sq_psn = r.u32()?,
            IBV_QP_MAX_DEST_RD_ATOMIC => self.max_dest_rd_atomic = r.u8()?,
            IBV_QP_PATH_MIG_STATE => self.path_mig_state = r.u32()?,
            IBV_QP_CAP => self.cap = Caps::read(r)?,
            IBV_QP_DEST_QPN => self.dest_qp_num = r.u32()?,
            IBV_QP_RATE_LIMIT => self.rate_limit = r.u32()?,
            _ => {}
        }
        Ok(())
    }

    fn write(&self, w: &mut Wr) {
        w.u32(self.mask);
        for i in 0..32 {
            self.write_field(w, self.mask & (1 << i));
        }
    }

    fn write_field(&self, w: &mut Wr, bit: u32) {
        match bit {
            IBV_QP_STATE => w.u8(self.qp_state),
            IBV_QP_CUR_STATE => w.u8(self.cur_qp_state),
            IBV_QP_EN_SQD_ASYNC_NOTIFY => w.u8(self.en_sqd_async_notify),
            IBV_QP_ACCESS_FLAGS => w.u32(self.qp_access_flags),
            IBV_QP_PKEY_INDEX => w.u16(self.pkey_index),
            IBV_QP_PORT => w.u8(self.port_num),
            IBV_QP_QKEY => w.u32(self.qkey),
            IBV_QP_AV => self.ah_attr.write(w),
            IBV_QP_PATH_MTU => w.u32(self.path_mtu),
            IBV_QP_TIMEOUT => w.u8(self.timeout),
            IBV_QP_RETRY_CNT => w.u8(self.retry_cnt),
            IBV_QP_RNR_RETRY => w.u8(self.rnr_retry),
            IBV_QP_RQ_PSN => w.u32(self.rq_psn),
            IBV_QP_MAX_QP_RD_ATOMIC => w.u8(self.max_rd_atomic),
            IBV_QP_ALT_PATH => {
                self.alt_ah_attr.write(w);
                w.u16(self.alt_pkey_index);
                w.u8(self.alt_port_num);
                w.u8(self.alt_timeout);
            }
            IBV_QP_MIN_RNR_TIMER => w.u8(self.min_rnr_timer),
            IBV_QP_SQ_PSN => w.u32(self.sq_psn),
            IBV_QP_MAX_DEST_RD_ATOMIC => w.u8(self.max_dest_rd_atomic),
            IBV_QP_PATH_MIG_STATE => w.u32(self.path_mig_state),
            IBV_QP_CAP => self.cap.write(w),
            IBV_QP_DEST_QPN => w.u32(self.dest_qp_num),
            IBV_QP_RATE_LIMIT => w.u32(self.rate_limit),
            _ => {}
        }
    }

    /// Sets the fields `self.mask` names in `dst` (an agent's copy of a
    /// QP's attributes), as `modify_qp` takes them.
    pub fn apply_to(&self, dst: &mut QpAttr) {
        for i in 0..32 {
            qp_field!(self.mask & (1 << i), dst, self);
        }
        dst.mask |= self.mask & QP_ATTR_FIELDS;
    }
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// `CreateCq`: a CQ of `cqe` entries whose completions go into `queue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateCq {
    /// The client's name of the CQ (the kernel's `user_handle`: the
    /// `ibv_cq *`), the `element` of its async events.
    pub user_handle: u64,
    /// The depth the verb asks for (`cqe`).
    pub cqe: u32,
    /// The CQE queue's geometry (its memfd is the first descriptor).
    pub queue: Queue,
    /// An eventfd the agent writes when the client sleeps on the queue
    /// (`wq::Push::Ring`): the next descriptor when set.
    pub doorbell: bool,
    /// The completion channel the agent writes an event into when the CQ
    /// is armed: the last descriptor when set.
    pub channel: bool,
}

/// `CreateSrq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateSrq {
    /// The client's name of the SRQ (the kernel's `user_handle`: the
    /// `ibv_srq *`), the `element` of its async events.
    pub user_handle: u64,
    /// Its PD (required: None is the agent's EINVAL, as `ops.rs`).
    pub pd: Option<u32>,
    /// Basic or XRC.
    pub ty: SrqType,
    /// An XRC SRQ's domain (None for a basic SRQ).
    pub xrcd: Option<u32>,
    /// An XRC SRQ's CQ (None for a basic SRQ).
    pub cq: Option<u32>,
    /// `attr.max_wr`
    pub max_wr: u32,
    /// `attr.max_sge`
    pub max_sge: u32,
    /// `attr.srq_limit`
    pub srq_limit: u32,
    /// The receive queue's geometry (its memfd is the descriptor).
    pub queue: Queue,
}

/// `CreateQp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateQp {
    /// The client's name of the QP (the kernel's `user_handle`: the
    /// `ibv_qp *`), the `element` of its async events.
    pub user_handle: u64,
    /// Its PD (None only for an XRC target).
    pub pd: Option<u32>,
    /// Its XRC domain (an XRC target's).
    pub xrcd: Option<u32>,
    /// The transport.
    pub qp_type: QpType,
    /// The send CQ.
    pub send_cq: Option<u32>,
    /// The receive CQ.
    pub recv_cq: Option<u32>,
    /// The SRQ it receives from.
    pub srq: Option<u32>,
    /// Every send WR completes (`sq_sig_all` non-zero).
    pub sq_sig_all: bool,
    /// The capabilities asked for.
    pub cap: Caps,
    /// The send queue (a QP that sends; its memfd is the first descriptor).
    pub sq: Option<Queue>,
    /// The receive queue (a QP that receives without an SRQ; its memfd
    /// follows the SQ's).
    pub rq: Option<Queue>,
}

/// `RegMr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegMr {
    /// The PD.
    pub pd: u32,
    /// `IBV_ACCESS_*` bits, as given.
    pub access: u32,
    /// Where the range is in the client.
    pub addr: u64,
    /// Its length.
    pub length: u64,
    /// The address the MR's users name it by (`hca_va`; `addr` for
    /// `ibv_reg_mr`).
    pub iova: u64,
}

/// `ReregMr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReregMr {
    /// The MR.
    pub mr: u32,
    /// `IBV_REREG_MR_CHANGE_*` bits.
    pub flags: u32,
    /// The new PD (`CHANGE_PD`; None: null, the agent's EINVAL).
    pub pd: Option<u32>,
    /// The new rights (`CHANGE_ACCESS`).
    pub access: u32,
    /// The new range (`CHANGE_TRANSLATION`).
    pub addr: u64,
    /// Its length.
    pub length: u64,
}

/// A client's request: one verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `ibv_alloc_pd`, or `ibv_alloc_parent_domain` of PD `parent`.
    AllocPd {
        /// The PD a parent domain wraps.
        parent: Option<u32>,
    },
    /// `ibv_dealloc_pd` (of a PD or a parent domain).
    DeallocPd {
        /// The PD.
        pd: u32,
    },
    /// `ibv_create_cq`.
    CreateCq(CreateCq),
    /// `ibv_resize_cq`.
    ResizeCq {
        /// The CQ.
        cq: u32,
        /// The new depth.
        cqe: u32,
        /// A new CQE queue (its memfd is the descriptor), or the same.
        queue: Option<Queue>,
    },
    /// `ibv_destroy_cq`.
    DestroyCq {
        /// The CQ.
        cq: u32,
    },
    /// `ibv_create_srq(_ex)`.
    CreateSrq(CreateSrq),
    /// `ibv_modify_srq`.
    ModifySrq {
        /// The SRQ.
        srq: u32,
        /// `IBV_SRQ_*` bits (others are ignored, as `ops.rs` ignores them).
        mask: u32,
        /// The new `max_wr` (`IBV_SRQ_MAX_WR`).
        max_wr: u32,
        /// The new limit (`IBV_SRQ_LIMIT`).
        srq_limit: u32,
    },
    /// `ibv_query_srq`.
    QuerySrq {
        /// The SRQ.
        srq: u32,
    },
    /// `ibv_destroy_srq`.
    DestroySrq {
        /// The SRQ.
        srq: u32,
    },
    /// `ibv_create_qp(_ex)`.
    CreateQp(CreateQp),
    /// `ibv_modify_qp`.
    ModifyQp {
        /// The QP.
        qp: u32,
        /// The mask and the fields it names.
        attr: QpAttr,
    },
    /// `ibv_query_qp`.
    QueryQp {
        /// The QP.
        qp: u32,
        /// The attributes asked for (the reply has them all).
        mask: u32,
    },
    /// `ibv_destroy_qp`.
    DestroyQp {
        /// The QP.
        qp: u32,
    },
    /// `ibv_reg_mr(_iova)`.
    RegMr(RegMr),
    /// `ibv_rereg_mr`.
    ReregMr(ReregMr),
    /// `ibv_dereg_mr`.
    DeregMr {
        /// The MR.
        mr: u32,
    },
    /// `ibv_alloc_mw`.
    AllocMw {
        /// The PD.
        pd: u32,
        /// The window type.
        ty: MwType,
    },
    /// `ibv_dealloc_mw`.
    DeallocMw {
        /// The window.
        mw: u32,
    },
    /// `ibv_create_ah`.
    CreateAh {
        /// The PD.
        pd: u32,
        /// The address vector.
        attr: AhAttr,
    },
    /// `ibv_destroy_ah`.
    DestroyAh {
        /// The AH.
        ah: u32,
    },
    /// `ibv_open_xrcd`.
    AllocXrcd,
    /// `ibv_close_xrcd`.
    DeallocXrcd {
        /// The XRC domain.
        xrcd: u32,
    },
    /// `ibv_attach_mcast`.
    AttachMcast {
        /// The QP.
        qp: u32,
        /// The multicast group's GID (as given: the checks are the
        /// agent's).
        gid: [u8; 16],
        /// The group's LID (as given).
        lid: u16,
    },
    /// `ibv_detach_mcast`.
    DetachMcast {
        /// The QP.
        qp: u32,
        /// The group's GID.
        gid: [u8; 16],
        /// The group's LID.
        lid: u16,
    },
}

impl Request {
    /// Its kind ([`kind`]).
    pub fn kind(&self) -> u8 {
        match self {
            Request::AllocPd { .. } => kind::ALLOC_PD,
            Request::DeallocPd { .. } => kind::DEALLOC_PD,
            Request::CreateCq(_) => kind::CREATE_CQ,
            Request::ResizeCq { .. } => kind::RESIZE_CQ,
            Request::DestroyCq { .. } => kind::DESTROY_CQ,
            Request::CreateSrq(_) => kind::CREATE_SRQ,
            Request::ModifySrq { .. } => kind::MODIFY_SRQ,
            Request::QuerySrq { .. } => kind::QUERY_SRQ,
            Request::DestroySrq { .. } => kind::DESTROY_SRQ,
            Request::CreateQp(_) => kind::CREATE_QP,
            Request::ModifyQp { .. } => kind::MODIFY_QP,
            Request::QueryQp { .. } => kind::QUERY_QP,
            Request::DestroyQp { .. } => kind::DESTROY_QP,
            Request::RegMr(_) => kind::REG_MR,
            Request::ReregMr(_) => kind::REREG_MR,
            Request::DeregMr { .. } => kind::DEREG_MR,
            Request::AllocMw { .. } => kind::ALLOC_MW,
            Request::DeallocMw { .. } => kind::DEALLOC_MW,
            Request::CreateAh { .. } => kind::CREATE_AH,
            Request::DestroyAh { .. } => kind::DESTROY_AH,
            Request::AllocXrcd => kind::ALLOC_XRCD,
            Request::DeallocXrcd { .. } => kind::DEALLOC_XRCD,
            Request::AttachMcast { .. } => kind::ATTACH_MCAST,
            Request::DetachMcast { .. } => kind::DETACH_MCAST,
        }
    }

    /// How many descriptors travel with it (the queues' memfds, a CQ's
    /// doorbell and channel), in the order its fields name them.
    pub fn fd_count(&self) -> usize {
        match self {
            Request::CreateCq(c) => 1 + c.doorbell as usize + c.channel as usize,
            Request::ResizeCq { queue, .. } => queue.is_some() as usize,
            Request::CreateSrq(_) => 1,
            Request::CreateQp(c) => c.sq.is_some() as usize + c.rq.is_some() as usize,
            _ => 0,
        }
    }

    /// The message: request `id` with this body.  Err: a value the
    /// encoding refuses or cannot carry (what decoding would refuse, a
    /// handle 0, a field the mask does not name).
    pub fn encode(&self, id: u32) -> Result<Vec<u8>, MsgError> {
        let mut w = Wr::new(self.kind(), self.fd_count(), id);
        self.write_body(&mut w);
        let b = w.finish();
        match Request::decode(&b) {
            Ok((i, back)) if i == id && back == *self => Ok(b),
            Ok(_) => Err(MsgError::NotCanonical),
            Err(e) => Err(e),
        }
    }

    fn write_body(&self, w: &mut Wr) {
        match *self {
            Request::AllocPd { parent } => w.opt(parent),
            Request::DeallocPd { pd: h }
            | Request::DestroyCq { cq: h }
            | Request::QuerySrq { srq: h }
            | Request::DestroySrq { srq: h }
            | Request::DestroyQp { qp: h }
            | Request::DeregMr { mr: h }
            | Request::DeallocMw { mw: h }
            | Request::DestroyAh { ah: h }
            | Request::DeallocXrcd { xrcd: h } => w.u32(h),
            Request::CreateCq(c) => {
                w.u64(c.user_handle);
                w.u32(c.cqe);
                c.queue.write(w);
                w.u32(if c.doorbell { CQ_DOORBELL } else { 0 } | if c.channel { CQ_CHANNEL } else { 0 });
            }
            Request::ResizeCq { cq, cqe, queue } => {
                w.u32(cq);
                w.u32(cqe);
                w.u32(if queue.is_some() { RESIZE_QUEUE } else { 0 });
                if let Some(q) = queue {
                    q.write(w);
                }
            }
            Request::CreateSrq(c) => write_create_srq(w, &c),
            Request::ModifySrq {
                srq,
                mask,
                max_wr,
                srq_limit,
            } => {
                for v in [srq, mask, max_wr, srq_limit] {
                    w.u32(v);
                }
            }
            Request::CreateQp(c) => write_create_qp(w, &c),
            Request::ModifyQp { qp, attr } => {
                w.u32(qp);
                attr.write(w);
            }
            Request::QueryQp { qp, mask } => {
                w.u32(qp);
                w.u32(mask);
            }
            Request::RegMr(m) => {
                w.u32(m.pd);
                w.u32(m.access);
                w.u64(m.addr);
                w.u64(m.length);
                w.u64(m.iova);
            }
            Request::ReregMr(m) => {
                w.u32(m.mr);
                w.u32(m.flags);
                w.opt(m.pd);
                w.u32(m.access);
                w.u64(m.addr);
                w.u64(m.length);
            }
            Request::AllocMw { pd, ty } => {
                w.u32(pd);
                w.u8(ty.ibv() as u8);
                w.0.extend_from_slice(&[0; 3]);
            }
            Request::CreateAh { pd, attr } => {
                w.u32(pd);
                attr.write(w);
            }
            Request::AllocXrcd => {}
            Request::AttachMcast { qp, gid, lid } | Request::DetachMcast { qp, gid, lid } => {
                w.u32(qp);
                w.0.extend_from_slice(&gid);
                w.u16(lid);
                w.u16(0);
            }
        }
    }

    /// Decodes a whole message: its request id and the request.  Any bytes
    /// give one or an error; a reply's kind is [`MsgError::Kind`].
    pub fn decode(b: &[u8]) -> Result<(u32, Request), MsgError> {
        let h = Header::parse(b)?;
        let mut r = Rd(b.get(HEADER..).unwrap_or_default());
        let req = match h.kind {
            kind::ALLOC_PD => Request::AllocPd { parent: r.opt()? },
            kind::DEALLOC_PD => Request::DeallocPd { pd: r.u32()? },
            kind::CREATE_CQ => read_create_cq(&mut r)?,
            kind::RESIZE_CQ => read_resize_cq(&mut r)?,
            kind::DESTROY_CQ => Request::DestroyCq { cq: r.u32()? },
            kind::CREATE_SRQ => read_create_srq(&mut r)?,
            kind::MODIFY_SRQ => Request::ModifySrq {
                srq: r.u32()?,
                mask: r.u32()?,
                max_wr: r.u32()?,
                srq_limit: r.u32()?,
            },
            kind::QUERY_SRQ => Request::QuerySrq { srq: r.u32()? },
            kind::DESTROY_SRQ => Request::DestroySrq { srq: r.u32()? },
            kind::CREATE_QP => read_create_qp(&mut r)?,
            kind::MODIFY_QP => Request::ModifyQp {
                qp: r.u32()?,
                attr: QpAttr::read(&mut r)?,
            },
            kind::QUERY_QP => {
                let qp = r.u32()?;
                let mask = r.u32()?;
                if mask & !QP_ATTR_KNOWN != 0 {
                    return Err(MsgError::Range("QP attribute mask"));
                }
                Request::QueryQp { qp, mask }
            }
            kind::DESTROY_QP => Request::DestroyQp { qp: r.u32()? },
            kind::REG_MR => Request::RegMr(RegMr {
                pd: r.u32()?,
                access: r.u32()?,
                addr: r.u64()?,
                length: r.u64()?,
                iova: r.u64()?,
            }),
            kind::REREG_MR => read_rereg_mr(&mut r)?,
            kind::DEREG_MR => Request::DeregMr { mr: r.u32()? },
            kind::ALLOC_MW => {
                let pd = r.u32()?;
                let ty = MwType::from_ibv(r.u8()? as u32).ok_or(MsgError::Range("window type"))?;
                r.zeros(3)?;
                Request::AllocMw { pd, ty }
            }
            kind::DEALLOC_MW => Request::DeallocMw { mw: r.u32()? },
            kind::CREATE_AH => Request::CreateAh {
                pd: r.u32()?,
                attr: AhAttr::read(&mut r)?,
            },
            kind::DESTROY_AH => Request::DestroyAh { ah: r.u32()? },
            kind::ALLOC_XRCD => Request::AllocXrcd,
            kind::DEALLOC_XRCD => Request::DeallocXrcd { xrcd: r.u32()? },
            k @ (kind::ATTACH_MCAST | kind::DETACH_MCAST) => {
                let qp = r.u32()?;
                let gid = r.arr()?;
                let lid = r.u16()?;
                r.zeros(2)?;
                if k == kind::ATTACH_MCAST {
                    Request::AttachMcast { qp, gid, lid }
                } else {
                    Request::DetachMcast { qp, gid, lid }
                }
            }
            k => return Err(MsgError::Kind(k)),
        };
        r.end()?;
        if h.nfds != req.fd_count() {
            return Err(MsgError::Fds {
                want: req.fd_count(),
                got: h.nfds,
            });
        }
        Ok((h.id, req))
    }
}

fn read_create_cq(r: &mut Rd<'_>) -> Result<Request, MsgError> {
    let user_handle = r.u64()?;
    let cqe = r.u32()?;
    let queue = Queue::read(r)?;
    let fds = r.u32()?;
    if fds & !(CQ_DOORBELL | CQ_CHANNEL) != 0 {
        return Err(MsgError::Range("CQ descriptor bits"));
    }
    Ok(Request::CreateCq(CreateCq {
        user_handle,
        cqe,
        queue,
        doorbell: fds & CQ_DOORBELL != 0,
        channel: fds & CQ_CHANNEL != 0,
    }))
}

fn read_resize_cq(r: &mut Rd<'_>) -> Result<Request, MsgError> {
    let cq = r.u32()?;
    let cqe = r.u32()?;
    let queue = match r.u32()? {
        0 => None,
        RESIZE_QUEUE => Some(Queue::read(r)?),
        _ => return Err(MsgError::Range("resize flags")),
    };
    Ok(Request::ResizeCq { cq, cqe, queue })
}

fn write_create_srq(w: &mut Wr, c: &CreateSrq) {
    w.u64(c.user_handle);
    w.opt(c.pd);
    w.u8(match c.ty {
        SrqType::Basic => IBV_SRQT_BASIC as u8,
        SrqType::Xrc => IBV_SRQT_XRC as u8,
    });
    w.0.extend_from_slice(&[0; 3]);
    w.opt(c.xrcd);
    w.opt(c.cq);
    w.u32(c.max_wr);
    w.u32(c.max_sge);
    w.u32(c.srq_limit);
    c.queue.write(w);
}

fn read_create_srq(r: &mut Rd<'_>) -> Result<Request, MsgError> {
    let user_handle = r.u64()?;
    let pd = r.opt()?;
    let ty = match r.u8()? as u32 {
        IBV_SRQT_BASIC => SrqType::Basic,
        IBV_SRQT_XRC => SrqType::Xrc,
        _ => return Err(MsgError::Range("SRQ type")),
    };
    r.zeros(3)?;
    let c = CreateSrq {
        user_handle,
        pd,
        ty,
        xrcd: r.opt()?,
        cq: r.opt()?,
        max_wr: r.u32()?,
        max_sge: r.u32()?,
        srq_limit: r.u32()?,
        queue: Queue::read(r)?,
    };
    if ty == SrqType::Basic && (c.xrcd.is_some() || c.cq.is_some()) {
        return Err(MsgError::Range("a basic SRQ's XRC domain or CQ"));
    }
    Ok(Request::CreateSrq(c))
}

fn write_create_qp(w: &mut Wr, c: &CreateQp) {
    w.u64(c.user_handle);
    for h in [c.pd, c.xrcd, c.send_cq, c.recv_cq, c.srq] {
        w.opt(h);
    }
    w.u8(c.qp_type.ibv() as u8);
    w.u8(c.sq_sig_all as u8);
    w.u8(if c.sq.is_some() { QP_SQ } else { 0 } | if c.rq.is_some() { QP_RQ } else { 0 });
    w.u8(0);
    c.cap.write(w);
    for q in [c.sq, c.rq].into_iter().flatten() {
        q.write(w);
    }
}

fn read_create_qp(r: &mut Rd<'_>) -> Result<Request, MsgError> {
    let user_handle = r.u64()?;
    let [pd, xrcd, send_cq, recv_cq, srq] = [r.opt()?, r.opt()?, r.opt()?, r.opt()?, r.opt()?];
    let qp_type = QpType::from_ibv(r.u8()? as u32).ok_or(MsgError::Range("QP type"))?;
    let sq_sig_all = r.bool("sq_sig_all")?;
    let queues = r.u8()?;
    if queues & !(QP_SQ | QP_RQ) != 0 {
        return Err(MsgError::Range("QP queue bits"));
    }
    r.zeros(1)?;
    let cap = Caps::read(r)?;
    let sq = if queues & QP_SQ != 0 {
        Some(Queue::read(r)?)
    } else {
        None
    };
    let rq = if queues & QP_RQ != 0 {
        Some(Queue::read(r)?)
    } else {
        None
    };
    Ok(Request::CreateQp(CreateQp {
        user_handle,
        pd,
        xrcd,
        qp_type,
        send_cq,
        recv_cq,
        srq,
        sq_sig_all,
        cap,
        sq,
        rq,
    }))
}

fn read_rereg_mr(r: &mut Rd<'_>) -> Result<Request, MsgError> {
    let mr = r.u32()?;
    let flags = r.u32()?;
    if flags & !IBV_REREG_MR_FLAGS_SUPPORTED != 0 {
        return Err(MsgError::Range("rereg flags"));
    }
    Ok(Request::ReregMr(ReregMr {
        mr,
        flags,
        pd: r.opt()?,
        access: r.u32()?,
        addr: r.u64()?,
        length: r.u64()?,
    }))
}

// ---------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------

/// The agent's answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// The verb failed: its errno (1..=4095).
    Err(i32),
    /// The verb succeeded and returns nothing.
    Done,
    /// A PD or parent domain.
    Pd {
        /// Its handle.
        handle: u32,
    },
    /// A CQ.
    Cq {
        /// Its handle.
        handle: u32,
        /// Its depth (the `cqe` the verb returns).
        cqe: u32,
    },
    /// An SRQ.
    Srq {
        /// Its handle.
        handle: u32,
        /// Its number (XRC senders name it).
        srqn: u32,
        /// `max_wr` as granted.
        max_wr: u32,
        /// `max_sge` as granted.
        max_sge: u32,
    },
    /// `ibv_query_srq`'s answer.
    SrqAttr {
        /// `max_wr`
        max_wr: u32,
        /// `max_sge`
        max_sge: u32,
        /// `srq_limit`
        srq_limit: u32,
    },
    /// A QP.
    Qp {
        /// Its handle.
        handle: u32,
        /// Its number.
        qpn: u32,
        /// Its capabilities as granted.
        cap: Caps,
    },
    /// `ibv_query_qp`'s answer (the fields the mask names).
    QpAttr(QpAttr),
    /// An MR.
    Mr {
        /// Its handle.
        handle: u32,
        /// Its local key.
        lkey: u32,
        /// Its remote key.
        rkey: u32,
    },
    /// A memory window.
    Mw {
        /// Its handle.
        handle: u32,
        /// Its rkey (until a bind changes it).
        rkey: u32,
    },
    /// An address handle.
    Ah {
        /// Its handle.
        handle: u32,
    },
    /// An XRC domain.
    Xrcd {
        /// Its handle.
        handle: u32,
    },
}

impl Reply {
    /// Its kind ([`kind`]).
    pub fn kind(&self) -> u8 {
        match self {
            Reply::Err(_) => kind::ERR,
            Reply::Done => kind::DONE,
            Reply::Pd { .. } => kind::PD,
            Reply::Cq { .. } => kind::CQ,
            Reply::Srq { .. } => kind::SRQ,
            Reply::SrqAttr { .. } => kind::SRQ_ATTR,
            Reply::Qp { .. } => kind::QP,
            Reply::QpAttr(_) => kind::QP_ATTR,
            Reply::Mr { .. } => kind::MR,
            Reply::Mw { .. } => kind::MW,
            Reply::Ah { .. } => kind::AH,
            Reply::Xrcd { .. } => kind::XRCD,
        }
    }

    /// Whether this reply answers a request of kind `req` (`Err` answers
    /// any).
    pub fn answers(&self, req: u8) -> bool {
        let want = match req {
            kind::ALLOC_PD => kind::PD,
            kind::CREATE_CQ => kind::CQ,
            kind::CREATE_SRQ => kind::SRQ,
            kind::QUERY_SRQ => kind::SRQ_ATTR,
            kind::CREATE_QP => kind::QP,
            kind::QUERY_QP => kind::QP_ATTR,
            kind::REG_MR => kind::MR,
            kind::ALLOC_MW => kind::MW,
            kind::CREATE_AH => kind::AH,
            kind::ALLOC_XRCD => kind::XRCD,
            k if (kind::ALLOC_PD..=kind::DETACH_MCAST).contains(&k) => kind::DONE,
            _ => return false,
        };
        self.kind() == kind::ERR || self.kind() == want
    }

    /// The message: the reply to request `id`.  Err: a value the encoding
    /// refuses (an errno out of range, a handle 0, a number over 24 bits).
    pub fn encode(&self, id: u32) -> Result<Vec<u8>, MsgError> {
        let mut w = Wr::new(self.kind(), 0, id);
        match *self {
            Reply::Err(e) => w.u32(e as u32),
            Reply::Done => {}
            Reply::Pd { handle } | Reply::Ah { handle } | Reply::Xrcd { handle } => w.u32(handle),
            Reply::Cq { handle, cqe } => {
                w.u32(handle);
                w.u32(cqe);
            }
            Reply::Srq {
                handle,
                srqn,
                max_wr,
                max_sge,
            } => {
                for v in [handle, srqn, max_wr, max_sge] {
                    w.u32(v);
                }
            }
            Reply::SrqAttr {
                max_wr,
                max_sge,
                srq_limit,
            } => {
                for v in [max_wr, max_sge, srq_limit] {
                    w.u32(v);
                }
            }
            Reply::Qp { handle, qpn, cap } => {
                w.u32(handle);
                w.u32(qpn);
                cap.write(&mut w);
            }
            Reply::QpAttr(a) => a.write(&mut w),
            Reply::Mr { handle, lkey, rkey } => {
                for v in [handle, lkey, rkey] {
                    w.u32(v);
                }
            }
            Reply::Mw { handle, rkey } => {
                w.u32(handle);
                w.u32(rkey);
            }
        }
        let b = w.finish();
        match Reply::decode(&b) {
            Ok((i, back)) if i == id && back == *self => Ok(b),
            Ok(_) => Err(MsgError::NotCanonical),
            Err(e) => Err(e),
        }
    }

    /// Decodes a whole message: its request id and the reply.  Any bytes
    /// give one or an error; a request's kind is [`MsgError::Kind`].
    pub fn decode(b: &[u8]) -> Result<(u32, Reply), MsgError> {
        let h = Header::parse(b)?;
        let mut r = Rd(b.get(HEADER..).unwrap_or_default());
        let num = |r: &mut Rd<'_>| {
            let n = r.u32()?;
            if n > MAX_NUM {
                return Err(MsgError::Range("QP or SRQ number"));
            }
            Ok(n)
        };
        let rep = match h.kind {
            kind::ERR => {
                let e = r.u32()?;
                if e == 0 || e > MAX_ERRNO as u32 {
                    return Err(MsgError::Range("errno"));
                }
                Reply::Err(e as i32)
            }
            kind::DONE => Reply::Done,
            kind::PD => Reply::Pd { handle: r.handle()? },
            kind::CQ => Reply::Cq {
                handle: r.handle()?,
                cqe: r.u32()?,
            },
            kind::SRQ => Reply::Srq {
                handle: r.handle()?,
                srqn: num(&mut r)?,
                max_wr: r.u32()?,
                max_sge: r.u32()?,
            },
            kind::SRQ_ATTR => Reply::SrqAttr {
                max_wr: r.u32()?,
                max_sge: r.u32()?,
                srq_limit: r.u32()?,
            },
            kind::QP => Reply::Qp {
                handle: r.handle()?,
                qpn: num(&mut r)?,
                cap: Caps::read(&mut r)?,
            },
            kind::QP_ATTR => Reply::QpAttr(QpAttr::read(&mut r)?),
            kind::MR => Reply::Mr {
                handle: r.handle()?,
                lkey: r.u32()?,
                rkey: r.u32()?,
            },
            kind::MW => Reply::Mw {
                handle: r.handle()?,
                rkey: r.u32()?,
            },
            kind::AH => Reply::Ah { handle: r.handle()? },
            kind::XRCD => Reply::Xrcd { handle: r.handle()? },
            k => return Err(MsgError::Kind(k)),
        };
        r.end()?;
        if h.nfds != 0 {
            return Err(MsgError::Fds { want: 0, got: h.nfds });
        }
        Ok((h.id, rep))
    }
}

impl From<Result<Reply, i32>> for Reply {
    fn from(r: Result<Reply, i32>) -> Reply {
        r.unwrap_or_else(Reply::Err)
    }
}

// ---------------------------------------------------------------------------
// Sending and receiving
// ---------------------------------------------------------------------------

/// Sends message `msg` (one datagram) on the connected `SOCK_SEQPACKET`
/// socket `sock` with descriptors `fds`, which must be as many as its
/// header names.  A signal is retried; `EAGAIN` of a non-blocking socket
/// is the caller's.
pub fn send(sock: BorrowedFd<'_>, msg: &[u8], fds: &[BorrowedFd<'_>]) -> Result<(), MsgError> {
    let h = Header::parse(msg)?;
    if fds.len() != h.nfds {
        return Err(MsgError::Fds {
            want: h.nfds,
            got: fds.len(),
        });
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    loop {
        let mut cmsg = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() && !cmsg.push(SendAncillaryMessage::ScmRights(fds)) {
            return Err(MsgError::Truncated);
        }
        match sendmsg(sock, &[IoSlice::new(msg)], &mut cmsg, SendFlags::NOSIGNAL) {
            Ok(n) if n == msg.len() => return Ok(()),
            Ok(_) => return Err(MsgError::Truncated),
            Err(Errno::INTR) => continue,
            Err(e) => return Err(MsgError::Io(e)),
        }
    }
}

/// The room for descriptors a receive leaves: more than any message
/// carries, so that a peer sending too many is seen (and all are closed).
const RECV_FDS: usize = 2 * MAX_FDS + 2;

/// Receives one datagram from `sock` into `buf`: its length and the
/// descriptors that came with it (close-on-exec), exactly as many as its
/// header names.  Otherwise (another count, a datagram or control data
/// cut short, a datagram without a valid header) it is an error and every
/// descriptor that came is closed.  A signal is retried; `EAGAIN` of a
/// non-blocking socket is the caller's; the peer's close is
/// [`MsgError::Closed`].
pub fn recv(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Result<(usize, Vec<OwnedFd>), MsgError> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(RECV_FDS))];
    let (n, flags, fds) = loop {
        let mut cmsg = RecvAncillaryBuffer::new(&mut space);
        match recvmsg(sock, &mut [IoSliceMut::new(buf)], &mut cmsg, RecvFlags::CMSG_CLOEXEC) {
            Ok(r) => {
                let mut fds: Vec<OwnedFd> = Vec::new();
                for m in cmsg.drain() {
                    if let RecvAncillaryMessage::ScmRights(it) = m {
                        fds.extend(it);
                    }
                }
                break (r.bytes, r.flags, fds);
            }
            Err(Errno::INTR) => continue,
            Err(e) => return Err(MsgError::Io(e)),
        }
    };
    if flags.intersects(ReturnFlags::TRUNC | ReturnFlags::CTRUNC) || n > buf.len() {
        return Err(MsgError::Truncated);
    }
    if n == 0 && fds.is_empty() {
        return Err(MsgError::Closed);
    }
    let h = Header::parse(&buf[..n])?;
    if h.nfds != fds.len() {
        return Err(MsgError::Fds {
            want: h.nfds,
            got: fds.len(),
        });
    }
    Ok((n, fds))
}

/// Sends request `req` as request `id` with its descriptors (as many as
/// [`Request::fd_count`], in its order).
pub fn send_request(sock: BorrowedFd<'_>, id: u32, req: &Request, fds: &[BorrowedFd<'_>]) -> Result<(), MsgError> {
    send(sock, &req.encode(id)?, fds)
}

/// Receives one request: its id, the request and its descriptors.
pub fn recv_request(sock: BorrowedFd<'_>) -> Result<(u32, Request, Vec<OwnedFd>), MsgError> {
    let mut buf = [0u8; MAX_MSG];
    let (n, fds) = recv(sock, &mut buf)?;
    let (id, req) = Request::decode(&buf[..n])?;
    Ok((id, req, fds))
}

/// Sends reply `rep` to request `id`.
pub fn send_reply(sock: BorrowedFd<'_>, id: u32, rep: &Reply) -> Result<(), MsgError> {
    send(sock, &rep.encode(id)?, &[])
}

/// Receives one reply: the id of the request it answers and the reply.
pub fn recv_reply(sock: BorrowedFd<'_>) -> Result<(u32, Reply), MsgError> {
    let mut buf = [0u8; MAX_MSG];
    let (n, _fds) = recv(sock, &mut buf)?;
    Reply::decode(&buf[..n])
}
