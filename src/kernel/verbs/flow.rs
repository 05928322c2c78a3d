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
unsafe fn rd<T: Copy>(p: *const u8, off: usize) -> T {
    p.add(off).cast::<T>().read_unaligned()
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

/// Upstream's `get_filters_size` for the specs whose filter may be longer
/// than the kernel's (IPv4-ext, IPv6, VXLAN): `(ib_filter_size,
/// kern_filter_size)`, EINVAL when too short, EOPNOTSUPP when the extra
/// mask bytes ask for matching the kernel cannot do.
unsafe fn filters_size(ib: *const u8, val_off: usize, min_filter: usize) -> Result<(usize, usize), c_int> {
    let size: u16 = rd(ib, offset_of!(ibv_flow_spec_hdr, size));
    let ib_filter = (size as i64 - size_of::<ibv_flow_spec_hdr>() as i64) / 2;
    if ib_filter < min_filter as i64 {
        return Err(libc::EINVAL);
    }
    let ib_filter = ib_filter as usize;
    if ib_filter > min_filter {
        let mask = ib.add(val_off + ib_filter);
        if !is_zero(core::slice::from_raw_parts(
            mask.add(min_filter),
            ib_filter - min_filter,
        )) {
            return Err(libc::EOPNOTSUPP);
        }
    }
    Ok((ib_filter, min_filter.min(ib_filter)))
}

/// Upstream's `ib_spec_to_kern_spec`: one verbs flow spec to the kernel's
/// layout at `k` (zeroed, room for an `ibv_kern_spec`).
unsafe fn spec_to_kern(ib: *const u8, k: *mut u8) -> Result<(), c_int> {
    let ty: u32 = rd(ib, offset_of!(ibv_flow_spec_hdr, r#type));
    let set_hdr = |k: *mut u8, ty: u32, size: usize| {
        k.cast::<u32>().write_unaligned(ty);
        k.add(offset_of!(ib_uverbs_flow_spec_hdr, size))
            .cast::<u16>()
            .write_unaligned(size as u16);
    };
    // Copy `n` bytes of val and mask from the verbs spec to the kernel's.
    let copy = |k: *mut u8, ib_val: usize, ib_mask: usize, kv: usize, km: usize, n: usize| {
        core::ptr::copy_nonoverlapping(ib.add(ib_val), k.add(kv), n);
        core::ptr::copy_nonoverlapping(ib.add(ib_mask), k.add(km), n);
    };
    let inner = ty & IBV_FLOW_SPEC_INNER;
    match ty & !IBV_FLOW_SPEC_INNER {
        IBV_FLOW_SPEC_ETH => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_eth>());
            copy(
                k,
                offset_of!(ibv_flow_spec_eth, val),
                offset_of!(ibv_flow_spec_eth, mask),
                offset_of!(ib_uverbs_flow_spec_eth, val),
                offset_of!(ib_uverbs_flow_spec_eth, mask),
                size_of::<ibv_flow_eth_filter>(),
            );
        }
        IBV_FLOW_SPEC_IPV4 => {
            set_hdr(k, ty, size_of::<ibv_kern_spec_ipv4>());
            copy(
                k,
                offset_of!(ibv_flow_spec_ipv4, val),
                offset_of!(ibv_flow_spec_ipv4, mask),
                offset_of!(ibv_kern_spec_ipv4, val),
                offset_of!(ibv_kern_spec_ipv4, mask),
                size_of::<ibv_flow_ipv4_filter>(),
            );
        }
        IBV_FLOW_SPEC_IPV4_EXT => {
            let vo = offset_of!(ibv_flow_spec_ipv4_ext, val);
            let (ibf, kf) = filters_size(ib, vo, offset_of!(ib_uverbs_flow_ipv4_filter, flags) + 1)?;
            set_hdr(k, IBV_FLOW_SPEC_IPV4 | inner, size_of::<ib_uverbs_flow_spec_ipv4>());
            copy(
                k,
                vo,
                vo + ibf,
                offset_of!(ib_uverbs_flow_spec_ipv4, val),
                offset_of!(ib_uverbs_flow_spec_ipv4, mask),
                kf,
            );
        }
        IBV_FLOW_SPEC_IPV6 => {
            let vo = offset_of!(ibv_flow_spec_ipv6, val);
            let (ibf, kf) = filters_size(ib, vo, offset_of!(ib_uverbs_flow_ipv6_filter, hop_limit) + 1)?;
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_ipv6>());
            copy(
                k,
                vo,
                vo + ibf,
                offset_of!(ib_uverbs_flow_spec_ipv6, val),
                offset_of!(ib_uverbs_flow_spec_ipv6, mask),
                kf,
            );
        }
        IBV_FLOW_SPEC_ESP => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_esp>());
            copy(
                k,
                offset_of!(ibv_flow_spec_esp, val),
                offset_of!(ibv_flow_spec_esp, mask),
                offset_of!(ib_uverbs_flow_spec_esp, val),
                offset_of!(ib_uverbs_flow_spec_esp, mask),
                size_of::<ib_uverbs_flow_spec_esp_filter>(),
            );
        }
        IBV_FLOW_SPEC_TCP | IBV_FLOW_SPEC_UDP => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_tcp_udp>());
            copy(
                k,
                offset_of!(ibv_flow_spec_tcp_udp, val),
                offset_of!(ibv_flow_spec_tcp_udp, mask),
                offset_of!(ib_uverbs_flow_spec_tcp_udp, val),
                offset_of!(ib_uverbs_flow_spec_tcp_udp, mask),
                size_of::<ibv_flow_tcp_udp_filter>(),
            );
        }
        IBV_FLOW_SPEC_GRE if inner == 0 => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_gre>());
            copy(
                k,
                offset_of!(ibv_flow_spec_gre, val),
                offset_of!(ibv_flow_spec_gre, mask),
                offset_of!(ib_uverbs_flow_spec_gre, val),
                offset_of!(ib_uverbs_flow_spec_gre, mask),
                size_of::<ibv_flow_gre_filter>(),
            );
        }
        IBV_FLOW_SPEC_MPLS => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_mpls>());
            copy(
                k,
                offset_of!(ibv_flow_spec_mpls, val),
                offset_of!(ibv_flow_spec_mpls, mask),
                offset_of!(ib_uverbs_flow_spec_mpls, val),
                offset_of!(ib_uverbs_flow_spec_mpls, mask),
                size_of::<ibv_flow_mpls_filter>(),
            );
        }
        IBV_FLOW_SPEC_VXLAN_TUNNEL if inner == 0 => {
            let vo = offset_of!(ibv_flow_spec_tunnel, val);
            let (ibf, kf) = filters_size(ib, vo, offset_of!(ib_uverbs_flow_tunnel_filter, tunnel_id) + 4)?;
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_tunnel>());
            copy(
                k,
                vo,
                vo + ibf,
                offset_of!(ib_uverbs_flow_spec_tunnel, val),
                offset_of!(ib_uverbs_flow_spec_tunnel, mask),
                kf,
            );
        }
        IBV_FLOW_SPEC_ACTION_TAG if inner == 0 => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_action_tag>());
            let tag: u32 = rd(ib, offset_of!(ibv_flow_spec_action_tag, tag_id));
            k.add(offset_of!(ib_uverbs_flow_spec_action_tag, tag_id))
                .cast::<u32>()
                .write_unaligned(tag);
        }
        IBV_FLOW_SPEC_ACTION_DROP if inner == 0 => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_action_drop>());
        }
        IBV_FLOW_SPEC_ACTION_HANDLE if inner == 0 => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_action_handle>());
            let action: *const ibv_flow_action = rd(ib, offset_of!(ibv_flow_spec_action_handle, action));
            let v: *const verbs_flow_action = action.cast();
            k.add(offset_of!(ib_uverbs_flow_spec_action_handle, handle))
                .cast::<u32>()
                .write_unaligned((*v).handle);
        }
        IBV_FLOW_SPEC_ACTION_COUNT if inner == 0 => {
            set_hdr(k, ty, size_of::<ib_uverbs_flow_spec_action_count>());
            let counters: *mut ibv_counters = rd(ib, offset_of!(ibv_flow_spec_counter_action, counters));
            let v: *mut verbs_counters = outer(counters);
            k.add(offset_of!(ib_uverbs_flow_spec_action_count, handle))
                .cast::<u32>()
                .write_unaligned((*v).handle);
        }
        _ => return Err(libc::EINVAL),
    }
    Ok(())
}

