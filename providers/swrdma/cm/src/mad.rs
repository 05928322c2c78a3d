//! Communication Management MADs (IBTA Vol 1 chapter 12): the nine messages
//! the connection manager sends and receives (REQ, MRA, REJ, REP, RTU, DREQ,
//! DREP, SIDR_REQ, SIDR_REP) as typed structs, and their encoding to and
//! decoding from a whole 256-byte MAD.
//!
//! Layout: a 24-byte common MAD header (IBTA 13.4.2; base version 1,
//! management class 0x07 = CM, class version 2, method Send), then the
//! message (IBTA Vol 1 tables 106-120).  Every field's position is the one
//! the Linux kernel's `include/rdma/ibta_vol1_c12.h` gives, i.e. a byte
//! offset into the message after the MAD header, the width of the
//! big-endian word (8, 16 or 32 bits) the field is read through and the
//! field's width, with the field's first bit at the most significant end of
//! its first byte (IBTA's Byte[Bit] notation).  Those positions are written
//! down once, in the per-message tables below (`req_at`, `rep_at`, ...), and
//! everything else goes through them.  The ECE vendor ID (IBTA comment 9434)
//! is carried as the kernel carries it: 24 contiguous bits of REQ byte 5, and
//! split over the reserved byte after the QPN, the EECN and the starting PSN
//! in REP; in SIDR_REP 16 bits at byte 6 and 8 bits at byte 11.
//!
//! Encoding writes reserved bits as zero and truncates a value wider than
//! its field to the field's width; decoding ignores reserved bits.  LAP and
//! APR (alternate path migration) are not supported: decoding refuses them.
//! Decoding never panics, whatever the input.

use std::fmt;

/// The length of a whole MAD.
pub const MAD_LEN: usize = 256;
/// The length of the common MAD header in front of every CM message.
pub const MAD_HDR_LEN: usize = 24;
/// Management class of the Communication Manager.
pub const CM_MGMT_CLASS: u8 = 0x07;
/// The CM class version this module speaks.
pub const CM_CLASS_VERSION: u8 = 2;
/// The MAD base version.
pub const MAD_BASE_VERSION: u8 = 1;
/// The one method every CM message is sent with (`Send`).
pub const METHOD_SEND: u8 = 0x03;

/// Private data bytes of a REQ.
pub const REQ_PRIVATE_DATA: usize = 92;
/// Private data bytes of an MRA.
pub const MRA_PRIVATE_DATA: usize = 222;
/// Private data bytes of a REJ.
pub const REJ_PRIVATE_DATA: usize = 148;
/// Private data bytes of a REP.
pub const REP_PRIVATE_DATA: usize = 196;
/// Private data bytes of an RTU.
pub const RTU_PRIVATE_DATA: usize = 224;
/// Private data bytes of a DREQ.
pub const DREQ_PRIVATE_DATA: usize = 220;
/// Private data bytes of a DREP.
pub const DREP_PRIVATE_DATA: usize = 224;
/// Private data bytes of a SIDR_REQ.
pub const SIDR_REQ_PRIVATE_DATA: usize = 216;
/// Private data bytes of a SIDR_REP.
pub const SIDR_REP_PRIVATE_DATA: usize = 136;
/// Bytes of a REJ's Additional Rejection Information.
pub const REJ_ARI_LEN: usize = 72;
/// Bytes of a SIDR_REP's Additional Information.
pub const SIDR_REP_INFO_LEN: usize = 72;

/// Attribute IDs of the CM messages this module handles.
#[repr(u16)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrId {
    /// ConnectRequest.
    Req = 0x10,
    /// MsgRcptAck.
    Mra = 0x11,
    /// ConnectReject.
    Rej = 0x12,
    /// ConnectReply.
    Rep = 0x13,
    /// ReadyToUse.
    Rtu = 0x14,
    /// DisconnectRequest.
    Dreq = 0x15,
    /// DisconnectReply.
    Drep = 0x16,
    /// ServiceIDResReq.
    SidrReq = 0x17,
    /// ServiceIDResReqResp.
    SidrRep = 0x18,
}

impl AttrId {
    /// The attribute for a wire value, `None` for one this module does not
    /// handle (LAP 0x19 and APR 0x1A included).
    pub fn from_wire(v: u16) -> Option<AttrId> {
        Some(match v {
            0x10 => AttrId::Req,
            0x11 => AttrId::Mra,
            0x12 => AttrId::Rej,
            0x13 => AttrId::Rep,
            0x14 => AttrId::Rtu,
            0x15 => AttrId::Dreq,
            0x16 => AttrId::Drep,
            0x17 => AttrId::SidrReq,
            0x18 => AttrId::SidrRep,
            _ => return None,
        })
    }
}

/// REJ reason codes (IBTA Vol 1 table 109), named as the kernel's
/// `enum ib_cm_rej_reason` names them.  34 is not assigned.
pub mod rej_reason {
    pub const NO_QP: u16 = 1;
    pub const NO_EEC: u16 = 2;
    pub const NO_RESOURCES: u16 = 3;
    pub const TIMEOUT: u16 = 4;
    pub const UNSUPPORTED: u16 = 5;
    pub const INVALID_COMM_ID: u16 = 6;
    pub const INVALID_COMM_INSTANCE: u16 = 7;
    pub const INVALID_SERVICE_ID: u16 = 8;
    pub const INVALID_TRANSPORT_TYPE: u16 = 9;
    pub const STALE_CONN: u16 = 10;
    pub const RDC_NOT_EXIST: u16 = 11;
    pub const INVALID_GID: u16 = 12;
    pub const INVALID_LID: u16 = 13;
    pub const INVALID_SL: u16 = 14;
    pub const INVALID_TRAFFIC_CLASS: u16 = 15;
    pub const INVALID_HOP_LIMIT: u16 = 16;
    pub const INVALID_PACKET_RATE: u16 = 17;
    pub const INVALID_ALT_GID: u16 = 18;
    pub const INVALID_ALT_LID: u16 = 19;
    pub const INVALID_ALT_SL: u16 = 20;
    pub const INVALID_ALT_TRAFFIC_CLASS: u16 = 21;
    pub const INVALID_ALT_HOP_LIMIT: u16 = 22;
    pub const INVALID_ALT_PACKET_RATE: u16 = 23;
    pub const PORT_CM_REDIRECT: u16 = 24;
    pub const PORT_REDIRECT: u16 = 25;
    pub const INVALID_MTU: u16 = 26;
    pub const INSUFFICIENT_RESP_RESOURCES: u16 = 27;
    pub const CONSUMER_DEFINED: u16 = 28;
    pub const INVALID_RNR_RETRY: u16 = 29;
    pub const DUPLICATE_LOCAL_COMM_ID: u16 = 30;
    pub const INVALID_CLASS_VERSION: u16 = 31;
    pub const INVALID_FLOW_LABEL: u16 = 32;
    pub const INVALID_ALT_FLOW_LABEL: u16 = 33;
    pub const VENDOR_OPTION_NOT_SUPPORTED: u16 = 35;
}

/// SIDR_REP status values (IBTA Vol 1 table 121).
pub mod sidr_status {
    pub const SUCCESS: u8 = 0;
    pub const UNSUPPORTED: u8 = 1;
    pub const REJECT: u8 = 2;
    pub const NO_QP: u8 = 3;
    pub const REDIRECT: u8 = 4;
    pub const UNSUPPORTED_VERSION: u8 = 5;
}

// ---------------------------------------------------------------------------
// Field locations
// ---------------------------------------------------------------------------

/// Where a field of at most 32 bits lives in a MAD: the big-endian word
/// holding it and the field's place in that word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bits {
    /// Offset in the MAD of the word, naturally aligned to its size.
    word: usize,
    /// The word's size in bytes: 1, 2 or 4.
    size: usize,
    /// Position of the field's least significant bit in the word.
    shift: u32,
    /// The field's width in bits.
    width: u32,
}

/// A field that starts at bit `bit` (0 = most significant) of message byte
/// `off` and is `width` bits wide, accessed through the naturally aligned
/// big-endian word of `size` bytes that contains that byte.  Rejected at
/// compile time when the field does not fit in that word or in the MAD.
const fn bits(size: usize, off: usize, bit: u32, width: u32) -> Bits {
    let at = MAD_HDR_LEN + off;
    let word = at - at % size;
    let lead = (at % size) as u32 * 8 + bit;
    assert!(width >= 1 && lead + width <= size as u32 * 8 && word + size <= MAD_LEN);
    Bits {
        word,
        size,
        shift: size as u32 * 8 - lead - width,
        width,
    }
}

/// `width` bits from the top of the 32-bit word holding message byte `off`
/// onwards (the kernel's `CM_FIELD32_LOC`).
const fn w32(off: usize, width: u32) -> Bits {
    bits(4, off, 0, width)
}

/// `width` bits from the top of message byte `off` onwards, within its
/// 16-bit word (the kernel's `CM_FIELD16_LOC`).
const fn w16(off: usize, width: u32) -> Bits {
    bits(2, off, 0, width)
}

/// The top `width` bits of message byte `off` (the kernel's `CM_FIELD8_LOC`).
const fn w8(off: usize, width: u32) -> Bits {
    bits(1, off, 0, width)
}

/// `width` bits of message byte `off` from bit `bit` (0 = most significant)
/// down (the kernel's `CM_FIELD_BLOC`).
const fn b8(off: usize, bit: u32, width: u32) -> Bits {
    bits(1, off, bit, width)
}

/// The MAD offset of a byte-aligned field (64-bit numbers, GIDs, byte
/// arrays) at message byte `off`.
const fn at(off: usize) -> usize {
    MAD_HDR_LEN + off
}

impl Bits {
    fn mask(self) -> u32 {
        u32::MAX >> (32 - self.width)
    }

    fn word_value(self, b: &[u8]) -> u32 {
        b[self.word..self.word + self.size]
            .iter()
            .fold(0, |w, &x| (w << 8) | u32::from(x))
    }

    fn get(self, b: &[u8]) -> u32 {
        (self.word_value(b) >> self.shift) & self.mask()
    }

    fn get8(self, b: &[u8]) -> u8 {
        self.get(b) as u8
    }

    fn get16(self, b: &[u8]) -> u16 {
        self.get(b) as u16
    }

