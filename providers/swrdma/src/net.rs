//! Endpoints: per-user id allocation, the per-context listening socket,
//! connecting links (memfd + eventfd passed with SCM_RIGHTS, peers checked
//! with SO_PEERCRED), and QPN -> context resolution.

use std::ffi::CString;
use std::os::raw::{c_int, c_void};
use std::path::{Path, PathBuf};
use swrdma_ring::{Link, LINK_BYTES};

const MAGIC: u32 = 0x5357_5244; // "SWRD"

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Hello {
    magic: u32,
    ctx_id: u32,
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// Allocates `n` consecutive ids (QPNs, SRQNs, context ids) unique for the
/// user, from the counter file in the private directory (flock'ed).
pub fn alloc_ids(dir: &Path, n: u32) -> u32 {
    unsafe {
        let p = cpath(&dir.join("ids"));
        let fd = libc::open(p.as_ptr(), libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC, 0o600);
        if fd < 0 {
            // Fall back to something unlikely to collide.
            return ((libc::getpid() as u32 & 0xffff) << 8) | 0x11;
        }
        libc::flock(fd, libc::LOCK_EX);
        let mut buf = [0u8; 4];
        let r = libc::pread(fd, buf.as_mut_ptr() as *mut c_void, 4, 0);
        let mut v = if r == 4 { u32::from_le_bytes(buf) } else { 0 };
        if !(0x100..0xff_0000).contains(&v) {
            v = 0x100;
        }
        let next = v + n;
        libc::pwrite(fd, next.to_le_bytes().as_ptr() as *const c_void, 4, 0);
        libc::flock(fd, libc::LOCK_UN);
        libc::close(fd);
        v
    }
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

unsafe fn sockaddr(path: &Path) -> Option<(libc::sockaddr_un, libc::socklen_t)> {
    let mut a: libc::sockaddr_un = std::mem::zeroed();
    a.sun_family = libc::AF_UNIX as u16;
    let b = path.as_os_str().as_encoded_bytes();
    if b.len() >= a.sun_path.len() {
        return None;
    }
    for (i, c) in b.iter().enumerate() {
        a.sun_path[i] = *c as i8;
    }
    Some((
        a,
        (std::mem::size_of::<libc::sa_family_t>() + b.len() + 1) as libc::socklen_t,
    ))
}

pub fn listen(dir: &Path, id: u32) -> c_int {
    unsafe {
        let p = ctx_sock_path(dir, id);
        let _ = std::fs::remove_file(&p);
        let Some((a, l)) = sockaddr(&p) else { return -1 };
        let fd = libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        );
        if fd < 0 {
            return -1;
        }
        if libc::bind(fd, &a as *const _ as *const libc::sockaddr, l) != 0 || libc::listen(fd, 128) != 0 {
            libc::close(fd);
            return -1;
        }
        fd
    }
}

fn peer_ok(fd: c_int) -> bool {
    unsafe {
        let mut cred: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut _ as *mut c_void,
            &mut len,
        ) == 0
            && cred.uid == libc::getuid()
    }
}

unsafe fn send_fds(fd: c_int, h: &Hello, fds: &[c_int]) -> bool {
    let mut iov = libc::iovec {
        iov_base: h as *const _ as *mut c_void,
        iov_len: std::mem::size_of::<Hello>(),
    };
    let mut cbuf = [0u64; 8];
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut c_void;
    msg.msg_controllen = libc::CMSG_SPACE((fds.len() * 4) as u32) as usize;
    let c = libc::CMSG_FIRSTHDR(&msg);
    (*c).cmsg_level = libc::SOL_SOCKET;
    (*c).cmsg_type = libc::SCM_RIGHTS;
    (*c).cmsg_len = libc::CMSG_LEN((fds.len() * 4) as u32) as usize;
    std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c) as *mut c_int, fds.len());
    libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL) == std::mem::size_of::<Hello>() as isize
}

