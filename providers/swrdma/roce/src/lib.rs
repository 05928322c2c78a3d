//! RoCE v2 (InfiniBand Architecture Specification, Annex A17) wire format for
//! the software RDMA device: the Base Transport Header and its extension
//! headers, the opcode table, the invariant CRC and the GRH a UD receive
//! gets, so that the device interoperates with the Linux kernel's Soft-RoCE
//! driver (rxe) and RoCE NICs.
//!
//! A RoCE v2 packet is an IPv4 or IPv6 datagram to UDP port 4791 whose UDP
//! payload is: BTH (12 bytes), the extension headers the opcode requires,
//! the payload, 0-3 pad bytes (BTH PadCnt) and the 4-byte ICRC.  All header
//! fields are big-endian.  Extension headers follow the BTH in the order
//! of IBTA 9.2: DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH.
//!
//! Pure Rust, std only, no unsafe code.  Decoding never panics, whatever
//! the input.
#![forbid(unsafe_code)]

mod crc;
pub mod fwd;
mod icrc;

pub use icrc::{grh, grh_ident, icrc, icrc_ident, icrc_ipv4_ident, icrc_ok, IpInfo};

/// The UDP destination port of RoCE v2 (IANA "roce").
pub const ROCE_PORT: u16 = 4791;

/// Base Transport Header.
pub const BTH_LEN: usize = 12;
/// RDMA Extended Transport Header (VA, R_Key, DMA length).
pub const RETH_LEN: usize = 16;
/// ACK Extended Transport Header (syndrome, MSN).
pub const AETH_LEN: usize = 4;
/// Atomic Extended Transport Header (VA, R_Key, swap/add data, compare data).
pub const ATOMIC_ETH_LEN: usize = 28;
/// Atomic Acknowledge Extended Transport Header (original remote data).
pub const ATOMIC_ACK_ETH_LEN: usize = 8;
/// Datagram Extended Transport Header (Q_Key, source QP).
pub const DETH_LEN: usize = 8;
/// Immediate data.
pub const IMM_LEN: usize = 4;
/// Invalidate Extended Transport Header (R_Key to invalidate).
pub const IETH_LEN: usize = 4;
/// The invariant CRC at the end of every packet.
pub const ICRC_LEN: usize = 4;
/// The largest header (BTH + extension headers) of any opcode of the table:
/// the atomic requests (BTH + AtomicETH).  Checked against the table by a test.
pub const MAX_HDR: usize = BTH_LEN + ATOMIC_ETH_LEN;

/// The UDP source port of QP `qpn`'s packets, as the kernel's rxe derives
/// its own (in the dynamic range 0xc000-0xffff: 0xc000 plus the top 14 bits
/// of `qpn` times the 32-bit golden ratio, `hash_32`).  Both ends compute
/// it: our QPs send from it, and a QP that is told its peer's QPN (RTR)
/// opens the flow socket for the peer's port at once, so that neither
/// rxe's nor our peer's packets wait for another process to forward them.
pub fn src_port(qpn: u32) -> u16 {
    0xc000 | ((qpn.wrapping_mul(0x61c8_8647) >> 18) as u16 & 0x3fff)
}

/// PSNs are 24-bit.
pub const PSN_MASK: u32 = 0x00FF_FFFF;
/// QP numbers are 24-bit.
pub const QPN_MASK: u32 = 0x00FF_FFFF;
/// The default (full-membership) partition key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;

/// BTH opcodes (IBTA table 38): bits 7-5 the transport (RC 000, UC 001,
/// RD 010, UD 011), bits 4-0 the operation.
pub mod op {
    pub const RC_SEND_FIRST: u8 = 0x00;
    pub const RC_SEND_MIDDLE: u8 = 0x01;
    pub const RC_SEND_LAST: u8 = 0x02;
    pub const RC_SEND_LAST_IMM: u8 = 0x03;
    pub const RC_SEND_ONLY: u8 = 0x04;
    pub const RC_SEND_ONLY_IMM: u8 = 0x05;
    pub const RC_WRITE_FIRST: u8 = 0x06;
    pub const RC_WRITE_MIDDLE: u8 = 0x07;
    pub const RC_WRITE_LAST: u8 = 0x08;
    pub const RC_WRITE_LAST_IMM: u8 = 0x09;
    pub const RC_WRITE_ONLY: u8 = 0x0a;
    pub const RC_WRITE_ONLY_IMM: u8 = 0x0b;
    pub const RC_READ_REQUEST: u8 = 0x0c;
    pub const RC_READ_RESPONSE_FIRST: u8 = 0x0d;
    pub const RC_READ_RESPONSE_MIDDLE: u8 = 0x0e;
    pub const RC_READ_RESPONSE_LAST: u8 = 0x0f;
    pub const RC_READ_RESPONSE_ONLY: u8 = 0x10;
    pub const RC_ACK: u8 = 0x11;
    pub const RC_ATOMIC_ACK: u8 = 0x12;
    pub const RC_CMP_SWAP: u8 = 0x13;
    pub const RC_FETCH_ADD: u8 = 0x14;
    pub const RC_SEND_LAST_INV: u8 = 0x16;
    pub const RC_SEND_ONLY_INV: u8 = 0x17;

