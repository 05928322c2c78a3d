//! The machine around the connection manager (`swrdma_cm::cma::Host`):
//! which soft device answers for an address (asked of the libibverbs the
//! process has loaded), the port spaces, and the carrier of CM messages.
//!
//! Carrier on `swr0` (processes of one user on one machine): Unix datagram
//! sockets in the abstract namespace, one per process (its connections'
//! messages) and one per bound port (`swrdma-cm/<uid>/<ps>/<port>`: holds
//! the port as the kernel's port space would, and receives the REQs and
//! SIDR_REQs of the listener on it).  Every datagram carries one 256-byte
//! CM MAD; a datagram from another user is dropped (its credentials are
//! checked), so the names being visible to other users gives them nothing.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use swrdma_cm::cma::{Dest, Dev, Host, EADDRINUSE, EADDRNOTAVAIL, ENETUNREACH, ENODEV};
use swrdma_cm::mad::MAD_LEN;
use swrdma_wired::route::RouteCache;

type ListFn = unsafe extern "C" fn(*mut c_int) -> *mut *mut c_void;
type FreeListFn = unsafe extern "C" fn(*mut *mut c_void);
type NameFn = unsafe extern "C" fn(*mut c_void) -> *const c_char;
type GuidFn = unsafe extern "C" fn(*mut c_void) -> u64;
type IndexFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type OpenFn = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type CloseFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type QueryDeviceFn = unsafe extern "C" fn(*mut c_void, *mut ibverbs_abi::ibv_device_attr) -> c_int;
type QueryPortFn = unsafe extern "C" fn(*mut c_void, u8, *mut ibverbs_abi::ibv_port_attr) -> c_int;
type QueryGidFn = unsafe extern "C" fn(*mut c_void, u8, c_int, *mut [u8; 16]) -> c_int;

/// libibverbs entry points, found in the process (librdmacm loaded it).
struct Verbs {
    get_device_list: ListFn,
    free_device_list: FreeListFn,
    get_device_name: NameFn,
    get_device_guid: GuidFn,
    get_device_index: IndexFn,
    open_device: OpenFn,
    close_device: CloseFn,
    query_device: QueryDeviceFn,
    query_port: QueryPortFn,
    query_gid: QueryGidFn,
}

