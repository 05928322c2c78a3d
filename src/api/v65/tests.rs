//! The 1.15–1.18 verbs against fake providers: a context made by the
//! context layer itself (`init_context` + `set_ops`) with a few ops of the
//! test's own, for each generation.

use std::cell::RefCell;
use std::os::raw::{c_int, c_void};
use std::ptr::null_mut;

use super::*;
use crate::ffi::errno;
use crate::generation::Pabi;

/// What the fake ops saw, per test thread.
#[derive(Default, Debug, Clone)]
struct Seen {
    calls: Vec<&'static str>,
    value: u64,
    reg_mr: Option<(usize, usize, u64, c_int)>,
    reg_dmabuf: Option<(u64, usize, u64, c_int, c_int)>,
    reg_ex: Option<(u64, usize, usize, c_int, c_int, u64)>,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen::default());
}

fn seen() -> Seen {
    SEEN.with(|s| s.borrow().clone())
}

fn record(f: impl FnOnce(&mut Seen)) {
    SEEN.with(|s| f(&mut s.borrow_mut()));
}

fn new_mr() -> *mut ibv_mr {
    // SAFETY: verbs_mr is a C struct of integers and pointers.
    Box::into_raw(Box::new(unsafe { core::mem::zeroed::<verbs_mr>() })).cast()
}

unsafe extern "C" fn fake_set(_c: *mut ibv_comp_cntr, v: u64) -> c_int {
    record(|s| {
        s.calls.push("set");
        s.value = v;
    });
    0
}
unsafe extern "C" fn fake_inc(_c: *mut ibv_comp_cntr, v: u64) -> c_int {
    record(|s| {
        s.calls.push("inc");
        s.value += v;
    });
    0
}
unsafe extern "C" fn fake_read(_c: *mut ibv_comp_cntr, v: *mut u64) -> c_int {
    // SAFETY: the test's own out pointer.
    unsafe { *v = seen().value };
    0
}
unsafe extern "C" fn fake_port_speed(_c: *mut ibv_context, port: u32, speed: *mut u64) -> c_int {
    // SAFETY: the test's own out pointer.
    unsafe { *speed = port as u64 * 250 };
    0
}
unsafe extern "C" fn fake_caps(_c: *mut ibv_context, caps: *mut ibv_comp_cntr_caps, size: usize) -> c_int {
    record(|s| s.value = size as u64);
    // SAFETY: the library's caller's struct, zeroed by the library.
    unsafe { (*caps).max_counters = 7 };
    0
}
unsafe extern "C" fn fake_reg_mr(
    _pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: c_int,
) -> *mut ibv_mr {
    record(|s| s.reg_mr = Some((addr as usize, len, iova, access)));
    new_mr()
}
unsafe extern "C" fn fake_reg_dmabuf_mr(
    _pd: *mut ibv_pd,
    off: u64,
    len: usize,
    iova: u64,
    fd: c_int,
    access: c_int,
) -> *mut ibv_mr {
    record(|s| s.reg_dmabuf = Some((off, len, iova, fd, access)));
    new_mr()
}
unsafe extern "C" fn fake_reg_mr_ex(_pd: *mut ibv_pd, a: *mut ibv_mr_init_attr) -> *mut ibv_mr {
    // SAFETY: the library's own copy.
    let a = unsafe { *a };
    record(|s| s.reg_ex = Some((a.comp_mask, a.addr as usize, a.length, a.fd, a.access, a.iova)));
    new_mr()
}

/// A context of generation `pabi` whose provider implements the ops `ops`
/// fills in (PABI 65 layout; a PABI 34 provider's table is translated).
fn context(pabi: Pabi, ops: impl FnOnce(&mut verbs_context_ops_65)) -> *mut ibv_context {
    // SAFETY: zeroed C structs (valid all-zero), leaked for the test; the
    // context layer initialises the view of a context of `pabi`'s size.
    unsafe {
        let dev: *mut verbs_device = Box::into_raw(Box::new(core::mem::zeroed::<verbs_device>()));
        let real: *mut verbs_context_65 = Box::into_raw(Box::new(core::mem::zeroed::<verbs_context_65>()));
        let view = pabi.view(real.cast());
        assert_eq!(crate::context::init_context(view, dev.cast(), -1, 0, pabi), 0);
        let mut table = verbs_context_ops_65::default();
        ops(&mut table);
        match pabi {
            Pabi::P65 => crate::context::set_ops(view, &table),
            Pabi::P34 => {
                // Only ops a PABI 34 provider can have survive the translation.
                let t34 = verbs_context_ops {
                    reg_mr: table.reg_mr,
                    reg_dmabuf_mr: table.reg_dmabuf_mr,
                    ..Default::default()
                };
                crate::context::set_ops_34(view, &t34)
            }
        }
        core::ptr::addr_of_mut!((*view).context)
    }
}

