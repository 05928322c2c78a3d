//! The source address the kernel's routing picks for a destination
//! ([`route_source`], in `qp1.rs`: what the kernel's rdma_cm does in `rdma_resolve_addr`
//! and for every message it starts), and a cache of it that follows the
//! kernel's changes exactly ([`RouteCache`]).
//!
//! Asking the kernel costs a UDP socket, a bind, a connect, a getsockname
//! and a close (10-20 us); the `ucma` interposer asks for every
//! `RESOLVE_IP` and every REQ to another host.  The cache keeps the
//! answers while nothing the answer depends on changed, and it knows that
//! from the kernel itself: a route netlink socket of the process's network
//! namespace subscribed to links, addresses, routes and rules (IPv4 and
//! IPv6).  The kernel queues the notification of a change before the call
//! that made the change returns, so a lookup that comes after the change
//! finds the notification waiting, empties the cache and asks again; a
//! look at the socket is one `recv` that finds nothing (0.3 us).  A
//! notification queue that overflowed (`ENOBUFS`) counts as a change; a
//! socket that cannot be made or read means no cache (every lookup asks).
//! A forked child makes its own socket (the inherited one is the
//! parent's: reading it would take the parent's notifications).  Not
//! followed: a thread that moves to another network namespace (`setns`)
//! after its first lookup keeps the first namespace's answers until a
//! change there.

use std::collections::HashMap;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::qp1::route_source;

/// The most answers kept (all are dropped when a new one would pass it).
pub const MAX_ENTRIES: usize = 4096;

/// The route netlink groups whose changes can change a source address:
/// links (up, down, moved), IPv4 and IPv6 addresses, routes and rules.
fn groups() -> u32 {
    libc::RTMGRP_LINK as u32
        | libc::RTMGRP_IPV4_IFADDR as u32
        | libc::RTMGRP_IPV4_ROUTE as u32
        | libc::RTMGRP_IPV4_RULE as u32
        | libc::RTMGRP_IPV6_IFADDR as u32
        | libc::RTMGRP_IPV6_ROUTE as u32
        | 1u32 << (libc::RTNLGRP_IPV6_RULE - 1)
}

/// A route netlink socket of this thread's network namespace, subscribed
/// to [`groups`]; None when one cannot be made.
fn open_watch() -> Option<OwnedFd> {
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor just made, owned from here on.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a zeroed sockaddr_nl is valid; its family and groups set.
    let mut a: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    a.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    a.nl_groups = groups();
    // SAFETY: our socket, a sockaddr_nl of its size.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&a as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    (r == 0).then_some(fd)
}

/// What a look at the watch found.
#[derive(Debug, PartialEq, Eq)]
enum Look {
    Nothing,
    Changed,
    /// The watch cannot be read: no cache from now on.
    Broken,
}

/// Takes every notification waiting on `fd` (their contents do not
/// matter: any is a change).
fn look(fd: &OwnedFd) -> Look {
    let mut seen = Look::Nothing;
    let mut b = [0u8; 64];
    loop {
        // SAFETY: our socket, a buffer of b.len() bytes; MSG_TRUNC drops
        // the rest of a longer message.
        let r = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                b.as_mut_ptr().cast(),
                b.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if r > 0 {
            seen = Look::Changed;
            continue;
        }
        if r == 0 {
            // (an empty datagram: not the kernel's; a change all the same)
            return Look::Changed;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) => return seen,
            Some(libc::EINTR) => continue,
            // the queue overflowed: changes were lost, which is a change
            Some(libc::ENOBUFS) => seen = Look::Changed,
            _ => return Look::Broken,
        }
    }
}

/// [`route_source`]'s answers, kept while the kernel reports no change
/// (the module's documentation).
pub struct RouteCache {
    /// The watch and the process it was made in.
    watch: Option<(OwnedFd, u32)>,
    map: HashMap<(IpAddr, u32), IpAddr>,
    lookup: fn(IpAddr, u32) -> Option<IpAddr>,
    /// No watch can be made here: every lookup asks the kernel.
    disabled: bool,
}

impl Default for RouteCache {
    fn default() -> Self {
        RouteCache::new()
    }
}

impl RouteCache {
    /// A cache of [`route_source`]; its watch is made at the first lookup.
    pub fn new() -> RouteCache {
        RouteCache {
            watch: None,
            map: HashMap::new(),
            lookup: route_source,
            disabled: false,
        }
    }

    /// A cache of `lookup` whose changes are datagrams on `watch` (tests).
    pub fn with(watch: OwnedFd, lookup: fn(IpAddr, u32) -> Option<IpAddr>) -> RouteCache {
        RouteCache {
            watch: Some((watch, std::process::id())),
            map: HashMap::new(),
            lookup,
            disabled: false,
        }
    }

    /// The source address for `dst` (`scope`: as [`route_source`]'s).
    pub fn source(&mut self, dst: IpAddr, scope: u32) -> Option<IpAddr> {
        if !self.current() {
            return (self.lookup)(dst, scope);
        }
        if let Some(&a) = self.map.get(&(dst, scope)) {
            return Some(a);
        }
        // (no route is not kept: an error, rare, and asked again)
        let a = (self.lookup)(dst, scope)?;
        if self.map.len() >= MAX_ENTRIES {
            self.map.clear();
        }
        self.map.insert((dst, scope), a);
        Some(a)
    }

