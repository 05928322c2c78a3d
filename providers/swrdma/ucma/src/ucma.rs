//! The character device itself: channels (one per open of
//! `/dev/infiniband/rdma_cm`, an eventfd the application may poll: readable
//! while events are queued), and each `write()` command read from the
//! caller's memory, checked as the kernel's `ucma_write` and its handlers
//! check it, answered by the model and written back to the response
//! pointer the command names.  Memory is read and written with
//! `process_vm_readv`/`writev` on ourselves, so a bad pointer is `EFAULT`,
//! as from the kernel, not a crash.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Mutex, MutexGuard, OnceLock};

use swrdma_cm::cma::{self, Addr, ChanId, Cma};

use crate::abi::{self, cmd, size, u16_at, u32_at, u64_at, SockAddr};
use crate::host::SoftHost;

pub struct Chan {
    pub id: ChanId,
    /// The eventfd holds 1 while the queue is not empty.
    pub signalled: bool,
}

pub struct Model {
    pub cma: Cma<SoftHost>,
    pub chans: HashMap<RawFd, Chan>,
    /// Ids handed to the kernel's rdma_cm (its own devices).
    pub kernel: crate::kernel::Kernel,
    next_chan: ChanId,
}

static MODEL: OnceLock<Mutex<Model>> = OnceLock::new();

pub fn model() -> MutexGuard<'static, Model> {
    let m = MODEL.get_or_init(|| {
        let mut cma = Cma::new(SoftHost::new());
        cma.timeout_override_ms = std::env::var("SWRDMA_CM_TIMEOUT_MS").ok().and_then(|v| v.parse().ok());
        Mutex::new(Model {
            cma,
            chans: HashMap::new(),
            kernel: Default::default(),
            next_chan: 1,
        })
    });
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn now() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime into a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// This process's id, for the cross-memory calls on itself (reset in a
/// forked child).
fn self_pid() -> libc::pid_t {
    use std::sync::atomic::{AtomicI32, Ordering};
    static PID: AtomicI32 = AtomicI32::new(0);
    static ATFORK: std::sync::Once = std::sync::Once::new();
    extern "C" fn forget() {
        PID.store(0, Ordering::Relaxed);
    }
    ATFORK.call_once(|| {
        // SAFETY: registers a handler that only stores to an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(forget)) };
    });
    let p = PID.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: getpid cannot fail.
    let p = unsafe { libc::getpid() };
    PID.store(p, Ordering::Relaxed);
    p
}

/// The calling thread's stack, `[low, high)` (once per thread; `(1, 0)`
/// when it cannot be known).
fn stack_bounds() -> (usize, usize) {
    use std::cell::Cell;
    thread_local! {
        static BOUNDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    }
    let b = BOUNDS.with(|b| b.get());
    if b != (0, 0) {
        return b;
    }
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    let (mut at, mut size): (*mut libc::c_void, usize) = (std::ptr::null_mut(), 0);
    // SAFETY: the attributes of the calling thread, read into a local
    // attribute object, then destroyed.
    let ok = unsafe {
        libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) == 0 && {
            let r = libc::pthread_attr_getstack(attr.as_ptr(), &mut at, &mut size);
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            r == 0
        }
    };
    let b = if ok && size > 0 {
        (at as usize, at as usize + size)
    } else {
        (1, 0)
    };
    BOUNDS.with(|c| c.set(b));
    b
}

/// Is `[addr, addr + len)` inside the calling thread's stack, above the
/// current frame?  That memory is mapped, readable and writable (the
/// frames of the callers, librdmacm's command and response structures
/// among them), so it is copied directly, without the cross-memory call
/// that checks any other pointer.  Off the thread's own stack (another
/// stack switched to) nothing is taken as valid.
fn on_own_stack(addr: u64, len: usize) -> bool {
    let here = 0u8;
    let sp = std::hint::black_box(&here as *const u8 as usize);
    let (low, high) = stack_bounds();
    let a = addr as usize;
    low <= sp && sp < high && a > sp && a.checked_add(len).is_some_and(|e| e <= high)
}

