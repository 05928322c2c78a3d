//! Context and device commands: GET_CONTEXT, QUERY_CONTEXT, the async
//! event fd, QUERY_PORT, QUERY_DEVICE(_EX), the GID queries.

use std::os::raw::c_int;

use crate::abi::*;
use crate::generation::Pabi;
use crate::kernel::builder::{field, req, resp, Cmd, Field, Path, Place};
use crate::kernel::methods as m;
use crate::kernel::pabi34::*;
use crate::kernel::uapi::*;

use super::write_cmd;

/// The `verbs_device` behind a context (its `ibv_device` is the first
/// member).
///
/// # Safety
/// `ctx` is a live context whose device is a provider's `verbs_device`.
unsafe fn verbs_device_of(ctx: *mut ibv_context) -> *mut verbs_device {
    // SAFETY: `ctx` is live (contract), so `device` is readable.
    unsafe { (*ctx).device.cast() }
}

/// `ibv_cmd_get_context`: the kernel half of opening a context.  Via ioctl
/// it sets `num_comp_vectors` and the device's `core_support` (the async fd
/// is then allocated separately, see [`alloc_async_fd`]); via `write()` it
/// sets `async_fd` and `num_comp_vectors`.
///
/// # Safety
/// `vctx` is the provider's `verbs_context`, initialised by the context
/// layer (open `cmd_fd`, device a `verbs_device`); `cmd` / `resp_p` have
/// `cmd_size` / `resp_size` bytes (at least their core structs); `fd_arr`
/// is null or names `count` readable descriptors (rdma-core 65).
pub unsafe fn get_context(
    vctx: *mut verbs_context,
    cmd: *mut ibv_get_context,
    cmd_size: usize,
    fd_arr: *const ibv_fd_arr,
    resp_p: *mut ib_uverbs_get_context_resp,
    resp_size: usize,
) -> c_int {
    // SAFETY: `vctx` is valid (contract); only the field address is taken.
    let ctx = unsafe { core::ptr::addr_of_mut!((*vctx).context) };
    // SAFETY: `ctx` has its `cmd_fd` (contract); no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::GET_CONTEXT, 3, core::ptr::null_mut()) }.compat(
        cmd.cast(),
        core::mem::size_of::<ibv_get_context>(),
        cmd_size,
        resp_p.cast(),
        core::mem::size_of::<ib_uverbs_get_context_resp>(),
        resp_size,
    );
    let mut num_comp_vectors: u32 = 0;
    let mut core_support: u64 = 0;
    c.out(attr::GET_CONTEXT_NUM_COMP_VECTORS, &mut num_comp_vectors)
        .w(resp!(ib_uverbs_get_context_resp, num_comp_vectors));
    c.out(attr::GET_CONTEXT_CORE_SUPPORT, &mut core_support);
    // SAFETY: `fd_arr` is null or readable (contract).
    if let Some(fds) = unsafe { fd_arr.as_ref() } {
        if !fds.arr.is_null() {
            // SAFETY: `arr` has `count` readable descriptors (contract),
            // read during exec below.
            unsafe {
                c.in_bytes(
                    attr::GET_CONTEXT_FD_ARR,
                    fds.arr.cast(),
                    fds.count as usize * core::mem::size_of::<c_int>(),
                )
            };
        }
    }
    // SAFETY: `c` points at the locals above and the caller's buffers
    // (valid for their sizes, contract).
    match unsafe { c.exec() } {
        Ok(Path::Ioctl) => {
            // SAFETY: the context and its `verbs_device` are writable
            // (contract).
            unsafe {
                (*ctx).num_comp_vectors = num_comp_vectors as c_int;
                (*verbs_device_of(ctx)).core_support = core_support;
            }
            0
        }
        Ok(_) => {
            let r: ib_uverbs_get_context_resp = c.resp_as();
            // SAFETY: the context is writable (contract).
            unsafe {
                (*ctx).async_fd = r.async_fd as c_int;
                (*ctx).num_comp_vectors = r.num_comp_vectors as c_int;
            }
            0
        }
        Err(e) => e,
    }
}