/// A libibverbs function of the process: from the copy librdmacm loaded
/// (found by name even when it was loaded RTLD_LOCAL, as UCX's modules
/// load it), else from the global scope.
fn sym(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: RTLD_NOLOAD only looks the library up: it is not loaded here.
    let h = unsafe { libc::dlopen(c"libibverbs.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    let scope = if h.is_null() { libc::RTLD_DEFAULT } else { h };
    // SAFETY: dlsym with a NUL-terminated name in a valid handle.
    let p = unsafe { libc::dlsym(scope, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

impl Verbs {
    fn load() -> Option<Verbs> {
        macro_rules! f {
            ($n:literal, $t:ty) => {
                // SAFETY: the symbol is libibverbs' function of that name,
                // whose C prototype is $t.
                unsafe { std::mem::transmute::<*mut c_void, $t>(sym($n)?) }
            };
        }
        Some(Verbs {
            get_device_list: f!(c"ibv_get_device_list", ListFn),
            free_device_list: f!(c"ibv_free_device_list", FreeListFn),
            get_device_name: f!(c"ibv_get_device_name", NameFn),
            get_device_guid: f!(c"ibv_get_device_guid", GuidFn),
            get_device_index: f!(c"ibv_get_device_index", IndexFn),
            open_device: f!(c"ibv_open_device", OpenFn),
            close_device: f!(c"ibv_close_device", CloseFn),
            query_device: f!(c"ibv_query_device", QueryDeviceFn),
            query_port: f!(c"ibv_query_port", QueryPortFn),
            query_gid: f!(c"ibv_query_gid", QueryGidFn),
        })
    }
}

/// One soft device, as the CM sees it.
#[derive(Clone, Debug)]
struct SoftDev {
    dev: Dev,
    /// (address, GID index) of every IP GID.
    addrs: Vec<(IpAddr, u8, [u8; 16])>,
}

/// The names `RDMAV_SOFT_DEVICES` makes soft devices (`swr0`, `rw0@if`).
pub fn soft_names() -> Vec<String> {
    std::env::var("RDMAV_SOFT_DEVICES")
        .unwrap_or_default()
        .split(',')
        .map(|e| e.split('@').next().unwrap_or("").trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Whether `RDMAV_SOFT_DEVICES` names a wire device (`rw0@eth0`).
pub fn wire_configured() -> bool {
    std::env::var("RDMAV_SOFT_DEVICES").is_ok_and(|v| v.split(',').any(|e| e.contains('@')))
}

fn gid_ip(g: &[u8; 16]) -> Option<IpAddr> {
    if *g == [0; 16] {
        return None;
    }
    let v6 = std::net::Ipv6Addr::from(*g);
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(IpAddr::V4(v4));
    }
    // fe80::<EUI-64> default GIDs are addresses too (link-local IPv6).
    Some(IpAddr::V6(v6))
}

fn scan(v: &Verbs) -> Vec<SoftDev> {
    let names = soft_names();
    let mut out = Vec::new();
    let mut n: c_int = 0;
    // SAFETY: libibverbs' list call; freed below.
    let list = unsafe { (v.get_device_list)(&mut n) };
    if list.is_null() {
        return out;
    }
    for i in 0..n.max(0) as usize {
        // SAFETY: the list holds n device pointers.
        let d = unsafe { *list.add(i) };
        // SAFETY: a device of the list; the name is a C string it owns.
        let name = unsafe { CStr::from_ptr((v.get_device_name)(d)) }
            .to_string_lossy()
            .into_owned();
        if !names.contains(&name) {
            continue;
        }
        // SAFETY: as above.
        let (guid, index) = unsafe { ((v.get_device_guid)(d), (v.get_device_index)(d)) };
        // SAFETY: as above; closed below.
        let ctx = unsafe { (v.open_device)(d) };
        if ctx.is_null() {
            continue;
        }
        // SAFETY: plain C structs, zeroed.
        let mut da: ibverbs_abi::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut pa: [ibverbs_abi::ibv_port_attr; 2] = unsafe { std::mem::zeroed() };
        // SAFETY: open context, out-structs of the right types (the port
        // attribute has room for any generation's).
        let ok = unsafe { (v.query_device)(ctx, &mut da) == 0 && (v.query_port)(ctx, 1, pa.as_mut_ptr()) == 0 };
        if ok {
            let mut addrs = Vec::new();
            let len = pa[0].gid_tbl_len.clamp(0, 64);
            for gi in 0..len {
                let mut g = [0u8; 16];
                // SAFETY: open context; 16-byte out buffer.
                if unsafe { (v.query_gid)(ctx, 1, gi, &mut g) } == 0 {
                    if let Some(ip) = gid_ip(&g) {
                        addrs.push((ip, gi as u8, g));
                    }
                }
            }
            let dev = Dev {
                name: name.clone(),
                guid: u64::from_be(guid),
                ibdev_index: index as u32,
                port_num: 1,
                gid_index: 0,
                gid: [0; 16],
                mtu: pa[0].active_mtu as u8,
                pkey: 0xffff,
                ack_delay: da.local_ca_ack_delay,
                max_rd_atomic: da.max_qp_rd_atom.clamp(0, 255) as u8,
            };
            out.push(SoftDev { dev, addrs });
        }
        // SAFETY: the context opened above.
        unsafe { (v.close_device)(ctx) };
    }
    // SAFETY: the list from get_device_list.
    unsafe { (v.free_device_list)(list) };
    out
}

fn abstract_addr(name: &[u8]) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: a plain C struct, zeroed.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let n = name.len().min(a.sun_path.len() - 1);
    for (i, b) in name[..n].iter().enumerate() {
        a.sun_path[i + 1] = *b as c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + 1 + n;
    (a, len as libc::socklen_t)
}

fn dgram_socket() -> Option<OwnedFd> {
    // SAFETY: socket(2) with constant arguments.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor we just made and own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let one: c_int = 1;
    // SAFETY: a valid int option of our socket.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PASSCRED,
            (&one as *const c_int).cast(),
            std::mem::size_of::<c_int>() as libc::socklen_t,
        )
    };
    Some(fd)
}

fn bind_abstract(fd: RawFd, name: &[u8]) -> Result<(), i32> {
    let (a, len) = abstract_addr(name);
    // SAFETY: a sockaddr_un of `len` bytes.
    if unsafe { libc::bind(fd, (&a as *const libc::sockaddr_un).cast(), len) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL))
    }
}

/// What became of a datagram.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sent {
    Yes,
    /// The receiver's queue is full: try again.
    Full,
    /// No socket of that name.
    Nobody,
}

pub struct SoftHost {
    verbs: Option<Verbs>,
    devs: Option<Vec<SoftDev>>,
    pub uid: u32,
    /// The process's socket (connections' messages).
    pub own: Option<OwnedFd>,
    pub own_name: Vec<u8>,
    /// Bound ports: (ps, port) -> socket holding it.
    pub ports: HashMap<(u16, u16), OwnedFd>,
    /// Ports given to ids without a socket (ephemeral ports of active ids).
    local_ports: HashMap<(u16, u16), u32>,
    rng: u64,
    /// Sockets opened or closed since the progress thread last looked.
    pub sockets_changed: bool,
    /// Released port sockets, with their port and the time they close:
    /// for [`LINGER_NS`] a released port's socket stays bound, unread, so
    /// that a REQ already on its way waits there as on a wire; a bind of
    /// the same port takes the socket back (and the waiting REQ reaches
    /// the new listener); else the progress thread answers what waits (no
    /// listener: REJ 8) and closes it, between its polls.
    pub graveyard: Vec<(OwnedFd, (u16, u16), u64)>,
    /// Ports a bind took back from the graveyard, with the time their
    /// linger ends: until the id listens (or that time), the socket stays
    /// unread, so that a REQ waiting there reaches the listener that the
    /// program makes next (perftest's server binds, queries twice and then
    /// listens: a REQ read in between got REJ 8 on a loaded machine).
    pub quiet: HashMap<(u16, u16), u64>,
    /// Messages a full receiver refused (a Unix datagram queue holds
    /// `net.unix.max_dgram_qlen` datagrams, 10 by default), by receiver,
    /// each with the time it is given up: sent again by the progress
    /// thread, in order, while the receiver is there (see
    /// [`PENDING_FOR_NS`]).  Only receivers with messages waiting have an
    /// entry.
    pub pending: HashMap<Vec<u8>, std::collections::VecDeque<(Vec<u8>, u64)>>,
    /// How many messages `pending` holds, all receivers together.
    pub pending_len: usize,
    /// For each receiver with messages in `pending`, a socket connected
    /// to it (sending nothing): the progress thread polls it for
    /// `POLLOUT`, which the kernel signals as soon as the receiver takes a
    /// datagram off its full queue, so what waits goes again at once
    /// rather than on a timer.
    pub waiters: HashMap<Vec<u8>, OwnedFd>,
    /// A receiver has messages waiting and no waiter (one could not be
    /// made): what waits is tried again on a timer.
    pub unwatched: bool,
    /// The wire agents greeted, by interface index (None: it could not be
    /// had): the session keeps the agent, which owns the interface's QP1,
    /// running while this process may speak rdma_cm on it.
    agents: HashMap<u32, Option<Agent>>,
    /// Contexts of the wire devices, opened for a listener and kept: so
    /// that a socket of this process is in the interface's `addr:4791`
    /// group (a listener on the wildcard address opens no device), where
    /// another host's REQ can arrive and be handed to the agent.
    wire_ctxs: Vec<WireCtx>,
    /// The kernel's source address for each destination asked, kept while
    /// the kernel reports no change of links, addresses, routes or rules
    /// (`swrdma_wired::route`): a `RESOLVE_IP` and a REQ to another host
    /// ask it.
    routes: RouteCache,
}

/// A device context held open (closed with the host, at exit: never).
struct WireCtx(#[allow(dead_code)] *mut c_void);
// SAFETY: a libibverbs context pointer, only passed back to libibverbs
// (which is thread-safe), never dereferenced here.
unsafe impl Send for WireCtx {}

/// A wire agent's session and the read end of the event pipe it was
/// given (nothing is written to it yet).
struct Agent {
    _session: swrdma_wired::client::Session,
    _events: OwnedFd,
}

/// How long a released port's socket lingers (see `SoftHost::graveyard`),
/// so that a program that destroys its listener and listens again on the
/// port (as perftest's server does between its two connections, reopening
/// its device in between: tens of milliseconds on a loaded machine) does
/// not have a REQ that its peer sent in between answered with REJ 8: the
/// REQ waits, as one in flight on a wire would, and the new listener takes
/// it.  Meanwhile another process cannot bind the port (`EADDRINUSE`).
pub const LINGER_NS: u64 = 250_000_000;

/// How long a message waits for a full receiver that is there before it
/// is dropped.  A receiver that is there takes its messages as soon as its
/// process runs; on a loaded machine that may be seconds for a burst (the
/// 200 REQs of `cmtime -c 200` reach the listener's port at once, and its
/// queue holds 10), and a message dropped then costs the CM's retry timer
/// (6.1 s for a REQ).  So a message waits far longer than any CM timer
/// (should the CM send it again meanwhile, the receiver's CM takes the
/// second copy as the duplicate it is); a receiver that is gone drops what
/// waits for it at once (`Sent::Nobody`).
pub const PENDING_FOR_NS: u64 = 60_000_000_000;

/// The most messages that wait for full receivers, all together (16 MiB
/// at most), and for one receiver (512 KiB: a peer that never reads holds
/// no more of our memory): beyond, a message is dropped, as a full link
/// drops it, and the CM's retries take over.
pub const PENDING_MAX: usize = 65536;
pub const PENDING_MAX_PER_RECEIVER: usize = 2048;

impl SoftHost {
    pub fn new() -> SoftHost {
        let mut seed = [0u8; 8];
        // SAFETY: getrandom into an 8-byte buffer.
        unsafe { libc::getrandom(seed.as_mut_ptr().cast(), 8, 0) };
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        SoftHost {
            verbs: None,
            devs: None,
            uid,
            own: None,
            own_name: Vec::new(),
            ports: HashMap::new(),
            local_ports: HashMap::new(),
            rng: u64::from_ne_bytes(seed) | 1,
            sockets_changed: true,
            graveyard: Vec::new(),
            quiet: HashMap::new(),
            pending: HashMap::new(),
            pending_len: 0,
            waiters: HashMap::new(),
            unwatched: false,
            agents: HashMap::new(),
            wire_ctxs: Vec::new(),
            routes: RouteCache::new(),
        }
    }

    /// A lingering socket of a released port, taken back.
    fn resurrect(&mut self, ps: u16, port: u16) -> Option<(OwnedFd, u64)> {
        let i = self.graveyard.iter().position(|g| g.1 == (ps, port))?;
        let (fd, _, until) = self.graveyard.remove(i);
        Some((fd, until))
    }

    /// Whether the socket of a bound port is read now (not while it is
    /// quiet, see `quiet`).
    pub fn port_heard(&self, key: (u16, u16), now: u64) -> bool {
        self.quiet.get(&key).is_none_or(|&until| until <= now)
    }

    fn port_name(&self, ps: u16, port: u16) -> Vec<u8> {
        swrdma_cm::names::port(self.uid, ps, port)
    }

    /// The process's own socket, made on first use.
    pub fn own_fd(&mut self) -> Option<RawFd> {
        if self.own.is_none() {
            let fd = dgram_socket()?;
            for _ in 0..16 {
                let r = self.random();
                let name = format!("swrdma-cm/{}/p{}-{:08x}", self.uid, std::process::id(), r).into_bytes();
                if bind_abstract(fd.as_raw_fd(), &name).is_ok() {
                    self.own_name = name;
                    self.own = Some(fd);
                    self.sockets_changed = true;
                    break;
                }
            }
        }
        self.own.as_ref().map(|f| f.as_raw_fd())
    }

    /// Looks the soft devices and their addresses up (once; see `devs`).
    pub fn learn_devices(&mut self) {
        let _ = self.devs();
    }

    fn devs(&mut self) -> &[SoftDev] {
        if self.verbs.is_none() {
            self.verbs = Verbs::load();
        }
        if self.devs.is_none() {
            // Not cached until libibverbs is there to ask.
            if let Some(v) = self.verbs.as_ref() {
                self.devs = Some(scan(v));
            }
        }
        self.devs.as_deref().unwrap_or(&[])
    }

    fn dev_for(&mut self, ip: IpAddr) -> Option<Dev> {
        self.devs().iter().find_map(|d| {
            d.addrs.iter().find(|(a, _, _)| *a == ip).map(|(_, gi, g)| {
                let mut dev = d.dev.clone();
                dev.gid_index = *gi;
                dev.gid = *g;
                dev
            })
        })
    }

    /// Sends one datagram.
    fn try_send(&mut self, name: &[u8], mad: &[u8]) -> Sent {
        let Some(fd) = self.own_fd() else { return Sent::Yes };
        let (a, len) = abstract_addr(name);
        // SAFETY: our socket, a buffer of `mad.len()` bytes, a sockaddr_un
        // of `len`.
        let r = unsafe {
            libc::sendto(
                fd,
                mad.as_ptr().cast(),
                mad.len(),
                libc::MSG_DONTWAIT,
                (&a as *const libc::sockaddr_un).cast(),
                len,
            )
        };
        if r >= 0 {
            return Sent::Yes;
        }
        match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN) => Sent::Full,
            // no socket of that name: no listener, or the process is gone
            Some(libc::ECONNREFUSED) | Some(libc::ENOENT) => Sent::Nobody,
            _ => Sent::Yes,
        }
    }

    /// Sends what waited for a full receiver, in order; drops what waited
    /// too long, and what waited for a receiver that is gone.
    pub fn flush_pending(&mut self, now: u64) {
        let mut queues = std::mem::take(&mut self.pending);
        for (name, q) in queues.iter_mut() {
            while let Some((mad, until)) = q.front() {
                let sent = if *until <= now {
                    Sent::Nobody
                } else {
                    self.try_send(name, mad)
                };
                if sent == Sent::Full {
                    break;
                }
                q.pop_front();
                self.pending_len -= 1;
            }
        }
        queues.retain(|_, q| !q.is_empty());
        self.pending = queues;
        let names: Vec<Vec<u8>> = self.pending.keys().cloned().collect();
        for name in &names {
            self.wait_for(name);
        }
        let pending = &self.pending;
        let before = self.waiters.len();
        self.waiters.retain(|n, _| pending.contains_key(n));
        self.sockets_changed |= self.waiters.len() != before;
        self.unwatched = self.pending.keys().any(|n| !self.waiters.contains_key(n));
    }

    /// Queues `mad` for `name` behind what waits for it, unless too many
    /// wait, for it or in all (then it is dropped, as a full link drops
    /// it).
    fn queue(&mut self, name: Vec<u8>, mad: &[u8]) {
        if self.pending_len >= PENDING_MAX {
            return;
        }
        let until = crate::ucma::now() + PENDING_FOR_NS;
        let q = self.pending.entry(name).or_default();
        if q.len() >= PENDING_MAX_PER_RECEIVER {
            return;
        }
        q.push_back((mad.to_vec(), until));
        self.pending_len += 1;
    }

    /// A message to `name` waits for its full queue: watch the queue.
    fn wait_for(&mut self, name: &[u8]) {
        if self.waiters.contains_key(name) {
            return;
        }
        let Some(fd) = dgram_socket() else {
            self.unwatched = true;
            return;
        };
        let (a, len) = abstract_addr(name);
        // SAFETY: connect(2) of our own unbound datagram socket to a
        // sockaddr_un of `len` bytes: it sends nothing; the socket only
        // lets poll(2) say when the receiver's queue has room.
        if unsafe { libc::connect(fd.as_raw_fd(), (&a as *const libc::sockaddr_un).cast(), len) } == 0 {
            self.waiters.insert(name.to_vec(), fd);
            self.sockets_changed = true;
        } else {
            self.unwatched = true;
        }
    }

    /// Are there messages waiting for a receiver that no waiter watches
    /// (to be tried again on a timer)?
    pub fn pending_unwatched(&self) -> bool {
        self.unwatched
    }

    /// Why an address has no device: the devices and addresses considered.
    pub fn explain(&mut self, ip: IpAddr) -> String {
        let names = soft_names();
        let devs: Vec<String> = self
            .devs()
            .iter()
            .map(|d| {
                let a: Vec<String> = d.addrs.iter().map(|(ip, _, _)| ip.to_string()).collect();
                format!("{} [{}]", d.dev.name, a.join(" "))
            })
            .collect();
        let lib = if self.verbs.is_none() {
            "; libibverbs.so.1 is not loaded in this process"
        } else {
            ""
        };
        format!(
            "no soft RDMA device answers for {ip} (RDMAV_SOFT_DEVICES={}; devices and their addresses: {}{lib})",
            if names.is_empty() {
                "unset".to_string()
            } else {
                names.join(",")
            },
            if devs.is_empty() {
                "none".to_string()
            } else {
                devs.join(", ")
            }
        )
    }
}

