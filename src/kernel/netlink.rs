//! The library's one netlink client, for both families it speaks:
//!
//! * `NETLINK_RDMA` — device discovery (`RDMA_NLDEV_CMD_GET`, char devices)
//!   and the copy-on-fork query;
//! * `NETLINK_ROUTE` — routes, neighbours and links for RoCE address
//!   resolution (`verbs::neigh`), plus neighbour events (`RTNLGRP_NEIGH`).
//!
//! It has four layers, from the wire up:
//!
//! 1. encoding: [`encode_request`] (header, optional family header such as
//!    `rtmsg`/`ndmsg`/`ifinfomsg`, attributes) and [`push_attr`];
//! 2. parsing: [`split_messages`], [`parse_attrs`], [`Attr::nested`], the
//!    family headers ([`RtMsg`], [`NdMsg`], [`IfInfoMsg`]) and the rtnetlink
//!    objects ([`Route`], [`Neigh`], [`Link`]);
//! 3. reply dispatch over one datagram: [`dispatch_datagram`] with
//!    [`ReplyRules`] (sequence filter, multi-part dumps, `NLMSG_DONE`,
//!    `NLMSG_ERROR` and ACKs);
//! 4. the [`Socket`]: open/bind, sequence numbers, send, receive, the reply
//!    loop, multicast membership.
//!
//! Every parser takes kernel bytes and never trusts a length in them:
//! malformed input ends parsing; nothing panics or reads out of bounds
//! ([`parse_messages`] is fuzzed; crafted corpora in the tests).  Errors are
//! positive errno values throughout.

use std::cell::Cell;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::raw::c_int;

// ---------------------------------------------------------------------------
// Protocol numbers and constants
// ---------------------------------------------------------------------------

/// `NETLINK_ROUTE` (rtnetlink).
pub const NETLINK_ROUTE: c_int = 0;
/// `NETLINK_RDMA`.
pub const NETLINK_RDMA: i32 = 20;

pub const RDMA_NL_NLDEV: u16 = 5;
pub const RDMA_NLDEV_CMD_GET: u16 = 1;
pub const RDMA_NLDEV_CMD_SYS_GET: u16 = 6;
pub const RDMA_NLDEV_CMD_GET_CHARDEV: u16 = 15;

pub const RDMA_NLDEV_ATTR_DEV_INDEX: u16 = 1;
pub const RDMA_NLDEV_ATTR_DEV_NAME: u16 = 2;
pub const RDMA_NLDEV_ATTR_PORT_INDEX: u16 = 3;
pub const RDMA_NLDEV_ATTR_NODE_GUID: u16 = 6;
pub const RDMA_NLDEV_ATTR_DEV_NODE_TYPE: u16 = 14;
pub const RDMA_NLDEV_ATTR_CHARDEV_TYPE: u16 = 69;
pub const RDMA_NLDEV_ATTR_CHARDEV_NAME: u16 = 70;
pub const RDMA_NLDEV_ATTR_CHARDEV_ABI: u16 = 71;
pub const RDMA_NLDEV_ATTR_CHARDEV: u16 = 72;
pub const RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID: u16 = 73;
pub const RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK: u16 = 93;
/// `RDMA_NLDEV_ATTR_MAX` of the kernel headers rdma-core 44 ships; upstream
/// parses attribute types up to `RDMA_NLDEV_ATTR_MAX - 1` and ignores the rest.
pub const RDMA_NLDEV_ATTR_MAX: u16 = 96;

/// `NLMSG_HDRLEN`: the size of `struct nlmsghdr`.
pub const NLMSG_HDRLEN: usize = 16;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const NLM_F_REQUEST: u16 = 1;
pub const NLM_F_MULTI: u16 = 2;
pub const NLM_F_ACK: u16 = 4;
pub const NLM_F_DUMP: u16 = 0x300;
/// `NLA_HDRLEN`: the size of `struct nlattr`.
pub const NLA_HDRLEN: usize = 4;
pub const NLA_F_NESTED: u16 = 0x8000;
pub const NLA_F_NET_BYTEORDER: u16 = 0x4000;
/// `NLA_TYPE_MASK`: the attribute type without the two flags above.
pub const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);

pub const RTM_NEWLINK: u16 = 16;
pub const RTM_GETLINK: u16 = 18;
pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_GETROUTE: u16 = 26;
pub const RTM_NEWNEIGH: u16 = 28;
pub const RTM_DELNEIGH: u16 = 29;
pub const RTM_GETNEIGH: u16 = 30;
/// The neighbour-event multicast group.
pub const RTNLGRP_NEIGH: u32 = 3;

pub const RTA_DST: u16 = 1;
pub const RTA_OIF: u16 = 4;
pub const RTA_GATEWAY: u16 = 5;
pub const RTA_PREFSRC: u16 = 7;
pub const RTA_MULTIPATH: u16 = 9;
pub const NDA_DST: u16 = 1;
pub const NDA_LLADDR: u16 = 2;
pub const IFLA_ADDRESS: u16 = 1;
pub const IFLA_LINKINFO: u16 = 18;
pub const IFLA_INFO_KIND: u16 = 1;
pub const IFLA_INFO_DATA: u16 = 2;
pub const IFLA_VLAN_ID: u16 = 1;

pub const RTN_LOCAL: u8 = 2;
pub const RTN_BLACKHOLE: u8 = 6;
pub const RTN_UNREACHABLE: u8 = 7;
pub const RTN_PROHIBIT: u8 = 8;
pub const RTN_THROW: u8 = 9;

/// `RDMA_NL_GET_TYPE(client, op)`.
pub const fn nl_type(client: u16, op: u16) -> u16 {
    (client << 10) + op
}

// ---------------------------------------------------------------------------
// Byte helpers (all bounds-checked)
// ---------------------------------------------------------------------------

/// `NLMSG_ALIGN`/`NLA_ALIGN`; saturates instead of overflowing.
fn align4(n: usize) -> usize {
    n.saturating_add(3) & !3
}

fn ne_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

fn ne_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

fn ne_i32(b: &[u8], at: usize) -> Option<i32> {
    Some(i32::from_ne_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

/// The bytes of `b` before its first NUL (all of `b` without one).
fn until_nul(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    b.get(..end).unwrap_or(b)
}

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

/// One netlink attribute (type without the nested/byte-order flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr<'a> {
    pub kind: u16,
    pub data: &'a [u8],
}

impl<'a> Attr<'a> {
    pub fn u8(&self) -> Option<u8> {
        self.data.first().copied()
    }
    pub fn u16(&self) -> Option<u16> {
        ne_u16(self.data, 0)
    }
    pub fn u32(&self) -> Option<u32> {
        ne_u32(self.data, 0)
    }
    pub fn u64(&self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.data.get(..8)?.try_into().ok()?))
    }
    /// A NUL-terminated string attribute.
    pub fn str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.cstr_bytes()).ok()
    }
    /// The payload up to its first NUL (a string attribute's bytes).
    pub fn cstr_bytes(&self) -> &'a [u8] {
        until_nul(self.data)
    }
    /// The attributes nested in this one's payload (`NLA_F_NESTED` or not:
    /// the kernel does not always set the flag).
    pub fn nested(&self) -> Vec<Attr<'a>> {
        parse_attrs(self.data)
    }
}