/// `ibv_cmd_query_context` (ioctl only).
///
/// # Safety
/// `ctx` is an open context of the context layer (device a
/// `verbs_device`); `driver` null or a valid chain of the provider's.
pub unsafe fn query_context(ctx: *mut ibv_context, driver: *mut ibv_command_buffer) -> c_int {
    // SAFETY: `ctx` is open and `driver` null or valid (contract).
    let mut c = unsafe { Cmd::new(ctx, &m::QUERY_CONTEXT, 2, driver) };
    let mut core_support: u64 = 0;
    c.out(
        attr::QUERY_CONTEXT_NUM_COMP_VECTORS,
        // SAFETY: only the address of a field of the live context.
        unsafe { core::ptr::addr_of_mut!((*ctx).num_comp_vectors) },
    );
    c.out(attr::QUERY_CONTEXT_CORE_SUPPORT, &mut core_support);
    // SAFETY: the outputs are the live context's field and a local; the
    // provider's chain is valid (contract).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    // SAFETY: the context's `verbs_device` is writable (contract).
    unsafe { (*verbs_device_of(ctx)).core_support = core_support };
    0
}

/// Upstream's `ibv_cmd_alloc_async_fd` (not exported): the context's async
/// event fd through the ASYNC_EVENT object, for kernels whose GET_CONTEXT
/// ioctl does not return one.
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn alloc_async_fd(ctx: *mut ibv_context) -> c_int {
    // SAFETY: `ctx` is open (contract); no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::ASYNC_EVENT_ALLOC, 1, core::ptr::null_mut()) };
    let i = c.out_fd(attr::ASYNC_EVENT_ALLOC_FD_HANDLE).idx();
    // SAFETY: the command holds no pointers (the fd comes back inline).
    if let Err(e) = unsafe { c.exec() } {
        return e;
    }
    let fd = c.fd(i);
    // SAFETY: `ctx` is open and writable (contract).
    unsafe { (*ctx).async_fd = fd };
    0
}

fn copy_port_resp(pa: &mut ibv_port_attr, r: &ib_uverbs_query_port_resp) {
    pa.state = r.state as _;
    pa.max_mtu = r.max_mtu as _;
    pa.active_mtu = r.active_mtu as _;
    pa.gid_tbl_len = r.gid_tbl_len as _;
    pa.port_cap_flags = r.port_cap_flags;
    pa.max_msg_sz = r.max_msg_sz;
    pa.bad_pkey_cntr = r.bad_pkey_cntr;
    pa.qkey_viol_cntr = r.qkey_viol_cntr;
    pa.pkey_tbl_len = r.pkey_tbl_len;
    pa.lid = r.lid;
    pa.sm_lid = r.sm_lid;
    pa.lmc = r.lmc;
    pa.max_vl_num = r.max_vl_num;
    pa.sm_sl = r.sm_sl;
    pa.subnet_timeout = r.subnet_timeout;
    pa.init_type_reply = r.init_type_reply;
    pa.active_width = r.active_width;
    pa.active_speed = r.active_speed;
    pa.phys_state = r.phys_state;
    pa.link_layer = r.link_layer;
    pa.flags = r.flags;
}

/// rdma-core 50 and later's `struct ibv_port_attr`: the older one
/// ([`ibv_port_attr`]) plus `active_speed_ex`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PortAttrFull {
    pub attr: ibv_port_attr,
    pub active_speed_ex: u32,
}

/// Where `active_speed_ex` lies in a full-size `ibv_port_attr`.
pub const ACTIVE_SPEED_EX_OFFSET: usize = std::mem::offset_of!(PortAttrFull, active_speed_ex);
const _: () = assert!(ACTIVE_SPEED_EX_OFFSET == std::mem::size_of::<ibv_port_attr>());