impl SoftHost {
    /// Sends `msg` to the socket `name`, or queues it behind what waits for
    /// that receiver; false when nobody holds the name.
    fn deliver(&mut self, name: Vec<u8>, msg: &[u8]) -> bool {
        if self.pending.contains_key(&name) {
            // Behind what waits for the same receiver (its waiter, or the
            // timer, sends it).
            self.queue(name, msg);
            return true;
        }
        match self.try_send(&name, msg) {
            Sent::Yes => true,
            Sent::Full => {
                self.wait_for(&name);
                self.queue(name, msg);
                true
            }
            Sent::Nobody => false,
        }
    }

    /// Makes port `port` of `ps` reachable by requests (the `Host` trait's
    /// `listen_port`, before the wire agents).
    fn listen_port_here(&mut self, ps: u16, port: u16) -> Result<(), i32> {
        if self.ports.contains_key(&(ps, port)) {
            if self.quiet.remove(&(ps, port)).is_some() {
                self.sockets_changed = true;
            }
            return Ok(());
        }
        // An ephemeral port (bind to port 0) becomes a machine-wide one.
        let fd = match self.resurrect(ps, port) {
            Some((fd, _)) => fd,
            None => {
                let fd = dgram_socket().ok_or(libc::ENOMEM)?;
                bind_abstract(fd.as_raw_fd(), &self.port_name(ps, port))?;
                fd
            }
        };
        self.local_ports.remove(&(ps, port));
        self.ports.insert((ps, port), fd);
        self.sockets_changed = true;
        Ok(())
    }

