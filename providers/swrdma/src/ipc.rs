//! Endpoints: per-user id allocation, the per-context listening socket,
//! connecting links (memfd + eventfd passed with SCM_RIGHTS, peers checked
//! with SO_PEERCRED), and QPN -> context resolution.  The private
//! directory's parts (ids, context sockets, QPN links, multicast groups,
//! `reclaim`) live in the agent's crate, `swrdma_wired::userdir` (the agent
//! is a context of the user too), and are re-exported here.
//!
//! Every descriptor here is an `OwnedFd`: it is closed exactly once, when
//! its owner (a `Link`, the `Ctx`, or a local on an error path) is dropped;
//! every one is opened close-on-exec.  Files of the private directory are
//! opened with `O_NOFOLLOW`, and a QPN link is followed only to a `c<id>`
//! of the same directory.
//!
//! Peer death: each link comes with a pidfd of the peer's process (taken
//! from the connected socket, `SO_PEERPIDFD`, or `pidfd_open` of its
//! `SO_PEERCRED` pid right after the connection is made), which the context
//! watches: a peer that dies is noticed even when a child it forked without
//! exec keeps its sockets open (no hangup then).
//!
//! Stale endpoints: a context appears under its final name `c<id>` only
//! once it listens (bound under `t<id>`, then renamed), so a connection
//! refused at `c<id>` means its owner is gone for good (ids are never
//! reused), as does a listener whose process has exited (a forked child may
//! still hold the socket); [`reclaim`](swrdma_wired::userdir::reclaim)
//! removes such sockets and the QPN links that point to no socket.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fs::{fcntl_add_seals, fcntl_get_seals, fstat, ftruncate, memfd_create, FileType, MemfdFlags, SealFlags};
use rustix::net::{
    accept_with, connect as connect_socket, recvmsg, sendmsg, socket_with, sockopt::socket_peercred, AddressFamily,
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
    SocketAddrUnix, SocketFlags, SocketType,
};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use swrdma_ring::{Link, LINK_BYTES};
pub use swrdma_wired::userdir::{
    alloc_ids_in, ctx_sock_path, group_members, join_group, leave_group, listen, open_ids, publish, resolve, unpublish,
};
use swrdma_wired::userdir::{peer_process, PeerProc};

/// "SWRE": the hello of the rings whose records carry their own stamps
/// (swrdma-ring `Form`; "SWRD" was the format published by `head`).
const MAGIC: u32 = 0x5357_5245;

/// The first message each way on a new connection (8 bytes: magic and the
/// sender's context id, native byte order — both ends are on one machine).
#[derive(Clone, Copy, Default)]
pub struct Hello {
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

fn ctx_fds_path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("d{id}"))
}

