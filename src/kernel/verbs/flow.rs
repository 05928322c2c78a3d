//! Flow steering, flow actions (IPsec ESP) and counters.

use std::os::raw::c_int;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::kernel::builder::{req, Cmd, WriteForm};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::uapi::*;

use super::{destroy, outer};

use core::mem::{offset_of, size_of};

/// Reads `T` from a provider spec at byte offset `off`.
///
/// # Safety
/// `p + off` is readable for `size_of::<T>()` bytes, which hold a valid
/// `T` (any alignment).
unsafe fn rd<T: Copy>(p: *const u8, off: usize) -> T {
    // SAFETY: the bytes at `p + off` are readable and hold a `T`
    // (contract); the read is unaligned.
    unsafe { p.add(off).cast::<T>().read_unaligned() }
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// Upstream's `get_filters_size` for the specs whose filter may be longer
/// than the kernel's (IPv4-ext, IPv6, VXLAN): `(ib_filter_size,
/// kern_filter_size)`, EINVAL when too short, EOPNOTSUPP when the extra
/// mask bytes ask for matching the kernel cannot do.
///
/// # Safety
/// `ib` points to a verbs flow spec readable for the `size` its header
/// gives, with its value at `val_off` followed by its mask (as every verbs
/// spec is laid out: header, value, mask).
unsafe fn filters_size(ib: *const u8, val_off: usize, min_filter: usize) -> Result<(usize, usize), c_int> {
    // SAFETY: every spec begins with its `ibv_flow_spec_hdr` (contract).
    let size: u16 = unsafe { rd(ib, offset_of!(ibv_flow_spec_hdr, size)) };
    let ib_filter = (size as i64 - size_of::<ibv_flow_spec_hdr>() as i64) / 2;
    if ib_filter < min_filter as i64 {
        return Err(libc::EINVAL);
    }
    let ib_filter = ib_filter as usize;
    if ib_filter > min_filter {
        // SAFETY: the mask of `ib_filter` bytes follows the value at
        // `val_off`, both within the `size` readable bytes (`size` is at
        // least header + 2 * `ib_filter`); the slice is its tail past
        // `min_filter`, plain bytes.
        let tail = unsafe {
            let mask = ib.add(val_off + ib_filter);
            core::slice::from_raw_parts(mask.add(min_filter), ib_filter - min_filter)
        };
        if !is_zero(tail) {
            return Err(libc::EOPNOTSUPP);
        }
    }
    Ok((ib_filter, min_filter.min(ib_filter)))
}

/// A verbs flow spec and the kernel spec it is converted into: only made
/// by [`spec_to_kern`] from its `ib` and `k`, so `ib` is readable as that
/// function's contract says and `k` is writable for an `ibv_kern_spec`
/// (zeroed) that does not overlap `ib`.
#[derive(Clone, Copy)]
struct SpecConv {
    ib: *const u8,
    k: *mut u8,
}

impl SpecConv {
    /// Writes the kernel spec's header.
    fn set_hdr(self, ty: u32, size: usize) {
        // SAFETY: `k` is writable for an `ibv_kern_spec` (see the type),
        // which begins with the kernel's `ib_uverbs_flow_spec_hdr`; the
        // writes are unaligned.
        unsafe {
            self.k.cast::<u32>().write_unaligned(ty);
            self.k
                .add(offset_of!(ib_uverbs_flow_spec_hdr, size))
                .cast::<u16>()
                .write_unaligned(size as u16);
        }
    }

    /// Copy `n` bytes of val and mask from the verbs spec to the kernel's.
    fn copy(self, ib_val: usize, ib_mask: usize, kv: usize, km: usize, n: usize) {
        // SAFETY: only called below with the value and mask offsets of the
        // verbs spec type the spec's header names and of the kernel spec it
        // becomes; `n` is the kernel filter size, no more than either
        // side's filter (for the variable-length specs `filters_size`
        // checked the verbs side against its `size`), so both reads are
        // within `ib`'s readable bytes and both writes within `k`'s
        // `ibv_kern_spec` (see the type); the two do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ib.add(ib_val), self.k.add(kv), n);
            core::ptr::copy_nonoverlapping(self.ib.add(ib_mask), self.k.add(km), n);
        }
    }
}

