//! A wire context's connection to the user's transport agent (the
//! default; `SWRDMA_WIRE_AGENT=0` keeps the QPs in the process, `=1`
//! insists on the agent; the verbs over it are `agentops.rs`): the
//! control requests, one at a time, and the doorbells of the send queues.
//!
//! The agent is the context's device: when it goes (killed, or its
//! connection closed), the context gets `IBV_EVENT_DEVICE_FATAL` in its
//! async events, as a kernel device's context does when its device goes,
//! and every later request fails with `EIO`.  A small thread of the
//! connection waits for that (a hang-up of the connection, not its data).

use std::net::{IpAddr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::raw::c_int;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use swrdma_wired::client::{self, Options, Session, Target};
use swrdma_wired::ctl::msg::{Reply, Request};

/// How long a control request may take (the agent answers at once unless
/// it is stopped or gone).
const WAIT: Duration = Duration::from_secs(5);

/// Why a context has no agent: the text for stderr, and whether it is an
/// expected case (the agent cannot reach this process's memory) that the
/// default mode passes over in silence.
pub struct NoAgent {
    pub text: String,
    pub expected: bool,
}

impl From<String> for NoAgent {
    fn from(text: String) -> NoAgent {
        NoAgent { text, expected: false }
    }
}

impl From<&str> for NoAgent {
    fn from(text: &str) -> NoAgent {
        NoAgent::from(text.to_string())
    }
}

/// A context's connection to its agent.
pub struct Conn {
    s: Mutex<Session>,
    /// The connection again, for doorbells without the control lock (a
    /// datagram each: they never interleave with a request's bytes).
    bell: OwnedFd,
    /// The process's access page, kept while the agent may take its lock
    /// words.
    _access: Arc<crate::locks::Access>,
    /// The thread that waits for the agent's end, and the eventfd that
    /// ends it with the connection.
    watch: Option<(OwnedFd, std::thread::JoinHandle<()>)>,
    /// Direct transmit (`swrdma_wired::wq`, "Direct transmit"): a UDP
    /// socket per source address (bound to it and an ephemeral port), made
    /// on first use.
    direct: Mutex<Vec<Direct>>,
}

/// A socket that sends a context's requests itself.
struct Direct {
    src: IpAddr,
    ifindex: u32,
    sock: UdpSocket,
    port: u16,
}

/// An address with its scope (an IPv6 link-local one's interface).
fn scoped(ip: IpAddr, port: u16, ifindex: u32) -> SocketAddr {
    match ip {
        IpAddr::V4(a) => SocketAddr::V4(SocketAddrV4::new(a, port)),
        IpAddr::V6(a) => {
            let scope = if a.is_unicast_link_local() { ifindex } else { 0 };
            SocketAddr::V6(SocketAddrV6::new(a, port, 0, scope))
        }
    }
}

/// Waits until the agent closes connection `sock` (a hang-up) or `stop` is
/// written; at the agent's end, writes the kernel's async event
/// `IBV_EVENT_DEVICE_FATAL` (element 0) into `async_w`.
fn watch(sock: OwnedFd, stop: OwnedFd, async_w: OwnedFd) {
    use rustix::event::{poll, PollFd, PollFlags};
    loop {
        let mut fds = [PollFd::new(&sock, PollFlags::RDHUP), PollFd::new(&stop, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        if !fds[1].revents().is_empty() {
            return;
        }
        let gone = PollFlags::RDHUP | PollFlags::HUP | PollFlags::ERR;
        if fds[0].revents().intersects(gone) {
            let rec = swrdma_wired::transport::event_record(0, ibverbs_abi::IBV_EVENT_DEVICE_FATAL);
            eprintln!("libibverbs: swrdma: the wire agent is gone: the device is lost (IBV_EVENT_DEVICE_FATAL)");
            let _ = rustix::io::write(&async_w, &rec);
            return;
        }
    }
}

impl Conn {
    /// Connects to (or starts) the agent of interface `ifindex` for the
    /// user's directory `dir`; the agent writes async events into
    /// `async_w`.
    pub fn open(ifindex: u32, dir: &std::path::Path, async_w: BorrowedFd<'_>) -> Result<Conn, NoAgent> {
        let access = crate::locks::Access::own().ok_or("no access page (memfd_create failed)")?;
        let t = Target::new(ifindex);
        let o = Options {
            dir: Some(dir.to_path_buf()),
            ..Options::default()
        };
        let s = client::connect_or_start(&t, &o, access.fd(), async_w).map_err(|e| e.to_string())?;
        if s.no_cma {
            // (The agent cannot reach our memory: our QPs' data would have
            // to be placed by a thread of ours, which is not built yet.)
            return Err(NoAgent {
                text: format!(
                    "the agent cannot reach this process's memory (cross-memory attach: {}); \
                     SWRDMA_WIRE_AGENT=0 (or unset) carries the QPs in the process",
                    std::io::Error::from_raw_os_error(s.cma_errno)
                ),
                expected: true,
            });
        }
        if !s.transport {
            // (An agent started by another client without the directory,
            // the `ucma` interposer's for QP1, serves no traffic.)
            return Err(format!(
                "the agent (pid {}) of this interface carries no traffic (started without --dir); \
                 it exits when idle",
                s.agent_pid
            )
            .into());
        }
        let dup = |fd: BorrowedFd<'_>| rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| format!("dup: {e}"));
        let bell = dup(s.fd())?;
        let (sock, w) = (dup(s.fd())?, dup(async_w)?);
        let flags = rustix::event::EventfdFlags::CLOEXEC;
        let stop = rustix::event::eventfd(0, flags).map_err(|e| format!("eventfd: {e}"))?;
        let stop2 = dup(stop.as_fd())?;
        let h = std::thread::Builder::new()
            .name("swrdma-agent".into())
            .spawn(move || watch(sock, stop2, w))
            .map_err(|e| format!("thread: {e}"))?;
        Ok(Conn {
            s: Mutex::new(s),
            bell,
            _access: access,
            watch: Some((stop, h)),
            direct: Mutex::new(Vec::new()),
        })
    }

    /// Sends `pkt` (a RoCE v2 packet's UDP payload whose ICRC covers source
    /// port `port`) from `src` to `dst`'s RoCE port, through the socket
    /// that [`Conn::direct_port`] gave `port` for: whether the kernel took
    /// it (a datagram it refuses is lost as on the wire: the agent
    /// retransmits it).
    pub fn direct_send(&self, src: IpAddr, dst: IpAddr, ifindex: u32, pkt: &[u8]) -> bool {
        let d = crate::sys::lock(&self.direct);
        let Some(x) = d.iter().find(|x| x.src == src && x.ifindex == ifindex) else {
            return false;
        };
        x.sock
            .send_to(pkt, scoped(dst, swrdma_roce::ROCE_PORT, ifindex))
            .is_ok()
    }

    /// The source port of this context's direct-transmit socket on `src`
    /// (made now when there is none; None when it cannot be).
    pub fn direct_port(&self, src: IpAddr, ifindex: u32) -> Option<u16> {
        let mut d = crate::sys::lock(&self.direct);
        if let Some(x) = d.iter().find(|x| x.src == src && x.ifindex == ifindex) {
            return Some(x.port);
        }
        let sock = UdpSocket::bind(scoped(src, 0, ifindex)).ok()?;
        sock.set_nonblocking(true).ok()?;
        // As the agent's sockets: never fragmented, and over IPv4 so with
        // IP identification 0 (the socket is unconnected), which the ICRC
        // covers.
        match src {
            IpAddr::V4(_) => {
                use rustix::net::sockopt::{set_ip_mtu_discover, Ipv4PathMtuDiscovery};
                set_ip_mtu_discover(&sock, Ipv4PathMtuDiscovery::DO).ok()?;
            }
            IpAddr::V6(_) => {
                let one: std::os::raw::c_int = 1;
                // SAFETY: an int option of our socket, its size given.
                let r = unsafe {
                    libc::setsockopt(
                        std::os::fd::AsRawFd::as_raw_fd(&sock),
                        libc::IPPROTO_IPV6,
                        libc::IPV6_DONTFRAG,
                        (&one as *const std::os::raw::c_int).cast(),
                        std::mem::size_of::<std::os::raw::c_int>() as libc::socklen_t,
                    )
                };
                if r != 0 {
                    return None;
                }
            }
        }
        let port = sock.local_addr().ok()?.port();
        d.push(Direct {
            src,
            ifindex,
            sock,
            port,
        });
        Some(port)
    }

    /// Ends the watching thread (the context closes).
    fn stop_watch(&mut self) {
        if let Some((stop, h)) = self.watch.take() {
            let _ = rustix::io::write(&stop, &1u64.to_ne_bytes());
            let _ = h.join();
        }
    }

    /// One control request: the reply, or the errno (`Reply::Err`'s; `EIO`
    /// when the agent is gone or silent).
    pub fn call(&self, req: &Request, fds: &[BorrowedFd<'_>]) -> Result<Reply, c_int> {
        let mut s = crate::sys::lock(&self.s);
        match s.call(req, fds, WAIT) {
            Ok(Reply::Err(e)) => Err(e),
            Ok(r) => Ok(r),
            Err(e) => {
                eprintln!("libibverbs: swrdma: the wire agent: {e}");
                Err(libc::EIO)
            }
        }
    }

    /// A request whose reply is `Done`.
    pub fn done(&self, req: &Request) -> c_int {
        match self.call(req, &[]) {
            Ok(Reply::Done) => 0,
            Ok(_) => libc::EIO,
            Err(e) => e,
        }
    }

    /// Wakes the agent: a send queue of ours got entries while it slept.
    pub fn doorbell(&self) {
        let b = swrdma_wired::proto::bare(swrdma_wired::proto::kind::DOORBELL);
        let f = rustix::net::SendFlags::NOSIGNAL | rustix::net::SendFlags::DONTWAIT;
        // (A full socket holds doorbells enough; a gone agent is seen by
        // the next request.)
        let _ = rustix::net::send(&self.bell, &b, f);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.stop_watch();
    }
}