/// Parses the attributes in `b` (the bytes after a message's header and
/// family header, or a nested attribute's payload).  Parsing stops at the
/// first attribute whose length is too short or runs past `b`.
pub fn parse_attrs(b: &[u8]) -> Vec<Attr<'_>> {
    let mut out = Vec::new();
    let mut rest = b;
    while let (Some(len), Some(kind)) = (ne_u16(rest, 0), ne_u16(rest, 2)) {
        let len = usize::from(len);
        let Some(data) = rest.get(NLA_HDRLEN..len).filter(|_| len >= NLA_HDRLEN) else {
            break;
        };
        out.push(Attr {
            kind: kind & NLA_TYPE_MASK,
            data,
        });
        rest = rest.get(align4(len)..).unwrap_or(&[]);
    }
    out
}

/// The first attribute of type `kind` (libnl's `nla_find`).
pub fn find_attr<'a, 'b>(attrs: &'b [Attr<'a>], kind: u16) -> Option<&'b Attr<'a>> {
    attrs.iter().find(|a| a.kind == kind)
}

/// Appends one attribute (header, payload, padding to 4 bytes) to `buf`.
/// A nested attribute is built by encoding its children into a buffer of
/// their own and pushing that as the payload.
pub fn push_attr(buf: &mut Vec<u8>, kind: u16, data: &[u8]) {
    let len = NLA_HDRLEN + data.len();
    debug_assert!(len <= usize::from(u16::MAX), "netlink attribute too long");
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(data);
    buf.resize(align4(buf.len()), 0);
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/// Builds one request: `nlmsghdr`, then the family header (`rtmsg`,
/// `ndmsg`, `ifinfomsg`…; empty for RDMA netlink) padded to 4 bytes, then
/// each attribute.  The port id is 0: the kernel fills in the socket's.
pub fn encode_request(kind: u16, flags: u16, seq: u32, header: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut msg = vec![0u8; NLMSG_HDRLEN];
    msg.extend_from_slice(header);
    msg.resize(align4(msg.len()), 0);
    for (t, d) in attrs {
        push_attr(&mut msg, *t, d);
    }
    let len = msg.len() as u32;
    msg[0..4].copy_from_slice(&len.to_ne_bytes());
    msg[4..6].copy_from_slice(&kind.to_ne_bytes());
    msg[6..8].copy_from_slice(&flags.to_ne_bytes());
    msg[8..12].copy_from_slice(&seq.to_ne_bytes());
    msg
}

/// Builds one netlink message: header, then each attribute (type,
/// payload) padded to 4 bytes.
pub fn encode(kind: u16, flags: u16, seq: u32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    encode_request(kind, flags, seq, &[], attrs)
}

/// `NLMSG_DONE` (end of a dump) and `NLMSG_ERROR` messages, for recorded
/// replies.
pub fn encode_done() -> Vec<u8> {
    encode(NLMSG_DONE, 0, 0, &[])
}
pub fn encode_error(err: i32) -> Vec<u8> {
    let mut m = encode(NLMSG_ERROR, 0, 0, &[]);
    m.extend_from_slice(&err.to_ne_bytes());
    m.extend_from_slice(&[0u8; 16]);
    let l = m.len() as u32;
    m[0..4].copy_from_slice(&l.to_ne_bytes());
    m
}

/// One message of a datagram: its header fields and payload (the bytes
/// after `nlmsghdr`, up to `nlmsg_len`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Msg<'a> {
    pub kind: u16,
    pub flags: u16,
    pub seq: u32,
    pub payload: &'a [u8],
}

/// The messages of one datagram, see [`split_messages`].
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Messages<'a> {
    type Item = Msg<'a>;

    fn next(&mut self) -> Option<Msg<'a>> {
        let b = self.rest;
        let (Some(len), Some(kind), Some(flags), Some(seq)) = (ne_u32(b, 0), ne_u16(b, 4), ne_u16(b, 6), ne_u32(b, 8))
        else {
            self.rest = &[];
            return None;
        };
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let Some(payload) = b.get(NLMSG_HDRLEN..len).filter(|_| len >= NLMSG_HDRLEN) else {
            self.rest = &[];
            return None;
        };
        self.rest = b.get(align4(len)..).unwrap_or(&[]);
        Some(Msg {
            kind,
            flags,
            seq,
            payload,
        })
    }
}

/// Splits a datagram into messages, never trusting the lengths: a header
/// that is short, or whose length is below the header size or past the
/// end, ends the datagram.
pub fn split_messages(b: &[u8]) -> Messages<'_> {
    Messages { rest: b }
}

/// The error of an `NLMSG_ERROR` payload (negative errno; 0 is an ACK);
/// a payload too short to hold one reads as `-EPROTO`.
pub fn error_code(payload: &[u8]) -> i32 {
    ne_i32(payload, 0).unwrap_or(-libc::EPROTO)
}

/// A parsed netlink message (RDMA netlink: attributes follow the header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// A data message: its type and attributes.
    Data { kind: u16, attrs: Vec<Attr<'a>> },
    /// `NLMSG_ERROR` with the (negative) errno; 0 is an ACK.
    Error(i32),
    /// `NLMSG_DONE`: end of a dump.
    Done,
}

/// Parses one datagram of netlink messages.  Malformed input ends parsing;
/// it never panics or reads out of bounds.
pub fn parse_messages(b: &[u8]) -> Vec<Message<'_>> {
    split_messages(b)
        .map(|m| match m.kind {
            NLMSG_DONE => Message::Done,
            NLMSG_ERROR => Message::Error(error_code(m.payload)),
            kind => Message::Data {
                kind,
                attrs: parse_attrs(m.payload),
            },
        })
        .collect()
}

// ---------------------------------------------------------------------------
// rtnetlink family headers and objects
// ---------------------------------------------------------------------------

/// `struct rtmsg` (routes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RtMsg {
    pub family: u8,
    pub dst_len: u8,
    pub src_len: u8,
    pub tos: u8,
    pub table: u8,
    pub protocol: u8,
    pub scope: u8,
    pub rtype: u8,
    pub flags: u32,
}

impl RtMsg {
    pub const LEN: usize = 12;

    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..8].copy_from_slice(&[
            self.family,
            self.dst_len,
            self.src_len,
            self.tos,
            self.table,
            self.protocol,
            self.scope,
            self.rtype,
        ]);
        b[8..12].copy_from_slice(&self.flags.to_ne_bytes());
        b
    }

    /// The header at the start of `payload` and the attributes after it.
    pub fn parse(payload: &[u8]) -> Option<(Self, Vec<Attr<'_>>)> {
        let h = payload.get(..Self::LEN)?;
        let m = RtMsg {
            family: h[0],
            dst_len: h[1],
            src_len: h[2],
            tos: h[3],
            table: h[4],
            protocol: h[5],
            scope: h[6],
            rtype: h[7],
            flags: ne_u32(h, 8)?,
        };
        Some((m, parse_attrs(payload.get(Self::LEN..)?)))
    }
}

/// `struct ndmsg` (neighbours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NdMsg {
    pub family: u8,
    pub ifindex: i32,
    pub state: u16,
    pub flags: u8,
    pub ntype: u8,
}