fn pd_of(ctx: *mut ibv_context) -> *mut ibv_pd {
    // SAFETY: ibv_pd is a C struct of a pointer and an integer.
    let pd: *mut ibv_pd = Box::into_raw(Box::new(unsafe { core::mem::zeroed::<ibv_pd>() }));
    // SAFETY: just allocated.
    unsafe { (*pd).context = ctx };
    pd
}

fn counter(ctx: *mut ibv_context) -> ibv_comp_cntr {
    ibv_comp_cntr {
        context: ctx,
        handle: 1,
    }
}

#[test]
fn null_objects_fail_with_einval() {
    // SAFETY: every NULL object pointer is refused before any use.
    unsafe {
        assert!(ibv_alloc_dmah(null_mut(), null_mut()).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(ibv_dealloc_dmah(null_mut()), libc::EINVAL);
        assert_eq!(ibv_dm_export_dmabuf_fd(null_mut()), -1);
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(ibv_query_port_speed(null_mut(), 1, null_mut()), libc::EINVAL);
        assert!(ibv_alloc_buf(null_mut(), 4096, null_mut()).is_null());
        ibv_free_buf(null_mut());
        assert_eq!(ibv_export_buf_dmabuf_fd(null_mut()), -1);
        assert!(ibv_reg_mr_ex(null_mut(), null_mut()).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!(ibv_create_comp_cntr(null_mut(), null_mut()).is_null());
        assert_eq!(ibv_destroy_comp_cntr(null_mut()), libc::EINVAL);
        assert_eq!(ibv_set_comp_cntr(null_mut(), 1), libc::EINVAL);
        assert_eq!(ibv_set_err_comp_cntr(null_mut(), 1), libc::EINVAL);
        assert_eq!(ibv_inc_comp_cntr(null_mut(), 1), libc::EINVAL);
        assert_eq!(ibv_inc_err_comp_cntr(null_mut(), 1), libc::EINVAL);
        assert_eq!(ibv_read_comp_cntr(null_mut(), null_mut()), libc::EINVAL);
        assert_eq!(ibv_read_err_comp_cntr(null_mut(), null_mut()), libc::EINVAL);
        assert_eq!(
            ibv_qp_attach_comp_cntr(null_mut(), null_mut(), null_mut()),
            libc::EINVAL
        );
        assert_eq!(_ibv_query_comp_cntr_caps(null_mut(), null_mut(), 16), libc::EINVAL);
        assert!(ibv_dmabuf_heap_alloc(null_mut(), 4096, null_mut()).is_null());
        ibv_dmabuf_heap_destroy(null_mut());
    }
}

#[test]
fn a_provider_without_the_ops_gets_upstreams_errno() {
    for pabi in [Pabi::P34, Pabi::P65] {
        let ctx = context(pabi, |_| {});
        let mut cc = counter(ctx);
        let mut v = 5u64;
        // SAFETY: a context of the context layer and objects of it.
        unsafe {
            assert!(ibv_alloc_dmah(ctx, null_mut()).is_null());
            assert_eq!(errno(), libc::EOPNOTSUPP);
            let mut dmah = ibv_dmah { context: ctx };
            assert_eq!(ibv_dealloc_dmah(&mut dmah), libc::EOPNOTSUPP);
            let mut dm: ibv_dm = core::mem::zeroed();
            dm.context = ctx;
            assert_eq!(ibv_dm_export_dmabuf_fd(&mut dm), -1);
            assert_eq!(errno(), libc::EOPNOTSUPP);
            assert_eq!(ibv_query_port_speed(ctx, 1, &mut v), libc::EOPNOTSUPP);
            assert!(ibv_create_comp_cntr(ctx, null_mut()).is_null());
            assert_eq!(errno(), libc::EOPNOTSUPP);
            assert_eq!(ibv_destroy_comp_cntr(&mut cc), libc::EOPNOTSUPP);
            assert_eq!(ibv_set_comp_cntr(&mut cc, 1), libc::EOPNOTSUPP);
            assert_eq!(ibv_set_err_comp_cntr(&mut cc, 1), libc::EOPNOTSUPP);
            assert_eq!(ibv_inc_comp_cntr(&mut cc, 1), libc::EOPNOTSUPP);
            assert_eq!(ibv_inc_err_comp_cntr(&mut cc, 1), libc::EOPNOTSUPP);
            assert_eq!(ibv_read_comp_cntr(&mut cc, &mut v), libc::EOPNOTSUPP);
            assert_eq!(ibv_read_err_comp_cntr(&mut cc, &mut v), libc::EOPNOTSUPP);
            assert_eq!(v, 5, "nothing written");
            let mut qp: ibv_qp = core::mem::zeroed();
            qp.context = ctx;
            assert_eq!(ibv_qp_attach_comp_cntr(&mut qp, &mut cc, null_mut()), libc::EOPNOTSUPP);
            // The caps are zeroed by the library even when the op fails.
            let mut caps = ibv_comp_cntr_caps {
                max_value: 9,
                max_counters: 9,
                supported_qp_attach_ops: 9,
            };
            assert_eq!(
                _ibv_query_comp_cntr_caps(ctx, &mut caps, core::mem::size_of::<ibv_comp_cntr_caps>()),
                libc::EOPNOTSUPP
            );
            assert_eq!(
                (caps.max_value, caps.max_counters, caps.supported_qp_attach_ops),
                (0, 0, 0)
            );
        }
    }
}

#[test]
fn the_providers_ops_are_called() {
    let ctx = context(Pabi::P65, |o| {
        o.set_comp_cntr = Some(fake_set);
        o.inc_comp_cntr = Some(fake_inc);
        o.read_comp_cntr = Some(fake_read);
        o.query_port_speed = Some(fake_port_speed);
        o.query_comp_cntr_caps = Some(fake_caps);
    });
    let mut cc = counter(ctx);
    let mut v = 0u64;
    // SAFETY: a context of the context layer and objects of it.
    unsafe {
        assert_eq!(ibv_set_comp_cntr(&mut cc, 40), 0);
        assert_eq!(ibv_inc_comp_cntr(&mut cc, 2), 0);
        assert_eq!(ibv_read_comp_cntr(&mut cc, &mut v), 0);
        assert_eq!(v, 42);
        // The error count has no op of the provider: the default answers.
        assert_eq!(ibv_read_err_comp_cntr(&mut cc, &mut v), libc::EOPNOTSUPP);
        assert_eq!(seen().calls, ["set", "inc"]);
        assert_eq!(ibv_query_port_speed(ctx, 2, &mut v), 0);
        assert_eq!(v, 500);
        let mut caps: ibv_comp_cntr_caps = core::mem::zeroed();
        assert_eq!(_ibv_query_comp_cntr_caps(ctx, &mut caps, 16), 0);
        assert_eq!((seen().value, caps.max_counters), (16, 7));
    }
}

#[test]
fn reg_mr_ex_default_translates_to_the_legacy_ops() {
    for pabi in [Pabi::P34, Pabi::P65] {
        let ctx = context(pabi, |o| {
            o.reg_mr = Some(fake_reg_mr);
            o.reg_dmabuf_mr = Some(fake_reg_dmabuf_mr);
        });
        let pd = pd_of(ctx);
        // SAFETY: a C struct of integers and pointers.
        let mut a: ibv_mr_init_attr = unsafe { core::mem::zeroed() };
        // Address based, no iova: the iova is the address.
        a.comp_mask = IBV_REG_MR_MASK_ADDR as u64;
        a.addr = 0x10000 as *mut c_void;
        a.length = 0x2000;
        a.access = IBV_ACCESS_LOCAL_WRITE as c_int;
        a.fd = 33; // not selected by the mask: not passed on
                   // SAFETY: the PD of a context of the context layer.
        let mr = unsafe { ibv_reg_mr_ex(pd, &mut a) };
        assert!(!mr.is_null());
        assert_eq!(
            seen().reg_mr,
            Some((0x10000, 0x2000, 0x10000, IBV_ACCESS_LOCAL_WRITE as c_int))
        );
        // SAFETY: the MR the fake returned.
        unsafe {
            assert_eq!(
                ((*mr).context, (*mr).pd, (*mr).addr, (*mr).length),
                (ctx, pd, a.addr, 0x2000)
            );
        }
        // With an iova.
        a.comp_mask |= IBV_REG_MR_MASK_IOVA as u64;
        a.iova = 0x77;
        // SAFETY: as above.
        assert!(!unsafe { ibv_reg_mr_ex(pd, &mut a) }.is_null());
        assert_eq!(seen().reg_mr.unwrap().2, 0x77);
        // dma-buf: offset, iova, fd; mr->addr is the offset.
        a.comp_mask = (IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET | IBV_REG_MR_MASK_IOVA) as u64;
        a.fd_offset = 0x300;
        // SAFETY: as above.
        let mr = unsafe { ibv_reg_mr_ex(pd, &mut a) };
        assert!(!mr.is_null());
        assert_eq!(seen().reg_dmabuf, Some((0x300, 0x2000, 0x77, 33, a.access)));
        // SAFETY: as above.
        assert_eq!(unsafe { (*mr).addr } as usize, 0x300);
        // Missing iova for a dma-buf: EINVAL; a DMA handle: EOPNOTSUPP.
        a.comp_mask = (IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET) as u64;
        // SAFETY: as above.
        assert!(unsafe { ibv_reg_mr_ex(pd, &mut a) }.is_null());
        assert_eq!(errno(), libc::EINVAL);
        a.comp_mask = (IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_DMAH) as u64;
        // SAFETY: as above.
        assert!(unsafe { ibv_reg_mr_ex(pd, &mut a) }.is_null());
        assert_eq!(errno(), libc::EOPNOTSUPP);
    }
}

#[test]
fn reg_mr_ex_hands_the_provider_a_masked_copy() {
    let ctx = context(Pabi::P65, |o| o.reg_mr_ex = Some(fake_reg_mr_ex));
    let pd = pd_of(ctx);
    // SAFETY: a C struct of integers and pointers.
    let mut a: ibv_mr_init_attr = unsafe { core::mem::zeroed() };
    a.comp_mask = IBV_REG_MR_MASK_ADDR as u64;
    a.addr = 0x4000 as *mut c_void;
    a.length = 64;
    a.fd = 9;
    a.iova = 5;
    // An optional access bit the device does not declare support for is
    // dropped, as for ibv_reg_mr.
    a.access = (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING) as c_int;
    // SAFETY: the PD of a context of the context layer.
    assert!(!unsafe { ibv_reg_mr_ex(pd, &mut a) }.is_null());
    assert_eq!(
        seen().reg_ex,
        Some((
            IBV_REG_MR_MASK_ADDR as u64,
            0x4000,
            64,
            0,
            IBV_ACCESS_LOCAL_WRITE as c_int,
            0
        ))
    );
    assert_eq!(a.fd, 9, "the caller's attribute is not modified");
}

#[test]
fn buffers_default_allocation_and_registration() {
    let ctx = context(Pabi::P34, |o| o.reg_mr = Some(fake_reg_mr));
    let pd = pd_of(ctx);
    let mut buf: *mut ibv_buf = null_mut();
    // SAFETY: the PD of a context of the context layer; the buffer handle
    // comes from the library's default alloc_buf.
    unsafe {
        let p = ibv_alloc_buf(pd, 8192, &mut buf);
        assert!(!p.is_null() && !buf.is_null());
        assert_eq!(p as usize % 4096, 0, "page aligned");
        assert_eq!(
            ((*buf).addr, (*buf).size, (*buf).pd, (*buf).dmabuf_fd),
            (p, 8192, pd, -1)
        );
        assert_eq!(ibv_export_buf_dmabuf_fd(buf), -1);
        assert_eq!(errno(), libc::ENODATA);
        // A range inside the buffer goes to reg_mr with its address.
        let mid = p.cast::<u8>().add(4096).cast::<c_void>();
        let mr = ibv_reg_buf_mr(pd, buf, mid, 4096, IBV_ACCESS_LOCAL_WRITE as c_int);
        assert!(!mr.is_null());
        assert_eq!(
            seen().reg_mr,
            Some((mid as usize, 4096, mid as usize as u64, IBV_ACCESS_LOCAL_WRITE as c_int))
        );
        assert_eq!(((*mr).addr, (*mr).length), (mid, 4096));
        // Past the end, before the start, another PD: EINVAL.
        assert!(ibv_reg_buf_mr(pd, buf, mid, 4097, 0).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!(ibv_reg_buf_mr(pd, buf, p.cast::<u8>().sub(1).cast(), 1, 0).is_null());
        assert_eq!(errno(), libc::EINVAL);
        let other = pd_of(ctx);
        assert!(ibv_reg_buf_mr(other, buf, p, 1, 0).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!(ibv_reg_buf_mr(pd, null_mut(), p, 1, 0).is_null());
        assert_eq!(errno(), libc::EINVAL);
        ibv_free_buf(buf);
    }
}

#[test]
fn a_dmabuf_backed_buffer_registers_by_fd() {
    let ctx = context(Pabi::P65, |o| o.reg_dmabuf_mr = Some(fake_reg_dmabuf_mr));
    let pd = pd_of(ctx);
    let mut b = ibv_buf {
        addr: 0x100000 as *mut c_void,
        size: 0x10000,
        pd,
        dmabuf_fd: 0, // stdin: only passed on, and duplicated below
    };
    let addr = 0x104000 as *mut c_void;
    // SAFETY: the PD of a context of the context layer; a handle of the
    // test's own whose memory is never touched.
    unsafe {
        let mr = ibv_reg_buf_mr(pd, &mut b, addr, 0x1000, 0);
        assert!(!mr.is_null());
        assert_eq!(seen().reg_dmabuf, Some((0x4000, 0x1000, 0x104000, 0, 0)));
        assert_eq!(
            (*mr).addr as usize,
            0x4000,
            "mr->addr is the offset, as for ibv_reg_dmabuf_mr"
        );
        let fd = ibv_export_buf_dmabuf_fd(&mut b);
        assert!(fd > 2);
        assert_eq!(libc::fcntl(fd, libc::F_GETFD) & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        libc::close(fd);
    }
}

#[test]
fn the_cc_shared_heap_is_absent_here() {
    // The machine's kernel has no confidential-computing heap: open's errno.
    if std::path::Path::new("/dev/dma_heap/system_cc_shared").exists() {
        return;
    }
    // SAFETY: no arguments.
    let h = unsafe { ibv_dmabuf_heap_cc_shared_init() };
    assert!(h.is_null());
    assert_eq!(errno(), libc::ENOENT);
}

#[test]
fn the_default_reg_mr_ex_decision() {
    use crate::context::dummy_ops::{legacy_reg, LegacyReg};
    // SAFETY: a C struct of integers and pointers.
    let mut a: ibv_mr_init_attr = unsafe { core::mem::zeroed() };
    a.addr = 0x1000 as *mut c_void;
    let with = |a: &mut ibv_mr_init_attr, m: u32| {
        a.comp_mask = m as u64;
        legacy_reg(a)
    };
    assert_eq!(with(&mut a, IBV_REG_MR_MASK_ADDR), Ok(LegacyReg::Mr { iova: 0x1000 }));
    assert_eq!(with(&mut a, 0), Err(libc::EINVAL));
    assert_eq!(
        with(&mut a, IBV_REG_MR_MASK_BUF | IBV_REG_MR_MASK_ADDR),
        Err(libc::EOPNOTSUPP)
    );
    assert_eq!(
        with(&mut a, IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD_OFFSET),
        Err(libc::EINVAL)
    );
    let fd = IBV_REG_MR_MASK_FD | IBV_REG_MR_MASK_FD_OFFSET | IBV_REG_MR_MASK_IOVA;
    assert_eq!(with(&mut a, fd), Ok(LegacyReg::Dmabuf));
    assert_eq!(with(&mut a, fd | IBV_REG_MR_MASK_ADDR), Err(libc::EINVAL));
    assert_eq!(with(&mut a, 1 << 6), Err(libc::EOPNOTSUPP));
}