/// Publishes the descriptor numbers of context `id`'s doorbell, directory
/// and access page (`d<id>`: three decimal numbers), so that a peer that
/// may reach our memory (`pidfd_getfd` needs what cross-memory attach
/// needs) can take them without our thread, when we do not answer its
/// hello at once (stopped).  Written under a temporary name, then renamed.
pub fn publish_fds(dir: &Path, id: u32, fds: [BorrowedFd<'_>; 3]) {
    use std::os::fd::AsRawFd;
    let tmp = dir.join(format!("e{id}"));
    let text = format!("{} {} {}\n", fds[0].as_raw_fd(), fds[1].as_raw_fd(), fds[2].as_raw_fd());
    let ok = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
    if ok.is_err() || std::fs::rename(&tmp, ctx_fds_path(dir, id)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Context `id` goes away: its descriptor file too.
pub fn unpublish_fds(dir: &Path, id: u32) {
    let _ = std::fs::remove_file(ctx_fds_path(dir, id));
}

/// Takes context `peer`'s doorbell, directory and access page from its
/// process (`pidfd`) with `pidfd_getfd`, by the numbers it published; the
/// doorbell must be an eventfd (the others are checked where they are
/// mapped).  None: no file, a refusal (no permission, kernel before 5.6),
/// or descriptors that are not what they should be.
fn take_fds(dir: &Path, peer: u32, pidfd: BorrowedFd<'_>) -> Option<(OwnedFd, DirectFds)> {
    use rustix::process::{pidfd_getfd, PidfdGetfdFlags};
    use std::io::Read;
    use std::os::fd::RawFd;
    let mut text = String::new();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(ctx_fds_path(dir, peer))
        .ok()?
        .take(64)
        .read_to_string(&mut text)
        .ok()?;
    let mut n = text
        .split_ascii_whitespace()
        .map(|w| w.parse::<RawFd>().ok().filter(|v| *v >= 0));
    let (a, b, c) = (n.next()??, n.next()??, n.next()??);
    let get = |fd| pidfd_getfd(pidfd, fd, PidfdGetfdFlags::empty()).ok();
    let (efd, dirfd, access) = (get(a)?, get(b)?, get(c)?);
    is_eventfd(efd.as_fd()).then_some((efd, (dirfd, access)))
}

/// Pidfd `p`'s process has exited (the pidfd is readable now; checked
/// again when an event is handled: its descriptor number may have been
/// reused since the event was reported).
pub fn exited(p: BorrowedFd<'_>) -> bool {
    let mut pfd = [PollFd::new(&p, PollFlags::IN)];
    poll(&mut pfd, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })) == Ok(1)
}

/// A pidfd of the live process at the other end of `fd`, if any.
fn peer_pidfd(fd: BorrowedFd<'_>) -> Option<OwnedFd> {
    match peer_process(fd) {
        PeerProc::Alive(p) => Some(p),
        _ => None,
    }
}

/// The peer of connected socket `fd` runs as our user.
fn peer_ok(fd: BorrowedFd<'_>) -> bool {
    socket_peercred(fd).is_ok_and(|c| c.uid == rustix::process::getuid())
}

/// A peer context's directory and its process's access page (direct.rs,
/// locks.rs): given together or not at all.
pub type DirectFds = (OwnedFd, OwnedFd);

/// Sends `h` with descriptors `fds` (at most 4) attached.
fn send_fds(fd: BorrowedFd<'_>, h: Hello, fds: &[BorrowedFd<'_>]) -> bool {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    if !cmsg.push(SendAncillaryMessage::ScmRights(fds)) {
        return false;
    }
    let b = h.to_bytes();
    // Never blocks (a fresh connection has room for 8 bytes, or the peer is
    // misbehaving) and never raises SIGPIPE.
    sendmsg(
        fd,
        &[IoSlice::new(&b)],
        &mut cmsg,
        SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
    ) == Ok(Hello::LEN)
}

/// How long a peer may take to say hello (its connection waits meanwhile,
/// off the progress path: see `Ctx`'s pending hellos).
pub const HELLO_DEADLINE_NS: u64 = 2_000_000_000;

/// The seals a link's memfd must carry before we map it: its size can
/// neither shrink (SIGBUS on our next ring access) nor grow, and no further
/// seal (such as F_SEAL_WRITE) can be added by the peer.
const LINK_SEALS: SealFlags = SealFlags::SHRINK.union(SealFlags::GROW).union(SealFlags::SEAL);

/// What waiting for a hello gave.
pub enum Got {
    Hello(Hello, Vec<OwnedFd>),
    /// Nothing yet (a non-blocking read found no data).
    Later,
    Refused,
}

/// One non-blocking `recvmsg` into `b`, with the descriptors that came with
/// it (at most 4 are taken; any received descriptor is owned, so closed if
/// the caller refuses it).
fn recv_with_fds(fd: BorrowedFd<'_>, b: &mut [u8]) -> (rustix::io::Result<rustix::net::RecvMsg>, Vec<OwnedFd>) {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let r = recvmsg(
        fd,
        &mut [IoSliceMut::new(b)],
        &mut cmsg,
        RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT,
    );
    let mut fds = Vec::new();
    for m in cmsg.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = m {
            fds.extend(it);
        }
    }
    (r, fds)
}

