//! The process-wide device list and device reference counts (upstream's
//! `ibverbs_get_device_list`, `ibverbs_device_hold` / `_put`).
//!
//! Every rescan keeps a known device when its uverbs name and index (and,
//! for sysfs-found devices, creation time) are unchanged, drops the list's
//! reference to devices that vanished, and offers new devices to the
//! providers; providers are loaded once per process, and only when a
//! device is left unclaimed.  A device lives until its last reference (the
//! list's, each returned list's, each open context's) is put.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use super::record::{cbytes, SysfsDev};
use crate::abi::{ibv_device, verbs_device, verbs_sysfs_dev};
use crate::provider::matching::Passes;
use crate::provider::{self, Registered};

#[cfg(test)]
mod tests;

/// A device in the list (the list holds one reference).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Dev(pub *mut verbs_device);

// SAFETY: a `Dev` is one counted reference to a `verbs_device`; the count
// is atomic and the library only reads or writes the device's other fields
// under the device list lock (or after the last reference is gone), so the
// reference may be owned by, and put from, any thread.
unsafe impl Send for Dev {}

/// Upstream's device list and its companions.
#[derive(Default)]
pub struct List {
    /// Front = head of upstream's list (new devices are added at the front).
    pub devices: VecDeque<Dev>,
    /// Every provider is loaded (upstream's `drivers_loaded`).
    pub drivers_loaded: bool,
    /// Some are: the ones devices needed so far.
    pub partly_loaded: bool,
}

/// Upstream's `same_sysfs_dev`.
pub fn same(a: &verbs_sysfs_dev, b: &verbs_sysfs_dev) -> bool {
    cbytes(&a.sysfs_name) == cbytes(&b.sysfs_name)
        && a.ibdev_idx == b.ibdev_idx
        && !(a.ibdev_idx == -1
            && (a.time_created.tv_sec != b.time_created.tv_sec || a.time_created.tv_nsec != b.time_created.tv_nsec))
}

/// Takes a reference to a device.
///
/// # Safety
/// `dev` is a live device (first member of a `verbs_device`).
pub unsafe fn hold(dev: *mut ibv_device) {
    // SAFETY: the caller guarantees `dev` is a live device, i.e. the
    // `ibv_device` at the start of a `verbs_device`; the count is atomic, so
    // a shared reference to it is enough.
    let refcount = unsafe { &(*dev.cast::<verbs_device>()).refcount };
    refcount.fetch_add(1, Ordering::SeqCst);
}

/// Drops a reference; the last one frees the sysfs record and hands the
/// device back to its provider (`uninit_device`).
///
/// # Safety
/// `dev` is a live device and the caller owns one reference to it.
pub unsafe fn put(dev: *mut ibv_device) {
    let v = dev.cast::<verbs_device>();
    // SAFETY: as in `hold`: a live device, and the count is atomic.
    let refcount = unsafe { &(*v).refcount };
    if refcount.fetch_sub(1, Ordering::SeqCst) != 1 {
        return;
    }
    // SAFETY: that was the last reference, so nobody else can reach the
    // device any more: we may read and write its fields.  `sysfs` is the
    // calloc'ed record the device took over from discovery
    // (`SysfsDev::into_raw`), or NULL; it is freed once and cleared.
    let ops = unsafe {
        libc::free((*v).sysfs.cast());
        (*v).sysfs = std::ptr::null_mut();
        (*v).ops
    };
    if ops.is_null() {
        return;
    }
    // SAFETY: `ops` is the table of the provider that allocated the device
    // (set when it was claimed); providers are never unloaded.
    let uninit = unsafe { (*ops).uninit_device };
    if let Some(u) = uninit {
        // SAFETY: the provider's own destructor for a device it allocated,
        // called once, after the last reference is gone.
        unsafe { u(v) };
    }
}

/// Offers every unclaimed record to the providers; claimed ones join the
/// list at the front.  Returns how many were claimed.
fn try_all(drivers: &[Registered], found: &mut VecDeque<SysfsDev>, list: &mut List) -> usize {
    let mut left = VecDeque::new();
    let mut n = 0;
    while let Some(d) = found.pop_front() {
        match provider::matching::try_drivers(drivers, d) {
            Ok(v) => {
                list.devices.push_front(Dev(v));
                n += 1;
            }
            Err(d) => left.push_back(d),
        }
    }
    *found = left;
    n
}