unsafe fn recv_fds(fd: c_int, want: usize) -> Option<(Hello, Vec<c_int>)> {
    let mut h = Hello::default();
    let mut iov = libc::iovec {
        iov_base: &mut h as *mut _ as *mut c_void,
        iov_len: std::mem::size_of::<Hello>(),
    };
    let mut cbuf = [0u64; 8];
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr() as *mut c_void;
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    if libc::poll(&mut pfd, 1, 5000) != 1 {
        return None;
    }
    let n = libc::recvmsg(fd, &mut msg, libc::MSG_CMSG_CLOEXEC);
    let mut fds = Vec::new();
    let mut c = libc::CMSG_FIRSTHDR(&msg);
    while !c.is_null() {
        if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
            let cnt = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / 4;
            for i in 0..cnt {
                fds.push(*(libc::CMSG_DATA(c) as *const c_int).add(i));
            }
        }
        c = libc::CMSG_NXTHDR(&msg, c);
    }
    if n != std::mem::size_of::<Hello>() as isize || h.magic != MAGIC || fds.len() != want {
        for f in fds {
            libc::close(f);
        }
        return None;
    }
    Some((h, fds))
}

/// Initiator: connects to context `peer`, creates and shares the rings.
pub fn connect(dir: &Path, my_id: u32, my_efd: c_int, peer: u32) -> Option<Link> {
    unsafe {
        let (a, l) = sockaddr(&ctx_sock_path(dir, peer))?;
        let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        if libc::connect(fd, &a as *const _ as *const libc::sockaddr, l) != 0 || !peer_ok(fd) {
            libc::close(fd);
            return None;
        }
        let memfd = libc::memfd_create(c"swrdma-link".as_ptr(), libc::MFD_CLOEXEC);
        if memfd < 0 || libc::ftruncate(memfd, LINK_BYTES as i64) != 0 {
            libc::close(fd);
            if memfd >= 0 {
                libc::close(memfd);
            }
            return None;
        }
        let ok = send_fds(
            fd,
            &Hello {
                magic: MAGIC,
                ctx_id: my_id,
            },
            &[memfd, my_efd],
        );
        let reply = if ok { recv_fds(fd, 1) } else { None };
        let Some((h, fds)) = reply else {
            libc::close(fd);
            libc::close(memfd);
            return None;
        };
        if h.ctx_id != peer {
            libc::close(fd);
            libc::close(memfd);
            libc::close(fds[0]);
            return None;
        }
        let link = Link::new(peer, true, fd, memfd, fds[0]);
        libc::close(memfd);
        if link.is_none() {
            libc::close(fd);
            libc::close(fds[0]);
        }
        link
    }
}

/// Target: accepts one pending connection on `lfd`.
pub fn accept(lfd: c_int, my_id: u32, my_efd: c_int) -> Option<Option<Link>> {
    unsafe {
        let fd = libc::accept4(lfd, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC);
        if fd < 0 {
            return None; // nothing pending
        }
        if !peer_ok(fd) {
            libc::close(fd);
            return Some(None);
        }
        let Some((h, fds)) = recv_fds(fd, 2) else {
            libc::close(fd);
            return Some(None);
        };
        let (memfd, peer_efd) = (fds[0], fds[1]);
        // The shared file must be exactly a link's size (no surprises).
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(memfd, &mut st) != 0
            || st.st_size as usize != LINK_BYTES
            || !send_fds(
                fd,
                &Hello {
                    magic: MAGIC,
                    ctx_id: my_id,
                },
                &[my_efd],
            )
        {
            libc::close(fd);
            libc::close(memfd);
            libc::close(peer_efd);
            return Some(None);
        }
        let link = Link::new(h.ctx_id, false, fd, memfd, peer_efd);
        libc::close(memfd);
        if link.is_none() {
            libc::close(fd);
            libc::close(peer_efd);
        }
        Some(link)
    }
}