    fn flag(self, b: &[u8]) -> bool {
        self.get(b) != 0
    }

    /// Stores the low `width` bits of `v`, leaving the rest of the word alone.
    fn set(self, b: &mut [u8], v: u32) {
        let m = self.mask() << self.shift;
        let w = (self.word_value(b) & !m) | ((v << self.shift) & m);
        b[self.word..self.word + self.size].copy_from_slice(&w.to_be_bytes()[4 - self.size..]);
    }
}

fn get64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(array(b, at))
}

fn set64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

fn array<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

/// The common MAD header (IBTA Vol 1 13.4.2), offsets into the MAD.
mod hdr_at {
    pub const BASE_VERSION: usize = 0;
    pub const MGMT_CLASS: usize = 1;
    pub const CLASS_VERSION: usize = 2;
    pub const METHOD: usize = 3;
    pub const STATUS: usize = 4;
    pub const TID: usize = 8;
    pub const ATTR_ID: usize = 16;
}

/// Table 106, REQ.
mod req_at {
    use super::{at, b8, w16, w32, w8, Bits};
    pub const LOCAL_COMM_ID: Bits = w32(0, 32);
    pub const VENDOR_ID: Bits = w32(5, 24);
    pub const SERVICE_ID: usize = at(8);
    pub const LOCAL_CA_GUID: usize = at(16);
    pub const LOCAL_QKEY: Bits = w32(28, 32);
    pub const LOCAL_QPN: Bits = w32(32, 24);
    pub const RESPONDER_RESOURCES: Bits = w8(35, 8);
    pub const LOCAL_EECN: Bits = w32(36, 24);
    pub const INITIATOR_DEPTH: Bits = w8(39, 8);
    pub const REMOTE_EECN: Bits = w32(40, 24);
    pub const REMOTE_CM_RESPONSE_TIMEOUT: Bits = w8(43, 5);
    pub const TRANSPORT_TYPE: Bits = b8(43, 5, 2);
    pub const END_TO_END_FLOW_CONTROL: Bits = b8(43, 7, 1);
    pub const STARTING_PSN: Bits = w32(44, 24);
    pub const LOCAL_CM_RESPONSE_TIMEOUT: Bits = w8(47, 5);
    pub const RETRY_COUNT: Bits = b8(47, 5, 3);
    pub const PARTITION_KEY: Bits = w16(48, 16);
    pub const PATH_MTU: Bits = w8(50, 4);
    pub const RDC_EXISTS: Bits = b8(50, 4, 1);
    pub const RNR_RETRY_COUNT: Bits = b8(50, 5, 3);
    pub const MAX_CM_RETRIES: Bits = w8(51, 4);
    pub const SRQ: Bits = b8(51, 4, 1);
    pub const EXTENDED_TRANSPORT_TYPE: Bits = b8(51, 5, 3);
    pub const PRIMARY: super::PathAt = super::PathAt {
        local_lid: w16(52, 16),
        remote_lid: w16(54, 16),
        local_gid: at(56),
        remote_gid: at(72),
        flow_label: w32(88, 20),
        packet_rate: b8(91, 2, 6),
        traffic_class: w8(92, 8),
        hop_limit: w8(93, 8),
        sl: w8(94, 4),
        subnet_local: b8(94, 4, 1),
        local_ack_timeout: w8(95, 5),
    };
    pub const ALTERNATE: super::PathAt = super::PathAt {
        local_lid: w16(96, 16),
        remote_lid: w16(98, 16),
        local_gid: at(100),
        remote_gid: at(116),
        flow_label: w32(132, 20),
        packet_rate: b8(135, 2, 6),
        traffic_class: w8(136, 8),
        hop_limit: w8(137, 8),
        sl: w8(138, 4),
        subnet_local: b8(138, 4, 1),
        local_ack_timeout: w8(139, 5),
    };
    // Byte 139 bit 5 is SAP Supported, which this module leaves zero.
    pub const PRIVATE_DATA: usize = at(140);
}

/// The locations of one path of a REQ.
struct PathAt {
    local_lid: Bits,
    remote_lid: Bits,
    local_gid: usize,
    remote_gid: usize,
    flow_label: Bits,
    packet_rate: Bits,
    traffic_class: Bits,
    hop_limit: Bits,
    sl: Bits,
    subnet_local: Bits,
    local_ack_timeout: Bits,
}

/// Table 107, MRA.
mod mra_at {
    use super::{at, w32, w8, Bits};
    pub const LOCAL_COMM_ID: Bits = w32(0, 32);
    pub const REMOTE_COMM_ID: Bits = w32(4, 32);
    pub const MESSAGE_MRAED: Bits = w8(8, 2);
    pub const SERVICE_TIMEOUT: Bits = w8(9, 5);
    pub const PRIVATE_DATA: usize = at(10);
}

/// Table 108, REJ.
mod rej_at {
    use super::{at, w16, w32, w8, Bits};
    pub const LOCAL_COMM_ID: Bits = w32(0, 32);
    pub const REMOTE_COMM_ID: Bits = w32(4, 32);
    pub const MESSAGE_REJECTED: Bits = w8(8, 2);
    pub const REJECT_INFO_LENGTH: Bits = w8(9, 7);
    pub const REASON: Bits = w16(10, 16);
    pub const ARI: usize = at(12);
    pub const PRIVATE_DATA: usize = at(84);
}

/// Table 110, REP.
mod rep_at {
    use super::{at, b8, w32, w8, Bits};
    pub const LOCAL_COMM_ID: Bits = w32(0, 32);
    pub const REMOTE_COMM_ID: Bits = w32(4, 32);
    pub const LOCAL_QKEY: Bits = w32(8, 32);
    pub const LOCAL_QPN: Bits = w32(12, 24);
    pub const VENDOR_ID_H: Bits = w8(15, 8);
    pub const LOCAL_EECN: Bits = w32(16, 24);
    pub const VENDOR_ID_M: Bits = w8(19, 8);
    pub const STARTING_PSN: Bits = w32(20, 24);
    pub const VENDOR_ID_L: Bits = w8(23, 8);
    pub const RESPONDER_RESOURCES: Bits = w8(24, 8);
    pub const INITIATOR_DEPTH: Bits = w8(25, 8);
    pub const TARGET_ACK_DELAY: Bits = w8(26, 5);
    pub const FAILOVER_ACCEPTED: Bits = b8(26, 5, 2);
    pub const END_TO_END_FLOW_CONTROL: Bits = b8(26, 7, 1);
    pub const RNR_RETRY_COUNT: Bits = w8(27, 3);
    pub const SRQ: Bits = b8(27, 3, 1);
    pub const LOCAL_CA_GUID: usize = at(28);
    pub const PRIVATE_DATA: usize = at(36);
}

/// Table 111, RTU.
mod rtu_at {
    use super::{at, w32, Bits};
    pub const LOCAL_COMM_ID: Bits = w32(0, 32);
    pub const REMOTE_COMM_ID: Bits = w32(4, 32);
    pub const PRIVATE_DATA: usize = at(8);
}

/// Table 112, DREQ.
mod dreq_at {
    use super::{at, w32, Bits};
    pub const LOCAL_COMM_ID: Bits = w32(0, 32);
    pub const REMOTE_COMM_ID: Bits = w32(4, 32);
    pub const REMOTE_QPN_EECN: Bits = w32(8, 24);
    pub const PRIVATE_DATA: usize = at(12);
}

/// Table 113, DREP.
mod drep_at {
    use super::{at, w32, Bits};
    pub const LOCAL_COMM_ID: Bits = w32(0, 32);
    pub const REMOTE_COMM_ID: Bits = w32(4, 32);
    pub const PRIVATE_DATA: usize = at(8);
}

/// Table 119, SIDR_REQ.
mod sidr_req_at {
    use super::{at, w16, w32, Bits};
    pub const REQUEST_ID: Bits = w32(0, 32);
    pub const PARTITION_KEY: Bits = w16(4, 16);
    pub const SERVICE_ID: usize = at(8);
    pub const PRIVATE_DATA: usize = at(16);
}

/// Table 120, SIDR_REP.
mod sidr_rep_at {
    use super::{at, w16, w32, w8, Bits};
    pub const REQUEST_ID: Bits = w32(0, 32);
    pub const STATUS: Bits = w8(4, 8);
    pub const ADDITIONAL_INFO_LENGTH: Bits = w8(5, 8);
    pub const VENDOR_ID_H: Bits = w16(6, 16);
    pub const QPN: Bits = w32(8, 24);
    pub const VENDOR_ID_L: Bits = w8(11, 8);
    pub const SERVICE_ID: usize = at(12);
    pub const QKEY: Bits = w32(20, 32);
    pub const ADDITIONAL_INFO: usize = at(24);
    pub const PRIVATE_DATA: usize = at(96);
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/// One path of a REQ (primary or alternate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Path {
    pub local_lid: u16,
    pub remote_lid: u16,
    pub local_gid: [u8; 16],
    pub remote_gid: [u8; 16],
    /// 20 bits.
    pub flow_label: u32,
    /// 6 bits.
    pub packet_rate: u8,
    pub traffic_class: u8,
    pub hop_limit: u8,
    /// 4 bits.
    pub sl: u8,
    pub subnet_local: bool,
    /// 5 bits.
    pub local_ack_timeout: u8,
}

impl Path {
    fn write(&self, b: &mut [u8], p: &PathAt) {
        p.local_lid.set(b, self.local_lid.into());
        p.remote_lid.set(b, self.remote_lid.into());
        b[p.local_gid..p.local_gid + 16].copy_from_slice(&self.local_gid);
        b[p.remote_gid..p.remote_gid + 16].copy_from_slice(&self.remote_gid);
        p.flow_label.set(b, self.flow_label);
        p.packet_rate.set(b, self.packet_rate.into());
        p.traffic_class.set(b, self.traffic_class.into());
        p.hop_limit.set(b, self.hop_limit.into());
        p.sl.set(b, self.sl.into());
        p.subnet_local.set(b, self.subnet_local.into());
        p.local_ack_timeout.set(b, self.local_ack_timeout.into());
    }