/// Receives a `Hello` with `want` descriptors, waiting at most
/// `wait_ms` (0: only what is there now).  Anything else is refused;
/// descriptors received with it are closed.
fn recv_fds(fd: BorrowedFd<'_>, want: std::ops::RangeInclusive<usize>, wait_ms: i64) -> Got {
    if wait_ms > 0 {
        let mut pfd = [PollFd::new(&fd, PollFlags::IN)];
        let t = Timespec {
            tv_sec: wait_ms / 1000,
            tv_nsec: (wait_ms % 1000) * 1_000_000,
        };
        match poll(&mut pfd, Some(&t)) {
            Ok(1) => {}
            Ok(0) => return Got::Later,
            _ => return Got::Refused,
        }
    }
    let mut b = [0u8; Hello::LEN];
    let (r, fds) = recv_with_fds(fd, &mut b);
    if r.as_ref().is_err_and(|e| *e == rustix::io::Errno::AGAIN) {
        return Got::Later;
    }
    let h = Hello::from_bytes(&b);
    if !r.is_ok_and(|r| r.bytes == Hello::LEN) || h.magic != MAGIC || !want.contains(&fds.len()) {
        return Got::Refused;
    }
    Got::Hello(h, fds)
}

pub use swrdma_wired::is_eventfd;

/// `fd` is a link's memory file as the protocol wants it: a regular file of
/// exactly `LINK_BYTES`, sealed against shrinking and growing (F_SEAL_SHRINK,
/// F_SEAL_GROW, F_SEAL_SEAL).  Only then is mapping it safe from SIGBUS.
pub fn is_link_memfd(fd: BorrowedFd<'_>) -> bool {
    let st_ok = fstat(fd).is_ok_and(|st| {
        FileType::from_raw_mode(st.st_mode) == FileType::RegularFile && st.st_size as u64 == LINK_BYTES as u64
    });
    st_ok && fcntl_get_seals(fd).is_ok_and(|s| s.contains(LINK_SEALS))
}

/// Initiator: connects to context `peer`, creates and shares the rings.
/// Returns the link and a pidfd of the peer's process (readable when it
/// has exited).  A socket no one listens on any more is removed.
pub fn connect(
    dir: &Path,
    my_id: u32,
    my_efd: BorrowedFd<'_>,
    my_direct: Option<(BorrowedFd<'_>, BorrowedFd<'_>)>,
    peer: u32,
) -> Option<(Link, OwnedFd, Option<DirectFds>)> {
    let path = ctx_sock_path(dir, peer);
    let addr = SocketAddrUnix::new(&path).ok()?;
    let fd = socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None).ok()?;
    match connect_socket(&fd, &addr) {
        Ok(()) => {}
        Err(rustix::io::Errno::CONNREFUSED) => {
            // Its owner is gone (ids are never reused): a stale file.
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Err(_) => return None,
    }
    if !peer_ok(fd.as_fd()) {
        return None;
    }
    let pidfd = match peer_process(fd.as_fd()) {
        PeerProc::Alive(p) => p,
        PeerProc::Dead => {
            // The context's process is gone (a child it forked keeps the
            // socket open): no one will ever answer here.
            let _ = std::fs::remove_file(&path);
            return None;
        }
        PeerProc::Unknown => return None,
    };
    let memfd = memfd_create(c"swrdma-link", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING).ok()?;
    ftruncate(&memfd, LINK_BYTES as u64).ok()?;
    if !swrdma_ring::seed_link(memfd.as_fd()) {
        return None;
    }
    fcntl_add_seals(&memfd, LINK_SEALS).ok()?;
    let mut mine = vec![memfd.as_fd(), my_efd];
    mine.extend(my_direct.map(|(d, a)| [d, a]).into_iter().flatten());
    if !send_fds(fd.as_fd(), Hello::new(my_id), &mine) {
        return None;
    }
    let (h, fds) = match recv_fds(fd.as_fd(), 1..=3, 50) {
        Got::Hello(h, fds) => (h, fds),
        Got::Refused => return None,
        Got::Later => {
            // The target's thread does not answer at once (stopped, busy):
            // take its descriptors ourselves when the kernel lets us; its
            // answer, when it comes, is read and dropped (`drain`).
            if let Some((peer_efd, direct)) = take_fds(dir, peer, pidfd.as_fd()) {
                // SAFETY: as below (`memfd` is ours, sealed).
                let link = unsafe { Link::new(peer, true, fd, memfd.as_fd(), peer_efd) }?;
                return Some((link, pidfd, Some(direct)));
            }
            let Got::Hello(h, fds) = recv_fds(fd.as_fd(), 1..=3, 4950) else {
                return None;
            };
            (h, fds)
        }
    };
    if h.ctx_id != peer {
        return None;
    }
    let mut fds = fds.into_iter();
    let (peer_efd, peer_direct) = (fds.next()?, fds.next().zip(fds.next()));
    if !is_eventfd(peer_efd.as_fd()) {
        return None;
    }
    // SAFETY: `memfd` is the memory file created, sized to `LINK_BYTES` and
    // sealed against shrinking and growing just above (no one can undo the
    // seals); it is shared only with the peer, over this connection, to
    // hold this link's two rings.
    let link = unsafe { Link::new(peer, true, fd, memfd.as_fd(), peer_efd) }?;
    Some((link, pidfd, peer_direct))
}