/// Upstream's `ib_spec_to_kern_spec`: one verbs flow spec to the kernel's
/// layout at `k` (zeroed, room for an `ibv_kern_spec`).
///
/// # Safety
/// `ib` points to a verbs flow spec, readable for the whole struct its
/// type names and, for the variable-length IPv4-ext, IPv6 and VXLAN specs,
/// for the `size` its header gives (upstream trusts the same); an action
/// spec's `action` / `counters` pointer is live; `k` is writable for
/// `size_of::<ibv_kern_spec>()` bytes and does not overlap `ib`.
unsafe fn spec_to_kern(ib: *const u8, k: *mut u8) -> Result<(), c_int> {
    // SAFETY: every spec begins with its `ibv_flow_spec_hdr` (contract).
    let ty: u32 = unsafe { rd(ib, offset_of!(ibv_flow_spec_hdr, r#type)) };
    let s = SpecConv { ib, k };
    let inner = ty & IBV_FLOW_SPEC_INNER;
    match ty & !IBV_FLOW_SPEC_INNER {
        IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_IPV4 | IBV_FLOW_SPEC_ESP | IBV_FLOW_SPEC_TCP | IBV_FLOW_SPEC_UDP
        | IBV_FLOW_SPEC_MPLS => fixed_filter_to_kern(s, ty),
        IBV_FLOW_SPEC_GRE if inner == 0 => fixed_filter_to_kern(s, ty),
        // SAFETY: `ib` is readable for its header's `size` (contract).
        IBV_FLOW_SPEC_IPV4_EXT | IBV_FLOW_SPEC_IPV6 => unsafe { sized_filter_to_kern(s, ty) },
        // SAFETY: as above.
        IBV_FLOW_SPEC_VXLAN_TUNNEL if inner == 0 => unsafe { sized_filter_to_kern(s, ty) },
        IBV_FLOW_SPEC_ACTION_TAG
        | IBV_FLOW_SPEC_ACTION_DROP
        | IBV_FLOW_SPEC_ACTION_HANDLE
        | IBV_FLOW_SPEC_ACTION_COUNT
            if inner == 0 =>
        {
            // SAFETY: an action spec's `action` / `counters` is live
            // (contract).
            unsafe { action_to_kern(s, ty) }
        }
        _ => Err(libc::EINVAL),
    }
}

/// The filter specs of a fixed size: the verbs filter is the kernel's.
fn fixed_filter_to_kern(s: SpecConv, ty: u32) -> Result<(), c_int> {
    let inner = ty & IBV_FLOW_SPEC_INNER;
    match ty & !IBV_FLOW_SPEC_INNER {
        IBV_FLOW_SPEC_ETH => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_eth>());
            s.copy(
                offset_of!(ibv_flow_spec_eth, val),
                offset_of!(ibv_flow_spec_eth, mask),
                offset_of!(ib_uverbs_flow_spec_eth, val),
                offset_of!(ib_uverbs_flow_spec_eth, mask),
                size_of::<ibv_flow_eth_filter>(),
            );
        }
        IBV_FLOW_SPEC_IPV4 => {
            s.set_hdr(ty, size_of::<ibv_kern_spec_ipv4>());
            s.copy(
                offset_of!(ibv_flow_spec_ipv4, val),
                offset_of!(ibv_flow_spec_ipv4, mask),
                offset_of!(ibv_kern_spec_ipv4, val),
                offset_of!(ibv_kern_spec_ipv4, mask),
                size_of::<ibv_flow_ipv4_filter>(),
            );
        }
        IBV_FLOW_SPEC_ESP => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_esp>());
            s.copy(
                offset_of!(ibv_flow_spec_esp, val),
                offset_of!(ibv_flow_spec_esp, mask),
                offset_of!(ib_uverbs_flow_spec_esp, val),
                offset_of!(ib_uverbs_flow_spec_esp, mask),
                size_of::<ib_uverbs_flow_spec_esp_filter>(),
            );
        }
        IBV_FLOW_SPEC_TCP | IBV_FLOW_SPEC_UDP => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_tcp_udp>());
            s.copy(
                offset_of!(ibv_flow_spec_tcp_udp, val),
                offset_of!(ibv_flow_spec_tcp_udp, mask),
                offset_of!(ib_uverbs_flow_spec_tcp_udp, val),
                offset_of!(ib_uverbs_flow_spec_tcp_udp, mask),
                size_of::<ibv_flow_tcp_udp_filter>(),
            );
        }
        IBV_FLOW_SPEC_GRE if inner == 0 => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_gre>());
            s.copy(
                offset_of!(ibv_flow_spec_gre, val),
                offset_of!(ibv_flow_spec_gre, mask),
                offset_of!(ib_uverbs_flow_spec_gre, val),
                offset_of!(ib_uverbs_flow_spec_gre, mask),
                size_of::<ibv_flow_gre_filter>(),
            );
        }
        IBV_FLOW_SPEC_MPLS => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_mpls>());
            s.copy(
                offset_of!(ibv_flow_spec_mpls, val),
                offset_of!(ibv_flow_spec_mpls, mask),
                offset_of!(ib_uverbs_flow_spec_mpls, val),
                offset_of!(ib_uverbs_flow_spec_mpls, mask),
                size_of::<ibv_flow_mpls_filter>(),
            );
        }
        _ => return Err(libc::EINVAL),
    }
    Ok(())
}

