//! The user's private directory of wire and same-machine endpoints, shared
//! by the provider's contexts and the agent (each one a context of the
//! user there): the id counter `ids` (QPNs, SRQNs, context ids unique for
//! the user), the context sockets `c<id>` (bound as `t<id>`, renamed once
//! they listen), the QPN links `q<n>` -> `c<id>` (which context holds QP
//! or SRQ `n`), and the multicast membership files `g<mgid>-<qpn>`.
//! [`reclaim`] removes what processes killed without closing left behind.
//!
//! Files of the directory are opened with `O_NOFOLLOW`, and a QPN link is
//! followed only to a `c<id>` of the same directory.  Every descriptor is
//! an `OwnedFd`, opened close-on-exec.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::net::{
    bind, connect as connect_socket, listen as listen_socket, socket_with, sockopt::socket_peercred, AddressFamily,
    SocketAddrUnix, SocketFlags, SocketType,
};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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

/// The id counter file of the private directory, to be kept open by a
/// context for [`alloc_ids_in`]; the error opening it (no descriptor
/// left: EMFILE) when it cannot be used — never an id that may be another
/// process's.
pub fn open_ids(dir: &Path) -> std::io::Result<std::fs::File> {
    open_private_file(dir, "ids")
}

/// Allocates `n` consecutive ids (QPNs, SRQNs, context ids) unique for the
/// user from the counter file `f` (of [`open_ids`], flock'ed).  `flock`'s
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
pub enum PeerProc {
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
pub fn peer_process(fd: BorrowedFd<'_>) -> PeerProc {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{DirBuilderExt, FileTypeExt};

    /// A fresh private directory (0700) under the temporary directory,
    /// removed with everything in it when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("swrdma-userdir-{}-{n}-{tag}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::DirBuilder::new().mode(0o700).create(&p).unwrap();
            TempDir(p)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn exists(p: &Path) -> bool {
        std::fs::symlink_metadata(p).is_ok()
    }

    /// A socket bound at `p` whose listener is gone at once (what a process
    /// killed while opening leaves behind).
    fn dead_socket(p: &Path) {
        let fd = socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None).unwrap();
        bind(&fd, &SocketAddrUnix::new(p).unwrap()).unwrap();
        listen_socket(&fd, 1).unwrap();
    }

    #[test]
    fn userdir_alloc_ids_increasing_ranges() {
        let d = TempDir::new("ids");
        // (Each call with a file of its own, as two contexts.)
        let alloc_ids = |n| alloc_ids_in(&open_ids(&d.0).unwrap(), n);
        assert_eq!(alloc_ids(4), 0x100);
        assert_eq!(alloc_ids(2), 0x104);
        let f = open_ids(&d.0).unwrap();
        assert_eq!(alloc_ids_in(&f, 1), 0x106);
        assert_eq!(alloc_ids(3), 0x107);
        assert_eq!(alloc_ids_in(&f, 1), 0x10a);
        // The counter: the next free id, little-endian.
        assert_eq!(std::fs::read(d.0.join("ids")).unwrap(), 0x10bu32.to_le_bytes());
        // A counter outside the ids' range starts over at 0x100.
        std::fs::write(d.0.join("ids"), 0xff_0000u32.to_le_bytes()).unwrap();
        assert_eq!(alloc_ids(1), 0x100);
        assert_eq!(alloc_ids(1), 0x101);
        // A counter that is not a regular file of ours: no id at all.
        std::fs::remove_file(d.0.join("ids")).unwrap();
        std::fs::create_dir(d.0.join("ids")).unwrap();
        assert!(open_ids(&d.0).is_err());
    }