    /// The interface index of wire device `dev` when `ip` is another
    /// host's address (not one of our soft devices'): its CM messages go
    /// through the interface's agent, which owns QP1.
    fn remote_wire(&mut self, dev: &str, ip: IpAddr) -> Option<u32> {
        let ifindex = wire_ifindex(dev)?;
        self.dev_for(ip).is_none().then_some(ifindex)
    }

    /// Greets (starting it if need be) the agent of wire interface
    /// `ifindex`, once; false when it cannot be had (said on stderr with
    /// `SWRDMA_CM_TRACE`).
    pub fn ensure_agent(&mut self, ifindex: u32) -> bool {
        if let Some(a) = self.agents.get(&ifindex) {
            return a.is_some();
        }
        // (Only when the processes' wire contexts go through the agent,
        // unless `SWRDMA_WIRE_AGENT=0`: otherwise it keeps to QP1.)
        use swrdma_wired::client::{wire_mode, WireMode};
        let agent_wire = wire_mode() != WireMode::Process;
        let dir = if agent_wire { self.soft_dir() } else { None };
        let a = greet_agent(ifindex, dir);
        if let Err(e) = &a {
            if crate::ucma::trace() {
                crate::ucma::say(format_args!("swrdma-ucma: the wire agent of interface {ifindex}: {e}"));
            }
        }
        let ok = a.is_ok();
        self.agents.insert(ifindex, a.ok());
        ok
    }