/// The variable-length filter specs (IPv4-ext, IPv6, VXLAN), whose verbs
/// filter may be longer than the kernel's (see [`filters_size`]).
///
/// # Safety
/// `s.ib` is readable for the `size` its header gives.
unsafe fn sized_filter_to_kern(s: SpecConv, ty: u32) -> Result<(), c_int> {
    let inner = ty & IBV_FLOW_SPEC_INNER;
    match ty & !IBV_FLOW_SPEC_INNER {
        IBV_FLOW_SPEC_IPV4_EXT => {
            let vo = offset_of!(ibv_flow_spec_ipv4_ext, val);
            // SAFETY: an IPv4-ext spec is readable for its header's `size`
            // and has its mask after its value (contract).
            let (ibf, kf) = unsafe { filters_size(s.ib, vo, offset_of!(ib_uverbs_flow_ipv4_filter, flags) + 1) }?;
            s.set_hdr(IBV_FLOW_SPEC_IPV4 | inner, size_of::<ib_uverbs_flow_spec_ipv4>());
            s.copy(
                vo,
                vo + ibf,
                offset_of!(ib_uverbs_flow_spec_ipv4, val),
                offset_of!(ib_uverbs_flow_spec_ipv4, mask),
                kf,
            );
        }
        IBV_FLOW_SPEC_IPV6 => {
            let vo = offset_of!(ibv_flow_spec_ipv6, val);
            // SAFETY: an IPv6 spec is readable for its header's `size` and
            // has its mask after its value (contract).
            let (ibf, kf) = unsafe { filters_size(s.ib, vo, offset_of!(ib_uverbs_flow_ipv6_filter, hop_limit) + 1) }?;
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_ipv6>());
            s.copy(
                vo,
                vo + ibf,
                offset_of!(ib_uverbs_flow_spec_ipv6, val),
                offset_of!(ib_uverbs_flow_spec_ipv6, mask),
                kf,
            );
        }
        IBV_FLOW_SPEC_VXLAN_TUNNEL if inner == 0 => {
            let vo = offset_of!(ibv_flow_spec_tunnel, val);
            // SAFETY: a VXLAN spec is readable for its header's `size` and
            // has its mask after its value (contract).
            let (ibf, kf) = unsafe { filters_size(s.ib, vo, offset_of!(ib_uverbs_flow_tunnel_filter, tunnel_id) + 4) }?;
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_tunnel>());
            s.copy(
                vo,
                vo + ibf,
                offset_of!(ib_uverbs_flow_spec_tunnel, val),
                offset_of!(ib_uverbs_flow_spec_tunnel, mask),
                kf,
            );
        }
        _ => return Err(libc::EINVAL),
    }
    Ok(())
}

