//! Endpoints: per-user id allocation, the per-context listening socket,
//! connecting links (memfd + eventfd passed with SCM_RIGHTS, peers checked
//! with SO_PEERCRED), and QPN -> context resolution.
//!
//! Every descriptor here is an `OwnedFd`: it is closed exactly once, when
//! its owner (a `Link`, the `Ctx`, or a local on an error path) is dropped.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fs::{fstat, ftruncate, memfd_create, MemfdFlags};
use rustix::net::{
    accept_with, bind, connect as connect_socket, listen as listen_socket, recvmsg, sendmsg, socket_with,
    sockopt::socket_peercred, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use swrdma_ring::{Link, LINK_BYTES};

const MAGIC: u32 = 0x5357_5244; // "SWRD"

/// The first message each way on a new connection (8 bytes: magic and the
/// sender's context id, native byte order — both ends are on one machine).
#[derive(Clone, Copy, Default)]
struct Hello {
    magic: u32,
    ctx_id: u32,
}

impl Hello {
    const LEN: usize = 8;

    fn new(ctx_id: u32) -> Hello {
        Hello { magic: MAGIC, ctx_id }
    }
    fn to_bytes(self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..4].copy_from_slice(&self.magic.to_ne_bytes());
        b[4..].copy_from_slice(&self.ctx_id.to_ne_bytes());
        b
    }
    fn from_bytes(b: &[u8; Self::LEN]) -> Hello {
        Hello {
            magic: u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            ctx_id: u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
}

/// Allocates `n` consecutive ids (QPNs, SRQNs, context ids) unique for the
/// user, from the counter file in the private directory (flock'ed).
pub fn alloc_ids(dir: &Path, n: u32) -> u32 {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join("ids"));
    let Ok(f) = f else {
        // Fall back to something unlikely to collide.
        return ((std::process::id() & 0xffff) << 8) | 0x11;
    };
    // flock(LOCK_EX); released by the unlock below (or by the close).
    let _ = f.lock();
    let mut buf = [0u8; 4];
    let mut v = match f.read_at(&mut buf, 0) {
        Ok(4) => u32::from_le_bytes(buf),
        _ => 0,
    };
    if !(0x100..0xff_0000).contains(&v) {
        v = 0x100;
    }
    let next = v + n;
    let _ = f.write_at(&next.to_le_bytes(), 0);
    let _ = f.unlock();
    v
}

pub fn ctx_sock_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("c{id}"))
}
pub fn qpn_path(dir: &Path, qpn: u32) -> PathBuf {
    dir.join(format!("q{qpn}"))
}

/// Publishes "QPN/SRQN `num` lives in context `ctx`" (a symlink).
pub fn publish(dir: &Path, num: u32, ctx: u32) {
    let p = qpn_path(dir, num);
    let _ = std::fs::remove_file(&p);
    let _ = std::os::unix::fs::symlink(format!("c{ctx}"), &p);
}
pub fn unpublish(dir: &Path, num: u32) {
    let _ = std::fs::remove_file(qpn_path(dir, num));
}
pub fn resolve(dir: &Path, num: u32) -> Option<u32> {
    let t = std::fs::read_link(qpn_path(dir, num)).ok()?;
    t.to_str()?.strip_prefix('c')?.parse().ok()
}

/// The listening socket of context `id` (non-blocking), bound to its path.
pub fn listen(dir: &Path, id: u32) -> Option<OwnedFd> {
    let p = ctx_sock_path(dir, id);
    let _ = std::fs::remove_file(&p);
    let addr = SocketAddrUnix::new(&p).ok()?;
    let fd = socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .ok()?;
    bind(&fd, &addr).ok()?;
    listen_socket(&fd, 128).ok()?;
    Some(fd)
}

/// The peer of connected socket `fd` runs as our user.
fn peer_ok(fd: BorrowedFd<'_>) -> bool {
    socket_peercred(fd).is_ok_and(|c| c.uid == rustix::process::getuid())
}