    fn read(b: &[u8], p: &PathAt) -> Path {
        Path {
            local_lid: p.local_lid.get16(b),
            remote_lid: p.remote_lid.get16(b),
            local_gid: array(b, p.local_gid),
            remote_gid: array(b, p.remote_gid),
            flow_label: p.flow_label.get(b),
            packet_rate: p.packet_rate.get8(b),
            traffic_class: p.traffic_class.get8(b),
            hop_limit: p.hop_limit.get8(b),
            sl: p.sl.get8(b),
            subnet_local: p.subnet_local.flag(b),
            local_ack_timeout: p.local_ack_timeout.get8(b),
        }
    }
}

/// ConnectRequest (IBTA Vol 1 12.6.5, table 106).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Req {
    pub local_comm_id: u32,
    /// ECE vendor ID, 24 bits (message byte 5).
    pub vendor_id: u32,
    pub service_id: u64,
    /// The sender's CA GUID: its 8 wire bytes read as a big-endian number.
    pub local_ca_guid: u64,
    pub local_qkey: u32,
    /// 24 bits.
    pub local_qpn: u32,
    pub responder_resources: u8,
    /// 24 bits.
    pub local_eecn: u32,
    pub initiator_depth: u8,
    /// 24 bits.
    pub remote_eecn: u32,
    /// 5 bits.
    pub remote_cm_response_timeout: u8,
    /// 2 bits: 0 RC, 1 UC, 3 see `extended_transport_type`.
    pub transport_type: u8,
    pub end_to_end_flow_control: bool,
    /// 24 bits.
    pub starting_psn: u32,
    /// 5 bits.
    pub local_cm_response_timeout: u8,
    /// 3 bits.
    pub retry_count: u8,
    pub partition_key: u16,
    /// 4 bits.
    pub path_mtu: u8,
    pub rdc_exists: bool,
    /// 3 bits.
    pub rnr_retry_count: u8,
    /// 4 bits.
    pub max_cm_retries: u8,
    pub srq: bool,
    /// 3 bits.
    pub extended_transport_type: u8,
    pub primary: Path,
    pub alternate: Path,
    pub private_data: [u8; REQ_PRIVATE_DATA],
}

impl Default for Req {
    fn default() -> Self {
        Req {
            local_comm_id: 0,
            vendor_id: 0,
            service_id: 0,
            local_ca_guid: 0,
            local_qkey: 0,
            local_qpn: 0,
            responder_resources: 0,
            local_eecn: 0,
            initiator_depth: 0,
            remote_eecn: 0,
            remote_cm_response_timeout: 0,
            transport_type: 0,
            end_to_end_flow_control: false,
            starting_psn: 0,
            local_cm_response_timeout: 0,
            retry_count: 0,
            partition_key: 0,
            path_mtu: 0,
            rdc_exists: false,
            rnr_retry_count: 0,
            max_cm_retries: 0,
            srq: false,
            extended_transport_type: 0,
            primary: Path::default(),
            alternate: Path::default(),
            private_data: [0; REQ_PRIVATE_DATA],
        }
    }
}