/// Reads `len` bytes of the caller's memory at `addr` (EFAULT if any is
/// not readable).
pub fn read_user(addr: u64, len: usize) -> Result<Vec<u8>, i32> {
    let mut v = vec![0u8; len];
    if len == 0 {
        return Ok(v);
    }
    if on_own_stack(addr, len) {
        // SAFETY: `len` bytes of the thread's stack above this frame
        // (mapped and readable), copied into the buffer of `len` bytes.
        unsafe { std::ptr::copy(addr as usize as *const u8, v.as_mut_ptr(), len) };
        return Ok(v);
    }
    let local = libc::iovec {
        iov_base: v.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: reads our own memory through the kernel's checked copy into
    // the local buffer of `len` bytes.
    let n = unsafe { libc::process_vm_readv(self_pid(), &local, 1, &remote, 1, 0) };
    if n == len as isize {
        Ok(v)
    } else {
        Err(libc::EFAULT)
    }
}

/// Writes `data` to the caller's memory at `addr` (EFAULT if it cannot).
pub fn write_user(addr: u64, data: &[u8]) -> Result<(), i32> {
    if data.is_empty() {
        return Ok(());
    }
    if on_own_stack(addr, data.len()) {
        // SAFETY: bytes of the thread's stack above this frame (mapped
        // and writable), moved as memmove would (a pointer may name our own).
        unsafe { std::ptr::copy(data.as_ptr(), addr as usize as *mut u8, data.len()) };
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: writes our own memory through the kernel's checked copy.
    let n = unsafe { libc::process_vm_writev(self_pid(), &local, 1, &remote, 1, 0) };
    if n == data.len() as isize {
        Ok(())
    } else {
        Err(libc::EFAULT)
    }
}

impl Model {
    /// A new channel on eventfd `fd`.
    pub fn open_channel(&mut self, fd: RawFd) {
        let id = self.next_chan;
        self.next_chan += 1;
        self.chans.insert(fd, Chan { id, signalled: false });
        // The soft devices' addresses are looked up now, as the kernel's
        // rdma_cm has its devices before any program asks: not in the
        // first command that needs them (a RESOLVE_IP of cmtime's timed
        // step, which then waited for every soft device's context to open).
        self.cma.host.learn_devices();
    }

    pub fn close_channel(&mut self, fd: RawFd) {
        if let Some(c) = self.chans.remove(&fd) {
            self.kernel.close_channel(c.id);
            self.cma.close_channel(c.id);
            self.settle();
            // The ids destroyed may have sent DREQs (retried on a timer).
            if self.needs_kick(true) {
                crate::progress::kick();
            }
        }
    }

    /// Does the CM thread need waking after a change (a command, a
    /// channel closed)?  Only for a timer earlier than the time it sleeps
    /// until (looked for when `timers`), a new socket (a waiter for a
    /// full receiver among them), or a message waiting for a full receiver
    /// that no waiter watches.  A message queued behind others for the
    /// same receiver needs no kick: the waiter already watched says when
    /// it can go.
    pub fn needs_kick(&mut self, timers: bool) -> bool {
        let h = &self.cma.host;
        h.sockets_changed
            || h.unwatched
            || (timers
                && self
                    .cma
                    .next_deadline()
                    .is_some_and(|a| a < crate::progress::sleeps_until()))
    }

    fn chan_fd(&self, id: ChanId) -> Option<RawFd> {
        self.chans.iter().find(|(_, c)| c.id == id).map(|(fd, _)| *fd)
    }

    /// Brings every changed channel's eventfd in line with its queue, and
    /// closes the sockets of released ports.
    pub fn settle(&mut self) {
        let mut dirty = self.cma.take_dirty();
        dirty.extend(self.kernel.take_dirty());
        for id in dirty {
            let Some(fd) = self.chan_fd(id) else { continue };
            let pending = self.cma.pending(id) > 0 || self.kernel.pending(id) > 0;
            let Some(c) = self.chans.get_mut(&fd) else { continue };
            if pending && !c.signalled {
                // SAFETY: our eventfd (glibc's eventfd_write is not the
                // interposed write).
                unsafe { libc::eventfd_write(fd, 1) };
                c.signalled = true;
            } else if !pending && c.signalled {
                let mut v: libc::eventfd_t = 0;
                // SAFETY: our eventfd; it holds 1, so this does not block.
                unsafe { libc::eventfd_read(fd, &mut v) };
                c.signalled = false;
            }
        }
    }
}

/// One `write()` on channel `fd`: the byte count or the errno.
pub fn command(fd: RawFd, buf: *const u8, len: usize) -> Result<usize, i32> {
    if len < abi::HDR_LEN {
        return Err(libc::EINVAL);
    }
    // One read for the header and the largest command when that much is
    // readable (every command of librdmacm), else the header alone.
    let pre = read_user(buf as u64, abi::HDR_LEN + size::ACCEPT).ok();
    let hdr = match &pre {
        Some(p) => p[..abi::HDR_LEN].to_vec(),
        None => read_user(buf as u64, abi::HDR_LEN)?,
    };
    let (c, inl, outl) = (u32_at(&hdr, 0), u16_at(&hdr, 4) as usize, u16_at(&hdr, 6) as usize);
    if c >= cmd::COUNT {
        return Err(libc::EINVAL);
    }
    if inl + abi::HDR_LEN > len {
        return Err(libc::EINVAL);
    }
    let inbuf = buf as u64 + abi::HDR_LEN as u64;
    let pre = pre.as_ref().map(|p| &p[abi::HDR_LEN..]);
    if c == cmd::GET_EVENT {
        let r = get_event(fd, Args { pre, at: inbuf }, outl);
        log_command(crate::log::seq(), fd, c, Args { pre, at: inbuf }, inl, outl, r);
        return r.map(|_| len);
    }
    let seq = crate::log::seq();
    let (r, wake) = {
        let mut m = model();
        let chan = m.chans.get(&fd).map(|c| c.id).ok_or(libc::EBADF)?;
        let r = run(&mut m, chan, c, Args { pre, at: inbuf }, inl, outl);
        m.settle();
        let wake = m.needs_kick(!sets_no_timer(c));
        // Recorded before the lock is let go: an event this command queued
        // cannot be taken (and the program end on it) before its line.
        log_command(seq, fd, c, Args { pre, at: inbuf }, inl, outl, r);
        (r, wake)
    };
    if wake {
        crate::progress::kick();
    }
    if trace() {
        say(format_args!(
            "swrdma-ucma: fd {fd} cmd {c} in {inl} out {outl} -> {r:?}"
        ));
    }
    r.map(|_| len)
}

/// A command that starts no timer of the CM (no retry, no timewait, no
/// connection watched): after it the next deadline need not be looked for
/// (a pass over every id).
fn sets_no_timer(c: u32) -> bool {
    matches!(
        c,
        cmd::CREATE_ID
            | cmd::BIND_IP
            | cmd::BIND
            | cmd::RESOLVE_IP
            | cmd::RESOLVE_ADDR
            | cmd::RESOLVE_ROUTE
            | cmd::QUERY_ROUTE
            | cmd::QUERY
            | cmd::SET_OPTION
            | cmd::GET_OPTION
            | cmd::INIT_QP_ATTR
    )
}

/// Records a command, its outcome and its response in the ucma log.
fn log_command(seq: u64, fd: RawFd, c: u32, a: Args<'_>, inl: usize, outl: usize, r: Result<(), i32>) {
    if !crate::log::on() {
        return;
    }
    let a = args(a, inl.max(16)).or_else(|_| args(a, inl)).unwrap_or_default();
    let resp = if r.is_ok() {
        crate::log::response_at(c, &a, outl).and_then(|(at, n)| read_user(at, n.min(4096)).ok())
    } else {
        None
    };
    crate::log::command(seq, fd, c, &a, r, resp.as_deref());
}

/// The kernel's own rdma_cm, passed through and recorded
/// (`SWRDMA_UCMA_KERNEL=1` with `SWRDMA_UCMA_LOG`): the result of the real
/// `write()`.
pub fn kernel_command(fd: RawFd, buf: *const u8, len: usize, real: &dyn Fn() -> isize) -> isize {
    let hdr = read_user(buf as u64, abi::HDR_LEN.min(len)).unwrap_or_default();
    let get_event = hdr.len() == abi::HDR_LEN && u32_at(&hdr, 0) == cmd::GET_EVENT;
    let mut seq = if get_event { 0 } else { crate::log::seq() };
    let r = real();
    if get_event {
        seq = crate::log::seq();
    }
    let err = if r < 0 { errno() } else { 0 };
    if hdr.len() == abi::HDR_LEN {
        let (c, inl, outl) = (u32_at(&hdr, 0), u16_at(&hdr, 4) as usize, u16_at(&hdr, 6) as usize);
        let a = read_user(buf as u64 + abi::HDR_LEN as u64, inl).unwrap_or_default();
        let res = if r < 0 { Err(err) } else { Ok(()) };
        let resp = if r >= 0 {
            crate::log::response_at(c, &a, outl).and_then(|(at, n)| read_user(at, n.min(4096)).ok())
        } else {
            None
        };
        crate::log::command(seq, fd, c, &a, res, resp.as_deref());
    }
    if r < 0 {
        // SAFETY: the calling thread's errno, as the real write left it.
        unsafe { *libc::__errno_location() = err };
    }
    r
}

/// One line on stderr, in one `write(2)`: a program's own output, written
/// to the same file by another thread, cannot split it (Rust's `eprintln!`
/// writes a line in pieces; a test that reads the trace next to rping's
/// `ping data` lines found one cut in two).
pub fn say(line: std::fmt::Arguments<'_>) {
    let mut s = line.to_string();
    s.push('\n');
    let mut b = s.as_bytes();
    while !b.is_empty() {
        // SAFETY: stderr, a buffer of b.len() bytes.
        let n = unsafe { libc::write(2, b.as_ptr().cast(), b.len()) };
        if n > 0 {
            b = &b[n as usize..];
        } else if n == 0 || errno() != libc::EINTR {
            break;
        }
    }
}

/// `SWRDMA_CM_TRACE=1`: every command, answer, event and message on
/// stderr.
pub fn trace() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SWRDMA_CM_TRACE").is_some_and(|v| v != "0"))
}

/// A command's arguments: read with the header already, or at `at`.
#[derive(Clone, Copy)]
struct Args<'a> {
    pre: Option<&'a [u8]>,
    at: u64,
}

