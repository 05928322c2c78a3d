//! The list across rescans: keep, drop, add; reference counts; providers
//! loaded once.

use super::*;
use crate::abi::{self, verbs_device_ops, verbs_match_ent};
use crate::device::record::set_cstr;
use std::sync::atomic::AtomicUsize;

static UNINITS: AtomicUsize = AtomicUsize::new(0);

/// A provider's `alloc_device`: a zeroed device from the C allocator.
///
/// # Safety
/// None beyond the ABI: the record is not used.
unsafe extern "C" fn alloc(_s: *mut verbs_sysfs_dev) -> *mut verbs_device {
    // SAFETY: calloc of one verbs_device; all-zero is a valid value of it.
    unsafe { libc::calloc(1, std::mem::size_of::<verbs_device>()) }.cast()
}
/// A provider's `uninit_device`, freeing what [`alloc`] returned.
///
/// # Safety
/// `d` came from [`alloc`] and is not used afterwards.
unsafe extern "C" fn uninit(d: *mut verbs_device) {
    UNINITS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: by the contract, `d` is alloc's calloc'ed block, freed once.
    unsafe { libc::free(d.cast()) };
}

struct T([verbs_match_ent; 2]);
// SAFETY: the table is an immutable static; its raw pointers designate
// static C strings that are only ever read.
unsafe impl Sync for T {}
static TABLE: T = T([
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u: abi::verbs_match_ent_u {
            modalias: c"rdma_device:Nlst*".as_ptr(),
        },
        vendor: 0,
        device: 0,
        kind: abi::VERBS_MATCH_MODALIAS as u8,
    },
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u: abi::verbs_match_ent_u { driver_id: 0 },
        vendor: 0,
        device: 0,
        kind: 0,
    },
]);
static OPS: verbs_device_ops = verbs_device_ops {
    name: c"lst".as_ptr(),
    match_min_abi_version: 0,
    match_max_abi_version: 10,
    match_table: TABLE.0.as_ptr(),
    static_providers: std::ptr::null_mut(),
    match_device: None,
    alloc_context: None,
    import_context: None,
    alloc_device: Some(alloc),
    uninit_device: Some(uninit),
};

fn rec(name: &str, uverbs: &str, idx: i32, t: i64) -> SysfsDev {
    let mut r = SysfsDev::new().unwrap();
    let d = r.get_mut();
    set_cstr(&mut d.ibdev_name, name.as_bytes());
    set_cstr(&mut d.sysfs_name, uverbs.as_bytes());
    set_cstr(&mut d.ibdev_path, b"/nonexistent");
    d.ibdev_idx = idx;
    d.time_created.tv_sec = t;
    d.abi_ver = 1;
    r
}

/// A scan result in upstream's order (last discovered first).
fn scan(devs: Vec<SysfsDev>) -> VecDeque<SysfsDev> {
    devs.into_iter().rev().collect()
}

fn names(l: &List) -> Vec<String> {
    l.devices
        .iter()
        // SAFETY: listed devices are live while the list holds them.
        .map(|d| unsafe { crate::device::record::cstr(&(*d.0).device.name) })
        .collect()
}

#[test]
fn rescans_keep_drop_and_add() {
    let mut l = List::default();
    let mut loads = 0;
    let drivers = || {
        if loaded_flag() {
            vec![Registered::from_static(&OPS)]
        } else {
            vec![]
        }
    };
    // The first scan finds nothing registered: providers get loaded once.
    fn loaded_flag() -> bool {
        LOADED.load(Ordering::SeqCst)
    }
    static LOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let mut load = || {
        loads += 1;
        LOADED.store(true, Ordering::SeqCst);
    };
    let n = update(
        &mut l,
        scan(vec![rec("lst0", "uverbs0", -1, 1), rec("lst1", "uverbs1", -1, 1)]),
        &drivers,
        &mut load,
    );
    assert_eq!(n, 2);
    assert_eq!(names(&l), ["lst0", "lst1"]);
    let first: Vec<Dev> = l.devices.iter().copied().collect();

    // Same devices: the same objects stay; nothing is loaded again.
    let n = update(
        &mut l,
        scan(vec![rec("lst0", "uverbs0", -1, 1), rec("lst1", "uverbs1", -1, 1)]),
        &drivers,
        &mut load,
    );
    assert_eq!(n, 2);
    assert_eq!(l.devices.iter().copied().collect::<Vec<_>>(), first);

    // A caller holds lst0 (an open list); lst0 vanishes, lst2 appears.
    // SAFETY: first[0] is listed, hence live.
    unsafe { hold(first[0].0.cast()) };
    let before = UNINITS.load(Ordering::SeqCst);
    let n = update(
        &mut l,
        scan(vec![rec("lst1", "uverbs1", -1, 1), rec("lst2", "uverbs2", -1, 1)]),
        &drivers,
        &mut load,
    );
    assert_eq!(n, 2);
    assert_eq!(names(&l), ["lst2", "lst1"]);
    assert_eq!(UNINITS.load(Ordering::SeqCst), before, "held device must survive");
    // SAFETY: lst0 left the list but our reference (taken above) keeps it
    // alive until the put, which gives that reference back.
    unsafe {
        assert_eq!(crate::device::record::cstr(&(*first[0].0).device.name), "lst0");
        put(first[0].0.cast());
    }
    assert_eq!(UNINITS.load(Ordering::SeqCst), before + 1);

    // A re-created device (new creation time) replaces the old object.
    let n = update(
        &mut l,
        scan(vec![rec("lst1", "uverbs1", -1, 2), rec("lst2", "uverbs2", -1, 1)]),
        &drivers,
        &mut load,
    );
    assert_eq!(n, 2);
    assert_ne!(
        l.devices.iter().find(|d| names_of(d) == "lst1").copied(),
        Some(first[1])
    );

    // Netlink devices compare by index, not time; an unclaimed device never
    // triggers another load.
    let n = update(&mut l, scan(vec![rec("zzz0", "uverbs5", 3, 0)]), &drivers, &mut load);
    assert_eq!(n, 0);
    assert!(l.devices.is_empty());
    assert_eq!(loads, 1);
}

fn names_of(d: &Dev) -> String {
    // SAFETY: called on listed devices, live while the list holds them.
    unsafe { crate::device::record::cstr(&(*d.0).device.name) }
}

#[test]
fn same_sysfs_dev_rules() {
    let a = rec("x", "uverbs0", -1, 5);
    let b = rec("renamed", "uverbs0", -1, 5);
    assert!(same(a.get(), b.get()), "the IB name is not compared");
    assert!(!same(a.get(), rec("x", "uverbs1", -1, 5).get()));
    assert!(!same(a.get(), rec("x", "uverbs0", -1, 6).get()));
    assert!(same(rec("x", "uverbs0", 4, 5).get(), rec("x", "uverbs0", 4, 9).get()));
    assert!(!same(rec("x", "uverbs0", 4, 5).get(), rec("x", "uverbs0", 5, 5).get()));
}