/// Sends `h` with descriptors `fds` (at most 2) attached.
fn send_fds(fd: BorrowedFd<'_>, h: Hello, fds: &[BorrowedFd<'_>]) -> bool {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    if !cmsg.push(SendAncillaryMessage::ScmRights(fds)) {
        return false;
    }
    let b = h.to_bytes();
    sendmsg(fd, &[IoSlice::new(&b)], &mut cmsg, SendFlags::NOSIGNAL) == Ok(Hello::LEN)
}

/// Receives a `Hello` with exactly `want` descriptors (waiting at most 5 s).
/// Anything else is refused; descriptors received with it are closed.
fn recv_fds(fd: BorrowedFd<'_>, want: usize) -> Option<(Hello, Vec<OwnedFd>)> {
    let mut pfd = [PollFd::new(&fd, PollFlags::IN)];
    let t = Timespec { tv_sec: 5, tv_nsec: 0 };
    if poll(&mut pfd, Some(&t)) != Ok(1) {
        return None;
    }
    let mut b = [0u8; Hello::LEN];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let r = recvmsg(fd, &mut [IoSliceMut::new(&mut b)], &mut cmsg, RecvFlags::CMSG_CLOEXEC);
    let mut fds = Vec::new();
    for m in cmsg.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = m {
            fds.extend(it);
        }
    }
    let h = Hello::from_bytes(&b);
    if !r.is_ok_and(|r| r.bytes == Hello::LEN) || h.magic != MAGIC || fds.len() != want {
        return None;
    }
    Some((h, fds))
}

/// Initiator: connects to context `peer`, creates and shares the rings.
pub fn connect(dir: &Path, my_id: u32, my_efd: BorrowedFd<'_>, peer: u32) -> Option<Link> {
    let addr = SocketAddrUnix::new(ctx_sock_path(dir, peer)).ok()?;
    let fd = socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None).ok()?;
    if connect_socket(&fd, &addr).is_err() || !peer_ok(fd.as_fd()) {
        return None;
    }
    let memfd = memfd_create(c"swrdma-link", MemfdFlags::CLOEXEC).ok()?;
    ftruncate(&memfd, LINK_BYTES as u64).ok()?;
    if !send_fds(fd.as_fd(), Hello::new(my_id), &[memfd.as_fd(), my_efd]) {
        return None;
    }
    let (h, mut fds) = recv_fds(fd.as_fd(), 1)?;
    if h.ctx_id != peer {
        return None;
    }
    let peer_efd = fds.pop()?;
    // SAFETY: `memfd` is the memory file created and sized to `LINK_BYTES`
    // just above; it is shared only with the peer, over this connection, to
    // hold this link's two rings.
    unsafe { Link::new(peer, true, fd, memfd.as_fd(), peer_efd) }
}

/// Target: accepts one pending connection on `lfd`.  None: nothing is
/// pending; Some(None): a connection was refused.
pub fn accept(lfd: BorrowedFd<'_>, my_id: u32, my_efd: BorrowedFd<'_>) -> Option<Option<Link>> {
    let fd = accept_with(lfd, SocketFlags::CLOEXEC).ok()?;
    if !peer_ok(fd.as_fd()) {
        return Some(None);
    }
    let Some((h, fds)) = recv_fds(fd.as_fd(), 2) else {
        return Some(None);
    };
    let mut fds = fds.into_iter();
    let (Some(memfd), Some(peer_efd)) = (fds.next(), fds.next()) else {
        return Some(None);
    };
    // The shared file must be exactly a link's size (no surprises).
    let size_ok = fstat(&memfd).is_ok_and(|st| st.st_size as u64 == LINK_BYTES as u64);
    if !size_ok || !send_fds(fd.as_fd(), Hello::new(my_id), &[my_efd]) {
        return Some(None);
    }
    // SAFETY: `memfd` came from a peer of our own uid (SO_PEERCRED) and is
    // exactly `LINK_BYTES` long (checked above); by the protocol it holds
    // this link's rings and nothing else.  (A same-user peer could still
    // shrink it later; that peer could also ptrace us — see the README's
    // isolation model.)
    Some(unsafe { Link::new(h.ctx_id, false, fd, memfd.as_fd(), peer_efd) })
}
