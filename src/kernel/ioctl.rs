//! `RDMA_VERBS_IOCTL`: running a chain of `ibv_command_buffer` blocks, and
//! an owned command buffer for the commands this library builds itself.
//!
//! A command is a chain of blocks (the innermost caller's block first, each
//! `next` pointing at the block of its caller).  The block that is executed
//! has room for the attributes of the whole chain: before the ioctl the
//! attributes of the linked blocks are appended to its own (so the kernel
//! sees one `ib_uverbs_ioctl_hdr` with one attribute array), and after a
//! successful ioctl they are copied back so each caller can read its outputs.

use std::os::raw::c_int;

use crate::abi::{ib_uverbs_attr, ib_uverbs_ioctl_hdr, ibv_command_buffer, ibv_context, _UHW_NO_INDEX};
use crate::abi::{CMDB_BUFFER_ERROR, CMDB_FALLBACK_IOCTL_ONLY, CMDB_FALLBACK_REQUIRE_EX};
use crate::ffi::{errno, set_errno};

use super::uapi::{RDMA_VERBS_IOCTL, UVERBS_ATTR_F_MANDATORY, UVERBS_ATTR_UHW_IN};

const HDR: usize = core::mem::size_of::<ib_uverbs_ioctl_hdr>();
const ATTR: usize = core::mem::size_of::<ib_uverbs_attr>();

/// `__ioctl_final_num_attrs`: `num_attrs` plus the attributes already
/// written into every block reachable from `link`.
///
/// # Safety
/// `link` is null or a valid chain.
pub unsafe fn final_num_attrs(num_attrs: usize, mut link: *mut ibv_command_buffer) -> usize {
    let mut n = num_attrs;
    while !link.is_null() {
        // SAFETY: `link` is a non-null block of a valid chain (caller's
        // contract): its `next_attr` lies in its own array and `next` is the
        // following block or null.
        unsafe {
            n += ibv_command_buffer::used(link);
            link = (*link).next;
        }
    }
    n
}

/// Appends the attributes of the linked blocks to `cmd`'s own (upstream's
/// `prepare_attrs`) and sets `num_attrs`.  A `UHW_IN` that a block records
/// by index (`uhw_in_idx`) is kept as a pointer until here and is inlined
/// now when it fits in `data`, as the kernel requires.
///
/// # Safety
/// `cmd` is a valid chain whose first block has room for the attributes of
/// every block (or will flag `CMDB_BUFFER_ERROR` where it has not); a
/// pointer-form `UHW_IN` points at its `len` readable bytes.
unsafe fn prepare_attrs(cmd: *mut ibv_command_buffer) {
    // SAFETY: this function's contract is append_links'.
    unsafe { append_links(cmd) };
    // SAFETY: `cmd` is a valid block (contract); `uhw_in_idx` is checked against `num_attrs`, so
    // `uhw` is one of the attributes just assembled, and a UHW_IN of at most
    // 8 bytes still in pointer form points at `len` readable bytes of the
    // provider's driver data (contract).
    unsafe {
        let base = ibv_command_buffer::attrs(cmd);
        if (*cmd).uhw_in_idx != _UHW_NO_INDEX && ((*cmd).uhw_in_idx as u16) < (*cmd).hdr.num_attrs {
            let uhw = base.add((*cmd).uhw_in_idx as usize);
            if (*uhw).attr_id == UVERBS_ATTR_UHW_IN && (*uhw).len as usize <= 8 && (*uhw).data != 0 {
                let p = (*uhw).data as usize as *const u8;
                let mut v = [0u8; 8];
                core::ptr::copy_nonoverlapping(p, v.as_mut_ptr(), (*uhw).len as usize);
                (*uhw).data = u64::from_ne_bytes(v);
            }
        }
    }
}

/// The first half of [`prepare_attrs`]: the linked blocks' attributes
/// appended to `cmd`'s own, `num_attrs` set.
///
/// # Safety
/// As for [`prepare_attrs`].
unsafe fn append_links(cmd: *mut ibv_command_buffer) {
    // SAFETY: `cmd` and every block reachable through `next` are valid
    // command buffers (contract); `end` starts at `cmd`'s `next_attr`, is
    // compared with `last_attr` before every write, and `src.add(i)` stays
    // below the linked block's `next_attr` (`i < used(link)`).
    unsafe {
        let base = ibv_command_buffer::attrs(cmd);
        let mut end = (*cmd).next_attr;
        let mut link = (*cmd).next;
        while !link.is_null() {
            if (*link).uhw_in_idx != _UHW_NO_INDEX && (*cmd).uhw_in_idx == _UHW_NO_INDEX {
                (*cmd).uhw_in_idx = ((*link).uhw_in_idx as usize + end.offset_from(base) as usize) as u8;
            }
            let n = ibv_command_buffer::used(link);
            let src = ibv_command_buffer::attrs(link);
            for i in 0..n {
                if end >= (*cmd).last_attr {
                    // More attributes than the block was sized for: refuse
                    // rather than write past it.
                    (*cmd).flags |= CMDB_BUFFER_ERROR;
                    break;
                }
                end.write(src.add(i).read());
                end = end.add(1);
            }
            link = (*link).next;
        }
        (*cmd).hdr.num_attrs = end.offset_from(base) as u16;
    }
}