fn args(a: Args<'_>, n: usize) -> Result<Vec<u8>, i32> {
    match a.pre {
        Some(p) if p.len() >= n => Ok(p[..n].to_vec()),
        _ => read_user(a.at, n),
    }
}

fn run(m: &mut Model, chan: ChanId, c: u32, inbuf: Args<'_>, inl: usize, outl: usize) -> Result<(), i32> {
    if let Ok(a) = args(inbuf, inl) {
        if let Some(r) = crate::kernel::divert(m, chan, c, &a, outl) {
            return r;
        }
    }
    match c {
        cmd::CREATE_ID => {
            let a = args(inbuf, size::CREATE_ID)?;
            if outl < size::CREATE_ID_RESP {
                return Err(libc::ENOSPC);
            }
            let h = m.cma.create_id(chan, u64_at(&a, 0), u16_at(&a, 16), a[18])?;
            if let Err(e) = write_user(u64_at(&a, 8), &h.to_ne_bytes()) {
                let _ = m.cma.destroy_id(chan, h);
                return Err(e);
            }
            Ok(())
        }
        cmd::DESTROY_ID => {
            let a = args(inbuf, size::DESTROY_ID)?;
            if outl < size::DESTROY_ID_RESP {
                return Err(libc::ENOSPC);
            }
            let h = u32_at(&a, 8);
            m.cma.check(chan, h)?;
            let n = crate::kernel::destroy_shadow(m, chan, h) + m.cma.destroy_id(chan, h)?;
            m.kernel.forget(h);
            write_user(u64_at(&a, 0), &n.to_ne_bytes())
        }
        cmd::BIND_IP => {
            let a = args(inbuf, size::BIND_IP)?;
            let h = u32_at(&a, 36);
            m.cma.check(chan, h)?;
            let Some(SockAddr::Ip(sa)) = abi::parse_addr(&a[8..36]) else {
                return Err(libc::EINVAL);
            };
            bind(m, h, Addr::Ip(sa))
        }
        cmd::BIND => {
            let a = args(inbuf, size::BIND)?;
            let h = u32_at(&a, 0);
            let asz = u16_at(&a, 4) as usize;
            if u16_at(&a, 6) != 0 || asz == 0 || asz != abi::addr_size(&a[8..]) {
                return Err(libc::EINVAL);
            }
            m.cma.check(chan, h)?;
            match abi::parse_addr(&a[8..]) {
                Some(SockAddr::Ip(sa)) => bind(m, h, Addr::Ip(sa)),
                Some(SockAddr::Ib {
                    pkey,
                    gid,
                    sid,
                    sid_mask,
                }) => m.cma.bind(
                    h,
                    Addr::Ib {
                        pkey,
                        gid,
                        sid,
                        sid_mask,
                    },
                ),
                None => Err(libc::EINVAL),
            }
        }
        cmd::RESOLVE_IP | cmd::RESOLVE_ADDR => resolve(m, chan, c, inbuf),
        cmd::RESOLVE_ROUTE => {
            let a = args(inbuf, size::RESOLVE_ROUTE)?;
            let h = u32_at(&a, 0);
            m.cma.check(chan, h)?;
            m.cma.resolve_route(h)
        }
        cmd::QUERY_ROUTE => {
            let a = args(inbuf, size::QUERY)?;
            let h = u32_at(&a, 8);
            m.cma.check(chan, h)?;
            if outl < size::QUERY_ROUTE_RESP {
                return Err(libc::ENOSPC);
            }
            let b = query_route(m, h)?;
            write_user(u64_at(&a, 0), &b)
        }
        cmd::QUERY => {
            let a = args(inbuf, size::QUERY)?;
            let h = u32_at(&a, 8);
            m.cma.check(chan, h)?;
            query(m, h, u32_at(&a, 12), u64_at(&a, 0), outl)
        }
        cmd::LISTEN => {
            let a = args(inbuf, size::LISTEN)?;
            let h = u32_at(&a, 0);
            m.cma.check(chan, h)?;
            m.cma.listen(h, u32_at(&a, 4))?;
            crate::kernel::shadow_listen(m, chan, h, u32_at(&a, 4));
            Ok(())
        }
        cmd::SET_OPTION => {
            let a = args(inbuf, size::SET_OPTION)?;
            let h = u32_at(&a, 8);
            m.cma.check(chan, h)?;
            let optlen = u32_at(&a, 20) as usize;
            if optlen > 1 << 22 {
                return Err(libc::EINVAL);
            }
            let val = read_user(u64_at(&a, 0), optlen)?;
            m.cma.set_option(h, u32_at(&a, 12), u32_at(&a, 16), &val)?;
            m.kernel.remember_option(h, u32_at(&a, 12), u32_at(&a, 16), &val);
            Ok(())
        }
        cmd::GET_OPTION => Err(libc::ENOSYS),
        cmd::NOTIFY => {
            let a = args(inbuf, size::NOTIFY)?;
            let h = u32_at(&a, 0);
            m.cma.check(chan, h)?;
            m.cma.notify(h, u32_at(&a, 4))
        }
        cmd::MIGRATE_ID => {
            let a = args(inbuf, size::MIGRATE_ID)?;
            let h = u32_at(&a, 8);
            let from_fd = u32_at(&a, 12) as RawFd;
            let Some(from) = m.chans.get(&from_fd).map(|c| c.id) else {
                // SAFETY: fcntl on a caller-given descriptor only asks.
                let open = unsafe { libc::fcntl(from_fd, libc::F_GETFD) } >= 0;
                return Err(if open { libc::EINVAL } else { libc::ENOENT });
            };
            if outl < size::MIGRATE_RESP {
                return Err(libc::ENOSPC);
            }
            m.cma.check(from, h)?;
            let n = m.cma.migrate(h, from, chan)?;
            write_user(u64_at(&a, 0), &n.to_ne_bytes())
        }
        cmd::JOIN_IP_MCAST | cmd::JOIN_MCAST => join(m, chan, c, inbuf, outl),
        cmd::LEAVE_MCAST => {
            let a = args(inbuf, size::LEAVE_MCAST)?;
            if outl < 4 {
                return Err(libc::ENOSPC);
            }
            let n = m.cma.leave_mcast(chan, u32_at(&a, 8))?;
            write_user(u64_at(&a, 0), &n.to_ne_bytes())
        }
        _ => run_conn(m, chan, c, inbuf, outl),
    }
}

