//! The one command builder/executor behind every `ibv_cmd_*`.
//!
//! A kernel operation is described once, statically, by a [`Method`] (see
//! [`super::methods`]): its ioctl `(object, method)`, the
//! `verbs_context_ops` slot used to remember that the ioctl is missing, and
//! its legacy and extended `write()` forms (command number and core
//! request/response sizes).  A call then fills a [`Cmd`] with attributes
//! (`in_obj`, `in_u32`, `out`, …, the `fill_attr_*` of upstream), each of
//! which may say where the same value lives in the `write()` request or
//! response of either form ([`Place`]), plus values that only the `write()`
//! forms carry.  [`Cmd::exec`] then
//!
//! * sends the ioctl (with the provider's linked attribute blocks and its
//!   private data as `UVERBS_ATTR_UHW_IN/OUT`), and if the kernel lacks the
//!   method (ENOTTY / EPROTONOSUPPORT, remembered per context) and nothing
//!   forbids it, falls back exactly where upstream's
//!   `execute_ioctl_fallback` does, to
//! * the legacy or extended `write()`: the request image (header, core
//!   request, driver data) is laid out in the provider's own command buffer
//!   in front of its private data when there is room (as upstream does) or
//!   in a buffer of our own, filled from the attributes' [`Place`]s, written
//!   (or sent as the INVOKE_WRITE ioctl), and the response fields are copied
//!   back to where the ioctl outputs would have gone.
//!
//! Commands that only exist as `write()` use the same executor with a
//! provider buffer the caller has filled ([`Cmd::write_only`]).

use std::os::raw::c_int;

use crate::abi::{ibv_command_buffer, ibv_context, CMDB_FALLBACK_IOCTL_ONLY, CMDB_FALLBACK_REQUIRE_EX};
use crate::ffi::set_errno;

use super::ioctl::{self, Legacy, OwnedCmdBuf};
use super::slots::Stack;
use super::uapi::{ex_hdr, ib_uverbs_cmd_hdr, UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT};
use super::{state, write};

const HDR: usize = core::mem::size_of::<ib_uverbs_cmd_hdr>();
const EX_HDR: usize = core::mem::size_of::<ex_hdr>();

/// One `write()` form of a method: command number, core request and core
/// response sizes (the kernel structs, without headers or driver data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteForm {
    pub cmd: u32,
    pub req: usize,
    pub resp: usize,
}

impl WriteForm {
    pub const fn of<Req, Resp>(cmd: u32) -> Self {
        WriteForm {
            cmd,
            req: core::mem::size_of::<Req>(),
            resp: core::mem::size_of::<Resp>(),
        }
    }
}

/// The static description of one kernel operation.
#[derive(Debug)]
pub struct Method {
    pub name: &'static str,
    /// `(object id, method id)` of the ioctl, if the kernel has one.
    pub ioctl: Option<(u16, u16)>,
    /// `verbs_context_ops` slot under which a missing ioctl is remembered;
    /// `None`: the ioctl is the only form (no fallback).
    pub op: Option<usize>,
    pub write: Option<WriteForm>,
    pub write_ex: Option<WriteForm>,
}

/// A member of a kernel struct: byte offset and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub off: usize,
    pub len: usize,
}

/// Where a value lives in a `write()` command: in the core request or in
/// the core response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Req(Field),
    Resp(Field),
}

#[doc(hidden)]
pub fn __member_size<T, F>(_: impl Fn(&T) -> &F) -> usize {
    core::mem::size_of::<F>()
}

/// `field!(struct, a.b)`: the [`Field`] of a member of a kernel struct.
#[macro_export]
#[doc(hidden)]
macro_rules! kfield {
    ($t:ty, $($f:ident).+) => {
        $crate::kernel::builder::Field {
            off: core::mem::offset_of!($t, $($f).+),
            len: $crate::kernel::builder::__member_size(|s: &$t| &s.$($f).+),
        }
    };
}

/// `req!(struct, member)`: a member of a core request.
#[macro_export]
#[doc(hidden)]
macro_rules! kreq {
    ($t:ty, $($f:ident).+) => { $crate::kernel::builder::Place::Req($crate::kfield!($t, $($f).+)) };
}

/// `resp!(struct, member)`: a member of a core response.
#[macro_export]
#[doc(hidden)]
macro_rules! kresp {
    ($t:ty, $($f:ident).+) => { $crate::kernel::builder::Place::Resp($crate::kfield!($t, $($f).+)) };
}