    pub const UC_SEND_FIRST: u8 = 0x20;
    pub const UC_SEND_MIDDLE: u8 = 0x21;
    pub const UC_SEND_LAST: u8 = 0x22;
    pub const UC_SEND_LAST_IMM: u8 = 0x23;
    pub const UC_SEND_ONLY: u8 = 0x24;
    pub const UC_SEND_ONLY_IMM: u8 = 0x25;
    pub const UC_WRITE_FIRST: u8 = 0x26;
    pub const UC_WRITE_MIDDLE: u8 = 0x27;
    pub const UC_WRITE_LAST: u8 = 0x28;
    pub const UC_WRITE_LAST_IMM: u8 = 0x29;
    pub const UC_WRITE_ONLY: u8 = 0x2a;
    pub const UC_WRITE_ONLY_IMM: u8 = 0x2b;

    pub const UD_SEND_ONLY: u8 = 0x64;
    pub const UD_SEND_ONLY_IMM: u8 = 0x65;

    /// RoCE v2 Congestion Notification Packet (Annex A17.9.3): not part of
    /// the table ([`op_info`](crate::op_info) says invalid, `decode` refuses
    /// it); a receiver may recognise it by this opcode before decoding.
    pub const CNP: u8 = 0x81;
}

/// AETH NAK codes (IBTA table 44, syndrome bits 4-0 when bits 6-5 are 11).
pub mod nak {
    pub const PSN_SEQ_ERROR: u8 = 0;
    pub const INVALID_REQUEST: u8 = 1;
    pub const REMOTE_ACCESS_ERROR: u8 = 2;
    pub const REMOTE_OP_ERROR: u8 = 3;
    pub const INVALID_RD_REQUEST: u8 = 4;
}

/// Base Transport Header, field by field.  `pad` and `tver` are ignored by
/// [`encode`] (it writes the pad count of its payload length and TVer 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bth {
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// MigReq.
    pub mig: bool,
    /// PadCnt, 0..=3.
    pub pad: u8,
    /// Transport header version, 4 bits (0).
    pub tver: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    /// Destination QP, 24 bits.
    pub dqpn: u32,
    /// AckReq.
    pub ackreq: bool,
    /// 24 bits.
    pub psn: u32,
}

/// RDMA Extended Transport Header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub len: u32,
}

/// ACK Extended Transport Header: syndrome (IBTA table 43) and 24-bit MSN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aeth {
    pub syndrome: u8,
    pub msn: u32,
}

/// What an AETH syndrome says (bits 6-5; bit 7 is reserved and ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AethKind {
    /// ACK; the credit count is [`Aeth::credits`].
    Ack,
    /// RNR NAK with its 5-bit timer code (see [`rnr_timer_us`]).
    RnrNak(u8),
    /// NAK with its 5-bit code (see [`nak`]).
    Nak(u8),
    /// Syndrome bits 6-5 = 10.
    Reserved,
}

/// The "invalid" credit count of an ACK (IBTA 9.7.7.2: 11111), the one rxe
/// always sends: the responder does not do end-to-end flow control.
pub const CREDITS_INVALID: u8 = 0x1f;