/// `ibv_cmd_create_flow` (extended `write()`): the verbs specs that follow
/// `flow_attr` are converted to the kernel's; `ucmd` is driver data.
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_flow(
    qp: *mut ibv_qp,
    flow_id: *mut ibv_flow,
    flow_attr: *mut ibv_flow_attr,
    ucmd: *mut u8,
    ucmd_size: usize,
) -> c_int {
    let fa = &*flow_attr;
    let nspecs = fa.num_of_specs as usize;
    let head = size_of::<ibv_create_flow>();
    let cmd_size = head + nspecs * size_of::<ibv_kern_spec>();
    let mut buf = vec![0u64; (cmd_size + ucmd_size).div_ceil(8)];
    let p = buf.as_mut_ptr().cast::<u8>();
    {
        let cmd = &mut *p.cast::<ibv_create_flow>();
        cmd.core.qp_handle = (*qp).handle;
        cmd.core.flow_attr.r#type = fa.r#type;
        cmd.core.flow_attr.priority = fa.priority;
        cmd.core.flow_attr.num_of_specs = fa.num_of_specs;
        cmd.core.flow_attr.port = fa.port;
        cmd.core.flow_attr.flags = fa.flags;
    }
    let mut kspec = p.add(head);
    let mut ibspec = flow_attr.cast::<u8>().add(size_of::<ibv_flow_attr>()).cast_const();
    let mut total: u16 = 0;
    for _ in 0..nspecs {
        if let Err(e) = spec_to_kern(ibspec, kspec) {
            set_errno(e);
            return e;
        }
        let ksize: u16 = rd(kspec, offset_of!(ib_uverbs_flow_spec_hdr, size));
        let isize: u16 = rd(ibspec, offset_of!(ibv_flow_spec_hdr, size));
        total = total.wrapping_add(ksize);
        kspec = kspec.add(ksize as usize);
        ibspec = ibspec.add(isize as usize);
    }
    (*p.cast::<ibv_create_flow>()).core.flow_attr.size = total;
    let mut written = head + total as usize;
    if !ucmd.is_null() {
        core::ptr::copy_nonoverlapping(ucmd, p.add(written), ucmd_size);
        written += ucmd_size;
    }
    let core = written.saturating_sub(ucmd_size);
    let mut r: ib_uverbs_create_flow_resp = zeroed();
    let rsz = size_of::<ib_uverbs_create_flow_resp>();
    let mut c = Cmd::write_only(
        (*qp).context,
        &m::CREATE_FLOW,
        p,
        core,
        written,
        (&mut r as *mut ib_uverbs_create_flow_resp).cast(),
        rsz,
        rsz,
    );
    c.set_write_ex(Some(WriteForm {
        cmd: cmd::EX_CREATE_FLOW,
        req: core.saturating_sub(size_of::<ex_hdr>()),
        resp: rsz,
    }));
    if let Err(e) = c.exec() {
        return e;
    }
    (*flow_id).context = (*qp).context;
    (*flow_id).handle = r.flow_handle;
    0
}