thread_local! {
    /// The full-size buffer a `lib_query_port` of this thread is filling.
    static FULL_PORT_ATTR: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether `p` is the library's own full-size buffer of a query in
/// progress on this thread (so `active_speed_ex` may be written).
pub fn port_attr_is_full(p: *const ibv_port_attr) -> bool {
    !p.is_null() && FULL_PORT_ATTR.with(|c| c.get()) == p as usize
}

/// Runs `f` with `p` marked as the library's full-size buffer of this
/// thread's query in progress.
pub fn with_full_port_attr<R>(p: *const ibv_port_attr, f: impl FnOnce() -> R) -> R {
    let prev = FULL_PORT_ATTR.with(|c| c.replace(p as usize));
    let r = f();
    FULL_PORT_ATTR.with(|c| c.set(prev));
    r
}

/// `ibv_cmd_query_port`.  The provider's `cmd` is only used for the
/// `write()` form (upstream sends no driver data with the ioctl).
///
/// # Safety
/// `ctx` is an open context; `port_attr` writable; `cmd` has `cmd_size`
/// bytes (at least its core struct).
pub unsafe fn query_port(
    ctx: *mut ibv_context,
    port_num: u8,
    port_attr: *mut ibv_port_attr,
    cmd: *mut ibv_query_port,
    cmd_size: usize,
) -> c_int {
    let mut resp_ex: ib_uverbs_query_port_resp_ex = zeroed();
    // SAFETY: `ctx` is open (contract); no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::QUERY_PORT, 2, core::ptr::null_mut()) }.write_bufs(
        cmd.cast(),
        core::mem::size_of::<ibv_query_port>(),
        cmd_size,
        core::ptr::null_mut(),
        0,
        0,
    );
    c.in_u64(attr::QUERY_PORT_PORT_NUM, port_num as u64)
        .w(req!(ib_uverbs_query_port, port_num));
    c.out(attr::QUERY_PORT_RESP, &mut resp_ex).w(Place::Resp(Field {
        off: 0,
        len: core::mem::size_of::<ib_uverbs_query_port_resp>(),
    }));
    // SAFETY: `c` points at the local `resp_ex` and the caller's `cmd` of
    // `cmd_size` bytes (contract).
    let path = match unsafe { c.exec() } {
        Ok(p) => p,
        Err(e) => return e,
    };
    // SAFETY: `port_attr` is writable and not aliased during this call
    // (contract).
    let pa = unsafe { &mut *port_attr };
    copy_port_resp(pa, &resp_ex.legacy_resp);
    if path == Path::Ioctl {
        pa.port_cap_flags2 = resp_ex.port_cap_flags2;
        // `active_speed_ex` (rdma-core 50; the kernel's bytes after
        // `port_cap_flags2` and two reserved ones, zero before 6.6) lies past
        // the end of the `ibv_port_attr` older providers were built with:
        // written only where the buffer is known to be long enough.
        // SAFETY: `ctx` is an open context of the context layer (contract).
        let newest = unsafe { crate::kernel::state::of(ctx) }.is_some_and(|s| s.pabi() == Pabi::P65);
        if newest || port_attr_is_full(port_attr) {
            let r = resp_ex.reserved;
            let speed_ex = u32::from_ne_bytes([r[2], r[3], r[4], r[5]]);
            // SAFETY: the buffer holds a full-size (rdma-core 50 or later)
            // ibv_port_attr, whose active_speed_ex is at this offset.
            unsafe {
                port_attr
                    .cast::<u8>()
                    .add(ACTIVE_SPEED_EX_OFFSET)
                    .cast::<u32>()
                    .write_unaligned(speed_ex)
            };
        }
    }
    0
}

/// The legacy (`ibv_device_attr`) part of a QUERY_DEVICE(_EX) answer.
fn copy_orig_attr(o: &mut ibv_device_attr, b: &ib_uverbs_query_device_resp) {
    o.node_guid = b.node_guid;
    o.sys_image_guid = b.sys_image_guid;
    o.max_mr_size = b.max_mr_size;
    o.page_size_cap = b.page_size_cap;
    o.vendor_id = b.vendor_id;
    o.vendor_part_id = b.vendor_part_id;
    o.hw_ver = b.hw_ver;
    o.max_qp = b.max_qp as _;
    o.max_qp_wr = b.max_qp_wr as _;
    o.device_cap_flags = b.device_cap_flags as _;
    o.max_sge = b.max_sge as _;
    o.max_sge_rd = b.max_sge_rd as _;
    o.max_cq = b.max_cq as _;
    o.max_cqe = b.max_cqe as _;
    o.max_mr = b.max_mr as _;
    o.max_pd = b.max_pd as _;
    o.max_qp_rd_atom = b.max_qp_rd_atom as _;
    o.max_ee_rd_atom = b.max_ee_rd_atom as _;
    o.max_res_rd_atom = b.max_res_rd_atom as _;
    o.max_qp_init_rd_atom = b.max_qp_init_rd_atom as _;
    o.max_ee_init_rd_atom = b.max_ee_init_rd_atom as _;
    o.atomic_cap = b.atomic_cap as _;
    o.max_ee = b.max_ee as _;
    o.max_rdd = b.max_rdd as _;
    o.max_mw = b.max_mw as _;
    o.max_raw_ipv6_qp = b.max_raw_ipv6_qp as _;
    o.max_raw_ethy_qp = b.max_raw_ethy_qp as _;
    o.max_mcast_grp = b.max_mcast_grp as _;
    o.max_mcast_qp_attach = b.max_mcast_qp_attach as _;
    o.max_total_mcast_qp_attach = b.max_total_mcast_qp_attach as _;
    o.max_ah = b.max_ah as _;
    o.max_fmr = b.max_fmr as _;
    o.max_map_per_fmr = b.max_map_per_fmr as _;
    o.max_srq = b.max_srq as _;
    o.max_srq_wr = b.max_srq_wr as _;
    o.max_srq_sge = b.max_srq_sge as _;
    o.max_pkeys = b.max_pkeys;
    o.local_ca_ack_delay = b.local_ca_ack_delay;
    o.phys_port_cnt = b.phys_port_cnt;
}

