//! The wire state of a QP (requester and responder sides of RoCE v2):
//! plain data in a host's QP state (the provider's `QpSt`), driven by `engine.rs`.

use crate::wire::sock::{FlowPin, Sender};
use ibverbs_abi::ibv_sge;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Arc;
use swrdma_rc::op::Op;
use swrdma_rc::responder::{AtomicHistory, ReadHistory};

/// One request of the send queue, as the wire needs it.
pub struct Req {
    /// The `SWqe` it completes (`seq`).
    pub seq: u64,
    /// The operation (the engine's one enum for both transports).
    pub kind: Op,
    /// Its first PSN and how many PSNs it takes (READ: its responses).
    pub first: u32,
    pub npkts: u32,
    pub len: u64,
    pub raddr: u64,
    pub rkey: u32,
    pub imm: Option<u32>,
    pub inv: Option<u32>,
    pub cmp: u64,
    pub swap: u64,
    pub se: bool,
    /// Where the data comes from (SEND, WRITE: process addresses, checked
    /// at post) or goes to (READ, atomics).
    pub sges: Vec<ibv_sge>,
    /// Inline data (a copy taken at post).
    pub data: Option<Vec<u8>>,
    /// UD: source, destination, destination QPN, Q_Key, traffic class.
    pub ud: Option<(IpAddr, IpAddr, u32, u32, u8)>,
    /// A READ goes on the wire in requests of at most `READ_CHUNK`
    /// packets: this one's offset in the work request's local buffer, and
    /// whether it is the last (which completes the work request).
    pub loff: u64,
    pub last: bool,
    /// READ: the responses in (bit i: packet i), placed already.
    pub got: u64,
    /// READ: the responder's path MTU, as its responses show it (0: none
    /// seen yet).  Ours unless the two ends were given different path
    /// MTUs; a larger one answers in fewer, longer packets (rxe's
    /// requester takes those too).
    pub rmtu: u32,
}

impl Req {
    /// Request number `seq`: `len` bytes of `kind` (`se`: solicited), with
    /// no address, immediate, data or place on the wire yet.
    pub fn new(seq: u64, kind: Op, len: u64, se: bool) -> Req {
        Req {
            seq,
            kind,
            first: 0,
            npkts: 0,
            len,
            raddr: 0,
            rkey: 0,
            imm: None,
            inv: None,
            cmp: 0,
            swap: 0,
            se,
            sges: Vec::new(),
            data: None,
            ud: None,
            loff: 0,
            last: true,
            got: 0,
            rmtu: 0,
        }
    }
}

/// The wire state of a QP (in `QpSt`).
#[derive(Default)]
pub struct WQp {
    /// Our address (from the source GID) and the peer's (RC, UC).
    pub src: Option<IpAddr>,
    pub dst: Option<IpAddr>,
    pub pmtu: u32,
    // ---- requester
    /// The next PSN to assign, and the oldest one not acknowledged.
    pub psn: u32,
    pub una: u32,
    pub reqs: VecDeque<Req>,
    /// READ response data taken but not yet placed (`engine.rs`
    /// `defer_read`): placed in one copy before its READ completes, before
    /// a response it is not followed by, and at the end of each receive
    /// batch.
    pub rpend: PendRead,
    /// The next packet to (re)transmit: request index, packet in it.
    pub next: usize,
    pub next_pkt: u32,
    /// Retransmission deadline (CLOCK_MONOTONIC ns; 0: none).
    pub timer_at: u64,
    /// No (re)transmission before this time (an RNR NAK's timer).
    pub rnr_until: u64,
    /// Packets sent since the last AckReq.
    pub since_ackreq: u32,
    /// The congestion window (PSNs; 0: not started), and the oldest
    /// unacknowledged PSN of the last loss it was halved for.
    pub cwnd: u32,
    pub loss_at: Option<u32>,
    // ---- responder
    pub epsn: u32,
    pub msn: u32,
    /// A PSN sequence error NAK went out for `epsn` (one per gap).
    pub nak_seq: bool,
    /// A SEND message is being received (RC, UC), or a WRITE (its
    /// remaining target: va, rkey, bytes left; its total length).
    pub in_send: bool,
    pub recv_off: u64,
    pub wr: Option<(u64, u32, u64, u64)>,
    /// RDMA WRITE or SEND packets taken in sequence but not yet placed
    /// (`engine.rs` `defer_write`, `defer_send`): placed in one copy before
    /// anything else of this QP is done or answered, and at the end of each
    /// receive batch.
    pub pend: PendWrite,
    /// UC: the rest of a message is dropped (a packet of it was lost).
    pub uc_drop: bool,
    /// The results of the last atomics (PSN, original value).
    pub atomics: AtomicHistory,
    /// The READs executed last (duplicates are answered from them only).
    pub reads: ReadHistory,
    // ---- steering (RC, UC; from RTR on): the socket of our own source
    // port, and the flow socket of the peer's.
    pub sender: Option<Arc<Sender>>,
    pub flow: Option<FlowPin>,
}

/// The data of consecutive packets of one RDMA WRITE (their checks passed
/// when they came) or one SEND whose placement waits: contiguous from `va`
/// of `rkey` (a SEND, `send`: from byte `va` of the receive in `cur`);
/// `first` is the first packet's PSN and `meta` how it came (None: nothing
/// waits).
#[derive(Default)]
pub struct PendWrite {
    pub send: bool,
    pub bytes: Vec<u8>,
    pub va: u64,
    pub rkey: u32,
    pub first: u32,
    pub meta: Option<swrdma_roce::fwd::RxMeta>,
}

/// The data of consecutive READ response packets of one READ (part)
/// whose placement waits: `bytes` for byte `at` on of the work request of
/// READ `seq`, the part at `loff` of it (None: nothing waits).
#[derive(Default)]
pub struct PendRead {
    pub read: Option<(u64, u64)>,
    pub at: u64,
    pub bytes: Vec<u8>,
}