/// `JOIN_IP_MCAST` (an IPv4 or IPv6 address, full member) and
/// `JOIN_MCAST` (any address family, join flags), checked in the order of
/// the kernel's `ucma_process_join`.
fn join(m: &mut Model, chan: ChanId, c: u32, inbuf: Args<'_>, outl: usize) -> Result<(), i32> {
    let (resp, uid, h, addr, flags) = if c == cmd::JOIN_IP_MCAST {
        let a = args(inbuf, size::JOIN_IP_MCAST)?;
        if outl < 4 {
            return Err(libc::ENOSPC);
        }
        let fam = u16_at(&a, 16);
        if fam != abi::AF_INET && fam != abi::AF_INET6 {
            return Err(libc::EINVAL);
        }
        (
            u64_at(&a, 0),
            u64_at(&a, 8),
            u32_at(&a, 44),
            abi::parse_addr(&a[16..44]),
            0,
        )
    } else {
        let a = args(inbuf, size::JOIN_MCAST)?;
        if outl < 4 {
            return Err(libc::ENOSPC);
        }
        let asz = u16_at(&a, 20) as usize;
        if asz == 0 || asz != abi::addr_size(&a[24..]) {
            return Err(libc::EINVAL);
        }
        (
            u64_at(&a, 0),
            u64_at(&a, 8),
            u32_at(&a, 16),
            abi::parse_addr(&a[24..]),
            u16_at(&a, 22),
        )
    };
    if flags > 1 {
        return Err(libc::EINVAL);
    }
    m.cma.check(chan, h)?;
    let group = match addr {
        Some(SockAddr::Ip(sa)) => sa.ip(),
        // an AF_IB group: not on RoCE
        _ => return Err(libc::EINVAL),
    };
    let mc = m.cma.join(h, uid, group, flags)?;
    if let Err(e) = write_user(resp, &mc.to_ne_bytes()) {
        let _ = m.cma.leave_mcast(chan, mc);
        return Err(e);
    }
    Ok(())
}

