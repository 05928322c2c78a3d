//! Matching order and device set-up with providers written in Rust.

use super::*;
use crate::abi::verbs_device_ops;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::AtomicUsize;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static UNINITS: AtomicUsize = AtomicUsize::new(0);

/// A provider's `alloc_device`: a zeroed device from the C allocator.
///
/// # Safety
/// None beyond the ABI: the record is not used.
pub unsafe extern "C" fn alloc(_s: *mut abi::verbs_sysfs_dev) -> *mut verbs_device {
    ALLOCS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: calloc of one verbs_device; all-zero is a valid value of it.
    unsafe { libc::calloc(1, std::mem::size_of::<verbs_device>()) }.cast()
}
/// A provider's `alloc_device` that fails.
///
/// # Safety
/// None: nothing is touched.
pub unsafe extern "C" fn alloc_fail(_s: *mut abi::verbs_sysfs_dev) -> *mut verbs_device {
    std::ptr::null_mut()
}
/// A provider's `uninit_device`, freeing what [`alloc`] returned.
///
/// # Safety
/// `d` came from [`alloc`] and is not used afterwards.
pub unsafe extern "C" fn uninit(d: *mut verbs_device) {
    UNINITS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: by the contract, `d` is alloc's calloc'ed block, freed once.
    unsafe { libc::free(d.cast()) };
}
/// A `match_device` that accepts.
///
/// # Safety
/// None: the record is not used.
unsafe extern "C" fn yes(_s: *mut abi::verbs_sysfs_dev) -> bool {
    true
}
/// A `match_device` that refuses.
///
/// # Safety
/// None: the record is not used.
unsafe extern "C" fn no(_s: *mut abi::verbs_sysfs_dev) -> bool {
    false
}

const fn ent(kind: u32, u: abi::verbs_match_ent_u, vendor: u16, device: u16) -> verbs_match_ent {
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u,
        vendor,
        device,
        kind: kind as u8,
    }
}
const NONE: abi::verbs_match_ent_u = abi::verbs_match_ent_u { driver_id: 0 };
const fn modalias(p: &'static CStr) -> verbs_match_ent {
    ent(
        abi::VERBS_MATCH_MODALIAS,
        abi::verbs_match_ent_u { modalias: p.as_ptr() },
        0,
        0,
    )
}
const fn driver_id(id: u64) -> verbs_match_ent {
    ent(
        abi::VERBS_MATCH_DRIVER_ID,
        abi::verbs_match_ent_u { driver_id: id },
        0,
        0,
    )
}
const fn pci(v: u16, d: u16) -> verbs_match_ent {
    ent(abi::VERBS_MATCH_PCI, NONE, v, d)
}
const END: verbs_match_ent = ent(abi::VERBS_MATCH_SENTINEL, NONE, 0, 0);

const fn ops(
    name: &'static CStr,
    table: *const verbs_match_ent,
    min: u32,
    max: u32,
    md: Option<unsafe extern "C" fn(*mut abi::verbs_sysfs_dev) -> bool>,
    al: unsafe extern "C" fn(*mut abi::verbs_sysfs_dev) -> *mut verbs_device,
) -> verbs_device_ops {
    verbs_device_ops {
        name: name.as_ptr(),
        match_min_abi_version: min,
        match_max_abi_version: max,
        match_table: table,
        static_providers: std::ptr::null_mut(),
        match_device: md,
        alloc_context: None,
        import_context: None,
        alloc_device: Some(al),
        uninit_device: Some(uninit),
    }
}

struct Table<const N: usize>([verbs_match_ent; N]);
// SAFETY: the tables are immutable statics; their raw pointers designate
// static C strings that are only ever read.
unsafe impl<const N: usize> Sync for Table<N> {}