    /// The agents of every wire device (a listener may take requests on
    /// any of them).
    pub fn ensure_agents(&mut self) {
        let mut any = false;
        for n in soft_names() {
            if let Some(i) = wire_ifindex(&n) {
                any |= self.ensure_agent(i);
            }
        }
        if any && self.wire_ctxs.is_empty() {
            self.hold_wire_contexts();
        }
    }

    /// The user's directory of soft devices (the parent of a soft device's
    /// `ibdev_path`, the directory the provider's contexts use): an agent
    /// started here joins it as a wire context, so that it also carries
    /// the processes' traffic (unless `SWRDMA_WIRE_AGENT=0`).
    fn soft_dir(&mut self) -> Option<std::path::PathBuf> {
        if self.verbs.is_none() {
            self.verbs = Verbs::load();
        }
        let v = self.verbs.as_ref()?;
        let names = soft_names();
        let mut n: c_int = 0;
        // SAFETY: libibverbs' list call; freed below.
        let list = unsafe { (v.get_device_list)(&mut n) };
        if list.is_null() {
            return None;
        }
        let mut dir = None;
        for i in 0..n.max(0) as usize {
            // SAFETY: the list holds n device pointers, each a libibverbs
            // `ibv_device` whose name and `ibdev_path` are C strings it owns.
            let (name, path) = unsafe {
                let d = *list.add(i) as *const ibverbs_abi::verbs::ibv_device;
                (
                    CStr::from_ptr((v.get_device_name)(d as *mut c_void))
                        .to_string_lossy()
                        .into_owned(),
                    CStr::from_ptr((*d).ibdev_path.as_ptr()).to_string_lossy().into_owned(),
                )
            };
            if names.contains(&name) {
                dir = std::path::Path::new(&path).parent().map(|p| p.to_path_buf());
                break;
            }
        }
        // SAFETY: the list from get_device_list.
        unsafe { (v.free_device_list)(list) };
        dir.filter(|d| d.is_absolute())
    }

