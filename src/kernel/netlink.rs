//! A small RDMA netlink (`NETLINK_RDMA`) client: request/dump over a raw
//! socket, and a parser for the replies that never trusts the kernel's
//! lengths (fuzzed through [`parse_messages`]).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

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

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLM_F_DUMP: u16 = 0x300;
const NLA_TYPE_MASK: u16 = 0x3fff;

/// `RDMA_NL_GET_TYPE(client, op)`.
pub const fn nl_type(client: u16, op: u16) -> u16 {
    (client << 10) + op
}

/// One netlink attribute (type without the nested/byte-order flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr<'a> {
    pub kind: u16,
    pub data: &'a [u8],
}

impl Attr<'_> {
    pub fn u8(&self) -> Option<u8> {
        self.data.first().copied()
    }
    pub fn u32(&self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.data.get(..4)?.try_into().ok()?))
    }
    pub fn u64(&self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.data.get(..8)?.try_into().ok()?))
    }
    /// A NUL-terminated string attribute.
    pub fn str(&self) -> Option<&str> {
        let end = self.data.iter().position(|&b| b == 0).unwrap_or(self.data.len());
        std::str::from_utf8(&self.data[..end]).ok()
    }
}

/// A parsed netlink message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// A data message: its type and attributes.
    Data { kind: u16, attrs: Vec<Attr<'a>> },
    /// `NLMSG_ERROR` with the (negative) errno; 0 is an ACK.
    Error(i32),
    /// `NLMSG_DONE`: end of a dump.
    Done,
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Builds one netlink message: header, then each attribute (type,
/// payload) padded to 4 bytes.
pub fn encode(kind: u16, flags: u16, seq: u32, attrs: &[(u16, &[u8])]) -> Vec<u8> {
    let mut msg = vec![0u8; 16];
    for (t, d) in attrs {
        let l = 4 + d.len();
        msg.extend_from_slice(&(l as u16).to_ne_bytes());
        msg.extend_from_slice(&t.to_ne_bytes());
        msg.extend_from_slice(d);
        msg.resize(align4(msg.len()), 0);
    }
    let len = msg.len() as u32;
    msg[0..4].copy_from_slice(&len.to_ne_bytes());
    msg[4..6].copy_from_slice(&kind.to_ne_bytes());
    msg[6..8].copy_from_slice(&flags.to_ne_bytes());
    msg[8..12].copy_from_slice(&seq.to_ne_bytes());
    msg
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

/// Parses the attributes that follow a message header.
pub fn parse_attrs(mut b: &[u8]) -> Vec<Attr<'_>> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let kind = u16::from_ne_bytes([b[2], b[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > b.len() {
            break;
        }
        out.push(Attr { kind, data: &b[4..len] });
        let next = align4(len).min(b.len());
        b = &b[next..];
    }
    out
}

/// Parses one datagram of netlink messages.  Malformed input ends parsing;
/// it never panics or reads out of bounds.
pub fn parse_messages(mut b: &[u8]) -> Vec<Message<'_>> {
    let mut out = Vec::new();
    while b.len() >= 16 {
        let len = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let kind = u16::from_ne_bytes([b[4], b[5]]);
        if len < 16 || len > b.len() {
            break;
        }
        let body = &b[16..len];
        match kind {
            NLMSG_DONE => out.push(Message::Done),
            NLMSG_ERROR => {
                let e = body
                    .get(..4)
                    .map(|x| i32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
                    .unwrap_or(-libc::EPROTO);
                out.push(Message::Error(e));
            }
            _ => out.push(Message::Data {
                kind,
                attrs: parse_attrs(body),
            }),
        }
        b = &b[align4(len).min(b.len())..];
    }
    out
}

/// An open `NETLINK_RDMA` socket.
pub struct Socket {
    fd: OwnedFd,
    seq: u32,
}

impl Socket {
    /// Opens the socket; fails with the kernel's errno (EPROTONOSUPPORT when
    /// the kernel has no RDMA netlink, i.e. no RDMA support).
    pub fn open() -> Result<Self, i32> {
        // SAFETY: plain socket(2) call.
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_RDMA) };
        if fd < 0 {
            return Err(crate::ffi::errno());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Socket { fd, seq: 1 })
    }

    /// Sends one request with the given attributes (type, payload).
    pub fn send(&mut self, kind: u16, dump: bool, attrs: &[(u16, &[u8])]) -> Result<u32, i32> {
        self.seq = self.seq.wrapping_add(1);
        let flags = NLM_F_REQUEST | NLM_F_ACK | if dump { NLM_F_DUMP } else { 0 };
        let msg = encode(kind, flags, self.seq, attrs);
        // SAFETY: zeroed sockaddr_nl addressed to the kernel (pid 0).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: msg and sa are valid for the lengths given.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(crate::ffi::errno());
        }
        Ok(self.seq)
    }

    /// Receives replies until the kernel's ACK/DONE/error, handing every data
    /// message's attributes to `f`.  An error from `f` stops the exchange
    /// (like a libnl callback returning an error) and is returned.
    pub fn collect(&mut self, mut f: impl FnMut(u16, &[Attr<'_>]) -> Result<(), i32>) -> Result<(), i32> {
        let mut buf = vec![0u8; 32768];
        loop {
            // SAFETY: buf is valid for its length.
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = crate::ffi::errno();
                if e == libc::EINTR {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(libc::EPROTO);
            }
            if let Some(r) = dispatch(&buf[..n as usize], &mut f) {
                return r;
            }
        }
    }
}

/// Hands the data messages of one datagram to `f`; `Some` when the
/// exchange is over (DONE, ACK, a kernel error or an error from `f`).
pub fn dispatch(b: &[u8], f: &mut impl FnMut(u16, &[Attr<'_>]) -> Result<(), i32>) -> Option<Result<(), i32>> {
    for m in parse_messages(b) {
        match m {
            Message::Done | Message::Error(0) => return Some(Ok(())),
            Message::Error(e) => return Some(Err(if e < 0 { e.saturating_neg() } else { libc::EPROTO })),
            Message::Data { kind, attrs } => {
                if let Err(e) = f(kind, &attrs) {
                    return Some(Err(e));
                }
            }
        }
    }
    None
}

/// [`dispatch`] over recorded replies: the end of the bytes ends the
/// exchange successfully (a reply without an ACK).
pub fn replay(b: &[u8], mut f: impl FnMut(u16, &[Attr<'_>]) -> Result<(), i32>) -> Result<(), i32> {
    dispatch(b, &mut f).unwrap_or(Ok(()))
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
}
