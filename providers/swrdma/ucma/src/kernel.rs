//! Ids on the kernel's own RDMA devices.  On a machine that has RDMA
//! devices of the kernel (rxe, a NIC) and its rdma_cm (`rdma_ucm`), a
//! channel of ours stands for two: the model answers the soft devices, and
//! an id whose address belongs to no soft device is handed to the kernel's
//! `/dev/infiniband/rdma_cm`, opened for that channel, when it is bound or
//! its address resolved.  From then on its commands go to the kernel with
//! the kernel's handle in place of ours, and the kernel's events for it are
//! taken by the CM thread and queued on the channel with our handle, so the
//! application sees one channel, one handle space and one event queue.
//!
//! An id stays ours until the command that gives it an address: created,
//! it may still be bound to either.  Options set before that are replayed
//! on the kernel's id.  An id bound to a wildcard address is ours (it
//! listens on the soft devices); a wildcard listener of the kernel's needs
//! the device's address.  Our model keeps an idle placeholder under each
//! handed-over handle, so that handles stay unique and a command on another
//! channel's id is refused as the kernel refuses it.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use swrdma_cm::cma::{ChanId, Handle, Host};

use crate::abi::{self, cmd, put32, put64, size, u16_at, u32_at, u64_at, SockAddr};
use crate::ucma::{write_user, Model};

/// `RDMA_CM_EVENT_CONNECT_REQUEST`, `MULTICAST_JOIN`, `MULTICAST_ERROR`.
const EV_CONNECT_REQUEST: u32 = 4;
const EV_MULTICAST_JOIN: u32 = 12;
const EV_MULTICAST_ERROR: u32 = 13;

/// An event taken from the kernel and not yet delivered.
struct Queued {
    /// The id whose `events_reported` the kernel counted it to (a
    /// CONNECT_REQUEST: the listener; multicast events: the joined id).
    owner: Handle,
    /// A CONNECT_REQUEST's new id (ours).
    child: Option<Handle>,
    /// A multicast event's multicast handle (ours).
    mc: Option<u32>,
    bytes: Vec<u8>,
}

#[derive(Default)]
pub struct Kernel {
    /// The kernel's channel opened for each of ours.
    fds: HashMap<ChanId, OwnedFd>,
    /// No kernel rdma_cm here (its open failed once).
    absent: bool,
    /// Our handle -> the kernel's, and back.
    to_k: HashMap<Handle, u32>,
    from_k: HashMap<u32, Handle>,
    /// The channel and user context of each handed-over id (a
    /// CONNECT_REQUEST names its listener by its user context).
    uids: HashMap<Handle, (ChanId, u64)>,
    /// The handed-over ids that listen, and our wildcard listeners that
    /// have a kernel listener beside them.
    listening: std::collections::HashSet<Handle>,
    /// Our wildcard listener -> the kernel's listener on the same port.
    shadows: HashMap<Handle, u32>,
    /// Our multicast handle -> the kernel's and the id that joined; and
    /// back.
    mcs: HashMap<u32, (u32, Handle)>,
    mc_from_k: HashMap<u32, u32>,
    /// Options set on ids still ours, in order: replayed when one moves.
    opts: HashMap<Handle, Vec<(u32, u32, Vec<u8>)>>,
    queues: HashMap<ChanId, VecDeque<Queued>>,
    dirty: Vec<ChanId>,
}

/// `write()` on a kernel descriptor, past our own interposed `write`.
fn kwrite(fd: RawFd, c: u32, body: &[u8], outl: usize) -> Result<(), i32> {
    let mut b = Vec::with_capacity(abi::HDR_LEN + body.len());
    b.extend_from_slice(&c.to_ne_bytes());
    b.extend_from_slice(&(body.len() as u16).to_ne_bytes());
    b.extend_from_slice(&(outl as u16).to_ne_bytes());
    b.extend_from_slice(body);
    // SAFETY: write(2) of a local buffer of its length.
    let r = unsafe { libc::syscall(libc::SYS_write, fd, b.as_ptr(), b.len()) };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    } else {
        Ok(())
    }
}