/// The connection commands: CONNECT, ACCEPT, REJECT, DISCONNECT,
/// INIT_QP_ATTR.
fn run_conn(m: &mut Model, chan: ChanId, c: u32, inbuf: Args<'_>, outl: usize) -> Result<(), i32> {
    let t = now();
    match c {
        cmd::CONNECT => {
            let a = args(inbuf, size::CONNECT)?;
            let p = abi::parse_conn_param(&a[0..272]);
            let h = u32_at(&a, 272);
            m.cma.check(chan, h)?;
            if !p.valid {
                return Err(libc::EINVAL);
            }
            m.cma.connect(t, h, &p)
        }
        cmd::ACCEPT => {
            let a = args(inbuf, size::ACCEPT)?;
            let p = abi::parse_conn_param(&a[8..280]);
            let h = u32_at(&a, 280);
            m.cma.check(chan, h)?;
            if p.valid {
                m.cma.accept(t, h, Some(u64_at(&a, 0)), Some(&p))
            } else {
                m.cma.accept(t, h, None, None)
            }
        }
        cmd::REJECT => {
            let a = args(inbuf, size::REJECT)?;
            let h = u32_at(&a, 0);
            m.cma.check(chan, h)?;
            let reason = if a[5] == 0 { 28 } else { a[5] };
            if reason != 28 && reason != 35 {
                return Err(libc::EINVAL);
            }
            let n = a[4] as usize;
            m.cma.reject(h, reason, &a[8..8 + n.min(256)])
        }
        cmd::DISCONNECT => {
            let a = args(inbuf, size::DISCONNECT)?;
            let h = u32_at(&a, 0);
            m.cma.check(chan, h)?;
            m.cma.disconnect(t, h)
        }
        cmd::INIT_QP_ATTR => {
            let a = args(inbuf, size::INIT_QP_ATTR)?;
            if outl < size::QP_ATTR_RESP {
                return Err(libc::ENOSPC);
            }
            let h = u32_at(&a, 8);
            let state = u32_at(&a, 12);
            m.cma.check(chan, h)?;
            if state > 6 {
                return Err(libc::EINVAL);
            }
            let attr = m.cma.init_qp_attr(h, state)?;
            write_user(u64_at(&a, 0), &abi::write_qp_attr(&attr))
        }
        _ => Err(libc::ENOSYS),
    }
}