    /// Opens (once) a context of every wire device (see `wire_ctxs`).
    fn hold_wire_contexts(&mut self) {
        if self.verbs.is_none() {
            self.verbs = Verbs::load();
        }
        let Some(v) = self.verbs.as_ref() else { return };
        let mut n: c_int = 0;
        // SAFETY: libibverbs' list call; freed below.
        let list = unsafe { (v.get_device_list)(&mut n) };
        if list.is_null() {
            return;
        }
        for i in 0..n.max(0) as usize {
            // SAFETY: the list holds n device pointers; the name is a C
            // string the device owns.
            let (d, name) = unsafe {
                let d = *list.add(i);
                (d, CStr::from_ptr((v.get_device_name)(d)).to_string_lossy().into_owned())
            };
            if wire_ifindex(&name).is_some() {
                // SAFETY: a device of the list; the context stays open.
                let ctx = unsafe { (v.open_device)(d) };
                if !ctx.is_null() {
                    self.wire_ctxs.push(WireCtx(ctx));
                }
            }
        }
        // SAFETY: the list from get_device_list (open contexts keep their
        // devices).
        unsafe { (v.free_device_list)(list) };
    }

    /// A message that starts a conversation with another host (a REQ, a
    /// SIDR_REQ) through the wire agent: its destination and source
    /// address, then the MAD.
    fn send_wire(&mut self, ifindex: u32, dst: IpAddr, mad: &[u8; MAD_LEN]) -> bool {
        if !self.ensure_agent(ifindex) {
            return false;
        }
        let Some(src) = self.routes.source(dst, ifindex) else {
            return false;
        };
        let v6 = |a: IpAddr| match a {
            IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
            IpAddr::V6(a) => a.octets(),
        };
        let mut msg = Vec::with_capacity(swrdma_cm::names::WIRE_IN_PREFIX + MAD_LEN);
        msg.extend_from_slice(&v6(dst));
        msg.extend_from_slice(&v6(src));
        msg.extend_from_slice(mad);
        let name = swrdma_cm::names::wire_in(self.uid, ifindex, &wired_scope());
        self.deliver(name, &msg)
    }
}