/// The offset of the id handle in each command that names one.
fn id_offset(c: u32) -> Option<usize> {
    Some(match c {
        cmd::DESTROY_ID | cmd::QUERY_ROUTE | cmd::QUERY | cmd::SET_OPTION | cmd::INIT_QP_ATTR | cmd::MIGRATE_ID => 8,
        cmd::LEAVE_MCAST => 8,
        cmd::BIND_IP => 36,
        cmd::RESOLVE_IP => 56,
        cmd::CONNECT => 272,
        cmd::ACCEPT => 280,
        cmd::JOIN_IP_MCAST => 44,
        cmd::JOIN_MCAST => 16,
        cmd::BIND
        | cmd::RESOLVE_ADDR
        | cmd::RESOLVE_ROUTE
        | cmd::LISTEN
        | cmd::REJECT
        | cmd::DISCONNECT
        | cmd::NOTIFY => 0,
        _ => return None,
    })
}

impl Kernel {
    /// The kernel channel standing beside `chan`, opened on first use.
    fn fd(&mut self, chan: ChanId) -> Option<RawFd> {
        if let Some(f) = self.fds.get(&chan) {
            return Some(f.as_raw_fd());
        }
        if self.absent {
            return None;
        }
        let path = c"/dev/infiniband/rdma_cm";
        // SAFETY: openat(2) of a constant path (not through our open).
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK,
            )
        } as RawFd;
        if fd < 0 {
            self.absent = true;
            return None;
        }
        // SAFETY: a descriptor we just opened and own.
        self.fds.insert(chan, unsafe { OwnedFd::from_raw_fd(fd) });
        crate::progress::kick();
        Some(fd)
    }

    /// The kernel descriptors the CM thread waits on.
    pub fn watched(&self) -> Vec<RawFd> {
        self.fds.values().map(|f| f.as_raw_fd()).collect()
    }

    pub fn pending(&self, chan: ChanId) -> usize {
        self.queues.get(&chan).map_or(0, |q| q.len())
    }

    pub fn take_dirty(&mut self) -> Vec<ChanId> {
        std::mem::take(&mut self.dirty)
    }

    /// The oldest event of the kernel's for `chan`.
    pub fn pop(&mut self, chan: ChanId) -> Option<Vec<u8>> {
        let e = self.queues.get_mut(&chan)?.pop_front()?;
        self.dirty.push(chan);
        Some(e.bytes)
    }

    /// An option set on an id of ours, kept for a later move.
    pub fn remember_option(&mut self, h: Handle, level: u32, name: u32, val: &[u8]) {
        self.opts.entry(h).or_default().push((level, name, val.to_vec()));
    }

    /// Forgets an id of ours that was destroyed.
    pub fn forget(&mut self, h: Handle) {
        self.opts.remove(&h);
    }

    /// A channel closed: the kernel's goes with it (the kernel destroys its
    /// ids), and everything we knew of them.
    pub fn close_channel(&mut self, chan: ChanId) {
        self.fds.remove(&chan);
        self.queues.remove(&chan);
        let gone: Vec<Handle> = self
            .uids
            .iter()
            .filter(|(_, (c, _))| *c == chan)
            .map(|(h, _)| *h)
            .collect();
        for h in gone {
            self.drop_id(h);
        }
    }

    fn drop_id(&mut self, h: Handle) {
        self.uids.remove(&h);
        self.listening.remove(&h);
        if let Some(k) = self.to_k.remove(&h) {
            self.from_k.remove(&k);
        }
        if let Some(k) = self.shadows.remove(&h) {
            self.from_k.remove(&k);
        }
        let from_k = &mut self.mc_from_k;
        self.mcs.retain(|_, (k, owner)| {
            if *owner == h {
                from_k.remove(k);
            }
            *owner != h
        });
    }

    fn map(&mut self, h: Handle, k: u32, chan: ChanId, uid: u64) {
        self.to_k.insert(h, k);
        self.from_k.insert(k, h);
        self.uids.insert(h, (chan, uid));
        self.opts.remove(&h);
    }

    /// Removes the undelivered events `keep` refuses from `chan`'s queue.
    fn take_queued(&mut self, chan: ChanId, mut take: impl FnMut(&Queued) -> bool) -> Vec<Queued> {
        let Some(q) = self.queues.get_mut(&chan) else {
            return Vec::new();
        };
        let (out, keep): (Vec<Queued>, Vec<Queued>) = q.drain(..).partition(|e| take(e));
        q.extend(keep);
        if !out.is_empty() {
            self.dirty.push(chan);
        }
        out
    }
}