/// `ibv_cmd_destroy_flow`.
///
/// # Safety
/// Provider arguments.
pub unsafe fn destroy_flow(flow_id: *mut ibv_flow) -> c_int {
    destroy(
        (*flow_id).context,
        &m::DESTROY_FLOW,
        attr::DESTROY_FLOW_HANDLE,
        (*flow_id).handle,
        req!(ib_uverbs_destroy_flow, flow_handle),
    )
}

// --- flow actions ---------------------------------------------------------

/// Upstream's `copy_flow_action_esp`: the optional ESP attributes.
unsafe fn esp_attrs(c: &mut Cmd, esp: &ibv_flow_action_esp_attr) {
    if esp.comp_mask & IBV_FLOW_ACTION_ESP_MASK_ESN != 0 {
        c.in_bytes(attr::FLOW_ACTION_ESP_ESN, (&esp.esn as *const u32).cast(), 4);
    }
    if !esp.keymat_ptr.is_null() {
        c.in_enum(
            attr::FLOW_ACTION_ESP_KEYMAT,
            esp.keymat_proto as u8,
            esp.keymat_ptr.cast(),
            esp.keymat_len as usize,
        );
    }
    if !esp.replay_ptr.is_null() {
        c.in_enum(
            attr::FLOW_ACTION_ESP_REPLAY,
            esp.replay_proto as u8,
            esp.replay_ptr.cast(),
            esp.replay_len as usize,
        );
    }
    // Pointers inside the encap struct already are 64-bit on LP64 (the
    // "scrub" upstream does for 32-bit targets is a no-op here).
    if !esp.esp_encap.is_null() {
        c.in_ptr(attr::FLOW_ACTION_ESP_ENCAP, esp.esp_encap.cast_const());
    }
    if !esp.esp_attr.is_null() {
        c.in_ptr(attr::FLOW_ACTION_ESP_ATTRS, esp.esp_attr.cast_const());
    }
}