pub use crate::{kfield as field, kreq as req, kresp as resp};

/// Which transport completed the command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Ioctl,
    Write,
    WriteEx,
}

/// The value behind a write-only field (an attribute's value is read
/// from the attribute itself).
#[derive(Clone, Copy, Debug)]
enum Src {
    /// An integer (handles, flags, inline scalars).
    Val(u64),
    /// Input bytes by address.
    Bytes(*const u8, usize),
}

/// What an attribute's `data` holds, for the `write()` forms.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// An integer.
    Val,
    /// A `u32` in the first four bytes.
    Val32,
    /// Input bytes: inline (at most 8) or by address.
    Bytes,
    /// An output buffer's address.
    Out,
    /// An output handle / fd.
    OutObj,
}

/// A [`Place`], packed: `kind` 0 none, 1 request, 2 response.  An offset
/// or length beyond 16 bits (no kernel struct has one) saturates, which
/// puts the field past every image, where it is skipped as before.
#[derive(Clone, Copy, Debug, Default)]
struct Spot {
    kind: u8,
    off: u16,
    len: u16,
}

impl Spot {
    #[inline]
    fn of(p: Place) -> Self {
        let (kind, f) = match p {
            Place::Req(f) => (1, f),
            Place::Resp(f) => (2, f),
        };
        let c = |v: usize| u16::try_from(v).unwrap_or(u16::MAX);
        Spot {
            kind,
            off: c(f.off),
            len: c(f.len),
        }
    }
    fn req(self) -> Option<Field> {
        (self.kind == 1).then_some(self.field())
    }
    fn resp(self) -> Option<Field> {
        (self.kind == 2).then_some(self.field())
    }
    fn field(self) -> Field {
        Field {
            off: self.off as usize,
            len: self.len as usize,
        }
    }
}

/// Where an own attribute goes in the two `write()` forms.
#[derive(Clone, Copy, Debug)]
struct Map {
    w: Spot,
    wx: Spot,
    kind: Kind,
}

/// A value only the `write()` forms carry.
#[derive(Clone, Copy, Debug)]
struct Extra {
    w: Spot,
    wx: Spot,
    src: Src,
}

/// Own attributes a command may have (`num_attrs` + the two UHW ones).
const MAX_ATTRS: usize = 20;
/// A request image of ours up to this many words lives on the stack.
const OWN_REQ_WORDS: usize = 32;

/// A provider buffer: `[core][driver data]`, `core` bytes of which belong
/// to the library (for requests: header + core request).
#[derive(Clone, Copy, Debug)]
struct ProvBuf {
    ptr: *mut u8,
    core: usize,
    total: usize,
}

impl ProvBuf {
    fn new(ptr: *mut u8, core: usize, total: usize) -> Option<Self> {
        (!ptr.is_null()).then_some(ProvBuf {
            ptr,
            core,
            total: total.max(core),
        })
    }
    fn extra(&self) -> usize {
        self.total - self.core
    }
}

/// A command being built; see the module documentation.
pub struct Cmd {
    ctx: *mut ibv_context,
    m: &'static Method,
    buf: Option<OwnedCmdBuf>,
    maps: Stack<Map, MAX_ATTRS>,
    /// Write-only values (object creation only; empty costs nothing).
    extras: Vec<Extra>,
    write: Option<WriteForm>,
    write_ex: Option<WriteForm>,
    req: Option<ProvBuf>,
    resp: Option<ProvBuf>,
    zero_core: bool,
    /// Send the provider's driver data with the ioctl (compat calls).
    uhw_ioctl: bool,
    /// Our own response image, when the provider's buffer has no room
    /// (allocated only then).
    own_resp: Vec<u64>,
    /// Where the core response of the `write()` that ran is, and its size.
    resp_img: RespImg,
}

#[derive(Clone, Copy, Debug)]
enum RespImg {
    None,
    Own(usize),
    Prov(*mut u8, usize),
}

/// An attribute just added to a [`Cmd`]; say where it goes in the write
/// forms, make it optional, or take its index.
pub struct A<'c> {
    c: &'c mut Cmd,
    i: usize,
}

