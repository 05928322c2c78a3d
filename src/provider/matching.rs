//! Which provider claims a device, in upstream's order: first every
//! provider whose table lists the kernel's driver id, then every provider
//! in registration order; for one provider: its table (driver id, then
//! `rdma_device:N<name>`, then the device's modalias, `fnmatch` patterns
//! and PCI vendor/device), then its `match_device`, then its kernel ABI
//! range, then `alloc_device`.  The device that `alloc_device` returns is
//! filled in as upstream does.

use std::ffi::{CStr, CString};
use std::sync::atomic::Ordering;

use super::Registered;
use crate::abi::{self, verbs_device, verbs_device_ops, verbs_match_ent};
use crate::device::record::{self, cstr, set_cstr, SysfsDev};
use crate::log::{log, LEVEL_DEBUG, PFX};

/// Why a provider did not claim a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No table entry matched (and no `match_device` to ask).
    NoMatch,
    /// The provider's `match_device` said no.
    MatchDevice,
    /// The device's kernel ABI is outside the provider's range.
    Abi { abi: u32, min: u32, max: u32 },
    /// `alloc_device` returned NULL (or is missing).
    AllocFailed,
    /// The device's sysfs path does not fit `ibv_device.dev_path`.
    PathTooLong,
}

/// The entries of a match table before its sentinel.
///
/// # Safety
/// `t` is NULL or a sentinel-terminated table.
unsafe fn entries(t: *const verbs_match_ent) -> Vec<*const verbs_match_ent> {
    let mut v = Vec::new();
    if t.is_null() {
        return v;
    }
    let mut p = t;
    while u32::from((*p).kind) != abi::VERBS_MATCH_SENTINEL {
        v.push(p);
        p = p.add(1);
    }
    v
}

fn fnmatch(pattern: &CStr, value: &CStr) -> bool {
    // SAFETY: both are NUL-terminated.
    unsafe { libc::fnmatch(pattern.as_ptr(), value.as_ptr(), 0) == 0 }
}

/// The `fnmatch` pattern of a PCI entry.
pub fn pci_pattern(vendor: u16, device: u16) -> CString {
    CString::new(format!("pci:v{vendor:08X}d{device:08X}sv*")).unwrap_or_default()
}

/// Upstream's `match_modalias`: one entry against one modalias value.
///
/// # Safety
/// `e` points to a valid entry.
unsafe fn match_modalias(e: *const verbs_match_ent, value: &CStr) -> bool {
    match u32::from((*e).kind) {
        abi::VERBS_MATCH_MODALIAS => {
            let p = (*e).u.modalias;
            !p.is_null() && fnmatch(CStr::from_ptr(p), value)
        }
        abi::VERBS_MATCH_PCI => fnmatch(&pci_pattern((*e).vendor, (*e).device), value),
        _ => false,
    }
}

/// The table entry listing the device's kernel driver id.
///
/// # Safety
/// `ops` is a registered provider's table.
pub unsafe fn match_driver_id(ops: *const verbs_device_ops, dev: &SysfsDev) -> *const verbs_match_ent {
    let id = dev.get().driver_id;
    if id == abi::RDMA_DRIVER_UNKNOWN {
        return std::ptr::null();
    }
    entries((*ops).match_table)
        .into_iter()
        .find(|&e| u32::from((*e).kind) == abi::VERBS_MATCH_DRIVER_ID && (*e).u.driver_id == u64::from(id))
        .unwrap_or(std::ptr::null())
}

/// The name a device is matched by: `rdma_device:N<ibdev name>`.
pub fn name_alias(dev: &SysfsDev) -> CString {
    let mut v = b"rdma_device:N".to_vec();
    v.extend_from_slice(record::cbytes(&dev.get().ibdev_name));
    CString::new(v).unwrap_or_default()
}

unsafe fn match_name(ops: *const verbs_device_ops, dev: &SysfsDev) -> *const verbs_match_ent {
    let alias = name_alias(dev);
    entries((*ops).match_table)
        .into_iter()
        .find(|&e| match_modalias(e, &alias))
        .unwrap_or(std::ptr::null())
}

/// Upstream's `match_modalias_device`: reads `device/modalias` once per
/// device (an unreadable one counts as read, and empty).
unsafe fn match_modalias_device(ops: *const verbs_device_ops, dev: &mut SysfsDev) -> *const verbs_match_ent {
    if dev.get().flags & abi::VSYSFS_READ_MODALIAS == 0 {
        dev.get_mut().flags |= abi::VSYSFS_READ_MODALIAS;
        match crate::device::sysfs::read_ibdev(dev, b"device/modalias", 512) {
            Some(v) if !v.is_empty() => {
                set_cstr(&mut dev.get_mut().modalias, &v);
            }
            _ => {
                dev.get_mut().modalias[0] = 0;
                return std::ptr::null();
            }
        }
    }
    let value = record::as_cstr(&dev.get().modalias).to_owned();
    entries((*ops).match_table)
        .into_iter()
        .find(|&e| match_modalias(e, &value))
        .unwrap_or(std::ptr::null())
}