/// The extended members of a QUERY_DEVICE_EX answer, each copied only
/// when both the caller's `attr_size` bytes and the kernel's response
/// (its `response_length`) hold it.
fn copy_ex_attr(a: &mut ibv_device_attr_ex, r: &ib_uverbs_ex_query_device_resp, attr_size: usize) {
    let rl = r.response_length as usize;
    macro_rules! can_copy {
        ($a:ident, $($k:ident).+) => {{
            let fa = field!(ibv_device_attr_ex, $a);
            let fk = field!(ib_uverbs_ex_query_device_resp, $($k).+);
            attr_size >= fa.off + fa.len && rl >= fk.off + fk.len
        }};
    }
    if can_copy!(odp_caps, odp_caps) {
        a.odp_caps.general_caps = r.odp_caps.general_caps;
        a.odp_caps.per_transport_caps.rc_odp_caps = r.odp_caps.per_transport_caps.rc_odp_caps;
        a.odp_caps.per_transport_caps.uc_odp_caps = r.odp_caps.per_transport_caps.uc_odp_caps;
        a.odp_caps.per_transport_caps.ud_odp_caps = r.odp_caps.per_transport_caps.ud_odp_caps;
    }
    if can_copy!(completion_timestamp_mask, timestamp_mask) {
        a.completion_timestamp_mask = r.timestamp_mask;
    }
    if can_copy!(hca_core_clock, hca_core_clock) {
        a.hca_core_clock = r.hca_core_clock;
    }
    if can_copy!(device_cap_flags_ex, device_cap_flags_ex) {
        a.device_cap_flags_ex = r.device_cap_flags_ex;
    }
    if can_copy!(rss_caps, rss_caps) {
        a.rss_caps.supported_qpts = r.rss_caps.supported_qpts;
        a.rss_caps.max_rwq_indirection_tables = r.rss_caps.max_rwq_indirection_tables;
        a.rss_caps.max_rwq_indirection_table_size = r.rss_caps.max_rwq_indirection_table_size;
    }
    if can_copy!(max_wq_type_rq, max_wq_type_rq) {
        a.max_wq_type_rq = r.max_wq_type_rq;
    }
    if can_copy!(raw_packet_caps, raw_packet_caps) {
        a.raw_packet_caps = r.raw_packet_caps;
    }
    if can_copy!(tm_caps, tm_caps) {
        a.tm_caps.max_rndv_hdr_size = r.tm_caps.max_rndv_hdr_size;
        a.tm_caps.max_num_tags = r.tm_caps.max_num_tags;
        a.tm_caps.flags = r.tm_caps.flags;
        a.tm_caps.max_ops = r.tm_caps.max_ops;
        a.tm_caps.max_sge = r.tm_caps.max_sge;
    }
    if can_copy!(cq_mod_caps, cq_moderation_caps) {
        a.cq_mod_caps.max_cq_count = r.cq_moderation_caps.max_cq_moderation_count;
        a.cq_mod_caps.max_cq_period = r.cq_moderation_caps.max_cq_moderation_period;
    }
    if can_copy!(max_dm_size, max_dm_size) {
        a.max_dm_size = r.max_dm_size;
    }
    if can_copy!(xrc_odp_caps, xrc_odp_caps) {
        a.xrc_odp_caps = r.xrc_odp_caps;
    }
}

