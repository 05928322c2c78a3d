//! Tests of the command layer without an RDMA kernel.
//!
//! * The bytes of built ioctl buffers, parsed with the offsets a C compiler
//!   gives for the kernel's `ib_uverbs_ioctl_hdr` / `ib_uverbs_attr`.
//! * The bytes of `write()` commands: the context's command fd is a pipe,
//!   on which the ioctl fails with ENOTTY, so every command takes upstream's
//!   fallback to `write()` and the pipe receives exactly what the kernel
//!   would.  The same calls are made on Debian's libibverbs (dlopen'ed,
//!   with a context made by its own `_verbs_init_and_alloc_context`), and
//!   the bytes written, the return values, the objects filled in and the
//!   provider buffers must be identical.

use std::os::raw::{c_int, c_void};

use crate::abi::*;
use crate::api::cmd::*;
use crate::kernel::builder::{req, Cmd};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::testutil::c_values;
use crate::kernel::uapi::*;

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

fn fill(buf: &mut [u8], seed: u64) {
    let mut s = seed | 1;
    for b in buf {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *b = s as u8;
    }
}

/// A copy of the `n` bytes at `p`.
///
/// # Safety
/// `p` is readable for `n` bytes, all initialised.
unsafe fn bytes_of<T>(p: *const T, n: usize) -> Vec<u8> {
    // SAFETY: `p` is readable for `n` initialised bytes (contract), copied
    // out before this returns.
    unsafe { core::slice::from_raw_parts(p.cast::<u8>(), n).to_vec() }
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes(b[off..off + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

struct Pipe {
    r: c_int,
    w: c_int,
}

impl Pipe {
    fn new() -> Self {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a writable array of two ints, as `pipe2` needs;
        // the `fcntl`s act on the two descriptors it just returned.
        unsafe {
            assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
            libc::fcntl(fds[0], libc::F_SETFL, libc::O_NONBLOCK);
            libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 1 << 20);
        }
        Pipe { r: fds[0], w: fds[1] }
    }
    fn drain(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: `buf` is a local array of `buf.len()` writable bytes;
            // `self.r` is this pipe's (non-blocking) read end.
            let n = unsafe { libc::read(self.r, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            out.extend_from_slice(&buf[..n as usize]);
        }
        out
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        // SAFETY: both descriptors were opened by `Pipe::new` and are closed
        // only here, once.
        unsafe {
            libc::close(self.r);
            libc::close(self.w);
        }
    }
}

/// A context of ours on `fd` (what the context layer builds, minus the
/// device): ioctl-write off, nothing known to be unsupported.
fn our_ctx(fd: c_int) -> *mut ibv_context {
    // SAFETY: `v` is a fresh, leaked, zeroed `verbs_context` (all-zero is
    // valid for this C struct: integers, raw and nullable function
    // pointers); its members are written in place through `v` / `ctx`,
    // which point into that live allocation.
    unsafe {
        let v: *mut verbs_context = Box::into_raw(Box::new(core::mem::zeroed::<verbs_context>()));
        // The command layer's state is all it reads of the private data.
        let p = Box::new(crate::kernel::state::CmdState::new(0, Default::default()));
        (*v).r#priv = Box::into_raw(p).cast();
        (*v).sz = core::mem::size_of::<verbs_context>();
        let ctx = core::ptr::addr_of_mut!((*v).context);
        (*ctx).cmd_fd = fd;
        (*ctx).async_fd = -1;
        (*ctx).abi_compat = usize::MAX as *mut c_void;
        (*ctx).device = fake_device();
        ctx
    }
}

/// A zeroed `verbs_device` with a sysfs record of 3 ports (leaked).
fn fake_device() -> *mut ibv_device {
    // SAFETY: `verbs_device` and `verbs_sysfs_dev` are C structs for which
    // all-zero is valid (integers, arrays, raw and nullable function
    // pointers); both are fresh leaked boxes, written through their own
    // pointers.
    unsafe {
        let dev: *mut verbs_device = Box::into_raw(Box::new(core::mem::zeroed::<verbs_device>()));
        let sysfs: *mut verbs_sysfs_dev = Box::into_raw(Box::new(core::mem::zeroed::<verbs_sysfs_dev>()));
        (*sysfs).num_ports = 3;
        (*dev).sysfs = sysfs;
        dev.cast()
    }
}

/// Debian's library, if installed.
fn upstream() -> Option<*mut c_void> {
    for name in [c"/usr/lib/x86_64-linux-gnu/libibverbs.so.1", c"libibverbs.so.1"] {
        // SAFETY: `name` is a NUL-terminated C string literal; loading
        // Debian's libibverbs runs only its own constructors.
        let h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if !h.is_null() {
            return Some(h);
        }
    }
    None
}

/// A context of Debian's library on `fd`, made by its own
/// `_verbs_init_and_alloc_context` for a zeroed device.
fn their_ctx(lib: *mut c_void, fd: c_int) -> *mut ibv_context {
    type Init = unsafe extern "C" fn(*mut ibv_device, c_int, usize, *mut verbs_context, u32) -> *mut c_void;
    // SAFETY: `lib` is a live handle; `_verbs_init_and_alloc_context` has
    // the `Init` prototype in rdma-core 44, so the non-null symbol may be
    // called through it, with a leaked zeroed device and our fd; the
    // `verbs_context` it returns (checked non-null) is live and leaked.
    unsafe {
        let p = libc::dlsym(lib, c"_verbs_init_and_alloc_context".as_ptr());
        assert!(!p.is_null());
        let init: Init = core::mem::transmute::<*mut c_void, Init>(p);
        let dev = fake_device();
        let v = init(dev, fd, core::mem::size_of::<verbs_context>(), core::ptr::null_mut(), 0);
        assert!(!v.is_null());
        core::ptr::addr_of_mut!((*v.cast::<verbs_context>()).context)
    }
}

/// Debian's `$name` from the library handle `$lib`, as the function-pointer
/// type the caller's binding names.  `$lib` must be a live handle from
/// [`upstream`], and the binding's type must be the symbol's prototype in
/// rdma-core 44 (every binding below spells out the same prototype as our
/// export's).
macro_rules! theirs {
    ($lib:expr, $name:ident) => {{
        // SAFETY: `$lib` is a live handle from `upstream()` and the name is
        // NUL-terminated.
        let p = unsafe { libc::dlsym($lib, concat!(stringify!($name), "\0").as_ptr().cast()) };
        assert!(!p.is_null(), stringify!($name));
        // SAFETY: `p` is the non-null address of the C function `$name`,
        // and the caller's binding gives its rdma-core 44 prototype (the
        // same as our export's), so it may be called through that type.
        unsafe { core::mem::transmute::<*mut c_void, _>(p) }
    }};
}

/// The legacy `response` member (after the 8-byte header), or the extended
/// header's `response`: addresses of stack buffers, which differ between
/// the two libraries when there is no provider response buffer.
const RESP_LEGACY: (usize, usize) = (8, 16);
const RESP_EX: (usize, usize) = (8, 16);

fn mask(b: &mut [u8], m: &[(usize, usize)]) {
    for &(a, e) in m {
        for x in b.iter_mut().take(e).skip(a) {
            *x = 0;
        }
    }
}

/// Runs `f` with our implementation and with Debian's (the `bool` says
/// which), each on a fresh context whose fd is a pipe, and compares what
/// reached the pipe (after `masks`) and what `f` returns.
fn both<T: PartialEq + core::fmt::Debug>(
    name: &str,
    masks: &[(usize, usize)],
    mut f: impl FnMut(*mut ibv_context, bool) -> T,
) {
    let Some(lib) = upstream() else {
        eprintln!("{name}: skipped (no Debian libibverbs)");
        return;
    };
    if std::env::var_os("IBV_RS_TRACE").is_some() {
        eprintln!("case {name}");
    }
    let p1 = Pipe::new();
    let o1 = f(our_ctx(p1.w), false);
    let mut b1 = p1.drain();
    let p2 = Pipe::new();
    let o2 = f(their_ctx(lib, p2.w), true);
    let mut b2 = p2.drain();
    mask(&mut b1, masks);
    mask(&mut b2, masks);
    assert_eq!(
        b1, b2,
        "{name}: bytes written differ\nours   {b1:02x?}\ntheirs {b2:02x?}"
    );
    assert_eq!(o1, o2, "{name}: results differ");
}

/// As [`both`] for commands that may block afterwards in upstream (the
/// destroys wait for event counts read from an uninitialised response):
/// Debian's call runs in a child process that is killed once its bytes are
/// in; only the bytes are compared, plus our return value.
fn both_forked(name: &str, masks: &[(usize, usize)], mut f: impl FnMut(*mut ibv_context, bool) -> c_int) {
    let Some(lib) = upstream() else {
        eprintln!("{name}: skipped (no Debian libibverbs)");
        return;
    };
    let p1 = Pipe::new();
    let r1 = f(our_ctx(p1.w), false);
    assert_eq!(r1, 0, "{name}: ours failed");
    let mut b1 = p1.drain();
    let p2 = Pipe::new();
    let ctx = their_ctx(lib, p2.w);
    // SAFETY: the test process forks a child that only runs the command on
    // its copy of the context and then `_exit`s; the parent only waits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        f(ctx, true);
        // SAFETY: in the forked child; `_exit` skips the parent's atexit
        // handlers and test harness state, which the child must not run.
        unsafe { libc::_exit(0) };
    }
    let mut b2 = Vec::new();
    for _ in 0..200 {
        b2.extend(p2.drain());
        if !b2.is_empty() && b2.len() >= b1.len() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: `pid` is the child forked above (not yet reaped), so the
    // signal and the wait reach only it.

    unsafe {
        libc::kill(pid, libc::SIGKILL);
        libc::waitpid(pid, core::ptr::null_mut(), 0);
    }
    mask(&mut b1, masks);
    mask(&mut b2, masks);
    assert_eq!(
        b1, b2,
        "{name}: bytes written differ\nours   {b1:02x?}\ntheirs {b2:02x?}"
    );
}

/// A provider buffer: the library's part, then driver data.
struct Buf {
    mem: Vec<u64>,
    len: usize,
    seed: u64,
}

impl Buf {
    fn new(len: usize, seed: u64) -> Self {
        Buf {
            mem: vec![0; len.div_ceil(8)],
            len,
            seed,
        }
    }
    fn reset(&mut self) {
        let len = self.len;
        // SAFETY: `mem` holds `len.div_ceil(8)` initialised words, at least
        // `len` bytes, and is borrowed mutably here only through this slice.
        fill(
            unsafe { core::slice::from_raw_parts_mut(self.mem.as_mut_ptr().cast::<u8>(), len) },
            self.seed,
        );
    }
    fn p<T>(&mut self) -> *mut T {
        self.mem.as_mut_ptr().cast()
    }
    fn bytes(&self) -> Vec<u8> {
        // SAFETY: `mem` holds at least `len` initialised bytes.
        unsafe { bytes_of(self.mem.as_ptr().cast::<u8>(), self.len) }
    }
}

/// An all-zero `T`; only used for the verbs C structs (integers, arrays,
/// raw pointers, `Option`s of function pointers and unions of those).
fn zero<T>() -> T {
    // SAFETY: every `T` this is called with is such a C struct, for which
    // the all-zero bit pattern is a valid value.

    unsafe { core::mem::zeroed() }
}

// ---------------------------------------------------------------------------
// ioctl buffer layout
// ---------------------------------------------------------------------------

/// Offsets of the ioctl header and attribute members, from the kernel
/// headers through a C compiler (fallback: the documented layout).
fn ioctl_offsets() -> Vec<usize> {
    let exprs: Vec<String> = [
        "offsetof(struct ib_uverbs_ioctl_hdr, length)",
        "offsetof(struct ib_uverbs_ioctl_hdr, object_id)",
        "offsetof(struct ib_uverbs_ioctl_hdr, method_id)",
        "offsetof(struct ib_uverbs_ioctl_hdr, num_attrs)",
        "offsetof(struct ib_uverbs_ioctl_hdr, driver_id)",
        "offsetof(struct ib_uverbs_ioctl_hdr, attrs)",
        "sizeof(struct ib_uverbs_attr)",
        "offsetof(struct ib_uverbs_attr, attr_id)",
        "offsetof(struct ib_uverbs_attr, len)",
        "offsetof(struct ib_uverbs_attr, flags)",
        "offsetof(struct ib_uverbs_attr, attr_data.enum_data.elem_id)",
        "offsetof(struct ib_uverbs_attr, data)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    c_values(&["rdma/rdma_user_ioctl_cmds.h"], &exprs)
        .map(|v| v.into_iter().map(|x| x as usize).collect())
        .unwrap_or_else(|| vec![0, 2, 4, 6, 16, 24, 16, 0, 2, 4, 6, 8])
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct ParsedAttr {
    id: u16,
    len: u16,
    flags: u16,
    elem: u8,
    data: u64,
}

fn parse_ioctl(b: &[u8]) -> (u16, u16, u16, Vec<ParsedAttr>) {
    let o = ioctl_offsets();
    let length = u16_at(b, o[0]);
    assert_eq!(length as usize, b.len());
    let n = u16_at(b, o[3]) as usize;
    assert_eq!(o[5] + n * o[6], b.len());
    let attrs = (0..n)
        .map(|i| {
            let a = &b[o[5] + i * o[6]..];
            ParsedAttr {
                id: u16_at(a, o[7]),
                len: u16_at(a, o[8]),
                flags: u16_at(a, o[9]),
                elem: a[o[10]],
                data: u64_at(a, o[11]),
            }
        })
        .collect();
    (u16_at(b, o[1]), u16_at(b, o[2]), u16_at(b, o[0]), attrs)
}

/// ibv_cmd_create_cq's ioctl: object/method, every attribute with upstream's
/// encoding (handles and scalars inline, driver data as UHW_IN (inline when
/// short) and UHW_OUT by address, the async fd optional).
#[test]
fn create_cq_ioctl_buffer() {
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    // SAFETY: `ctx` is the live context `our_ctx` just made, used only here.
    unsafe { (*ctx).async_fd = 9 };
    let mut cmd = Buf::new(core::mem::size_of::<ibv_create_cq>() + 8, 1);
    let mut resp = Buf::new(core::mem::size_of::<ib_uverbs_create_cq_resp>() + 16, 2);
    cmd.reset();
    resp.reset();
    let mut cqe_out = 0u32;
    // SAFETY: `ctx` is our live context and no provider chain is linked;
    // the command is only encoded (never run), its buffers `cmd`/`resp`
    // live until the end of the test.
    let mut c = unsafe {
        Cmd::new(ctx, &m::CREATE_CQ, 8, core::ptr::null_mut()).compat(
            cmd.p(),
            core::mem::size_of::<ibv_create_cq>(),
            cmd.len,
            resp.p(),
            core::mem::size_of::<ib_uverbs_create_cq_resp>(),
            resp.len,
        )
    };
    c.out_obj(attr::CREATE_CQ_HANDLE);
    c.out(attr::CREATE_CQ_RESP_CQE, &mut cqe_out);
    c.in_u32(attr::CREATE_CQ_CQE, 255).w(req!(ib_uverbs_create_cq, cqe));
    c.in_u64(attr::CREATE_CQ_USER_HANDLE, 0x1122_3344_5566_7788);
    c.in_u32(attr::CREATE_CQ_COMP_VECTOR, 3);
    let i = c.in_fd(attr::CREATE_CQ_EVENT_FD, 9).unwrap().idx();
    c.make_optional(i);
    let b = c.ioctl_bytes();
    let (obj_id, meth, _, a) = parse_ioctl(&b);
    assert_eq!((obj_id, meth), (obj::CQ, method::CQ_CREATE));
    let drv_in = u64::from_ne_bytes(
        cmd.bytes()[core::mem::size_of::<ibv_create_cq>()..][..8]
            .try_into()
            .unwrap(),
    );
    let resp_drv = resp.p::<u8>() as usize as u64 + core::mem::size_of::<ib_uverbs_create_cq_resp>() as u64;
    let cqe_addr = &mut cqe_out as *mut u32 as usize as u64;
    let m = UVERBS_ATTR_F_MANDATORY;
    let want = vec![
        ParsedAttr {
            id: attr::CREATE_CQ_HANDLE,
            len: 0,
            flags: m,
            elem: 0,
            data: 0,
        },
        ParsedAttr {
            id: attr::CREATE_CQ_RESP_CQE,
            len: 4,
            flags: m,
            elem: 0,
            data: cqe_addr,
        },
        ParsedAttr {
            id: attr::CREATE_CQ_CQE,
            len: 4,
            flags: m,
            elem: 0,
            data: 255,
        },
        ParsedAttr {
            id: attr::CREATE_CQ_USER_HANDLE,
            len: 8,
            flags: m,
            elem: 0,
            data: 0x1122_3344_5566_7788,
        },
        ParsedAttr {
            id: attr::CREATE_CQ_COMP_VECTOR,
            len: 4,
            flags: m,
            elem: 0,
            data: 3,
        },
        ParsedAttr {
            id: attr::CREATE_CQ_EVENT_FD,
            len: 0,
            flags: 0,
            elem: 0,
            data: 9,
        },
        ParsedAttr {
            id: UVERBS_ATTR_UHW_IN,
            len: 8,
            flags: m,
            elem: 0,
            data: drv_in,
        },
        ParsedAttr {
            id: UVERBS_ATTR_UHW_OUT,
            len: 16,
            flags: m,
            elem: 0,
            data: resp_drv,
        },
    ];
    assert_eq!(a, want);
}

/// Enum attributes carry their element id; long inputs go by address; a
/// provider's linked block is appended (and copied back afterwards).
#[test]
fn enum_and_linked_attributes() {
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    let key = [7u8; 20];
    // SAFETY: no chain is linked to the provider block.
    let mut link = unsafe {
        crate::kernel::ioctl::OwnedCmdBuf::new(
            obj::FLOW_ACTION,
            method::FLOW_ACTION_ESP_CREATE,
            1,
            core::ptr::null_mut(),
        )
    };
    link.fill_in_u32(0x1005, 42);
    // SAFETY: `ctx` is our live context and `link` a valid block that
    // outlives `c`.
    let mut c = unsafe { Cmd::new(ctx, &m::CREATE_FLOW_ACTION_ESP, 6, link.as_ptr()) };
    c.out_obj(attr::CREATE_FLOW_ACTION_ESP_HANDLE);
    // SAFETY: `key` is 20 readable bytes that outlive `c` (only encoded,
    // never run).
    unsafe {
        c.in_enum(attr::FLOW_ACTION_ESP_KEYMAT, 0, key.as_ptr(), key.len());
        c.in_enum(attr::FLOW_ACTION_ESP_REPLAY, 1, key.as_ptr(), 4);
    }
    let (_, _, _, a) = parse_ioctl(&c.ioctl_bytes());
    assert_eq!(a.len(), 4);
    assert_eq!(
        (a[1].id, a[1].len, a[1].elem, a[1].data),
        (attr::FLOW_ACTION_ESP_KEYMAT, 20, 0, key.as_ptr() as usize as u64)
    );
    assert_eq!(
        (a[2].id, a[2].len, a[2].elem, a[2].data),
        (attr::FLOW_ACTION_ESP_REPLAY, 4, 1, 0x0707_0707)
    );
    assert_eq!((a[3].id, a[3].len, a[3].data), (0x1005, 4, 42));
}

/// A command that does not fit the 16-bit length is refused with EINVAL
/// before any system call.
#[test]
fn oversized_attribute_is_einval() {
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    // SAFETY: `ctx` is our live context; no provider chain is linked.
    let mut c = unsafe { Cmd::new(ctx, &m::READ_COUNTERS, 3, core::ptr::null_mut()) };
    c.in_obj(attr::READ_COUNTERS_HANDLE, 1);
    c.out_bytes(attr::READ_COUNTERS_BUFF, core::ptr::null_mut(), 70000);
    // SAFETY: the command is refused while being encoded, before anything
    // is written through its (null) output buffer.
    assert_eq!(unsafe { c.exec() }, Err(libc::EINVAL));
}

// ---------------------------------------------------------------------------
// write() bytes, parsed with C offsets
// ---------------------------------------------------------------------------

fn c_offsets(structs: &[(&str, &[&str])]) -> Option<Vec<usize>> {
    let mut exprs = Vec::new();
    for (s, fs) in structs {
        exprs.push(format!("sizeof(struct {s})"));
        for f in *fs {
            exprs.push(format!("offsetof(struct {s}, {f})"));
        }
    }
    c_values(&["rdma/ib_user_verbs.h"], &exprs).map(|v| v.into_iter().map(|x| x as usize).collect())
}

/// The ENOTTY fallback of create_cq: a legacy CREATE_CQ whose header and
/// core request sit right in front of the provider's driver data, the
/// response address pointing in front of the driver's response data.
#[test]
fn create_cq_write_fallback_bytes() {
    let Some(o) = c_offsets(&[(
        "ib_uverbs_create_cq",
        &["response", "user_handle", "cqe", "comp_vector", "comp_channel"],
    )]) else {
        return;
    };
    let (core, off) = (o[0], &o[1..]);
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    let drv = 16;
    let mut cmd = Buf::new(8 + core + drv, 3);
    let mut resp = Buf::new(8 + 8, 4);
    cmd.reset();
    resp.reset();
    let mut cq: ibv_cq = zero();
    // SAFETY: `ctx` is our live context, `cq` a local CQ, `cmd`/`resp`
    // `Buf`s of the lengths passed; no completion channel.
    let r = unsafe {
        ibv_cmd_create_cq(
            ctx,
            77,
            core::ptr::null_mut(),
            2,
            &mut cq,
            cmd.p(),
            cmd.len,
            resp.p(),
            resp.len,
        )
    };
    assert_eq!(r, 0);
    let b = p.drain();
    assert_eq!(b.len(), 8 + core + drv);
    assert_eq!(u32_at(&b, 0), cmd::CREATE_CQ);
    assert_eq!(u16_at(&b, 4) as usize * 4, b.len());
    assert_eq!(u16_at(&b, 6) as usize * 4, resp.len);
    assert_eq!(u64_at(&b, 8 + off[0]), resp.p::<u8>() as usize as u64);
    assert_eq!(u64_at(&b, 8 + off[1]), &mut cq as *mut ibv_cq as usize as u64);
    assert_eq!(u32_at(&b, 8 + off[2]), 77);
    assert_eq!(u32_at(&b, 8 + off[3]), 2);
    assert_eq!(u32_at(&b, 8 + off[4]) as i32, -1);
    assert_eq!(
        &b[8 + core..],
        &cmd.bytes()[8 + core..],
        "driver data follows the core request"
    );
    // The fallback is remembered: the next command skips the ioctl.
    // SAFETY: `ctx` is the `context` of the live `verbs_context` `our_ctx`
    // made, with its private part.
    let st = unsafe { crate::kernel::state::of(ctx).unwrap() };
    assert!(st.unsupported(crate::op_bit!(create_cq)));
}

/// An extended command (create_cq with flags): ex_hdr with the word counts
/// of core and driver parts and the response address.
#[test]
fn create_cq_ex_write_bytes() {
    let Some(o) = c_offsets(&[
        (
            "ib_uverbs_ex_create_cq",
            &["user_handle", "cqe", "comp_vector", "comp_channel", "flags"],
        ),
        (
            "ib_uverbs_ex_cmd_hdr",
            &["response", "provider_in_words", "provider_out_words"],
        ),
    ]) else {
        return;
    };
    let core = o[0];
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    let mut cmd = Buf::new(24 + core + 16, 5);
    let mut resp = Buf::new(16 + 24, 6);
    cmd.reset();
    resp.reset();
    let mut cq: verbs_cq = zero();
    let mut a: ibv_cq_init_attr_ex = zero();
    a.cqe = 10;
    a.comp_vector = 1;
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
    // SAFETY: `ctx` is our live context, `a` and `cq` locals, `cmd`/`resp`
    // `Buf`s of the lengths passed.
    let r = unsafe { __ibvrs_p34_ibv_cmd_create_cq_ex(ctx, &a, &mut cq, cmd.p(), cmd.len, resp.p(), resp.len, 0) };
    assert_eq!(r, 0);
    let b = p.drain();
    assert_eq!(b.len(), cmd.len);
    assert_eq!(u32_at(&b, 0), IB_USER_VERBS_CMD_FLAG_EXTENDED | cmd::EX_CREATE_CQ);
    assert_eq!(u16_at(&b, 4) as usize * 8, core);
    assert_eq!(u16_at(&b, 6) as usize * 8, 16);
    let h = &o[7..];
    assert_eq!(u64_at(&b, 8 + h[0]), resp.p::<u8>() as usize as u64);
    assert_eq!(u16_at(&b, 8 + h[1]) as usize * 8, 16);
    assert_eq!(u16_at(&b, 8 + h[2]) as usize * 8, 24);
    let f = &o[1..6];
    assert_eq!(u32_at(&b, 24 + f[1]), 10);
    assert_eq!(u32_at(&b, 24 + f[2]), 1);
    assert_eq!(u32_at(&b, 24 + f[3]) as i32, -1);
    assert_eq!(u32_at(&b, 24 + f[4]), IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN);
    // The extended path zeroes the whole response before the kernel fills it.
    assert!(resp.bytes().iter().all(|&x| x == 0));
}

/// With INVOKE_WRITE (use_ioctl_write) a write command becomes the ioctl:
/// the pipe sees nothing and the error is the ioctl's.
#[test]
fn ioctl_write_path_uses_ioctl() {
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    // SAFETY: `ctx` is our live context, whose command state `our_ctx`
    // installed and nobody else uses.
    unsafe { crate::kernel::state::of(ctx) }
        .unwrap()
        .set_use_ioctl_write(true);
    let mut cmd: ibv_alloc_pd = Default::default();
    let mut resp: ib_uverbs_alloc_pd_resp = Default::default();
    let mut pd: ibv_pd = zero();
    // SAFETY: `ctx` is our live context; `pd`, `cmd` (16 bytes) and `resp`
    // (4 bytes) are locals of at least the sizes passed.
    let r = unsafe { ibv_cmd_alloc_pd(ctx, &mut pd, &mut cmd, 16, &mut resp, 4) };
    assert_eq!(r, libc::ENOTTY);
    assert!(p.drain().is_empty());
}

/// An imported context never falls back to write() for creation.
#[test]
fn imported_context_requires_ioctl() {
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    // SAFETY: `ctx` is our live context, whose command state `our_ctx`
    // installed and nobody else uses.
    unsafe { crate::kernel::state::of(ctx) }.unwrap().mark_imported();
    let mut cq: ibv_cq = zero();
    // SAFETY: `ctx` is our live context and `cq` a local; the command and
    // response buffers are null with size 0, as the call allows.
    let r = unsafe {
        ibv_cmd_create_cq(
            ctx,
            1,
            core::ptr::null_mut(),
            0,
            &mut cq,
            core::ptr::null_mut(),
            0,
            core::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(r, libc::EOPNOTSUPP);
    assert!(p.drain().is_empty());
}

/// A provider link with a mandatory non-UHW attribute cannot fall back.
#[test]
fn mandatory_driver_attribute_blocks_fallback() {
    let p = Pipe::new();
    let ctx = our_ctx(p.w);
    // SAFETY: no chain is linked to the provider block.
    let mut link =
        unsafe { crate::kernel::ioctl::OwnedCmdBuf::new(obj::CQ, method::CQ_CREATE, 1, core::ptr::null_mut()) };
    link.fill_in_u32(0x1002, 1);
    // SAFETY: `ctx` is our live context and `link` a valid block that
    // outlives `c`.
    let mut c = unsafe { Cmd::new(ctx, &m::DEALLOC_PD, 1, link.as_ptr()) };
    c.in_obj(attr::DESTROY_PD_HANDLE, 5)
        .w(req!(ib_uverbs_dealloc_pd, pd_handle));
    // SAFETY: the only pointers given to `c` are in `link`, still alive.
    assert_eq!(unsafe { c.exec() }, Err(libc::EOPNOTSUPP));

    assert!(p.drain().is_empty());
}

// ---------------------------------------------------------------------------
// differential against Debian's libibverbs
// ---------------------------------------------------------------------------

#[test]
fn differential_against_upstream() {
    let Some(lib) = upstream() else {
        eprintln!("skipped: Debian's libibverbs.so.1 not installed");
        return;
    };
    // Upstream's global abi_ver is 0 until it lists devices (which it
    // cannot do here): follow it.
    crate::kernel::state::set_abi_ver(0);
    // SAFETY: `lib` is the live handle `upstream()` just returned.
    unsafe { differential(lib) };
}

/// Every command of the layer, ours against Debian's, through [`both`] /
/// [`both_forked`].
///
/// # Safety
/// `lib` is a live handle of Debian's libibverbs from [`upstream`].
// The bindings spell out the commands' C prototypes in full, on purpose.
#[allow(clippy::type_complexity)]
unsafe fn differential(lib: *mut c_void) {
    let rl = RESP_LEGACY;
    let rx = RESP_EX;

    // --- PD ---------------------------------------------------------------
    {
        let f: unsafe extern "C" fn(_, _, _, _, _, _) -> _ = ibv_cmd_alloc_pd;
        let t: unsafe extern "C" fn(
            *mut ibv_context,
            *mut ibv_pd,
            *mut ibv_alloc_pd,
            usize,
            *mut ib_uverbs_alloc_pd_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_alloc_pd);
        let (mut cmd, mut resp) = (Buf::new(16 + 24, 11), Buf::new(4 + 12, 12));
        both("alloc_pd", &[], |ctx, th| {
            cmd.reset();
            resp.reset();
            let mut pd: ibv_pd = zero();
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `ctx` is the live context `both` made; `pd` is a live local set up as the call
            // expects; `cmd`/`resp` are `Buf`s of the length passed.
            let r = unsafe { (if th { t } else { f })(ctx, &mut pd, cmd.p(), cmd.len, resp.p(), resp.len) };
            (r, pd.handle, pd.context == ctx, cmd.bytes(), resp.bytes())
        });
        let f: unsafe extern "C" fn(*mut ibv_pd) -> c_int = ibv_cmd_dealloc_pd;
        let t: unsafe extern "C" fn(*mut ibv_pd) -> c_int = theirs!(lib, ibv_cmd_dealloc_pd);
        both("dealloc_pd", &[], |ctx, th| {
            let mut pd: ibv_pd = zero();
            pd.context = ctx;
            pd.handle = 0x55;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `pd` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut pd) }
        });
    }

    // --- XRCD -------------------------------------------------------------
    {
        let f: unsafe extern "C" fn(
            *mut ibv_context,
            *mut verbs_xrcd,
            c_int,
            *mut ibv_xrcd_init_attr,
            *mut ibv_open_xrcd,
            usize,
            *mut ib_uverbs_open_xrcd_resp,
            usize,
        ) -> c_int = ibv_cmd_open_xrcd;
        let t: unsafe extern "C" fn(
            *mut ibv_context,
            *mut verbs_xrcd,
            c_int,
            *mut ibv_xrcd_init_attr,
            *mut ibv_open_xrcd,
            usize,
            *mut ib_uverbs_open_xrcd_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_open_xrcd);
        let (mut cmd, mut resp) = (Buf::new(24 + 8, 13), Buf::new(4 + 4, 14));
        for (mask_bits, vsz) in [
            (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, 16),
            (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, 12),
            (IBV_XRCD_INIT_ATTR_FD, 16),
            (8, 16),
        ] {
            both("open_xrcd", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut x: verbs_xrcd = zero();
                let mut a = ibv_xrcd_init_attr {
                    comp_mask: mask_bits,
                    fd: 5,
                    oflags: libc::O_CREAT,
                };
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `x`, `a` are live locals set up
                // as the call expects; `cmd`/`resp` are `Buf`s of the length passed.
                let r =
                    unsafe { (if th { t } else { f })(ctx, &mut x, vsz, &mut a, cmd.p(), cmd.len, resp.p(), resp.len) };
                (
                    r,
                    x.comp_mask,
                    x.handle,
                    x.xrcd.context == ctx,
                    cmd.bytes(),
                    resp.bytes(),
                )
            });
        }
        let f: unsafe extern "C" fn(*mut verbs_xrcd) -> c_int = ibv_cmd_close_xrcd;
        let t: unsafe extern "C" fn(*mut verbs_xrcd) -> c_int = theirs!(lib, ibv_cmd_close_xrcd);
        both("close_xrcd", &[], |ctx, th| {
            let mut x: verbs_xrcd = zero();
            x.xrcd.context = ctx;
            x.handle = 9;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `x` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut x) }
        });
    }

    // --- MR / MW ----------------------------------------------------------
    {
        let f: unsafe extern "C" fn(
            *mut ibv_pd,
            *mut c_void,
            usize,
            u64,
            c_int,
            *mut verbs_mr,
            *mut ibv_reg_mr,
            usize,
            *mut ib_uverbs_reg_mr_resp,
            usize,
        ) -> c_int = ibv_cmd_reg_mr;
        let t: unsafe extern "C" fn(
            *mut ibv_pd,
            *mut c_void,
            usize,
            u64,
            c_int,
            *mut verbs_mr,
            *mut ibv_reg_mr,
            usize,
            *mut ib_uverbs_reg_mr_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_reg_mr);
        let (mut cmd, mut resp) = (Buf::new(48 + 8, 15), Buf::new(12 + 4, 16));
        for (addr, len, acc) in [
            (0x1000usize, 4096usize, 7),
            (0, usize::MAX, IBV_ACCESS_ON_DEMAND as c_int | 1),
            (0x1000, usize::MAX, IBV_ACCESS_ON_DEMAND as c_int),
        ] {
            both("reg_mr", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut pd: ibv_pd = zero();
                pd.context = ctx;
                pd.handle = 3;
                let mut mr: verbs_mr = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `pd`, `mr` are live locals set up as the call expects; `cmd`/`resp` are
                // `Buf`s of the length passed.
                let r = unsafe {
                    (if th { t } else { f })(
                        &mut pd,
                        addr as *mut c_void,
                        len,
                        0x2000,
                        acc,
                        &mut mr,
                        cmd.p(),
                        cmd.len,
                        resp.p(),
                        resp.len,
                    )
                };
                (
                    r,
                    mr.ibv_mr.handle,
                    mr.ibv_mr.lkey,
                    mr.ibv_mr.rkey,
                    mr.mr_type,
                    mr.access,
                    mr.ibv_mr.context == ctx,
                    cmd.bytes(),
                    resp.bytes(),
                )
            });
        }
        let f: unsafe extern "C" fn(
            *mut verbs_mr,
            u32,
            *mut c_void,
            usize,
            u64,
            c_int,
            *mut ibv_pd,
            *mut ibv_rereg_mr,
            usize,
            *mut ib_uverbs_rereg_mr_resp,
            usize,
        ) -> c_int = ibv_cmd_rereg_mr;
        let t: unsafe extern "C" fn(
            *mut verbs_mr,
            u32,
            *mut c_void,
            usize,
            u64,
            c_int,
            *mut ibv_pd,
            *mut ibv_rereg_mr,
            usize,
            *mut ib_uverbs_rereg_mr_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_rereg_mr);
        let (mut cmd, mut resp) = (Buf::new(56, 17), Buf::new(8 + 8, 18));
        for flags in [0u32, IBV_REREG_MR_CHANGE_PD | 2] {
            both("rereg_mr", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut pd: ibv_pd = zero();
                pd.context = ctx;
                pd.handle = 4;
                let mut mr: verbs_mr = zero();
                mr.ibv_mr.handle = 8;
                mr.ibv_mr.context = ctx;
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `mr`, `pd` are live locals set up as the call expects; `cmd`/`resp` are
                // `Buf`s of the length passed.
                let r = unsafe {
                    (if th { t } else { f })(
                        &mut mr,
                        flags,
                        0x5000 as *mut c_void,
                        100,
                        7,
                        3,
                        &mut pd,
                        cmd.p(),
                        cmd.len,
                        resp.p(),
                        resp.len,
                    )
                };
                (
                    r,
                    mr.ibv_mr.lkey,
                    mr.ibv_mr.rkey,
                    mr.ibv_mr.context == ctx,
                    cmd.bytes(),
                    resp.bytes(),
                )
            });
        }
        let f: unsafe extern "C" fn(*mut verbs_mr) -> c_int = ibv_cmd_dereg_mr;
        let t: unsafe extern "C" fn(*mut verbs_mr) -> c_int = theirs!(lib, ibv_cmd_dereg_mr);
        both("dereg_mr", &[], |ctx, th| {
            let mut mr: verbs_mr = zero();
            mr.ibv_mr.context = ctx;
            mr.ibv_mr.handle = 12;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `mr` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut mr) }
        });
        let f: unsafe extern "C" fn(
            *mut ibv_pd,
            u32,
            *mut ibv_mw,
            *mut ibv_alloc_mw,
            usize,
            *mut ib_uverbs_alloc_mw_resp,
            usize,
        ) -> c_int = ibv_cmd_alloc_mw;
        let t: unsafe extern "C" fn(
            *mut ibv_pd,
            u32,
            *mut ibv_mw,
            *mut ibv_alloc_mw,
            usize,
            *mut ib_uverbs_alloc_mw_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_alloc_mw);
        let (mut cmd, mut resp) = (Buf::new(24 + 8, 19), Buf::new(8 + 8, 20));
        both("alloc_mw", &[], |ctx, th| {
            cmd.reset();
            resp.reset();
            let mut pd: ibv_pd = zero();
            pd.context = ctx;
            pd.handle = 6;
            let mut mw: ibv_mw = zero();
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `pd`, `mw` are live locals set up as the call expects; `cmd`/`resp` are `Buf`s of
            // the length passed.
            let r = unsafe { (if th { t } else { f })(&mut pd, 2, &mut mw, cmd.p(), cmd.len, resp.p(), resp.len) };
            (
                r,
                mw.handle,
                mw.rkey,
                mw.r#type,
                mw.context == ctx,
                cmd.bytes(),
                resp.bytes(),
            )
        });
        let f: unsafe extern "C" fn(*mut ibv_mw) -> c_int = ibv_cmd_dealloc_mw;
        let t: unsafe extern "C" fn(*mut ibv_mw) -> c_int = theirs!(lib, ibv_cmd_dealloc_mw);
        both("dealloc_mw", &[], |ctx, th| {
            let mut mw: ibv_mw = zero();
            mw.context = ctx;
            mw.handle = 14;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `mw` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut mw) }
        });
    }

    // --- ioctl-only commands: no fallback, the ioctl's error ------------
    {
        let f: unsafe extern "C" fn(
            *mut ibv_context,
            *const ibv_alloc_dm_attr,
            *mut verbs_dm,
            *mut ibv_command_buffer,
        ) -> c_int = ibv_cmd_alloc_dm;
        let t: unsafe extern "C" fn(
            *mut ibv_context,
            *const ibv_alloc_dm_attr,
            *mut verbs_dm,
            *mut ibv_command_buffer,
        ) -> c_int = theirs!(lib, ibv_cmd_alloc_dm);
        both("alloc_dm", &[], |ctx, th| {
            let a = ibv_alloc_dm_attr {
                length: 64,
                log_align_req: 3,
                comp_mask: 0,
            };
            let mut dm: verbs_dm = zero();
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `ctx` is the live context `both` made; `a`, `dm` are live locals set up as the
            // call expects; the null pointers are ones the function accepts.
            unsafe { (if th { t } else { f })(ctx, &a, &mut dm, core::ptr::null_mut()) }
        });
        let f: unsafe extern "C" fn(*mut ibv_pd, *mut verbs_mr, u32) -> c_int = ibv_cmd_query_mr;
        let t: unsafe extern "C" fn(*mut ibv_pd, *mut verbs_mr, u32) -> c_int = theirs!(lib, ibv_cmd_query_mr);
        both("query_mr", &[], |ctx, th| {
            let mut pd: ibv_pd = zero();
            pd.context = ctx;
            let mut mr: verbs_mr = zero();
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `pd`, `mr` are live locals set up as the call expects.
            unsafe { (if th { t } else { f })(&mut pd, &mut mr, 3) }
        });
        let f: unsafe extern "C" fn(
            *mut ibv_pd,
            *mut verbs_dm,
            u64,
            usize,
            u32,
            *mut verbs_mr,
            *mut ibv_command_buffer,
        ) -> c_int = ibv_cmd_reg_dm_mr;
        let t: unsafe extern "C" fn(
            *mut ibv_pd,
            *mut verbs_dm,
            u64,
            usize,
            u32,
            *mut verbs_mr,
            *mut ibv_command_buffer,
        ) -> c_int = theirs!(lib, ibv_cmd_reg_dm_mr);
        for acc in [0u32, IBV_ACCESS_ZERO_BASED] {
            both("reg_dm_mr", &[], |ctx, th| {
                let mut pd: ibv_pd = zero();
                pd.context = ctx;
                let mut dm: verbs_dm = zero();
                let mut mr: verbs_mr = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `pd`, `dm`, `mr` are live locals set up as the call expects; the null
                // pointers are ones the function accepts.
                unsafe { (if th { t } else { f })(&mut pd, &mut dm, 0, 64, acc, &mut mr, core::ptr::null_mut()) }
            });
        }
        let f: unsafe extern "C" fn(
            *mut ibv_context,
            *mut ibv_counters_init_attr,
            *mut verbs_counters,
            *mut ibv_command_buffer,
        ) -> c_int = ibv_cmd_create_counters;
        let t: unsafe extern "C" fn(
            *mut ibv_context,
            *mut ibv_counters_init_attr,
            *mut verbs_counters,
            *mut ibv_command_buffer,
        ) -> c_int = theirs!(lib, ibv_cmd_create_counters);
        for cm in [0u32, 1] {
            both("create_counters", &[], |ctx, th| {
                let mut a = ibv_counters_init_attr { comp_mask: cm };
                let mut v: verbs_counters = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `a`, `v` are live locals set up
                // as the call expects; the null pointers are ones the function accepts.
                unsafe { (if th { t } else { f })(ctx, &mut a, &mut v, core::ptr::null_mut()) }
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_context, *mut ibv_command_buffer) -> c_int = ibv_cmd_query_context;
        let t: unsafe extern "C" fn(*mut ibv_context, *mut ibv_command_buffer) -> c_int =
            theirs!(lib, ibv_cmd_query_context);
        both("query_context", &[], |ctx, th| {
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `ctx` is the live context `both` made; the null pointers are ones the function
            // accepts.
            unsafe { (if th { t } else { f })(ctx, core::ptr::null_mut()) }
        });
    }

    // --- CQ ---------------------------------------------------------------
    {
        type CreateCq = unsafe extern "C" fn(
            *mut ibv_context,
            c_int,
            *mut ibv_comp_channel,
            c_int,
            *mut ibv_cq,
            *mut ibv_create_cq,
            usize,
            *mut ib_uverbs_create_cq_resp,
            usize,
        ) -> c_int;
        let f: CreateCq = ibv_cmd_create_cq;
        let t: CreateCq = theirs!(lib, ibv_cmd_create_cq);
        for (drv_in, drv_out, chan) in [(16usize, 8usize, true), (0, 0, false), (8, 0, false), (0, 24, true)] {
            let (mut cmd, mut resp) = (Buf::new(40 + drv_in, 21), Buf::new(8 + drv_out, 22));
            let mask: &[(usize, usize)] = if drv_out == 0 { &[rl] } else { &[] };
            both("create_cq", mask, |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut ch = ibv_comp_channel {
                    context: ctx,
                    fd: 33,
                    refcnt: 0,
                };
                let mut cq: ibv_cq = zero();
                let chp = if chan { &mut ch as *mut _ } else { core::ptr::null_mut() };
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `cq` is a live local set up as the
                // call expects; `cmd`/`resp` are `Buf`s of the length passed; `chp` is null or the
                // local channel `ch` on `ctx`.
                let r = unsafe {
                    (if th { t } else { f })(ctx, 100, chp, 1, &mut cq, cmd.p(), cmd.len, resp.p(), resp.len)
                };
                let (h, e) = if drv_out > 0 { (cq.handle, cq.cqe) } else { (0, 0) };
                let mut cb = if drv_in > 0 { cmd.bytes() } else { vec![] };
                if drv_out == 0 && cb.len() >= 16 {
                    // the response address (a stack buffer upstream)
                    cb[8..16].fill(0);
                }
                (
                    r,
                    h,
                    e,
                    cq.context == ctx,
                    cb,
                    if drv_out > 0 { resp.bytes() } else { vec![] },
                )
            });
        }
        type CreateCqEx = unsafe extern "C" fn(
            *mut ibv_context,
            *const ibv_cq_init_attr_ex,
            *mut verbs_cq,
            *mut ibv_create_cq_ex,
            usize,
            *mut ib_uverbs_ex_create_cq_resp,
            usize,
            u32,
        ) -> c_int;
        let f: CreateCqEx = __ibvrs_p34_ibv_cmd_create_cq_ex;
        let t: CreateCqEx = theirs!(lib, ibv_cmd_create_cq_ex);
        let cases: [(u32, u32, u64, u32); 5] = [
            (0, 0, 0, 0),
            (IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, 0, 0),
            (0, 0, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP as u64, 0),
            (
                0,
                0,
                IBV_WC_EX_WITH_COMPLETION_TIMESTAMP as u64,
                CREATE_CQ_CMD_FLAGS_TS_IGNORED_EX,
            ),
            (1 << 5, 0, 0, 0),
        ];
        for (cm, fl, wc, cf) in cases {
            let (mut cmd, mut resp) = (Buf::new(56 + 16, 23), Buf::new(16 + 16, 24));
            both("create_cq_ex", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut a: ibv_cq_init_attr_ex = zero();
                a.cqe = 64;
                a.comp_vector = 2;
                a.comp_mask = cm;
                a.flags = fl;
                a.wc_flags = wc;
                let mut cq: verbs_cq = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `a`, `cq` are live locals set up
                // as the call expects; `cmd`/`resp` are `Buf`s of the length passed.
                let r = unsafe { (if th { t } else { f })(ctx, &a, &mut cq, cmd.p(), cmd.len, resp.p(), resp.len, cf) };
                // SAFETY: `cq.u` is a union of `ibv_cq` and `ibv_cq_ex`,
                // which begins with the same members; `cq` was zeroed and
                // then written through its `ibv_cq`.
                let (h, cqe) = unsafe { (cq.u.cq.handle, cq.u.cq.cqe) };
                (r, h, cqe, cmd.bytes(), resp.bytes())
            });
        }
        let f: unsafe extern "C" fn(
            *mut ibv_cq,
            c_int,
            *mut ibv_resize_cq,
            usize,
            *mut ib_uverbs_resize_cq_resp,
            usize,
        ) -> c_int = ibv_cmd_resize_cq;
        let t: unsafe extern "C" fn(
            *mut ibv_cq,
            c_int,
            *mut ibv_resize_cq,
            usize,
            *mut ib_uverbs_resize_cq_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_resize_cq);
        let (mut cmd, mut resp) = (Buf::new(24 + 8, 25), Buf::new(8 + 8, 26));
        both("resize_cq", &[], |ctx, th| {
            cmd.reset();
            resp.reset();
            let mut cq: ibv_cq = zero();
            cq.context = ctx;
            cq.handle = 31;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `cq` is a live local set up as the call expects; `cmd`/`resp` are `Buf`s of the
            // length passed.
            let r = unsafe { (if th { t } else { f })(&mut cq, 500, cmd.p(), cmd.len, resp.p(), resp.len) };
            (r, cq.cqe, cmd.bytes(), resp.bytes())
        });
        let f: unsafe extern "C" fn(*mut ibv_cq, c_int) -> c_int = ibv_cmd_req_notify_cq;
        let t: unsafe extern "C" fn(*mut ibv_cq, c_int) -> c_int = theirs!(lib, ibv_cmd_req_notify_cq);
        for so in [0, 5] {
            both("req_notify_cq", &[], |ctx, th| {
                let mut cq: ibv_cq = zero();
                cq.context = ctx;
                cq.handle = 32;
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `cq` is a live local set up as the call expects.
                unsafe { (if th { t } else { f })(&mut cq, so) }
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_cq, *mut ibv_modify_cq_attr, *mut ibv_modify_cq, usize) -> c_int =
            ibv_cmd_modify_cq;
        let t: unsafe extern "C" fn(*mut ibv_cq, *mut ibv_modify_cq_attr, *mut ibv_modify_cq, usize) -> c_int =
            theirs!(lib, ibv_cmd_modify_cq);
        let mut cmd = Buf::new(40 + 8, 27);
        for am in [1u32, 2] {
            both("modify_cq", &[], |ctx, th| {
                cmd.reset();
                let mut cq: ibv_cq = zero();
                cq.context = ctx;
                cq.handle = 33;
                let mut a = ibv_modify_cq_attr {
                    attr_mask: am,
                    moderate: ibv_moderate_cq {
                        cq_count: 5,
                        cq_period: 6,
                    },
                };
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `cq`, `a` are live locals set up as the call expects; `cmd` is a `Buf`
                // of the length passed.
                let r = unsafe { (if th { t } else { f })(&mut cq, &mut a, cmd.p(), cmd.len) };
                (r, cmd.bytes())
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int = ibv_cmd_poll_cq;
        let t: unsafe extern "C" fn(*mut ibv_cq, c_int, *mut ibv_wc) -> c_int = theirs!(lib, ibv_cmd_poll_cq);
        for ne in [0, 3] {
            // Without a kernel answer upstream reads the completion count
            // from uninitialised memory: its call runs in a child.
            both_forked("poll_cq", &[rl], |ctx, th| {
                let mut cq: ibv_cq = zero();
                cq.context = ctx;
                cq.handle = 34;
                let mut wc: [ibv_wc; 3] = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `cq` is a live local set up as the call expects; `wc` is a local array of
                // 3 `ibv_wc`s, room for `ne` entries.
                unsafe { (if th { t } else { f })(&mut cq, ne, wc.as_mut_ptr()) }
            });
        }
        type Destroy = unsafe extern "C" fn(*mut ibv_cq) -> c_int;
        let f: Destroy = ibv_cmd_destroy_cq;
        let t: Destroy = theirs!(lib, ibv_cmd_destroy_cq);
        both_forked("destroy_cq", &[rl], |ctx, th| {
            let mut cq: ibv_cq = zero();
            cq.context = ctx;
            cq.handle = 35;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `cq` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut cq) }
        });
    }

    // --- SRQ --------------------------------------------------------------
    {
        type CreateSrq = unsafe extern "C" fn(
            *mut ibv_pd,
            *mut ibv_srq,
            *mut ibv_srq_init_attr,
            *mut ibv_create_srq,
            usize,
            *mut ib_uverbs_create_srq_resp,
            usize,
        ) -> c_int;
        let f: CreateSrq = ibv_cmd_create_srq;
        let t: CreateSrq = theirs!(lib, ibv_cmd_create_srq);
        let (mut cmd, mut resp) = (Buf::new(40 + 8, 28), Buf::new(16 + 8, 29));
        both("create_srq", &[], |ctx, th| {
            cmd.reset();
            resp.reset();
            let mut pd: ibv_pd = zero();
            pd.context = ctx;
            pd.handle = 41;
            let mut srq: ibv_srq = zero();
            let mut a = ibv_srq_init_attr {
                srq_context: 7 as *mut c_void,
                attr: ibv_srq_attr {
                    max_wr: 10,
                    max_sge: 2,
                    srq_limit: 1,
                },
            };
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `pd`, `srq`, `a` are live locals set up as the call expects; `cmd`/`resp` are
            // `Buf`s of the length passed.
            let r =
                unsafe { (if th { t } else { f })(&mut pd, &mut srq, &mut a, cmd.p(), cmd.len, resp.p(), resp.len) };
            (
                r,
                srq.handle,
                a.attr.max_wr,
                a.attr.max_sge,
                srq.context == ctx,
                cmd.bytes(),
                resp.bytes(),
            )
        });
        type CreateSrqEx = unsafe extern "C" fn(
            *mut ibv_context,
            *mut verbs_srq,
            *mut ibv_srq_init_attr_ex,
            *mut ibv_create_xsrq,
            usize,
            *mut ib_uverbs_create_srq_resp,
            usize,
        ) -> c_int;
        let f: CreateSrqEx = ibv_cmd_create_srq_ex;
        let t: CreateSrqEx = theirs!(lib, ibv_cmd_create_srq_ex);
        let (mut cmd, mut resp) = (Buf::new(56 + 8, 30), Buf::new(16 + 8, 31));
        let base = IBV_SRQ_INIT_ATTR_PD;
        for (cm, ty) in [
            (base, IBV_SRQT_BASIC),
            (
                base | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
                IBV_SRQT_XRC,
            ),
            (
                base | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_TM | IBV_SRQ_INIT_ATTR_CQ,
                IBV_SRQT_TM,
            ),
            (base | IBV_SRQ_INIT_ATTR_TYPE, IBV_SRQT_XRC),
            (0, IBV_SRQT_BASIC),
            (1 << 12, IBV_SRQT_BASIC),
        ] {
            both("create_srq_ex", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut pd: ibv_pd = zero();
                pd.context = ctx;
                pd.handle = 42;
                let mut cq: ibv_cq = zero();
                cq.handle = 43;
                let mut xrcd: verbs_xrcd = zero();
                xrcd.handle = 44;
                let mut a: ibv_srq_init_attr_ex = zero();
                a.attr = ibv_srq_attr {
                    max_wr: 11,
                    max_sge: 3,
                    srq_limit: 2,
                };
                a.comp_mask = cm;
                a.srq_type = ty;
                a.pd = &mut pd;
                a.cq = &mut cq;
                a.xrcd = &mut xrcd.xrcd;
                a.tm_cap.max_num_tags = 17;
                let mut srq: verbs_srq = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `srq`, `a` are live locals set up
                // as the call expects; `cmd`/`resp` are `Buf`s of the length passed.
                let r =
                    unsafe { (if th { t } else { f })(ctx, &mut srq, &mut a, cmd.p(), cmd.len, resp.p(), resp.len) };
                (
                    r,
                    srq.srq.handle,
                    srq.srq_type,
                    srq.srq_num,
                    std::ptr::eq(srq.xrcd, &xrcd),
                    std::ptr::eq(srq.cq, &cq),
                    a.attr.max_wr,
                    cmd.bytes(),
                    resp.bytes(),
                )
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_srq, *mut ibv_srq_attr, c_int, *mut ibv_modify_srq, usize) -> c_int =
            ibv_cmd_modify_srq;
        let t: unsafe extern "C" fn(*mut ibv_srq, *mut ibv_srq_attr, c_int, *mut ibv_modify_srq, usize) -> c_int =
            theirs!(lib, ibv_cmd_modify_srq);
        let mut cmd = Buf::new(24 + 8, 32);
        both("modify_srq", &[], |ctx, th| {
            cmd.reset();
            let mut srq: ibv_srq = zero();
            srq.context = ctx;
            srq.handle = 45;
            let mut a = ibv_srq_attr {
                max_wr: 5,
                max_sge: 6,
                srq_limit: 7,
            };
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `srq`, `a` are live locals set up as the call expects; `cmd` is a `Buf` of the
            // length passed.
            let r = unsafe { (if th { t } else { f })(&mut srq, &mut a, 3, cmd.p(), cmd.len) };
            (r, cmd.bytes())
        });
        let f: unsafe extern "C" fn(*mut ibv_srq, *mut ibv_srq_attr, *mut ibv_query_srq, usize) -> c_int =
            ibv_cmd_query_srq;
        let t: unsafe extern "C" fn(*mut ibv_srq, *mut ibv_srq_attr, *mut ibv_query_srq, usize) -> c_int =
            theirs!(lib, ibv_cmd_query_srq);
        let mut cmd = Buf::new(24, 33);
        both("query_srq", &[rl], |ctx, th| {
            cmd.reset();
            let mut srq: ibv_srq = zero();
            srq.context = ctx;
            srq.handle = 46;
            let mut a = ibv_srq_attr {
                max_wr: 0,
                max_sge: 0,
                srq_limit: 0,
            };
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `srq`, `a` are live locals set up as the call expects; `cmd` is a `Buf` of the
            // length passed.
            unsafe { (if th { t } else { f })(&mut srq, &mut a, cmd.p(), cmd.len) }
        });
        let f: unsafe extern "C" fn(*mut ibv_srq) -> c_int = ibv_cmd_destroy_srq;
        let t: unsafe extern "C" fn(*mut ibv_srq) -> c_int = theirs!(lib, ibv_cmd_destroy_srq);
        both_forked("destroy_srq", &[rl], |ctx, th| {
            let mut srq: ibv_srq = zero();
            srq.context = ctx;
            srq.handle = 47;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `srq` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut srq) }
        });
    }

    // --- QP ---------------------------------------------------------------
    {
        type CreateQp = unsafe extern "C" fn(
            *mut ibv_pd,
            *mut ibv_qp,
            *mut ibv_qp_init_attr,
            *mut ibv_create_qp,
            usize,
            *mut ib_uverbs_create_qp_resp,
            usize,
        ) -> c_int;
        let f: CreateQp = ibv_cmd_create_qp;
        let t: CreateQp = theirs!(lib, ibv_cmd_create_qp);
        let (mut cmd, mut resp) = (Buf::new(64 + 16, 34), Buf::new(32 + 8, 35));
        for (qpt, srq_on, sig) in [
            (IBV_QPT_RC, false, 0),
            (IBV_QPT_UD, true, 1),
            (IBV_QPT_XRC_SEND, false, 0),
            (IBV_QPT_XRC_RECV, false, 0),
            (77, false, 0),
        ] {
            both("create_qp", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut pd: ibv_pd = zero();
                pd.context = ctx;
                pd.handle = 51;
                let mut scq: ibv_cq = zero();
                scq.handle = 52;
                let mut rcq: ibv_cq = zero();
                rcq.handle = 53;
                let mut srq: ibv_srq = zero();
                srq.handle = 54;
                let mut a: ibv_qp_init_attr = zero();
                a.send_cq = &mut scq;
                a.recv_cq = &mut rcq;
                a.srq = if srq_on { &mut srq } else { core::ptr::null_mut() };
                a.cap = ibv_qp_cap {
                    max_send_wr: 10,
                    max_recv_wr: 11,
                    max_send_sge: 2,
                    max_recv_sge: 3,
                    max_inline_data: 64,
                };
                a.qp_type = qpt;
                a.sq_sig_all = sig;
                let mut qp: ibv_qp = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `pd`, `qp`, `a` are live locals set up as the call expects; `cmd`/`resp`
                // are `Buf`s of the length passed.
                let r =
                    unsafe { (if th { t } else { f })(&mut pd, &mut qp, &mut a, cmd.p(), cmd.len, resp.p(), resp.len) };
                (
                    r,
                    qp.handle,
                    qp.qp_num,
                    qp.state,
                    qp.qp_type,
                    a.cap.max_send_wr,
                    a.cap.max_recv_wr,
                    cmd.bytes(),
                    resp.bytes(),
                )
            });
        }
        type CreateQpEx2 = unsafe extern "C" fn(
            *mut ibv_context,
            *mut verbs_qp,
            *mut ibv_qp_init_attr_ex,
            *mut ibv_create_qp_ex,
            usize,
            *mut ib_uverbs_ex_create_qp_resp,
            usize,
        ) -> c_int;
        let f: CreateQpEx2 = __ibvrs_p34_ibv_cmd_create_qp_ex2;
        let t: CreateQpEx2 = theirs!(lib, ibv_cmd_create_qp_ex2);
        let (mut cmd, mut resp) = (Buf::new(88 + 8, 36), Buf::new(40 + 8, 37));
        let pdm = IBV_QP_INIT_ATTR_PD;
        for (cm, flags, ind) in [
            (pdm, 0u32, false),
            (pdm | IBV_QP_INIT_ATTR_CREATE_FLAGS, IBV_QP_CREATE_SCATTER_FCS, false),
            (pdm | IBV_QP_INIT_ATTR_CREATE_FLAGS, IBV_QP_CREATE_SOURCE_QPN, false),
            (pdm | IBV_QP_INIT_ATTR_CREATE_FLAGS, 1 << 30, false),
            (pdm | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH, 0, true),
            (pdm | IBV_QP_INIT_ATTR_XRCD, 0, false),
            (1 << 20, 0, false),
        ] {
            both("create_qp_ex2", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut pd: ibv_pd = zero();
                pd.handle = 61;
                let mut scq: ibv_cq = zero();
                scq.handle = 62;
                let mut rcq: ibv_cq = zero();
                rcq.handle = 63;
                let mut tbl: ibv_rwq_ind_table = zero();
                tbl.ind_tbl_handle = 64;
                let mut xrcd: verbs_xrcd = zero();
                xrcd.handle = 65;
                let mut a: ibv_qp_init_attr_ex = zero();
                a.send_cq = &mut scq;
                a.recv_cq = if ind { core::ptr::null_mut() } else { &mut rcq };
                a.cap = ibv_qp_cap {
                    max_send_wr: if ind { 0 } else { 4 },
                    max_recv_wr: if ind { 0 } else { 5 },
                    max_send_sge: 1,
                    max_recv_sge: 0,
                    max_inline_data: 0,
                };
                a.qp_type = if ind { IBV_QPT_RAW_PACKET } else { IBV_QPT_UC };
                a.comp_mask = cm;
                a.pd = &mut pd;
                a.create_flags = flags;
                a.source_qpn = 0x77;
                a.rwq_ind_tbl = &mut tbl;
                a.xrcd = &mut xrcd.xrcd;
                let mut qp: verbs_qp = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `qp`, `a` are live locals set up
                // as the call expects; `cmd`/`resp` are `Buf`s of the length passed.
                let r = unsafe { (if th { t } else { f })(ctx, &mut qp, &mut a, cmd.p(), cmd.len, resp.p(), resp.len) };
                // SAFETY: `qp.u` is a union of `ibv_qp` and `ibv_qp_ex`,
                // which begins with an `ibv_qp`; `qp` was zeroed and then
                // written through its `ibv_qp`.
                let (h, num) = unsafe { (qp.u.qp.handle, qp.u.qp.qp_num) };
                (
                    r,
                    h,
                    num,
                    qp.comp_mask,
                    std::ptr::eq(qp.xrcd, &xrcd),
                    a.cap.max_send_wr,
                    cmd.bytes(),
                    resp.bytes(),
                )
            });
        }
        let f: unsafe extern "C" fn(
            *mut ibv_context,
            *mut verbs_qp,
            c_int,
            *mut ibv_qp_open_attr,
            *mut ibv_open_qp,
            usize,
            *mut ib_uverbs_create_qp_resp,
            usize,
        ) -> c_int = ibv_cmd_open_qp;
        let t: unsafe extern "C" fn(
            *mut ibv_context,
            *mut verbs_qp,
            c_int,
            *mut ibv_qp_open_attr,
            *mut ibv_open_qp,
            usize,
            *mut ib_uverbs_create_qp_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_open_qp);
        let (mut cmd, mut resp) = (Buf::new(40 + 8, 38), Buf::new(32, 39));
        for (cm, vsz) in [
            (7u32, core::mem::size_of::<verbs_qp>() as c_int),
            (7, 8),
            (3, 200),
            (16, 200),
        ] {
            both("open_qp", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut xrcd: verbs_xrcd = zero();
                xrcd.handle = 66;
                let mut a = ibv_qp_open_attr {
                    comp_mask: cm,
                    qp_num: 0x123,
                    xrcd: &mut xrcd.xrcd,
                    qp_context: 9 as *mut c_void,
                    qp_type: IBV_QPT_XRC_RECV,
                };
                let mut qp: verbs_qp = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `qp`, `a` are live locals set up
                // as the call expects; `cmd`/`resp` are `Buf`s of the length passed.
                let r = unsafe {
                    (if th { t } else { f })(ctx, &mut qp, vsz, &mut a, cmd.p(), cmd.len, resp.p(), resp.len)
                };
                // SAFETY: `qp.u` is a union of `ibv_qp` and `ibv_qp_ex`,
                // which begins with an `ibv_qp`; `qp` was zeroed and then
                // written through its `ibv_qp`.
                let (h, num, state) = unsafe { (qp.u.qp.handle, qp.u.qp.qp_num, qp.u.qp.state) };
                (r, h, num, state, qp.comp_mask, cmd.bytes(), resp.bytes())
            });
        }
        let f: unsafe extern "C" fn(
            *mut ibv_qp,
            *mut ibv_qp_attr,
            c_int,
            *mut ibv_qp_init_attr,
            *mut ibv_query_qp,
            usize,
        ) -> c_int = ibv_cmd_query_qp;
        let t: unsafe extern "C" fn(
            *mut ibv_qp,
            *mut ibv_qp_attr,
            c_int,
            *mut ibv_qp_init_attr,
            *mut ibv_query_qp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_query_qp);
        let mut cmd = Buf::new(24 + 8, 40);
        for am in [0x1fff, IBV_QP_RATE_LIMIT as c_int] {
            both("query_qp", &[rl], |ctx, th| {
                cmd.reset();
                let mut qp: ibv_qp = zero();
                qp.context = ctx;
                qp.handle = 67;
                let mut a: ibv_qp_attr = zero();
                let mut i: ibv_qp_init_attr = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `qp`, `a`, `i` are live locals set up as the call expects; `cmd` is a
                // `Buf` of the length passed.
                unsafe { (if th { t } else { f })(&mut qp, &mut a, am, &mut i, cmd.p(), cmd.len) }
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int, *mut ibv_modify_qp, usize) -> c_int =
            ibv_cmd_modify_qp;
        let t: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_qp_attr, c_int, *mut ibv_modify_qp, usize) -> c_int =
            theirs!(lib, ibv_cmd_modify_qp);
        let mut attr_bytes = vec![0u8; core::mem::size_of::<ibv_qp_attr>()];
        fill(&mut attr_bytes, 99);
        let mut cmd = Buf::new(120 + 8, 41);
        for am in [0x1fffff, 0x81, 0x2a40, IBV_QP_RATE_LIMIT as c_int] {
            both("modify_qp", &[], |ctx, th| {
                cmd.reset();
                let mut qp: ibv_qp = zero();
                qp.context = ctx;
                qp.handle = 68;
                let mut a: ibv_qp_attr = zero();
                // SAFETY: `attr_bytes` holds `size_of::<ibv_qp_attr>()` bytes
                // (see above), written over the local `a`, plain C data
                // (integers only) for which any bytes are valid.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        attr_bytes.as_ptr(),
                        (&mut a as *mut ibv_qp_attr).cast::<u8>(),
                        attr_bytes.len(),
                    )
                };
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `qp`, `a` are live locals set up as the call expects; `cmd` is a `Buf`
                // of the length passed.
                let r = unsafe { (if th { t } else { f })(&mut qp, &mut a, am, cmd.p(), cmd.len) };
                (r, cmd.bytes())
            });
        }
        let f: unsafe extern "C" fn(
            *mut ibv_qp,
            *mut ibv_qp_attr,
            c_int,
            *mut ibv_modify_qp_ex,
            usize,
            *mut ib_uverbs_ex_modify_qp_resp,
            usize,
        ) -> c_int = ibv_cmd_modify_qp_ex;
        let t: unsafe extern "C" fn(
            *mut ibv_qp,
            *mut ibv_qp_attr,
            c_int,
            *mut ibv_modify_qp_ex,
            usize,
            *mut ib_uverbs_ex_modify_qp_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_modify_qp_ex);
        for (am, csz) in [
            (0x1fffff | IBV_QP_RATE_LIMIT as c_int, 144usize),
            (IBV_QP_RATE_LIMIT as c_int, 136),
            (0x3, 144),
        ] {
            let (mut cmd, mut resp) = (Buf::new(csz, 42), Buf::new(8 + 8, 43));
            both("modify_qp_ex", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut qp: ibv_qp = zero();
                qp.context = ctx;
                qp.handle = 69;
                let mut a: ibv_qp_attr = zero();
                // SAFETY: `attr_bytes` holds `size_of::<ibv_qp_attr>()` bytes
                // (see above), written over the local `a`, plain C data
                // (integers only) for which any bytes are valid.
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        attr_bytes.as_ptr(),
                        (&mut a as *mut ibv_qp_attr).cast::<u8>(),
                        attr_bytes.len(),
                    )
                };
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `qp`, `a` are live locals set up as the call expects; `cmd`/`resp` are
                // `Buf`s of the length passed.
                let r = unsafe { (if th { t } else { f })(&mut qp, &mut a, am, cmd.p(), cmd.len, resp.p(), resp.len) };
                (r, cmd.bytes(), resp.bytes())
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_qp) -> c_int = ibv_cmd_destroy_qp;
        let t: unsafe extern "C" fn(*mut ibv_qp) -> c_int = theirs!(lib, ibv_cmd_destroy_qp);
        both_forked("destroy_qp", &[rl], |ctx, th| {
            let mut qp: ibv_qp = zero();
            qp.context = ctx;
            qp.handle = 70;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `qp` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut qp) }
        });

        // posting
        let f: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int = ibv_cmd_post_send;
        let t: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_send_wr, *mut *mut ibv_send_wr) -> c_int =
            theirs!(lib, ibv_cmd_post_send);
        for qpt in [IBV_QPT_RC, IBV_QPT_UD] {
            // Upstream leaves the members of each work request's union that
            // the opcode does not use as they were on its stack.
            let wr0 = 8 + core::mem::size_of::<ib_uverbs_post_send>();
            let un = core::mem::offset_of!(ib_uverbs_send_wr, wr);
            let wsz = core::mem::size_of::<ib_uverbs_send_wr>();
            let unused: [(usize, usize); 4] = if qpt == IBV_QPT_UD {
                [(12, 32); 4]
            } else {
                [(12, 32), (28, 32), (0, 32), (12, 32)]
            };
            let mut masks = vec![rl];
            for (i, (a, e)) in unused.iter().enumerate() {
                masks.push((wr0 + i * wsz + un + a, wr0 + i * wsz + un + e));
            }
            both("post_send", &masks, |ctx, th| {
                let mut qp: ibv_qp = zero();
                qp.context = ctx;
                qp.handle = 71;
                qp.qp_type = qpt;
                let mut ah: ibv_ah = zero();
                ah.handle = 72;
                let mut sges = [
                    ibv_sge {
                        addr: 1,
                        length: 2,
                        lkey: 3,
                    },
                    ibv_sge {
                        addr: 4,
                        length: 5,
                        lkey: 6,
                    },
                    ibv_sge {
                        addr: 7,
                        length: 8,
                        lkey: 9,
                    },
                ];
                let mut wrs: [ibv_send_wr; 4] = zero();
                let ops = [
                    IBV_WR_RDMA_WRITE,
                    IBV_WR_ATOMIC_CMP_AND_SWP,
                    IBV_WR_SEND_WITH_IMM,
                    IBV_WR_RDMA_READ,
                ];
                for (i, w) in wrs.iter_mut().enumerate() {
                    w.wr_id = 100 + i as u64;
                    w.opcode = ops[i];
                    w.send_flags = i as u32;
                    w.imm.imm_data = 0xabc0 + i as u32;
                    w.num_sge = (i % 3) as c_int;
                    w.sg_list = sges.as_mut_ptr();
                    if qpt == IBV_QPT_UD {
                        w.wr.ud = ibv_send_wr_wr_ud {
                            ah: &mut ah,
                            remote_qpn: 5,
                            remote_qkey: 6,
                        };
                    } else if i == 1 {
                        w.wr.atomic = ibv_send_wr_wr_atomic {
                            remote_addr: 11,
                            compare_add: 12,
                            swap: 13,
                            rkey: 14,
                        };
                    } else {
                        w.wr.rdma = ibv_send_wr_wr_rdma {
                            remote_addr: 15,
                            rkey: 16,
                        };
                    }
                }
                for i in 0..3 {
                    wrs[i].next = &mut wrs[i + 1];
                }
                let mut bad: *mut ibv_send_wr = core::ptr::null_mut();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `qp`, `bad` are live locals set up as the call expects; `wrs` is a local
                // chain of WRs linked through `next`, their `sg_list`s local arrays.
                let r = unsafe { (if th { t } else { f })(&mut qp, wrs.as_mut_ptr(), &mut bad) };
                (r, bad.is_null())
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int = ibv_cmd_post_recv;
        let t: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int =
            theirs!(lib, ibv_cmd_post_recv);
        let fs: unsafe extern "C" fn(*mut ibv_srq, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int =
            ibv_cmd_post_srq_recv;
        let ts: unsafe extern "C" fn(*mut ibv_srq, *mut ibv_recv_wr, *mut *mut ibv_recv_wr) -> c_int =
            theirs!(lib, ibv_cmd_post_srq_recv);
        for srq_path in [false, true] {
            // `reserved` of each receive request: upstream's stack contents.
            let wr0 = 8 + core::mem::size_of::<ib_uverbs_post_recv>();
            let masks: Vec<(usize, usize)> = std::iter::once(rl)
                .chain((0..3).map(|i| (wr0 + i * 16 + 12, wr0 + i * 16 + 16)))
                .collect();
            both("post_recv", &masks, |ctx, th| {
                let mut qp: ibv_qp = zero();
                qp.context = ctx;
                qp.handle = 73;
                let mut srq: ibv_srq = zero();
                srq.context = ctx;
                srq.handle = 74;
                let mut sges = [
                    ibv_sge {
                        addr: 1,
                        length: 2,
                        lkey: 3,
                    },
                    ibv_sge {
                        addr: 4,
                        length: 5,
                        lkey: 6,
                    },
                ];
                let mut wrs: [ibv_recv_wr; 3] = zero();
                for (i, w) in wrs.iter_mut().enumerate() {
                    w.wr_id = 200 + i as u64;
                    w.num_sge = (i % 3) as c_int;
                    w.sg_list = sges.as_mut_ptr();
                }
                wrs[0].next = &mut wrs[1];
                wrs[1].next = &mut wrs[2];
                let mut bad: *mut ibv_recv_wr = core::ptr::null_mut();
                let r = if srq_path {
                    // SAFETY: `fs` (ours) and `ts` (Debian's, from `theirs!`) have the prototype
                    // bound above; `srq`, `bad` are live locals set up as the call expects; `wrs`
                    // is a local chain of WRs linked through `next`, their `sg_list`s local arrays.
                    unsafe { (if th { ts } else { fs })(&mut srq, wrs.as_mut_ptr(), &mut bad) }
                } else {
                    // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype
                    // bound above; `qp`, `bad` are live locals set up as the call expects; `wrs`
                    // is a local chain of WRs linked through `next`, their `sg_list`s local arrays.
                    unsafe { (if th { t } else { f })(&mut qp, wrs.as_mut_ptr(), &mut bad) }
                };
                (r, bad.is_null())
            });
        }
    }

    // --- AH, multicast ----------------------------------------------------
    {
        let f: unsafe extern "C" fn(
            *mut ibv_pd,
            *mut ibv_ah,
            *mut ibv_ah_attr,
            *mut ib_uverbs_create_ah_resp,
            usize,
        ) -> c_int = ibv_cmd_create_ah;
        let t: unsafe extern "C" fn(
            *mut ibv_pd,
            *mut ibv_ah,
            *mut ibv_ah_attr,
            *mut ib_uverbs_create_ah_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_create_ah);
        let mut resp = Buf::new(4 + 12, 44);
        let mut ah_bytes = vec![0u8; core::mem::size_of::<ibv_ah_attr>()];
        fill(&mut ah_bytes, 45);
        // One `ibv_ah` for both calls: its address is the request's
        // `user_handle`, which must not depend on stack layout.
        let mut ah_box: Box<ibv_ah> = Box::new(zero());
        both("create_ah", &[], |ctx, th| {
            resp.reset();
            let ah = &mut *ah_box;
            *ah = zero();
            let mut pd: ibv_pd = zero();
            pd.context = ctx;
            pd.handle = 81;
            let mut a: ibv_ah_attr = zero();
            // SAFETY: `ah_bytes` holds `size_of::<ibv_ah_attr>()` bytes (see
            // above), written over the local `a`, plain C data (integers
            // only) for which any bytes are valid.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    ah_bytes.as_ptr(),
                    (&mut a as *mut ibv_ah_attr).cast::<u8>(),
                    ah_bytes.len(),
                )
            };
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `pd`, `ah`, `a` are live locals set up as the call expects; `resp` is a `Buf` of
            // the length passed.
            let r = unsafe { (if th { t } else { f })(&mut pd, ah, &mut a, resp.p(), resp.len) };
            (r, ah.handle, ah.context == ctx, resp.bytes())
        });
        let f: unsafe extern "C" fn(*mut ibv_ah) -> c_int = ibv_cmd_destroy_ah;
        let t: unsafe extern "C" fn(*mut ibv_ah) -> c_int = theirs!(lib, ibv_cmd_destroy_ah);
        both("destroy_ah", &[], |ctx, th| {
            let mut ah: ibv_ah = zero();
            ah.context = ctx;
            ah.handle = 82;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `ah` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut ah) }
        });
        let f: unsafe extern "C" fn(*mut ibv_qp, *const ibv_gid, u16) -> c_int = ibv_cmd_attach_mcast;
        let t: unsafe extern "C" fn(*mut ibv_qp, *const ibv_gid, u16) -> c_int = theirs!(lib, ibv_cmd_attach_mcast);
        let fd: unsafe extern "C" fn(*mut ibv_qp, *const ibv_gid, u16) -> c_int = ibv_cmd_detach_mcast;
        let td: unsafe extern "C" fn(*mut ibv_qp, *const ibv_gid, u16) -> c_int = theirs!(lib, ibv_cmd_detach_mcast);
        for detach in [false, true] {
            both("attach/detach_mcast", &[], |ctx, th| {
                let mut qp: ibv_qp = zero();
                qp.context = ctx;
                qp.handle = 83;
                let gid = ibv_gid { raw: [9; 16] };
                // SAFETY: `f`/`fd` (ours) and `t`/`td` (Debian's, from
                // `theirs!`) have the prototype bound above; `qp` is a live
                // local on `ctx` and `gid` a local GID.
                unsafe {
                    match (detach, th) {
                        (false, false) => f(&mut qp, &gid, 0xc001),
                        (false, true) => t(&mut qp, &gid, 0xc001),
                        (true, false) => fd(&mut qp, &gid, 0xc002),
                        (true, true) => td(&mut qp, &gid, 0xc002),
                    }
                }
            });
        }
    }

    // --- WQ, RWQ indirection tables, flows ---------------------------------
    {
        type CreateWq = unsafe extern "C" fn(
            *mut ibv_context,
            *mut ibv_wq_init_attr,
            *mut ibv_wq,
            *mut ibv_create_wq,
            usize,
            *mut ib_uverbs_ex_create_wq_resp,
            usize,
        ) -> c_int;
        let f: CreateWq = ibv_cmd_create_wq;
        let t: CreateWq = theirs!(lib, ibv_cmd_create_wq);
        let (mut cmd, mut resp) = (Buf::new(64 + 8, 46), Buf::new(24 + 8, 47));
        for (cm, fl) in [
            (0u32, 0u32),
            (IBV_WQ_INIT_ATTR_FLAGS, 1),
            (IBV_WQ_INIT_ATTR_FLAGS, 1 << 20),
            (4, 0),
        ] {
            both("create_wq", &[], |ctx, th| {
                cmd.reset();
                resp.reset();
                let mut pd: ibv_pd = zero();
                pd.handle = 91;
                let mut cq: ibv_cq = zero();
                cq.handle = 92;
                let mut a: ibv_wq_init_attr = zero();
                a.wq_type = IBV_WQT_RQ;
                a.max_wr = 8;
                a.max_sge = 2;
                a.pd = &mut pd;
                a.cq = &mut cq;
                a.comp_mask = cm;
                a.create_flags = fl;
                let mut wq: ibv_wq = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `a`, `wq` are live locals set up
                // as the call expects; `cmd`/`resp` are `Buf`s of the length passed.
                let r = unsafe { (if th { t } else { f })(ctx, &mut a, &mut wq, cmd.p(), cmd.len, resp.p(), resp.len) };
                (r, wq.handle, wq.wq_num, a.max_wr, cmd.bytes(), resp.bytes())
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_wq, *mut ibv_wq_attr, *mut ibv_modify_wq, usize) -> c_int =
            ibv_cmd_modify_wq;
        let t: unsafe extern "C" fn(*mut ibv_wq, *mut ibv_wq_attr, *mut ibv_modify_wq, usize) -> c_int =
            theirs!(lib, ibv_cmd_modify_wq);
        let mut cmd = Buf::new(48 + 8, 48);
        for (am, fm) in [
            (IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_FLAGS, 1u32),
            (IBV_WQ_ATTR_FLAGS, 1 << 20),
            (IBV_WQ_ATTR_RESERVED, 0),
        ] {
            both("modify_wq", &[], |ctx, th| {
                cmd.reset();
                let mut wq: ibv_wq = zero();
                wq.context = ctx;
                wq.handle = 93;
                let mut a = ibv_wq_attr {
                    attr_mask: am,
                    wq_state: IBV_WQS_RDY,
                    curr_wq_state: IBV_WQS_RESET,
                    flags: 1,
                    flags_mask: fm,
                };
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `wq`, `a` are live locals set up as the call expects; `cmd` is a `Buf`
                // of the length passed.
                let r = unsafe { (if th { t } else { f })(&mut wq, &mut a, cmd.p(), cmd.len) };
                (r, wq.state, cmd.bytes())
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_wq) -> c_int = ibv_cmd_destroy_wq;
        let t: unsafe extern "C" fn(*mut ibv_wq) -> c_int = theirs!(lib, ibv_cmd_destroy_wq);
        both_forked("destroy_wq", &[rx], |ctx, th| {
            let mut wq: ibv_wq = zero();
            wq.context = ctx;
            wq.handle = 94;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `wq` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut wq) }
        });
        let f: unsafe extern "C" fn(
            *mut ibv_context,
            *mut ibv_rwq_ind_table_init_attr,
            *mut ibv_rwq_ind_table,
            *mut ib_uverbs_ex_create_rwq_ind_table_resp,
            usize,
        ) -> c_int = ibv_cmd_create_rwq_ind_table;
        let t: unsafe extern "C" fn(
            *mut ibv_context,
            *mut ibv_rwq_ind_table_init_attr,
            *mut ibv_rwq_ind_table,
            *mut ib_uverbs_ex_create_rwq_ind_table_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_create_rwq_ind_table);
        let mut resp = Buf::new(16 + 8, 49);
        for log in [0u32, 2] {
            both("create_rwq_ind_table", &[], |ctx, th| {
                resp.reset();
                let mut wqs: [ibv_wq; 4] = zero();
                for (i, w) in wqs.iter_mut().enumerate() {
                    w.handle = 300 + i as u32;
                }
                let mut ptrs: Vec<*mut ibv_wq> = wqs.iter_mut().map(|w| w as *mut ibv_wq).collect();
                let mut a = ibv_rwq_ind_table_init_attr {
                    log_ind_tbl_size: log,
                    ind_tbl: ptrs.as_mut_ptr(),
                    comp_mask: 0,
                };
                let mut tbl: ibv_rwq_ind_table = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `a`, `tbl` are live locals set up
                // as the call expects; `resp` is a `Buf` of the length passed.
                let r = unsafe { (if th { t } else { f })(ctx, &mut a, &mut tbl, resp.p(), resp.len) };
                (r, tbl.ind_tbl_handle, resp.bytes())
            });
        }
        let f: unsafe extern "C" fn(*mut ibv_rwq_ind_table) -> c_int = ibv_cmd_destroy_rwq_ind_table;
        let t: unsafe extern "C" fn(*mut ibv_rwq_ind_table) -> c_int = theirs!(lib, ibv_cmd_destroy_rwq_ind_table);
        both("destroy_rwq_ind_table", &[], |ctx, th| {
            let mut tbl: ibv_rwq_ind_table = zero();
            tbl.context = ctx;
            tbl.ind_tbl_handle = 95;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `tbl` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut tbl) }
        });
        let f: unsafe extern "C" fn(*mut ibv_flow) -> c_int = ibv_cmd_destroy_flow;
        let t: unsafe extern "C" fn(*mut ibv_flow) -> c_int = theirs!(lib, ibv_cmd_destroy_flow);
        both("destroy_flow", &[], |ctx, th| {
            let mut fl: ibv_flow = zero();
            fl.context = ctx;
            fl.handle = 96;
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `fl` is a live local set up as the call expects.
            unsafe { (if th { t } else { f })(&mut fl) }
        });
        // SAFETY: `lib` is the live handle this function was given.
        unsafe { flows(lib) };
    }

    // --- device -------------------------------------------------------------
    {
        type Cc = unsafe extern "C" fn(*mut ibv_context) -> *mut ibv_comp_channel;
        let t: Cc = theirs!(lib, ibv_create_comp_channel);
        both("create_comp_channel", &[rl], |ctx, th| {
            if th {
                // SAFETY: `t` is Debian's `ibv_create_comp_channel` with the
                // prototype bound above; `ctx` is the live context `both`
                // made.
                !unsafe { t(ctx) }.is_null()
            } else {
                // SAFETY: `ctx` is the live context `both` made.
                unsafe { super::device::create_comp_channel(ctx) }.is_ok()
            }
        });
        let f: unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr, *mut ibv_query_port, usize) -> c_int =
            ibv_cmd_query_port;
        let t: unsafe extern "C" fn(*mut ibv_context, u8, *mut ibv_port_attr, *mut ibv_query_port, usize) -> c_int =
            theirs!(lib, ibv_cmd_query_port);
        let mut cmd = Buf::new(24, 50);
        both("query_port", &[rl], |ctx, th| {
            cmd.reset();
            let mut pa: ibv_port_attr = zero();
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `ctx` is the live context `both` made; `pa` is a live local set up as the call
            // expects; `cmd` is a `Buf` of the length passed.
            unsafe { (if th { t } else { f })(ctx, 2, &mut pa, cmd.p(), cmd.len) }
        });
        let f: unsafe extern "C" fn(
            *mut c_void,
            *mut ibv_get_context,
            usize,
            *mut ib_uverbs_get_context_resp,
            usize,
        ) -> c_int = __ibvrs_p34_ibv_cmd_get_context;
        let t: unsafe extern "C" fn(
            *mut c_void,
            *mut ibv_get_context,
            usize,
            *mut ib_uverbs_get_context_resp,
            usize,
        ) -> c_int = theirs!(lib, ibv_cmd_get_context);
        let (mut cmd, mut resp) = (Buf::new(16 + 16, 51), Buf::new(8 + 24, 52));
        both("get_context", &[], |ctx, th| {
            cmd.reset();
            resp.reset();
            // SAFETY: both libraries' contexts are the `context` member of a
            // `verbs_context`, so stepping back by its offset stays inside
            // that allocation.
            let v = unsafe {
                ctx.cast::<u8>()
                    .sub(core::mem::offset_of!(verbs_context, context))
                    .cast::<verbs_context>()
            };
            // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound above;
            // `cmd`/`resp` are `Buf`s of the length passed; `v` is the `verbs_context` around `ctx`
            // (its `context` member).
            let r = unsafe { (if th { t } else { f })(v.cast(), cmd.p(), cmd.len, resp.p(), resp.len) };
            // SAFETY: `ctx` is the live context `both` made.
            let (afd, ncv) = unsafe { ((*ctx).async_fd, (*ctx).num_comp_vectors) };
            (r, afd, ncv, cmd.bytes(), resp.bytes())
        });
        type Qd = unsafe extern "C" fn(
            *mut ibv_context,
            *const ibv_query_device_ex_input,
            *mut ibv_device_attr_ex,
            usize,
            *mut ib_uverbs_ex_query_device_resp,
            *mut usize,
        ) -> c_int;
        let f: Qd = ibv_cmd_query_device_any;
        let t: Qd = theirs!(lib, ibv_cmd_query_device_any);
        let rsz = core::mem::size_of::<ib_uverbs_ex_query_device_resp>();
        let mut resp = Buf::new(rsz + 16, 53);
        for (asz, own_resp) in [
            (core::mem::size_of::<ibv_device_attr>(), true),
            (core::mem::size_of::<ibv_device_attr_ex>(), true),
            (core::mem::size_of::<ibv_device_attr_ex>(), false),
            (8, true),
        ] {
            let masks: &[(usize, usize)] = if own_resp && asz > core::mem::size_of::<ibv_device_attr>() {
                &[]
            } else {
                &[rl]
            };
            both("query_device_any", masks, |ctx, th| {
                resp.reset();
                let mut attr = vec![0u8; core::mem::size_of::<ibv_device_attr_ex>()];
                fill(&mut attr, 54);
                let mut rs = resp.len;
                let (rp, rsp) = if own_resp {
                    (resp.p(), &mut rs as *mut usize)
                } else {
                    (core::ptr::null_mut(), core::ptr::null_mut())
                };
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `ctx` is the live context `both` made; `attr` is a local buffer of at
                // least `asz` bytes; `rp`/`rsp` are null/0 or `resp`'s buffer and length; the null
                // pointers are ones the function accepts.
                let r =
                    unsafe { (if th { t } else { f })(ctx, core::ptr::null(), attr.as_mut_ptr().cast(), asz, rp, rsp) };
                (
                    r,
                    if own_resp {
                        (rs, attr, resp.bytes())
                    } else {
                        (0, vec![], vec![])
                    },
                )
            });
        }
    }
}