    #[test]
    fn userdir_private_file_never_through_a_symlink() {
        let d = TempDir::new("nofollow");
        std::fs::write(d.0.join("other"), b"").unwrap();
        std::os::unix::fs::symlink("other", d.0.join("ids")).unwrap();
        let e = open_ids(&d.0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
        // A directory is no counter either.
        std::fs::create_dir(d.0.join("sub")).unwrap();
        assert!(open_private_file(&d.0, "sub").is_err());
        // A missing file is created, 0600.
        use std::os::unix::fs::PermissionsExt;
        let f = open_private_file(&d.0, "new").unwrap();
        assert_eq!(f.metadata().unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn userdir_publish_resolve_round_trip() {
        let d = TempDir::new("publish");
        assert_eq!(resolve(&d.0, 0x200), None);
        publish(&d.0, 0x200, 0x101);
        assert_eq!(qpn_path(&d.0, 0x200), d.0.join("q512"));
        assert_eq!(std::fs::read_link(d.0.join("q512")).unwrap(), Path::new("c257"));
        assert_eq!(resolve(&d.0, 0x200), Some(0x101));
        assert_eq!(resolve(&d.0, 0x201), None);
        // A stale link of the number is replaced.
        publish(&d.0, 0x200, 0x102);
        assert_eq!(resolve(&d.0, 0x200), Some(0x102));
    }

    #[test]
    fn userdir_resolve_refuses_other_targets() {
        let d = TempDir::new("targets");
        for (n, t) in [
            (1, "../x"),
            (2, "cabc"),
            (3, "c"),
            (4, "c12/x"),
            (5, "d12"),
            (6, "c-1"),
            (7, "/tmp/c1"),
            (9, "c+12"),
        ] {
            std::os::unix::fs::symlink(t, qpn_path(&d.0, n)).unwrap();
            assert_eq!(resolve(&d.0, n), None, "{t}");
        }
        std::os::unix::fs::symlink("c42", qpn_path(&d.0, 8)).unwrap();
        assert_eq!(resolve(&d.0, 8), Some(42));
    }

    #[test]
    fn userdir_unpublish_removes() {
        let d = TempDir::new("unpublish");
        publish(&d.0, 0x300, 0x101);
        publish(&d.0, 0x301, 0x101);
        unpublish(&d.0, 0x300);
        assert!(!exists(&qpn_path(&d.0, 0x300)));
        assert_eq!(resolve(&d.0, 0x300), None);
        assert_eq!(resolve(&d.0, 0x301), Some(0x101));
        // Nothing to remove: nothing happens.
        unpublish(&d.0, 0x300);
    }

    #[test]
    fn userdir_listen_and_reclaim() {
        let d = TempDir::new("listen");
        // Leftovers of another context that is gone (no `c999`).
        std::fs::write(d.0.join("d999"), b"1 2 3\n").unwrap();
        publish(&d.0, 0x500, 999);
        std::os::unix::fs::symlink("../x", d.0.join("q1281")).unwrap();
        let fd = listen(&d.0, 0x101).unwrap();
        let c = ctx_sock_path(&d.0, 0x101);
        assert_eq!(c, d.0.join("c257"));
        assert!(std::fs::symlink_metadata(&c).unwrap().file_type().is_socket());
        assert!(!exists(&d.0.join("t257")));
        // `listen` reclaimed first.
        assert!(!exists(&d.0.join("d999")));
        assert!(!exists(&qpn_path(&d.0, 0x500)));
        assert!(!exists(&d.0.join("q1281")));

        publish(&d.0, 0x200, 0x101);
        std::fs::write(d.0.join("d257"), b"1 2 3\n").unwrap();
        reclaim(&d.0);
        reclaim(&d.0);
        assert!(exists(&c));
        assert!(exists(&d.0.join("d257")));
        assert_eq!(resolve(&d.0, 0x200), Some(0x101));
        // Never over a live `c<id>`, and nothing left behind.
        assert_eq!(listen(&d.0, 0x101).err(), Some(libc::EEXIST));
        assert!(exists(&c));
        assert!(!exists(&d.0.join("t257")));

        drop(fd);
        reclaim(&d.0);
        assert!(!exists(&c));
        assert!(!exists(&qpn_path(&d.0, 0x200)));
        assert!(!exists(&d.0.join("d257")));
        assert_eq!(resolve(&d.0, 0x200), None);
        // The id is free again for nobody: a new context takes another.
        let fd2 = listen(&d.0, 0x102).unwrap();
        assert!(exists(&d.0.join("c258")));
        drop(fd2);
    }

    #[test]
    fn userdir_reclaim_old_temporary_sockets() {
        use rustix::fs::{utimensat, AtFlags, Timestamps, CWD};
        let d = TempDir::new("temp");
        let (old, new) = (d.0.join("t300"), d.0.join("t301"));
        dead_socket(&old);
        dead_socket(&new);
        let past = rustix::fs::Timespec {
            tv_sec: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64
                - 2 * TEMP_GRACE_SECS,
            tv_nsec: 0,
        };
        let ts = Timestamps {
            last_access: past,
            last_modification: past,
        };
        utimensat(CWD, &old, &ts, AtFlags::SYMLINK_NOFOLLOW).unwrap();
        reclaim(&d.0);
        assert!(!exists(&old));
        // Within the grace (a context still opening): kept.
        assert!(exists(&new));
    }

    #[test]
    fn userdir_group_join_members_leave() {
        let d = TempDir::new("groups");
        let mut g = [0u8; 16];
        g[0] = 0xff;
        g[1] = 0x0e;
        g[15] = 0x01;
        let mut h = g;
        h[15] = 0x02;
        assert!(group_members(&d.0, &g).is_empty());
        join_group(&d.0, &g, 0x200, 0x101);
        join_group(&d.0, &g, 0x201, 0x101);
        join_group(&d.0, &h, 0x202, 0x102);
        assert_eq!(
            group_path(&d.0, &g, 0x200),
            d.0.join("gff0e0000000000000000000000000001-512")
        );
        assert_eq!(
            std::fs::read_link(group_path(&d.0, &g, 0x200)).unwrap(),
            Path::new("c257")
        );
        let mut m = group_members(&d.0, &g);
        m.sort_unstable();
        assert_eq!(m, [0x200, 0x201]);
        assert_eq!(group_members(&d.0, &h), [0x202]);
        // Joining again replaces the link.
        join_group(&d.0, &g, 0x200, 0x103);
        assert_eq!(
            std::fs::read_link(group_path(&d.0, &g, 0x200)).unwrap(),
            Path::new("c259")
        );
        leave_group(&d.0, &g, 0x200);
        assert_eq!(group_members(&d.0, &g), [0x201]);
        leave_group(&d.0, &g, 0x201);
        assert!(group_members(&d.0, &g).is_empty());
        assert_eq!(group_members(&d.0, &h), [0x202]);
    }
}
