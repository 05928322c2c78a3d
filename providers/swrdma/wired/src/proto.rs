//! What travels between a client and the agent: the agent's abstract
//! socket name and the messages of the control connection (README.md,
//! "Protocol").  Both ends are processes of one machine: integers are in
//! native byte order.

/// The protocol's version: in the socket name (an agent of another version
/// is another agent) and in every message's header (checked both ways).
pub const VERSION: u16 = 3;

/// Every message starts with this word ("SWRW").
pub const MAGIC: u32 = 0x5357_5257;

/// The size of the access page a client passes with its hello (the
/// provider's `locks.rs`: a sealed memory file of exactly this size whose
/// first word is [`ACCESS_MAGIC`]).
pub const ACCESS_BYTES: usize = 16384;
/// The access page's first word ("SWRDACC1", `locks.rs`).
pub const ACCESS_MAGIC: u64 = 0x5357_5244_4143_4331;

/// Message kinds (the header's `kind`).
pub mod kind {
    /// client -> agent, once, first, with 2 descriptors
    pub const HELLO: u16 = 1;
    /// agent -> client: the hello was taken
    pub const WELCOME: u16 = 2;
    /// agent -> client: the connection is refused (then closed)
    pub const REFUSED: u16 = 3;
    /// client -> agent, after the welcome: the agent's counters
    pub const QUERY: u16 = 4;
    /// agent -> client: the answer to QUERY
    pub const COUNTERS: u16 = 5;
    /// client -> agent, after the welcome, no answer: a queue of the
    /// client's (a send queue) has entries while the agent slept on it
    pub const DOORBELL: u16 = 6;
}

/// Flags of the welcome.
pub mod flag {
    /// Cross-memory attach into the client was refused by the kernel (the
    /// probe's errno is in the welcome); the client places its own data.
    pub const NO_CMA: u32 = 1;
    /// The agent carries its clients' traffic (it runs the wire engine:
    /// started with `--dir`, its sockets had); without it, it serves the
    /// control path only.
    pub const TRANSPORT: u32 = 2;
}

/// Flags of the hello (information for the agent's log).
pub mod hello_flag {
    /// The client called `prctl(PR_SET_PTRACER, agent pid)` (Yama 1).
    pub const PTRACER_SET: u32 = 1;
}

/// The longest message (a refusal or welcome with its text).
pub const MAX_MSG: usize = 512;
/// The longest text a welcome or a refusal carries.
pub const MAX_TEXT: usize = MAX_MSG - Welcome::FIXED;

/// The abstract socket name (without its leading NUL byte) of the agent of
/// user `uid` for the interface of index `ifindex` in the caller's network
/// namespace (abstract names are per network namespace).  `scope`, when not
/// empty, names a private instance (tests, `SWRDMA_WIRED_SCOPE`).
pub fn socket_name(uid: u32, ifindex: u32, scope: &str) -> Vec<u8> {
    let mut s = format!("swrdma-wired/{VERSION}/{uid}/{ifindex}");
    if !scope.is_empty() {
        s.push('/');
        s.push_str(scope);
    }
    s.into_bytes()
}

/// The abstract name of the agent's QP1 intake (a `SOCK_SEQPACKET`
/// listener): the processes holding the interface's UDP sockets hand it
/// the datagrams for QP1 that reach them (one message each: the 44-byte
/// header of `swrdma_roce::fwd`, then the UDP payload).
pub fn qp1_name(uid: u32, ifindex: u32, scope: &str) -> Vec<u8> {
    let mut n = socket_name(uid, ifindex, scope);
    n.extend_from_slice(b"/qp1");
    n
}