impl Req {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use req_at as f;
        f::LOCAL_COMM_ID.set(b, self.local_comm_id);
        f::VENDOR_ID.set(b, self.vendor_id);
        set64(b, f::SERVICE_ID, self.service_id);
        set64(b, f::LOCAL_CA_GUID, self.local_ca_guid);
        f::LOCAL_QKEY.set(b, self.local_qkey);
        f::LOCAL_QPN.set(b, self.local_qpn);
        f::RESPONDER_RESOURCES.set(b, self.responder_resources.into());
        f::LOCAL_EECN.set(b, self.local_eecn);
        f::INITIATOR_DEPTH.set(b, self.initiator_depth.into());
        f::REMOTE_EECN.set(b, self.remote_eecn);
        f::REMOTE_CM_RESPONSE_TIMEOUT.set(b, self.remote_cm_response_timeout.into());
        f::TRANSPORT_TYPE.set(b, self.transport_type.into());
        f::END_TO_END_FLOW_CONTROL.set(b, self.end_to_end_flow_control.into());
        f::STARTING_PSN.set(b, self.starting_psn);
        f::LOCAL_CM_RESPONSE_TIMEOUT.set(b, self.local_cm_response_timeout.into());
        f::RETRY_COUNT.set(b, self.retry_count.into());
        f::PARTITION_KEY.set(b, self.partition_key.into());
        f::PATH_MTU.set(b, self.path_mtu.into());
        f::RDC_EXISTS.set(b, self.rdc_exists.into());
        f::RNR_RETRY_COUNT.set(b, self.rnr_retry_count.into());
        f::MAX_CM_RETRIES.set(b, self.max_cm_retries.into());
        f::SRQ.set(b, self.srq.into());
        f::EXTENDED_TRANSPORT_TYPE.set(b, self.extended_transport_type.into());
        self.primary.write(b, &f::PRIMARY);
        self.alternate.write(b, &f::ALTERNATE);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + REQ_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> Req {
        use req_at as f;
        Req {
            local_comm_id: f::LOCAL_COMM_ID.get(b),
            vendor_id: f::VENDOR_ID.get(b),
            service_id: get64(b, f::SERVICE_ID),
            local_ca_guid: get64(b, f::LOCAL_CA_GUID),
            local_qkey: f::LOCAL_QKEY.get(b),
            local_qpn: f::LOCAL_QPN.get(b),
            responder_resources: f::RESPONDER_RESOURCES.get8(b),
            local_eecn: f::LOCAL_EECN.get(b),
            initiator_depth: f::INITIATOR_DEPTH.get8(b),
            remote_eecn: f::REMOTE_EECN.get(b),
            remote_cm_response_timeout: f::REMOTE_CM_RESPONSE_TIMEOUT.get8(b),
            transport_type: f::TRANSPORT_TYPE.get8(b),
            end_to_end_flow_control: f::END_TO_END_FLOW_CONTROL.flag(b),
            starting_psn: f::STARTING_PSN.get(b),
            local_cm_response_timeout: f::LOCAL_CM_RESPONSE_TIMEOUT.get8(b),
            retry_count: f::RETRY_COUNT.get8(b),
            partition_key: f::PARTITION_KEY.get16(b),
            path_mtu: f::PATH_MTU.get8(b),
            rdc_exists: f::RDC_EXISTS.flag(b),
            rnr_retry_count: f::RNR_RETRY_COUNT.get8(b),
            max_cm_retries: f::MAX_CM_RETRIES.get8(b),
            srq: f::SRQ.flag(b),
            extended_transport_type: f::EXTENDED_TRANSPORT_TYPE.get8(b),
            primary: Path::read(b, &f::PRIMARY),
            alternate: Path::read(b, &f::ALTERNATE),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// MsgRcptAck (IBTA Vol 1 12.6.6, table 107).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mra {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// 2 bits: 0 REQ, 1 REP, 2 LAP.
    pub message_mraed: u8,
    /// 5 bits.
    pub service_timeout: u8,
    pub private_data: [u8; MRA_PRIVATE_DATA],
}

impl Default for Mra {
    fn default() -> Self {
        Mra {
            local_comm_id: 0,
            remote_comm_id: 0,
            message_mraed: 0,
            service_timeout: 0,
            private_data: [0; MRA_PRIVATE_DATA],
        }
    }
}

impl Mra {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use mra_at as f;
        f::LOCAL_COMM_ID.set(b, self.local_comm_id);
        f::REMOTE_COMM_ID.set(b, self.remote_comm_id);
        f::MESSAGE_MRAED.set(b, self.message_mraed.into());
        f::SERVICE_TIMEOUT.set(b, self.service_timeout.into());
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + MRA_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> Mra {
        use mra_at as f;
        Mra {
            local_comm_id: f::LOCAL_COMM_ID.get(b),
            remote_comm_id: f::REMOTE_COMM_ID.get(b),
            message_mraed: f::MESSAGE_MRAED.get8(b),
            service_timeout: f::SERVICE_TIMEOUT.get8(b),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// ConnectReject (IBTA Vol 1 12.6.7, table 108).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rej {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// 2 bits: 0 REQ, 1 REP, 2 other.
    pub message_rejected: u8,
    /// 7 bits.
    pub reject_info_length: u8,
    /// One of [`rej_reason`].
    pub reason: u16,
    pub ari: [u8; REJ_ARI_LEN],
    pub private_data: [u8; REJ_PRIVATE_DATA],
}

impl Default for Rej {
    fn default() -> Self {
        Rej {
            local_comm_id: 0,
            remote_comm_id: 0,
            message_rejected: 0,
            reject_info_length: 0,
            reason: 0,
            ari: [0; REJ_ARI_LEN],
            private_data: [0; REJ_PRIVATE_DATA],
        }
    }
}

impl Rej {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use rej_at as f;
        f::LOCAL_COMM_ID.set(b, self.local_comm_id);
        f::REMOTE_COMM_ID.set(b, self.remote_comm_id);
        f::MESSAGE_REJECTED.set(b, self.message_rejected.into());
        f::REJECT_INFO_LENGTH.set(b, self.reject_info_length.into());
        f::REASON.set(b, self.reason.into());
        b[f::ARI..f::ARI + REJ_ARI_LEN].copy_from_slice(&self.ari);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + REJ_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> Rej {
        use rej_at as f;
        Rej {
            local_comm_id: f::LOCAL_COMM_ID.get(b),
            remote_comm_id: f::REMOTE_COMM_ID.get(b),
            message_rejected: f::MESSAGE_REJECTED.get8(b),
            reject_info_length: f::REJECT_INFO_LENGTH.get8(b),
            reason: f::REASON.get16(b),
            ari: array(b, f::ARI),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// ConnectReply (IBTA Vol 1 12.6.8, table 110).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rep {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    pub local_qkey: u32,
    /// 24 bits.
    pub local_qpn: u32,
    /// ECE vendor ID, 24 bits: bits 23..16 in message byte 15, 15..8 in
    /// byte 19, 7..0 in byte 23 (the bytes after the QPN, EECN and PSN).
    pub vendor_id: u32,
    /// 24 bits.
    pub local_eecn: u32,
    /// 24 bits.
    pub starting_psn: u32,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    /// 5 bits.
    pub target_ack_delay: u8,
    /// 2 bits.
    pub failover_accepted: u8,
    pub end_to_end_flow_control: bool,
    /// 3 bits.
    pub rnr_retry_count: u8,
    pub srq: bool,
    /// The sender's CA GUID: its 8 wire bytes read as a big-endian number.
    pub local_ca_guid: u64,
    pub private_data: [u8; REP_PRIVATE_DATA],
}

impl Default for Rep {
    fn default() -> Self {
        Rep {
            local_comm_id: 0,
            remote_comm_id: 0,
            local_qkey: 0,
            local_qpn: 0,
            vendor_id: 0,
            local_eecn: 0,
            starting_psn: 0,
            responder_resources: 0,
            initiator_depth: 0,
            target_ack_delay: 0,
            failover_accepted: 0,
            end_to_end_flow_control: false,
            rnr_retry_count: 0,
            srq: false,
            local_ca_guid: 0,
            private_data: [0; REP_PRIVATE_DATA],
        }
    }
}

impl Rep {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use rep_at as f;
        f::LOCAL_COMM_ID.set(b, self.local_comm_id);
        f::REMOTE_COMM_ID.set(b, self.remote_comm_id);
        f::LOCAL_QKEY.set(b, self.local_qkey);
        f::LOCAL_QPN.set(b, self.local_qpn);
        f::VENDOR_ID_H.set(b, self.vendor_id >> 16);
        f::LOCAL_EECN.set(b, self.local_eecn);
        f::VENDOR_ID_M.set(b, self.vendor_id >> 8);
        f::STARTING_PSN.set(b, self.starting_psn);
        f::VENDOR_ID_L.set(b, self.vendor_id);
        f::RESPONDER_RESOURCES.set(b, self.responder_resources.into());
        f::INITIATOR_DEPTH.set(b, self.initiator_depth.into());
        f::TARGET_ACK_DELAY.set(b, self.target_ack_delay.into());
        f::FAILOVER_ACCEPTED.set(b, self.failover_accepted.into());
        f::END_TO_END_FLOW_CONTROL.set(b, self.end_to_end_flow_control.into());
        f::RNR_RETRY_COUNT.set(b, self.rnr_retry_count.into());
        f::SRQ.set(b, self.srq.into());
        set64(b, f::LOCAL_CA_GUID, self.local_ca_guid);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + REP_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> Rep {
        use rep_at as f;
        Rep {
            local_comm_id: f::LOCAL_COMM_ID.get(b),
            remote_comm_id: f::REMOTE_COMM_ID.get(b),
            local_qkey: f::LOCAL_QKEY.get(b),
            local_qpn: f::LOCAL_QPN.get(b),
            vendor_id: (f::VENDOR_ID_H.get(b) << 16) | (f::VENDOR_ID_M.get(b) << 8) | f::VENDOR_ID_L.get(b),
            local_eecn: f::LOCAL_EECN.get(b),
            starting_psn: f::STARTING_PSN.get(b),
            responder_resources: f::RESPONDER_RESOURCES.get8(b),
            initiator_depth: f::INITIATOR_DEPTH.get8(b),
            target_ack_delay: f::TARGET_ACK_DELAY.get8(b),
            failover_accepted: f::FAILOVER_ACCEPTED.get8(b),
            end_to_end_flow_control: f::END_TO_END_FLOW_CONTROL.flag(b),
            rnr_retry_count: f::RNR_RETRY_COUNT.get8(b),
            srq: f::SRQ.flag(b),
            local_ca_guid: get64(b, f::LOCAL_CA_GUID),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// ReadyToUse (IBTA Vol 1 12.6.9, table 111).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rtu {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    pub private_data: [u8; RTU_PRIVATE_DATA],
}

impl Default for Rtu {
    fn default() -> Self {
        Rtu {
            local_comm_id: 0,
            remote_comm_id: 0,
            private_data: [0; RTU_PRIVATE_DATA],
        }
    }
}

impl Rtu {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use rtu_at as f;
        f::LOCAL_COMM_ID.set(b, self.local_comm_id);
        f::REMOTE_COMM_ID.set(b, self.remote_comm_id);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + RTU_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> Rtu {
        use rtu_at as f;
        Rtu {
            local_comm_id: f::LOCAL_COMM_ID.get(b),
            remote_comm_id: f::REMOTE_COMM_ID.get(b),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// DisconnectRequest (IBTA Vol 1 12.6.10, table 112).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dreq {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    /// 24 bits.
    pub remote_qpn_eecn: u32,
    pub private_data: [u8; DREQ_PRIVATE_DATA],
}

impl Default for Dreq {
    fn default() -> Self {
        Dreq {
            local_comm_id: 0,
            remote_comm_id: 0,
            remote_qpn_eecn: 0,
            private_data: [0; DREQ_PRIVATE_DATA],
        }
    }
}

impl Dreq {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use dreq_at as f;
        f::LOCAL_COMM_ID.set(b, self.local_comm_id);
        f::REMOTE_COMM_ID.set(b, self.remote_comm_id);
        f::REMOTE_QPN_EECN.set(b, self.remote_qpn_eecn);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + DREQ_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> Dreq {
        use dreq_at as f;
        Dreq {
            local_comm_id: f::LOCAL_COMM_ID.get(b),
            remote_comm_id: f::REMOTE_COMM_ID.get(b),
            remote_qpn_eecn: f::REMOTE_QPN_EECN.get(b),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// DisconnectReply (IBTA Vol 1 12.6.11, table 113).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drep {
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    pub private_data: [u8; DREP_PRIVATE_DATA],
}

impl Default for Drep {
    fn default() -> Self {
        Drep {
            local_comm_id: 0,
            remote_comm_id: 0,
            private_data: [0; DREP_PRIVATE_DATA],
        }
    }
}

impl Drep {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use drep_at as f;
        f::LOCAL_COMM_ID.set(b, self.local_comm_id);
        f::REMOTE_COMM_ID.set(b, self.remote_comm_id);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + DREP_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> Drep {
        use drep_at as f;
        Drep {
            local_comm_id: f::LOCAL_COMM_ID.get(b),
            remote_comm_id: f::REMOTE_COMM_ID.get(b),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// ServiceIDResReq (IBTA Vol 1 12.11.1, table 119).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SidrReq {
    pub request_id: u32,
    pub partition_key: u16,
    pub service_id: u64,
    pub private_data: [u8; SIDR_REQ_PRIVATE_DATA],
}

impl Default for SidrReq {
    fn default() -> Self {
        SidrReq {
            request_id: 0,
            partition_key: 0,
            service_id: 0,
            private_data: [0; SIDR_REQ_PRIVATE_DATA],
        }
    }
}

impl SidrReq {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use sidr_req_at as f;
        f::REQUEST_ID.set(b, self.request_id);
        f::PARTITION_KEY.set(b, self.partition_key.into());
        set64(b, f::SERVICE_ID, self.service_id);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + SIDR_REQ_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> SidrReq {
        use sidr_req_at as f;
        SidrReq {
            request_id: f::REQUEST_ID.get(b),
            partition_key: f::PARTITION_KEY.get16(b),
            service_id: get64(b, f::SERVICE_ID),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// ServiceIDResReqResp (IBTA Vol 1 12.11.2, table 120).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SidrRep {
    pub request_id: u32,
    /// One of [`sidr_status`].
    pub status: u8,
    pub additional_info_length: u8,
    /// ECE vendor ID, 24 bits: bits 23..8 in message bytes 6-7, bits 7..0
    /// in byte 11 (the byte after the QPN).
    pub vendor_id: u32,
    /// 24 bits.
    pub qpn: u32,
    pub service_id: u64,
    pub qkey: u32,
    pub additional_info: [u8; SIDR_REP_INFO_LEN],
    pub private_data: [u8; SIDR_REP_PRIVATE_DATA],
}

impl Default for SidrRep {
    fn default() -> Self {
        SidrRep {
            request_id: 0,
            status: 0,
            additional_info_length: 0,
            vendor_id: 0,
            qpn: 0,
            service_id: 0,
            qkey: 0,
            additional_info: [0; SIDR_REP_INFO_LEN],
            private_data: [0; SIDR_REP_PRIVATE_DATA],
        }
    }
}

impl SidrRep {
    /// All fields zero.
    pub fn new() -> Self {
        Self::default()
    }

    fn write(&self, b: &mut [u8]) {
        use sidr_rep_at as f;
        f::REQUEST_ID.set(b, self.request_id);
        f::STATUS.set(b, self.status.into());
        f::ADDITIONAL_INFO_LENGTH.set(b, self.additional_info_length.into());
        f::VENDOR_ID_H.set(b, self.vendor_id >> 8);
        f::QPN.set(b, self.qpn);
        f::VENDOR_ID_L.set(b, self.vendor_id);
        set64(b, f::SERVICE_ID, self.service_id);
        f::QKEY.set(b, self.qkey);
        b[f::ADDITIONAL_INFO..f::ADDITIONAL_INFO + SIDR_REP_INFO_LEN].copy_from_slice(&self.additional_info);
        b[f::PRIVATE_DATA..f::PRIVATE_DATA + SIDR_REP_PRIVATE_DATA].copy_from_slice(&self.private_data);
    }

    fn read(b: &[u8]) -> SidrRep {
        use sidr_rep_at as f;
        SidrRep {
            request_id: f::REQUEST_ID.get(b),
            status: f::STATUS.get8(b),
            additional_info_length: f::ADDITIONAL_INFO_LENGTH.get8(b),
            vendor_id: (f::VENDOR_ID_H.get(b) << 8) | f::VENDOR_ID_L.get(b),
            qpn: f::QPN.get(b),
            service_id: get64(b, f::SERVICE_ID),
            qkey: f::QKEY.get(b),
            additional_info: array(b, f::ADDITIONAL_INFO),
            private_data: array(b, f::PRIVATE_DATA),
        }
    }
}

/// One CM message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Msg {
    Req(Req),
    Mra(Mra),
    Rej(Rej),
    Rep(Rep),
    Rtu(Rtu),
    Dreq(Dreq),
    Drep(Drep),
    SidrReq(SidrReq),
    SidrRep(SidrRep),
}

impl Msg {
    /// The attribute ID the message travels under.
    pub fn attr_id(&self) -> AttrId {
        match self {
            Msg::Req(_) => AttrId::Req,
            Msg::Mra(_) => AttrId::Mra,
            Msg::Rej(_) => AttrId::Rej,
            Msg::Rep(_) => AttrId::Rep,
            Msg::Rtu(_) => AttrId::Rtu,
            Msg::Dreq(_) => AttrId::Dreq,
            Msg::Drep(_) => AttrId::Drep,
            Msg::SidrReq(_) => AttrId::SidrReq,
            Msg::SidrRep(_) => AttrId::SidrRep,
        }
    }
}

/// A CM MAD: the transaction ID of its header and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mad {
    pub tid: u64,
    pub msg: Msg,
}

/// Why [`Mad::decode`] refused a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadError {
    /// Shorter than [`MAD_LEN`].
    Short,
    /// Base version other than [`MAD_BASE_VERSION`].
    BaseVersion(u8),
    /// Management class other than [`CM_MGMT_CLASS`].
    Class(u8),
    /// Class version other than [`CM_CLASS_VERSION`].
    ClassVersion(u8),
    /// Method other than [`METHOD_SEND`].
    Method(u8),
    /// An attribute ID this module does not handle.
    Attr(u16),
    /// A nonzero status.
    Status(u16),
}

impl fmt::Display for MadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MadError::Short => write!(f, "CM MAD shorter than {MAD_LEN} bytes"),
            MadError::BaseVersion(v) => write!(f, "MAD base version {v} (want {MAD_BASE_VERSION})"),
            MadError::Class(c) => write!(f, "management class {c:#04x} is not CM ({CM_MGMT_CLASS:#04x})"),
            MadError::ClassVersion(v) => write!(f, "CM class version {v} (want {CM_CLASS_VERSION})"),
            MadError::Method(m) => write!(f, "CM method {m:#04x} (want Send, {METHOD_SEND:#04x})"),
            MadError::Attr(a) => write!(f, "unsupported CM attribute ID {a:#06x}"),
            MadError::Status(s) => write!(f, "nonzero MAD status {s:#06x}"),
        }
    }
}

impl std::error::Error for MadError {}

impl Mad {
    /// The whole MAD: header (base version 1, class CM, class version 2,
    /// method Send, status 0, class-specific 0, the TID big-endian, the
    /// attribute ID, attribute modifier 0) and the message, reserved bits
    /// zero.
    pub fn encode(&self) -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[hdr_at::BASE_VERSION] = MAD_BASE_VERSION;
        b[hdr_at::MGMT_CLASS] = CM_MGMT_CLASS;
        b[hdr_at::CLASS_VERSION] = CM_CLASS_VERSION;
        b[hdr_at::METHOD] = METHOD_SEND;
        set64(&mut b, hdr_at::TID, self.tid);
        let attr = self.msg.attr_id() as u16;
        b[hdr_at::ATTR_ID..hdr_at::ATTR_ID + 2].copy_from_slice(&attr.to_be_bytes());
        match &self.msg {
            Msg::Req(m) => m.write(&mut b),
            Msg::Mra(m) => m.write(&mut b),
            Msg::Rej(m) => m.write(&mut b),
            Msg::Rep(m) => m.write(&mut b),
            Msg::Rtu(m) => m.write(&mut b),
            Msg::Dreq(m) => m.write(&mut b),
            Msg::Drep(m) => m.write(&mut b),
            Msg::SidrReq(m) => m.write(&mut b),
            Msg::SidrRep(m) => m.write(&mut b),
        }
        b
    }

    /// Parses a CM MAD.  Bytes past [`MAD_LEN`] are ignored, and so are
    /// reserved bits, the class-specific word and the attribute modifier.
    pub fn decode(b: &[u8]) -> Result<Mad, MadError> {
        if b.len() < MAD_LEN {
            return Err(MadError::Short);
        }
        let b = &b[..MAD_LEN];
        match b[hdr_at::BASE_VERSION] {
            MAD_BASE_VERSION => {}
            v => return Err(MadError::BaseVersion(v)),
        }
        match b[hdr_at::MGMT_CLASS] {
            CM_MGMT_CLASS => {}
            c => return Err(MadError::Class(c)),
        }
        match b[hdr_at::CLASS_VERSION] {
            CM_CLASS_VERSION => {}
            v => return Err(MadError::ClassVersion(v)),
        }
        match b[hdr_at::METHOD] {
            METHOD_SEND => {}
            m => return Err(MadError::Method(m)),
        }
        let status = u16::from_be_bytes([b[hdr_at::STATUS], b[hdr_at::STATUS + 1]]);
        if status != 0 {
            return Err(MadError::Status(status));
        }
        let attr = u16::from_be_bytes([b[hdr_at::ATTR_ID], b[hdr_at::ATTR_ID + 1]]);
        let msg = match AttrId::from_wire(attr).ok_or(MadError::Attr(attr))? {
            AttrId::Req => Msg::Req(Req::read(b)),
            AttrId::Mra => Msg::Mra(Mra::read(b)),
            AttrId::Rej => Msg::Rej(Rej::read(b)),
            AttrId::Rep => Msg::Rep(Rep::read(b)),
            AttrId::Rtu => Msg::Rtu(Rtu::read(b)),
            AttrId::Dreq => Msg::Dreq(Dreq::read(b)),
            AttrId::Drep => Msg::Drep(Drep::read(b)),
            AttrId::SidrReq => Msg::SidrReq(SidrReq::read(b)),
            AttrId::SidrRep => Msg::SidrRep(SidrRep::read(b)),
        };
        Ok(Mad {
            tid: get64(b, hdr_at::TID),
            msg,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One field of a message: its name, a setter that sets it to all ones
    /// (everything else left zero), and where those ones must land in the
    /// MAD, as (byte, first bit counted from the MSB, width in bits) runs.
    type Case<T> = (&'static str, fn(&mut T), &'static [(usize, usize, usize)]);

    fn bit(b: &[u8], p: usize) -> bool {
        (b[p / 8] >> (7 - p % 8)) & 1 == 1
    }

    /// For every field: setting it alone to all ones changes exactly its own
    /// bits of the MAD, no two fields share a bit, and the message decodes
    /// back.
    fn check_fields<T: Default>(wrap: fn(T) -> Msg, cases: &[Case<T>]) {
        let base = Mad {
            tid: 0,
            msg: wrap(T::default()),
        }
        .encode();
        assert!(base[MAD_HDR_LEN..].iter().all(|&x| x == 0));
        let mut owner: Vec<Option<&str>> = vec![None; MAD_LEN * 8];
        owner[..MAD_HDR_LEN * 8].fill(Some("MAD header"));
        for &(name, set, runs) in cases {
            let mut m = T::default();
            set(&mut m);
            let mad = Mad { tid: 0, msg: wrap(m) };
            let enc = mad.encode();
            let mut expect = vec![false; MAD_LEN * 8];
            for &(byte, first, width) in runs {
                for i in 0..width {
                    let p = byte * 8 + first + i;
                    assert!(
                        owner[p].is_none(),
                        "{name} overlaps {:?} at MAD byte {} bit {}",
                        owner[p],
                        p / 8,
                        p % 8
                    );
                    owner[p] = Some(name);
                    expect[p] = true;
                }
            }
            for (p, &want) in expect.iter().enumerate() {
                let changed = bit(&enc, p) != bit(&base, p);
                assert_eq!(changed, want, "{name}: MAD byte {} bit {} (from the MSB)", p / 8, p % 8);
            }
            assert_eq!(Mad::decode(&enc), Ok(mad), "{name} round trip");
        }
    }

    fn check_round_trip(msg: Msg) {
        let mad = Mad {
            tid: 0x0123_4567_89AB_CDEF,
            msg,
        };
        let enc = mad.encode();
        assert_eq!(Mad::decode(&enc), Ok(mad.clone()));
        assert_eq!(Mad::decode(&enc).unwrap().encode(), enc);
    }

    /// Distinct nonzero bytes, starting at `seed`.
    fn fill<const N: usize>(seed: u8) -> [u8; N] {
        let mut a = [0u8; N];
        for (i, x) in a.iter_mut().enumerate() {
            *x = seed.wrapping_add(i as u8) | 1;
        }
        a
    }

    /// The MAD header this module writes, for hand-built expectations.
    fn header(attr: u16, tid: u64) -> [u8; MAD_LEN] {
        let mut b = [0u8; MAD_LEN];
        b[..4].copy_from_slice(&[1, 0x07, 2, 0x03]);
        b[8..16].copy_from_slice(&tid.to_be_bytes());
        b[16..18].copy_from_slice(&attr.to_be_bytes());
        b
    }

    fn check_known(mad: &Mad, want: &[u8; MAD_LEN]) {
        let enc = mad.encode();
        for i in 0..MAD_LEN {
            assert_eq!(enc[i], want[i], "MAD byte {i}");
        }
        assert_eq!(Mad::decode(want).as_ref(), Ok(mad));
    }

    #[test]
    fn req_fields() {
        let cases: &[Case<Req>] = &[
            ("local_comm_id", |m| m.local_comm_id = u32::MAX, &[(24, 0, 32)]),
            ("vendor_id", |m| m.vendor_id = 0xFF_FFFF, &[(29, 0, 24)]),
            ("service_id", |m| m.service_id = u64::MAX, &[(32, 0, 64)]),
            ("local_ca_guid", |m| m.local_ca_guid = u64::MAX, &[(40, 0, 64)]),
            ("local_qkey", |m| m.local_qkey = u32::MAX, &[(52, 0, 32)]),
            ("local_qpn", |m| m.local_qpn = 0xFF_FFFF, &[(56, 0, 24)]),
            ("responder_resources", |m| m.responder_resources = 0xFF, &[(59, 0, 8)]),
            ("local_eecn", |m| m.local_eecn = 0xFF_FFFF, &[(60, 0, 24)]),
            ("initiator_depth", |m| m.initiator_depth = 0xFF, &[(63, 0, 8)]),
            ("remote_eecn", |m| m.remote_eecn = 0xFF_FFFF, &[(64, 0, 24)]),
            (
                "remote_cm_response_timeout",
                |m| m.remote_cm_response_timeout = 31,
                &[(67, 0, 5)],
            ),
            ("transport_type", |m| m.transport_type = 3, &[(67, 5, 2)]),
            (
                "end_to_end_flow_control",
                |m| m.end_to_end_flow_control = true,
                &[(67, 7, 1)],
            ),
            ("starting_psn", |m| m.starting_psn = 0xFF_FFFF, &[(68, 0, 24)]),
            (
                "local_cm_response_timeout",
                |m| m.local_cm_response_timeout = 31,
                &[(71, 0, 5)],
            ),
            ("retry_count", |m| m.retry_count = 7, &[(71, 5, 3)]),
            ("partition_key", |m| m.partition_key = 0xFFFF, &[(72, 0, 16)]),
            ("path_mtu", |m| m.path_mtu = 15, &[(74, 0, 4)]),
            ("rdc_exists", |m| m.rdc_exists = true, &[(74, 4, 1)]),
            ("rnr_retry_count", |m| m.rnr_retry_count = 7, &[(74, 5, 3)]),
            ("max_cm_retries", |m| m.max_cm_retries = 15, &[(75, 0, 4)]),
            ("srq", |m| m.srq = true, &[(75, 4, 1)]),
            (
                "extended_transport_type",
                |m| m.extended_transport_type = 7,
                &[(75, 5, 3)],
            ),
            ("primary.local_lid", |m| m.primary.local_lid = 0xFFFF, &[(76, 0, 16)]),
            ("primary.remote_lid", |m| m.primary.remote_lid = 0xFFFF, &[(78, 0, 16)]),
            (
                "primary.local_gid",
                |m| m.primary.local_gid = [0xFF; 16],
                &[(80, 0, 128)],
            ),
            (
                "primary.remote_gid",
                |m| m.primary.remote_gid = [0xFF; 16],
                &[(96, 0, 128)],
            ),
            (
                "primary.flow_label",
                |m| m.primary.flow_label = 0xF_FFFF,
                &[(112, 0, 20)],
            ),
            ("primary.packet_rate", |m| m.primary.packet_rate = 63, &[(115, 2, 6)]),
            (
                "primary.traffic_class",
                |m| m.primary.traffic_class = 0xFF,
                &[(116, 0, 8)],
            ),
            ("primary.hop_limit", |m| m.primary.hop_limit = 0xFF, &[(117, 0, 8)]),
            ("primary.sl", |m| m.primary.sl = 15, &[(118, 0, 4)]),
            (
                "primary.subnet_local",
                |m| m.primary.subnet_local = true,
                &[(118, 4, 1)],
            ),
            (
                "primary.local_ack_timeout",
                |m| m.primary.local_ack_timeout = 31,
                &[(119, 0, 5)],
            ),
            (
                "alternate.local_lid",
                |m| m.alternate.local_lid = 0xFFFF,
                &[(120, 0, 16)],
            ),
            (
                "alternate.remote_lid",
                |m| m.alternate.remote_lid = 0xFFFF,
                &[(122, 0, 16)],
            ),
            (
                "alternate.local_gid",
                |m| m.alternate.local_gid = [0xFF; 16],
                &[(124, 0, 128)],
            ),
            (
                "alternate.remote_gid",
                |m| m.alternate.remote_gid = [0xFF; 16],
                &[(140, 0, 128)],
            ),
            (
                "alternate.flow_label",
                |m| m.alternate.flow_label = 0xF_FFFF,
                &[(156, 0, 20)],
            ),
            (
                "alternate.packet_rate",
                |m| m.alternate.packet_rate = 63,
                &[(159, 2, 6)],
            ),
            (
                "alternate.traffic_class",
                |m| m.alternate.traffic_class = 0xFF,
                &[(160, 0, 8)],
            ),
            ("alternate.hop_limit", |m| m.alternate.hop_limit = 0xFF, &[(161, 0, 8)]),
            ("alternate.sl", |m| m.alternate.sl = 15, &[(162, 0, 4)]),
            (
                "alternate.subnet_local",
                |m| m.alternate.subnet_local = true,
                &[(162, 4, 1)],
            ),
            (
                "alternate.local_ack_timeout",
                |m| m.alternate.local_ack_timeout = 31,
                &[(163, 0, 5)],
            ),
            (
                "private_data",
                |m| m.private_data = [0xFF; REQ_PRIVATE_DATA],
                &[(164, 0, 92 * 8)],
            ),
        ];
        check_fields(Msg::Req, cases);
    }

    #[test]
    fn mra_fields() {
        let cases: &[Case<Mra>] = &[
            ("local_comm_id", |m| m.local_comm_id = u32::MAX, &[(24, 0, 32)]),
            ("remote_comm_id", |m| m.remote_comm_id = u32::MAX, &[(28, 0, 32)]),
            ("message_mraed", |m| m.message_mraed = 3, &[(32, 0, 2)]),
            ("service_timeout", |m| m.service_timeout = 31, &[(33, 0, 5)]),
            (
                "private_data",
                |m| m.private_data = [0xFF; MRA_PRIVATE_DATA],
                &[(34, 0, 222 * 8)],
            ),
        ];
        check_fields(Msg::Mra, cases);
    }

    #[test]
    fn rej_fields() {
        let cases: &[Case<Rej>] = &[
            ("local_comm_id", |m| m.local_comm_id = u32::MAX, &[(24, 0, 32)]),
            ("remote_comm_id", |m| m.remote_comm_id = u32::MAX, &[(28, 0, 32)]),
            ("message_rejected", |m| m.message_rejected = 3, &[(32, 0, 2)]),
            ("reject_info_length", |m| m.reject_info_length = 127, &[(33, 0, 7)]),
            ("reason", |m| m.reason = 0xFFFF, &[(34, 0, 16)]),
            ("ari", |m| m.ari = [0xFF; REJ_ARI_LEN], &[(36, 0, 72 * 8)]),
            (
                "private_data",
                |m| m.private_data = [0xFF; REJ_PRIVATE_DATA],
                &[(108, 0, 148 * 8)],
            ),
        ];
        check_fields(Msg::Rej, cases);
    }

    #[test]
    fn rep_fields() {
        let cases: &[Case<Rep>] = &[
            ("local_comm_id", |m| m.local_comm_id = u32::MAX, &[(24, 0, 32)]),
            ("remote_comm_id", |m| m.remote_comm_id = u32::MAX, &[(28, 0, 32)]),
            ("local_qkey", |m| m.local_qkey = u32::MAX, &[(32, 0, 32)]),
            ("local_qpn", |m| m.local_qpn = 0xFF_FFFF, &[(36, 0, 24)]),
            (
                "vendor_id",
                |m| m.vendor_id = 0xFF_FFFF,
                &[(39, 0, 8), (43, 0, 8), (47, 0, 8)],
            ),
            ("local_eecn", |m| m.local_eecn = 0xFF_FFFF, &[(40, 0, 24)]),
            ("starting_psn", |m| m.starting_psn = 0xFF_FFFF, &[(44, 0, 24)]),
            ("responder_resources", |m| m.responder_resources = 0xFF, &[(48, 0, 8)]),
            ("initiator_depth", |m| m.initiator_depth = 0xFF, &[(49, 0, 8)]),
            ("target_ack_delay", |m| m.target_ack_delay = 31, &[(50, 0, 5)]),
            ("failover_accepted", |m| m.failover_accepted = 3, &[(50, 5, 2)]),
            (
                "end_to_end_flow_control",
                |m| m.end_to_end_flow_control = true,
                &[(50, 7, 1)],
            ),
            ("rnr_retry_count", |m| m.rnr_retry_count = 7, &[(51, 0, 3)]),
            ("srq", |m| m.srq = true, &[(51, 3, 1)]),
            ("local_ca_guid", |m| m.local_ca_guid = u64::MAX, &[(52, 0, 64)]),
            (
                "private_data",
                |m| m.private_data = [0xFF; REP_PRIVATE_DATA],
                &[(60, 0, 196 * 8)],
            ),
        ];
        check_fields(Msg::Rep, cases);
    }

    #[test]
    fn rtu_drep_fields() {
        let rtu: &[Case<Rtu>] = &[
            ("local_comm_id", |m| m.local_comm_id = u32::MAX, &[(24, 0, 32)]),
            ("remote_comm_id", |m| m.remote_comm_id = u32::MAX, &[(28, 0, 32)]),
            (
                "private_data",
                |m| m.private_data = [0xFF; RTU_PRIVATE_DATA],
                &[(32, 0, 224 * 8)],
            ),
        ];
        check_fields(Msg::Rtu, rtu);
        let drep: &[Case<Drep>] = &[
            ("local_comm_id", |m| m.local_comm_id = u32::MAX, &[(24, 0, 32)]),
            ("remote_comm_id", |m| m.remote_comm_id = u32::MAX, &[(28, 0, 32)]),
            (
                "private_data",
                |m| m.private_data = [0xFF; DREP_PRIVATE_DATA],
                &[(32, 0, 224 * 8)],
            ),
        ];
        check_fields(Msg::Drep, drep);
    }

    #[test]
    fn dreq_fields() {
        let cases: &[Case<Dreq>] = &[
            ("local_comm_id", |m| m.local_comm_id = u32::MAX, &[(24, 0, 32)]),
            ("remote_comm_id", |m| m.remote_comm_id = u32::MAX, &[(28, 0, 32)]),
            ("remote_qpn_eecn", |m| m.remote_qpn_eecn = 0xFF_FFFF, &[(32, 0, 24)]),
            (
                "private_data",
                |m| m.private_data = [0xFF; DREQ_PRIVATE_DATA],
                &[(36, 0, 220 * 8)],
            ),
        ];
        check_fields(Msg::Dreq, cases);
    }

    #[test]
    fn sidr_req_fields() {
        let cases: &[Case<SidrReq>] = &[
            ("request_id", |m| m.request_id = u32::MAX, &[(24, 0, 32)]),
            ("partition_key", |m| m.partition_key = 0xFFFF, &[(28, 0, 16)]),
            ("service_id", |m| m.service_id = u64::MAX, &[(32, 0, 64)]),
            (
                "private_data",
                |m| m.private_data = [0xFF; SIDR_REQ_PRIVATE_DATA],
                &[(40, 0, 216 * 8)],
            ),
        ];
        check_fields(Msg::SidrReq, cases);
    }

    #[test]
    fn sidr_rep_fields() {
        let cases: &[Case<SidrRep>] = &[
            ("request_id", |m| m.request_id = u32::MAX, &[(24, 0, 32)]),
            ("status", |m| m.status = 0xFF, &[(28, 0, 8)]),
            (
                "additional_info_length",
                |m| m.additional_info_length = 0xFF,
                &[(29, 0, 8)],
            ),
            ("vendor_id", |m| m.vendor_id = 0xFF_FFFF, &[(30, 0, 16), (35, 0, 8)]),
            ("qpn", |m| m.qpn = 0xFF_FFFF, &[(32, 0, 24)]),
            ("service_id", |m| m.service_id = u64::MAX, &[(36, 0, 64)]),
            ("qkey", |m| m.qkey = u32::MAX, &[(44, 0, 32)]),
            (
                "additional_info",
                |m| m.additional_info = [0xFF; SIDR_REP_INFO_LEN],
                &[(48, 0, 72 * 8)],
            ),
            (
                "private_data",
                |m| m.private_data = [0xFF; SIDR_REP_PRIVATE_DATA],
                &[(120, 0, 136 * 8)],
            ),
        ];
        check_fields(Msg::SidrRep, cases);
    }

    fn path(seed: u8) -> Path {
        Path {
            local_lid: 0x1100 | u16::from(seed),
            remote_lid: 0x2200 | u16::from(seed),
            local_gid: fill(seed),
            remote_gid: fill(seed.wrapping_add(0x40)),
            flow_label: 0xA_BCDE - u32::from(seed),
            packet_rate: 0x21 + seed % 8,
            traffic_class: 0x80 | seed,
            hop_limit: 0x40 + seed,
            sl: 9 + seed % 4,
            subnet_local: seed & 1 == 0,
            local_ack_timeout: 17 + seed % 8,
        }
    }

    fn sample_req() -> Req {
        Req {
            local_comm_id: 0x1122_3344,
            vendor_id: 0x02_C9AB,
            service_id: 0x0000_0000_0106_4E51,
            local_ca_guid: 0x0002_C903_00AB_CDEF,
            local_qkey: 0x8001_0203,
            local_qpn: 0x12_3456,
            responder_resources: 16,
            local_eecn: 0x65_4321,
            initiator_depth: 15,
            remote_eecn: 0x0F_EDCB,
            remote_cm_response_timeout: 20,
            transport_type: 3,
            end_to_end_flow_control: true,
            starting_psn: 0xAB_CDEF,
            local_cm_response_timeout: 19,
            retry_count: 6,
            partition_key: 0xFFFF,
            path_mtu: 5,
            rdc_exists: true,
            rnr_retry_count: 7,
            max_cm_retries: 15,
            srq: true,
            extended_transport_type: 4,
            primary: path(2),
            alternate: path(3),
            private_data: fill(0x50),
        }
    }

    fn sample_rep() -> Rep {
        Rep {
            local_comm_id: 0x0A0B_0C0D,
            remote_comm_id: 0x1122_3344,
            local_qkey: 0x1234_5678,
            local_qpn: 0xAB_CDEF,
            vendor_id: 0x12_3456,
            local_eecn: 0x9A_BCDE,
            starting_psn: 0x00_0777,
            responder_resources: 3,
            initiator_depth: 4,
            target_ack_delay: 29,
            failover_accepted: 2,
            end_to_end_flow_control: true,
            rnr_retry_count: 5,
            srq: true,
            local_ca_guid: 0xFEDC_BA98_7654_3210,
            private_data: fill(0x11),
        }
    }

    fn sample_sidr_rep() -> SidrRep {
        SidrRep {
            request_id: 0xDEAD_BEEF,
            status: sidr_status::REDIRECT,
            additional_info_length: 72,
            vendor_id: 0x98_7654,
            qpn: 0x00_1234,
            service_id: 0x0000_0000_0111_1388,
            qkey: 0x0123_4567,
            additional_info: fill(0x33),
            private_data: fill(0x44),
        }
    }

    #[test]
    fn round_trip_every_message() {
        check_round_trip(Msg::Req(sample_req()));
        check_round_trip(Msg::Mra(Mra {
            local_comm_id: 1,
            remote_comm_id: 2,
            message_mraed: 2,
            service_timeout: 21,
            private_data: fill(3),
        }));
        check_round_trip(Msg::Rej(Rej {
            local_comm_id: 0x0102_0304,
            remote_comm_id: 0x0506_0708,
            message_rejected: 1,
            reject_info_length: 72,
            reason: rej_reason::CONSUMER_DEFINED,
            ari: fill(7),
            private_data: fill(9),
        }));
        check_round_trip(Msg::Rep(sample_rep()));
        check_round_trip(Msg::Rtu(Rtu {
            local_comm_id: 11,
            remote_comm_id: 12,
            private_data: fill(13),
        }));
        check_round_trip(Msg::Dreq(Dreq {
            local_comm_id: 21,
            remote_comm_id: 22,
            remote_qpn_eecn: 0xFF_FFFE,
            private_data: fill(23),
        }));
        check_round_trip(Msg::Drep(Drep {
            local_comm_id: 31,
            remote_comm_id: 32,
            private_data: fill(33),
        }));
        check_round_trip(Msg::SidrReq(SidrReq {
            request_id: 41,
            partition_key: 0x8001,
            service_id: 0x0000_0000_0111_4000,
            private_data: fill(43),
        }));
        check_round_trip(Msg::SidrRep(sample_sidr_rep()));
    }

    #[test]
    fn header_and_attr_ids() {
        let all = [
            (Msg::Req(Req::new()), AttrId::Req, 0x10),
            (Msg::Mra(Mra::new()), AttrId::Mra, 0x11),
            (Msg::Rej(Rej::new()), AttrId::Rej, 0x12),
            (Msg::Rep(Rep::new()), AttrId::Rep, 0x13),
            (Msg::Rtu(Rtu::new()), AttrId::Rtu, 0x14),
            (Msg::Dreq(Dreq::new()), AttrId::Dreq, 0x15),
            (Msg::Drep(Drep::new()), AttrId::Drep, 0x16),
            (Msg::SidrReq(SidrReq::new()), AttrId::SidrReq, 0x17),
            (Msg::SidrRep(SidrRep::new()), AttrId::SidrRep, 0x18),
        ];
        for (msg, id, wire) in all {
            assert_eq!(msg.attr_id(), id);
            assert_eq!(AttrId::from_wire(wire), Some(id));
            let mad = Mad {
                tid: 0x0102_0304_0506_0708,
                msg,
            };
            let enc = mad.encode();
            assert_eq!(
                enc[..MAD_HDR_LEN],
                [1, 7, 2, 3, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, wire as u8, 0, 0, 0, 0, 0, 0]
            );
            assert!(enc[MAD_HDR_LEN..].iter().all(|&x| x == 0));
            assert_eq!(Mad::decode(&enc), Ok(mad));
        }
        assert_eq!(AttrId::from_wire(0x19), None);
        assert_eq!(AttrId::from_wire(0x1A), None);
    }

    #[test]
    fn decode_errors() {
        let good = Mad {
            tid: 5,
            msg: Msg::Rtu(Rtu::new()),
        }
        .encode();
        assert_eq!(Mad::decode(&good[..MAD_LEN - 1]), Err(MadError::Short));
        assert_eq!(Mad::decode(&[]), Err(MadError::Short));
        let with = |i: usize, v: u8| {
            let mut b = good;
            b[i] = v;
            Mad::decode(&b)
        };
        assert_eq!(with(0, 2), Err(MadError::BaseVersion(2)));
        assert_eq!(with(1, 0x03), Err(MadError::Class(0x03)));
        assert_eq!(with(2, 1), Err(MadError::ClassVersion(1)));
        assert_eq!(with(3, 0x01), Err(MadError::Method(0x01)));
        assert_eq!(with(3, 0x81), Err(MadError::Method(0x81)));
        assert_eq!(with(4, 0x80), Err(MadError::Status(0x8000)));
        assert_eq!(with(5, 0x1C), Err(MadError::Status(0x001C)));
        for attr in [0x0000u16, 0x000F, 0x0019, 0x001A, 0x001B, 0x0110, 0xFFFF] {
            let mut b = good;
            b[16..18].copy_from_slice(&attr.to_be_bytes());
            assert_eq!(Mad::decode(&b), Err(MadError::Attr(attr)));
        }
        // Longer buffers are fine; the class-specific word and the attribute
        // modifier are ignored.
        let mut long = [0u8; 300];
        long[..MAD_LEN].copy_from_slice(&good);
        long[6] = 0xFF;
        long[23] = 0x01;
        long[MAD_LEN..].fill(0xAB);
        assert_eq!(
            Mad::decode(&long),
            Ok(Mad {
                tid: 5,
                msg: Msg::Rtu(Rtu::new())
            })
        );
        assert!(!MadError::Attr(0x19).to_string().is_empty());
    }

    #[test]
    fn reserved_bits_ignored_and_cleared() {
        let mad = Mad {
            tid: 1,
            msg: Msg::Req(sample_req()),
        };
        let clean = mad.encode();
        let mut dirty = clean;
        dirty[28] = 0xFF; // the byte before the vendor ID
        dirty[48..52].fill(0xFF); // reserved word after the CA GUID
        dirty[114] |= 0x0F; // between flow label and packet rate
        dirty[115] |= 0xC0;
        dirty[118] |= 0x07; // after subnet local
        dirty[119] |= 0x07; // after the ack timeout
        dirty[163] |= 0x07; // SAP supported and reserved
        assert_eq!(Mad::decode(&dirty), Ok(mad.clone()));
        assert_eq!(Mad::decode(&dirty).unwrap().encode(), clean);

        let mad = Mad {
            tid: 1,
            msg: Msg::Rep(sample_rep()),
        };
        let mut dirty = mad.encode();
        dirty[51] |= 0x0F;
        assert_eq!(Mad::decode(&dirty), Ok(mad));
    }

    #[test]
    fn too_wide_values_are_truncated() {
        let mut req = Req::new();
        req.local_qpn = 0xFF12_3456;
        req.retry_count = 0xF9;
        req.primary.flow_label = 0xFFF1_2345;
        req.vendor_id = 0x7F00_0001;
        let enc = Mad {
            tid: 0,
            msg: Msg::Req(req),
        }
        .encode();
        assert_eq!(enc[55..60], [0, 0x12, 0x34, 0x56, 0]);
        assert_eq!(enc[71], 0x01);
        assert_eq!(enc[112..116], [0x12, 0x34, 0x50, 0]);
        assert_eq!(enc[28..32], [0, 0, 0, 1]);
    }

    #[test]
    fn req_known_bytes() {
        let mut req = Req::new();
        req.local_comm_id = 0x1122_3344;
        req.vendor_id = 0x02_C9AB;
        req.service_id = 0x0000_0000_0106_4E51;
        req.local_ca_guid = 0x0102_0304_0506_0708;
        req.local_qkey = 0xA1A2_A3A4;
        req.local_qpn = 0x00_0123;
        req.responder_resources = 4;
        req.initiator_depth = 7;
        req.remote_cm_response_timeout = 20;
        req.transport_type = 1;
        req.end_to_end_flow_control = true;
        req.starting_psn = 0xAB_CDEF;
        req.local_cm_response_timeout = 20;
        req.retry_count = 7;
        req.partition_key = 0xFFFF;
        req.path_mtu = 5;
        req.rnr_retry_count = 7;
        req.max_cm_retries = 15;
        req.srq = true;
        req.primary.local_lid = 0xFFFF;
        req.primary.remote_lid = 0xFFFE;
        req.primary.local_gid[10..].copy_from_slice(&[0xFF, 0xFF, 192, 168, 1, 1]);
        req.primary.remote_gid[10..].copy_from_slice(&[0xFF, 0xFF, 192, 168, 1, 2]);
        req.primary.flow_label = 0x1_2345;
        req.primary.packet_rate = 3;
        req.primary.hop_limit = 64;
        req.primary.sl = 3;
        req.primary.subnet_local = true;
        req.primary.local_ack_timeout = 18;
        req.alternate.remote_lid = 0x0102;
        req.alternate.sl = 15;
        req.private_data[0] = 0x00;
        req.private_data[1] = 0x40;
        req.private_data[91] = 0x99;
        let mad = Mad {
            tid: 0x0000_0001_0000_002A,
            msg: Msg::Req(req),
        };

        let mut w = header(0x10, 0x0000_0001_0000_002A);
        w[24..28].copy_from_slice(&[0x11, 0x22, 0x33, 0x44]);
        w[29..32].copy_from_slice(&[0x02, 0xC9, 0xAB]);
        w[32..40].copy_from_slice(&[0, 0, 0, 0, 0x01, 0x06, 0x4E, 0x51]);
        w[40..48].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        w[52..56].copy_from_slice(&[0xA1, 0xA2, 0xA3, 0xA4]);
        w[56..60].copy_from_slice(&[0x00, 0x01, 0x23, 4]);
        w[63] = 7;
        w[67] = 0b1010_0011; // timeout 20, transport UC, flow control
        w[68..72].copy_from_slice(&[0xAB, 0xCD, 0xEF, 0b1010_0111]); // PSN; timeout 20, retry 7
        w[72..76].copy_from_slice(&[0xFF, 0xFF, 0b0101_0111, 0b1111_1000]); // pkey; MTU 5, RNR 7; retries 15, SRQ
        w[76..80].copy_from_slice(&[0xFF, 0xFF, 0xFF, 0xFE]);
        w[90..96].copy_from_slice(&[0xFF, 0xFF, 192, 168, 1, 1]);
        w[106..112].copy_from_slice(&[0xFF, 0xFF, 192, 168, 1, 2]);
        w[112..120].copy_from_slice(&[0x12, 0x34, 0x50, 0x03, 0, 64, 0b0011_1000, 0b1001_0000]);
        w[122..124].copy_from_slice(&[0x01, 0x02]);
        w[162] = 0xF0;
        w[164] = 0x00;
        w[165] = 0x40;
        w[255] = 0x99;
        check_known(&mad, &w);
    }

    #[test]
    fn mra_known_bytes() {
        let mad = Mad {
            tid: 7,
            msg: Msg::Mra(Mra {
                local_comm_id: 0xCAFE_0001,
                remote_comm_id: 0x1122_3344,
                message_mraed: 1,
                service_timeout: 23,
                private_data: {
                    let mut p = [0; MRA_PRIVATE_DATA];
                    p[0] = 0xA5;
                    p[221] = 0x5A;
                    p
                },
            }),
        };
        let mut w = header(0x11, 7);
        w[24..36].copy_from_slice(&[
            0xCA,
            0xFE,
            0,
            1,
            0x11,
            0x22,
            0x33,
            0x44,
            0b0100_0000,
            0b1011_1000,
            0xA5,
            0,
        ]);
        w[255] = 0x5A;
        check_known(&mad, &w);
    }

    #[test]
    fn rej_known_bytes() {
        let mut rej = Rej::new();
        rej.local_comm_id = 0x0000_0001;
        rej.remote_comm_id = 0x0000_0002;
        rej.message_rejected = 0;
        rej.reject_info_length = 3;
        rej.reason = rej_reason::INVALID_SERVICE_ID;
        rej.ari[..3].copy_from_slice(&[0xA, 0xB, 0xC]);
        rej.ari[71] = 0xD;
        rej.private_data[0] = 0xE;
        rej.private_data[147] = 0xF;
        let mad = Mad {
            tid: 0xFFFF_FFFF_FFFF_FFFF,
            msg: Msg::Rej(rej),
        };
        let mut w = header(0x12, u64::MAX);
        w[24..39].copy_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2, 0, 0b0000_0110, 0, 8, 0xA, 0xB, 0xC]);
        w[107] = 0xD;
        w[108] = 0xE;
        w[255] = 0xF;
        check_known(&mad, &w);
        assert_eq!(
            [
                rej_reason::NO_QP,
                rej_reason::TIMEOUT,
                rej_reason::STALE_CONN,
                rej_reason::INVALID_MTU
            ],
            [1, 4, 10, 26]
        );
        assert_eq!(
            [
                rej_reason::CONSUMER_DEFINED,
                rej_reason::INVALID_RNR_RETRY,
                rej_reason::DUPLICATE_LOCAL_COMM_ID,
                rej_reason::VENDOR_OPTION_NOT_SUPPORTED
            ],
            [28, 29, 30, 35]
        );
    }

    #[test]
    fn rep_known_bytes() {
        let mad = Mad {
            tid: 0x42,
            msg: Msg::Rep(sample_rep()),
        };
        let mut w = header(0x13, 0x42);
        w[24..60].copy_from_slice(&[
            0x0A,
            0x0B,
            0x0C,
            0x0D, // local comm ID
            0x11,
            0x22,
            0x33,
            0x44, // remote comm ID
            0x12,
            0x34,
            0x56,
            0x78, // Q_Key
            0xAB,
            0xCD,
            0xEF,
            0x12, // QPN, vendor ID bits 23..16
            0x9A,
            0xBC,
            0xDE,
            0x34, // EECN, vendor ID bits 15..8
            0x00,
            0x07,
            0x77,
            0x56, // PSN, vendor ID bits 7..0
            3,
            4,
            0b1110_1101,
            0b1011_0000, // resources, depth; ack delay 29, failover 2, flow ctl; RNR 5, SRQ
            0xFE,
            0xDC,
            0xBA,
            0x98,
            0x76,
            0x54,
            0x32,
            0x10, // CA GUID
        ]);
        w[60..].copy_from_slice(&fill::<REP_PRIVATE_DATA>(0x11));
        check_known(&mad, &w);
    }

    #[test]
    fn rtu_dreq_drep_known_bytes() {
        let mut rtu = Rtu::new();
        rtu.local_comm_id = 0x0102_0304;
        rtu.remote_comm_id = 0x0506_0708;
        rtu.private_data[223] = 0xEE;
        let mut w = header(0x14, 9);
        w[24..32].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        w[255] = 0xEE;
        check_known(
            &Mad {
                tid: 9,
                msg: Msg::Rtu(rtu),
            },
            &w,
        );

        let mut dreq = Dreq::new();
        dreq.local_comm_id = 0x0102_0304;
        dreq.remote_comm_id = 0x0506_0708;
        dreq.remote_qpn_eecn = 0x00_0011;
        dreq.private_data[0] = 0xDD;
        let mut w = header(0x15, 10);
        w[24..37].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0x11, 0, 0xDD]);
        check_known(
            &Mad {
                tid: 10,
                msg: Msg::Dreq(dreq),
            },
            &w,
        );

        let mut drep = Drep::new();
        drep.local_comm_id = 0x0506_0708;
        drep.remote_comm_id = 0x0102_0304;
        drep.private_data[0] = 0xCC;
        let mut w = header(0x16, 11);
        w[24..33].copy_from_slice(&[5, 6, 7, 8, 1, 2, 3, 4, 0xCC]);
        check_known(
            &Mad {
                tid: 11,
                msg: Msg::Drep(drep),
            },
            &w,
        );
    }

    #[test]
    fn sidr_known_bytes() {
        let mut req = SidrReq::new();
        req.request_id = 0x0000_BEEF;
        req.partition_key = 0x7FFF;
        req.service_id = 0x0000_0000_0111_1388;
        req.private_data[0] = 0x00;
        req.private_data[1] = 0x40;
        req.private_data[215] = 0x77;
        let mut w = header(0x17, 12);
        w[24..42].copy_from_slice(&[
            0, 0, 0xBE, 0xEF, 0x7F, 0xFF, 0, 0, 0, 0, 0, 0, 0x01, 0x11, 0x13, 0x88, 0, 0x40,
        ]);
        w[255] = 0x77;
        check_known(
            &Mad {
                tid: 12,
                msg: Msg::SidrReq(req),
            },
            &w,
        );

        let mut w = header(0x18, 13);
        w[24..48].copy_from_slice(&[
            0xDE, 0xAD, 0xBE, 0xEF, // request ID
            4, 72, 0x98, 0x76, // status, info length, vendor ID bits 23..8
            0x00, 0x12, 0x34, 0x54, // QPN, vendor ID bits 7..0
            0, 0, 0, 0, 0x01, 0x11, 0x13, 0x88, // service ID
            0x01, 0x23, 0x45, 0x67, // Q_Key
        ]);
        w[48..120].copy_from_slice(&fill::<SIDR_REP_INFO_LEN>(0x33));
        w[120..].copy_from_slice(&fill::<SIDR_REP_PRIVATE_DATA>(0x44));
        check_known(
            &Mad {
                tid: 13,
                msg: Msg::SidrRep(sample_sidr_rep()),
            },
            &w,
        );
    }
}