impl Aeth {
    /// A positive ACK of `msn` with the invalid (unlimited) credit count.
    pub const fn ack(msn: u32) -> Aeth {
        Aeth {
            syndrome: CREDITS_INVALID,
            msn: msn & 0x00FF_FFFF,
        }
    }
    /// An RNR NAK with the 5-bit timer code `timer`.
    pub const fn rnr_nak(timer: u8, msn: u32) -> Aeth {
        Aeth {
            syndrome: 0x20 | (timer & 0x1f),
            msn: msn & 0x00FF_FFFF,
        }
    }
    /// A NAK with the 5-bit code `code` (see [`nak`]).
    pub const fn nak(code: u8, msn: u32) -> Aeth {
        Aeth {
            syndrome: 0x60 | (code & 0x1f),
            msn: msn & 0x00FF_FFFF,
        }
    }
    pub const fn kind(&self) -> AethKind {
        let v = self.syndrome & 0x1f;
        match (self.syndrome >> 5) & 3 {
            0 => AethKind::Ack,
            1 => AethKind::RnrNak(v),
            3 => AethKind::Nak(v),
            _ => AethKind::Reserved,
        }
    }
    /// The credit count field of an ACK (meaningless for NAKs).
    pub const fn credits(&self) -> u8 {
        self.syndrome & 0x1f
    }
}

/// The minimum RNR NAK timer (microseconds) of a 5-bit timer code (IBTA table 45).
pub const fn rnr_timer_us(code: u8) -> u32 {
    const T: [u32; 32] = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840, 5_120, 7_680,
        10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
    ];
    T[(code & 0x1f) as usize]
}

/// Atomic Extended Transport Header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicEth {
    pub va: u64,
    pub rkey: u32,
    /// Swap data (CmpSwap) or add data (FetchAdd).
    pub swap_add: u64,
    /// Compare data (CmpSwap; 0 in FetchAdd).
    pub cmp: u64,
}

/// Datagram Extended Transport Header.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deth {
    pub qkey: u32,
    /// Source QP, 24 bits.
    pub sqpn: u32,
}

/// The headers of one packet: the BTH and the extension headers its
/// opcode has (`Some`) or has not (`None`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hdr {
    pub bth: Bth,
    pub reth: Option<Reth>,
    pub aeth: Option<Aeth>,
    pub atomic: Option<AtomicEth>,
    /// AtomicAckETH: the original remote data.
    pub atomic_ack: Option<u64>,
    pub deth: Option<Deth>,
    /// ImmDt: its 4 bytes (network order) read as a big-endian u32.
    pub imm: Option<u32>,
    /// IETH: the R_Key to invalidate.
    pub ieth: Option<u32>,
}

/// Transport service of an opcode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    #[default]
    Rc,
    Uc,
    Ud,
}

/// Operation of an opcode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    #[default]
    Send,
    Write,
    ReadReq,
    ReadResp,
    Ack,
    AtomicAck,
    CmpSwap,
    FetchAdd,
}

/// What the opcode table says about one opcode.  For an opcode outside the
/// table `valid` is false and every other field is its default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpInfo {
    pub valid: bool,
    /// First packet of a message (also true for "only").
    pub first: bool,
    pub middle: bool,
    /// Last packet of a message (also true for "only").
    pub last: bool,
    /// `first && last`.
    pub only: bool,
    /// The packet may carry payload (possibly zero bytes).
    pub has_payload: bool,
    pub reth: bool,
    pub aeth: bool,
    pub atomic: bool,
    pub atomic_ack: bool,
    pub deth: bool,
    pub imm: bool,
    pub ieth: bool,
    pub transport: Transport,
    pub kind: Kind,
    /// BTH + extension headers, bytes.
    pub hdr_len: usize,
}

/// Whether a request packet's payload length fits its place in the
/// message at path MTU `pmtu` bytes, as the kernel's rxe checks it
/// (`check_length`): an only packet carries at most `pmtu` bytes, a first
/// or middle packet exactly `pmtu`, a last packet 1 to `pmtu`.
pub fn payload_fits(info: &OpInfo, len: usize, pmtu: u32) -> bool {
    let pmtu = pmtu as usize;
    if info.only {
        len <= pmtu
    } else if info.first || info.middle {
        len == pmtu
    } else if info.last {
        (1..=pmtu).contains(&len)
    } else {
        true
    }
}

/// Position of a packet in its message.
#[derive(Clone, Copy)]
enum Pos {
    First,
    Middle,
    Last,
    Only,
}

/// Extension header flags for [`info`].
const RETH: u8 = 1;
const AETH: u8 = 2;
const ATOMIC: u8 = 4;
const ATOMIC_ACK: u8 = 8;
const IMM: u8 = 16;
const IETH: u8 = 32;
const PAYLOAD: u8 = 64;