/// The action specs: tag, drop, flow action handle, counters.
///
/// # Safety
/// A handle spec's `action` / a count spec's `counters` is live.
unsafe fn action_to_kern(s: SpecConv, ty: u32) -> Result<(), c_int> {
    let inner = ty & IBV_FLOW_SPEC_INNER;
    match ty & !IBV_FLOW_SPEC_INNER {
        IBV_FLOW_SPEC_ACTION_TAG if inner == 0 => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_action_tag>());
            // SAFETY: a tag spec is readable as a whole
            // `ibv_flow_spec_action_tag`, and `k` is writable for an
            // `ibv_kern_spec`, of which the kernel's tag spec is a member
            // (contract); both accesses are unaligned.
            unsafe {
                let tag: u32 = rd(s.ib, offset_of!(ibv_flow_spec_action_tag, tag_id));
                s.k.add(offset_of!(ib_uverbs_flow_spec_action_tag, tag_id))
                    .cast::<u32>()
                    .write_unaligned(tag);
            }
        }
        IBV_FLOW_SPEC_ACTION_DROP if inner == 0 => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_action_drop>());
        }
        IBV_FLOW_SPEC_ACTION_HANDLE if inner == 0 => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_action_handle>());
            // SAFETY: a handle spec is readable as a whole
            // `ibv_flow_spec_action_handle` whose `action` is a live flow
            // action, the first member of its `verbs_flow_action`; `k` is
            // writable for an `ibv_kern_spec`, of which the kernel's handle
            // spec is a member (contract).
            unsafe {
                let action: *const ibv_flow_action = rd(s.ib, offset_of!(ibv_flow_spec_action_handle, action));
                let v: *const verbs_flow_action = action.cast();
                s.k.add(offset_of!(ib_uverbs_flow_spec_action_handle, handle))
                    .cast::<u32>()
                    .write_unaligned((*v).handle);
            }
        }
        IBV_FLOW_SPEC_ACTION_COUNT if inner == 0 => {
            s.set_hdr(ty, size_of::<ib_uverbs_flow_spec_action_count>());
            // SAFETY: a count spec is readable as a whole
            // `ibv_flow_spec_counter_action` whose `counters` are live, the
            // first member of their `verbs_counters`; `k` is writable for an
            // `ibv_kern_spec`, of which the kernel's count spec is a member
            // (contract).
            unsafe {
                let counters: *mut ibv_counters = rd(s.ib, offset_of!(ibv_flow_spec_counter_action, counters));
                let v: *mut verbs_counters = outer(counters);
                s.k.add(offset_of!(ib_uverbs_flow_spec_action_count, handle))
                    .cast::<u32>()
                    .write_unaligned((*v).handle);
            }
        }
        _ => return Err(libc::EINVAL),
    }
    Ok(())
}