/// `ibv_cmd_query_device_any`: QUERY_DEVICE_EX when the caller's attribute
/// struct is larger than `ibv_device_attr` (falling back to the legacy
/// command on kernels without it), else the legacy QUERY_DEVICE.
///
/// # Safety
/// `ctx` is an open context of the context layer (device a
/// `verbs_device`); `input` null or readable; `attr` has `attr_size`
/// writable bytes; `resp` null, or a response buffer of `*resp_size` bytes
/// (at least the core extended response) with `resp_size` readable and
/// writable.
pub unsafe fn query_device_any(
    ctx: *mut ibv_context,
    input: *const ibv_query_device_ex_input,
    attr: *mut ibv_device_attr_ex,
    mut attr_size: usize,
    mut resp: *mut ib_uverbs_ex_query_device_resp,
    mut resp_size: *mut usize,
) -> c_int {
    let orig = core::mem::size_of::<ibv_device_attr>();
    // SAFETY: a non-null `input` is readable (contract).
    if !input.is_null() && unsafe { (*input).comp_mask } != 0 {
        return libc::EINVAL;
    }
    if attr_size < orig {
        return libc::EINVAL;
    }
    let mut internal: ib_uverbs_ex_query_device_resp = zeroed();
    let mut internal_size = core::mem::size_of::<ib_uverbs_ex_query_device_resp>();
    if resp.is_null() {
        resp = &mut internal;
        resp_size = &mut internal_size;
    }
    // SAFETY: `attr` has `attr_size` writable bytes (contract); all-zero is
    // a valid `ibv_device_attr_ex` (integers only).
    unsafe { core::ptr::write_bytes(attr.cast::<u8>(), 0, attr_size) };

    if attr_size > orig {
        let mut cmd: ibv_query_device_ex = Default::default();
        let sz = core::mem::size_of_val(&cmd);
        // SAFETY: `resp` / `resp_size` are the caller's valid pair or our
        // locals `internal` / `internal_size`; `cmd` is a local of `sz`
        // bytes; `ctx` is open.
        if let Err(e) = unsafe { write_cmd(ctx, &m::QUERY_DEVICE_EX, &mut cmd, sz, resp, *resp_size) } {
            if e != libc::EOPNOTSUPP && e != libc::ENOSYS {
                return e;
            }
            attr_size = orig;
        }
    }
    if attr_size == orig {
        let mut cmd: ibv_query_device = Default::default();
        let sz = core::mem::size_of_val(&cmd);
        // SAFETY: `resp` is valid (see above); only a field address.
        let base = unsafe { core::ptr::addr_of_mut!((*resp).base) };
        let bsz = core::mem::size_of::<ib_uverbs_query_device_resp>();
        // SAFETY: `base` has the `bsz` bytes of the legacy response, inside
        // `resp`; `cmd` is a local of `sz` bytes; `ctx` is open.
        if let Err(e) = unsafe { write_cmd(ctx, &m::QUERY_DEVICE, &mut cmd, sz, base, bsz) } {
            return e;
        }
        // SAFETY: `resp` is valid and writable.
        unsafe { (*resp).response_length = bsz as u32 };
    }
    // SAFETY: `resp` and `resp_size` are valid and distinct (the caller's
    // or our locals); `attr` holds at least an `ibv_device_attr` and is not
    // aliased during this call; fields past `attr_size` are only written
    // when `can_copy!` proves them inside it.
    let (r, a) = unsafe {
        *resp_size = (*resp).response_length as usize;
        (&*resp, &mut *attr)
    };
    copy_orig_attr(&mut a.orig_attr, &r.base);
    copy_ex_attr(a, r, attr_size);
    let f = field!(ibv_device_attr_ex, phys_port_cnt_ex);
    if attr_size >= f.off + f.len {
        // SAFETY: `ctx`'s device is a live `verbs_device` (contract), whose
        // `sysfs` is null or the library's live sysfs record.
        let n = unsafe {
            let sysfs = (*verbs_device_of(ctx)).sysfs;
            if sysfs.is_null() {
                0
            } else {
                (*sysfs).num_ports
            }
        };
        a.phys_port_cnt_ex = if n != 0 { n } else { a.orig_attr.phys_port_cnt as u32 };
    }
    0
}