/// Upstream's `match_device`, with the reason when it says no.
unsafe fn match_device(ops: *const verbs_device_ops, dev: &mut SysfsDev) -> Result<(), Refusal> {
    if !(*ops).match_table.is_null() {
        let mut m = match_driver_id(ops, dev);
        if m.is_null() {
            m = match_name(ops, dev);
        }
        if m.is_null() {
            m = match_modalias_device(ops, dev);
        }
        dev.get_mut().r#match = m;
    }
    if let Some(f) = (*ops).match_device {
        if !f(dev.as_ptr()) {
            return Err(Refusal::MatchDevice);
        }
    } else if dev.get().r#match.is_null() {
        return Err(Refusal::NoMatch);
    }
    let (abi, min, max) = (
        dev.get().abi_ver,
        (*ops).match_min_abi_version,
        (*ops).match_max_abi_version,
    );
    if abi < min || abi > max {
        eprint!(
            "{PFX}Warning: Driver {} does not support the kernel ABI of {abi} (supports {min} to {max}) for device {}\n",
            Registered(ops).name(),
            dev.ibdev_path()
        );
        return Err(Refusal::Abi { abi, min, max });
    }
    Ok(())
}

/// Fills the `ibv_device` part of a freshly allocated device.
unsafe fn fill(vdev: *mut verbs_device, ops: *const verbs_device_ops, dev: &SysfsDev) -> bool {
    (*vdev).ops = ops;
    (*vdev).refcount.store(1, Ordering::SeqCst);
    let s = dev.get();
    let d = &mut (*vdev).device;
    d.node_type = s.node_type;
    d.transport_type = record::transport_of(s.node_type);
    set_cstr(&mut d.dev_name, record::cbytes(&s.sysfs_name));
    let path = [
        record::sysfs_root(),
        b"/class/infiniband_verbs/",
        record::cbytes(&s.sysfs_name),
    ]
    .concat();
    if !set_cstr(&mut d.dev_path, &path) {
        return false;
    }
    set_cstr(&mut d.name, record::cbytes(&s.ibdev_name));
    set_cstr(&mut d.ibdev_path, record::cbytes(&s.ibdev_path));
    (*vdev).sysfs = dev.as_ptr();
    true
}

/// Upstream's `try_driver`: one provider for one device.
///
/// # Safety
/// `ops` is a registered provider's table.
pub unsafe fn try_driver(ops: *const verbs_device_ops, dev: &mut SysfsDev) -> Result<*mut verbs_device, Refusal> {
    match_device(ops, dev)?;
    let vdev = match (*ops).alloc_device {
        Some(f) => f(dev.as_ptr()),
        None => std::ptr::null_mut(),
    };
    if vdev.is_null() {
        eprint!("{PFX}Fatal: couldn't allocate device for {}\n", dev.ibdev_path());
        return Err(Refusal::AllocFailed);
    }
    if !fill(vdev, ops, dev) {
        if let Some(u) = (*ops).uninit_device {
            u(vdev);
        }
        return Err(Refusal::PathTooLong);
    }
    Ok(vdev)
}

fn describe(dev: &SysfsDev, r: &Refusal) -> String {
    let s = dev.get();
    match r {
        Refusal::NoMatch => format!(
            "no entry of its table matches (driver id {}, {}, modalias '{}')",
            s.driver_id,
            name_alias(dev).to_string_lossy(),
            cstr(&s.modalias)
        ),
        Refusal::MatchDevice => "its match_device() refused the device".into(),
        Refusal::Abi { abi, min, max } => format!("kernel ABI {abi} is outside its range {min} to {max}"),
        Refusal::AllocFailed => "its alloc_device() failed".into(),
        Refusal::PathTooLong => "the device's sysfs path is too long".into(),
    }
}

fn attempt(ops: *const verbs_device_ops, dev: &mut SysfsDev) -> Option<*mut verbs_device> {
    // SAFETY: `ops` comes from the registry.
    match unsafe { try_driver(ops, dev) } {
        Ok(v) => {
            log(
                LEVEL_DEBUG,
                format_args!(
                    "{PFX}device {}: claimed by provider '{}'\n",
                    dev.ibdev_name(),
                    Registered(ops).name()
                ),
            );
            Some(v)
        }
        Err(r) => {
            log(
                LEVEL_DEBUG,
                format_args!(
                    "{PFX}device {}: provider '{}' does not claim it: {}\n",
                    dev.ibdev_name(),
                    Registered(ops).name(),
                    describe(dev, &r)
                ),
            );
            None
        }
    }
}

/// Upstream's `try_drivers`: the device claimed by the first provider that
/// takes it (which then owns the sysfs record), or the record back.
pub fn try_drivers(drivers: &[Registered], mut dev: SysfsDev) -> Result<*mut verbs_device, SysfsDev> {
    if dev.get().driver_id != abi::RDMA_DRIVER_UNKNOWN {
        for d in drivers {
            // SAFETY: registered table.
            if !unsafe { match_driver_id(d.0, &dev) }.is_null() {
                if let Some(v) = attempt(d.0, &mut dev) {
                    dev.into_raw();
                    return Ok(v);
                }
            }
        }
    }
    for d in drivers {
        if let Some(v) = attempt(d.0, &mut dev) {
            dev.into_raw();
            return Ok(v);
        }
    }
    Err(dev)
}

#[cfg(test)]
mod tests;
