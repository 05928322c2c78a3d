//! Endpoints: per-user id allocation, the per-context listening socket,
//! connecting links (memfd + eventfd passed with SCM_RIGHTS, peers checked
//! with SO_PEERCRED), and QPN -> context resolution.
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
//! still hold the socket); [`reclaim`] removes such sockets and the QPN
//! links that point to no socket.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fs::{fcntl_add_seals, fcntl_get_seals, fstat, ftruncate, memfd_create, FileType, MemfdFlags, SealFlags};
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

/// Opens (creating it 0600 if missing) file `name` of the private
/// directory for reading and writing: never through a symlink
/// (`O_NOFOLLOW`), close-on-exec, and only a regular file of ours.
pub fn open_private_file(dir: &Path, name: &str) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(dir.join(name))?;
    let md = f.metadata()?;
    if !md.file_type().is_file() || md.uid() != rustix::process::getuid().as_raw() {
        return Err(std::io::Error::from_raw_os_error(libc::EPERM));
    }
    Ok(f)
}

/// Allocates `n` consecutive ids (QPNs, SRQNs, context ids) unique for the
/// user, from the counter file in the private directory (flock'ed).
pub fn alloc_ids(dir: &Path, n: u32) -> u32 {
    match open_private_file(dir, "ids") {
        Ok(f) => alloc_ids_in(&f, n),
        Err(e) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!(
                    "libibverbs: swrdma: cannot use the id counter {} ({e}): ids may collide",
                    dir.join("ids").display()
                )
            });
            // Fall back to something unlikely to collide with other
            // processes (and never with this one's own ids).
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let base = ((std::process::id() & 0xffff) << 8) | 0x11;
            let off = NEXT.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            base.wrapping_add(off)
        }
    }
}

/// The id counter file of the private directory, to be kept open by a
/// context for [`alloc_ids_in`].
pub fn open_ids(dir: &Path) -> std::io::Result<std::fs::File> {
    open_private_file(dir, "ids")
}

/// [`alloc_ids`] from the counter file `f` (of [`open_ids`]).  `flock`'s
/// lock belongs to the open file: threads (and a forked child) sharing
/// `f` must not call this at the same time.
pub fn alloc_ids_in(f: &std::fs::File, n: u32) -> u32 {
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
pub fn qpn_path(dir: &Path, qpn: u32) -> PathBuf {
    dir.join(format!("q{qpn}"))
}

/// Publishes "QPN/SRQN `num` lives in context `ctx`" (a symlink).
pub fn publish(dir: &Path, num: u32, ctx: u32) {
    let p = qpn_path(dir, num);
    // A stale link of the number (a killed process's) is replaced; the
    // usual case, no link, costs one call.
    if std::os::unix::fs::symlink(format!("c{ctx}"), &p).is_err() {
        let _ = std::fs::remove_file(&p);
        let _ = std::os::unix::fs::symlink(format!("c{ctx}"), &p);
    }
}
pub fn unpublish(dir: &Path, num: u32) {
    let _ = std::fs::remove_file(qpn_path(dir, num));
}
/// The file that says "QP `qpn`, of context `ctx` (its target, as a QPN
/// link's), is attached to multicast group `mgid`".
pub fn group_path(dir: &Path, mgid: &[u8; 16], qpn: u32) -> PathBuf {
    let hex: String = mgid.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("g{hex}-{qpn}"))
}
pub fn join_group(dir: &Path, mgid: &[u8; 16], qpn: u32, ctx: u32) {
    let p = group_path(dir, mgid, qpn);
    let _ = std::fs::remove_file(&p);
    let _ = std::os::unix::fs::symlink(format!("c{ctx}"), &p);
}
pub fn leave_group(dir: &Path, mgid: &[u8; 16], qpn: u32) {
    let _ = std::fs::remove_file(group_path(dir, mgid, qpn));
}
/// The QPNs attached to group `mgid` (by any process of the user).
pub fn group_members(dir: &Path, mgid: &[u8; 16]) -> Vec<u32> {
    let hex: String = mgid.iter().map(|b| format!("{b:02x}")).collect();
    let prefix = format!("g{hex}-");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix(&prefix)?.parse().ok())
        .collect()
}