/// A command for the kernel's rdma_cm, if it is one: `None` leaves it to
/// the model.
pub fn divert(m: &mut Model, chan: ChanId, c: u32, a: &[u8], outl: usize) -> Option<Result<(), i32>> {
    let off = id_offset(c)?;
    if a.len() < off + 4 {
        return None;
    }
    let h = u32_at(a, off);
    if c == cmd::LEAVE_MCAST {
        return m
            .kernel
            .mcs
            .get(&h)
            .copied()
            .map(|(k, owner)| leave_mcast(m, chan, owner, k, a, outl));
    }
    if c == cmd::MIGRATE_ID {
        return m.kernel.to_k.contains_key(&h).then(|| migrate(m, chan, a, outl));
    }
    if m.kernel.to_k.contains_key(&h) {
        if let Err(e) = m.cma.check(chan, h) {
            return Some(Err(e));
        }
        return Some(forward(m, chan, c, a, outl, off, h));
    }
    if matches!(c, cmd::BIND_IP | cmd::BIND | cmd::RESOLVE_IP | cmd::RESOLVE_ADDR)
        && !m.kernel.absent
        && m.cma.check(chan, h).is_ok()
        && m.cma.id_info(h).is_some_and(|i| i.3)
        && !ours(m, c, a)
    {
        return hand_over(m, chan, c, a, outl, off, h);
    }
    None
}

/// The addresses of a bind (the address) or a resolve (source, if any,
/// and destination); `None` for what is not an IP address.
fn addresses(c: u32, a: &[u8]) -> Option<(Option<IpAddr>, IpAddr)> {
    let ip = |s: Option<SockAddr>| match s {
        Some(SockAddr::Ip(sa)) => Some(sa.ip()),
        _ => None,
    };
    match c {
        // both at 8: after BIND_IP's response pointer, after BIND's id and
        // address size
        cmd::BIND_IP => Some((None, ip(abi::parse_addr(&a[8..36]))?)),
        cmd::BIND if a.len() >= size::BIND => Some((None, ip(abi::parse_addr(&a[8..size::BIND]))?)),
        cmd::RESOLVE_IP => {
            let src = ip(abi::parse_addr(&a[0..28]));
            Some((src, ip(abi::parse_addr(&a[28..56]))?))
        }
        cmd::RESOLVE_ADDR if a.len() >= size::RESOLVE_ADDR => {
            let src = if u16_at(a, 8) == 0 {
                None
            } else {
                ip(abi::parse_addr(&a[16..144]))
            };
            Some((src, ip(abi::parse_addr(&a[144..272]))?))
        }
        _ => None,
    }
}

/// Whether the addresses of a bind or resolve are the soft devices' (or a
/// wildcard, or not understood: the model answers those).
fn ours(m: &mut Model, c: u32, a: &[u8]) -> bool {
    let Some((src, addr)) = addresses(c, a) else {
        return true;
    };
    if matches!(c, cmd::BIND_IP | cmd::BIND) {
        return addr.is_unspecified() || m.cma.host.device_for(addr).is_some();
    }
    m.cma
        .host
        .route(src.filter(|s| !s.is_unspecified()), std::net::SocketAddr::new(addr, 0))
        .is_ok()
}

/// Creates the kernel's id for our idle id `h`, replays its options, and
/// passes it the command that gives it an address.  When the kernel
/// refuses the address too, its id is destroyed and its answer returned.
fn hand_over(
    m: &mut Model,
    chan: ChanId,
    c: u32,
    a: &[u8],
    outl: usize,
    off: usize,
    h: Handle,
) -> Option<Result<(), i32>> {
    let (uid, ps, qpt, idle) = m.cma.id_info(h)?;
    if !idle {
        return None;
    }
    let kfd = m.kernel.fd(chan)?;
    let k = match create_kernel(kfd, uid, ps, qpt) {
        Ok(k) => k,
        Err(e) => return Some(Err(e)),
    };
    let r = replay_options(kfd, k, m.kernel.opts.get(&h).map_or(&[][..], |v| &v[..]));
    let mut b = a.to_vec();
    put32(&mut b, off, k);
    let r = r.and_then(|_| kwrite(kfd, c, &b, outl));
    if let Err(e) = r {
        destroy_kernel(kfd, k);
        if e == libc::ENODEV || e == libc::EADDRNOTAVAIL {
            if let Some((_, ip)) = addresses(c, a) {
                crate::ucma::explain(m, ip);
            }
        }
        return Some(r);
    }
    m.kernel.map(h, k, chan, uid);
    Some(Ok(()))
}