/// `ibv_cmd_create_flow` (extended `write()`): the verbs specs that follow
/// `flow_attr` are converted to the kernel's; `ucmd` is driver data.
///
/// # Safety
/// Provider arguments: `qp` is a live QP of an open context; `flow_id` a
/// writable `ibv_flow`; `flow_attr` a valid `ibv_flow_attr` followed by
/// its `num_of_specs` specs as [`spec_to_kern`] requires them; `ucmd` null
/// or readable for `ucmd_size` bytes.
pub unsafe fn create_flow(
    qp: *mut ibv_qp,
    flow_id: *mut ibv_flow,
    flow_attr: *mut ibv_flow_attr,
    ucmd: *mut u8,
    ucmd_size: usize,
) -> c_int {
    // SAFETY: `flow_attr` is a valid `ibv_flow_attr` (contract).
    let fa = unsafe { &*flow_attr };
    // SAFETY: `qp` is a live QP (contract).
    let (ctx, qp_handle) = unsafe { ((*qp).context, (*qp).handle) };
    let nspecs = fa.num_of_specs as usize;
    let head = size_of::<ibv_create_flow>();
    let cmd_size = head + nspecs * size_of::<ibv_kern_spec>();
    let mut buf = vec![0u64; (cmd_size + ucmd_size).div_ceil(8)];
    let p = buf.as_mut_ptr().cast::<u8>();
    {
        // SAFETY: `p` is the 8-byte aligned start of `buf`, zeroed and at
        // least `head` bytes long; no other reference to it exists while
        // `cmd` lives.
        let cmd = unsafe { &mut *p.cast::<ibv_create_flow>() };
        cmd.core.qp_handle = qp_handle;
        cmd.core.flow_attr.r#type = fa.r#type;
        cmd.core.flow_attr.priority = fa.priority;
        cmd.core.flow_attr.num_of_specs = fa.num_of_specs;
        cmd.core.flow_attr.port = fa.port;
        cmd.core.flow_attr.flags = fa.flags;
    }
    // SAFETY: `head` is within `buf`; the verbs specs follow the
    // `ibv_flow_attr` (contract).
    let (mut kspec, mut ibspec) = unsafe {
        (
            p.add(head),
            flow_attr.cast::<u8>().add(size_of::<ibv_flow_attr>()).cast_const(),
        )
    };
    let mut total: u16 = 0;
    for _ in 0..nspecs {
        // SAFETY: `ibspec` is the next of the caller's specs (contract;
        // each spec's header gives the distance to the next); `kspec` has
        // room for an `ibv_kern_spec` in `buf`, which holds one per spec
        // and each kernel spec written is at most that long.
        if let Err(e) = unsafe { spec_to_kern(ibspec, kspec) } {
            set_errno(e);
            return e;
        }
        // SAFETY: `spec_to_kern` wrote the kernel header at `kspec`, and the
        // verbs spec at `ibspec` begins with its header; advancing by the
        // sizes stays within `buf` and within the caller's specs.
        unsafe {
            let ksize: u16 = rd(kspec, offset_of!(ib_uverbs_flow_spec_hdr, size));
            let isize: u16 = rd(ibspec, offset_of!(ibv_flow_spec_hdr, size));
            total = total.wrapping_add(ksize);
            kspec = kspec.add(ksize as usize);
            ibspec = ibspec.add(isize as usize);
        }
    }
    // SAFETY: `p` is the aligned start of `buf`, an `ibv_create_flow`.
    unsafe { (*p.cast::<ibv_create_flow>()).core.flow_attr.size = total };
    let mut written = head + total as usize;
    if !ucmd.is_null() {
        // SAFETY: `ucmd` is readable for `ucmd_size` bytes (contract);
        // `written` is at most `cmd_size`, and `buf` holds
        // `cmd_size + ucmd_size` bytes, not overlapping the provider's.
        unsafe { core::ptr::copy_nonoverlapping(ucmd, p.add(written), ucmd_size) };
        written += ucmd_size;
    }
    let core = written.saturating_sub(ucmd_size);
    let mut r: ib_uverbs_create_flow_resp = zeroed();
    let rsz = size_of::<ib_uverbs_create_flow_resp>();
    // SAFETY: `p` (`buf`, at least `written` bytes) and the local `r` of
    // `rsz` bytes outlive the command, run below in this call.
    let mut c = unsafe {
        Cmd::write_only(
            ctx,
            &m::CREATE_FLOW,
            p,
            core,
            written,
            (&mut r as *mut ib_uverbs_create_flow_resp).cast(),
            rsz,
            rsz,
        )
    };
    c.set_write_ex(Some(WriteForm {
        cmd: cmd::EX_CREATE_FLOW,
        req: core.saturating_sub(size_of::<ex_hdr>()),
        resp: rsz,
    }));
    // SAFETY: `ctx` is open (contract); the buffers are `buf` and `r`, as
    // above.
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    // SAFETY: `flow_id` is a writable `ibv_flow` (contract).
    unsafe {
        (*flow_id).context = ctx;
        (*flow_id).handle = r.flow_handle;
    }
    0
}

/// `ibv_cmd_destroy_flow`.
///
/// # Safety
/// Provider arguments: `flow_id` is a live flow of an open context.
pub unsafe fn destroy_flow(flow_id: *mut ibv_flow) -> c_int {
    // SAFETY: `flow_id` is live, so its context is open and its handle
    // valid (contract).
    unsafe {
        destroy(
            (*flow_id).context,
            &m::DESTROY_FLOW,
            attr::DESTROY_FLOW_HANDLE,
            (*flow_id).handle,
            req!(ib_uverbs_destroy_flow, flow_handle),
        )
    }
}

// --- flow actions ---------------------------------------------------------