/// The context id a QPN link's target names: exactly `c<digits>`, a
/// socket of the same directory (anything else, such as a path leading
/// out of it, is refused).
fn link_target(t: &Path) -> Option<u32> {
    let s = t.to_str()?.strip_prefix('c')?;
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub fn resolve(dir: &Path, num: u32) -> Option<u32> {
    link_target(&std::fs::read_link(qpn_path(dir, num)).ok()?)
}

/// What a connection attempt to a context's socket says about it.
enum Probe {
    /// Someone listens (or may: anything but a refusal).
    Live,
    /// No one listens on the socket: its owner is gone.
    Dead,
}

/// Knocks at socket `p` without waiting (a non-blocking connect, closed
/// at once: the listener drops the connection when no hello comes); a
/// connection is made only to a socket of our user's private directory.
fn probe(p: &Path) -> Probe {
    let Ok(addr) = SocketAddrUnix::new(p) else {
        return Probe::Live;
    };
    let Ok(fd) = socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    ) else {
        return Probe::Live;
    };
    match connect_socket(&fd, &addr) {
        Err(rustix::io::Errno::CONNREFUSED) => Probe::Dead,
        // Someone listens: is the context's process (the listener's
        // creator) still there?  A child it forked may hold the socket.
        Ok(()) => match peer_process(fd.as_fd()) {
            PeerProc::Dead => Probe::Dead,
            _ => Probe::Live,
        },
        _ => Probe::Live,
    }
}

/// A name of the directory of the form `<prefix><digits>`: the number.
fn numbered(name: &std::ffi::OsStr, prefix: char) -> Option<u32> {
    let s = name.to_str()?.strip_prefix(prefix)?;
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A `t<id>` socket (bound, not yet renamed) older than this whose
/// listener refuses is a leftover of a process killed while opening.
const TEMP_GRACE_SECS: i64 = 60;

/// Removes the endpoints of processes that ended without closing (killed):
/// context sockets `c<id>` on which no one listens (a connection is
/// refused) or whose listening process has exited (a child it forked may
/// keep the socket open), leftover `t<id>` sockets, and QPN links `q<n>` whose context
/// socket is gone.  A live context is never removed: it is named `c<id>`
/// only once it listens, and ids are never reused, so a refusal at `c<id>`
/// is final.
pub fn reclaim(dir: &Path) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut links = Vec::new();
    let mut wires = Vec::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    for e in rd.flatten() {
        let name = e.file_name();
        let Ok(ft) = e.file_type() else { continue };
        if numbered(&name, 'q').is_some() && ft.is_symlink() {
            links.push(e.path());
        } else if numbered(&name, 'c').is_some() && ft.is_socket() {
            if let Probe::Dead = probe(&e.path()) {
                let _ = std::fs::remove_file(e.path());
            }
        } else if (numbered(&name, 'w').is_some() && ft.is_socket()) || (numbered(&name, 'd').is_some() && ft.is_file())
        {
            wires.push(e.path());
        } else if numbered(&name, 't').is_some() && ft.is_socket() {
            let old = e.metadata().is_ok_and(|m| now - m.mtime() > TEMP_GRACE_SECS);
            if old {
                if let Probe::Dead = probe(&e.path()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    // A wire context's forwarding socket `w<id>` (wired/src/wire/sock.rs) goes with
    // its context: made after `c<id>` listens, left behind only by a
    // killed process whose `c<id>` is reclaimed above.
    // So does its descriptor file `d<id>`.
    for w in wires {
        let id = w
            .file_name()
            .and_then(|n| numbered(n, 'w').or_else(|| numbered(n, 'd')));
        if id.is_some_and(|id| {
            std::fs::symlink_metadata(ctx_sock_path(dir, id)).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        }) {
            let _ = std::fs::remove_file(&w);
        }
    }
    for q in links {
        let to = std::fs::read_link(&q).ok();
        let target = to.as_deref().and_then(link_target);
        let gone = match target {
            Some(id) => std::fs::symlink_metadata(ctx_sock_path(dir, id))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound),
            None => to.is_some(),
        };
        if gone {
            let _ = std::fs::remove_file(&q);
        }
    }
}

/// The listening socket of context `id` (non-blocking), bound to its path,
/// or the errno.  It is bound as `t<id>` and renamed to `c<id>` once it
/// listens (see [`reclaim`]), never over an existing `c<id>` (EEXIST); on
/// failure nothing is left behind.  Stale endpoints of killed processes are
/// reclaimed first.
pub fn listen(dir: &Path, id: u32) -> Result<OwnedFd, i32> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    reclaim(dir);
    let p = ctx_sock_path(dir, id);
    let tmp = dir.join(format!("t{id}"));
    let _ = std::fs::remove_file(&tmp);
    let addr = SocketAddrUnix::new(&tmp).map_err(|e| e.raw_os_error())?;
    let fd = socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .map_err(|e| e.raw_os_error())?;
    bind(&fd, &addr).map_err(|e| e.raw_os_error())?;
    let r = listen_socket(&fd, 128).and_then(|()| match renameat_with(CWD, &tmp, CWD, &p, RenameFlags::NOREPLACE) {
        // A file system without RENAME_NOREPLACE: ids are unique anyway.
        Err(rustix::io::Errno::INVAL) => rustix::fs::rename(&tmp, &p),
        r => r,
    });
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.raw_os_error());
    }
    Ok(fd)
}

