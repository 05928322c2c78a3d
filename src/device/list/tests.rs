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

static ID_TABLE: T = T([
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u: abi::verbs_match_ent_u {
            driver_id: abi::RDMA_DRIVER_RXE as u64,
        },
        vendor: 0,
        device: 0,
        kind: abi::VERBS_MATCH_DRIVER_ID as u8,
    },
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u: abi::verbs_match_ent_u { driver_id: 0 },
        vendor: 0,
        device: 0,
        kind: 0,
    },
]);
static ANY_TABLE: T = T([
    verbs_match_ent {
        driver_data: std::ptr::null_mut(),
        u: abi::verbs_match_ent_u {
            modalias: c"rdma_device:N*".as_ptr(),
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
/// Claims devices of driver id RXE only.
static BY_ID: verbs_device_ops = verbs_device_ops {
    name: c"byid".as_ptr(),
    match_table: ID_TABLE.0.as_ptr(),
    ..OPS
};
/// Claims any device by name (upstream's second pass).
static ANY: verbs_device_ops = verbs_device_ops {
    name: c"any".as_ptr(),
    match_table: ANY_TABLE.0.as_ptr(),
    ..OPS
};

fn with_id(mut r: SysfsDev, id: u32) -> SysfsDev {
    r.get_mut().driver_id = id;
    r
}

fn claimed_by(d: &Dev) -> *const verbs_device_ops {
    // SAFETY: called on listed devices, live while the list holds them.
    unsafe { (*d.0).ops }
}

/// Upstream's list is [any, byid] (all loaded): a device of driver id RXE
/// goes to byid (first pass), one without an id to any (second pass).
/// Loading only what the ids need gives the same, without the full load
/// when every device has its provider.
#[test]
fn lazy_loading_decides_as_upstream() {
    let regs = std::cell::RefCell::new(Vec::<Registered>::new());
    let drivers = || regs.borrow().clone();
    let mut needed = Vec::new();
    let mut load_needed = |ids: &[u32]| {
        needed.push(ids.to_vec());
        if ids.iter().all(|&i| i == abi::RDMA_DRIVER_RXE) {
            regs.borrow_mut().push(Registered::from_static(&BY_ID));
            true
        } else {
            false
        }
    };
    let loads = std::cell::Cell::new(0);
    let mut load = || {
        loads.set(loads.get() + 1);
        let mut r = regs.borrow_mut();
        r.retain(|x| *x != Registered::from_static(&BY_ID));
        r.push(Registered::from_static(&ANY));
        r.push(Registered::from_static(&BY_ID));
    };

    let mut l = List::default();
    let n = update_lazily(
        &mut l,
        scan(vec![
            with_id(rec("rxe0", "uverbs0", 0, 0), abi::RDMA_DRIVER_RXE),
            with_id(rec("rxe1", "uverbs1", 1, 0), abi::RDMA_DRIVER_RXE),
        ]),
        &drivers,
        &mut load_needed,
        &mut load,
    );
    assert_eq!(n, 2);
    assert_eq!(names(&l), ["rxe0", "rxe1"]);
    assert!(l.devices.iter().all(|d| std::ptr::eq(claimed_by(d), &BY_ID)));
    assert_eq!(loads.get(), 0, "byid settles both: nothing else is loaded");
    assert!(l.partly_loaded && !l.drivers_loaded);

    // A device without a driver id: everything is loaded, and `any` (first
    // in upstream's list) takes it; the known ones stay.
    let n = update_lazily(
        &mut l,
        scan(vec![
            with_id(rec("rxe0", "uverbs0", 0, 0), abi::RDMA_DRIVER_RXE),
            with_id(rec("rxe1", "uverbs1", 1, 0), abi::RDMA_DRIVER_RXE),
            rec("other0", "uverbs2", 2, 0),
        ]),
        &drivers,
        &mut load_needed,
        &mut load,
    );
    assert_eq!(n, 3);
    assert_eq!(loads.get(), 1);
    assert!(l.drivers_loaded);
    let other = l.devices.iter().find(|d| names_of(d) == "other0").unwrap();
    assert!(std::ptr::eq(claimed_by(other), &ANY));
    assert_eq!(needed, [vec![abi::RDMA_DRIVER_RXE; 2], vec![0]]);

    // Upstream's own answer for an RXE device with everything loaded.
    let all = [Registered::from_static(&ANY), Registered::from_static(&BY_ID)];
    let v = provider::matching::try_drivers(&all, with_id(rec("rxe9", "uverbs9", 9, 0), abi::RDMA_DRIVER_RXE))
        .unwrap_or_else(|_| panic!("claimed"));
    // SAFETY: v was just allocated by `alloc` and is ours alone.
    unsafe {
        assert!(std::ptr::eq((*v).ops, &BY_ID));
        put(v.cast());
    }
    for d in l.devices.drain(..) {
        // SAFETY: the list's own reference, given back once.
        unsafe { put(d.0.cast()) };
    }
}