/// Upstream's `copy_flow_action_esp`: the optional ESP attributes.
///
/// # Safety
/// `esp` outlives the command `c` is building (it is given by address);
/// its non-null `keymat_ptr` / `replay_ptr` are readable for
/// `keymat_len` / `replay_len` bytes, and its non-null `esp_encap` /
/// `esp_attr` point to valid structs, all until the command ran.
unsafe fn esp_attrs(c: &mut Cmd, esp: &ibv_flow_action_esp_attr) {
    if esp.comp_mask & IBV_FLOW_ACTION_ESP_MASK_ESN != 0 {
        // SAFETY: `esp.esn` is 4 readable bytes of `*esp`, which outlives
        // the command (contract).
        unsafe { c.in_bytes(attr::FLOW_ACTION_ESP_ESN, (&esp.esn as *const u32).cast(), 4) };
    }
    if !esp.keymat_ptr.is_null() {
        // SAFETY: a non-null `keymat_ptr` is readable for `keymat_len`
        // bytes until the command ran (contract).
        unsafe {
            c.in_enum(
                attr::FLOW_ACTION_ESP_KEYMAT,
                esp.keymat_proto as u8,
                esp.keymat_ptr.cast(),
                esp.keymat_len as usize,
            )
        };
    }
    if !esp.replay_ptr.is_null() {
        // SAFETY: a non-null `replay_ptr` is readable for `replay_len`
        // bytes until the command ran (contract).
        unsafe {
            c.in_enum(
                attr::FLOW_ACTION_ESP_REPLAY,
                esp.replay_proto as u8,
                esp.replay_ptr.cast(),
                esp.replay_len as usize,
            )
        };
    }
    // Pointers inside the encap struct already are 64-bit on LP64 (the
    // "scrub" upstream does for 32-bit targets is a no-op here).
    if !esp.esp_encap.is_null() {
        // SAFETY: a non-null `esp_encap` is a valid struct until the
        // command ran (contract).
        unsafe { c.in_ptr(attr::FLOW_ACTION_ESP_ENCAP, esp.esp_encap.cast_const()) };
    }
    if !esp.esp_attr.is_null() {
        // SAFETY: a non-null `esp_attr` is a valid struct until the command
        // ran (contract).
        unsafe { c.in_ptr(attr::FLOW_ACTION_ESP_ATTRS, esp.esp_attr.cast_const()) };
    }
}

/// `ibv_cmd_create_flow_action_esp` (ioctl only).
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `attr` a valid
/// `ibv_flow_action_esp_attr` whose pointers are as [`esp_attrs`] requires;
/// `flow_action` a writable `verbs_flow_action`; `driver` null or a valid
/// chain of the provider's attribute blocks.
pub unsafe fn create_flow_action_esp(
    ctx: *mut ibv_context,
    attr: *mut ibv_flow_action_esp_attr,
    flow_action: *mut verbs_flow_action,
    driver: *mut ibv_command_buffer,
) -> c_int {
    // SAFETY: `ctx` is open and `driver` null or a valid chain (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::CREATE_FLOW_ACTION_ESP, 6, driver) };
    let h = c.out_obj(attr::CREATE_FLOW_ACTION_ESP_HANDLE).idx();
    // SAFETY: `*attr` is valid, and it and what it points to outlive the
    // command, run below in this call (contract).
    unsafe { esp_attrs(&mut c, &*attr) };
    // SAFETY: the pointers given to `c` are `*attr` and what it points to,
    // and the provider's chain `driver`, all valid for the call.
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: `flow_action` is a writable `verbs_flow_action` (contract).
    unsafe {
        (*flow_action).action.context = ctx;
        (*flow_action).r#type = IBV_FLOW_ACTION_ESP;
        (*flow_action).handle = handle;
    }
    0
}

/// `ibv_cmd_modify_flow_action_esp` (ioctl only).
///
/// # Safety
/// Provider arguments: `flow_action` is a live flow action of an open
/// context; `attr` and `driver` as for [`create_flow_action_esp`].
pub unsafe fn modify_flow_action_esp(
    flow_action: *mut verbs_flow_action,
    attr: *mut ibv_flow_action_esp_attr,
    driver: *mut ibv_command_buffer,
) -> c_int {
    // SAFETY: `flow_action` is live (contract).
    let (ctx, handle) = unsafe { ((*flow_action).action.context, (*flow_action).handle) };
    // SAFETY: `ctx` is open and `driver` null or a valid chain (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::MODIFY_FLOW_ACTION_ESP, 6, driver) };
    c.in_obj(attr::MODIFY_FLOW_ACTION_ESP_HANDLE, handle);
    // SAFETY: `*attr` is valid, and it and what it points to outlive the
    // command, run below in this call (contract).
    unsafe { esp_attrs(&mut c, &*attr) };
    // SAFETY: the pointers given to `c` are `*attr` and what it points to,
    // and the provider's chain `driver`, all valid for the call.
    super::ok(unsafe { c.exec() })
}

