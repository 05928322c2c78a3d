//! The verbs_context_ops of the software device: the C entry points of the
//! verbs (the top layer: posting sends is send/, polling poll.rs, the
//! extended CQ and QP interfaces qpex.rs, the objects objects.rs).

use crate::context::*;
use crate::device;
use crate::handles::*;
use crate::ipc;
use crate::poll::poll_cq;
use crate::qpex::{fill_cq_ex, fill_qp_ex};
use crate::registry::{limit, Registry, Slot};
use crate::send::{bind_window, finish_now, post_list};
use crate::wire;
use ibverbs_abi::*;
use std::os::fd::IntoRawFd;
use std::os::raw::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// A slot of kind `k` in the context's object registry, or `None` with
/// errno set (EINVAL: the device's limit, as rxe's pools answer) for the
/// create verb to return NULL.
fn reserve(reg: &Registry, k: Kind) -> Option<Slot<'_>> {
    reg.reserve(k).map_err(set_errno).ok()
}

// A provider of private ABI 34: its references bind to that generation's
// definitions (the library's defaults are PABI 65's).
extern "C" {
    #[link_name = "_verbs_init_and_alloc_context@IBVERBS_PRIVATE_34"]
    fn _verbs_init_and_alloc_context(
        device: *mut ibv_device,
        cmd_fd: c_int,
        alloc_size: usize,
        context_offset: *mut verbs_context,
        driver_id: u32,
    ) -> *mut c_void;
    #[link_name = "verbs_uninit_context@IBVERBS_PRIVATE_34"]
    fn verbs_uninit_context(context: *mut verbs_context);
    #[link_name = "verbs_set_ops@IBVERBS_PRIVATE_34"]
    fn verbs_set_ops(vctx: *mut verbs_context, ops: *const verbs_context_ops);
}

// ---------------------------------------------------------------------------
// Context
// ---------------------------------------------------------------------------

/// READs and atomics in flight per QP, either way (rxe's value).
const MAX_QP_RD_ATOM: i32 = 128;

/// # Safety
/// Called by libibverbs (`DEVICE_OPS.alloc_context`) with a device our
/// `alloc_device` created.
pub unsafe extern "C" fn alloc_context(
    device: *mut ibv_device,
    cmd_fd: c_int,
    _private: *mut c_void,
) -> *mut verbs_context {
    // SAFETY: `device` is ours (the contract); we ask for a zeroed block of
    // `SwCtx`'s size with the `verbs_context` at `vctx`'s offset, which is
    // what the function allocates and initialises.
    let drv = unsafe {
        _verbs_init_and_alloc_context(
            device,
            cmd_fd,
            std::mem::size_of::<SwCtx>(),
            std::mem::offset_of!(SwCtx, vctx) as *mut verbs_context,
            0,
        )
    } as *mut SwCtx;
    if drv.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `drv` is the non-null block just allocated (no reference made).
    let vctx = unsafe { std::ptr::addr_of_mut!((*drv).vctx) };
    // SAFETY: `device` is ours and `vctx` the initialised context at the
    // start of the zeroed `SwCtx` (make_ctx's contract).
    match unsafe { make_ctx(device, vctx) } {
        Ok(()) => vctx,
        Err(e) => {
            // SAFETY: the context was initialised by the library and is given
            // back (nothing of ours refers to it: make_ctx failed before
            // publishing anything in it), then the block is freed with the C
            // allocator that made it.
            unsafe {
                verbs_uninit_context(vctx);
                libc::free(drv as *mut c_void);
            }
            set_errno(e);
            std::ptr::null_mut()
        }
    }
}