fn destroy_kernel(kfd: RawFd, k: u32) -> u32 {
    let mut resp = [0u8; 4];
    let mut body = [0u8; size::DESTROY_ID];
    put64(&mut body, 0, resp.as_mut_ptr() as u64);
    put32(&mut body, 8, k);
    let _ = kwrite(kfd, cmd::DESTROY_ID, &body, size::DESTROY_ID_RESP);
    u32::from_ne_bytes(resp)
}

/// A command on a handed-over id, with the kernel's handle.  DESTROY_ID
/// also counts out the events we took from the kernel and never delivered
/// (librdmacm waits until it has seen as many as the answer says); a join
/// records the multicast handle the kernel gave.
fn forward(m: &mut Model, chan: ChanId, c: u32, a: &[u8], outl: usize, off: usize, h: Handle) -> Result<(), i32> {
    let kfd = m.kernel.fd(chan).ok_or(libc::ENODEV)?;
    let k = m.kernel.to_k[&h];
    let mut b = a.to_vec();
    put32(&mut b, off, k);
    if c == cmd::DESTROY_ID {
        if outl < size::DESTROY_ID_RESP {
            return Err(libc::ENOSPC);
        }
        let mut resp = [0u8; 4];
        put64(&mut b, 0, resp.as_mut_ptr() as u64);
        kwrite(kfd, c, &b, outl)?;
        // Requests we took and the application never saw: their ids are
        // the kernel's still; they go now.
        let undelivered = drop_requests(m, chan, kfd, h);
        let n = u32::from_ne_bytes(resp).saturating_sub(undelivered);
        m.kernel.drop_id(h);
        let _ = m.cma.destroy_id(chan, h);
        return write_user(u64_at(a, 0), &n.to_ne_bytes());
    }
    if matches!(c, cmd::JOIN_IP_MCAST | cmd::JOIN_MCAST) {
        // The kernel's multicast handle, answered to us; the application
        // gets one of ours (one space with the soft devices' joins).
        if outl < 4 {
            return Err(libc::ENOSPC);
        }
        let mut resp = [0u8; 4];
        put64(&mut b, 0, resp.as_mut_ptr() as u64);
        kwrite(kfd, c, &b, outl)?;
        let k = u32::from_ne_bytes(resp);
        let ours = m.cma.reserve_mc(h);
        m.kernel.mcs.insert(ours, (k, h));
        m.kernel.mc_from_k.insert(k, ours);
        return write_user(u64_at(a, 0), &ours.to_ne_bytes());
    }
    kwrite(kfd, c, &b, outl)?;
    if c == cmd::LISTEN {
        m.kernel.listening.insert(h);
    }
    Ok(())
}

/// LEAVE_MCAST of a kernel multicast handle (its events we hold and the
/// application has not seen are not counted as reported).
fn leave_mcast(m: &mut Model, chan: ChanId, owner: Handle, k: u32, a: &[u8], outl: usize) -> Result<(), i32> {
    m.cma.check(chan, owner)?;
    let kfd = m.kernel.fd(chan).ok_or(libc::ENODEV)?;
    let mc = u32_at(a, 8);
    let mut resp = [0u8; 4];
    let mut b = a.to_vec();
    put64(&mut b, 0, resp.as_mut_ptr() as u64);
    put32(&mut b, 8, k);
    kwrite(kfd, cmd::LEAVE_MCAST, &b, outl)?;
    let undelivered = m.kernel.take_queued(chan, |e| e.mc == Some(mc));
    m.kernel.mcs.remove(&mc);
    m.kernel.mc_from_k.remove(&k);
    let _ = m.cma.leave_mcast(chan, mc);
    let n = u32::from_ne_bytes(resp).saturating_sub(undelivered.len() as u32);
    write_user(u64_at(a, 0), &n.to_ne_bytes())
}