/// The process at the other end of a connected socket.
enum PeerProc {
    /// Alive, with a pidfd of it (readable once it exits).
    Alive(OwnedFd),
    /// It has exited (its socket may live on in a child it forked).
    Dead,
    /// Not known (no descriptor left, ...).
    Unknown,
}

/// The process at the other end of connected socket `fd` (the one that
/// connected, or the one that listens).  `SO_PEERPIDFD` names exactly that
/// process; without it (kernels before 6.5) the `SO_PEERCRED` pid is opened
/// at once, while the connection is new (an exited process is seen either
/// way: a pid that is gone or reused means its first owner has exited).
fn peer_process(fd: BorrowedFd<'_>) -> PeerProc {
    use rustix::io::Errno;
    use std::os::fd::{AsRawFd, FromRawFd};
    let mut raw: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes (one int) into `raw`,
    // a live c_int, and its length into `len`; `fd` is a live socket.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERPIDFD,
            &mut raw as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    let err = Errno::from_io_error(&std::io::Error::last_os_error());
    let pidfd = if r == 0 && raw >= 0 {
        // SAFETY: the kernel just installed `raw` for us; nothing else owns it.
        unsafe { OwnedFd::from_raw_fd(raw) }
    } else if r == 0 {
        return PeerProc::Unknown;
    } else if err == Some(Errno::SRCH) {
        return PeerProc::Dead;
    } else if err != Some(Errno::NOPROTOOPT) {
        return PeerProc::Unknown;
    } else {
        let Ok(c) = socket_peercred(fd) else {
            return PeerProc::Unknown;
        };
        match rustix::process::pidfd_open(c.pid, rustix::process::PidfdFlags::empty()) {
            Ok(p) => p,
            Err(Errno::SRCH) => return PeerProc::Dead,
            Err(_) => return PeerProc::Unknown,
        }
    };
    let _ = rustix::io::fcntl_setfd(&pidfd, rustix::io::FdFlags::CLOEXEC);
    // Readable: the process has exited.
    let mut pfd = [PollFd::new(&pidfd, PollFlags::IN)];
    match poll(&mut pfd, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })) {
        Ok(0) => PeerProc::Alive(pidfd),
        Ok(_) => PeerProc::Dead,
        Err(_) => PeerProc::Unknown,
    }
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

/// `fd` is an eventfd (what a peer passes as its doorbell): a pipe or a
/// socket there would block us when full or kill us with SIGPIPE.  Checked
/// by what the kernel names the descriptor's file (anon inodes carry no
/// type in `st_mode`).  On success the descriptor is made non-blocking (a
/// write to an eventfd whose counter a peer drove to its maximum then
/// fails instead of blocking).
pub fn is_eventfd(fd: BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    match std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())) {
        Ok(l) if l.as_os_str() == "anon_inode:[eventfd]" => {}
        Ok(_) => return false,
        Err(_) => {
            // No procfs: at least no pipe, socket, device or directory.
            let ty = fstat(fd).map(|st| FileType::from_raw_mode(st.st_mode));
            if ty.is_err()
                || ty.is_ok_and(|t| {
                    matches!(
                        t,
                        FileType::Fifo
                            | FileType::Socket
                            | FileType::CharacterDevice
                            | FileType::BlockDevice
                            | FileType::Directory
                    )
                })
            {
                return false;
            }
        }
    }
    rustix::io::ioctl_fionbio(fd, true).is_ok()
}

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