/// Opens the context's endpoint and thread and fills in the `SwCtx`.
///
/// # Safety
/// `device` is the library's device for us and `vctx` the initialised
/// `verbs_context` at the start of a zeroed `SwCtx`.
unsafe fn make_ctx(device: *mut ibv_device, vctx: *mut verbs_context) -> Result<(), c_int> {
    // SAFETY: `device` is live (the contract).
    let info = unsafe { device::info_of_device(device) }?;
    device::write_tree(&info).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let dir = info.path.parent().ok_or(libc::EINVAL)?.to_path_buf();
    device::private_dir(&dir).map_err(|_| libc::EPERM)?;
    // The id counter, opened once: the context's id now, its QPs' and
    // SRQs' later (they then take no descriptor).  Out of descriptors, the
    // context fails here with EMFILE, as upstream's open of a uverbs
    // device does.
    let ids = ipc::open_ids(&dir).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let id = ipc::alloc_ids_in(&ids, 1);
    // SAFETY: `vctx` is live and initialised (the contract).
    let ctx = unsafe { std::ptr::addr_of_mut!((*vctx).context) };
    crate::mem::init();
    let wdir = dir.clone();
    let (c, async_r) = Ctx::open(id, dir, info.gids, info.guid, info.wire, ctx as usize)?;
    c.keep_ids(ids);
    let mut agent = None;
    use swrdma_wired::client::{wire_mode, WireMode};
    let mode = wire_mode();
    if let Some(wc) = c.wire().filter(|_| mode != WireMode::Process) {
        // Through the user's transport agent (agentops.rs): it writes the
        // async events into the context's pipe.  Where none can be had,
        // the QPs are carried in the process (the default mode), or the
        // context fails (`SWRDMA_WIRE_AGENT=1`).
        let w = c.async_w.try_clone().map_err(|_| libc::EMFILE)?;
        match crate::agentconn::Conn::open(wc.ifindex, &wdir, std::os::fd::AsFd::as_fd(&w)) {
            Ok(conn) => agent = Some(Arc::new(conn)),
            Err(e) if mode == WireMode::Agent => {
                eprintln!("libibverbs: swrdma: {}: no transport agent: {}", info.name, e.text);
                return Err(libc::EIO);
            }
            Err(e) => {
                if !e.expected {
                    eprintln!(
                        "libibverbs: swrdma: {}: no transport agent ({}): this process carries its QPs",
                        info.name, e.text
                    );
                }
            }
        }
    }
    if let (None, Some(wc)) = (&agent, c.wire()) {
        // A wire device: its UDP sockets on port 4791 (wired/src/wire/sock.rs).
        let sock = wire::sock::Sock::open(&wdir, id, wc.ifindex, &wc.addrs).map_err(|e| {
            eprintln!(
                "libibverbs: swrdma: {}: no UDP port {} on the addresses of {}: {e}",
                info.name,
                swrdma_roce::ROCE_PORT,
                wc.ifname
            );
            e.raw_os_error().unwrap_or(libc::EIO)
        })?;
        let mtu = swrdma_rc::responder::pmtu_bytes(device::active_mtu(Some(wc)));
        // (Datagrams of another process's QPs go to it: its endpoint in the
        // user's directory.)
        let owner = Box::new(move |q: u32| ipc::resolve(&wdir, q));
        c.set_wire(Arc::new(wire::engine::Wire::new(sock, mtu, owner)));
    }
    // A wire context opens sockets per connected QP: the descriptor table
    // grows now, while that is free (one thread), or else from the
    // context's thread before it starts, not in the middle of a connection
    // (`swrdma_wired::fdtable`).
    use swrdma_wired::fdtable::{reserve, Reserved, CONTEXT_ROOM};
    let grow_later = c.wire().is_some() && reserve(CONTEXT_ROOM, false) == Reserved::Later;
    let tc = c.clone();
    let h = std::thread::Builder::new()
        .name("swrdma".into())
        .spawn(move || {
            if grow_later {
                let _ = reserve(CONTEXT_ROOM, true);
            }
            tc.run_thread(crate::send::deferred_thread_pass)
        })
        .map_err(|_| libc::EAGAIN)?;
    let sw = vctx as *mut SwCtx;
    // SAFETY: `ctx` is the context inside `vctx` and `sw` the `SwCtx` it
    // starts (the contract), not yet visible to the application.  The
    // library owns the async-event descriptor from now on (it closes it in
    // verbs_uninit_context); `verbs_set_ops` gets a `'static` table.
    unsafe {
        (*ctx).async_fd = async_r.into_raw_fd();
        (*ctx).num_comp_vectors = 1;
        (*sw).ctx = Arc::into_raw(c);
        (*sw).thread = Box::into_raw(Box::new(Some(h)));
        if let Some(a) = agent {
            // (`agentops::alloc_context` sets its verbs over these.)
            (*sw).agent = Arc::into_raw(a);
        }
        verbs_set_ops(vctx, &OPS);
    }
    Ok(())
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn free_context(ibctx: *mut ibv_context) {
    // SAFETY: `ibctx` is the context of a live `SwCtx` made by
    // alloc_context: stepping back by the context's offset in `vctx` (the
    // `SwCtx`'s first field) gives it; make_ctx stored `ctx` (an
    // `Arc::into_raw`) and `thread` (a `Box::into_raw`), taken back once,
    // here (the library calls this once, last).
    let (sw, c, mut thread, agent) = unsafe {
        let sw = (ibctx as *mut u8).sub(std::mem::offset_of!(verbs_context, context)) as *mut SwCtx;
        let agent = (!(*sw).agent.is_null()).then(|| Arc::from_raw((*sw).agent));
        (sw, Arc::from_raw((*sw).ctx), Box::from_raw((*sw).thread), agent)
    };
    // (The agent ends this client's objects with its connection.)
    drop(agent);
    crate::send::execute_deferred(&c, None, false);
    c.stop_thread();
    if let Some(h) = (*thread).take() {
        let _ = h.join();
    }
    c.close();
    // The last reference (the thread's is gone): closes the descriptors.
    drop(c);
    // SAFETY: nothing of ours refers to the context any more; it is given
    // back to the library, then its block freed with the C allocator
    // `_verbs_init_and_alloc_context` used.
    unsafe {
        verbs_uninit_context(std::ptr::addr_of_mut!((*sw).vctx));
        libc::free(sw as *mut c_void);
    }
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn async_event(_c: *mut ibv_context, _e: *mut ibv_async_event) {}

// ---------------------------------------------------------------------------
// Device / port
// ---------------------------------------------------------------------------

/// # Safety
/// `context` is one of our contexts and `attr` has room for `attr_size`
/// bytes (the verb's contract).
unsafe extern "C" fn query_device_ex(
    context: *mut ibv_context,
    _input: *const ibv_query_device_ex_input,
    attr: *mut ibv_device_attr_ex,
    attr_size: usize,
) -> c_int {
    // SAFETY: `context` is one of our contexts (the contract).
    let c = unsafe { ctx_of(context) };
    // SAFETY: `ibv_device_attr_ex` is integers, arrays and nested structs of
    // integers: all-zero is valid.
    let mut a: ibv_device_attr_ex = unsafe { std::mem::zeroed() };
    let o = &mut a.orig_attr;
    for (i, b) in b"44.0.0".iter().enumerate() {
        o.fw_ver[i] = *b as std::ffi::c_char;
    }
    o.node_guid = c.guid().to_be();
    o.sys_image_guid = c.guid().to_be();
    o.max_mr_size = 1 << 40;
    o.page_size_cap = 0xffff_f000;
    // Not an IEEE OUI of a real vendor (as rxe): tools and tests expect a
    // non-zero vendor id.
    o.vendor_id = 0x00ff_ffff;
    o.vendor_part_id = 0;
    o.hw_ver = 0;
    o.max_qp = limit(Kind::Qp) as i32;
    o.max_qp_wr = MAX_WR as i32;
    o.device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR
        | IBV_DEVICE_BAD_QKEY_CNTR
        | IBV_DEVICE_CURR_QP_STATE_MOD
        | IBV_DEVICE_SYS_IMAGE_GUID
        | IBV_DEVICE_RC_RNR_NAK_GEN
        | IBV_DEVICE_SRQ_RESIZE
        | IBV_DEVICE_N_NOTIFY_CQ
        | IBV_DEVICE_MEM_WINDOW
        | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
    if c.wire().is_none() {
        // (XRC on the wire needs XRCETH: not there, as on rxe, whose
        // capabilities do not list it either.)
        o.device_cap_flags |= IBV_DEVICE_XRC;
    }
    o.max_sge = MAX_SGE as i32;
    o.max_sge_rd = MAX_SGE as i32;
    o.max_cq = limit(Kind::Cq) as i32;
    o.max_cqe = MAX_CQE;
    o.max_mr = limit(Kind::Mr) as i32;
    o.max_pd = limit(Kind::Pd) as i32;
    o.max_mw = limit(Kind::Mw) as i32;
    o.max_qp_rd_atom = MAX_QP_RD_ATOM;
    o.max_res_rd_atom = 128 * 65536;
    o.max_qp_init_rd_atom = MAX_QP_RD_ATOM;
    o.atomic_cap = IBV_ATOMIC_HCA;
    o.max_ah = limit(Kind::Ah) as i32;
    o.max_srq = limit(Kind::Srq) as i32;
    o.max_srq_wr = MAX_WR as i32;
    o.max_srq_sge = MAX_SGE as i32;
    // As rxe's limits (multicast groups, QPs per group, in all); a wire
    // context joins at most `MAX_GROUPS` (a socket each: wired/src/wire/mcast.rs).
    o.max_mcast_grp = if c.wire().is_none() {
        8192
    } else {
        crate::wire::mcast::MAX_GROUPS as i32
    };
    o.max_mcast_qp_attach = 56;
    o.max_total_mcast_qp_attach = o.max_mcast_grp * 56;
    o.max_pkeys = 1;
    o.local_ca_ack_delay = 15;
    o.phys_port_cnt = 1;
    a.device_cap_flags_ex = o.device_cap_flags as u64;
    // On-demand paging is what this device does anyway: nothing is pinned,
    // the owner's CPU touches its memory at the time of the access (and the
    // kernel pages it in).  An implicit MR covers the whole address space.
    let odp = IBV_ODP_SUPPORT_SEND
        | IBV_ODP_SUPPORT_RECV
        | IBV_ODP_SUPPORT_WRITE
        | IBV_ODP_SUPPORT_READ
        | IBV_ODP_SUPPORT_ATOMIC
        | IBV_ODP_SUPPORT_SRQ_RECV;
    a.odp_caps.general_caps = (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT) as u64;
    a.odp_caps.per_transport_caps.rc_odp_caps = odp;
    a.odp_caps.per_transport_caps.uc_odp_caps =
        IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
    a.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV;
    a.xrc_odp_caps = odp;
    a.max_dm_size = MAX_DM as u64;
    a.phys_port_cnt_ex = 1;
    let n = attr_size.min(std::mem::size_of::<ibv_device_attr_ex>());
    // SAFETY: `attr` has room for `attr_size` >= `n` bytes (the contract);
    // `a` is a whole local `ibv_device_attr_ex` (>= `n` bytes).
    unsafe { std::ptr::copy_nonoverlapping(&a as *const _ as *const u8, attr as *mut u8, n) };
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn query_port(c: *mut ibv_context, port: u8, attr: *mut ibv_port_attr) -> c_int {
    if port != 1 {
        return libc::EINVAL;
    }
    // SAFETY: `c` is one of our contexts (the contract).
    let w = unsafe { ctx_of(c) }.wire();
    let (state, phys_state) = device::port_state(w);
    // SAFETY: `attr` is room for a port attribute (the verb's contract),
    // not otherwise referenced during the call.
    let a = unsafe { &mut *attr };
    a.state = state;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = device::active_mtu(w);
    a.gid_tbl_len = device::gid_tbl_len(w) as i32;
    a.port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
    a.max_msg_sz = 0x8000_0000;
    a.bad_pkey_cntr = 0;
    a.qkey_viol_cntr = 0;
    a.pkey_tbl_len = 1;
    a.lid = 0;
    a.sm_lid = 0;
    a.lmc = 0;
    a.max_vl_num = 1;
    a.sm_sl = 0;
    a.subnet_timeout = 0;
    a.init_type_reply = 0;
    a.active_width = 2; // 4X
    a.active_speed = 32; // EDR
    a.phys_state = phys_state;
    a.link_layer = IBV_LINK_LAYER_ETHERNET as u8;
    a.flags = 0;
    a.port_cap_flags2 = 0;
    0
}

// ---------------------------------------------------------------------------
// PD, MR, AH, XRCD
// ---------------------------------------------------------------------------

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn alloc_pd(context: *mut ibv_context) -> *mut ibv_pd {
    // SAFETY: `context` is one of our contexts (the contract).
    let c = unsafe { ctx_of(context) };
    let Some(slot) = reserve(&c.reg, Kind::Pd) else {
        return std::ptr::null_mut();
    };
    let id = c.new_obj_id();
    let p = Box::into_raw(Box::new(SwPd {
        pd: ibv_pd { context, handle: id },
        id,
        users: AtomicU32::new(0),
        parent: std::ptr::null_mut(),
    }));
    slot.commit(id, p as *const u8);
    p as *mut ibv_pd
}

/// A parent domain is a PD (the same protection domain as the one it
/// wraps: same id for every check) that carries a thread domain and custom
/// allocators.  This device has no queue buffers a device must reach, so the
/// allocators are never needed (a provider may always allocate by itself).
///
/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn alloc_parent_domain(
    context: *mut ibv_context,
    attr: *mut ibv_parent_domain_init_attr,
) -> *mut ibv_pd {
    // SAFETY: `attr` is a valid init attribute (the verb's contract).
    let a = unsafe { &*attr };
    // SAFETY: `pd` and `td` are null (checked first) or a PD / TD of the
    // application's, ours by the contract, live during the call.
    let bad = a.pd.is_null()
        || unsafe { valid_pd(context, a.pd) }.is_err()
        || (!a.td.is_null() && unsafe { (*a.td).context } != context);
    if bad || a.comp_mask & !(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) != 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: `context` is ours (the contract).
    let c = unsafe { ctx_of(context) };
    let Some(slot) = reserve(&c.reg, Kind::Pd) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `a.pd` is non-null, so one of our `SwPd`s (see above).
    let id = unsafe { pd_id(a.pd) };
    // SAFETY: `a.pd` is our live PD (see above); the parent domain holds it
    // until it is deallocated itself.
    unsafe { pd_use(a.pd, true) };
    // (A handle of its own; `id`, the protection domain, is its PD's.)
    let handle = c.new_obj_id();
    let p = Box::into_raw(Box::new(SwPd {
        pd: ibv_pd { context, handle },
        id,
        users: AtomicU32::new(0),
        parent: a.pd,
    }));
    slot.commit(handle, p as *const u8);
    p as *mut ibv_pd
}

/// Thread domains: a promise of single-threaded use, which this device does
/// not need to exploit.
///
/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn alloc_td(context: *mut ibv_context, attr: *mut ibv_td_init_attr) -> *mut ibv_td {
    // SAFETY: `attr` is null (checked first) or a valid init attribute.
    if !attr.is_null() && unsafe { (*attr).comp_mask } != 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    Box::into_raw(Box::new(ibv_td { context }))
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn dealloc_td(td: *mut ibv_td) -> c_int {
    // SAFETY: `td` is a `Box<ibv_td>` made by alloc_td, destroyed once (the verb's contract).
    unsafe {
        drop(Box::from_raw(td));
        0
    }
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn dealloc_pd(pd: *mut ibv_pd) -> c_int {
    if !crate::registry::live(pd as *const u8) {
        return libc::ENOENT; // destroyed already (its memory freed): not read
    }
    // SAFETY: `pd` reads as an `ibv_pd` of one of our contexts (the
    // contract); the table says whether it is a live `SwPd` of that context.
    if let Err(e) = unsafe { valid_pd(std::ptr::null_mut(), pd) } {
        return e;
    }
    // SAFETY: `pd` is a live `SwPd` made by alloc_pd / alloc_parent_domain.
    if unsafe { (*(pd as *mut SwPd)).users.load(Ordering::SeqCst) } != 0 {
        return libc::EBUSY; // MRs, MWs, QPs, AHs, SRQs or parent domains live in it
    }
    // SAFETY: as above.
    let _ = unsafe {
        ctx_of((*pd).context)
            .reg
            .remove(Kind::Pd, (*pd).handle, pd as *const u8)
    };
    // SAFETY: `pd` is a `Box<SwPd>` made by alloc_pd / alloc_parent_domain,
    // destroyed once (nothing refers to it any more: no users).
    let b = unsafe { Box::from_raw(pd as *mut SwPd) };
    // SAFETY: a parent domain's PD is live: it could not be deallocated
    // while this parent domain held a use of it.
    unsafe { pd_use(b.parent, false) };
    crate::registry::retire(b);
    0
}

/// The access flags a registration may carry: the defined bits (up to
/// `IBV_ACCESS_FLUSH_PERSISTENT`, 1 << 9) and the optional range.
const MR_ACCESS_KNOWN: u32 = 0x3ff | IBV_ACCESS_OPTIONAL_RANGE;

/// The page size a kernel provider pins memory by.
const PAGE: u64 = 4096;

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn reg_mr(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    hca_va: u64,
    access: c_int,
) -> *mut ibv_mr {
    // SAFETY: `pd` is one of our PDs (an `SwPd`), so its context is one of
    // our contexts (the contract).  `addr`/`length` are only recorded,
    // never dereferenced here: later accesses are range-checked against
    // them and done by this process.
    let (context, c) = unsafe { ((*pd).context, ctx_of((*pd).context)) };
    // SAFETY: as above.
    if let Err(e) = unsafe { valid_pd(context, pd) } {
        set_errno(e);
        return std::ptr::null_mut();
    }
    // SAFETY: `pd` is a live `SwPd` of the context (checked).
    let pdid = unsafe { pd_id(pd) };
    let access = access as u32;
    if access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0 && access & IBV_ACCESS_LOCAL_WRITE == 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // As the kernel (ib_check_mr_access, ib_umem_get): access bits it does
    // not know are EINVAL, and so is a range that covers no page: length 0
    // at a page boundary.  Length 0 inside a page covers (and pins) that
    // page: rxe registers it (an MR no access of one byte or more fits in).
    let no_page = length == 0 && ((addr as u64).is_multiple_of(PAGE) || access & IBV_ACCESS_ON_DEMAND != 0);
    if access & !MR_ACCESS_KNOWN != 0 || no_page {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // As a kernel provider pinning the pages (ib_umem_get): a range that
    // wraps is EINVAL, memory not mapped (or not writable while the rights
    // let it be written) EFAULT.  On-demand paging pins nothing (an
    // implicit ODP MR covers the whole address space): only the wrap check.
    let writable = access
        & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
        != 0;
    let implicit = access & IBV_ACCESS_ON_DEMAND != 0 && addr.is_null() && length == usize::MAX;
    let r = if access & IBV_ACCESS_ON_DEMAND != 0 {
        if implicit || (addr as u64).checked_add(length as u64).is_some() {
            Ok(())
        } else {
            Err(libc::EINVAL)
        }
    } else if length == 0 {
        crate::mem::check_mapped(addr as u64 / PAGE * PAGE, PAGE, writable)
    } else {
        crate::mem::check_mapped(addr as u64, length as u64, writable)
    };
    if let Err(e) = r {
        set_errno(e);
        return std::ptr::null_mut();
    }
    let Some(slot) = reserve(&c.reg, Kind::Mr) else {
        return std::ptr::null_mut();
    };
    let key = c.new_key();
    c.insert_mr(
        key,
        MrEnt {
            pd: pdid,
            va: addr as u64,
            addr: hca_va,
            len: length as u64,
            access,
            mw: 0,
            parent: 0,
            qpn: 0,
        },
    );
    let m = Box::into_raw(Box::new(SwMr {
        vmr: verbs_mr {
            ibv_mr: ibv_mr {
                context,
                pd,
                addr,
                length,
                handle: key,
                lkey: key,
                rkey: key,
            },
            mr_type: IBV_MR_TYPE_MR,
            access: access as c_int,
        },
        dm: std::ptr::null_mut(),
    }));
    slot.commit(key, m as *const u8);
    // SAFETY: `pd` is our live PD; the MR holds a use until dereg.
    unsafe { pd_use(pd, true) };
    m as *mut ibv_mr
}

/// ibv_advise_mr: nothing to prefetch (the owner's own page faults do it),
/// but the request is checked as a device would.
///
/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn advise_mr(pd: *mut ibv_pd, advice: u32, flags: u32, sg: *mut ibv_sge, n: u32) -> c_int {
    if !matches!(
        advice,
        IBV_ADVISE_MR_ADVICE_PREFETCH | IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE | IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
    ) || flags & !IBV_ADVISE_MR_FLAG_FLUSH != 0
        || n == 0
        || sg.is_null()
    {
        return libc::EINVAL;
    }
    // SAFETY: `pd` is one of our PDs, its context one of ours; `sg` (checked
    // non-null) holds `n` SGEs (the verb's contract).
    let (c, pdid, sgl) = unsafe {
        (
            ctx_of((*pd).context),
            pd_id(pd),
            std::slice::from_raw_parts(sg, n as usize),
        )
    };
    for s in sgl {
        let Some(m) = c.mr(s.lkey) else { return libc::EINVAL };
        if m.pd != pdid || m.access & IBV_ACCESS_ON_DEMAND == 0 {
            return libc::EINVAL;
        }
        if s.addr < m.addr
            || s.addr
                .checked_add(s.length as u64)
                .is_none_or(|e| e > m.addr.saturating_add(m.len))
        {
            return libc::EINVAL;
        }
        if advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE && m.access & IBV_ACCESS_LOCAL_WRITE == 0 {
            return libc::EINVAL;
        }
    }
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn rereg_mr(
    vmr: *mut verbs_mr,
    flags: c_int,
    pd: *mut ibv_pd,
    addr: *mut c_void,
    length: usize,
    access: c_int,
) -> c_int {
    let m = vmr as *mut SwMr;
    // SAFETY: `vmr` is the `verbs_mr` at the start of a live `SwMr` of
    // ours (the contract); its context is one of ours.
    let (c, lkey) = unsafe { (ctx_of((*m).vmr.ibv_mr.context), (*m).vmr.ibv_mr.lkey) };
    let flags = flags as u32;
    let access = access as u32;
    if flags & IBV_REREG_MR_CHANGE_ACCESS != 0
        && access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0
        && access & IBV_ACCESS_LOCAL_WRITE == 0
    {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    if flags & IBV_REREG_MR_CHANGE_PD != 0 && pd.is_null() {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    if flags & IBV_REREG_MR_CHANGE_TRANSLATION != 0 {
        // The new range is checked as reg_mr checks it (ODP: only the wrap).
        // SAFETY: `m` is our live `SwMr` (see above).
        let old_access = unsafe { (*m).vmr.access } as u32;
        let acc = if flags & IBV_REREG_MR_CHANGE_ACCESS != 0 {
            access
        } else {
            old_access
        };
        let writable = acc
            & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
            != 0;
        let r = if acc & IBV_ACCESS_ON_DEMAND != 0 {
            (addr as u64).checked_add(length as u64).map(|_| ()).ok_or(libc::EINVAL)
        } else {
            crate::mem::check_mapped(addr as u64, length as u64, writable)
        };
        if let Err(e) = r {
            set_errno(e);
            return e;
        }
    }
    let new_pd = if flags & IBV_REREG_MR_CHANGE_PD != 0 {
        // SAFETY: `pd` is non-null (checked above), so one of our PDs.
        Some(unsafe { pd_id(pd) })
    } else {
        None
    };
    // The keys stay; what the MR covers, who may use it and how changes
    // at once for every later access (they all look the key up).
    let found = c.update_mr(lkey, |e| {
        if flags & IBV_REREG_MR_CHANGE_TRANSLATION != 0 {
            e.va = addr as u64;
            e.addr = addr as u64;
            e.len = length as u64;
        }
        if let Some(p) = new_pd {
            e.pd = p;
        }
        if flags & IBV_REREG_MR_CHANGE_ACCESS != 0 {
            e.access = access;
        }
    });
    if !found {
        set_errno(libc::EINVAL);
        return libc::EINVAL;
    }
    if flags & IBV_REREG_MR_CHANGE_ACCESS != 0 {
        // SAFETY: `m` is our live `SwMr` (see above); the application does
        // not use the MR concurrently with rereg (the verb's contract).
        unsafe { (*m).vmr.access = access as c_int };
    }
    if new_pd.is_some() {
        // SAFETY: `m` is our live `SwMr`; its old PD and the new `pd` are
        // live PDs of ours (the use moves from one to the other).  (The
        // library records the new PD in the `ibv_mr` after we return.)
        unsafe {
            pd_use((*m).vmr.ibv_mr.pd, false);
            pd_use(pd, true);
            (*m).vmr.ibv_mr.pd = pd;
        }
    }
    0
}

// ----- device memory ---------------------------------------------------------

/// # Safety
/// `dm` is the `ibv_dm` of a live `SwDm`.
unsafe fn dm_range_ok(dm: *mut ibv_dm, off: u64, len: usize) -> Option<*mut u8> {
    // SAFETY: `dm` is the start of a live `SwDm` (the contract).
    let d = unsafe { &*(dm as *mut SwDm) };
    // As device memory: 4-byte granules.
    if !off.is_multiple_of(4) || !len.is_multiple_of(4) || off.checked_add(len as u64).is_none_or(|e| e > d.len as u64)
    {
        return None;
    }
    // SAFETY: `off` + `len` <= `d.len` (checked above): inside the mapping.
    Some(unsafe { d.base.add(off as usize) })
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn memcpy_to_dm(dm: *mut ibv_dm, off: u64, host: *const c_void, len: usize) -> c_int {
    // SAFETY: `dm` is one of our `SwDm`s (the contract).
    let Some(p) = (unsafe { dm_range_ok(dm, off, len) }) else {
        return libc::EINVAL;
    };
    // SAFETY: `dm_range_ok` checked `[off, off+len)` is inside the DM's
    // mapping; `host` has `len` readable bytes (the verb's contract).
    unsafe { std::ptr::copy(host as *const u8, p, len) };
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn memcpy_from_dm(host: *mut c_void, dm: *mut ibv_dm, off: u64, len: usize) -> c_int {
    // SAFETY: `dm` is one of our `SwDm`s (the contract).
    let Some(p) = (unsafe { dm_range_ok(dm, off, len) }) else {
        return libc::EINVAL;
    };
    // SAFETY: `dm_range_ok` checked `[off, off+len)` is inside the DM's
    // mapping; `host` has room for `len` bytes (the verb's contract).
    unsafe { std::ptr::copy(p, host as *mut u8, len) };
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn alloc_dm(context: *mut ibv_context, attr: *mut ibv_alloc_dm_attr) -> *mut ibv_dm {
    // SAFETY: `attr` is a valid attribute (the verb's contract).
    let a = unsafe { &*attr };
    if a.comp_mask != 0 || a.length == 0 || a.log_align_req > 12 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    if a.length > MAX_DM {
        set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    }
    let len = (a.length + 4095) & !4095;
    // SAFETY: a fresh anonymous mapping (no hint, no descriptor), owned by
    // the `SwDm` made below and unmapped by free_dm.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    }
    // SAFETY: `context` is one of our contexts (the contract).
    let c = unsafe { ctx_of(context) };
    let d = Box::into_raw(Box::new(SwDm {
        dm: ibv_dm {
            context,
            memcpy_to_dm: Some(memcpy_to_dm),
            memcpy_from_dm: Some(memcpy_from_dm),
            comp_mask: 0,
            handle: c.new_obj_id(),
        },
        base: p as *mut u8,
        len: a.length,
        mrs: AtomicU32::new(0),
    }));
    d as *mut ibv_dm
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn free_dm(dm: *mut ibv_dm) -> c_int {
    let d = dm as *mut SwDm;
    // SAFETY: `dm` is the start of a live `Box<SwDm>` made by alloc_dm (the
    // contract).
    if unsafe { (*d).mrs.load(Ordering::SeqCst) } != 0 {
        return libc::EBUSY;
    }
    // SAFETY: as above; destroyed once (the verb's contract).
    let d = unsafe { Box::from_raw(d) };
    // SAFETY: the DM's own mapping (base, length rounded as in alloc_dm),
    // used by no MR (checked above) and no longer reachable.
    unsafe { libc::munmap(d.base as *mut c_void, (d.len + 4095) & !4095) };
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn reg_dm_mr(
    pd: *mut ibv_pd,
    dm: *mut ibv_dm,
    off: u64,
    length: usize,
    access: c_uint,
) -> *mut ibv_mr {
    let allowed = IBV_ACCESS_ZERO_BASED
        | IBV_ACCESS_LOCAL_WRITE
        | IBV_ACCESS_REMOTE_WRITE
        | IBV_ACCESS_REMOTE_READ
        | IBV_ACCESS_REMOTE_ATOMIC;
    // SAFETY: `pd` is one of our PDs and `dm` the start of one of our live
    // `SwDm`s (the contract); their contexts are ours.
    let (d, context, c) = unsafe { (&*(dm as *mut SwDm), (*pd).context, ctx_of((*pd).context)) };
    // SAFETY: as above.
    if let Err(e) = unsafe { valid_pd(context, pd) } {
        set_errno(e);
        return std::ptr::null_mut();
    }
    // SAFETY: `pd` is a live `SwPd` of the context (checked).
    let pdid = unsafe { pd_id(pd) };
    if access & IBV_ACCESS_ZERO_BASED == 0 || access & !allowed != 0 || d.dm.context != context {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    if access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0 && access & IBV_ACCESS_LOCAL_WRITE == 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    if off.checked_add(length as u64).is_none_or(|e| e > d.len as u64) {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    let Some(slot) = reserve(&c.reg, Kind::Mr) else {
        return std::ptr::null_mut();
    };
    let key = c.new_key();
    let access = access & !IBV_ACCESS_ZERO_BASED;
    c.insert_mr(
        key,
        MrEnt {
            pd: pdid,
            va: d.base as u64 + off,
            addr: 0,
            len: length as u64,
            access,
            mw: 0,
            parent: 0,
            qpn: 0,
        },
    );
    d.mrs.fetch_add(1, Ordering::SeqCst);
    let m = Box::into_raw(Box::new(SwMr {
        vmr: verbs_mr {
            ibv_mr: ibv_mr {
                context,
                pd,
                addr: std::ptr::null_mut(),
                length,
                handle: key,
                lkey: key,
                rkey: key,
            },
            mr_type: IBV_MR_TYPE_MR,
            access: access as c_int,
        },
        dm: dm as *mut SwDm,
    }));
    slot.commit(key, m as *const u8);
    // SAFETY: `pd` is our live PD; the MR holds a use until dereg.
    unsafe { pd_use(pd, true) };
    m as *mut ibv_mr
}

// ----- memory windows --------------------------------------------------------
//
// A bound window is an entry in the context's key table like an MR: its
// rkey, the range (inside its MR, which must still exist), its own remote
// rights, and for type 2 the QP it was bound through (type 2B: QP and PD).
// Unbound or invalidated windows have no entry, so their rkeys fail.

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn alloc_mw(pd: *mut ibv_pd, ty: u32) -> *mut ibv_mw {
    if ty != IBV_MW_TYPE_1 && ty != IBV_MW_TYPE_2 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: `pd` is one of our PDs; its context is one of ours.
    let (context, c) = unsafe { ((*pd).context, ctx_of((*pd).context)) };
    // SAFETY: as above.
    if let Err(e) = unsafe { valid_pd(context, pd) } {
        set_errno(e);
        return std::ptr::null_mut();
    }
    let Some(slot) = reserve(&c.reg, Kind::Mw) else {
        return std::ptr::null_mut();
    };
    let key = c.new_key();
    // SAFETY: `pd` is our live PD; the window holds a use until dealloc.
    unsafe { pd_use(pd, true) };
    let m = Box::into_raw(Box::new(ibv_mw {
        context,
        pd,
        rkey: key,
        handle: key,
        r#type: ty,
    }));
    slot.commit(key, m as *const u8);
    m
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn dealloc_mw(mw: *mut ibv_mw) -> c_int {
    if !crate::registry::live(mw as *const u8) {
        return libc::ENOENT; // destroyed already (its memory freed): not read
    }
    // SAFETY: `mw` reads as an `ibv_mw` of one of our contexts (the
    // contract); the table says whether it is a live window of that context,
    // a `Box<ibv_mw>` made by alloc_mw (destroyed once: taken out of the table).
    unsafe {
        let c = ctx_of((*mw).context);
        if let Err(e) = c.reg.remove(Kind::Mw, (*mw).handle, mw as *const u8) {
            return e;
        }
        c.unbind_window((*mw).rkey);
        pd_use((*mw).pd, false);
        crate::registry::retire(Box::from_raw(mw));
        0
    }
}

/// ibv_bind_mw (type 1 windows): a work request of the send queue.
///
/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn bind_mw(ibqp: *mut ibv_qp, mw: *mut ibv_mw, b: *mut ibv_mw_bind) -> c_int {
    // SAFETY: `ibqp` is one of our QPs, `mw` one of our windows and `b` a
    // valid bind request (the verb's contract).
    let (c, qp, ty, b) = unsafe {
        let (c, qp) = qp_of(ibqp);
        (c, qp, (*mw).r#type, &*b)
    };
    if ty != IBV_MW_TYPE_1 || !matches!(qp.qpt, IBV_QPT_RC | IBV_QPT_UC | IBV_QPT_XRC_SEND) {
        return libc::EINVAL;
    }
    let signaled = b.send_flags & IBV_SEND_SIGNALED != 0;
    let state = lock(&qp.st).state;
    if state == IBV_QPS_ERR {
        finish_now(c, &qp, b.wr_id, IBV_WC_BIND_MW, 0, signaled, IBV_WC_WR_FLUSH_ERR);
        return 0;
    }
    if state != IBV_QPS_RTS {
        return libc::EINVAL;
    }
    // SAFETY: `mw` is our live window, `qp` our live QP, and the bind's MR
    // null or one of ours (the verb's contract).
    let status = match unsafe { bind_window(c, &qp, mw, 0, &b.bind_info) } {
        Ok(()) => 0,
        Err(s) => s,
    };
    finish_now(c, &qp, b.wr_id, IBV_WC_BIND_MW, 0, signaled, status);
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn dereg_mr(vmr: *mut verbs_mr) -> c_int {
    if !crate::registry::live(vmr as *const u8) {
        return libc::ENOENT; // destroyed already (its memory freed): not read
    }
    // SAFETY: `vmr` reads as a `verbs_mr` of one of our contexts (the
    // contract); the table says whether it is a live MR of that context.
    let (c, handle) = unsafe { (ctx_of((*vmr).ibv_mr.context), (*vmr).ibv_mr.handle) };
    if let Err(e) = c.reg.remove(Kind::Mr, handle, vmr as *const u8) {
        return e;
    }
    // (Requests posted before the dereg execute first.)
    crate::send::execute_deferred(c, None, false);
    // SAFETY: `vmr` is the start of a `Box<SwMr>` made by reg_mr /
    // reg_dm_mr (it was in the table), destroyed once (taken out of it).
    let m = unsafe { Box::from_raw(vmr as *mut SwMr) };
    // (`remove_mr` returns once no copy by a peer's request is in flight
    // on any MR of the context: none can touch this one afterwards.)
    c.remove_mr(m.vmr.ibv_mr.lkey);
    // SAFETY: the MR's PD is live (it cannot be deallocated while the MR
    // held a use of it).
    unsafe { pd_use(m.vmr.ibv_mr.pd, false) };
    if !m.dm.is_null() {
        // SAFETY: a DM MR's `dm` is a live `SwDm`: free_dm refuses while
        // its MR count (which this MR holds) is not zero.
        unsafe { (*m.dm).mrs.fetch_sub(1, Ordering::SeqCst) };
    }
    crate::registry::retire(m);
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn create_ah(pd: *mut ibv_pd, attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    // SAFETY: `attr` is a valid address vector and `pd` one of our PDs (the
    // verb's contract); the attribute is copied.
    let (attr, context) = unsafe { (*attr, (*pd).context) };
    // SAFETY: `context` is one of our contexts (the PD's).
    let c = unsafe { ctx_of(context) };
    // SAFETY: `pd` reads as an `ibv_pd` of `context`.
    if let Err(e) = unsafe { valid_pd(context, pd) } {
        set_errno(e);
        return std::ptr::null_mut();
    }
    if let Err(e) = check_av(&attr, c.gid_count()) {
        set_errno(e);
        return std::ptr::null_mut();
    }
    let Some(slot) = reserve(&c.reg, Kind::Ah) else {
        return std::ptr::null_mut();
    };
    let handle = c.new_obj_id();
    let a = Box::into_raw(Box::new(SwAh {
        ah: ibv_ah { context, pd, handle },
        attr,
    }));
    slot.commit(handle, a as *const u8);
    // SAFETY: `pd` is our live PD; the AH holds a use until destroyed.
    unsafe { pd_use(pd, true) };
    a as *mut ibv_ah
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn destroy_ah(ah: *mut ibv_ah) -> c_int {
    if !crate::registry::live(ah as *const u8) {
        return libc::ENOENT; // destroyed already (its memory freed): not read
    }
    // SAFETY: `ah` reads as an `ibv_ah` of one of our contexts (the
    // contract); in the table, it is a `Box<SwAh>` made by create_ah,
    // destroyed once (taken out of it); its PD is live (held by this AH).
    unsafe {
        if let Err(e) = ctx_of((*ah).context)
            .reg
            .remove(Kind::Ah, (*ah).handle, ah as *const u8)
        {
            return e;
        }
        pd_use((*ah).pd, false);
        crate::registry::retire(Box::from_raw(ah as *mut SwAh));
        0
    }
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn open_xrcd(context: *mut ibv_context, attr: *mut ibv_xrcd_init_attr) -> *mut ibv_xrcd {
    // SAFETY: `context` is one of our contexts and `attr` a valid init
    // attribute (the contract).
    let (c, a) = unsafe { (ctx_of(context), &*attr) };
    // As upstream's ibv_cmd_open_xrcd and the kernel: unknown attributes
    // (EOPNOTSUPP), the file and flags both required (EINVAL), and a file
    // descriptor that is not open (EBADF; -1 is "no file").
    if a.comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED {
        set_errno(libc::EOPNOTSUPP);
        return std::ptr::null_mut();
    }
    if a.comp_mask & IBV_XRCD_INIT_ATTR_FD == 0 || a.comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS == 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    if a.comp_mask & IBV_XRCD_INIT_ATTR_FD != 0
        && a.fd != -1
        // SAFETY: F_GETFD only asks whether the descriptor is open.
        && unsafe { libc::fcntl(a.fd, libc::F_GETFD) } < 0
    {
        set_errno(libc::EBADF);
        return std::ptr::null_mut();
    }
    let id = c.new_obj_id();
    let x = Box::into_raw(Box::new(SwXrcd {
        vx: verbs_xrcd {
            xrcd: ibv_xrcd { context },
            comp_mask: VERBS_XRCD_HANDLE,
            handle: id,
        },
        id,
        users: AtomicU32::new(0),
    }));
    x as *mut ibv_xrcd
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn close_xrcd(x: *mut ibv_xrcd) -> c_int {
    // SAFETY: `x` is a live `Box<SwXrcd>` made by open_xrcd (the contract).
    if unsafe { (*(x as *mut SwXrcd)).users.load(Ordering::SeqCst) } != 0 {
        return libc::EBUSY;
    }
    // SAFETY: as above; nothing uses it any more, and it is destroyed once.
    unsafe {
        drop(Box::from_raw(x as *mut SwXrcd));
        0
    }
}

/// One use of XRC domain `x` (null: none) taken (`on`) or given back by an
/// XRC SRQ or XRC target QP.
///
/// # Safety
/// `x` is null or a live `SwXrcd` of ours.
unsafe fn xrcd_use(x: *mut ibv_xrcd, on: bool) {
    if x.is_null() {
        return;
    }
    // SAFETY: `x` is a live `SwXrcd` (the caller's contract).
    let u = unsafe { &(*(x as *mut SwXrcd)).users };
    if on {
        u.fetch_add(1, Ordering::SeqCst);
    } else {
        u.fetch_sub(1, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------
// CQ
// ---------------------------------------------------------------------------

/// Null (errno set): the device's limit of CQs is reached.
///
/// # Safety
/// `context` is one of our contexts; `channel` is null or a live completion channel.
unsafe fn new_cq(context: *mut ibv_context, cqe: c_int, channel: *mut ibv_comp_channel) -> *mut SwCq {
    // SAFETY: `context` is one of our contexts; `channel` is null (checked)
    // or a live completion channel (the contract).
    let (c, chan_fd) = unsafe { (ctx_of(context), if channel.is_null() { -1 } else { (*channel).fd }) };
    let Some(slot) = reserve(&c.reg, Kind::Cq) else {
        return std::ptr::null_mut();
    };
    let s = Box::into_raw(Box::new(SwCq {
        // SAFETY: `verbs_cq` is integers, pointers, `Option<fn>`s and
        // pthread objects the library initialises: all-zero is valid.
        vcq: unsafe { std::mem::zeroed() },
        cq: std::ptr::null(),
        ctx: c,
        cur: wc_zero(),
    }));
    // SAFETY: `s` is the fresh box made above, not yet visible to anyone;
    // `cq_ex` is the member of the `verbs_cq` union an extended CQ uses.
    let ex = unsafe {
        (*s).cq = Arc::into_raw(Arc::new(Cq::new(s as usize, chan_fd, cqe as u32, Cq::async_dup(c), c)));
        &mut *(std::ptr::addr_of_mut!((*s).vcq.u.cq_ex) as *mut ibv_cq_ex)
    };
    ex.context = context;
    ex.channel = channel;
    ex.cqe = cqe;
    ex.handle = c.new_obj_id();
    slot.commit(ex.handle, s as *const u8);
    fill_cq_ex(ex);
    s
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn create_cq(
    context: *mut ibv_context,
    cqe: c_int,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ibv_cq {
    // SAFETY: `context` is one of our contexts (the contract).
    let vectors = unsafe { (*context).num_comp_vectors };
    if !(1..=MAX_CQE).contains(&cqe) || comp_vector < 0 || comp_vector >= vectors {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    // SAFETY: `context` is ours and `channel` null or live (the contract).
    (unsafe { new_cq(context, cqe, channel) }) as *mut ibv_cq
}

/// The checks of an extended CQ's init attribute (`create_cq_ex`, here and
/// through the agent): the errno of the first it fails.  `vectors` is the
/// context's number of completion vectors.
pub(crate) fn check_cq_init_attr_ex(a: &ibv_cq_init_attr_ex, vectors: c_int) -> Result<(), c_int> {
    if a.comp_mask & !(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD) != 0 {
        return Err(libc::EINVAL);
    }
    if a.cqe < 1 || a.cqe > MAX_CQE as u32 || a.comp_vector >= vectors as u32 {
        return Err(libc::EINVAL);
    }
    if a.wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP as u64 != 0
        || a.wc_flags & !(IBV_WC_STANDARD_FLAGS as u64 | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK as u64) != 0
    {
        return Err(libc::EOPNOTSUPP);
    }
    Ok(())
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn create_cq_ex(context: *mut ibv_context, attr: *mut ibv_cq_init_attr_ex) -> *mut ibv_cq_ex {
    // SAFETY: `context` is one of our contexts and `attr` a valid init
    // attribute (the verb's contract).
    let (a, vectors) = unsafe { (&*attr, (*context).num_comp_vectors) };
    if let Err(e) = check_cq_init_attr_ex(a, vectors) {
        set_errno(e);
        return std::ptr::null_mut();
    }
    // SAFETY: `context` is ours and `a.channel` null or live (the contract);
    // `s` is then our fresh `SwCq`, whose `cq_ex` member is in use.
    unsafe {
        let s = new_cq(context, a.cqe as c_int, a.channel);
        if s.is_null() {
            return std::ptr::null_mut();
        }
        (*(std::ptr::addr_of_mut!((*s).vcq.u.cq_ex) as *mut ibv_cq_ex)).cq_context = a.cq_context;
        s as *mut ibv_cq_ex
    }
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn req_notify_cq(cq: *mut ibv_cq, solicited: c_int) -> c_int {
    // As the kernel's REQ_NOTIFY_CQ command (rxe): a CQ whose handle names
    // no CQ of its context is refused before it is armed (ENOENT, the
    // errno too, as the failed command leaves it; measured in the VM).
    // SAFETY: `cq` reads as an `ibv_cq` of one of our contexts (the contract).
    if let Err(e) = unsafe { valid_cq((*cq).context, cq) } {
        set_errno(e);
        return e;
    }
    // SAFETY: `cq` is one of our CQs, whose `cq` is its live `Arc<Cq>`.
    // (and its `ctx` the live context that created it: contexts outlive CQs).
    let (cqr, c) = unsafe {
        let s = cq_of(cq);
        (&*s.cq, &*s.ctx)
    };
    // (Requests kept back execute before the application may sleep.)
    crate::send::execute_deferred(c, None, false);
    cqr.arm(solicited != 0);
    c.note_arm();
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn cq_event(_cq: *mut ibv_cq) {}

/// # Safety
/// `cq` is a CQ of ours (see `OPS`), destroyed once.
unsafe extern "C" fn destroy_cq(cq: *mut ibv_cq) -> c_int {
    if !crate::registry::live(cq as *const u8) {
        return libc::ENOENT; // destroyed already (its memory freed): not read
    }
    // SAFETY: `cq` reads as an `ibv_cq` of one of our contexts (the
    // contract); the table says whether it is a live CQ of that context.
    let c = unsafe { ctx_of((*cq).context) };
    // SAFETY: as above.
    if let Err(e) = unsafe { valid_cq((*cq).context, cq) } {
        return e;
    }
    // SAFETY: `cq` is our live CQ, whose `cq` is its live `Arc<Cq>`.
    if unsafe { (*cq_of(cq).cq).users.load(Ordering::SeqCst) } != 0 {
        return libc::EBUSY; // a QP or SRQ still completes into it
    }
    // SAFETY: as above.
    let _ = c.reg.remove(Kind::Cq, unsafe { (*cq).handle }, cq as *const u8);
    // SAFETY: `cq` is a `Box<SwCq>` made by new_cq, destroyed once; its `cq`
    // is the `Arc::into_raw` that box owns.
    unsafe {
        let s = Box::from_raw(cq as *mut SwCq);
        drop(Arc::from_raw(s.cq));
        crate::registry::retire(s);
    }
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn resize_cq(cq: *mut ibv_cq, cqe: c_int) -> c_int {
    if !(1..=MAX_CQE).contains(&cqe) {
        return libc::EINVAL;
    }
    // SAFETY: `cq` reads as an `ibv_cq` of one of our contexts (the contract).
    if let Err(e) = unsafe { valid_cq((*cq).context, cq) } {
        return e;
    }
    // As a hardware CQ: the new size must hold the completions not yet polled.
    // SAFETY: `cq` is one of our CQs, whose `cq` is its live `Arc<Cq>`.
    let g = lock(unsafe { &(*cq_of(cq).cq).inner });
    if g.wcs.len() > cqe as usize {
        return libc::EINVAL;
    }
    // SAFETY: as above.
    unsafe { (*cq_of(cq).cq).depth.store(cqe as u32, Ordering::Relaxed) };
    // SAFETY: `cq` is our live CQ; the application does not use it
    // concurrently with resize (the verb's contract).
    unsafe { (*cq).cqe = cqe };
    0
}

// ---------------------------------------------------------------------------
// SRQ
// ---------------------------------------------------------------------------

/// # Safety
/// `context` is one of our contexts; `pd`, `xrcd`, `cq` are null or ours.
unsafe fn new_srq(
    context: *mut ibv_context,
    pd: *mut ibv_pd,
    attr: &mut ibv_srq_attr,
    srq_context: *mut c_void,
    ty: u32,
    xrcd: *mut ibv_xrcd,
    cq: *mut ibv_cq,
) -> *mut ibv_srq {
    // SAFETY: `context` is one of our contexts (the contract).
    let c = unsafe { ctx_of(context) };
    // SAFETY: `pd` and `cq` are null or read as objects of our contexts.
    let objs = if pd.is_null() {
        Ok(())
    } else {
        // SAFETY: as above.
        unsafe { valid_pd(context, pd) }
    };
    // SAFETY: as above.
    if let Err(e) = objs.and_then(|()| unsafe { valid_cq(context, cq) }) {
        set_errno(e);
        return std::ptr::null_mut();
    }
    if attr.max_wr == 0 || attr.max_wr > MAX_WR || attr.max_sge > MAX_SGE {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    let Some(slot) = reserve(&c.reg, Kind::Srq) else {
        return std::ptr::null_mut();
    };
    let num = match c.alloc_id() {
        Ok(n) => n,
        Err(e) => {
            set_errno(e);
            return std::ptr::null_mut();
        }
    };
    let s = Box::into_raw(Box::new(SwSrq {
        // SAFETY: `verbs_srq` is integers, pointers and pthread objects that
        // are initialised below: all-zero is valid.
        vsrq: unsafe { std::mem::zeroed() },
        srq: std::ptr::null(),
    }));
    // SAFETY: `xrcd`, `pd` and `cq` are null (checked) or an `SwXrcd`, an
    // `SwPd` and an `SwCq` of ours (the contract).
    let (xid, pdid, srq_cq) = unsafe {
        (
            if xrcd.is_null() { 0 } else { (*(xrcd as *mut SwXrcd)).id },
            if pd.is_null() { 0 } else { pd_id(pd) },
            cq_arc(cq),
        )
    };
    if let Some(cq) = &srq_cq {
        cq.users.fetch_add(1, Ordering::SeqCst);
    }
    // SAFETY: `pd` is null or our live PD, `xrcd` null or our live XRC
    // domain; the SRQ holds a use of each until destroyed.
    unsafe {
        pd_use(pd, true);
        xrcd_use(xrcd, true);
    }
    let srq = Arc::new(Srq {
        num,
        ibsrq: s as usize,
        pd: pdid,
        xrcd: xid,
        cq: srq_cq,
        users: AtomicU32::new(0),
        st: Mutex::new(SrqSt {
            wqes: Default::default(),
            max_wr: attr.max_wr,
            max_sge: attr.max_sge.max(1),
            limit: attr.srq_limit,
        }),
    });
    c.add_srq(srq.clone());
    // SAFETY: `s` is the fresh box made above, not yet visible to the
    // application (peers only know the SRQ number).
    let v = unsafe {
        (*s).srq = Arc::into_raw(srq);
        &mut (*s).vsrq
    };
    v.srq.context = context;
    v.srq.srq_context = srq_context;
    v.srq.pd = pd;
    v.srq.handle = num;
    // SAFETY: the pthread objects are initialised in place, where the
    // library expects them, before anyone can use them.
    unsafe {
        libc::pthread_mutex_init(&mut v.srq.mutex, std::ptr::null());
        libc::pthread_cond_init(&mut v.srq.cond, std::ptr::null());
    }
    v.srq_type = ty;
    v.xrcd = xrcd as *mut verbs_xrcd;
    v.cq = cq;
    v.srq_num = num;
    slot.commit(num, s as *const u8);
    s as *mut ibv_srq
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn create_srq(pd: *mut ibv_pd, attr: *mut ibv_srq_init_attr) -> *mut ibv_srq {
    // SAFETY: `attr` is a valid, writable init attribute and `pd` one of
    // our PDs, whose context is ours (the verb's contract).
    unsafe {
        let a = &mut *attr;
        new_srq(
            (*pd).context,
            pd,
            &mut a.attr,
            a.srq_context,
            IBV_SRQT_BASIC,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn create_srq_ex(context: *mut ibv_context, attr: *mut ibv_srq_init_attr_ex) -> *mut ibv_srq {
    // SAFETY: `attr` is a valid, writable init attribute (the contract).
    let a = unsafe { &mut *attr };
    let ty = if a.comp_mask & IBV_SRQ_INIT_ATTR_TYPE != 0 {
        a.srq_type
    } else {
        IBV_SRQT_BASIC
    };
    if a.comp_mask & IBV_SRQ_INIT_ATTR_PD == 0 || a.pd.is_null() {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    match ty {
        // SAFETY: `context` is ours and `a.pd` (checked non-null) one of our
        // PDs (the verb's contract).
        IBV_SRQT_BASIC => unsafe {
            new_srq(
                context,
                a.pd,
                &mut a.attr,
                a.srq_context,
                ty,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        },
        IBV_SRQT_XRC => {
            if a.comp_mask & IBV_SRQ_INIT_ATTR_XRCD == 0
                || a.comp_mask & IBV_SRQ_INIT_ATTR_CQ == 0
                || a.xrcd.is_null()
                || a.cq.is_null()
            {
                set_errno(libc::EINVAL);
                return std::ptr::null_mut();
            }
            // SAFETY: `context` is ours; `a.pd`, `a.xrcd` and `a.cq` (checked
            // non-null) are a PD, an XRCD and a CQ of ours (the contract).
            unsafe { new_srq(context, a.pd, &mut a.attr, a.srq_context, ty, a.xrcd, a.cq) }
        }
        // tag matching: a device without the capability; any other type is
        // no SRQ type at all (the kernel: EINVAL)
        IBV_SRQT_TM => {
            set_errno(libc::EOPNOTSUPP);
            std::ptr::null_mut()
        }
        _ => {
            set_errno(libc::EINVAL);
            std::ptr::null_mut()
        }
    }
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn modify_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr, mask: c_int) -> c_int {
    // SAFETY: `srq` is one of our SRQs and `attr` a valid attribute (the
    // verb's contract); the attribute is copied.
    if let Err(e) = unsafe { valid_srq((*srq).context, srq) } {
        return e;
    }
    // SAFETY: as above; `srq` is a live SRQ of ours (checked).
    let (s, a) = unsafe { (srq_of(srq), *attr) };
    let mut st = lock(&s.st);
    let mask = mask as u32;
    // Every check before any change: a refused call changes nothing (rxe's
    // rxe_srq_chk_attr, then the resize and the limit).
    let max_wr = if mask & IBV_SRQ_MAX_WR != 0 {
        a.max_wr
    } else {
        st.max_wr
    };
    let limit = if mask & IBV_SRQ_LIMIT != 0 {
        a.srq_limit
    } else {
        st.limit
    };
    if mask & IBV_SRQ_MAX_WR != 0
        && (a.max_wr == 0 || a.max_wr > MAX_WR || (a.max_wr as usize) < st.wqes.len() || a.max_wr < limit)
    {
        return libc::EINVAL;
    }
    if mask & IBV_SRQ_LIMIT != 0 && a.srq_limit > max_wr {
        return libc::EINVAL;
    }
    st.max_wr = max_wr;
    st.limit = limit;
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn query_srq(srq: *mut ibv_srq, attr: *mut ibv_srq_attr) -> c_int {
    // SAFETY: `srq` is one of our SRQs and `attr` room for an attribute (the
    // verb's contract), not otherwise referenced during the call.
    if let Err(e) = unsafe { valid_srq((*srq).context, srq) } {
        return e;
    }
    // SAFETY: as above; `srq` is a live SRQ of ours (checked).
    let (s, a) = unsafe { (srq_of(srq), &mut *attr) };
    let st = lock(&s.st);
    a.max_wr = st.max_wr;
    a.max_sge = st.max_sge;
    a.srq_limit = st.limit;
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn destroy_srq(srq: *mut ibv_srq) -> c_int {
    if !crate::registry::live(srq as *const u8) {
        return libc::ENOENT; // destroyed already (its memory freed): not read
    }
    // SAFETY: `srq` is the start of a `Box<SwSrq>` made by new_srq,
    // destroyed once (the verb's contract), in one of our contexts; its
    // `srq` is the `Arc::into_raw` the box owns.
    let (c, s, pd, xrcd) = unsafe {
        let c = ctx_of((*srq).context);
        if let Ok(()) = valid_srq((*srq).context, srq) {
            // a QP made with it still takes its receives (the kernel: EBUSY)
            if srq_of(srq).users.load(Ordering::SeqCst) != 0 {
                return libc::EBUSY;
            }
        }
        if let Err(e) = c.reg.remove(Kind::Srq, (*srq).handle, srq as *const u8) {
            return e;
        }
        let pd = (*srq).pd;
        let b = Box::from_raw(srq as *mut SwSrq);
        let xrcd = b.vsrq.xrcd as *mut ibv_xrcd;
        let s = Arc::from_raw(b.srq);
        crate::registry::retire(b);
        (c, s, pd, xrcd)
    };
    c.remove_srq(s.num);
    if let Some(cq) = &s.cq {
        cq.users.fetch_sub(1, Ordering::SeqCst);
    }
    // SAFETY: the SRQ's PD and XRC domain (null for none) are live: neither
    // could go while this SRQ held a use of it.
    unsafe {
        pd_use(pd, false);
        xrcd_use(xrcd, false);
    }
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn get_srq_num(srq: *mut ibv_srq, num: *mut u32) -> c_int {
    // SAFETY: `srq` is one of our SRQs and `num` room for the number.
    unsafe {
        *num = srq_of(srq).num;
        0
    }
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn post_srq_recv(srq: *mut ibv_srq, mut wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    // SAFETY: `srq` is one of our SRQs, in one of our contexts.
    let s = unsafe { srq_of(srq) };
    let fail = |wr: *mut ibv_recv_wr, e: c_int| {
        // SAFETY: `bad` is writable (the verb's contract).
        unsafe { *bad = wr };
        e
    };
    {
        let mut st = lock(&s.st);
        while !wr.is_null() {
            // SAFETY: `wr` is a non-null element of the application's list of
            // valid receive requests (the verb's contract).
            let w = unsafe { &*wr };
            if w.num_sge < 0 || w.num_sge as u32 > st.max_sge {
                return fail(wr, libc::EINVAL);
            }
            if st.wqes.len() >= st.max_wr as usize {
                return fail(wr, libc::ENOMEM);
            }
            let sges = if w.num_sge > 0 {
                // SAFETY: a valid request has `num_sge` (> 0) SGEs at `sg_list`.
                unsafe { std::slice::from_raw_parts(w.sg_list, w.num_sge as usize) }.to_vec()
            } else {
                Vec::new()
            };
            st.wqes.push_back(RWqe { wr_id: w.wr_id, sges });
            wr = w.next;
        }
    }
    0
}

// ---------------------------------------------------------------------------
// QP
// ---------------------------------------------------------------------------

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn create_qp(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp {
    // SAFETY: `ibv_qp_init_attr_ex` is integers and pointers: all-zero is
    // valid (null pointers, no optional fields).
    let mut ex: ibv_qp_init_attr_ex = unsafe { std::mem::zeroed() };
    // SAFETY: `attr` is a valid, writable init attribute (the verb's
    // contract), not otherwise referenced during the call.
    let a = unsafe { &mut *attr };
    ex.qp_context = a.qp_context;
    ex.send_cq = a.send_cq;
    ex.recv_cq = a.recv_cq;
    ex.srq = a.srq;
    ex.cap = a.cap;
    ex.qp_type = a.qp_type;
    ex.sq_sig_all = a.sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    // SAFETY: `pd` is one of our PDs, so its context is one of ours; `ex`
    // is a complete init attribute with the PD in it.
    let qp = unsafe { create_qp_ex((*pd).context, &mut ex) };
    if !qp.is_null() {
        a.cap = ex.cap;
    }
    qp
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn create_qp_ex(context: *mut ibv_context, attr: *mut ibv_qp_init_attr_ex) -> *mut ibv_qp {
    // SAFETY: `context` is one of our contexts (the contract).
    let c = unsafe { ctx_of(context) };
    // SAFETY: `attr` is a valid, writable init attribute (the verb's
    // contract), not otherwise referenced during the call.
    let a = unsafe { &mut *attr };
    let (pd, xrcd) = match check_qp_init_attr(c, a) {
        Ok(objects) => objects,
        Err(e) => {
            set_errno(e);
            return std::ptr::null_mut();
        }
    };
    // SAFETY: the PD, CQs and SRQ are null or read as objects of our
    // contexts (the verb's contract); the table says whether they are
    // `context`'s live ones.
    let objs = unsafe {
        (if pd.is_null() { Ok(()) } else { valid_pd(context, pd) })
            .and_then(|()| valid_cq(context, a.send_cq))
            .and_then(|()| valid_cq(context, a.recv_cq))
            .and_then(|()| valid_srq(context, a.srq))
    };
    if let Err(e) = objs {
        set_errno(e);
        return std::ptr::null_mut();
    }
    if let Err(e) = grant_qp_caps(a) {
        set_errno(e);
        return std::ptr::null_mut();
    }
    // SAFETY: `context` is ours; `pd`, `xrcd` and the attribute's CQs and
    // SRQ are null or objects of ours (the verb's contract), and the
    // attribute is checked.
    unsafe { new_qp(c, context, a, pd, xrcd) }
}

/// The checks of a QP's init attribute (its capabilities aside): a QP type
/// of this device, the objects it needs, no feature the device lacks.  Ok: the
/// PD and the XRC domain it gives (null: none).  (Also the agent's
/// `create_qp_ex`, agentops.rs.)
pub(crate) fn check_qp_init_attr(c: &Ctx, a: &ibv_qp_init_attr_ex) -> Result<(*mut ibv_pd, *mut ibv_xrcd), c_int> {
    let qpt = a.qp_type;
    if !matches!(
        qpt,
        IBV_QPT_RC | IBV_QPT_UC | IBV_QPT_UD | IBV_QPT_XRC_SEND | IBV_QPT_XRC_RECV
    ) {
        // raw packet and driver QPs exist but not on this device; any other
        // number is no QP type (the kernel: EINVAL)
        let known = matches!(qpt, IBV_QPT_RAW_PACKET | IBV_QPT_DRIVER);
        return Err(if known { libc::EOPNOTSUPP } else { libc::EINVAL });
    }
    if matches!(qpt, IBV_QPT_XRC_SEND | IBV_QPT_XRC_RECV) && c.wire_rt().is_some() {
        // (XRC on the wire needs XRCETH: not implemented, as on rxe.)
        return Err(libc::EOPNOTSUPP);
    }
    let pd = if a.comp_mask & IBV_QP_INIT_ATTR_PD != 0 {
        a.pd
    } else {
        std::ptr::null_mut()
    };
    let xrcd = if a.comp_mask & IBV_QP_INIT_ATTR_XRCD != 0 {
        a.xrcd
    } else {
        std::ptr::null_mut()
    };
    if (qpt == IBV_QPT_XRC_RECV && xrcd.is_null()) || (qpt != IBV_QPT_XRC_RECV && pd.is_null()) {
        return Err(libc::EINVAL);
    }
    if a.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS != 0 && a.create_flags != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    if a.comp_mask
        & !(IBV_QP_INIT_ATTR_PD
            | IBV_QP_INIT_ATTR_XRCD
            | IBV_QP_INIT_ATTR_CREATE_FLAGS
            | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
        != 0
    {
        // RSS, WQ indirection tables, max_tso_header, source QPN ...
        return Err(libc::EOPNOTSUPP);
    }
    if a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 && a.send_ops_flags & !send_ops_supported(qpt) != 0 {
        // TSO (raw packet QPs only), or an operation the QP type lacks.
        return Err(libc::EOPNOTSUPP);
    }
    Ok((pd, xrcd))
}

/// The QP's capabilities (`a.cap`): within the device's limits, with the
/// CQs they need, and then as the QP gets them (what the application reads
/// back in `a.cap`).
fn grant_qp_caps(a: &mut ibv_qp_init_attr_ex) -> Result<(), c_int> {
    let qpt = a.qp_type;
    let cap = &mut a.cap;
    let sends = qpt != IBV_QPT_XRC_RECV;
    let recvs = matches!(qpt, IBV_QPT_RC | IBV_QPT_UC | IBV_QPT_UD) && a.srq.is_null();
    if cap.max_send_wr > MAX_WR
        || cap.max_recv_wr > MAX_WR
        || cap.max_send_sge > MAX_SGE
        || cap.max_recv_sge > MAX_SGE
        || cap.max_inline_data > MAX_INLINE
    {
        return Err(libc::EINVAL);
    }
    if (sends && a.send_cq.is_null()) || (recvs && a.recv_cq.is_null()) {
        return Err(libc::EINVAL);
    }
    if sends {
        cap.max_send_sge = cap.max_send_sge.max(1);
        cap.max_inline_data = cap.max_inline_data.max(256);
    } else {
        cap.max_send_wr = 0;
        cap.max_send_sge = 0;
        cap.max_inline_data = 0;
    }
    if recvs {
        cap.max_recv_sge = cap.max_recv_sge.max(1);
    } else {
        cap.max_recv_wr = 0;
        cap.max_recv_sge = 0;
    }
    Ok(())
}

/// Makes the QP of the checked attribute `a`: its `SwQp` and its `Qp`.
///
/// # Safety
/// `context` is one of our contexts (`c` its `Ctx`); `pd`, `xrcd` and the
/// CQs and SRQ of `a` are null or live objects of ours.
unsafe fn new_qp(
    c: &Ctx,
    context: *mut ibv_context,
    a: &ibv_qp_init_attr_ex,
    pd: *mut ibv_pd,
    xrcd: *mut ibv_xrcd,
) -> *mut ibv_qp {
    let qpt = a.qp_type;
    let cap = a.cap;
    let Some(slot) = reserve(&c.reg, Kind::Qp) else {
        return std::ptr::null_mut();
    };
    let qpn = match c.alloc_id() {
        Ok(n) => n,
        Err(e) => {
            set_errno(e);
            return std::ptr::null_mut();
        }
    };
    let s = Box::into_raw(Box::new(SwQp {
        // SAFETY: `verbs_qp` is integers, pointers and pthread objects that
        // are initialised below: all-zero is valid.
        vqp: unsafe { std::mem::zeroed() },
        qp: std::ptr::null(),
        ctx: c,
        wrs: std::ptr::null_mut(),
    }));
    // SAFETY: `xrcd`, `pd`, the CQs and the SRQ are null (checked) or
    // objects of ours (the verb's contract): an `SwXrcd`, an `SwPd`, `SwCq`s
    // and an `SwSrq`, live during the call.
    let (xid, pdid, send_cq, recv_cq, srq) = unsafe {
        (
            if xrcd.is_null() { 0 } else { (*(xrcd as *mut SwXrcd)).id },
            if pd.is_null() { 0 } else { pd_id(pd) },
            cq_arc(a.send_cq),
            cq_arc(a.recv_cq),
            srq_arc(a.srq),
        )
    };
    for cq in [&send_cq, &recv_cq].into_iter().flatten() {
        cq.users.fetch_add(1, Ordering::SeqCst);
    }
    if let Some(srq) = &srq {
        srq.users.fetch_add(1, Ordering::SeqCst);
    }
    // SAFETY: `pd` is null or our live PD, `xrcd` null or our live XRC
    // domain; the QP holds a use of each until destroyed.
    unsafe {
        pd_use(pd, true);
        xrcd_use(xrcd, true);
    }
    let qp = Arc::new(Qp {
        qpn,
        qpt,
        ibqp: s as usize,
        pd: pdid,
        xrcd: xid,
        send_cq,
        recv_cq,
        srq,
        sq_sig_all: a.sq_sig_all != 0,
        cap,
        st: Mutex::new(Qp::new_st()),
        deferred: Mutex::new(Default::default()),
    });
    c.add_qp(qp.clone());
    // SAFETY: `s` is the fresh `SwQp` box made above, not yet visible to
    // the application; `qp` is its QP.
    unsafe {
        (*s).qp = Arc::into_raw(qp);
        init_verbs_qp(s, context, a, pd, xrcd, qpn);
    }
    slot.commit(qpn, s as *const u8);
    s as *mut ibv_qp
}

/// Fills in the `verbs_qp` of a new QP, which the application gets.
///
/// # Safety
/// `s` is a fresh `SwQp` box, not yet visible to the application, whose
/// `qp` is set; `xrcd` is null or an XRC domain of ours.
unsafe fn init_verbs_qp(
    s: *mut SwQp,
    context: *mut ibv_context,
    a: &ibv_qp_init_attr_ex,
    pd: *mut ibv_pd,
    xrcd: *mut ibv_xrcd,
    qpn: u32,
) {
    let qpt = a.qp_type;
    // SAFETY: `s` is the fresh `SwQp` box (not yet visible to the
    // application: the contract); `u.qp` is the `ibv_qp` view of its
    // `verbs_qp`, and the pthread objects are initialised in place where the
    // library expects them; `fill_qp_ex` gets this live `SwQp`.
    unsafe {
        let v = &mut (*s).vqp;
        let q = &mut *(std::ptr::addr_of_mut!(v.u.qp) as *mut ibv_qp);
        q.context = context;
        q.qp_context = a.qp_context;
        q.pd = pd;
        q.send_cq = a.send_cq;
        q.recv_cq = a.recv_cq;
        q.srq = a.srq;
        q.handle = qpn;
        q.qp_num = qpn;
        q.state = IBV_QPS_RESET;
        q.qp_type = qpt;
        libc::pthread_mutex_init(&mut q.mutex, std::ptr::null());
        libc::pthread_cond_init(&mut q.cond, std::ptr::null());
        if !xrcd.is_null() {
            v.comp_mask |= VERBS_QP_XRCD;
            v.xrcd = xrcd as *mut verbs_xrcd;
        }
        if a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS != 0 {
            v.comp_mask |= VERBS_QP_EX;
            fill_qp_ex(s, a.send_ops_flags);
        }
    }
}

/// The `ibv_wr_*` builders a QP of type `qpt` offers.
fn send_ops_supported(qpt: u32) -> u64 {
    let send = (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM) as u64;
    let write = (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) as u64;
    let rest = (IBV_QP_EX_WITH_RDMA_READ
        | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP
        | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD
        | IBV_QP_EX_WITH_ATOMIC_WRITE
        | IBV_QP_EX_WITH_SEND_WITH_INV) as u64;
    let mw = (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV) as u64;
    match qpt {
        IBV_QPT_UD => send,
        IBV_QPT_UC => send | write | mw,
        IBV_QPT_RC | IBV_QPT_XRC_SEND => send | write | rest | mw,
        _ => 0,
    }
}

/// A QP back in RESET (or destroyed) leaves no completions behind.
fn clean_cqs(qp: &Qp) {
    if let Some(cq) = &qp.send_cq {
        cq.clean(qp.qpn);
    }
    if let Some(cq) = &qp.recv_cq {
        cq.clean(qp.qpn);
    }
}

fn valid_transition(cur: u32, new: u32) -> bool {
    matches!(
        (cur, new),
        (_, IBV_QPS_RESET)
            | (_, IBV_QPS_ERR)
            | (IBV_QPS_RESET, IBV_QPS_INIT)
            | (IBV_QPS_INIT, IBV_QPS_INIT)
            | (IBV_QPS_INIT, IBV_QPS_RTR)
            | (IBV_QPS_RTR, IBV_QPS_RTS)
            | (IBV_QPS_RTS, IBV_QPS_RTS)
            | (IBV_QPS_RTS, IBV_QPS_SQD)
            | (IBV_QPS_SQD, IBV_QPS_SQD)
            | (IBV_QPS_SQD, IBV_QPS_RTS)
            | (IBV_QPS_SQE, IBV_QPS_RTS)
    )
}

/// The attributes a transition of a QP of type `qpt` must set (the IB
/// specification's QP state table, as the kernel's `ib_modify_qp_is_ok`
/// enforces it for every kernel provider: EINVAL without them).
fn required_attrs(qpt: u32, cur: u32, new: u32) -> u32 {
    let rc_like = matches!(qpt, IBV_QPT_RC | IBV_QPT_XRC_RECV);
    match (cur, new) {
        (IBV_QPS_RESET, IBV_QPS_INIT) => {
            let base = IBV_QP_PKEY_INDEX | IBV_QP_PORT;
            if qpt == IBV_QPT_UD {
                base | IBV_QP_QKEY
            } else {
                base | IBV_QP_ACCESS_FLAGS
            }
        }
        (IBV_QPS_INIT, IBV_QPS_RTR) if qpt != IBV_QPT_UD => {
            let base = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
            if rc_like {
                base | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
            } else {
                base
            }
        }
        (IBV_QPS_RTR, IBV_QPS_RTS) => match qpt {
            IBV_QPT_RC | IBV_QPT_XRC_SEND => {
                IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC
            }
            IBV_QPT_XRC_RECV => IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
            _ => IBV_QP_SQ_PSN,
        },
        _ => 0,
    }
}

/// The attributes a transition of a QP of type `qpt` may set besides the
/// required ones (the same state table): others are EINVAL.
fn optional_attrs(qpt: u32, cur: u32, new: u32) -> u32 {
    let ud = qpt == IBV_QPT_UD;
    let uc_like = matches!(qpt, IBV_QPT_UC | IBV_QPT_XRC_SEND);
    let path = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
    // RTR->RTS, RTS->RTS and SQD->RTS take the same optional attributes.
    let to_rts = if ud {
        IBV_QP_CUR_STATE | IBV_QP_QKEY
    } else if uc_like {
        path
    } else {
        path | IBV_QP_MIN_RNR_TIMER
    };
    match (cur, new) {
        (IBV_QPS_INIT, IBV_QPS_INIT) if ud => IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
        (IBV_QPS_INIT, IBV_QPS_INIT) => IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
        (IBV_QPS_INIT, IBV_QPS_RTR) if ud => IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
        (IBV_QPS_INIT, IBV_QPS_RTR) => IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
        (IBV_QPS_RTR, IBV_QPS_RTS) | (IBV_QPS_RTS, IBV_QPS_RTS) | (IBV_QPS_SQD, IBV_QPS_RTS) => to_rts,
        (IBV_QPS_RTS, IBV_QPS_SQD) => IBV_QP_EN_SQD_ASYNC_NOTIFY,
        (IBV_QPS_SQD, IBV_QPS_SQD) => {
            let common = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE;
            let rc_paths = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT;
            match qpt {
                IBV_QPT_UD => IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
                IBV_QPT_UC => common | IBV_QP_AV,
                IBV_QPT_RC => {
                    common
                        | rc_paths
                        | IBV_QP_RETRY_CNT
                        | IBV_QP_RNR_RETRY
                        | IBV_QP_MAX_QP_RD_ATOMIC
                        | IBV_QP_MAX_DEST_RD_ATOMIC
                        | IBV_QP_MIN_RNR_TIMER
                }
                IBV_QPT_XRC_SEND => common | rc_paths | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
                _ => common | rc_paths | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
            }
        }
        (IBV_QPS_SQE, IBV_QPS_RTS) if ud => IBV_QP_CUR_STATE | IBV_QP_QKEY,
        (IBV_QPS_SQE, IBV_QPS_RTS) if qpt == IBV_QPT_UC => IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
        _ => 0,
    }
}

/// Every `ibv_qp_attr_mask` bit up to `IBV_QP_RATE_LIMIT`.
const QP_ATTR_KNOWN: u32 = (IBV_QP_RATE_LIMIT << 1) - 1;

/// `SWRDMA_LID_ROUTING=1`: address vectors without a GRH are accepted, as
/// an InfiniBand port accepts them, for programs that address peers by LID
/// only (qperf without `-cm1`).  Off by default: a RoCE port refuses them.
fn lid_routing() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SWRDMA_LID_ROUTING").is_some_and(|v| v == "1"))
}

/// An address vector as the kernel checks it for a RoCE port
/// (rdma_check_ah_attr, rdma_get_gid_attr): port 1, a GRH (RoCE routes by
/// GID), a source GID of the table, a destination GID that is not zero.
fn check_av(a: &ibv_ah_attr, gids: usize) -> Result<(), c_int> {
    if a.port_num != 1 {
        return Err(libc::EINVAL);
    }
    if a.is_global == 0 {
        // (peers are found by QPN: a LID-only vector reaches them too)
        return if lid_routing() { Ok(()) } else { Err(libc::EINVAL) };
    }
    if a.grh.sgid_index as usize >= gids {
        return Err(libc::EINVAL);
    }
    // SAFETY: every bit pattern of the 16-byte union is a valid `raw`.
    if unsafe { a.grh.dgid.raw } == [0u8; 16] {
        return Err(libc::EINVAL);
    }
    Ok(())
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn modify_qp(ibqp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int {
    // SAFETY: `ibqp` reads as an `ibv_qp` of one of our contexts (the contract).
    if let Err(e) = unsafe { valid((*ibqp).context, Kind::Qp, (*ibqp).handle, ibqp as *const u8) } {
        return e;
    }
    // SAFETY: `ibqp` is one of our QPs and `attr` a valid attribute (the
    // verb's contract).
    let (c, qp, a) = unsafe {
        let (c, qp) = qp_of(ibqp);
        (c, qp, &*attr)
    };
    let mask = mask as u32;
    // as upstream's ibv_cmd_modify_qp: attributes past IBV_QP_RATE_LIMIT
    if mask & !QP_ATTR_KNOWN != 0 {
        return libc::EOPNOTSUPP;
    }
    // (Requests posted before execute before the QP changes.)
    crate::send::execute_deferred_qp(c, &qp);
    if mask & IBV_QP_STATE != 0 && a.qp_state == IBV_QPS_ERR {
        // The answers that came in first: what the peer took is then not
        // flushed (`Objects::to_err`), as a NIC's ACKs would have completed it.
        c.progress();
    }
    let connect_to;
    {
        let mut st = lock(&qp.st);
        let cur = st.state;
        let new = if mask & IBV_QP_STATE != 0 { a.qp_state } else { cur };
        if new > IBV_QPS_ERR || !valid_transition(cur, new) {
            return libc::EINVAL;
        }
        if mask & IBV_QP_CUR_STATE != 0 && a.cur_qp_state != cur && a.cur_qp_state != IBV_QPS_UNKNOWN {
            return libc::EINVAL;
        }
        if mask & IBV_QP_PORT != 0 && a.port_num != 1 {
            return libc::EINVAL;
        }
        if mask & IBV_QP_AV != 0 {
            if let Err(e) = check_av(&a.ah_attr, c.gid_count()) {
                return e;
            }
        }
        if mask & IBV_QP_PATH_MTU != 0 && !(IBV_MTU_256..=IBV_MTU_4096).contains(&a.path_mtu) {
            return libc::EINVAL;
        }
        // As rxe (rxe_qp_chk_attr): the device's max_qp_rd_atom, and the
        // 5 bits of the local ACK timeout.
        if (mask & IBV_QP_MAX_QP_RD_ATOMIC != 0 && a.max_rd_atomic as i32 > MAX_QP_RD_ATOM)
            || (mask & IBV_QP_TIMEOUT != 0 && a.timeout > 31)
        {
            return libc::EINVAL;
        }
        if let Some(w) = c.wire_rt() {
            // A wire QP's path: a RoCE v2 GID of ours and one of the same
            // family to send to.
            if mask & IBV_QP_AV != 0
                && matches!(qp.qpt, IBV_QPT_RC | IBV_QPT_UC)
                && wire::engine::ud_path::<Objects>(w, c, &a.ah_attr).is_none()
            {
                return libc::EINVAL;
            }
        }
        let conn = matches!(qp.qpt, IBV_QPT_RC | IBV_QPT_UC | IBV_QPT_XRC_SEND | IBV_QPT_XRC_RECV);
        let need = required_attrs(qp.qpt, cur, new);
        let may = need | optional_attrs(qp.qpt, cur, new) | IBV_QP_STATE;
        if mask & IBV_QP_STATE != 0 && (mask & need != need || mask & !may != 0) {
            return libc::EINVAL;
        }
        let t = &mut st.attr;
        macro_rules! take {
            ($bit:expr, $($f:ident),*) => { if mask & $bit != 0 { $( t.$f = a.$f; )* } };
        }
        take!(IBV_QP_ACCESS_FLAGS, qp_access_flags);
        take!(IBV_QP_PKEY_INDEX, pkey_index);
        take!(IBV_QP_PORT, port_num);
        take!(IBV_QP_QKEY, qkey);
        take!(IBV_QP_AV, ah_attr);
        take!(IBV_QP_PATH_MTU, path_mtu);
        take!(IBV_QP_TIMEOUT, timeout);
        take!(IBV_QP_RETRY_CNT, retry_cnt);
        take!(IBV_QP_RNR_RETRY, rnr_retry);
        take!(IBV_QP_RQ_PSN, rq_psn);
        take!(IBV_QP_MAX_QP_RD_ATOMIC, max_rd_atomic);
        take!(IBV_QP_ALT_PATH, alt_ah_attr, alt_pkey_index, alt_port_num, alt_timeout);
        take!(IBV_QP_MIN_RNR_TIMER, min_rnr_timer);
        take!(IBV_QP_SQ_PSN, sq_psn);
        take!(IBV_QP_MAX_DEST_RD_ATOMIC, max_dest_rd_atomic);
        take!(IBV_QP_PATH_MIG_STATE, path_mig_state);
        take!(IBV_QP_DEST_QPN, dest_qp_num);
        take!(IBV_QP_EN_SQD_ASYNC_NOTIFY, en_sqd_async_notify);
        take!(IBV_QP_RATE_LIMIT, rate_limit);
        if new == IBV_QPS_ERR && cur != IBV_QPS_ERR {
            c.to_err(&qp, &mut st);
        }
        if new == IBV_QPS_RESET {
            st.sq.clear();
            st.rq.clear();
            st.cur = None;
            st.nakd = None;
            st.resend = None;
            st.probe = None;
            st.probing = false;
            st.lost_at = None;
            st.link = None;
            st.next_seq = 1;
            clean_cqs(&qp);
        }
        if let Some(w) = c.wire_rt() {
            w.modified::<Objects>(c, &qp, &mut st, new, mask);
        }
        st.state = new;
        c.publish_qp(&qp, &st);
        // SAFETY: `ibqp` is our live QP; the library reads `state` only
        // under the verbs' own serialisation of modify_qp on one QP.
        unsafe { (*ibqp).state = new };
        connect_to =
            if conn && c.wire_rt().is_none() && qp.qpt != IBV_QPT_XRC_RECV && new == IBV_QPS_RTR && st.link.is_none() {
                Some(st.attr.dest_qp_num)
            } else {
                None
            };
    }
    if let Some(d) = connect_to {
        // Best effort: connect now so the first send does not pay for it.
        if let Some(l) = c.link_to(d) {
            let mut st = lock(&qp.st);
            if st.link.is_none() {
                st.link = Some(l);
            }
        }
    }
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn query_qp(
    ibqp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    mask: c_int,
    init: *mut ibv_qp_init_attr,
) -> c_int {
    // as upstream's ibv_cmd_query_qp: attributes past IBV_QP_RATE_LIMIT
    if mask as u32 & !QP_ATTR_KNOWN != 0 {
        return libc::EOPNOTSUPP;
    }
    // SAFETY: `ibqp` reads as an `ibv_qp` of one of our contexts (the contract).
    if let Err(e) = unsafe { valid((*ibqp).context, Kind::Qp, (*ibqp).handle, ibqp as *const u8) } {
        return e;
    }
    // SAFETY: `ibqp` is one of our QPs; `attr` is room for an attribute
    // (the verb's contract), not otherwise referenced during the call.
    let (qp, at) = unsafe { (qp_of(ibqp).1, &mut *attr) };
    let st = lock(&qp.st);
    *at = st.attr;
    at.qp_state = st.state;
    at.cur_qp_state = st.state;
    at.cap = qp.cap;
    at.port_num = if st.attr.port_num == 0 { 1 } else { st.attr.port_num };
    at.sq_draining = 0;
    if !init.is_null() {
        // SAFETY: `init` is non-null, so room for an init attribute (the
        // verb's contract); `ibqp` is our live QP, read only.
        let (i, q) = unsafe { (&mut *init, &*ibqp) };
        i.qp_context = q.qp_context;
        i.send_cq = q.send_cq;
        i.recv_cq = q.recv_cq;
        i.srq = q.srq;
        i.cap = qp.cap;
        i.qp_type = qp.qpt;
        i.sq_sig_all = qp.sq_sig_all as c_int;
    }
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn destroy_qp(ibqp: *mut ibv_qp) -> c_int {
    if !crate::registry::live(ibqp as *const u8) {
        return libc::ENOENT; // destroyed already (its memory freed): not read
    }
    // SAFETY: `ibqp` reads as an `ibv_qp` of one of our contexts (the
    // contract); the table says whether it is a live QP of that context.
    if let Err(e) = unsafe {
        ctx_of((*ibqp).context)
            .reg
            .remove(Kind::Qp, (*ibqp).handle, ibqp as *const u8)
    } {
        return e;
    }
    // SAFETY: `ibqp` is the start of a `Box<SwQp>` made by create_qp_ex,
    // destroyed once (the verb's contract); its `qp` is the `Arc::into_raw`
    // the box owns and `ctx` its context, alive until free_context.
    let (s, c, qp) = unsafe {
        let s = Box::from_raw(ibqp as *mut SwQp);
        let c = &*s.ctx;
        let qp = Arc::from_raw(s.qp);
        (s, c, qp)
    };
    crate::send::execute_deferred_qp(c, &qp);
    if let Some(w) = c.wire_rt() {
        // What came for it is handled, and its last ACK goes out once more
        // (the peer must not retransmit into a QP that is gone).
        w.flush::<Objects>(c);
        w.farewell(&*qp, &lock(&qp.st));
    }
    c.remove_qp(qp.qpn);
    {
        let mut st = lock(&qp.st);
        st.link = None;
    }
    // (This thread lets go of it at once if it was the last one a message
    // went to; another thread at its next message: `Objects::with_qp`.)
    Objects::forget_last_qp();
    clean_cqs(&qp);
    for cq in [&qp.send_cq, &qp.recv_cq].into_iter().flatten() {
        cq.users.fetch_sub(1, Ordering::SeqCst);
    }
    if let Some(srq) = &qp.srq {
        srq.users.fetch_sub(1, Ordering::SeqCst);
    }
    // SAFETY: the QP's PD (null for an XRC target QP) and XRC domain (null
    // for none) are live: neither could go while this QP held a use of it.
    unsafe {
        pd_use(s.vqp.u.qp.pd, false);
        xrcd_use(
            if s.vqp.comp_mask & VERBS_QP_XRCD != 0 {
                s.vqp.xrcd as *mut ibv_xrcd
            } else {
                std::ptr::null_mut()
            },
            false,
        );
    }
    if !s.wrs.is_null() {
        // SAFETY: `wrs` is the builders' `Box::into_raw` (qpex::list), owned
        // by this QP and freed only here.
        drop(unsafe { Box::from_raw(s.wrs) });
    }
    crate::registry::retire(s);
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
unsafe extern "C" fn post_recv(ibqp: *mut ibv_qp, mut wr: *mut ibv_recv_wr, bad: *mut *mut ibv_recv_wr) -> c_int {
    // SAFETY: `ibqp` is one of our QPs (the contract).
    let (_, qp) = unsafe { qp_ref(ibqp) };
    // SAFETY (each `*bad = wr` below): `bad` is writable (the verb's contract).
    let fail = |wr: *mut ibv_recv_wr, e: c_int| {
        // SAFETY: see above.
        unsafe { *bad = wr };
        e
    };
    {
        let mut st = lock(&qp.st);
        while !wr.is_null() {
            // SAFETY: `wr` is a non-null element of the application's list of
            // valid receive requests (the verb's contract).
            let w = unsafe { &*wr };
            if qp.srq.is_some() || st.state == IBV_QPS_RESET || qp.qpt == IBV_QPT_XRC_SEND || qp.qpt == IBV_QPT_XRC_RECV
            {
                return fail(wr, libc::EINVAL);
            }
            if w.num_sge < 0 || w.num_sge as u32 > qp.cap.max_recv_sge {
                return fail(wr, libc::EINVAL);
            }
            if st.rq.len() >= qp.cap.max_recv_wr as usize {
                return fail(wr, libc::ENOMEM);
            }
            let sges = if w.num_sge > 0 {
                // SAFETY: a valid request has `num_sge` (> 0) SGEs at `sg_list`.
                let posted = unsafe { std::slice::from_raw_parts(w.sg_list, w.num_sge as usize) };
                let mut v = st.spare.pop().unwrap_or_default();
                v.extend_from_slice(posted);
                v
            } else {
                Vec::new()
            };
            if st.state == IBV_QPS_ERR {
                let mut wc = wc_zero();
                wc.wr_id = w.wr_id;
                wc.status = IBV_WC_WR_FLUSH_ERR;
                wc.opcode = IBV_WC_RECV;
                wc.qp_num = qp.qpn;
                if let Some(cq) = &qp.recv_cq {
                    cq.push(wc, false);
                }
            } else {
                st.rq.push_back(RWqe { wr_id: w.wr_id, sges });
            }
            wr = w.next;
        }
    }
    0
}

/// # Safety
/// Called by libibverbs through `OPS`, only with objects this provider
/// created and the application has not destroyed, and with argument
/// pointers valid as the verb's contract says.
pub unsafe extern "C" fn post_send(ibqp: *mut ibv_qp, wr: *mut ibv_send_wr, bad: *mut *mut ibv_send_wr) -> c_int {
    // SAFETY: `ibqp` is one of our QPs (the contract); `qp` is used only
    // during the call.
    let (c, qp) = unsafe { qp_ref(ibqp) };
    // SAFETY: `wr` is null or the application's list of valid send
    // requests, which is `post_list`'s contract.
    match unsafe { post_list(c, &qp, wr) } {
        Ok(()) => 0,
        Err((w, e)) => {
            // SAFETY: `bad` is writable (the verb's contract).
            unsafe { *bad = w };
            e
        }
    }
}

/// `ibv_attach_mcast`, as the kernel's uverbs and `ib_attach_mcast` answer
/// for rxe: the same group and LID again is no change; a GID that is not
/// multicast, or a QP that is not UD, is EINVAL; the LID is not looked at
/// otherwise (RoCE).  On a wire device the context joins the IP group on
/// the interface (`wired/src/wire/mcast.rs`).
///
/// # Safety
/// As every verb (see `post_send`); `gid` is readable (the library checked
/// it is not null).
unsafe extern "C" fn attach_mcast(ibqp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    // SAFETY: as query_qp.
    unsafe { mcast(ibqp, gid, lid, true) }
}

/// `ibv_detach_mcast`: EINVAL for an attachment the QP does not have.
///
/// # Safety
/// As `attach_mcast`.
unsafe extern "C" fn detach_mcast(ibqp: *mut ibv_qp, gid: *const ibv_gid, lid: u16) -> c_int {
    // SAFETY: as query_qp.
    unsafe { mcast(ibqp, gid, lid, false) }
}

/// # Safety
/// As `attach_mcast`.
unsafe fn mcast(ibqp: *mut ibv_qp, gid: *const ibv_gid, lid: u16, attach: bool) -> c_int {
    // SAFETY: `ibqp` reads as an `ibv_qp` of one of our contexts (the contract).
    if let Err(e) = unsafe { valid((*ibqp).context, Kind::Qp, (*ibqp).handle, ibqp as *const u8) } {
        return e;
    }
    // SAFETY: one of our QPs; `gid` is 16 readable bytes (the contract).
    let ((c, qp), mgid) = unsafe { (qp_of(ibqp), (*gid).raw) };
    if !attach {
        return if c.detach_mcast(qp.qpn, mgid, lid) {
            0
        } else {
            libc::EINVAL
        };
    }
    if !Ctx::is_multicast_gid(&mgid) || qp.qpt != IBV_QPT_UD {
        return libc::EINVAL;
    }
    match c.attach_mcast(qp.qpn, mgid, lid) {
        Ok(()) => 0,
        Err(e) => e,
    }
}

pub static OPS: verbs_context_ops = verbs_context_ops {
    alloc_pd: Some(alloc_pd),
    dealloc_pd: Some(dealloc_pd),
    alloc_parent_domain: Some(alloc_parent_domain),
    alloc_td: Some(alloc_td),
    dealloc_td: Some(dealloc_td),
    reg_mr: Some(reg_mr),
    dereg_mr: Some(dereg_mr),
    rereg_mr: Some(rereg_mr),
    alloc_dm: Some(alloc_dm),
    free_dm: Some(free_dm),
    reg_dm_mr: Some(reg_dm_mr),
    alloc_mw: Some(alloc_mw),
    dealloc_mw: Some(dealloc_mw),
    bind_mw: Some(bind_mw),
    advise_mr: Some(advise_mr),
    create_ah: Some(create_ah),
    destroy_ah: Some(destroy_ah),
    attach_mcast: Some(attach_mcast),
    detach_mcast: Some(detach_mcast),
    open_xrcd: Some(open_xrcd),
    close_xrcd: Some(close_xrcd),
    create_cq: Some(create_cq),
    create_cq_ex: Some(create_cq_ex),
    poll_cq: Some(poll_cq),
    req_notify_cq: Some(req_notify_cq),
    cq_event: Some(cq_event),
    destroy_cq: Some(destroy_cq),
    resize_cq: Some(resize_cq),
    create_srq: Some(create_srq),
    create_srq_ex: Some(create_srq_ex),
    modify_srq: Some(modify_srq),
    query_srq: Some(query_srq),
    destroy_srq: Some(destroy_srq),
    get_srq_num: Some(get_srq_num),
    post_srq_recv: Some(post_srq_recv),
    create_qp: Some(create_qp),
    create_qp_ex: Some(create_qp_ex),
    modify_qp: Some(modify_qp),
    query_qp: Some(query_qp),
    destroy_qp: Some(destroy_qp),
    post_send: Some(post_send),
    post_recv: Some(post_recv),
    query_device_ex: Some(query_device_ex),
    query_port: Some(query_port),
    async_event: Some(async_event),
    free_context: Some(free_context),
    ..EMPTY_OPS
};

// SAFETY: `verbs_context_ops` is a table of `Option<extern fn>`: all-zero
// is every entry `None`.
const EMPTY_OPS: verbs_context_ops = unsafe { std::mem::zeroed() };