const fn info(transport: Transport, kind: Kind, pos: Pos, flags: u8) -> OpInfo {
    let (first, middle, last) = match pos {
        Pos::First => (true, false, false),
        Pos::Middle => (false, true, false),
        Pos::Last => (false, false, true),
        Pos::Only => (true, false, true),
    };
    let deth = matches!(transport, Transport::Ud);
    let mut hdr_len = BTH_LEN;
    if deth {
        hdr_len += DETH_LEN;
    }
    if flags & RETH != 0 {
        hdr_len += RETH_LEN;
    }
    if flags & ATOMIC != 0 {
        hdr_len += ATOMIC_ETH_LEN;
    }
    if flags & AETH != 0 {
        hdr_len += AETH_LEN;
    }
    if flags & ATOMIC_ACK != 0 {
        hdr_len += ATOMIC_ACK_ETH_LEN;
    }
    if flags & IMM != 0 {
        hdr_len += IMM_LEN;
    }
    if flags & IETH != 0 {
        hdr_len += IETH_LEN;
    }
    OpInfo {
        valid: true,
        first,
        middle,
        last,
        only: first && last,
        has_payload: (flags & PAYLOAD != 0),
        reth: (flags & RETH != 0),
        aeth: (flags & AETH != 0),
        atomic: (flags & ATOMIC != 0),
        atomic_ack: (flags & ATOMIC_ACK != 0),
        deth,
        imm: (flags & IMM != 0),
        ieth: (flags & IETH != 0),
        transport,
        kind,
        hdr_len,
    }
}

/// The opcode table (IBTA table 38, RC/UC/UD opcodes; RD, the IBTA 1.5
/// FLUSH/ATOMIC WRITE and CNP are not in it).
pub const fn op_info(opcode: u8) -> OpInfo {
    use Kind::*;
    use Pos::*;
    let transport = match opcode >> 5 {
        0 => Transport::Rc,
        1 => Transport::Uc,
        3 => Transport::Ud,
        _ => return OpInfo::INVALID,
    };
    let low = opcode & 0x1f;
    // UC: SEND and RDMA WRITE only; UD: SEND Only (with immediate) only.
    let ok = match transport {
        Transport::Rc => low <= 0x14 || low == 0x16 || low == 0x17,
        Transport::Uc => low <= 0x0b,
        Transport::Ud => low == 0x04 || low == 0x05,
    };
    if !ok {
        return OpInfo::INVALID;
    }
    let t = transport;
    match low {
        0x00 => info(t, Send, First, PAYLOAD),
        0x01 => info(t, Send, Middle, PAYLOAD),
        0x02 => info(t, Send, Last, PAYLOAD),
        0x03 => info(t, Send, Last, PAYLOAD | IMM),
        0x04 => info(t, Send, Only, PAYLOAD),
        0x05 => info(t, Send, Only, PAYLOAD | IMM),
        0x06 => info(t, Write, First, PAYLOAD | RETH),
        0x07 => info(t, Write, Middle, PAYLOAD),
        0x08 => info(t, Write, Last, PAYLOAD),
        0x09 => info(t, Write, Last, PAYLOAD | IMM),
        0x0a => info(t, Write, Only, PAYLOAD | RETH),
        0x0b => info(t, Write, Only, PAYLOAD | RETH | IMM),
        0x0c => info(t, ReadReq, Only, RETH),
        0x0d => info(t, ReadResp, First, PAYLOAD | AETH),
        0x0e => info(t, ReadResp, Middle, PAYLOAD),
        0x0f => info(t, ReadResp, Last, PAYLOAD | AETH),
        0x10 => info(t, ReadResp, Only, PAYLOAD | AETH),
        0x11 => info(t, Ack, Only, AETH),
        0x12 => info(t, AtomicAck, Only, AETH | ATOMIC_ACK),
        0x13 => info(t, CmpSwap, Only, ATOMIC),
        0x14 => info(t, FetchAdd, Only, ATOMIC),
        0x16 => info(t, Send, Last, PAYLOAD | IETH),
        0x17 => info(t, Send, Only, PAYLOAD | IETH),
        _ => OpInfo::INVALID,
    }
}

impl OpInfo {
    /// What [`op_info`] says about an opcode outside the table.
    pub const INVALID: OpInfo = OpInfo {
        valid: false,
        first: false,
        middle: false,
        last: false,
        only: false,
        has_payload: false,
        reth: false,
        aeth: false,
        atomic: false,
        atomic_ack: false,
        deth: false,
        imm: false,
        ieth: false,
        transport: Transport::Rc,
        kind: Kind::Send,
        hdr_len: 0,
    };
}