/// A scope is at most 64 bytes of `[A-Za-z0-9._-]` (it goes into a socket
/// name and on the agent's command line).
pub fn scope_ok(scope: &str) -> bool {
    scope.len() <= 64 && scope.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The header of every message (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub magic: u32,
    pub version: u16,
    pub kind: u16,
    /// The whole message's length, header included.
    pub len: u32,
}

impl Header {
    pub const LEN: usize = 16;

    pub fn new(kind: u16, len: usize) -> Header {
        Header {
            magic: MAGIC,
            version: VERSION,
            kind,
            len: len as u32,
        }
    }

    fn put(&self, b: &mut Vec<u8>) {
        b.extend_from_slice(&self.magic.to_ne_bytes());
        b.extend_from_slice(&self.version.to_ne_bytes());
        b.extend_from_slice(&self.kind.to_ne_bytes());
        b.extend_from_slice(&self.len.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
    }

    /// The header of message `b` when it is one of ours (magic) and its
    /// length field is the datagram's length.  The version is left to the
    /// caller (a refusal names it).
    pub fn parse(b: &[u8]) -> Option<Header> {
        if b.len() < Self::LEN {
            return None;
        }
        let h = Header {
            magic: u32_at(b, 0),
            version: u16::from_ne_bytes([b[4], b[5]]),
            kind: u16::from_ne_bytes([b[6], b[7]]),
            len: u32_at(b, 8),
        };
        (h.magic == MAGIC && h.len as usize == b.len()).then_some(h)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or_default())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// The client's first message (40 bytes), sent with two descriptors:
/// its access page and the write end of its async-event pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// `getpid()` of the client (its own PID namespace's number).
    pub pid: u32,
    /// `hello_flag::*`
    pub flags: u32,
    /// Address, in the client, of an 8-byte word holding `probe_value`
    /// until the welcome arrives: the agent's cross-memory-attach probe.
    pub probe_addr: u64,
    pub probe_value: u64,
}

impl Hello {
    pub const LEN: usize = Header::LEN + 24;

    pub fn to_bytes(self) -> Vec<u8> {
        let mut b = Vec::with_capacity(Self::LEN);
        Header::new(kind::HELLO, Self::LEN).put(&mut b);
        b.extend_from_slice(&self.pid.to_ne_bytes());
        b.extend_from_slice(&self.flags.to_ne_bytes());
        b.extend_from_slice(&self.probe_addr.to_ne_bytes());
        b.extend_from_slice(&self.probe_value.to_ne_bytes());
        b
    }

    /// The hello in `b` (a whole message of kind HELLO, any version).
    pub fn parse(b: &[u8]) -> Option<Hello> {
        let h = Header::parse(b)?;
        (h.kind == kind::HELLO && b.len() == Self::LEN).then(|| Hello {
            pid: u32_at(b, 16),
            flags: u32_at(b, 20),
            probe_addr: u64_at(b, 24),
            probe_value: u64_at(b, 32),
        })
    }
}

/// The agent's answer to a hello: WELCOME (`status` 0) or REFUSED
/// (`status` an errno: `EPROTO` another version, `EACCES` another user,
/// `EINVAL` a malformed hello, `EMFILE` too many clients), with a text
/// that says why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Welcome {
    pub kind: u16,
    pub status: u32,
    /// `flag::*`
    pub flags: u32,
    /// The agent's pid (its PID namespace's number).
    pub agent_pid: u32,
    /// The client's number at this agent (1, 2, ...; 0 in a refusal).
    pub client_id: u32,
    /// The errno of the cross-memory-attach probe (0: it worked).
    pub cma_errno: u32,
    pub text: String,
}

impl Welcome {
    /// Header and fixed fields; the text follows, to the message's end.
    pub const FIXED: usize = Header::LEN + 24;

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut text = self.text.as_bytes();
        if text.len() > MAX_TEXT {
            text = &text[..MAX_TEXT];
        }
        let len = Self::FIXED + text.len();
        let mut b = Vec::with_capacity(len);
        Header::new(self.kind, len).put(&mut b);
        for w in [
            self.status,
            self.flags,
            self.agent_pid,
            self.client_id,
            self.cma_errno,
            0,
        ] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        b.extend_from_slice(text);
        b
    }

    /// A welcome or refusal of any version (the caller checks it).
    pub fn parse(b: &[u8]) -> Option<(Header, Welcome)> {
        let h = Header::parse(b)?;
        if (h.kind != kind::WELCOME && h.kind != kind::REFUSED) || b.len() < Self::FIXED {
            return None;
        }
        let w = Welcome {
            kind: h.kind,
            status: u32_at(b, 16),
            flags: u32_at(b, 20),
            agent_pid: u32_at(b, 24),
            client_id: u32_at(b, 28),
            cma_errno: u32_at(b, 32),
            text: String::from_utf8_lossy(&b[Self::FIXED..]).into_owned(),
        };
        Some((h, w))
    }
}