/// The QUERY_GID_ENTRY ioctl behind `ibv_query_gid_ex`: `Ok(true)` when the
/// kernel answered, `Ok(false)` when it lacks the method and the caller
/// must use its sysfs fallback (upstream's TRY_WRITE case), else an errno.
///
/// # Safety
/// `ctx` is an open context; `entry` has `entry_size` writable bytes.
pub unsafe fn query_gid_entry(
    ctx: *mut ibv_context,
    port_num: u32,
    gid_index: u32,
    flags: u32,
    entry: *mut u8,
    entry_size: usize,
) -> Result<bool, c_int> {
    // SAFETY: `ctx` is open (contract); no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::QUERY_GID_ENTRY, 4, core::ptr::null_mut()) };
    c.in_u64(attr::QUERY_GID_ENTRY_PORT, port_num as u64);
    c.in_u64(attr::QUERY_GID_ENTRY_GID_INDEX, gid_index as u64);
    c.in_u32(attr::QUERY_GID_ENTRY_FLAGS, flags);
    c.out_bytes(attr::QUERY_GID_ENTRY_RESP_ENTRY, entry, entry_size);
    // SAFETY: the only pointer in `c` is `entry`, with `entry_size`
    // writable bytes (contract).
    unsafe { c.try_ioctl() }.map(|fb| fb.is_none())
}

/// The QUERY_GID_TABLE ioctl behind `_ibv_query_gid_table`: `Ok(Some(n))`
/// entries, `Ok(None)` when the caller must use its sysfs fallback, else an
/// errno.
///
/// # Safety
/// `ctx` is an open context; `entries` has `entry_size * max_entries`
/// writable bytes.
pub unsafe fn query_gid_table(
    ctx: *mut ibv_context,
    entries: *mut u8,
    max_entries: usize,
    flags: u32,
    entry_size: usize,
) -> Result<Option<u64>, c_int> {
    let mut num: u64 = 0;
    // SAFETY: `ctx` is open (contract); no linked blocks.
    let mut c = unsafe { Cmd::new(ctx, &m::QUERY_GID_TABLE, 4, core::ptr::null_mut()) };
    c.in_u64(attr::QUERY_GID_TABLE_ENTRY_SIZE, entry_size as u64);
    c.in_u32(attr::QUERY_GID_TABLE_FLAGS, flags);
    c.out_bytes(
        attr::QUERY_GID_TABLE_RESP_ENTRIES,
        entries,
        array_len(entry_size, max_entries),
    );
    c.out(attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES, &mut num);
    // SAFETY: `entries` has the announced bytes (contract); `num` is a local.
    match unsafe { c.try_ioctl() }? {
        None => Ok(Some(num)),
        Some(_) => Ok(None),
    }
}

/// Upstream's `_array_len`: `size * nelems`, SIZE_MAX when that would
/// overflow (also when it would be exactly SIZE_MAX / size * size, as
/// upstream's test is `SIZE_MAX / size <= nelems`).
fn array_len(size: usize, nelems: usize) -> usize {
    if size != 0 && usize::MAX / size <= nelems {
        return usize::MAX;
    }
    size * nelems
}

/// The CREATE_COMP_CHANNEL command behind `ibv_create_comp_channel`
/// (`write()` only): the new channel's fd, or an errno value.
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn create_comp_channel(ctx: *mut ibv_context) -> Result<c_int, c_int> {
    let mut req: ibv_create_comp_channel = Default::default();
    let mut resp: ib_uverbs_create_comp_channel_resp = Default::default();
    let (rq, rs) = (core::mem::size_of_val(&req), core::mem::size_of_val(&resp));
    // SAFETY: `ctx` is open (contract); request and response are locals of
    // `rq` / `rs` bytes.
    unsafe { write_cmd(ctx, &m::CREATE_COMP_CHANNEL, &mut req, rq, &mut resp, rs) }?;
    Ok(resp.fd as c_int)
}

#[cfg(test)]
mod tests {
    use super::array_len;

    #[test]
    fn array_lengths() {
        assert_eq!(array_len(32, 4), 128);
        assert_eq!(array_len(0, usize::MAX), 0);
        assert_eq!(array_len(32, usize::MAX / 16), usize::MAX);
    }
}