/// The BTH PadCnt for a payload of `payload_len` bytes: what brings it to a
/// multiple of 4.
pub const fn pad_for(payload_len: usize) -> u8 {
    ((4 - (payload_len & 3)) & 3) as u8
}

/// Why [`encode`] or [`decode`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Fewer bytes than the BTH, or than the opcode's headers + pad + ICRC.
    Short,
    /// An opcode outside the table.
    Opcode(u8),
    /// A BTH transport header version other than 0.
    TVer(u8),
    /// The header set lacks an extension header the opcode requires.
    MissingHeader,
    /// The header set has an extension header the opcode does not have.
    ExtraHeader,
    /// Payload (or a pad count) on an opcode that carries none.
    Payload,
    /// A UDP payload that is not a multiple of 4 bytes (every header is, and
    /// the pad brings the payload to one).
    Length,
    /// A field out of its range (a 24-bit QPN, PSN or MSN above 2^24 - 1).
    Field,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Short => f.write_str("packet shorter than its headers, pad and ICRC"),
            Error::Opcode(o) => write!(f, "unknown BTH opcode {o:#04x}"),
            Error::TVer(v) => write!(f, "unsupported BTH transport version {v}"),
            Error::MissingHeader => f.write_str("an extension header the opcode requires is missing"),
            Error::ExtraHeader => f.write_str("an extension header the opcode does not have is present"),
            Error::Payload => f.write_str("payload on an opcode without payload"),
            Error::Length => f.write_str("packet length not a multiple of 4"),
            Error::Field => f.write_str("a 24-bit field (QPN, PSN, MSN) out of range"),
        }
    }
}

impl std::error::Error for Error {}

fn presence(has: bool, want: bool) -> Result<(), Error> {
    match (has, want) {
        (true, false) => Err(Error::ExtraHeader),
        (false, true) => Err(Error::MissingHeader),
        _ => Ok(()),
    }
}

fn check24(v: u32) -> Result<(), Error> {
    if v > 0x00FF_FFFF {
        Err(Error::Field)
    } else {
        Ok(())
    }
}

/// Encodes the BTH (pad count from `payload_len`, TVer 0, reserved bits 0)
/// and the extension headers the opcode requires, in IBTA order, into
/// `out`; returns the header length.  Refuses a header set that does not
/// match the opcode exactly, payload on an opcode without payload, and
/// 24-bit fields out of range.
pub fn encode(h: &Hdr, payload_len: usize, out: &mut [u8; MAX_HDR]) -> Result<usize, Error> {
    let b = &h.bth;
    let oi = op_info(b.opcode);
    if !oi.valid {
        return Err(Error::Opcode(b.opcode));
    }
    presence(h.deth.is_some(), oi.deth)?;
    presence(h.reth.is_some(), oi.reth)?;
    presence(h.atomic.is_some(), oi.atomic)?;
    presence(h.aeth.is_some(), oi.aeth)?;
    presence(h.atomic_ack.is_some(), oi.atomic_ack)?;
    presence(h.imm.is_some(), oi.imm)?;
    presence(h.ieth.is_some(), oi.ieth)?;
    if !oi.has_payload && payload_len != 0 {
        return Err(Error::Payload);
    }
    check24(b.dqpn)?;
    check24(b.psn)?;

    out[0] = b.opcode;
    out[1] = (u8::from(b.se) << 7) | (u8::from(b.mig) << 6) | (pad_for(payload_len) << 4);
    out[2..4].copy_from_slice(&b.pkey.to_be_bytes());
    out[4..8].copy_from_slice(&b.dqpn.to_be_bytes());
    out[4] = (u8::from(b.fecn) << 7) | (u8::from(b.becn) << 6);
    out[8..12].copy_from_slice(&b.psn.to_be_bytes());
    out[8] = u8::from(b.ackreq) << 7;
    let mut n = BTH_LEN;
    let mut put = |bytes: &[u8]| {
        out[n..n + bytes.len()].copy_from_slice(bytes);
        n += bytes.len();
    };
    if let Some(d) = h.deth {
        check24(d.sqpn)?;
        put(&d.qkey.to_be_bytes());
        put(&d.sqpn.to_be_bytes()); // the byte above the 24 bits is reserved (0)
    }
    if let Some(r) = h.reth {
        put(&r.va.to_be_bytes());
        put(&r.rkey.to_be_bytes());
        put(&r.len.to_be_bytes());
    }
    if let Some(a) = h.atomic {
        put(&a.va.to_be_bytes());
        put(&a.rkey.to_be_bytes());
        put(&a.swap_add.to_be_bytes());
        put(&a.cmp.to_be_bytes());
    }
    if let Some(a) = h.aeth {
        check24(a.msn)?;
        put(&(u32::from(a.syndrome) << 24 | a.msn).to_be_bytes());
    }
    if let Some(v) = h.atomic_ack {
        put(&v.to_be_bytes());
    }
    if let Some(v) = h.imm {
        put(&v.to_be_bytes());
    }
    if let Some(v) = h.ieth {
        put(&v.to_be_bytes());
    }
    debug_assert_eq!(n, oi.hdr_len);
    Ok(n)
}