/// `QUERY`: ADDR (0), PATH (1) or GID (2) of an id, written to `resp`.
fn query(m: &mut Model, h: u32, option: u32, resp: u64, outl: usize) -> Result<(), i32> {
    match option {
        0 => {
            if outl < size::QUERY_ADDR_RESP {
                return Err(libc::ENOSPC);
            }
            write_user(resp, &query_addr(m, h)?)
        }
        1 => {
            if outl < size::QUERY_PATH_RESP {
                return Err(libc::ENOSPC);
            }
            let paths = m.cma.query_path(h)?;
            let fit = (outl - size::QUERY_PATH_RESP) / size::PATH_DATA;
            let n = paths.len().min(fit);
            let mut b = vec![0u8; size::QUERY_PATH_RESP + n * size::PATH_DATA];
            abi::put32(&mut b, 0, n as u32);
            for (i, p) in paths.iter().take(n).enumerate() {
                let o = size::QUERY_PATH_RESP + i * size::PATH_DATA;
                // IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL
                // (outbound | inbound reverse)
                abi::put32(&mut b, o, 1 | 1 << 1 | 1 << 3 | 1 << 5);
                b[o + 8..o + 72].copy_from_slice(p);
            }
            write_user(resp, &b)
        }
        2 => {
            if outl < size::QUERY_ADDR_RESP {
                return Err(libc::ENOSPC);
            }
            let g = m.cma.query_gid(h)?;
            let (dev, _, _) = m.cma.query_addr(h)?;
            let mut b = vec![0u8; size::QUERY_ADDR_RESP];
            if let Some(d) = &dev {
                abi::put64(&mut b, 0, d.guid.to_be());
                b[8] = d.port_num;
                abi::put32(&mut b, 272, d.ibdev_index);
            }
            abi::put16(&mut b, 10, g.pkey);
            abi::put16(&mut b, 12, abi::SOCKADDR_IB_LEN as u16);
            abi::put16(&mut b, 14, abi::SOCKADDR_IB_LEN as u16);
            abi::write_ib(&mut b[16..144], g.src.pkey, &g.src.gid, g.src.sid, g.src.mask);
            abi::write_ib(&mut b[144..272], g.dst.pkey, &g.dst.gid, g.dst.sid, g.dst.mask);
            write_user(resp, &b)
        }
        _ => Err(libc::ENOSYS),
    }
}

/// `RESOLVE_IP` / `RESOLVE_ADDR`.
fn resolve(m: &mut Model, chan: ChanId, c: u32, inbuf: Args<'_>) -> Result<(), i32> {
    let (h, src, dst) = if c == cmd::RESOLVE_IP {
        let a = args(inbuf, size::RESOLVE_IP)?;
        let src = abi::parse_addr(&a[0..28]);
        let dst = abi::parse_addr(&a[28..56]);
        (u32_at(&a, 56), src, dst)
    } else {
        let a = args(inbuf, size::RESOLVE_ADDR)?;
        let (ss, ds) = (u16_at(&a, 8) as usize, u16_at(&a, 10) as usize);
        if u32_at(&a, 12) != 0
            || (ss != 0 && ss != abi::addr_size(&a[16..]))
            || ds == 0
            || ds != abi::addr_size(&a[144..])
        {
            return Err(libc::EINVAL);
        }
        let src = if ss == 0 { None } else { abi::parse_addr(&a[16..]) };
        (u32_at(&a, 0), src, abi::parse_addr(&a[144..]))
    };
    m.cma.check(chan, h)?;
    let Some(SockAddr::Ip(dst)) = dst else {
        return Err(libc::EAFNOSUPPORT);
    };
    let src = match src {
        Some(SockAddr::Ip(s)) => Some(s),
        Some(SockAddr::Ib { .. }) => return Err(libc::EAFNOSUPPORT),
        None => None,
    };
    let r = m.cma.resolve_addr(h, src, dst);
    if r == Err(libc::ENODEV) {
        explain(m, dst.ip());
    }
    r
}

fn bind(m: &mut Model, h: u32, addr: Addr) -> Result<(), i32> {
    let r = m.cma.bind(h, addr);
    if r == Err(libc::EADDRNOTAVAIL) {
        if let Addr::Ip(sa) = addr {
            explain(m, sa.ip());
            // The kernel's answers: an address of no interface is
            // EADDRNOTAVAIL, one of an interface with no RDMA device ENODEV.
            if !m.cma.host.is_local(sa.ip()) {
                return Err(libc::EADDRNOTAVAIL);
            }
        }
        return Err(libc::ENODEV);
    }
    r
}

/// With `VERBS_LOG_LEVEL` (or `SWRDMA_CM_DEBUG`) set, one line on stderr
/// saying why an address has no device.
pub(crate) fn explain(m: &mut Model, ip: IpAddr) {
    let on = std::env::var("VERBS_LOG_LEVEL").is_ok_and(|v| v.parse::<u32>().is_ok_and(|n| n >= 3))
        || std::env::var_os("SWRDMA_CM_DEBUG").is_some();
    if on {
        let why = m.cma.host.explain(ip);
        say(format_args!("swrdma-ucma: {why}"));
    }
}