/// Copies the linked blocks' attributes back from `cmd` (upstream's
/// `finalize_attrs`), so their owners see what the kernel wrote.
///
/// # Safety
/// `cmd` is a chain that [`prepare_attrs`] assembled without error.
unsafe fn finalize_attrs(cmd: *mut ibv_command_buffer) {
    // SAFETY: prepare_attrs copied exactly `used(link)` attributes of each
    // linked block, in chain order, behind `cmd`'s own `next_attr` and below
    // its `last_attr`; reading them back in the same order stays inside that
    // range, and each write stays below the link's own `next_attr`.
    unsafe {
        let mut end = (*cmd).next_attr;
        let mut link = (*cmd).next;
        while !link.is_null() {
            let n = ibv_command_buffer::used(link);
            let dst = ibv_command_buffer::attrs(link);
            for i in 0..n {
                dst.add(i).write(end.read());
                end = end.add(1);
            }
            link = (*link).next;
        }
    }
}

/// Issues the ioctl for the chain starting at `cmd` (upstream's
/// `execute_ioctl`): 0, or an errno value (also left in `errno`).
///
/// # Safety
/// `ctx` is an open context; `cmd` a valid chain whose first block has room
/// for every attribute of the chain.
pub unsafe fn execute(ctx: *mut ibv_context, cmd: *mut ibv_command_buffer) -> c_int {
    // SAFETY: `cmd` is a valid block (caller's contract).
    if unsafe { (*cmd).flags } & CMDB_BUFFER_ERROR != 0 {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    // SAFETY: `cmd` is a valid chain with room for every attribute (caller's
    // contract), which is what prepare_attrs needs.
    unsafe { prepare_attrs(cmd) };
    // SAFETY: as above.
    if unsafe { (*cmd).flags } & CMDB_BUFFER_ERROR != 0 {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    // SAFETY: `hdr` is a field of the valid block `cmd`; `ctx` is an open
    // context (caller's contract), so its state lookup and `cmd_fd` are
    // readable.
    let hdr = unsafe {
        let hdr = core::ptr::addr_of_mut!((*cmd).hdr);
        (*hdr).length = (HDR + ATTR * (*hdr).num_attrs as usize) as u16;
        (*hdr).reserved1 = 0;
        (*hdr).reserved2 = 0;
        (*hdr).driver_id = super::state::of(ctx).map_or(0, |s| s.driver_id());
        hdr
    };

    // SAFETY: the header is followed in the same allocation by `num_attrs`
    // assembled attributes, exactly `length` bytes, as RDMA_VERBS_IOCTL
    // reads them; `cmd_fd` belongs to the open context.
    if unsafe { libc::ioctl((*ctx).cmd_fd, RDMA_VERBS_IOCTL as _, hdr) } != 0 {
        return errno();
    }
    // SAFETY: prepare_attrs succeeded on this chain (no buffer error above).
    unsafe { finalize_attrs(cmd) };
    0
}

/// Upstream's `_check_legacy`: may a command whose ioctl was turned down be
/// retried as a `write()`?  Only if no linked block carries a mandatory
/// attribute other than driver data (UHW), and no block demands the ioctl.
pub enum Legacy {
    Write,
    WriteEx,
    /// EOPNOTSUPP: the command cannot be expressed as a `write()`.
    NotSupported,
}

/// # Safety
/// `cmd` is a valid chain.
pub unsafe fn check_legacy(cmd: *mut ibv_command_buffer) -> Legacy {
    // SAFETY: `cmd` is a valid block (caller's contract).
    let (flags, mut link) = unsafe { ((*cmd).flags, (*cmd).next) };
    let mut require_ex = flags & CMDB_FALLBACK_REQUIRE_EX != 0;
    let mut ioctl_only = flags & CMDB_FALLBACK_IOCTL_ONLY != 0;
    while !link.is_null() {
        // SAFETY: `link` is a non-null block of the valid chain (contract);
        // only its filled attributes (below `next_attr`) are read.
        let (n, a, lflags, next) = unsafe {
            (
                ibv_command_buffer::used(link),
                ibv_command_buffer::attrs(link),
                (*link).flags,
                (*link).next,
            )
        };
        for i in 0..n {
            // SAFETY: `i < used(link)`: a filled attribute of the block.
            let at = unsafe { &*a.add(i) };
            if at.attr_id != super::uapi::UVERBS_ATTR_UHW_IN
                && at.attr_id != super::uapi::UVERBS_ATTR_UHW_OUT
                && at.flags & UVERBS_ATTR_F_MANDATORY != 0
            {
                return Legacy::NotSupported;
            }
        }
        require_ex |= lflags & CMDB_FALLBACK_REQUIRE_EX != 0;
        ioctl_only |= lflags & CMDB_FALLBACK_IOCTL_ONLY != 0;
        link = next;
    }
    if ioctl_only {
        Legacy::NotSupported
    } else if require_ex {
        Legacy::WriteEx
    } else {
        Legacy::Write
    }
}

/// Attributes a block holds in place (its own and its links'); a command
/// with more takes its block from the heap.
const INLINE_ATTRS: usize = 24;

/// A block with its attribute array, laid out as the kernel and the
/// providers expect it (`attrs` directly follows `hdr`).  Slots at and
/// after `next_attr` are never read before they are written.
#[repr(C)]
struct Block<const N: usize> {
    cmd: ibv_command_buffer,
    attrs: core::mem::MaybeUninit<[ib_uverbs_attr; N]>,
}
const _: () = assert!(core::mem::offset_of!(Block<1>, attrs) == core::mem::size_of::<ibv_command_buffer>());

/// Where a block lives (in place is the point: the size difference is
/// the stack room a command takes, as upstream's on-stack buffers do).
#[allow(clippy::large_enum_variant)]
enum Mem {
    /// Header written by `new`; attribute slots as for [`Block`].
    Inline(core::mem::MaybeUninit<Block<INLINE_ATTRS>>),
    /// An `ibv_command_buffer` followed by its attributes, 8-aligned.
    Heap(Vec<u64>),
}

/// A command buffer owned by Rust: an `ibv_command_buffer` followed by its
/// attribute array, in place (as upstream's `DECLARE_COMMAND_BUFFER_LINK`
/// declares it on the stack) unless the command has more than
/// `INLINE_ATTRS` attributes.  The buffer may move until it is run, so
/// its `next_attr` / `last_attr` pointers are set from `used` / `total`
/// whenever [`OwnedCmdBuf::as_ptr`] hands the block out.  Filling mirrors
/// the `fill_attr_*` helpers of `cmd_ioctl.h`.
pub struct OwnedCmdBuf {
    mem: Mem,
    used: usize,
    total: usize,
}

impl OwnedCmdBuf {
    /// A block for method `method_id` of object `object_id` with room for
    /// `num_attrs` own attributes plus those already in `link`.
    ///
    /// # Safety
    /// `link` is null or a valid chain that outlives this buffer's use.
    #[inline]
    pub unsafe fn new(object_id: u16, method_id: u16, num_attrs: usize, link: *mut ibv_command_buffer) -> Self {
        // SAFETY: `link` is null or a valid chain (caller's contract).
        let total = unsafe { final_num_attrs(num_attrs, link) };
        let cmd = ibv_command_buffer {
            next: link,
            next_attr: core::ptr::null_mut(),
            last_attr: core::ptr::null_mut(),
            uhw_in_idx: _UHW_NO_INDEX,
            uhw_out_idx: _UHW_NO_INDEX,
            uhw_in_headroom_dwords: 0,
            uhw_out_headroom_dwords: 0,
            flags: 0,
            hdr: ib_uverbs_ioctl_hdr {
                object_id,
                method_id,
                ..Default::default()
            },
        };
        let mem = if total <= INLINE_ATTRS {
            let mut b = core::mem::MaybeUninit::<Block<INLINE_ATTRS>>::uninit();
            // SAFETY: writing the header field of the (uninitialised) block;
            // the attribute slots stay uninitialised, which `Block` allows.
            unsafe { core::ptr::addr_of_mut!((*b.as_mut_ptr()).cmd).write(cmd) };
            Mem::Inline(b)
        } else {
            let bytes = core::mem::size_of::<ibv_command_buffer>() + ATTR * total;
            let mut v = vec![0u64; bytes.div_ceil(8)];
            // SAFETY: `v` is 8-aligned (u64) and larger than a block header.
            unsafe { v.as_mut_ptr().cast::<ibv_command_buffer>().write(cmd) };
            Mem::Heap(v)
        };
        OwnedCmdBuf { mem, used: 0, total }
    }

    /// The block, its attribute pointers set for where it is now.
    #[inline]
    pub fn as_ptr(&mut self) -> *mut ibv_command_buffer {
        let cmd: *mut ibv_command_buffer = match &mut self.mem {
            Mem::Inline(b) => b.as_mut_ptr().cast(),
            Mem::Heap(v) => v.as_mut_ptr().cast(),
        };
        // SAFETY: `cmd` heads a block with room for `total` attributes
        // (`new`), and `used <= total`, so both pointers lie in (or one past
        // the end of) its attribute array.
        unsafe {
            let attrs = ibv_command_buffer::attrs(cmd);
            (*cmd).next_attr = attrs.add(self.used);
            (*cmd).last_attr = attrs.add(self.total);
        }
        cmd
    }

    fn cmd(&self) -> &ibv_command_buffer {
        match &self.mem {
            // SAFETY: both kinds of block begin with the header `new` wrote.
            Mem::Inline(b) => unsafe { &*b.as_ptr().cast::<ibv_command_buffer>() },
            // SAFETY: as above.
            Mem::Heap(v) => unsafe { &*v.as_ptr().cast::<ibv_command_buffer>() },
        }
    }

    /// Number of own attributes filled so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.used
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn set_flags(&mut self, bits: u8) {
        self.cmd_mut().flags |= bits;
    }

    pub fn flags(&self) -> u8 {
        self.cmd().flags
    }

    fn cmd_mut(&mut self) -> &mut ibv_command_buffer {
        match &mut self.mem {
            // SAFETY: both kinds of block begin with the header `new` wrote;
            // the `&mut self` borrow makes the reference unique.
            Mem::Inline(b) => unsafe { &mut *b.as_mut_ptr().cast::<ibv_command_buffer>() },
            // SAFETY: as above.
            Mem::Heap(v) => unsafe { &mut *v.as_mut_ptr().cast::<ibv_command_buffer>() },
        }
    }

    /// The first slot of the attribute array.
    #[inline]
    fn slots(&mut self) -> *mut ib_uverbs_attr {
        let cmd: *mut ibv_command_buffer = self.cmd_mut();
        // SAFETY: `cmd` heads a block, which its attribute array follows.
        unsafe { ibv_command_buffer::attrs(cmd) }
    }

    /// Own attribute `i` (filled earlier).
    #[inline]
    pub fn attr(&mut self, i: usize) -> &mut ib_uverbs_attr {
        assert!(i < self.used);
        // SAFETY: `i < used`, so slot `i` is a filled attribute of our own
        // array; the `&mut self` borrow makes the reference unique.
        unsafe { &mut *self.slots().add(i) }
    }

    /// `_ioctl_next_attr`: `a` in the next free slot, mandatory.  Returns
    /// its index.
    #[inline]
    fn push(&mut self, mut a: ib_uverbs_attr) -> usize {
        let i = self.used;
        assert!(i < self.total, "command buffer too small");
        a.flags = UVERBS_ATTR_F_MANDATORY;
        // SAFETY: `i < total`: the slot lies in the array `new` sized for
        // `total` attributes.
        unsafe { self.slots().add(i).write(a) };
        self.used = i + 1;
        i
    }

    /// `fill_attr_in_obj` / `fill_attr_out_obj` (handle 0).
    #[inline]
    pub fn fill_in_obj(&mut self, attr_id: u16, handle: u32) -> usize {
        self.push(ib_uverbs_attr {
            attr_id,
            data: handle as u64,
            ..Default::default()
        })
    }

    /// `fill_attr_in`: up to 8 bytes inline, longer data by address.
    ///
    /// # Safety
    /// `data` has `len` readable bytes (read now when `len <= 8`, by the
    /// kernel later otherwise).
    #[inline]
    pub unsafe fn fill_in(&mut self, attr_id: u16, data: *const u8, len: usize) -> usize {
        if len > u16::MAX as usize {
            self.set_flags(CMDB_BUFFER_ERROR);
        }
        let v = if len > 8 {
            data as usize as u64
        } else {
            let mut v = [0u8; 8];
            // SAFETY: `data` has `len <= 8` readable bytes (caller's
            // contract) and `v` has 8.
            unsafe { core::ptr::copy_nonoverlapping(data, v.as_mut_ptr(), len) };
            u64::from_ne_bytes(v)
        };
        self.push(ib_uverbs_attr {
            attr_id,
            len: len as u16,
            data: v,
            ..Default::default()
        })
    }

    /// `fill_attr_in_uint64` / `fill_attr_const_in`.
    #[inline]
    pub fn fill_in_u64(&mut self, attr_id: u16, v: u64) -> usize {
        self.push(ib_uverbs_attr {
            attr_id,
            len: 8,
            data: v,
            ..Default::default()
        })
    }

    /// `fill_attr_in_uint32`.
    #[inline]
    pub fn fill_in_u32(&mut self, attr_id: u16, v: u32) -> usize {
        let mut d = [0u8; 8];
        d[..4].copy_from_slice(&v.to_ne_bytes());
        self.push(ib_uverbs_attr {
            attr_id,
            len: 4,
            data: u64::from_ne_bytes(d),
            ..Default::default()
        })
    }

    /// `fill_attr_in_fd`: no attribute at all for fd -1.
    #[inline]
    pub fn fill_in_fd(&mut self, attr_id: u16, fd: c_int) -> Option<usize> {
        if fd == -1 {
            return None;
        }
        Some(self.push(ib_uverbs_attr {
            attr_id,
            data: fd as i64 as u64,
            ..Default::default()
        }))
    }

    /// `fill_attr_out_fd`.
    #[inline]
    pub fn fill_out_fd(&mut self, attr_id: u16) -> usize {
        self.fill_in_obj(attr_id, 0)
    }

    /// `fill_attr_out`: always by address.
    #[inline]
    pub fn fill_out(&mut self, attr_id: u16, data: *mut u8, len: usize) -> usize {
        if len > u16::MAX as usize {
            self.set_flags(CMDB_BUFFER_ERROR);
        }
        self.push(ib_uverbs_attr {
            attr_id,
            len: len as u16,
            data: data as usize as u64,
            ..Default::default()
        })
    }

    /// `fill_attr_in_enum`.
    ///
    /// # Safety
    /// As for [`fill_in`](Self::fill_in).
    pub unsafe fn fill_in_enum(&mut self, attr_id: u16, elem_id: u8, data: *const u8, len: usize) -> usize {
        // SAFETY: the caller's contract is fill_in's.
        let i = unsafe { self.fill_in(attr_id, data, len) };
        self.attr(i).attr_data = elem_id as u16; // enum_data.elem_id is the low byte
        i
    }

    /// `attr_optional`.
    pub fn make_optional(&mut self, i: usize) {
        self.attr(i).flags &= !UVERBS_ATTR_F_MANDATORY;
    }

    /// The bytes the ioctl would carry for the own block: header followed
    /// by the attributes, as `execute` lays them out (tests).
    #[cfg(test)]
    pub fn header_and_attrs(&mut self) -> Vec<u8> {
        let cmd = self.as_ptr();
        // SAFETY: reading the block we own (prepare_attrs only touches our
        // own array and the links' read-only attributes).
        unsafe {
            prepare_attrs(cmd);
            let hdr = core::ptr::addr_of_mut!((*cmd).hdr);
            (*hdr).length = (HDR + ATTR * (*hdr).num_attrs as usize) as u16;
            let n = (*hdr).length as usize;
            core::slice::from_raw_parts(hdr.cast::<u8>(), n).to_vec()
        }
    }
}

/// Upstream's `has_ioctl_write()`: does the kernel take `write()` commands
/// through the `INVOKE_WRITE` ioctl method?  Probed once per context, with a
/// QUERY_DEVICE whose request is too short (the kernel answers ENOSPC when
/// the method exists).
///
/// # Safety
/// `ctx` must be an open context (valid `cmd_fd`).
pub unsafe fn has_ioctl_write(ctx: *mut ibv_context) -> bool {
    use super::uapi::{attr, cmd, method, obj};
    // SAFETY: a one-attribute buffer with no link to another buffer.
    let mut b = unsafe { OwnedCmdBuf::new(obj::DEVICE, method::INVOKE_WRITE, 1, core::ptr::null_mut()) };
    b.fill_in_u64(attr::WRITE_CMD, cmd::QUERY_DEVICE as u64);
    // SAFETY: an open context (caller's contract) and a command buffer
    // that lives until the call returns.
    let rc = unsafe { execute(ctx, b.as_ptr()) };
    !(rc == libc::EPROTONOSUPPORT || rc == libc::ENOTTY)
}