/// Reads big-endian fields off a byte slice whose length was checked.
struct Rd<'a> {
    b: &'a [u8],
    at: usize,
}

impl Rd<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.b[self.at..self.at + N]);
        self.at += N;
        a
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take())
    }
}

/// Decodes a UDP payload (BTH, extension headers, payload, pad, ICRC):
/// the opcode must be in the table, TVer 0, the length enough for the
/// headers, the pad and the ICRC and a multiple of 4 (so the pad count is
/// the one of the payload length), and an opcode without payload must have
/// neither payload nor pad.  Returns the headers and the payload without
/// pad and ICRC.  Reserved fields are ignored.  Does NOT check the ICRC
/// (see [`icrc_ok`]).
pub fn decode(pkt: &[u8]) -> Result<(Hdr, &[u8]), Error> {
    if pkt.len() < BTH_LEN {
        return Err(Error::Short);
    }
    let opcode = pkt[0];
    let oi = op_info(opcode);
    if !oi.valid {
        return Err(Error::Opcode(opcode));
    }
    let tver = pkt[1] & 0x0f;
    if tver != 0 {
        return Err(Error::TVer(tver));
    }
    let pad = (pkt[1] >> 4) & 3;
    let end = oi.hdr_len + usize::from(pad) + ICRC_LEN;
    if pkt.len() < end {
        return Err(Error::Short);
    }
    if !oi.has_payload && (pad != 0 || pkt.len() != end) {
        return Err(Error::Payload);
    }
    if !pkt.len().is_multiple_of(4) {
        return Err(Error::Length);
    }
    let mut r = Rd { b: pkt, at: 0 };
    let w0: [u8; 4] = r.take();
    let w1 = r.u32();
    let w2 = r.u32();
    let mut h = Hdr {
        bth: Bth {
            opcode,
            se: w0[1] & 0x80 != 0,
            mig: w0[1] & 0x40 != 0,
            pad,
            tver,
            pkey: u16::from_be_bytes([w0[2], w0[3]]),
            fecn: w1 & 0x8000_0000 != 0,
            becn: w1 & 0x4000_0000 != 0,
            dqpn: w1 & QPN_MASK,
            ackreq: w2 & 0x8000_0000 != 0,
            psn: w2 & PSN_MASK,
        },
        ..Hdr::default()
    };
    if oi.deth {
        let qkey = r.u32();
        let sqpn = r.u32() & QPN_MASK;
        h.deth = Some(Deth { qkey, sqpn });
    }
    if oi.reth {
        h.reth = Some(Reth {
            va: r.u64(),
            rkey: r.u32(),
            len: r.u32(),
        });
    }
    if oi.atomic {
        h.atomic = Some(AtomicEth {
            va: r.u64(),
            rkey: r.u32(),
            swap_add: r.u64(),
            cmp: r.u64(),
        });
    }
    if oi.aeth {
        let v = r.u32();
        h.aeth = Some(Aeth {
            syndrome: (v >> 24) as u8,
            msn: v & 0x00FF_FFFF,
        });
    }
    if oi.atomic_ack {
        h.atomic_ack = Some(r.u64());
    }
    if oi.imm {
        h.imm = Some(r.u32());
    }
    if oi.ieth {
        h.ieth = Some(r.u32());
    }
    debug_assert_eq!(r.at, oi.hdr_len);
    Ok((h, &pkt[oi.hdr_len..pkt.len() - ICRC_LEN - usize::from(pad)]))
}

/// `a + n` on 24 bits.
pub const fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// The signed distance `a - b` of two 24-bit PSNs, in [-2^23, 2^23).
pub const fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

#[cfg(test)]
mod tests;