/// MIGRATE_ID of a handed-over id to channel `to` (the command is written
/// on the destination; `a` names the source channel's descriptor): the
/// kernel's id moves between the two kernel channels, with the events we
/// hold for it.
fn migrate(m: &mut Model, to: ChanId, a: &[u8], outl: usize) -> Result<(), i32> {
    let h = u32_at(a, 8);
    let from_fd = u32_at(a, 12) as RawFd;
    let from = m.chans.get(&from_fd).map(|c| c.id).ok_or(libc::EINVAL)?;
    if outl < size::MIGRATE_RESP {
        return Err(libc::ENOSPC);
    }
    m.cma.check(from, h)?;
    let src = m.kernel.fd(from).ok_or(libc::ENODEV)?;
    let dst = m.kernel.fd(to).ok_or(libc::ENODEV)?;
    let mut resp = [0u8; 4];
    let mut b = a.to_vec();
    put64(&mut b, 0, resp.as_mut_ptr() as u64);
    put32(&mut b, 8, m.kernel.to_k[&h]);
    put32(&mut b, 12, src as u32);
    kwrite(dst, cmd::MIGRATE_ID, &b, outl)?;
    let moved = m.kernel.take_queued(from, |e| e.owner == h);
    let n = u32::from_ne_bytes(resp).saturating_sub(moved.len() as u32);
    if !moved.is_empty() {
        m.kernel.queues.entry(to).or_default().extend(moved);
        m.kernel.dirty.push(to);
    }
    if let Some(u) = m.kernel.uids.get_mut(&h) {
        u.0 = to;
    }
    let _ = m.cma.migrate(h, from, to);
    write_user(u64_at(a, 0), &n.to_ne_bytes())
}

/// Takes every event the kernel holds for the channel on `kfd` and queues
/// it with our handles (a CONNECT_REQUEST's new id gets a handle of ours).
pub fn pump(m: &mut Model, kfd: RawFd) {
    let Some(chan) = m.kernel.fds.iter().find(|(_, f)| f.as_raw_fd() == kfd).map(|(c, _)| *c) else {
        return;
    };
    loop {
        let mut ev = [0u8; size::EVENT_RESP];
        let mut body = [0u8; size::GET_EVENT];
        put64(&mut body, 0, ev.as_mut_ptr() as u64);
        if kwrite(kfd, cmd::GET_EVENT, &body, size::EVENT_RESP).is_err() {
            return;
        }
        let (kind, k, uid) = (u32_at(&ev, 12), u32_at(&ev, 8), u64_at(&ev, 0));
        let q = if kind == EV_MULTICAST_JOIN || kind == EV_MULTICAST_ERROR {
            let Some(ours) = m.kernel.mc_from_k.get(&k).copied() else {
                continue;
            };
            let owner = m.kernel.mcs[&ours].1;
            put32(&mut ev, 8, ours);
            Queued {
                owner,
                child: None,
                mc: Some(ours),
                bytes: ev.to_vec(),
            }
        } else if let Some(h) = m.kernel.from_k.get(&k).copied() {
            put32(&mut ev, 8, h);
            Queued {
                owner: h,
                child: None,
                mc: None,
                bytes: ev.to_vec(),
            }
        } else if kind == EV_CONNECT_REQUEST {
            let listener = m
                .kernel
                .listening
                .iter()
                .copied()
                .find(|l| m.kernel.uids.get(l) == Some(&(chan, uid)));
            let Some(listener) = listener else {
                destroy_kernel(kfd, k);
                continue;
            };
            let (_, ps, qpt, _) = m.cma.id_info(listener).unwrap_or((uid, 0x0106, 2, true));
            let Ok(h) = m.cma.create_id(chan, uid, ps, qpt) else {
                destroy_kernel(kfd, k);
                continue;
            };
            m.kernel.map(h, k, chan, uid);
            put32(&mut ev, 8, h);
            Queued {
                owner: listener,
                child: Some(h),
                mc: None,
                bytes: ev.to_vec(),
            }
        } else {
            continue;
        };
        m.kernel.queues.entry(chan).or_default().push_back(q);
        m.kernel.dirty.push(chan);
    }
}

/// Is `fd` one of the kernel channels.
pub fn is_kernel_fd(m: &Model, fd: RawFd) -> bool {
    m.kernel.fds.values().any(|f| f.as_raw_fd() == fd)
}

/// Writes a kernel event to the caller.
pub fn deliver(bytes: &[u8], resp: u64, outl: usize) -> Result<(), i32> {
    write_user(resp, &bytes[..outl.min(bytes.len())])
}