/// create_flow with every spec kind (and the ones that must be refused).
///
/// # Safety
/// `lib` is a live handle of Debian's libibverbs from [`upstream`].
unsafe fn flows(lib: *mut c_void) {
    let f: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_flow, *mut ibv_flow_attr, *mut c_void, usize) -> c_int =
        ibv_cmd_create_flow;
    let t: unsafe extern "C" fn(*mut ibv_qp, *mut ibv_flow, *mut ibv_flow_attr, *mut c_void, usize) -> c_int =
        theirs!(lib, ibv_cmd_create_flow);
    // One verbs spec of `ty` with `size` bytes, random filter contents.
    let spec = |ty: u32, size: usize, seed: u64| -> Vec<u8> {
        let mut v = vec![0u8; size];
        fill(&mut v, seed);
        v[0..4].copy_from_slice(&ty.to_ne_bytes());
        v[4..6].copy_from_slice(&(size as u16).to_ne_bytes());
        v
    };
    let mut action: verbs_flow_action = zero();
    action.handle = 0x51;
    let mut counters: verbs_counters = zero();
    counters.handle = 0x52;
    let ptr_spec = |ty: u32, p: *mut c_void| -> Vec<u8> {
        let mut v = vec![0u8; 16];
        v[0..4].copy_from_slice(&ty.to_ne_bytes());
        v[4..6].copy_from_slice(&16u16.to_ne_bytes());
        v[8..16].copy_from_slice(&(p as usize as u64).to_ne_bytes());
        v
    };
    let sz = |n: usize| n;
    let ipv6_ext = {
        // An IPv6 spec with a longer filter whose extra mask bytes are zero.
        let base = core::mem::size_of::<ibv_flow_spec_ipv6>();
        let filt = (base - 8) / 2;
        let mut v = vec![0u8; 8 + 2 * (filt + 4)];
        fill(&mut v, 77);
        v[0..4].copy_from_slice(&IBV_FLOW_SPEC_IPV6.to_ne_bytes());
        let l = v.len() as u16;
        v[4..6].copy_from_slice(&l.to_ne_bytes());
        for x in &mut v[8 + filt..8 + filt + 4] {
            *x = 1;
        }
        for x in &mut v[8 + filt + 4 + filt..] {
            *x = 0;
        }
        v
    };
    let cases: Vec<(&str, Vec<Vec<u8>>)> = vec![
        (
            "eth+ipv4+tcp",
            vec![
                spec(IBV_FLOW_SPEC_ETH, core::mem::size_of::<ibv_flow_spec_eth>(), 1),
                spec(IBV_FLOW_SPEC_IPV4, core::mem::size_of::<ibv_flow_spec_ipv4>(), 2),
                spec(IBV_FLOW_SPEC_TCP, core::mem::size_of::<ibv_flow_spec_tcp_udp>(), 3),
            ],
        ),
        (
            "inner ipv4_ext+udp",
            vec![
                spec(
                    IBV_FLOW_SPEC_IPV4_EXT | IBV_FLOW_SPEC_INNER,
                    core::mem::size_of::<ibv_flow_spec_ipv4_ext>(),
                    4,
                ),
                spec(
                    IBV_FLOW_SPEC_UDP | IBV_FLOW_SPEC_INNER,
                    core::mem::size_of::<ibv_flow_spec_tcp_udp>(),
                    5,
                ),
            ],
        ),
        (
            "ipv6+esp+gre+mpls+vxlan",
            vec![
                spec(IBV_FLOW_SPEC_IPV6, core::mem::size_of::<ibv_flow_spec_ipv6>(), 6),
                spec(IBV_FLOW_SPEC_ESP, core::mem::size_of::<ibv_flow_spec_esp>(), 7),
                spec(IBV_FLOW_SPEC_GRE, core::mem::size_of::<ibv_flow_spec_gre>(), 8),
                spec(IBV_FLOW_SPEC_MPLS, core::mem::size_of::<ibv_flow_spec_mpls>(), 9),
                spec(
                    IBV_FLOW_SPEC_VXLAN_TUNNEL,
                    core::mem::size_of::<ibv_flow_spec_tunnel>(),
                    10,
                ),
            ],
        ),
        (
            "actions",
            vec![
                spec(
                    IBV_FLOW_SPEC_ACTION_TAG,
                    core::mem::size_of::<ibv_flow_spec_action_tag>(),
                    11,
                ),
                spec(
                    IBV_FLOW_SPEC_ACTION_DROP,
                    core::mem::size_of::<ibv_flow_spec_action_drop>(),
                    12,
                ),
                ptr_spec(
                    IBV_FLOW_SPEC_ACTION_HANDLE,
                    (&mut action as *mut verbs_flow_action).cast(),
                ),
                ptr_spec(
                    IBV_FLOW_SPEC_ACTION_COUNT,
                    (&mut counters as *mut verbs_counters).cast(),
                ),
            ],
        ),
        ("long ipv6 filter, zero extra mask", vec![ipv6_ext]),
        ("short ipv4_ext", vec![spec(IBV_FLOW_SPEC_IPV4_EXT, sz(12), 13)]),
        (
            "inner gre",
            vec![spec(
                IBV_FLOW_SPEC_GRE | IBV_FLOW_SPEC_INNER,
                core::mem::size_of::<ibv_flow_spec_gre>(),
                14,
            )],
        ),
        ("unknown", vec![spec(0x77, 16, 15)]),
    ];
    for (name, specs) in cases {
        for ucmd_len in [0usize, 16] {
            both(&format!("create_flow {name}"), &[RESP_EX], |ctx, th| {
                let mut attr_buf = vec![0u64; 64];
                let base = attr_buf.as_mut_ptr().cast::<u8>();
                // SAFETY: `attr_buf` is 512 zeroed, 8-byte aligned bytes,
                // room for an `ibv_flow_attr`, and not otherwise used while
                // `fa` lives.
                let fa = unsafe { &mut *base.cast::<ibv_flow_attr>() };
                fa.r#type = IBV_FLOW_ATTR_NORMAL;
                fa.priority = 3;
                fa.num_of_specs = specs.len() as u8;
                fa.port = 1;
                fa.flags = 0;
                let mut off = core::mem::size_of::<ibv_flow_attr>();
                for s in &specs {
                    // SAFETY: the attribute and every case's specs fit in
                    // `attr_buf`'s 512 bytes, and `s` is a separate vector.
                    unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), base.add(off), s.len()) };
                    off += s.len();
                }

                let mut ucmd = vec![0x5au8; ucmd_len];
                let up = if ucmd_len > 0 {
                    ucmd.as_mut_ptr().cast()
                } else {
                    core::ptr::null_mut()
                };
                let mut qp: ibv_qp = zero();
                qp.context = ctx;
                qp.handle = 97;
                let mut fl: ibv_flow = zero();
                // SAFETY: `f` (ours) and `t` (Debian's, from `theirs!`) have the prototype bound
                // above; `qp`, `fl` are live locals set up as the call expects; `base` is
                // `attr_buf`, an `ibv_flow_attr` followed by its specs (64 words, room for all of
                // them); `up` is null or the local `ucmd` of `ucmd_len` bytes.
                let r = unsafe { (if th { t } else { f })(&mut qp, &mut fl, base.cast(), up, ucmd_len) };
                (r, fl.context == ctx)
            });
        }
    }
}