impl A<'_> {
    /// Its place in the legacy `write()` form.
    #[inline]
    pub fn w(self, p: Place) -> Self {
        self.c.maps.get_mut(self.i).w = Spot::of(p);
        self
    }
    /// Its place in the extended `write()` form.
    #[inline]
    pub fn wx(self, p: Place) -> Self {
        self.c.maps.get_mut(self.i).wx = Spot::of(p);
        self
    }
    /// `attr_optional`.
    pub fn optional(self) -> Self {
        if let Some(b) = self.c.buf.as_mut() {
            b.make_optional(self.i);
        }
        self
    }
    pub fn idx(self) -> usize {
        self.i
    }
}

impl Cmd {
    /// A command for an ioctl method, with room for `num_attrs` own
    /// attributes, linked in front of the provider's blocks `link`.
    ///
    /// # Safety
    /// `ctx` is an open context; `link` null or a valid chain.
    #[inline]
    pub unsafe fn new(
        ctx: *mut ibv_context,
        m: &'static Method,
        num_attrs: usize,
        link: *mut ibv_command_buffer,
    ) -> Self {
        let (o, me) = m.ioctl.expect("ioctl method");
        assert!(num_attrs + 2 <= MAX_ATTRS, "more attributes than the builder holds");
        Cmd {
            ctx,
            m,
            // SAFETY: `link` is null or a valid chain (caller's contract).
            buf: Some(unsafe { OwnedCmdBuf::new(o, me, num_attrs + 2, link) }),
            maps: Stack::new(),
            extras: Vec::new(),
            write: m.write,
            write_ex: m.write_ex,
            req: None,
            resp: None,
            zero_core: true,
            uhw_ioctl: false,
            own_resp: Vec::new(),
            resp_img: RespImg::None,
        }
    }

    #[allow(clippy::too_many_arguments)] // two buffers, each (pointer, core size, total size)
    /// A command that only exists as `write()`: `req` is the caller-filled
    /// request, `[header][core request][driver data]` (`req_core` bytes of
    /// header + core, `req_size` in all), `resp` the response buffer
    /// (`resp_core` bytes of core response, `resp_size` in all).
    ///
    /// # Safety
    /// The buffers are valid for their sizes until `exec` returns.
    pub unsafe fn write_only(
        ctx: *mut ibv_context,
        m: &'static Method,
        req: *mut u8,
        req_core: usize,
        req_size: usize,
        resp: *mut u8,
        resp_core: usize,
        resp_size: usize,
    ) -> Self {
        Cmd {
            ctx,
            m,
            buf: None,
            maps: Stack::new(),
            extras: Vec::new(),
            write: m.write,
            write_ex: m.write_ex,
            req: ProvBuf::new(req, req_core, req_size),
            resp: ProvBuf::new(resp, resp_core, resp_size),
            zero_core: false,
            uhw_ioctl: false,
            own_resp: Vec::new(),
            resp_img: RespImg::None,
        }
    }

    /// The provider's legacy command and response buffers of a
    /// compatibility call (upstream's `DECLARE_CMD_BUFFER_COMPAT`): what
    /// follows the first `cmd_core` / `resp_core` bytes is driver data,
    /// sent as `UVERBS_ATTR_UHW_IN` / `UHW_OUT` (ioctl) or appended to the
    /// command / response (`write()`).
    pub fn compat(
        mut self,
        cmd: *mut u8,
        cmd_core: usize,
        cmd_size: usize,
        resp: *mut u8,
        resp_core: usize,
        resp_size: usize,
    ) -> Self {
        self.req = ProvBuf::new(cmd, cmd_core, cmd_size);
        self.resp = ProvBuf::new(resp, resp_core, resp_size);
        self.uhw_ioctl = true;
        self
    }

    /// Provider buffers that only the `write()` forms use (the ioctl carries
    /// no driver data), e.g. `ibv_cmd_query_port`'s command.
    pub fn write_bufs(
        mut self,
        cmd: *mut u8,
        cmd_core: usize,
        cmd_size: usize,
        resp: *mut u8,
        resp_core: usize,
        resp_size: usize,
    ) -> Self {
        self.req = ProvBuf::new(cmd, cmd_core, cmd_size);
        self.resp = ProvBuf::new(resp, resp_core, resp_size);
        self.uhw_ioctl = false;
        self
    }