impl NdMsg {
    pub const LEN: usize = 12;

    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0] = self.family;
        b[4..8].copy_from_slice(&self.ifindex.to_ne_bytes());
        b[8..10].copy_from_slice(&self.state.to_ne_bytes());
        b[10] = self.flags;
        b[11] = self.ntype;
        b
    }

    /// The header at the start of `payload` and the attributes after it.
    pub fn parse(payload: &[u8]) -> Option<(Self, Vec<Attr<'_>>)> {
        let h = payload.get(..Self::LEN)?;
        let m = NdMsg {
            family: h[0],
            ifindex: ne_i32(h, 4)?,
            state: ne_u16(h, 8)?,
            flags: h[10],
            ntype: h[11],
        };
        Some((m, parse_attrs(payload.get(Self::LEN..)?)))
    }
}

/// `struct ifinfomsg` (links).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IfInfoMsg {
    pub family: u8,
    pub itype: u16,
    pub index: i32,
    pub flags: u32,
    pub change: u32,
}

impl IfInfoMsg {
    pub const LEN: usize = 16;

    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0] = self.family;
        b[2..4].copy_from_slice(&self.itype.to_ne_bytes());
        b[4..8].copy_from_slice(&self.index.to_ne_bytes());
        b[8..12].copy_from_slice(&self.flags.to_ne_bytes());
        b[12..16].copy_from_slice(&self.change.to_ne_bytes());
        b
    }

    /// The header at the start of `payload` and the attributes after it.
    pub fn parse(payload: &[u8]) -> Option<(Self, Vec<Attr<'_>>)> {
        let h = payload.get(..Self::LEN)?;
        let m = IfInfoMsg {
            family: h[0],
            itype: ne_u16(h, 2)?,
            index: ne_i32(h, 4)?,
            flags: ne_u32(h, 8)?,
            change: ne_u32(h, 12)?,
        };
        Some((m, parse_attrs(payload.get(Self::LEN..)?)))
    }
}

/// The parts of an `RTM_NEWROUTE` message route resolution looks at, of
/// its first next hop.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Route {
    pub family: c_int,
    pub rtype: u8,
    pub gateway: Option<Vec<u8>>,
    pub oif: i32,
    pub prefsrc: Option<Vec<u8>>,
}

/// The first `struct rtnexthop` of an `RTA_MULTIPATH` payload: its
/// interface and its attributes.  A length field below the header size is
/// read as the header size, one past the payload as the payload's end.
fn first_nexthop(mp: &[u8]) -> Option<(i32, Vec<Attr<'_>>)> {
    const RTNH_LEN: usize = 8;
    let len = usize::from(ne_u16(mp, 0)?).clamp(RTNH_LEN, mp.len().max(RTNH_LEN));
    let ifindex = ne_i32(mp, 4)?;
    Some((ifindex, parse_attrs(mp.get(RTNH_LEN..len)?)))
}

/// Parses an `RTM_NEWROUTE` payload; `None` when it is too short for
/// `struct rtmsg`.  Next hop 0 is the first of `RTA_MULTIPATH` when that
/// is present (and holds a whole `rtnexthop`), else the single-path
/// `RTA_OIF`/`RTA_GATEWAY`.
pub fn parse_route(payload: &[u8]) -> Option<Route> {
    let (rtm, attrs) = RtMsg::parse(payload)?;
    let mut r = Route {
        family: c_int::from(rtm.family),
        rtype: rtm.rtype,
        prefsrc: find_attr(&attrs, RTA_PREFSRC).map(|a| a.data.to_vec()),
        ..Default::default()
    };
    if let Some((oif, nh)) = find_attr(&attrs, RTA_MULTIPATH).and_then(|a| first_nexthop(a.data)) {
        r.oif = oif;
        r.gateway = find_attr(&nh, RTA_GATEWAY).map(|a| a.data.to_vec());
    } else {
        r.oif = find_attr(&attrs, RTA_OIF).and_then(|a| a.u32()).unwrap_or(0) as i32;
        r.gateway = find_attr(&attrs, RTA_GATEWAY).map(|a| a.data.to_vec());
    }
    Some(r)
}

/// A neighbour table entry (`RTM_NEWNEIGH`/`RTM_DELNEIGH`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Neigh {
    pub family: c_int,
    pub ifindex: i32,
    pub dst: Option<Vec<u8>>,
    pub lladdr: Option<Vec<u8>>,
}

/// Parses a neighbour payload; `None` when it is too short for `ndmsg`.
pub fn parse_neigh(payload: &[u8]) -> Option<Neigh> {
    let (ndm, attrs) = NdMsg::parse(payload)?;
    Some(Neigh {
        family: c_int::from(ndm.family),
        ifindex: ndm.ifindex,
        dst: find_attr(&attrs, NDA_DST).map(|a| a.data.to_vec()),
        lladdr: find_attr(&attrs, NDA_LLADDR).map(|a| a.data.to_vec()),
    })
}

/// A network interface: its hardware address and, for VLAN devices, the
/// VLAN id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Link {
    pub addr: Option<Vec<u8>>,
    pub is_vlan: bool,
    pub vlan_id: u16,
}

/// Parses an `RTM_NEWLINK` payload; `None` when it is too short for
/// `ifinfomsg`.  The VLAN id is `IFLA_LINKINFO` → `IFLA_INFO_DATA` →
/// `IFLA_VLAN_ID` when `IFLA_INFO_KIND` is "vlan".
pub fn parse_link(payload: &[u8]) -> Option<Link> {
    let (_, attrs) = IfInfoMsg::parse(payload)?;
    let mut l = Link {
        addr: find_attr(&attrs, IFLA_ADDRESS).map(|a| a.data.to_vec()),
        ..Default::default()
    };
    if let Some(info) = find_attr(&attrs, IFLA_LINKINFO).map(Attr::nested) {
        if find_attr(&info, IFLA_INFO_KIND).map(Attr::cstr_bytes) == Some(&b"vlan"[..]) {
            l.is_vlan = true;
            let data = find_attr(&info, IFLA_INFO_DATA).map(Attr::nested).unwrap_or_default();
            if let Some(id) = find_attr(&data, IFLA_VLAN_ID).and_then(Attr::u16) {
                l.vlan_id = id;
            }
        }
    }
    Some(l)
}

// ---------------------------------------------------------------------------
// Reply dispatch
// ---------------------------------------------------------------------------

/// Which messages belong to a reply and what ends it besides
/// `NLMSG_DONE` and `NLMSG_ERROR` (an ACK when its error is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplyRules {
    /// Only messages with this sequence number belong to the reply; others
    /// (such as the unread ACK of an earlier single-part exchange) are
    /// skipped.
    pub seq: Option<u32>,
    /// A datagram none of whose messages carries `NLM_F_MULTI` ends the
    /// reply successfully: a single-part answer, whose ACK (if any) is left
    /// unread (libnl's receive rule).
    pub single_part_ends: bool,
    /// A datagram without one well-formed message fails the exchange with
    /// `EPROTO`; otherwise it is skipped.
    pub strict: bool,
}

impl ReplyRules {
    /// The reply to our request `seq`: every message up to the `NLMSG_DONE`
    /// of a dump or the ACK/error of a request, others skipped.
    pub fn to(seq: u32) -> Self {
        ReplyRules {
            seq: Some(seq),
            single_part_ends: false,
            strict: true,
        }
    }