/// After our LISTEN on a wildcard address: a listener of the kernel's on
/// the same port (same user context, options and backlog), so that the
/// kernel's devices' requests reach the application as ours do: its
/// CONNECT_REQUESTs come on the channel, counted to our listener.  Where
/// the kernel refuses (no rdma_cm, the port taken in its port space), the
/// listener serves the soft devices alone.
pub fn shadow_listen(m: &mut Model, chan: ChanId, h: Handle, backlog: u32) {
    if m.kernel.absent || m.kernel.shadows.contains_key(&h) {
        return;
    }
    let Ok((_, Some(swrdma_cm::cma::Addr::Ip(sa)), _)) = m.cma.query_addr(h) else {
        return;
    };
    if !sa.ip().is_unspecified() {
        return;
    }
    let Some((uid, ps, qpt, _)) = m.cma.id_info(h) else {
        return;
    };
    let Some(kfd) = m.kernel.fd(chan) else { return };
    let Ok(k) = create_kernel(kfd, uid, ps, qpt) else {
        return;
    };
    let mut r = replay_options(kfd, k, m.kernel.opts.get(&h).map_or(&[][..], |v| &v[..]));
    let mut b = [0u8; size::BIND];
    put32(&mut b, 0, k);
    let n = abi::write_ip(&mut b[8..136], &sa);
    b[4..6].copy_from_slice(&(n as u16).to_ne_bytes());
    r = r.and_then(|_| kwrite(kfd, cmd::BIND, &b, 0));
    let mut l = [0u8; size::LISTEN];
    put32(&mut l, 0, k);
    put32(&mut l, 4, backlog);
    r = r.and_then(|_| kwrite(kfd, cmd::LISTEN, &l, 0));
    if r.is_err() {
        destroy_kernel(kfd, k);
        return;
    }
    m.kernel.shadows.insert(h, k);
    m.kernel.from_k.insert(k, h);
    m.kernel.uids.insert(h, (chan, uid));
    m.kernel.listening.insert(h);
}

/// Our listener `h` destroyed: its kernel listener goes too; the events
/// the kernel counted as reported for it that the application saw (the
/// kernel's count less those we hold, which go with their new ids).
pub fn destroy_shadow(m: &mut Model, chan: ChanId, h: Handle) -> u32 {
    let Some(k) = m.kernel.shadows.get(&h).copied() else {
        return 0;
    };
    let Some(kfd) = m.kernel.fd(chan) else { return 0 };
    let reported = destroy_kernel(kfd, k);
    let undelivered = drop_requests(m, chan, kfd, h);
    m.kernel.drop_id(h);
    reported.saturating_sub(undelivered)
}

/// Drops the undelivered events counted to `h` (destroying the new ids of
/// the requests among them): how many.
fn drop_requests(m: &mut Model, chan: ChanId, kfd: RawFd, h: Handle) -> u32 {
    let undelivered = m.kernel.take_queued(chan, |e| e.owner == h);
    for e in &undelivered {
        if let Some(child) = e.child {
            if let Some(ck) = m.kernel.to_k.get(&child).copied() {
                destroy_kernel(kfd, ck);
            }
            m.kernel.drop_id(child);
            let _ = m.cma.destroy_id(chan, child);
        }
    }
    undelivered.len() as u32
}

fn create_kernel(kfd: RawFd, uid: u64, ps: u16, qpt: u8) -> Result<u32, i32> {
    let mut resp = [0u8; 4];
    let mut body = [0u8; size::CREATE_ID];
    put64(&mut body, 0, uid);
    put64(&mut body, 8, resp.as_mut_ptr() as u64);
    body[16..18].copy_from_slice(&ps.to_ne_bytes());
    body[18] = qpt;
    kwrite(kfd, cmd::CREATE_ID, &body, size::CREATE_ID_RESP)?;
    Ok(u32::from_ne_bytes(resp))
}

fn replay_options(kfd: RawFd, k: u32, opts: &[(u32, u32, Vec<u8>)]) -> Result<(), i32> {
    for (level, name, val) in opts {
        let mut o = [0u8; size::SET_OPTION];
        put64(&mut o, 0, val.as_ptr() as u64);
        put32(&mut o, 8, k);
        put32(&mut o, 12, *level);
        put32(&mut o, 16, *name);
        put32(&mut o, 20, val.len() as u32);
        kwrite(kfd, cmd::SET_OPTION, &o, 0)?;
    }
    Ok(())
}