/// `ibv_cmd_destroy_flow_action` (ioctl only).
///
/// # Safety
/// Provider arguments: `action` is a live flow action of an open context.
pub unsafe fn destroy_flow_action(action: *mut verbs_flow_action) -> c_int {
    // SAFETY: `action` is live (contract).
    let (ctx, handle) = unsafe { ((*action).action.context, (*action).handle) };
    // SAFETY: `ctx` is open; no provider chain is linked.
    let mut c = unsafe { Cmd::new(ctx, &m::DESTROY_FLOW_ACTION, 1, core::ptr::null_mut()) };
    c.in_obj(attr::DESTROY_FLOW_ACTION_HANDLE, handle);
    // SAFETY: the command carries no pointers.
    let mut ret = super::ok(unsafe { c.exec() });
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

// --- counters -------------------------------------------------------------

/// `ibv_cmd_create_counters` (ioctl only).
///
/// # Safety
/// Provider arguments: `ctx` is an open context; `init_attr` a valid
/// `ibv_counters_init_attr`; `vcounters` a writable `verbs_counters`;
/// `link` null or a valid chain of the provider's attribute blocks.
pub unsafe fn create_counters(
    ctx: *mut ibv_context,
    init_attr: *mut ibv_counters_init_attr,
    vcounters: *mut verbs_counters,
    link: *mut ibv_command_buffer,
) -> c_int {
    // SAFETY: `ctx` is open and `link` null or a valid chain (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::CREATE_COUNTERS, 1, link) };
    let h = c.out_obj(attr::CREATE_COUNTERS_HANDLE).idx();
    // SAFETY: `init_attr` is a valid `ibv_counters_init_attr` (contract).
    if !super::check_comp_mask(unsafe { (*init_attr).comp_mask }, 0) {
        return libc::EOPNOTSUPP;
    }
    // SAFETY: the only pointers given to `c` are in the provider's chain
    // `link`, valid for the call (contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let handle = c.obj(h);
    // SAFETY: `vcounters` is a writable `verbs_counters` (contract).
    unsafe {
        (*vcounters).counters.context = ctx;
        (*vcounters).handle = handle;
    }
    0
}

/// `ibv_cmd_destroy_counters` (ioctl only).
///
/// # Safety
/// Provider arguments: `vcounters` are live counters of an open context.
pub unsafe fn destroy_counters(vcounters: *mut verbs_counters) -> c_int {
    // SAFETY: `vcounters` is live (contract).
    let (ctx, handle) = unsafe { ((*vcounters).counters.context, (*vcounters).handle) };
    // SAFETY: `ctx` is open; no provider chain is linked.
    let mut c = unsafe { Cmd::new(ctx, &m::DESTROY_COUNTERS, 1, core::ptr::null_mut()) };
    c.in_obj(attr::DESTROY_COUNTERS_HANDLE, handle);
    // SAFETY: the command carries no pointers.
    let mut ret = super::ok(unsafe { c.exec() });
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

/// `ibv_cmd_read_counters` (ioctl only).
///
/// # Safety
/// Provider arguments: `vcounters` are live counters of an open context;
/// `values` is writable for `ncounters` entries; `link` null or a valid
/// chain of the provider's attribute blocks.
pub unsafe fn read_counters(
    vcounters: *mut verbs_counters,
    values: *mut u64,
    ncounters: u32,
    flags: u32,
    link: *mut ibv_command_buffer,
) -> c_int {
    // SAFETY: `vcounters` is live (contract).
    let (ctx, handle) = unsafe { ((*vcounters).counters.context, (*vcounters).handle) };
    // SAFETY: `ctx` is open and `link` null or a valid chain (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::READ_COUNTERS, 3, link) };
    c.in_obj(attr::READ_COUNTERS_HANDLE, handle);
    c.out_bytes(
        attr::READ_COUNTERS_BUFF,
        values.cast(),
        8usize.saturating_mul(ncounters as usize),
    );
    c.in_u32(attr::READ_COUNTERS_FLAGS, flags);
    // SAFETY: the pointers given to `c` are `values`, writable for
    // `ncounters` entries, and the provider's chain `link`, valid for the
    // call (contract).
    super::ok(unsafe { c.exec() })
}