fn query_addr(m: &mut Model, h: u32) -> Result<Vec<u8>, i32> {
    let (dev, src, dst) = m.cma.query_addr(h)?;
    let mut b = vec![0u8; size::QUERY_ADDR_RESP];
    // No device: node GUID, port and index 0, as the kernel leaves them.
    let mut ibdev = 0;
    if let Some(d) = &dev {
        abi::put64(&mut b, 0, d.guid.to_be());
        b[8] = d.port_num;
        ibdev = d.ibdev_index;
    }
    // P_Key 0: a RoCE device's address carries none.
    abi::put16(&mut b, 10, 0);
    let ss = match src {
        Some(Addr::Ip(a)) => abi::write_ip(&mut b[16..144], &a),
        Some(Addr::Ib {
            pkey,
            gid,
            sid,
            sid_mask,
        }) => abi::write_ib(&mut b[16..144], pkey, &gid, sid, sid_mask),
        None => abi::write_ip(&mut b[16..144], &SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)),
    };
    let ds = match (dst, src) {
        (Some(a), _) => abi::write_ip(&mut b[144..272], &a),
        (None, Some(Addr::Ib { .. })) => abi::write_ib(&mut b[144..272], 0, &[0; 16], 0, 0),
        (None, Some(Addr::Ip(a))) => abi::write_ip(&mut b[144..272], &SocketAddr::new(abi::any_like(a.ip()), 0)),
        (None, None) => abi::write_ip(&mut b[144..272], &SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)),
    };
    abi::put16(&mut b, 12, ss as u16);
    abi::put16(&mut b, 14, ds as u16);
    abi::put32(&mut b, 272, ibdev);
    Ok(b)
}

fn query_route(m: &mut Model, h: u32) -> Result<Vec<u8>, i32> {
    let (dev, src, dst) = m.cma.query_addr(h)?;
    let g = m.cma.query_gid(h)?;
    let (sgid, dgid) = (g.src.gid, g.dst.gid);
    let mut b = vec![0u8; size::QUERY_ROUTE_RESP];
    if let Some(d) = &dev {
        abi::put64(&mut b, 0, d.guid.to_be());
        b[196] = d.port_num;
        abi::put32(&mut b, 200, d.ibdev_index);
    } else {
        abi::put32(&mut b, 200, u32::MAX);
    }
    // ib_route[0]: dgid, sgid, ..., pkey at 56 of the 64-byte record
    b[8..24].copy_from_slice(&dgid);
    b[24..40].copy_from_slice(&sgid);
    abi::put16(&mut b, 8 + 56, 0xffff);
    let paths = m.cma.query_path(h)?;
    abi::put32(&mut b, 192, paths.len().min(2) as u32);
    if let Some(Addr::Ip(a)) = src {
        abi::write_ip(&mut b[136..164], &a);
    }
    if let Some(a) = dst {
        abi::write_ip(&mut b[164..192], &a);
    }
    Ok(b)
}

/// `GET_EVENT`: blocks (unless the channel is non-blocking) until an event
/// is queued, then writes it to the response pointer.
fn get_event(fd: RawFd, inbuf: Args<'_>, outl: usize) -> Result<(), i32> {
    crate::waiters::enter(fd);
    let r = get_event_inner(fd, inbuf, outl);
    crate::waiters::leave(fd, r.is_ok());
    r
}