/// `ibv_cmd_create_flow_action_esp` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_flow_action_esp(
    ctx: *mut ibv_context,
    attr: *mut ibv_flow_action_esp_attr,
    flow_action: *mut verbs_flow_action,
    driver: *mut ibv_command_buffer,
) -> c_int {
    let mut c = Cmd::new(ctx, &m::CREATE_FLOW_ACTION_ESP, 6, driver);
    let h = c.out_obj(attr::CREATE_FLOW_ACTION_ESP_HANDLE).idx();
    esp_attrs(&mut c, &*attr);
    if let Err(e) = c.exec() {
        return e;
    }
    (*flow_action).action.context = ctx;
    (*flow_action).r#type = IBV_FLOW_ACTION_ESP;
    (*flow_action).handle = c.obj(h);
    0
}

/// `ibv_cmd_modify_flow_action_esp` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn modify_flow_action_esp(
    flow_action: *mut verbs_flow_action,
    attr: *mut ibv_flow_action_esp_attr,
    driver: *mut ibv_command_buffer,
) -> c_int {
    let mut c = Cmd::new((*flow_action).action.context, &m::MODIFY_FLOW_ACTION_ESP, 6, driver);
    c.in_obj(attr::MODIFY_FLOW_ACTION_ESP_HANDLE, (*flow_action).handle);
    esp_attrs(&mut c, &*attr);
    super::ok(c.exec())
}

/// `ibv_cmd_destroy_flow_action` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn destroy_flow_action(action: *mut verbs_flow_action) -> c_int {
    let mut c = Cmd::new(
        (*action).action.context,
        &m::DESTROY_FLOW_ACTION,
        1,
        core::ptr::null_mut(),
    );
    c.in_obj(attr::DESTROY_FLOW_ACTION_HANDLE, (*action).handle);
    let mut ret = super::ok(c.exec());
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

// --- counters -------------------------------------------------------------

/// `ibv_cmd_create_counters` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn create_counters(
    ctx: *mut ibv_context,
    init_attr: *mut ibv_counters_init_attr,
    vcounters: *mut verbs_counters,
    link: *mut ibv_command_buffer,
) -> c_int {
    let mut c = Cmd::new(ctx, &m::CREATE_COUNTERS, 1, link);
    let h = c.out_obj(attr::CREATE_COUNTERS_HANDLE).idx();
    if !super::check_comp_mask((*init_attr).comp_mask, 0) {
        return libc::EOPNOTSUPP;
    }
    if let Err(e) = c.exec() {
        return e;
    }
    (*vcounters).counters.context = ctx;
    (*vcounters).handle = c.obj(h);
    0
}

/// `ibv_cmd_destroy_counters` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn destroy_counters(vcounters: *mut verbs_counters) -> c_int {
    let mut c = Cmd::new(
        (*vcounters).counters.context,
        &m::DESTROY_COUNTERS,
        1,
        core::ptr::null_mut(),
    );
    c.in_obj(attr::DESTROY_COUNTERS_HANDLE, (*vcounters).handle);
    let mut ret = super::ok(c.exec());
    if crate::kernel::state::is_destroy_err(&mut ret) {
        return ret;
    }
    0
}

/// `ibv_cmd_read_counters` (ioctl only).
///
/// # Safety
/// Provider arguments.
pub unsafe fn read_counters(
    vcounters: *mut verbs_counters,
    values: *mut u64,
    ncounters: u32,
    flags: u32,
    link: *mut ibv_command_buffer,
) -> c_int {
    let mut c = Cmd::new((*vcounters).counters.context, &m::READ_COUNTERS, 3, link);
    c.in_obj(attr::READ_COUNTERS_HANDLE, (*vcounters).handle);
    c.out_bytes(
        attr::READ_COUNTERS_BUFF,
        values.cast(),
        8usize.saturating_mul(ncounters as usize),
    );
    c.in_u32(attr::READ_COUNTERS_FLAGS, flags);
    super::ok(c.exec())
}