static NAME_T: Table<2> = Table([modalias(c"rdma_device:Nnm*"), END]);
static ID_T: Table<3> = Table([driver_id(42), pci(0x15b3, 0x1013), END]);
static PCI_T: Table<2> = Table([pci(0x15b3, 0x1013), END]);
static BY_NAME: verbs_device_ops = ops(c"byname", NAME_T.0.as_ptr(), 0, 10, None, alloc);
static BY_ID: verbs_device_ops = ops(c"byid", ID_T.0.as_ptr(), 0, 10, None, alloc);
static BY_PCI: verbs_device_ops = ops(c"bypci", PCI_T.0.as_ptr(), 0, 10, None, alloc);
static OLD_ABI: verbs_device_ops = ops(c"oldabi", NAME_T.0.as_ptr(), 7, 9, None, alloc);
static REFUSES: verbs_device_ops = ops(c"refuses", NAME_T.0.as_ptr(), 0, 10, Some(no), alloc);
static ACCEPTS: verbs_device_ops = ops(c"accepts", std::ptr::null(), 0, 10, Some(yes), alloc);
static FAILS: verbs_device_ops = ops(c"fails", NAME_T.0.as_ptr(), 0, 10, None, alloc_fail);

fn reg(o: &'static verbs_device_ops) -> Registered {
    Registered::from_static(o)
}