/// `SWRDMA_WIRED_SCOPE`: a private instance of the agents (tests).
fn wired_scope() -> String {
    std::env::var("SWRDMA_WIRED_SCOPE").unwrap_or_default()
}

/// The interface index of soft device `dev` when it is a wire device
/// (`rw0@eth0` in `RDMAV_SOFT_DEVICES`).
pub fn wire_ifindex(dev: &str) -> Option<u32> {
    let v = std::env::var("RDMAV_SOFT_DEVICES").ok()?;
    let ifname = v.split(',').find_map(|e| {
        let (n, i) = e.trim().split_once('@')?;
        (n == dev).then(|| i.to_string())
    })?;
    let c = std::ffi::CString::new(ifname).ok()?;
    // SAFETY: a NUL-terminated name; the call only reads it.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

fn greet_agent(ifindex: u32, dir: Option<std::path::PathBuf>) -> Result<Agent, String> {
    use swrdma_wired::client;
    let access = client::access_page().map_err(|e| e.to_string())?;
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| e.to_string())?;
    let target = client::Target::new(ifindex);
    let opts = client::Options {
        dir,
        ..client::Options::default()
    };
    let session = client::connect_or_start(&target, &opts, access.as_fd(), w.as_fd()).map_err(|e| e.to_string())?;
    Ok(Agent {
        _session: session,
        _events: r,
    })
}

impl SoftHost {
    /// Is `ip` an address of this machine (a UDP socket can bind it)?
    pub fn is_local(&self, ip: IpAddr) -> bool {
        UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
    }
}

impl Default for SoftHost {
    fn default() -> Self {
        Self::new()
    }
}

impl Host for SoftHost {
    fn claim_port(&mut self, ps: u16, _ip: IpAddr, port: u16, _reuse: bool) -> Result<u16, i32> {
        if port == 0 {
            // An ephemeral port: not held machine-wide (nothing connects to
            // an active side's port); unique in the process and not a port
            // bound here.
            let (lo, hi) = swrdma_cm::cma::EPHEMERAL;
            for _ in 0..4096 {
                let p = lo + (self.random() % (hi - lo + 1) as u32) as u16;
                if !self.ports.contains_key(&(ps, p)) && !self.local_ports.contains_key(&(ps, p)) {
                    self.local_ports.insert((ps, p), 1);
                    return Ok(p);
                }
            }
            return Err(EADDRINUSE);
        }
        if self.ports.contains_key(&(ps, port)) {
            return Err(EADDRINUSE);
        }
        if let Some((fd, until)) = self.resurrect(ps, port) {
            self.ports.insert((ps, port), fd);
            self.quiet.insert((ps, port), until);
            self.sockets_changed = true;
            return Ok(port);
        }
        let fd = dgram_socket().ok_or(libc::ENOMEM)?;
        let name = self.port_name(ps, port);
        bind_abstract(fd.as_raw_fd(), &name).map_err(|e| if e == libc::EADDRINUSE { EADDRINUSE } else { e })?;
        self.ports.insert((ps, port), fd);
        self.sockets_changed = true;
        Ok(port)
    }

    fn release_port(&mut self, ps: u16, port: u16) {
        if self.local_ports.remove(&(ps, port)).is_none() {
            if let Some(fd) = self.ports.remove(&(ps, port)) {
                let until = self
                    .quiet
                    .remove(&(ps, port))
                    .unwrap_or(0)
                    .max(crate::ucma::now() + LINGER_NS);
                self.graveyard.push((fd, (ps, port), until));
                self.sockets_changed = true;
            }
        }
    }

    fn listen_port(&mut self, ps: u16, port: u16) -> Result<(), i32> {
        self.listen_port_here(ps, port)?;
        // Requests from other hosts reach us through the wire agents (after
        // the port's socket is there: a REQ may come as soon as a socket of
        // ours is in the interface's group).
        self.ensure_agents();
        Ok(())
    }
    fn device_for(&mut self, ip: IpAddr) -> Option<Dev> {
        self.dev_for(ip)
    }

    fn route(&mut self, src: Option<IpAddr>, dst_sa: SocketAddr) -> Result<(Dev, IpAddr), i32> {
        let dst = dst_sa.ip();
        let scope = match dst_sa {
            SocketAddr::V6(a) => a.scope_id(),
            SocketAddr::V4(_) => 0,
        };
        let local = match src {
            Some(s) => s,
            None => {
                // A destination that is one of our addresses is reached from
                // itself (the kernel routes local addresses through lo).
                if self.dev_for(dst).is_some() {
                    dst
                } else {
                    self.routes.source(dst, scope).ok_or(ENETUNREACH)?
                }
            }
        };
        match self.dev_for(local) {
            Some(d) => Ok((d, local)),
            None if src.is_some() => Err(EADDRNOTAVAIL),
            None => Err(ENODEV),
        }
    }