/// Reconciles the list with a fresh scan (`found`, newest first) and
/// returns the number of devices listed.  `drivers` reports the providers
/// registered so far; `load` loads more (called at most once per `List`).
pub fn update(
    list: &mut List,
    found: VecDeque<SysfsDev>,
    drivers: &dyn Fn() -> Vec<Registered>,
    load: &mut dyn FnMut(),
) -> usize {
    update_lazily(list, found, drivers, &mut |_| false, load)
}

/// [`update`], where `load_needed` may first load only the providers that
/// can claim devices of the given kernel driver ids (it returns false when
/// it cannot tell them, having loaded nothing).
///
/// The outcome is upstream's, which loads every provider: a device with a
/// driver id is offered first to the providers listing that id, in list
/// order, and `load_needed` loads all of those.  So when, for every new
/// device, the first of them surely takes it
/// ([`provider::matching::claims_by_driver_id`]), that first pass is done
/// with the providers loaded so far.  A device it leaves (an
/// `alloc_device` failed) has every provider loaded and gets the second
/// pass; so do the devices after it, both passes, as upstream.
pub fn update_lazily(
    list: &mut List,
    mut found: VecDeque<SysfsDev>,
    drivers: &dyn Fn() -> Vec<Registered>,
    load_needed: &mut dyn FnMut(&[u32]) -> bool,
    load: &mut dyn FnMut(),
) -> usize {
    let mut count = 0;
    let old: Vec<Dev> = list.devices.drain(..).collect();
    for d in old {
        // SAFETY: `d` is listed, so the list's reference keeps it alive,
        // and a listed device always has the sysfs record it was claimed
        // with (cleared only by the last put); `known` is dropped before
        // `d` can be put below.
        let known = unsafe { &*(*d.0).sysfs };
        if let Some(i) = found.iter().position(|f| same(known, f.get())) {
            found.remove(i);
            list.devices.push_back(d);
            count += 1;
        } else {
            // SAFETY: `d` was listed (live) and has just left the list: this
            // gives back the list's own reference, exactly once.
            unsafe { put(d.0.cast()) };
        }
    }
    // Upstream offers new devices to the providers registered so far (all
    // of them once loaded); with only some loaded, that is the step below.
    if !list.partly_loaded || list.drivers_loaded {
        count += try_all(&drivers(), &mut found, list);
    }
    if !found.is_empty() && !list.drivers_loaded {
        let ids: Vec<u32> = found.iter().map(|d| d.get().driver_id).collect();
        let mut regs = Vec::new();
        let some = load_needed(&ids);
        list.partly_loaded |= some;
        let sure = some && {
            regs = drivers();
            found.iter().all(|d| provider::matching::claims_by_driver_id(&regs, d))
        };
        if !sure {
            load();
            list.drivers_loaded = true;
            regs = drivers();
        }
        let mut left = VecDeque::new();
        while let Some(d) = found.pop_front() {
            let r = if list.drivers_loaded {
                provider::matching::try_drivers_passes(&regs, d, Passes::Both)
            } else {
                match provider::matching::try_drivers_passes(&regs, d, Passes::DriverId) {
                    Ok(v) => Ok(v),
                    Err(d) => {
                        load();
                        list.drivers_loaded = true;
                        regs = drivers();
                        provider::matching::try_drivers_passes(&regs, d, Passes::Rest)
                    }
                }
            };
            match r {
                Ok(v) => {
                    list.devices.push_front(Dev(v));
                    count += 1;
                }
                Err(d) => left.push_back(d),
            }
        }
        found = left;
    }
    for d in found {
        if crate::env::get("IBV_SHOW_WARNINGS").is_some() {
            eprintln!(
                "{}Warning: no userspace device-specific driver found for {}",
                crate::log::PFX,
                d.ibdev_name()
            );
        }
        crate::log::log(
            crate::log::LEVEL_INFO,
            format_args!(
                "{}no provider claimed device {} ({}, kernel ABI {}, driver id {}); {} provider(s) registered\n",
                crate::log::PFX,
                d.ibdev_name(),
                d.sysfs_name(),
                d.get().abi_ver,
                d.get().driver_id,
                drivers().len()
            ),
        );
    }
    count
}