/// [`get_event`]'s work.
fn get_event_inner(fd: RawFd, inbuf: Args<'_>, outl: usize) -> Result<(), i32> {
    let a = args(inbuf, size::GET_EVENT)?;
    if outl < size::EVENT_RESP_MIN {
        return Err(libc::ENOSPC);
    }
    loop {
        {
            let mut m = model();
            // (The write came in on a channel, `interpose::write` saw to
            // that: gone now, another thread closed it meanwhile.)
            let Some(chan) = m.chans.get(&fd).map(|c| c.id) else {
                drop(m);
                return wait_on_closed();
            };
            if let Some(e) = m.cma.get_event(chan) {
                m.settle();
                drop(m);
                if trace() {
                    say(format_args!("swrdma-ucma: fd {fd} event {e:?}"));
                }
                let b = abi::write_event(&e);
                return write_user(u64_at(&a, 0), &b[..outl.min(b.len())]);
            }
            if let Some(b) = m.kernel.pop(chan) {
                m.settle();
                drop(m);
                return crate::kernel::deliver(&b, u64_at(&a, 0), outl);
            }
        }
        // SAFETY: F_GETFL on the channel descriptor.
        let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if fl >= 0 && fl & libc::O_NONBLOCK != 0 {
            return Err(libc::EAGAIN);
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd.
        let r = unsafe { libc::poll(&mut p, 1, -1) };
        if r < 0 && errno() == libc::EINTR {
            return Err(libc::EINTR);
        }
    }
}

/// A `GET_EVENT` whose channel another thread closed after the call came
/// in (before it took the model, or while it waited): on Linux the `write`
/// holds the file from its start, so it waits on for an event that does
/// not come (rping's server: its event thread goes back to
/// `rdma_get_cm_event` while its main thread destroys the channel and
/// ends the program); it does not fail with `EBADF`.  A signal ends the
/// wait (`EINTR`), as the kernel's.
fn wait_on_closed() -> Result<(), i32> {
    loop {
        // SAFETY: pause has no arguments; it returns only for a signal.
        unsafe { libc::pause() };
        if errno() == libc::EINTR {
            return Err(libc::EINTR);
        }
    }
}

/// The progress thread's work: every datagram waiting on the process's
/// sockets, then the timers.
pub fn pump(ready: &[(RawFd, i16)]) {
    let mut m = model();
    // A waiter whose receiver went away (an error, not room): dropped; the
    // messages for it are tried again below.
    m.cma.host.waiters.retain(|_, f| {
        !ready
            .iter()
            .any(|&(fd, ev)| fd == f.as_raw_fd() && ev & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0)
    });
    let t = now();
    let uid = m.cma.host.uid;
    let own = m.cma.host.own.as_ref().map(|f| f.as_raw_fd());
    let h = &m.cma.host;
    let ports: Vec<((u16, u16), RawFd)> = h
        .ports
        .iter()
        .filter(|(k, _)| h.port_heard(**k, t))
        .map(|(k, f)| (*k, f.as_raw_fd()))
        .collect();
    for &(fd, _) in ready {
        if crate::kernel::is_kernel_fd(&m, fd) {
            crate::kernel::pump(&mut m, fd);
            continue;
        }
        let to_port = if Some(fd) == own {
            None
        } else {
            ports.iter().find(|(_, f)| *f == fd).map(|(k, _)| *k)
        };
        if Some(fd) != own && to_port.is_none() {
            continue;
        }
        for (bytes, from) in crate::host::recv_batch(fd, uid, 64).into_iter().flatten() {
            if trace() {
                let m = swrdma_cm::mad::Mad::decode(&bytes);
                say(format_args!(
                    "swrdma-ucma: recv from {} port {to_port:?}: {m:?}",
                    String::from_utf8_lossy(&from)
                ));
            }
            m.cma.recv(t, &cma::Dest::Peer(from), to_port, &bytes);
        }
    }
    m.cma.tick(t);
    m.cma.host.flush_pending(t);
    m.settle();
}

/// Closes the released ports' sockets whose time is up, after answering
/// what waited in them (REQs for a port nobody listens on any more: REJ 8,
/// as the model answers them).
fn bury(m: &mut Model) {
    let t = now();
    let uid = m.cma.host.uid;
    let (done, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut m.cma.host.graveyard)
        .into_iter()
        .partition(|g| g.2 <= t);
    m.cma.host.graveyard = keep;
    for (fd, port, _) in done {
        for _ in 0..64 {
            match crate::host::recv_one(fd.as_raw_fd(), uid) {
                None => break,
                Some(None) => continue,
                Some(Some((bytes, from))) => m.cma.recv(t, &cma::Dest::Peer(from), Some(port), &bytes),
            }
        }
    }
    m.settle();
}

/// The descriptors the progress thread waits on (each with the poll
/// events it waits for) and the next deadline.
pub fn watch() -> (Vec<(RawFd, i16)>, Option<u64>) {
    let mut m = model();
    bury(&mut m);
    m.cma.host.sockets_changed = false;
    let _ = m.cma.host.own_fd();
    let t = now();
    let h = &mut m.cma.host;
    // A quiet port's linger ended: heard from now on (what waits in it is
    // answered as for any bound port nobody listens on).
    h.quiet.retain(|_, until| *until > t);
    let mut fds: Vec<RawFd> = h.own.iter().map(|f| f.as_raw_fd()).collect();
    fds.extend(
        h.ports
            .iter()
            .filter(|(k, _)| h.port_heard(**k, t))
            .map(|(_, f)| f.as_raw_fd()),
    );
    fds.extend(m.kernel.watched());
    let mut fds: Vec<(RawFd, i16)> = fds.into_iter().map(|f| (f, libc::POLLIN)).collect();
    fds.extend(m.cma.host.waiters.values().map(|f| (f.as_raw_fd(), libc::POLLOUT)));
    let mut deadline = m.cma.next_deadline();
    let quiet_end = m.cma.host.quiet.values().copied();
    if let Some(g) = m.cma.host.graveyard.iter().map(|g| g.2).chain(quiet_end).min() {
        deadline = Some(deadline.map_or(g, |d| d.min(g)));
    }
    if !m.cma.host.pending.is_empty() {
        // A full receiver: its waiter says when it has room; without one,
        // try again in a millisecond, and with one in 10 ms all the same
        // (a receiver that went away drops what waits for it then).
        let wait = if m.cma.host.pending_unwatched() {
            1_000_000
        } else {
            10_000_000
        };
        let soon = now() + wait;
        deadline = Some(deadline.map_or(soon, |d| d.min(soon)));
    }
    // Recorded under the model's lock: a command that sets an earlier
    // timer after this sees it and kicks the thread.
    crate::progress::set_sleeps_until(deadline.unwrap_or(now() + crate::progress::MAX_SLEEP_NS));
    (fds, deadline)
}