    fn send(&mut self, to: &Dest, mad: &[u8; MAD_LEN]) -> bool {
        if crate::ucma::trace() {
            crate::ucma::say(format_args!(
                "swrdma-ucma: send to {to:?}: {:?}",
                swrdma_cm::mad::Mad::decode(mad)
            ));
        }
        let name = match to {
            Dest::Listener { dev, ip, ps, port } => match self.remote_wire(dev, *ip) {
                Some(ifindex) => return self.send_wire(ifindex, *ip, mad),
                None => self.port_name(*ps, *port),
            },
            Dest::Peer(n) => n.clone(),
        };
        self.deliver(name, mad)
    }

    fn alive(&mut self, to: &Dest) -> bool {
        let Dest::Peer(name) = to else { return true };
        swrdma_wired::qp1::name_alive(name)
    }

    fn random(&mut self) -> u32 {
        // xorshift64*: comm IDs and PSNs need to be hard to guess only
        // against other hosts (the wire); seeded from getrandom.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }
}

/// One received datagram: its bytes and the sender's abstract name, when
/// the sender is of our user.
pub fn recv_one(fd: RawFd, uid: u32) -> Option<Option<(Vec<u8>, Vec<u8>)>> {
    let mut buf = [0u8; 512];
    // SAFETY: plain C structs, zeroed.
    let mut from: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_un).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    // SAFETY: every pointer of msg points into the locals above.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT | libc::MSG_TRUNC) };
    if n < 0 {
        return None;
    }
    Some(take_one(&msg, n as usize, &buf, &from, uid))
}

/// How many datagrams one `recvmmsg` takes at most.
const BATCH: usize = 16;

/// Up to `max` datagrams waiting on `fd`, in order, taken `BATCH` at a
/// time with `recvmmsg` (one call, rather than one `recvmsg` each and a
/// last one that finds the queue empty): for each, what [`recv_one`]
/// answers for it (None for a datagram dropped).  Fewer than `max` means
/// the queue was emptied.
pub fn recv_batch(fd: RawFd, uid: u32, max: usize) -> Vec<Option<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    while out.len() < max {
        let want = BATCH.min(max - out.len());
        let mut bufs = [[0u8; 512]; BATCH];
        // SAFETY: plain C structs, zeroed.
        let mut froms: [libc::sockaddr_un; BATCH] = unsafe { std::mem::zeroed() };
        let mut cbufs = [[0u64; 8]; BATCH];
        // SAFETY: as above.
        let mut iovs: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..want {
            iovs[i].iov_base = bufs[i].as_mut_ptr().cast();
            iovs[i].iov_len = bufs[i].len();
            let h = &mut msgs[i].msg_hdr;
            h.msg_name = (&mut froms[i] as *mut libc::sockaddr_un).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
            h.msg_iov = &mut iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = cbufs[i].as_mut_ptr().cast();
            h.msg_controllen = std::mem::size_of_val(&cbufs[i]);
        }
        // SAFETY: `want` headers, each pointing into the locals above.
        let n = unsafe {
            libc::recvmmsg(
                fd,
                msgs.as_mut_ptr(),
                want as libc::c_uint,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if n <= 0 {
            break;
        }
        for i in 0..n as usize {
            out.push(take_one(
                &msgs[i].msg_hdr,
                msgs[i].msg_len as usize,
                &bufs[i],
                &froms[i],
                uid,
            ));
        }
        if (n as usize) < want {
            break;
        }
    }
    out
}

/// One received datagram (`n` bytes in `buf`, header `msg`): its bytes
/// and the sender's abstract name when it is one MAD from our user, else
/// None.
fn take_one(
    msg: &libc::msghdr,
    n: usize,
    buf: &[u8; 512],
    from: &libc::sockaddr_un,
    uid: u32,
) -> Option<(Vec<u8>, Vec<u8>)> {
    // One datagram is one MAD: anything else is dropped.
    if n != MAD_LEN || msg.msg_flags & libc::MSG_TRUNC != 0 {
        return None;
    }
    let mut sender_uid = None;
    // SAFETY: walking the control messages the kernel wrote into the
    // header's control buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_CREDENTIALS {
                let cr = libc::CMSG_DATA(c).cast::<libc::ucred>().read_unaligned();
                sender_uid = Some(cr.uid);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    if sender_uid != Some(uid) {
        return None;
    }
    let nl = msg.msg_namelen as usize;
    let off = std::mem::size_of::<libc::sa_family_t>();
    if nl <= off + 1 || from.sun_path[0] != 0 {
        return None;
    }
    let name: Vec<u8> = from.sun_path[1..nl - off].iter().map(|c| *c as u8).collect();
    Some((buf[..n].to_vec(), name))
}