    /// A reply that may be single-part: the first datagram without
    /// `NLM_F_MULTI` ends it.
    pub fn single_part() -> Self {
        ReplyRules {
            seq: None,
            single_part_ends: true,
            strict: false,
        }
    }
}

/// Hands the data messages of one datagram that belong to the reply (see
/// [`ReplyRules`]) to `f`, in order.  `Some` when the exchange is over:
/// `Ok` at `NLMSG_DONE` or an ACK (or a single-part end), the errno of an
/// `NLMSG_ERROR` (`EPROTO` for a positive or unreadable one), or the error
/// `f` returned (which stops the exchange, like a libnl callback error).
pub fn dispatch_datagram(
    b: &[u8],
    rules: &ReplyRules,
    f: &mut impl FnMut(&Msg<'_>) -> Result<(), i32>,
) -> Option<Result<(), i32>> {
    let mut seen = false;
    let mut multi = false;
    for m in split_messages(b) {
        seen = true;
        if rules.seq.is_some_and(|s| s != m.seq) {
            continue;
        }
        multi |= m.flags & NLM_F_MULTI != 0;
        match m.kind {
            NLMSG_DONE => return Some(Ok(())),
            NLMSG_ERROR => {
                return Some(match error_code(m.payload) {
                    0 => Ok(()),
                    e if e < 0 => Err(e.saturating_neg()),
                    _ => Err(libc::EPROTO),
                });
            }
            _ => {
                if let Err(e) = f(&m) {
                    return Some(Err(e));
                }
            }
        }
    }
    if rules.single_part_ends && !multi {
        return Some(Ok(()));
    }
    if rules.strict && !seen {
        return Some(Err(libc::EPROTO));
    }
    None
}

/// Hands the data messages of one RDMA netlink datagram to `f` (type and
/// attributes); `Some` when the exchange is over (DONE, ACK, a kernel
/// error or an error from `f`).
pub fn dispatch(b: &[u8], f: &mut impl FnMut(u16, &[Attr<'_>]) -> Result<(), i32>) -> Option<Result<(), i32>> {
    dispatch_datagram(b, &ReplyRules::default(), &mut |m: &Msg<'_>| {
        f(m.kind, &parse_attrs(m.payload))
    })
}

/// [`dispatch`] over recorded replies: the end of the bytes ends the
/// exchange successfully (a reply without an ACK).
pub fn replay(b: &[u8], mut f: impl FnMut(u16, &[Attr<'_>]) -> Result<(), i32>) -> Result<(), i32> {
    dispatch(b, &mut f).unwrap_or(Ok(()))
}

// ---------------------------------------------------------------------------
// The socket
// ---------------------------------------------------------------------------

/// The smallest receive buffer; larger datagrams get a buffer of their own
/// size (measured with `MSG_PEEK | MSG_TRUNC`).
const RECV_BUF: usize = 32768;

/// The receive buffer of `NETLINK_RDMA` sockets, read without a peek: the
/// kernel builds a dump's datagrams up to 32 KiB and RDMA netlink's other
/// replies and events in one page, so one `recv` gets any of them whole.
/// (A datagram that still did not fit fails with `EMSGSIZE`.)
const RDMA_RECV_BUF: usize = 65536;

/// A `sockaddr_nl` addressed to the kernel (port id 0, no groups).
fn kernel_addr() -> libc::sockaddr_nl {
    // SAFETY: sockaddr_nl is four integer fields (one private padding
    // field, hence no struct literal); all-zero bytes are a valid value.
    let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    sa
}

const SOCKADDR_NL_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t;

/// An open netlink socket of one protocol.
pub struct Socket {
    fd: OwnedFd,
    /// Datagrams are received whole without peeking at their size first
    /// (`NETLINK_RDMA`: see [`RDMA_RECV_BUF`]).
    no_peek: bool,
    /// The sequence number of the last request.
    seq: Cell<u32>,
}

impl Socket {
    /// Opens the `NETLINK_RDMA` socket; fails with the kernel's errno
    /// (EPROTONOSUPPORT when the kernel has no RDMA netlink, i.e. no RDMA
    /// support).
    pub fn open() -> Result<Self, i32> {
        Self::open_protocol(NETLINK_RDMA)
    }

    /// Opens an unbound socket of `protocol` (the kernel binds it at the
    /// first send); the first request gets sequence number 2.
    pub fn open_protocol(protocol: c_int) -> Result<Self, i32> {
        // SAFETY: socket(2) takes only integers and touches no memory of ours.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, protocol) };
        if fd < 0 {
            return Err(crate::ffi::errno());
        }
        // SAFETY: fd is the descriptor socket(2) just returned: open, and
        // owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Socket {
            fd,
            no_peek: protocol == NETLINK_RDMA,
            seq: Cell::new(1),
        })
    }

    /// Opens a socket of `protocol` and binds it (port id chosen by the
    /// kernel, no groups), like libnl's `nl_connect`; sequence numbers
    /// start from the current time, as libnl's do.
    pub fn connect(protocol: c_int) -> Result<Self, i32> {
        let s = Self::open_protocol(protocol)?;
        let sa = kernel_addr();
        // SAFETY: sa is a valid sockaddr_nl living across the call and
        // SOCKADDR_NL_LEN is its size; the descriptor is open.
        let r = unsafe {
            libc::bind(
                s.fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_nl).cast(),
                SOCKADDR_NL_LEN,
            )
        };
        if r != 0 {
            return Err(crate::ffi::errno());
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        s.seq.set(now as u32);
        Ok(s)
    }

    /// The next sequence number (the last one plus 1, wrapping).
    pub fn next_seq(&self) -> u32 {
        let s = self.seq.get().wrapping_add(1);
        self.seq.set(s);
        s
    }

    /// Sends one encoded message to the kernel.
    pub fn send_bytes(&self, msg: &[u8]) -> Result<(), i32> {
        let sa = kernel_addr();
        // SAFETY: msg is readable for msg.len() bytes and sa is a valid
        // sockaddr_nl of SOCKADDR_NL_LEN bytes, both living across the call.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                SOCKADDR_NL_LEN,
            )
        };
        if r < 0 {
            return Err(crate::ffi::errno());
        }
        Ok(())
    }

    /// Sends one request (see [`encode_request`]) with the next sequence
    /// number, which it returns.
    pub fn request(&self, kind: u16, flags: u16, header: &[u8], attrs: &[(u16, &[u8])]) -> Result<u32, i32> {
        let seq = self.next_seq();
        self.send_bytes(&encode_request(kind, flags, seq, header, attrs))?;
        Ok(seq)
    }

    /// Sends one RDMA netlink request with the given attributes (type,
    /// payload), asking for an ACK, as a dump when `dump`.
    pub fn send(&mut self, kind: u16, dump: bool, attrs: &[(u16, &[u8])]) -> Result<u32, i32> {
        let flags = NLM_F_REQUEST | NLM_F_ACK | if dump { NLM_F_DUMP } else { 0 };
        self.request(kind, flags, &[], attrs)
    }

    /// Receives one datagram, whole (its size is peeked first), retrying
    /// on EINTR.
    pub fn recv(&self) -> Result<Vec<u8>, i32> {
        if self.no_peek {
            return self.recv_whole();
        }
        loop {
            let mut probe = [0u8; 1];
            // SAFETY: a zero-length peek: the kernel writes nothing into
            // probe (valid anyway) and returns the datagram's real length
            // because of MSG_TRUNC.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    probe.as_mut_ptr().cast(),
                    0,
                    libc::MSG_PEEK | libc::MSG_TRUNC,
                )
            };
            if n < 0 {
                let e = crate::ffi::errno();
                if e == libc::EINTR {
                    continue;
                }
                return Err(e);
            }
            let mut buf = vec![0u8; (n as usize).max(RECV_BUF)];
            // SAFETY: buf is writable for buf.len() bytes and lives across
            // the call.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = crate::ffi::errno();
                if e == libc::EINTR {
                    continue;
                }
                return Err(e);
            }
            buf.truncate(n as usize);
            return Ok(buf);
        }
    }

    /// Receives one datagram of at most [`RDMA_RECV_BUF`] bytes with one
    /// `recv`, retrying on EINTR; a longer one (its real length reported
    /// because of `MSG_TRUNC`) is lost and fails with `EMSGSIZE`.
    fn recv_whole(&self) -> Result<Vec<u8>, i32> {
        let mut buf: Vec<u8> = Vec::with_capacity(RDMA_RECV_BUF);
        loop {
            // SAFETY: the spare capacity is writable for RDMA_RECV_BUF bytes
            // and lives across the call; the kernel writes at most that many.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.spare_capacity_mut().as_mut_ptr().cast(),
                    RDMA_RECV_BUF,
                    libc::MSG_TRUNC,
                )
            };
            if n < 0 {
                let e = crate::ffi::errno();
                if e == libc::EINTR {
                    continue;
                }
                return Err(e);
            }
            let n = n as usize;
            if n > RDMA_RECV_BUF {
                return Err(libc::EMSGSIZE);
            }
            // SAFETY: recv initialised the first n bytes (n fits, checked).
            unsafe { buf.set_len(n) };
            return Ok(buf);
        }
    }

    /// Receives one datagram and hands each of its well-formed messages to
    /// `f` (event sockets: no reply, no end).
    pub fn recv_each(&self, mut f: impl FnMut(&Msg<'_>)) -> Result<(), i32> {
        let buf = self.recv()?;
        split_messages(&buf).for_each(|m| f(&m));
        Ok(())
    }

    /// Receives a reply until its end (see [`dispatch_datagram`]), handing
    /// each of its data messages to `f`.  An empty datagram fails with
    /// `EPROTO` unless a single-part end is allowed.
    pub fn receive(&self, rules: ReplyRules, mut f: impl FnMut(&Msg<'_>) -> Result<(), i32>) -> Result<(), i32> {
        loop {
            let buf = self.recv()?;
            if buf.is_empty() && !rules.single_part_ends {
                return Err(libc::EPROTO);
            }
            if let Some(r) = dispatch_datagram(&buf, &rules, &mut f) {
                return r;
            }
        }
    }

    /// Receives RDMA netlink replies until the kernel's ACK/DONE/error,
    /// handing every data message's attributes to `f`.  An error from `f`
    /// stops the exchange (like a libnl callback returning an error) and is
    /// returned.
    pub fn collect(&mut self, mut f: impl FnMut(u16, &[Attr<'_>]) -> Result<(), i32>) -> Result<(), i32> {
        self.receive(ReplyRules::default(), |m| f(m.kind, &parse_attrs(m.payload)))
    }

    /// A dump request (`kind` with `header`, no ACK asked): `parse` of the
    /// payload of every reply message of type `want`, dropping those it
    /// refuses.
    pub fn dump<T>(
        &self,
        kind: u16,
        header: &[u8],
        want: u16,
        mut parse: impl FnMut(&[u8]) -> Option<T>,
    ) -> Result<Vec<T>, i32> {
        let seq = self.request(kind, NLM_F_REQUEST | NLM_F_DUMP, header, &[])?;
        let mut out = Vec::new();
        self.receive(ReplyRules::to(seq), |m| {
            if m.kind == want {
                out.extend(parse(m.payload));
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// An acknowledged request with one answer: `parse` of the payload of
    /// the first reply message of type `want`; `ENODATA` when there was
    /// none.
    pub fn request_one<T>(
        &self,
        kind: u16,
        header: &[u8],
        attrs: &[(u16, &[u8])],
        want: u16,
        parse: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, i32> {
        let seq = self.request(kind, NLM_F_REQUEST | NLM_F_ACK, header, attrs)?;
        let mut parse = Some(parse);
        let mut found = None;
        self.receive(ReplyRules::to(seq), |m| {
            if m.kind == want {
                if let Some(p) = parse.take() {
                    found = Some(p(m.payload));
                }
            }
            Ok(())
        })?;
        found.ok_or(libc::ENODATA)
    }

    /// The neighbour table (`RTM_GETNEIGH` dump, all families).
    pub fn neighbours(&self) -> Result<Vec<Neigh>, i32> {
        self.dump(RTM_GETNEIGH, &NdMsg::default().to_bytes(), RTM_NEWNEIGH, parse_neigh)
    }

    /// The interface `ifindex` (`RTM_GETLINK`); `EPROTO` when the answer
    /// cannot be parsed.
    pub fn link(&self, ifindex: i32) -> Result<Link, i32> {
        let ifi = IfInfoMsg {
            index: ifindex,
            ..Default::default()
        };
        self.request_one(RTM_GETLINK, &ifi.to_bytes(), &[], RTM_NEWLINK, parse_link)?
            .ok_or(libc::EPROTO)
    }

    /// Joins multicast group `group` (`NETLINK_ADD_MEMBERSHIP`).
    pub fn add_membership(&self, group: u32) -> Result<(), i32> {
        // SAFETY: the option value is a u32 living across the call, and
        // its size is passed.
        let r = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_NETLINK,
                libc::NETLINK_ADD_MEMBERSHIP,
                (&group as *const u32).cast(),
                std::mem::size_of::<u32>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(crate::ffi::errno());
        }
        Ok(())
    }
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Whether the kernel says that registered memory stays usable in a forked
/// child (copy-on-fork, `RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK`).  Any failure
/// (no RDMA netlink, an older kernel without the attribute) means "no".
pub fn copy_on_fork() -> bool {
    let Ok(mut s) = Socket::open() else { return false };
    if s.send(nl_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), false, &[])
        .is_err()
    {
        return false;
    }
    let mut cof = false;
    let r = s.collect(|_, attrs| {
        cof = attrs
            .iter()
            .find(|a| a.kind == RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK)
            .and_then(|a| a.u8())
            .is_some_and(|v| v != 0);
        Ok(())
    });
    r.is_ok() && cof
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u16, attrs: &[(u16, &[u8])]) -> Vec<u8> {
        let mut m = vec![0u8; 16];
        for (t, d) in attrs {
            m.extend_from_slice(&((4 + d.len()) as u16).to_ne_bytes());
            m.extend_from_slice(&t.to_ne_bytes());
            m.extend_from_slice(d);
            m.resize(align4(m.len()), 0);
        }
        let l = m.len() as u32;
        m[0..4].copy_from_slice(&l.to_ne_bytes());
        m[4..6].copy_from_slice(&kind.to_ne_bytes());
        m
    }

    #[test]
    fn parses_attrs_and_done() {
        let mut b = msg(nl_type(5, 1), &[(1, &7u32.to_ne_bytes()), (2, b"rxe0\0")]);
        b.extend(msg(NLMSG_DONE, &[]));
        let m = parse_messages(&b);
        assert_eq!(m.len(), 2);
        match &m[0] {
            Message::Data { attrs, .. } => {
                assert_eq!(attrs[0].u32(), Some(7));
                assert_eq!(attrs[1].str(), Some("rxe0"));
            }
            _ => panic!(),
        }
        assert_eq!(m[1], Message::Done);
    }

    #[test]
    fn truncated_input_is_safe() {
        let b = msg(nl_type(5, 1), &[(1, &7u32.to_ne_bytes())]);
        for n in 0..b.len() {
            let _ = parse_messages(&b[..n]);
        }
        let mut bad = b.clone();
        bad[16] = 0xff; // attribute length beyond the message
        let _ = parse_messages(&bad);
    }

    // -- rtnetlink ---------------------------------------------------------

    /// A reply message with flags and sequence number set.
    fn reply(kind: u16, flags: u16, seq: u32, header: &[u8], attrs: &[(u16, &[u8])]) -> Vec<u8> {
        encode_request(kind, flags, seq, header, attrs)
    }

    fn nested(children: &[(u16, &[u8])]) -> Vec<u8> {
        let mut b = Vec::new();
        for (k, d) in children {
            push_attr(&mut b, *k, d);
        }
        b
    }

    fn route_msg(seq: u32, flags: u16) -> Vec<u8> {
        let rtm = RtMsg {
            family: libc::AF_INET as u8,
            dst_len: 32,
            table: 254,
            rtype: 1,
            ..Default::default()
        };
        reply(
            RTM_NEWROUTE,
            flags,
            seq,
            &rtm.to_bytes(),
            &[
                (RTA_DST, &[10, 0, 0, 7]),
                (RTA_GATEWAY, &[10, 0, 0, 1]),
                (RTA_OIF, &3u32.to_ne_bytes()),
                (RTA_PREFSRC, &[10, 0, 0, 9]),
            ],
        )
    }

    fn neigh_msg(seq: u32, flags: u16, ifindex: i32, dst: &[u8], ll: &[u8]) -> Vec<u8> {
        let ndm = NdMsg {
            family: libc::AF_INET as u8,
            ifindex,
            state: 2,
            ..Default::default()
        };
        reply(
            RTM_NEWNEIGH,
            flags,
            seq,
            &ndm.to_bytes(),
            &[(NDA_DST, dst), (NDA_LLADDR, ll)],
        )
    }

    fn vlan_link_msg(seq: u32, id: u16) -> Vec<u8> {
        let data = nested(&[(IFLA_VLAN_ID, &id.to_ne_bytes())]);
        let info = nested(&[(IFLA_INFO_KIND, b"vlan\0"), (IFLA_INFO_DATA | NLA_F_NESTED, &data)]);
        let ifi = IfInfoMsg {
            index: 5,
            ..Default::default()
        };
        reply(
            RTM_NEWLINK,
            0,
            seq,
            &ifi.to_bytes(),
            &[
                (IFLA_ADDRESS, &[2, 0, 0, 0, 0, 5]),
                (IFLA_LINKINFO | NLA_F_NESTED, &info),
            ],
        )
    }

    fn ack(seq: u32, err: i32) -> Vec<u8> {
        let mut body = err.to_ne_bytes().to_vec();
        body.extend_from_slice(&[0u8; 16]); // the echoed request header
        let mut m = reply(NLMSG_ERROR, 0, seq, &body, &[]);
        m.truncate(NLMSG_HDRLEN + body.len());
        m
    }

    fn done(seq: u32) -> Vec<u8> {
        reply(NLMSG_DONE, NLM_F_MULTI, seq, &0i32.to_ne_bytes(), &[])
    }

    fn payload(m: &[u8]) -> &[u8] {
        split_messages(m).next().unwrap().payload
    }

    #[test]
    fn family_headers_round_trip() {
        let rtm = RtMsg {
            family: 10,
            dst_len: 128,
            src_len: 1,
            tos: 2,
            table: 3,
            protocol: 4,
            scope: 5,
            rtype: 6,
            flags: 0x1234_5678,
        };
        let b = rtm.to_bytes();
        assert_eq!(b[..8], [10, 128, 1, 2, 3, 4, 5, 6]);
        assert_eq!(RtMsg::parse(&b), Some((rtm, vec![])));
        let ndm = NdMsg {
            family: 2,
            ifindex: -7,
            state: 0x80,
            flags: 1,
            ntype: 3,
        };
        let b = ndm.to_bytes();
        assert_eq!(b[4..8], (-7i32).to_ne_bytes());
        assert_eq!(NdMsg::parse(&b), Some((ndm, vec![])));
        let ifi = IfInfoMsg {
            family: 0,
            itype: 1,
            index: 9,
            flags: 0x1003,
            change: u32::MAX,
        };
        let b = ifi.to_bytes();
        assert_eq!(b[4..8], 9i32.to_ne_bytes());
        assert_eq!(IfInfoMsg::parse(&b), Some((ifi, vec![])));
        // Too short for the header.
        assert_eq!(RtMsg::parse(&[0; 11]), None);
        assert_eq!(NdMsg::parse(&[0; 11]), None);
        assert_eq!(IfInfoMsg::parse(&[0; 15]), None);
    }

    #[test]
    fn request_with_family_header() {
        let ifi = IfInfoMsg {
            index: 4,
            ..Default::default()
        };
        let m = encode_request(
            RTM_GETLINK,
            NLM_F_REQUEST | NLM_F_ACK,
            77,
            &ifi.to_bytes(),
            &[(3, b"x")],
        );
        assert_eq!(m.len(), 16 + 16 + 8);
        let msgs: Vec<_> = split_messages(&m).collect();
        assert_eq!(msgs.len(), 1);
        assert_eq!(
            (msgs[0].kind, msgs[0].flags, msgs[0].seq),
            (RTM_GETLINK, NLM_F_REQUEST | NLM_F_ACK, 77)
        );
        let (h, attrs) = IfInfoMsg::parse(msgs[0].payload).unwrap();
        assert_eq!(h.index, 4);
        assert_eq!(attrs, [Attr { kind: 3, data: b"x" }]);
        // A family header that is not a multiple of 4 is padded.
        let m = encode_request(1, 0, 0, &[1, 2, 3, 4, 5], &[(2, &[])]);
        assert_eq!(m.len(), 16 + 8 + 4);
        assert_eq!(parse_attrs(&split_messages(&m).next().unwrap().payload[8..]).len(), 1);
        // The RDMA form has no family header.
        assert_eq!(
            encode(9, 1, 2, &[(1, &[7])]),
            encode_request(9, 1, 2, &[], &[(1, &[7])])
        );
    }

    #[test]
    fn nested_attributes_and_type_mask() {
        let m = vlan_link_msg(0, 100);
        let (_, attrs) = IfInfoMsg::parse(payload(&m)).unwrap();
        // The nested flag is not part of the type.
        let info = find_attr(&attrs, IFLA_LINKINFO).unwrap();
        assert_eq!(info.kind, IFLA_LINKINFO);
        let inner = info.nested();
        assert_eq!(find_attr(&inner, IFLA_INFO_KIND).unwrap().str(), Some("vlan"));
        let data = find_attr(&inner, IFLA_INFO_DATA).unwrap().nested();
        assert_eq!(find_attr(&data, IFLA_VLAN_ID).unwrap().u16(), Some(100));
        assert_eq!(
            parse_link(payload(&m)),
            Some(Link {
                addr: Some(vec![2, 0, 0, 0, 0, 5]),
                is_vlan: true,
                vlan_id: 100
            })
        );
        // Byte-order flag masked too.
        let b = nested(&[
            (NLA_F_NET_BYTEORDER | 6, &[1, 2]),
            (NLA_F_NESTED | NLA_F_NET_BYTEORDER | 7, &[]),
        ]);
        let a = parse_attrs(&b);
        assert_eq!((a[0].kind, a[1].kind), (6, 7));
        // A link of another kind, or without INFO_DATA: no VLAN id.
        let info = nested(&[(IFLA_INFO_KIND, b"vlan\0")]);
        let m = reply(RTM_NEWLINK, 0, 0, &[0; 16], &[(IFLA_LINKINFO, &info)]);
        let l = parse_link(payload(&m)).unwrap();
        assert_eq!((l.addr, l.is_vlan, l.vlan_id), (None, true, 0));
        let info = nested(&[(IFLA_INFO_KIND, b"vlanx\0")]);
        let m = reply(RTM_NEWLINK, 0, 0, &[0; 16], &[(IFLA_LINKINFO, &info)]);
        assert!(!parse_link(payload(&m)).unwrap().is_vlan);
        // A nested attribute whose children overrun it: the bad child and
        // what follows are dropped.
        let mut bad = nested(&[(1, &[1, 2, 3, 4]), (2, &[5, 6, 7, 8])]);
        bad[8..10].copy_from_slice(&40u16.to_ne_bytes());
        let outer = nested(&[(IFLA_LINKINFO, &bad)]);
        let a = parse_attrs(&outer);
        assert_eq!(
            a[0].nested(),
            [Attr {
                kind: 1,
                data: &[1, 2, 3, 4]
            }]
        );
    }

    #[test]
    fn route_neigh_link_objects() {
        let r = parse_route(payload(&route_msg(1, 0))).unwrap();
        assert_eq!(
            r,
            Route {
                family: libc::AF_INET,
                rtype: 1,
                gateway: Some(vec![10, 0, 0, 1]),
                oif: 3,
                prefsrc: Some(vec![10, 0, 0, 9]),
            }
        );
        let n = parse_neigh(payload(&neigh_msg(1, 0, 4, &[10, 0, 0, 1], &[1, 2, 3, 4, 5, 6]))).unwrap();
        assert_eq!(
            n,
            Neigh {
                family: libc::AF_INET,
                ifindex: 4,
                dst: Some(vec![10, 0, 0, 1]),
                lladdr: Some(vec![1, 2, 3, 4, 5, 6]),
            }
        );
        // Headers only: objects without attributes.
        assert_eq!(parse_route(&[0; 12]), Some(Route::default()));
        assert_eq!(parse_neigh(&[0; 12]), Some(Neigh::default()));
        assert_eq!(parse_link(&[0; 16]), Some(Link::default()));
        // Payloads too short for their family header.
        assert_eq!(parse_route(&[0; 11]), None);
        assert_eq!(parse_neigh(&[0; 11]), None);
        assert_eq!(parse_link(&[0; 15]), None);
    }

    #[test]
    fn multipath_lengths() {
        let rtm = RtMsg::default().to_bytes();
        let hop = |len: u16, gw: bool| {
            let mut nh = vec![0u8; 8];
            nh[4..8].copy_from_slice(&6i32.to_ne_bytes());
            if gw {
                push_attr(&mut nh, RTA_GATEWAY, &[10, 0, 0, 2]);
            }
            nh[0..2].copy_from_slice(&len.to_ne_bytes());
            nh
        };
        let route = |mp: &[u8]| {
            let m = reply(
                RTM_NEWROUTE,
                0,
                0,
                &rtm,
                &[
                    (RTA_MULTIPATH, mp),
                    (RTA_OIF, &3u32.to_ne_bytes()),
                    (RTA_GATEWAY, &[1, 1, 1, 1]),
                ],
            );
            parse_route(payload(&m)).unwrap()
        };
        // A well-formed first hop.
        let r = route(&hop(16, true));
        assert_eq!((r.oif, r.gateway), (6, Some(vec![10, 0, 0, 2])));
        // rtnh_len past the attribute: clamped to it.
        let r = route(&hop(0xffff, true));
        assert_eq!((r.oif, r.gateway), (6, Some(vec![10, 0, 0, 2])));
        // rtnh_len below the header: the hop has no attributes.
        let r = route(&hop(2, true));
        assert_eq!((r.oif, r.gateway), (6, None));
        // An RTA_MULTIPATH too short for a hop: single-path attributes.
        let r = route(&hop(8, false)[..6]);
        assert_eq!((r.oif, r.gateway), (3, Some(vec![1, 1, 1, 1])));
    }

    #[test]
    fn bad_lengths_end_parsing() {
        let mut b = route_msg(1, 0);
        b.extend(neigh_msg(1, 0, 2, &[1, 2, 3, 4], &[9; 6]));
        assert_eq!(split_messages(&b).count(), 2);
        let second = align4(route_msg(1, 0).len());
        // nlmsg_len below the header size, past the end, or huge.
        for len in [0u32, 15, b.len() as u32 - second as u32 + 1, u32::MAX] {
            let mut x = b.clone();
            x[second..second + 4].copy_from_slice(&len.to_ne_bytes());
            assert_eq!(split_messages(&x).count(), 1, "len {len}");
        }
        // An attribute length below 4 or past the message ends the
        // attributes, keeping the ones before.
        let m = route_msg(1, 0);
        let first_attr = NLMSG_HDRLEN + RtMsg::LEN;
        let second_attr = first_attr + 8;
        for len in [0u16, 3, 0xffff] {
            let mut x = m.clone();
            x[second_attr..second_attr + 2].copy_from_slice(&len.to_ne_bytes());
            let r = parse_route(payload(&x)).unwrap();
            assert_eq!((r.gateway, r.oif, r.prefsrc), (None, 0, None), "len {len}");
        }
        // Short fixed-size attributes read as absent values.
        let m = reply(RTM_NEWROUTE, 0, 0, &[0; 12], &[(RTA_OIF, &[1, 2])]);
        assert_eq!(parse_route(payload(&m)).unwrap().oif, 0);
        let m = vlan_link_msg(0, 7);
        let mut x = m.clone();
        // Shrink IFLA_VLAN_ID's length to 5 (one payload byte).
        let at = x.windows(6).position(|w| w == [6, 0, 1, 0, 7, 0]).unwrap();
        x[at] = 5;
        assert_eq!(parse_link(payload(&x)).unwrap().vlan_id, 0);
        assert_eq!(error_code(&[1, 2]), -libc::EPROTO);
    }

    fn run(datagrams: &[Vec<u8>], rules: ReplyRules) -> (Vec<Option<Result<(), i32>>>, Vec<u16>) {
        let mut seen = Vec::new();
        let ends = datagrams
            .iter()
            .map(|d| {
                dispatch_datagram(d, &rules, &mut |m| {
                    seen.push(m.kind);
                    Ok(())
                })
            })
            .collect();
        (ends, seen)
    }

    #[test]
    fn multi_part_dump_done_and_stale_messages() {
        // A dump over two datagrams, after a stale ACK of request 4.
        let mut d1 = ack(4, 0);
        d1.extend(neigh_msg(5, NLM_F_MULTI, 1, &[1; 4], &[1; 6]));
        let mut d2 = neigh_msg(5, NLM_F_MULTI, 2, &[2; 4], &[2; 6]);
        d2.extend(done(5));
        d2.extend(neigh_msg(5, NLM_F_MULTI, 3, &[3; 4], &[3; 6])); // after the end
        let (ends, seen) = run(&[d1.clone(), d2.clone()], ReplyRules::to(5));
        assert_eq!(ends, [None, Some(Ok(()))]);
        assert_eq!(seen, [RTM_NEWNEIGH, RTM_NEWNEIGH]);
        // Without a sequence filter the stale ACK ends the exchange.
        let (ends, _) = run(&[d1], ReplyRules::default());
        assert_eq!(ends, [Some(Ok(()))]);
        // Messages of other requests only: keep receiving.
        let (ends, seen) = run(&[neigh_msg(9, NLM_F_MULTI, 1, &[1; 4], &[1; 6])], ReplyRules::to(5));
        assert_eq!((ends, seen), (vec![None], vec![]));
    }

    #[test]
    fn errors_and_acks() {
        let rules = ReplyRules::to(3);
        let (ends, _) = run(&[ack(3, -libc::ENODEV)], rules);
        assert_eq!(ends, [Some(Err(libc::ENODEV))]);
        let (ends, _) = run(&[ack(3, 0)], rules);
        assert_eq!(ends, [Some(Ok(()))]);
        // A positive error is a protocol error, so is a truncated one.
        let (ends, _) = run(&[ack(3, 5)], rules);
        assert_eq!(ends, [Some(Err(libc::EPROTO))]);
        let short = reply(NLMSG_ERROR, 0, 3, &[], &[]);
        let (ends, _) = run(&[short], rules);
        assert_eq!(ends, [Some(Err(libc::EPROTO))]);
        let (ends, _) = run(&[ack(3, i32::MIN)], rules);
        assert_eq!(ends, [Some(Err(i32::MAX))]);
        // The reply then the ACK in one datagram.
        let mut d = vlan_link_msg(3, 1);
        d.extend(ack(3, 0));
        let (ends, seen) = run(&[d], rules);
        assert_eq!((ends, seen), (vec![Some(Ok(()))], vec![RTM_NEWLINK]));
        // An error from the handler stops the exchange.
        let mut d = route_msg(3, NLM_F_MULTI);
        d.extend(route_msg(3, NLM_F_MULTI));
        let mut calls = 0;
        let r = dispatch_datagram(&d, &rules, &mut |_| {
            calls += 1;
            Err(libc::ENOMSG)
        });
        assert_eq!((r, calls), (Some(Err(libc::ENOMSG)), 1));
        // RDMA netlink's view of the same.
        assert_eq!(replay(&ack(0, -libc::EPERM), |_, _| Ok(())), Err(libc::EPERM));
        assert_eq!(replay(&[], |_, _| Ok(())), Ok(()));
    }

    #[test]
    fn single_part_and_strict_rules() {
        let single = ReplyRules::single_part();
        // A route reply without NLM_F_MULTI ends at its datagram, leaving
        // the ACK unread.
        let (ends, seen) = run(&[route_msg(8, 0)], single);
        assert_eq!((ends, seen), (vec![Some(Ok(()))], vec![RTM_NEWROUTE]));
        // A multi-part one goes on to the DONE.
        let (ends, _) = run(&[route_msg(8, NLM_F_MULTI), done(8)], single);
        assert_eq!(ends, [None, Some(Ok(()))]);
        // Garbage: skipped by default, EPROTO when strict, the end of a
        // single-part reply.
        let junk = vec![0xffu8; 7];
        assert_eq!(run(std::slice::from_ref(&junk), ReplyRules::default()).0, [None]);
        assert_eq!(
            run(std::slice::from_ref(&junk), ReplyRules::to(1)).0,
            [Some(Err(libc::EPROTO))]
        );
        assert_eq!(run(&[junk], single).0, [Some(Ok(()))]);
    }

    /// Every prefix and a set of byte flips of crafted rtnetlink replies
    /// (route, neighbours, nested link info, errors): no panic, no
    /// out-of-bounds read, whatever the rules.
    #[test]
    fn rtnetlink_crafted_corpus_never_panics() {
        let mut corpus = Vec::new();
        let mut d = route_msg(1, NLM_F_MULTI);
        d.extend(neigh_msg(1, NLM_F_MULTI, 2, &[1, 2, 3, 4], &[1, 2, 3, 4, 5, 6]));
        d.extend(vlan_link_msg(1, 42));
        d.extend(ack(1, -libc::EINVAL));
        d.extend(done(1));
        corpus.push(d);
        let mut nh = vec![16u8, 0, 0, 0, 3, 0, 0, 0];
        push_attr(&mut nh, RTA_GATEWAY, &[10, 0, 0, 2]);
        corpus.push(reply(
            RTM_NEWROUTE,
            0,
            1,
            &[2; 12],
            &[(RTA_MULTIPATH | NLA_F_NESTED, &nh)],
        ));
        let rules = [ReplyRules::default(), ReplyRules::to(1), ReplyRules::single_part()];
        let exercise = |b: &[u8]| {
            for r in &rules {
                let _ = dispatch_datagram(b, r, &mut |m| {
                    let _ = parse_route(m.payload);
                    let _ = parse_neigh(m.payload);
                    let _ = parse_link(m.payload);
                    Ok(())
                });
            }
            for m in split_messages(b) {
                for a in parse_attrs(m.payload) {
                    for n in a.nested() {
                        let _ = (n.nested(), n.u8(), n.u16(), n.u32(), n.u64(), n.str());
                    }
                }
                let _ = error_code(m.payload);
            }
            let _ = parse_messages(b);
            let _ = (parse_route(b), parse_neigh(b), parse_link(b));
        };
        for b in &corpus {
            for n in 0..=b.len() {
                exercise(&b[..n]);
                exercise(&b[n..]);
            }
            for i in 0..b.len() {
                for v in [0u8, 1, 3, 4, 5, 0x7f, 0x80, 0xff] {
                    let mut x = b.clone();
                    x[i] = v;
                    exercise(&x);
                }
            }
        }
        for n in 0..96 {
            let junk: Vec<u8> = (0..n).map(|i| (i * 53 + 7) as u8).collect();
            exercise(&junk);
        }
    }

    #[test]
    fn route_socket_round_trip() {
        // The kernel's own answers, where rtnetlink is available: link 1
        // is "lo" in every network namespace.
        let Ok(s) = Socket::connect(NETLINK_ROUTE) else {
            return;
        };
        let seq = s.next_seq();
        assert_eq!(s.next_seq(), seq.wrapping_add(1));
        let lo = s.link(1).unwrap();
        assert!(!lo.is_vlan);
        assert!(s.neighbours().is_ok());
        // A link that does not exist: the kernel's error.
        assert_eq!(s.link(0x7fff_fff0).unwrap_err(), libc::ENODEV);
        assert!(s.add_membership(RTNLGRP_NEIGH).is_ok());
    }
}