/// Target: accepts one pending connection on `lfd` (non-blocking).  None:
/// nothing is pending; Some(None): a connection was refused; Some(Some(fd)):
/// a connection from a peer of our uid, whose hello is for `hello` to take.
pub fn accept(lfd: BorrowedFd<'_>) -> Option<Option<OwnedFd>> {
    let fd = accept_with(lfd, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK).ok()?;
    if !peer_ok(fd.as_fd()) {
        return Some(None);
    }
    Some(Some(fd))
}

/// What the target's side of a handshake gave.
pub enum Handshake {
    /// A link, with a pidfd of the peer's process and what it gave for
    /// direct accesses.
    Link(Link, OwnedFd, Option<DirectFds>),
    /// The hello has not arrived yet (try again when the socket is readable,
    /// until the deadline).
    Later(OwnedFd),
    Refused,
}

/// Target: takes the hello on accepted connection `fd` if it is there
/// (never waits), checks what came with it and answers.
pub fn hello(
    fd: OwnedFd,
    my_id: u32,
    my_efd: BorrowedFd<'_>,
    my_direct: Option<(BorrowedFd<'_>, BorrowedFd<'_>)>,
) -> Handshake {
    // (The directory and access page are optional: a peer without them
    // gets no direct accesses, see direct.rs.)
    let (h, fds) = match recv_fds(fd.as_fd(), 2..=4, 0) {
        Got::Hello(h, fds) => (h, fds),
        Got::Later => return Handshake::Later(fd),
        Got::Refused => return Handshake::Refused,
    };
    let mut fds = fds.into_iter();
    let (Some(memfd), Some(peer_efd), peer_direct) = (fds.next(), fds.next(), fds.next().zip(fds.next())) else {
        return Handshake::Refused;
    };
    // The shared file must be exactly a link's size and sealed so (no
    // surprises later), the doorbell an eventfd.
    if !is_link_memfd(memfd.as_fd()) || !is_eventfd(peer_efd.as_fd()) {
        return Handshake::Refused;
    }
    // The peer's process, watched for its death; already dead: refused.
    let Some(pidfd) = peer_pidfd(fd.as_fd()) else {
        return Handshake::Refused;
    };
    let mut mine = vec![my_efd];
    mine.extend(my_direct.map(|(d, a)| [d, a]).into_iter().flatten());
    if !send_fds(fd.as_fd(), Hello::new(my_id), &mine) {
        return Handshake::Refused;
    }
    // SAFETY: `memfd` came from a peer of our own uid (SO_PEERCRED), is a
    // regular file of exactly `LINK_BYTES` and sealed against shrinking and
    // growing (checked above, F_SEAL_SEAL: no one can undo that), so every
    // page of the mapping stays backed; by the protocol it holds this
    // link's rings and nothing else.
    match unsafe { Link::new(h.ctx_id, false, fd, memfd.as_fd(), peer_efd) } {
        Some(l) => Handshake::Link(l, pidfd, peer_direct),
        None => Handshake::Refused,
    }
}

/// Reads and drops whatever is on a link's socket (nothing is sent there
/// after the handshake; descriptors that came with it are closed).  false:
/// the peer closed its end (or the socket failed).
pub fn drain(sock: BorrowedFd<'_>) -> bool {
    let mut b = [0u8; 64];
    for _ in 0..64 {
        match recv_with_fds(sock, &mut b).0 {
            Err(rustix::io::Errno::AGAIN) => return true,
            Err(_) => return false,
            Ok(r) if r.bytes == 0 => return false,
            Ok(_) => {}
        }
    }
    true
}