    /// How many answers are kept.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// May the kept answers be used?  Empties them when the kernel
    /// reported a change (or when the watch is new: nothing from before it
    /// is trusted).
    fn current(&mut self) -> bool {
        if self.disabled {
            return false;
        }
        let pid = std::process::id();
        if self.watch.as_ref().is_some_and(|(_, p)| *p != pid) {
            // a forked child: the parent's watch is not ours to read
            self.watch = None;
        }
        if self.watch.is_none() {
            self.map.clear();
            match open_watch() {
                Some(fd) => self.watch = Some((fd, pid)),
                None => {
                    self.disabled = true;
                    return false;
                }
            }
        }
        let Some((fd, _)) = self.watch.as_ref() else {
            return false;
        };
        match look(fd) {
            Look::Nothing => true,
            Look::Changed => {
                self.map.clear();
                true
            }
            Look::Broken => {
                self.map.clear();
                self.watch = None;
                self.disabled = true;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::os::unix::net::UnixDatagram;

    #[test]
    fn loopback_is_its_own_source_through_the_cache_too() {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert_eq!(route_source(lo, 0), Some(lo));
        let mut c = RouteCache::new();
        assert_eq!(c.source(lo, 0), Some(lo));
        assert_eq!(c.source(lo, 0), Some(lo));
        // a watch could be made (any user may subscribe): kept
        assert_eq!(c.len(), 1);
    }

    // Per thread: the tests that count run side by side, each on its own
    // thread, where its lookups run.
    thread_local! {
        static ASKED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }
    fn asked() -> usize {
        ASKED.with(|a| a.get())
    }
    fn counted(dst: IpAddr, _scope: u32) -> Option<IpAddr> {
        ASKED.with(|a| a.set(a.get() + 1));
        match dst {
            IpAddr::V4(v) if v.octets()[3] == 9 => None,
            _ => Some(IpAddr::V4(Ipv4Addr::new(169, 254, 1, 1))),
        }
    }

    #[test]
    fn asks_once_until_a_change_is_reported_then_asks_again() {
        let (w, kernel) = UnixDatagram::pair().unwrap();
        w.set_nonblocking(true).unwrap();
        let mut c = RouteCache::with(OwnedFd::from(w), counted);
        let d = IpAddr::V4(Ipv4Addr::new(169, 254, 1, 2));
        let before = asked();
        let want = Some(IpAddr::V4(Ipv4Addr::new(169, 254, 1, 1)));
        assert_eq!(c.source(d, 0), want);
        assert_eq!(c.source(d, 0), want);
        assert_eq!(c.source(d, 0), want);
        assert_eq!(asked() - before, 1);
        // the same address on another interface is another question
        assert_eq!(c.source(d, 3), want);
        assert_eq!(asked() - before, 2);
        // two notifications: one emptying
        kernel.send(b"RTM_NEWADDR").unwrap();
        kernel.send(b"RTM_NEWROUTE").unwrap();
        assert_eq!(c.source(d, 0), want);
        assert_eq!(asked() - before, 3);
        assert_eq!(c.len(), 1);
        assert_eq!(c.source(d, 0), want);
        assert_eq!(asked() - before, 3);
        // no route is asked every time
        let none = IpAddr::V4(Ipv4Addr::new(169, 254, 1, 9));
        assert_eq!(c.source(none, 0), None);
        assert_eq!(c.source(none, 0), None);
        assert_eq!(asked() - before, 5);
    }

    #[test]
    fn a_watch_that_cannot_be_read_means_no_cache() {
        // a descriptor that is no socket: recv fails with ENOTSOCK
        let file = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let mut c = RouteCache::with(file, counted);
        let d = IpAddr::V4(Ipv4Addr::new(169, 254, 1, 3));
        let before = asked();
        c.source(d, 0);
        c.source(d, 0);
        assert_eq!(asked() - before, 2);
        assert!(c.is_empty());
    }

    /// Runs `ip ARGS` (in this thread's network namespace); false when it
    /// fails or is not there.
    fn ip(args: &str) -> bool {
        std::process::Command::new("ip")
            .args(args.split(' '))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The real kernel: in a network namespace of its own (a thread of
    /// this test, root only), a route's source address changed by `ip`
    /// between two lookups is seen by the second.
    #[test]
    fn follows_the_kernel_when_a_route_changes_its_source() {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: needs root (a network namespace)");
            return;
        }
        let t = std::thread::spawn(|| {
            // SAFETY: unshare of this thread's network namespace only; the
            // thread ends with the test (its namespace with it).
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return None;
            }
            let setup = [
                "link set lo up",
                "link add rc0 type veth peer name rc1",
                "link set rc0 up",
                "link set rc1 up",
                "addr add 169.254.77.1/24 dev rc0",
            ];
            if !setup.iter().all(|a| ip(a)) {
                return None;
            }
            let dst: IpAddr = "169.254.77.9".parse().unwrap();
            let mut c = RouteCache::new();
            let first = c.source(dst, 0);
            let again = c.source(dst, 0);
            let changed =
                ip("addr add 169.254.77.2/32 dev rc0") && ip("route replace 169.254.77.9/32 dev rc0 src 169.254.77.2");
            let after = c.source(dst, 0);
            let down = ip("route del 169.254.77.9/32") && ip("addr del 169.254.77.1/24 dev rc0");
            let gone = c.source(dst, 0);
            Some((first, again, changed, after, down, gone))
        });
        let Some((first, again, changed, after, down, gone)) = t.join().unwrap() else {
            eprintln!("skipped: no network namespace or veth here");
            return;
        };
        assert_eq!(first, Some("169.254.77.1".parse().unwrap()));
        assert_eq!(again, first);
        assert!(changed && down);
        assert_eq!(after, Some("169.254.77.2".parse().unwrap()));
        assert_eq!(gone, None, "no route left to 169.254.77.9");
    }
}