    /// Replaces the legacy `write()` form (ABI-version variants, requests
    /// with a variable-length tail).
    pub fn set_write(&mut self, f: Option<WriteForm>) {
        self.write = f;
    }

    pub fn set_write_ex(&mut self, f: Option<WriteForm>) {
        self.write_ex = f;
    }

    /// `fallback_require_ex`: a `write()` fallback must use the extended form.
    pub fn require_ex(&mut self) {
        if let Some(b) = self.buf.as_mut() {
            b.set_flags(CMDB_FALLBACK_REQUIRE_EX);
        }
    }

    /// `fallback_require_ioctl`: no `write()` fallback.
    pub fn ioctl_only(&mut self) {
        if let Some(b) = self.buf.as_mut() {
            b.set_flags(CMDB_FALLBACK_IOCTL_ONLY);
        }
    }

    /// `attr_optional` on attribute `i`.
    pub fn make_optional(&mut self, i: usize) {
        if let Some(b) = self.buf.as_mut() {
            b.make_optional(i);
        }
    }

    #[inline]
    fn b(&mut self) -> &mut OwnedCmdBuf {
        self.buf.as_mut().expect("attributes need an ioctl method")
    }

    #[inline]
    fn push(&mut self, i: usize, kind: Kind) -> A<'_> {
        debug_assert_eq!(i, self.maps.len());
        self.maps.push(Map {
            w: Spot::default(),
            wx: Spot::default(),
            kind,
        });
        A { c: self, i }
    }

    /// `fill_attr_in_obj`.
    #[inline]
    pub fn in_obj(&mut self, id: u16, handle: u32) -> A<'_> {
        let i = self.b().fill_in_obj(id, handle);
        self.push(i, Kind::Val)
    }
    /// `fill_attr_out_obj`.
    #[inline]
    pub fn out_obj(&mut self, id: u16) -> A<'_> {
        let i = self.b().fill_in_obj(id, 0);
        self.push(i, Kind::OutObj)
    }
    /// `fill_attr_in_uint32`.
    #[inline]
    pub fn in_u32(&mut self, id: u16, v: u32) -> A<'_> {
        let i = self.b().fill_in_u32(id, v);
        self.push(i, Kind::Val32)
    }
    /// `fill_attr_in_uint64` / `fill_attr_const_in`.
    #[inline]
    pub fn in_u64(&mut self, id: u16, v: u64) -> A<'_> {
        let i = self.b().fill_in_u64(id, v);
        self.push(i, Kind::Val)
    }
    /// `fill_attr_in_fd`: nothing for fd -1.
    #[inline]
    pub fn in_fd(&mut self, id: u16, fd: c_int) -> Option<A<'_>> {
        let i = self.b().fill_in_fd(id, fd)?;
        Some(self.push(i, Kind::Val))
    }
    /// `fill_attr_in`: `len` bytes at `p`.
    ///
    /// # Safety
    /// `p` has `len` readable bytes until the command ran.
    pub unsafe fn in_bytes(&mut self, id: u16, p: *const u8, len: usize) -> A<'_> {
        // SAFETY: `p` has `len` readable bytes (caller's contract).
        let i = unsafe { self.b().fill_in(id, p, len) };
        self.push(i, Kind::Bytes)
    }
    /// `fill_attr_in_ptr`.
    ///
    /// # Safety
    /// As for [`in_bytes`](Self::in_bytes).
    pub unsafe fn in_ptr<T>(&mut self, id: u16, p: *const T) -> A<'_> {
        // SAFETY: `p` points at a readable `T` (caller's contract).
        unsafe { self.in_bytes(id, p.cast(), core::mem::size_of::<T>()) }
    }
    /// `fill_attr_in_enum`.
    ///
    /// # Safety
    /// As for [`in_bytes`](Self::in_bytes).
    pub unsafe fn in_enum(&mut self, id: u16, elem: u8, p: *const u8, len: usize) -> A<'_> {
        // SAFETY: `p` has `len` readable bytes (caller's contract).
        let i = unsafe { self.b().fill_in_enum(id, elem, p, len) };
        self.push(i, Kind::Bytes)
    }
    /// `fill_attr_out`: `len` bytes at `p`.
    #[inline]
    pub fn out_bytes(&mut self, id: u16, p: *mut u8, len: usize) -> A<'_> {
        let i = self.b().fill_out(id, p, len);
        self.push(i, Kind::Out)
    }
    /// `fill_attr_out_ptr`.
    #[inline]
    pub fn out<T>(&mut self, id: u16, p: *mut T) -> A<'_> {
        self.out_bytes(id, p.cast(), core::mem::size_of::<T>())
    }
    /// `fill_attr_out_fd`.
    pub fn out_fd(&mut self, id: u16) -> A<'_> {
        let i = self.b().fill_out_fd(id);
        self.push(i, Kind::OutObj)
    }

    /// A value only the `write()` forms carry (legacy place, extended place).
    pub fn wonly(&mut self, w: Option<Place>, wx: Option<Place>, v: u64) {
        self.extras.push(Extra {
            w: w.map_or_else(Spot::default, Spot::of),
            wx: wx.map_or_else(Spot::default, Spot::of),
            src: Src::Val(v),
        });
    }

    /// Bytes only the `write()` forms carry.
    pub fn wonly_bytes(&mut self, w: Option<Place>, wx: Option<Place>, p: *const u8, len: usize) {
        self.extras.push(Extra {
            w: w.map_or_else(Spot::default, Spot::of),
            wx: wx.map_or_else(Spot::default, Spot::of),
            src: Src::Bytes(p, len),
        });
    }

    /// The object handle (or fd) an output attribute received.
    #[inline]
    pub fn obj(&mut self, i: usize) -> u32 {
        self.b().attr(i).data as u32
    }

    pub fn fd(&mut self, i: usize) -> c_int {
        self.b().attr(i).data as i64 as c_int
    }

    /// The core response of the `write()` that completed the command, as a
    /// `T` (zero-extended when the form's response is shorter).
    pub fn resp_as<T: Copy>(&self) -> T {
        let mut v: T = super::uapi::zeroed();
        let (p, len) = match self.resp_img {
            RespImg::None => return v,
            RespImg::Own(len) => (self.own_resp.as_ptr().cast::<u8>(), len.min(self.own_resp.len() * 8)),
            RespImg::Prov(p, len) => (p.cast_const(), len),
        };
        let n = len.min(core::mem::size_of::<T>());
        if !p.is_null() && n > 0 {
            // SAFETY: `Own` is our `own_resp`, `n` within its bytes; `Prov`
            // is set by `run_write` into the provider's response buffer,
            // which every caller reads right after `exec` while that buffer
            // is still live; `n` is at most the image's length and at most
            // `size_of::<T>()`.
            unsafe { core::ptr::copy_nonoverlapping(p, (&mut v as *mut T).cast::<u8>(), n) };
        }
        v
    }

    /// The ioctl block (tests, and callers that need the raw chain).
    pub fn block(&mut self) -> *mut ibv_command_buffer {
        self.b().as_ptr()
    }

    /// The ioctl header and attributes as they would be sent (tests).
    #[cfg(test)]
    pub fn ioctl_bytes(&mut self) -> Vec<u8> {
        if self.uhw_ioctl {
            self.uhw_ioctl = false;
            self.add_uhw();
        }
        self.b().header_and_attrs()
    }

    /// Adds the provider's private data as UHW attributes (once).
    fn add_uhw(&mut self) {
        if let Some(p) = self.req.filter(|p| p.extra() > 0) {
            // SAFETY: the provider's request buffer holds `total` bytes (the
            // `compat` caller's contract), so `ptr + core` starts its
            // `extra()` bytes of driver data.
            let i = unsafe { self.b().fill_in(UVERBS_ATTR_UHW_IN, p.ptr.add(p.core), p.extra()) };
            self.maps.push(Map {
                w: Spot::default(),
                wx: Spot::default(),
                kind: Kind::Val,
            });
            let _ = i;
        }
        if let Some(p) = self.resp.filter(|p| p.extra() > 0) {
            // SAFETY: likewise for the provider's response buffer.
            let i = self
                .b()
                .fill_out(UVERBS_ATTR_UHW_OUT, unsafe { p.ptr.add(p.core) }, p.extra());
            self.maps.push(Map {
                w: Spot::default(),
                wx: Spot::default(),
                kind: Kind::Val,
            });
            let _ = i;
        }
    }

    /// Runs the command.  On failure the errno value is returned (and
    /// normally also left in `errno` by the failing system call).
    ///
    /// # Safety
    /// Every pointer given to the builder is valid until this returns.
    #[inline]
    pub unsafe fn exec(&mut self) -> Result<Path, c_int> {
        if self.buf.is_none() {
            let ex = self.write.is_none();
            // SAFETY: every pointer given to the builder is live (contract).
            return unsafe { self.run_write(ex) };
        }
        // SAFETY: as above.
        match unsafe { self.try_ioctl() }? {
            None => Ok(Path::Ioctl),
            // Commands that only exist extended use that form even where
            // upstream's fallback says "plain write" (the destroys of WQs,
            // flows and RWQ indirection tables).
            Some(false) => {
                let ex = self.write.is_none();
                // SAFETY: as above.
                unsafe { self.run_write(ex) }
            }
            // SAFETY: as above.
            Some(true) => unsafe { self.run_write(true) },
        }
    }

    /// The ioctl half of [`exec`](Self::exec) (upstream's
    /// `execute_ioctl_fallback`): `Ok(None)` when the ioctl succeeded,
    /// `Ok(Some(ex))` when the kernel lacks it and the command may be
    /// retried as a `write()` (extended form if `ex`), else the error.
    ///
    /// # Safety
    /// As for [`exec`](Self::exec).
    pub unsafe fn try_ioctl(&mut self) -> Result<Option<bool>, c_int> {
        if self.uhw_ioctl {
            self.uhw_ioctl = false;
            self.add_uhw();
        }
        let ctx = self.ctx;
        let cmdb = self.b().as_ptr();
        let Some(bit) = self.m.op else {
            // SAFETY: `ctx` is open (`new`'s contract); `cmdb` is our block,
            // sized by `new` for its own attributes and the linked chain's,
            // whose buffers are live (this function's contract).
            return match unsafe { ioctl::execute(ctx, cmdb) } {
                0 => Ok(None),
                e => Err(e),
            };
        };
        // SAFETY: `ctx` is an open context (`new`'s contract).
        let st = unsafe { state::of(ctx) };
        if !st.is_some_and(|s| s.unsupported(bit)) {
            // SAFETY: as for the ioctl-only case above.
            match unsafe { ioctl::execute(ctx, cmdb) } {
                0 => return Ok(None),
                libc::ENOTTY => {
                    if let Some(s) = st {
                        s.mark_all_unsupported();
                    }
                }
                libc::EPROTONOSUPPORT => {
                    if let Some(s) = st {
                        s.mark_unsupported(bit);
                    }
                }
                e => return Err(e),
            }
        }
        // SAFETY: `cmdb` is our block, linked to the provider's valid chain.
        match unsafe { ioctl::check_legacy(cmdb) } {
            Legacy::Write => Ok(Some(false)),
            Legacy::WriteEx => Ok(Some(true)),
            Legacy::NotSupported => {
                set_errno(libc::EOPNOTSUPP);
                Err(libc::EOPNOTSUPP)
            }
        }
    }

    /// Stores `src` into `place` of the image `base` (`len` bytes).
    ///
    /// # Safety
    /// `base` has `len` writable bytes; a `Src::Bytes` pointer is null or
    /// has its `n` readable bytes.
    unsafe fn put(base: *mut u8, len: usize, f: Field, src: Src) {
        if f.off + f.len > len {
            return;
        }
        // SAFETY: `f.off + f.len <= len` (checked above), so `dst` and the
        // `f.len` bytes after it lie in the image (contract); every store
        // below writes at most `f.len` bytes, unaligned-tolerant.
        unsafe {
            let dst = base.add(f.off);
            match src {
                Src::Val(v) => match f.len {
                    1 => dst.write(v as u8),
                    2 => dst.cast::<u16>().write_unaligned(v as u16),
                    4 => dst.cast::<u32>().write_unaligned(v as u32),
                    8 => dst.cast::<u64>().write_unaligned(v),
                    n => {
                        let b = v.to_ne_bytes();
                        core::ptr::copy_nonoverlapping(b.as_ptr(), dst, n.min(8));
                    }
                },
                Src::Bytes(p, n) => {
                    // `p` has `n` readable bytes (contract); `min` keeps
                    // the copy inside both.
                    if !p.is_null() {
                        core::ptr::copy_nonoverlapping(p, dst, n.min(f.len));
                    }
                }
            }
        }
    }

    /// The `write()` half of [`exec`](Self::exec), in the extended form if
    /// `ex`.
    ///
    /// # Safety
    /// As for [`exec`](Self::exec).
    unsafe fn run_write(&mut self, ex: bool) -> Result<Path, c_int> {
        let form = if ex { self.write_ex } else { self.write };
        let Some(form) = form else {
            set_errno(libc::EOPNOTSUPP);
            return Err(libc::EOPNOTSUPP);
        };
        let hdr_len = if ex { EX_HDR } else { HDR };
        let core_req = hdr_len + form.req;

        // Request image: a caller-filled request is used where it is; for
        // the others, upstream's headroom scheme: in front of the
        // provider's driver data when there is some (and room), else a
        // buffer of our own.
        let zero_core = self.zero_core;
        let in_place = |p: &ProvBuf, core: usize| (!zero_core || p.extra() > 0) && p.core >= core;
        let uhw_in = self.req.map_or(0, |p| p.extra());
        // Our own request image, on the stack when it fits.
        let mut own_stack: [u64; OWN_REQ_WORDS];
        let mut own_heap: Vec<u64>;
        let req_ptr = match self.req {
            // SAFETY: `p.core >= core_req`, so the image ends exactly where
            // the provider's driver data starts, inside its buffer.
            Some(p) if in_place(&p, core_req) => unsafe { p.ptr.add(p.core - core_req) },
            p => {
                let words = (core_req + uhw_in).div_ceil(8);
                let b = if words <= OWN_REQ_WORDS {
                    own_stack = [0u64; OWN_REQ_WORDS];
                    own_stack.as_mut_ptr().cast::<u8>()
                } else {
                    own_heap = vec![0u64; words];
                    own_heap.as_mut_ptr().cast::<u8>()
                };
                if let Some(p) = p {
                    if !self.zero_core {
                        // A caller-filled request that is too short for
                        // the form: take what it has.
                        // SAFETY: the provider's buffer has `p.core` bytes
                        // and ours `core_req + uhw_in`; at most the smaller
                        // of `p.core` and `core_req` is copied.
                        unsafe { core::ptr::copy_nonoverlapping(p.ptr, b, p.core.min(core_req)) };
                    }
                    // SAFETY: the provider's `uhw_in = total - core` bytes of
                    // driver data go behind our core request, which leaves
                    // exactly `uhw_in` bytes of our buffer.
                    unsafe { core::ptr::copy_nonoverlapping(p.ptr.add(p.core), b.add(core_req), uhw_in) };
                }
                b
            }
        };
        if self.zero_core {
            // SAFETY: `req_ptr` starts `core_req` bytes of image (either
            // branch above).
            unsafe { core::ptr::write_bytes(req_ptr, 0, core_req) };
        }
        // SAFETY: the header(s) take the first `hdr_len <= core_req` bytes;
        // every pointer given to the builder is live (contract).
        unsafe { self.fill_req(req_ptr.add(hdr_len), form.req, ex) };
        let core = req_ptr.wrapping_add(hdr_len);

        // Response image, likewise.
        let uhw_out = self.resp.map_or(0, |p| p.extra());
        let mut copy_back = None;
        let mut own = false;
        let resp_ptr = if form.resp == 0 && uhw_out == 0 {
            core::ptr::null_mut()
        } else {
            match self.resp {
                // SAFETY: `p.core >= form.resp`: the image lies in the
                // provider's buffer, ending where its driver data starts.
                Some(p) if in_place(&p, form.resp) => unsafe { p.ptr.add(p.core - form.resp) },
                p => {
                    copy_back = p;
                    own = true;
                    self.own_resp = vec![0u64; (form.resp + uhw_out).div_ceil(8)];
                    self.own_resp.as_mut_ptr().cast::<u8>()
                }
            }
        };

        let req_size = core_req + uhw_in;
        let resp_size = form.resp + uhw_out;
        let rc = if ex {
            // SAFETY: `ctx` is open; the request image has `req_size` bytes
            // starting with room for the `ex_hdr`, the response image (or
            // null) `resp_size` bytes, both built above.
            unsafe {
                write::cmd_write_ex(
                    self.ctx, form.cmd, req_ptr, core_req, req_size, resp_ptr, form.resp, resp_size,
                )
            }
        } else {
            if form.resp > 0 {
                // The legacy request's `response` member (always first).
                // SAFETY: every legacy request with a response starts with
                // its 8-byte `response`, inside the `form.req` bytes at
                // `core`; stored unaligned.
                unsafe { core.cast::<u64>().write_unaligned(resp_ptr as usize as u64) };
            }
            // SAFETY: as for the extended form, with the plain header.
            unsafe {
                write::cmd_write(
                    self.ctx, form.cmd, req_ptr, core_req, req_size, resp_ptr, form.resp, resp_size,
                )
            }
        };
        if rc != 0 {
            return Err(rc);
        }
        if let Some(p) = copy_back {
            // SAFETY: `copy_back` is set only with our own response image,
            // `form.resp + uhw_out` bytes; the provider's buffer has
            // `uhw_out` bytes of driver data after its `core`.
            unsafe { core::ptr::copy_nonoverlapping(resp_ptr.add(form.resp), p.ptr.add(p.core), uhw_out) };
        }
        self.resp_img = if own {
            RespImg::Own(form.resp)
        } else {
            RespImg::Prov(resp_ptr, form.resp)
        };
        if !resp_ptr.is_null() {
            // SAFETY: the response image has `form.resp` bytes of core
            // response; the outputs are live (contract).
            unsafe { self.copy_outputs(resp_ptr, form.resp, ex) };
        }
        Ok(if ex { Path::WriteEx } else { Path::Write })
    }

    /// The request's core: every attribute's and write-only value's
    /// request place filled in (`core` has `len` bytes).
    ///
    /// # Safety
    /// `core` has `len` writable bytes; the byte sources given to the
    /// builder are live.
    unsafe fn fill_req(&mut self, core: *mut u8, len: usize, ex: bool) {
        if let Some(b) = self.buf.as_mut() {
            for (i, m) in self.maps.iter().enumerate() {
                let Some(f) = (if ex { m.wx } else { m.w }).req() else {
                    continue;
                };
                let a = *b.attr(i);
                let d = a.data.to_ne_bytes();
                let src = match m.kind {
                    Kind::Val => Src::Val(a.data),
                    Kind::Val32 => Src::Val(u32::from_ne_bytes([d[0], d[1], d[2], d[3]]) as u64),
                    Kind::Bytes if a.len as usize > 8 => Src::Bytes(a.data as usize as *const u8, a.len as usize),
                    Kind::Bytes => Src::Bytes(d.as_ptr(), a.len as usize),
                    Kind::Out | Kind::OutObj => continue,
                };
                // SAFETY: `core` has `len` bytes (contract); a by-address
                // source was given with its length to `in_bytes` and is
                // live until `exec` returns, an inline one is `d`.
                unsafe { Self::put(core, len, f, src) };
            }
        }
        for e in self.extras.iter().copied() {
            if let Some(f) = (if ex { e.wx } else { e.w }).req() {
                // SAFETY: as above, for the sources of `wonly_bytes`.
                unsafe { Self::put(core, len, f, e.src) };
            }
        }
    }

    /// Outputs: from the core response (`len` bytes at `resp`) to where
    /// the ioctl would have put them.
    ///
    /// # Safety
    /// `resp` has `len` readable bytes; the output buffers are live.
    unsafe fn copy_outputs(&mut self, resp: *const u8, len: usize, ex: bool) {
        let Some(b) = self.buf.as_mut() else { return };
        for (i, m) in self.maps.iter().enumerate() {
            let Some(f) = (if ex { m.wx } else { m.w }).resp() else {
                continue;
            };
            if f.off + f.len > len {
                continue;
            }
            // SAFETY: `f.off + f.len <= len` (checked above): the field
            // lies in the core response image.
            let src = unsafe { resp.add(f.off) };
            let a = b.attr(i);
            match m.kind {
                // SAFETY: `src` has `f.len` readable bytes; `dst` is the
                // output buffer of `n` bytes given to `out_bytes`, live until
                // `exec` returns (contract).
                Kind::Out => unsafe {
                    core::ptr::copy_nonoverlapping(src, a.data as usize as *mut u8, (a.len as usize).min(f.len))
                },
                Kind::OutObj => {
                    let mut v = [0u8; 8];
                    // SAFETY: at most 8 of the field's `f.len` bytes.
                    unsafe { core::ptr::copy_nonoverlapping(src, v.as_mut_ptr(), f.len.min(8)) };
                    a.data = u64::from_ne_bytes(v);
                }
                _ => {}
            }
        }
    }
}