/// A header-only message (QUERY).
pub fn bare(kind: u16) -> Vec<u8> {
    let mut b = Vec::with_capacity(Header::LEN);
    Header::new(kind, Header::LEN).put(&mut b);
    b
}

/// The agent's counters (the answer to QUERY), for tests and diagnosis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Connections now open (greeted or not).
    pub clients: u32,
    /// Hellos welcomed since the agent started.
    pub welcomed: u32,
    /// Connections refused (another uid, version, malformed hello).
    pub refused: u32,
    /// Clients dropped because their process exited (pidfd readable) while
    /// their connection was still open (a child holding it).
    pub exited: u32,
    /// Welcomed clients marked `no_cma`.
    pub no_cma: u32,
}

impl Counters {
    pub const LEN: usize = Header::LEN + 20;

    pub fn to_bytes(self) -> Vec<u8> {
        let mut b = Vec::with_capacity(Self::LEN);
        Header::new(kind::COUNTERS, Self::LEN).put(&mut b);
        for w in [self.clients, self.welcomed, self.refused, self.exited, self.no_cma] {
            b.extend_from_slice(&w.to_ne_bytes());
        }
        b
    }

    pub fn parse(b: &[u8]) -> Option<Counters> {
        let h = Header::parse(b)?;
        (h.kind == kind::COUNTERS && h.version == VERSION && b.len() == Self::LEN).then(|| Counters {
            clients: u32_at(b, 16),
            welcomed: u32_at(b, 20),
            refused: u32_at(b, 24),
            exited: u32_at(b, 28),
            no_cma: u32_at(b, 32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_has_version_uid_ifindex_scope() {
        assert_eq!(socket_name(1000, 3, ""), b"swrdma-wired/3/1000/3".to_vec());
        assert_eq!(socket_name(0, 1, "t-7"), b"swrdma-wired/3/0/1/t-7".to_vec());
        assert!(scope_ok("test-12.a_b"));
        assert!(!scope_ok("a/b") && !scope_ok("a b") && !scope_ok(&"x".repeat(65)));
    }

    #[test]
    fn hello_round_trip_and_refusals() {
        let h = Hello {
            pid: 42,
            flags: hello_flag::PTRACER_SET,
            probe_addr: 0x7fff_0000_1000,
            probe_value: 0x0123_4567_89ab_cdef,
        };
        let b = h.to_bytes();
        assert_eq!(b.len(), Hello::LEN);
        assert_eq!(Hello::parse(&b), Some(h));
        assert_eq!(Hello::parse(&b[..Hello::LEN - 1]), None, "short");
        let mut bad = b.clone();
        bad[0] ^= 1;
        assert_eq!(Hello::parse(&bad), None, "magic");
        let mut long = b.clone();
        long.push(0);
        assert_eq!(Hello::parse(&long), None, "length field != datagram");
        let mut v2 = b;
        v2[4] = 2;
        let p = Hello::parse(&v2).expect("another version still parses");
        assert_eq!(p.pid, 42);
        assert_eq!(Header::parse(&v2).map(|h| h.version), Some(2));
    }

    #[test]
    fn welcome_round_trip_and_text_cut() {
        let w = Welcome {
            kind: kind::REFUSED,
            status: libc::EPROTO as u32,
            flags: flag::NO_CMA,
            agent_pid: 9,
            client_id: 0,
            cma_errno: 1,
            text: "why".into(),
        };
        let (h, back) = Welcome::parse(&w.to_bytes()).unwrap();
        assert_eq!((h.kind, back), (kind::REFUSED, w.clone()));
        let long = Welcome {
            text: "y".repeat(2000),
            ..w
        };
        let b = long.to_bytes();
        assert_eq!(b.len(), MAX_MSG);
        assert_eq!(Welcome::parse(&b).unwrap().1.text.len(), MAX_TEXT);
        assert_eq!(Welcome::parse(&bare(kind::QUERY)), None);
    }

    #[test]
    fn counters_round_trip() {
        let c = Counters {
            clients: 1,
            welcomed: 2,
            refused: 3,
            exited: 4,
            no_cma: 5,
        };
        assert_eq!(Counters::parse(&c.to_bytes()), Some(c));
        assert_eq!(Header::parse(&bare(kind::QUERY)).map(|h| h.kind), Some(kind::QUERY));
    }
}
