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
use crate::provider::{self, Registered};

#[cfg(test)]
mod tests;

/// A device in the list (the list holds one reference).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Dev(pub *mut verbs_device);

// SAFETY: devices are shared C objects whose lifetime is governed by their
// atomic reference count.
unsafe impl Send for Dev {}

/// Upstream's device list and its companions.
#[derive(Default)]
pub struct List {
    /// Front = head of upstream's list (new devices are added at the front).
    pub devices: VecDeque<Dev>,
    pub drivers_loaded: bool,
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
    (*dev.cast::<verbs_device>()).refcount.fetch_add(1, Ordering::SeqCst);
}

/// Drops a reference; the last one frees the sysfs record and hands the
/// device back to its provider (`uninit_device`).
///
/// # Safety
/// `dev` is a live device and the caller owns one reference to it.
pub unsafe fn put(dev: *mut ibv_device) {
    let v = dev.cast::<verbs_device>();
    if (*v).refcount.fetch_sub(1, Ordering::SeqCst) == 1 {
        let ops = (*v).ops;
        libc::free((*v).sysfs.cast());
        (*v).sysfs = std::ptr::null_mut();
        if !ops.is_null() {
            if let Some(u) = (*ops).uninit_device {
                u(v);
            }
        }
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
    mut found: VecDeque<SysfsDev>,
    drivers: &dyn Fn() -> Vec<Registered>,
    load: &mut dyn FnMut(),
) -> usize {
    let mut count = 0;
    let old: Vec<Dev> = list.devices.drain(..).collect();
    for d in old {
        // SAFETY: listed devices are live and own their sysfs record.
        let known = unsafe { &*(*d.0).sysfs };
        if let Some(i) = found.iter().position(|f| same(known, f.get())) {
            found.remove(i);
            list.devices.push_back(d);
            count += 1;
        } else {
            // SAFETY: the list's own reference.
            unsafe { put(d.0.cast()) };
        }
    }
    count += try_all(&drivers(), &mut found, list);
    if !found.is_empty() && !list.drivers_loaded {
        load();
        list.drivers_loaded = true;
        count += try_all(&drivers(), &mut found, list);
    }
    for d in found {
        if crate::env::get("IBV_SHOW_WARNINGS").is_some() {
            eprint!(
                "{}Warning: no userspace device-specific driver found for {}\n",
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