/// A record for `name`, whose ibdev_path is a scratch directory holding
/// `device/modalias` when given.
fn dev(name: &str, modalias_text: Option<&str>, driver: u32) -> (SysfsDev, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("ibvrs-match-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("device")).unwrap();
    if let Some(m) = modalias_text {
        std::fs::write(dir.join("device/modalias"), format!("{m}\n")).unwrap();
    }
    let mut r = SysfsDev::new().unwrap();
    let d = r.get_mut();
    set_cstr(&mut d.ibdev_name, name.as_bytes());
    set_cstr(&mut d.sysfs_name, b"uverbs9");
    set_cstr(&mut d.ibdev_path, dir.as_os_str().as_bytes());
    d.ibdev_idx = -1;
    d.node_type = abi::IBV_NODE_RNIC;
    d.abi_ver = 1;
    d.driver_id = driver;
    (r, dir)
}

fn claimed_by(drivers: &[Registered], d: SysfsDev) -> Option<(String, *mut verbs_device)> {
    match try_drivers(drivers, d) {
        // SAFETY: a freshly claimed device, live until released; its `ops`
        // was set by `fill` to one of the static tables of this file.
        Ok(v) => Some((unsafe { Registered::new((*v).ops) }.name(), v)),
        Err(_) => None,
    }
}

/// Drops the reference a claim gave.
///
/// # Safety
/// `v` is a claimed device whose only reference the caller gives up.
unsafe fn release(v: *mut verbs_device) {
    // SAFETY: by the contract, a live device and the caller's reference.
    unsafe { crate::device::list::put(v.cast()) };
}

#[test]
fn device_fields_after_claim() {
    let (d, dir) = dev(
        "pcidev0",
        Some("pci:v000015B3d00001013sv000015B3sd00000008bc02sc00i00"),
        0,
    );
    let sysfs = d.as_ptr();
    let (who, v) = claimed_by(&[reg(&BY_NAME), reg(&BY_PCI)], d).unwrap();
    assert_eq!(who, "bypci");
    // SAFETY: `v` is the live device just claimed (one reference, ours) and
    // `sysfs` its record, which lives until that reference is released at
    // the end of this block.
    unsafe {
        let dv = &(*v).device;
        assert_eq!(cstr(&dv.name), "pcidev0");
        assert_eq!(cstr(&dv.dev_name), "uverbs9");
        assert_eq!(
            cstr(&dv.dev_path),
            format!("{}/class/infiniband_verbs/uverbs9", crate::sysfs::root().display())
        );
        assert_eq!(cstr(&dv.ibdev_path), dir.display().to_string());
        assert_eq!(dv.node_type, abi::IBV_NODE_RNIC);
        assert_eq!(dv.transport_type, abi::IBV_TRANSPORT_IWARP);
        assert_eq!((*v).sysfs, sysfs);
        assert_eq!((*v).refcount.load(Ordering::SeqCst), 1);
        assert_eq!(
            cstr(&(*sysfs).modalias),
            "pci:v000015B3d00001013sv000015B3sd00000008bc02sc00i00"
        );
        assert_ne!((*sysfs).flags & abi::VSYSFS_READ_MODALIAS, 0);
        assert_eq!((*(*sysfs).r#match).device, 0x1013);
        let before = UNINITS.load(Ordering::SeqCst);
        release(v);
        assert_eq!(UNINITS.load(Ordering::SeqCst), before + 1);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn driver_id_goes_first() {
    // Name matches "byname", registered first; the driver id names "byid".
    let (d, dir) = dev("nm0", None, 42);
    let (who, v) = claimed_by(&[reg(&BY_NAME), reg(&BY_ID)], d).unwrap();
    assert_eq!(who, "byid");
    // SAFETY: `v` was just claimed; this is its only reference.
    unsafe { release(v) };
    let (d, _) = dev("nm0", None, 0);
    let (who, v) = claimed_by(&[reg(&BY_NAME), reg(&BY_ID)], d).unwrap();
    assert_eq!(who, "byname");
    // SAFETY: `v` was just claimed; this is its only reference.
    unsafe { release(v) };
    // An unknown driver id falls through to the ordinary pass.
    let (d, _) = dev("nm0", None, 77);
    let (who, v) = claimed_by(&[reg(&BY_ID), reg(&BY_NAME)], d).unwrap();
    assert_eq!(who, "byname");
    // SAFETY: `v` was just claimed; this is its only reference.
    unsafe { release(v) };
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn refusals() {
    let (d, dir) = dev("nm1", None, 0);
    // ABI range, match_device saying no, alloc failing: each refuses and the
    // next provider is asked.
    let (who, v) = claimed_by(&[reg(&OLD_ABI), reg(&REFUSES), reg(&FAILS), reg(&BY_NAME)], d).unwrap();
    assert_eq!(who, "byname");
    // SAFETY: `v` was just claimed; this is its only reference.
    unsafe { release(v) };
    // match_device alone (no table) decides.
    let (d, _) = dev("other0", None, 0);
    let (who, v) = claimed_by(&[reg(&BY_NAME), reg(&ACCEPTS)], d).unwrap();
    assert_eq!(who, "accepts");
    // SAFETY: `v` was just claimed; this is its only reference.
    unsafe { release(v) };
    // Nobody: the record comes back, modalias marked read (and empty).
    let (d, _) = dev("other1", None, 0);
    match try_drivers(&[reg(&BY_NAME), reg(&BY_PCI)], d) {
        Ok(_) => panic!("claimed"),
        Err(r) => {
            assert_ne!(r.get().flags & abi::VSYSFS_READ_MODALIAS, 0);
            assert_eq!(r.get().modalias[0], 0);
            assert!(r.get().r#match.is_null());
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn patterns() {
    assert_eq!(pci_pattern(0x15b3, 0x1013).to_bytes(), b"pci:v000015B3d00001013sv*");
    assert!(fnmatch(c"rdma_device:Nrxe*", c"rdma_device:Nrxe0"));
    assert!(!fnmatch(c"rdma_device:Nrxe*", c"rdma_device:Nsiw0"));
    let (d, dir) = dev("rxe0", None, 0);
    assert_eq!(name_alias(&d).to_bytes(), b"rdma_device:Nrxe0");
    drop(d);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn pci_matches_as_fnmatch_of_the_pattern() {
    let values: [&CStr; 8] = [
        c"pci:v000015B3d00001013sv000015B3sd00000008bc02sc00i00",
        c"pci:v000015B3d00001013sv",
        c"pci:v000015B3d00001013s",
        c"pci:v000015b3d00001013sv000015B3sd00000008bc02sc00i00",
        c"pci:v000015B3d00001014sv000015B3sd00000008bc02sc00i00",
        c"pci:v00008086d000037D2sv00008086sd00000000bc02sc00i00",
        c"",
        c"rdma_device:Nrxe0",
    ];
    for (vendor, device) in [(0x15b3u16, 0x1013u16), (0x8086, 0x37d2), (0xffff, 0), (0, 0xabcd)] {
        for v in values {
            assert_eq!(
                pci_matches(vendor, device, v),
                fnmatch(&pci_pattern(vendor, device), v),
                "{vendor:x} {device:x} {v:?}"
            );
        }
    }
}
