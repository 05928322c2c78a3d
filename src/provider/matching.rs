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
use crate::abi::{self, verbs_device, verbs_match_ent};
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

/// The entries of a provider's match table before its sentinel (none when
/// it has no table), walked in place.
fn entries(ops: Registered) -> impl Iterator<Item = &'static verbs_match_ent> {
    let mut p = ops.ops().match_table;
    std::iter::from_fn(move || {
        if p.is_null() {
            return None;
        }
        // SAFETY: a provider's `match_table` is NULL (handled above) or a
        // static array ended by a `VERBS_MATCH_SENTINEL` entry, part of the
        // provider's static data like the ops table itself; `p` never moves
        // past the sentinel (it becomes NULL there).
        let e: &'static verbs_match_ent = unsafe { &*p };
        if u32::from(e.kind) == abi::VERBS_MATCH_SENTINEL {
            p = std::ptr::null();
            return None;
        }
        // SAFETY: `e` is not the sentinel, so the next entry is still
        // inside the array.
        p = unsafe { p.add(1) };
        Some(e)
    })
}

fn fnmatch(pattern: &CStr, value: &CStr) -> bool {
    // SAFETY: both arguments are NUL-terminated strings that outlive the
    // call; fnmatch only reads them.
    unsafe { libc::fnmatch(pattern.as_ptr(), value.as_ptr(), 0) == 0 }
}

/// The `fnmatch` pattern of a PCI entry (the fuzz targets and tests;
/// matching itself uses [`pci_matches`], which needs no string).
pub fn pci_pattern(vendor: u16, device: u16) -> CString {
    CString::new(format!("pci:v{vendor:08X}d{device:08X}sv*")).unwrap_or_default()
}

/// Does `value` match a PCI entry's pattern, `pci:v%08Xd%08Xsv*`?  The
/// pattern is literal up to its one trailing `*`, so `fnmatch` (flags 0)
/// accepts exactly the values that begin with the literal part: compared
/// here without formatting a string for every entry of every table.
fn pci_matches(vendor: u16, device: u16, value: &CStr) -> bool {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut lit = *b"pci:v00000000d00000000sv";
    for (v, at) in [(vendor, 5usize), (device, 14)] {
        for k in 0..4 {
            lit[at + 4 + k] = HEX[usize::from((v >> (12 - 4 * k)) & 0xf)];
        }
    }
    value.to_bytes().starts_with(&lit)
}

/// Upstream's `match_modalias`: one entry against one modalias value.
fn match_modalias(e: &verbs_match_ent, value: &CStr) -> bool {
    match u32::from(e.kind) {
        abi::VERBS_MATCH_MODALIAS => {
            // SAFETY: an entry of kind VERBS_MATCH_MODALIAS holds the
            // `modalias` member of its union (the provider ABI's rule).
            let p = unsafe { e.u.modalias };
            // SAFETY: non-NULL (checked first), it is the entry's pattern: a
            // NUL-terminated string in the provider's static data.
            !p.is_null() && fnmatch(unsafe { CStr::from_ptr(p) }, value)
        }
        abi::VERBS_MATCH_PCI => pci_matches(e.vendor, e.device, value),
        _ => false,
    }
}

/// The table entry listing the device's kernel driver id.
pub fn match_driver_id(ops: Registered, dev: &SysfsDev) -> *const verbs_match_ent {
    let id = dev.get().driver_id;
    if id == abi::RDMA_DRIVER_UNKNOWN {
        return std::ptr::null();
    }
    entries(ops)
        .find(|e| {
            u32::from(e.kind) == abi::VERBS_MATCH_DRIVER_ID
                // SAFETY: an entry of kind VERBS_MATCH_DRIVER_ID (checked
                // first) holds the `driver_id` member of its union.
                && unsafe { e.u.driver_id } == u64::from(id)
        })
        .map_or(std::ptr::null(), |e| e as *const verbs_match_ent)
}

/// The name a device is matched by: `rdma_device:N<ibdev name>`.
pub fn name_alias(dev: &SysfsDev) -> CString {
    let mut v = b"rdma_device:N".to_vec();
    v.extend_from_slice(record::cbytes(&dev.get().ibdev_name));
    CString::new(v).unwrap_or_default()
}

fn match_name(ops: Registered, dev: &SysfsDev) -> *const verbs_match_ent {
    let alias = name_alias(dev);
    entries(ops)
        .find(|e| match_modalias(e, &alias))
        .map_or(std::ptr::null(), |e| e as *const verbs_match_ent)
}

/// Upstream's `match_modalias_device`: reads `device/modalias` once per
/// device (an unreadable one counts as read, and empty).
fn match_modalias_device(ops: Registered, dev: &mut SysfsDev) -> *const verbs_match_ent {
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
    entries(ops)
        .find(|e| match_modalias(e, &value))
        .map_or(std::ptr::null(), |e| e as *const verbs_match_ent)
}

/// Upstream's `match_device`, with the reason when it says no.
fn match_device(ops: Registered, dev: &mut SysfsDev) -> Result<(), Refusal> {
    let t = ops.ops();
    if !t.match_table.is_null() {
        let mut m = match_driver_id(ops, dev);
        if m.is_null() {
            m = match_name(ops, dev);
        }
        if m.is_null() {
            m = match_modalias_device(ops, dev);
        }
        dev.get_mut().r#match = m;
    }
    if let Some(f) = t.match_device {
        // SAFETY: the provider's own match_device, given the record it is
        // asked about: a live, exclusively borrowed verbs_sysfs_dev.
        if !unsafe { f(dev.as_ptr()) } {
            return Err(Refusal::MatchDevice);
        }
    } else if dev.get().r#match.is_null() {
        return Err(Refusal::NoMatch);
    }
    let (abi, min, max) = (dev.get().abi_ver, t.match_min_abi_version, t.match_max_abi_version);
    if abi < min || abi > max {
        eprintln!(
            "{PFX}Warning: Driver {} does not support the kernel ABI of {abi} (supports {min} to {max}) for device {}",
            ops.name(),
            dev.ibdev_path()
        );
        return Err(Refusal::Abi { abi, min, max });
    }
    Ok(())
}

/// Fills the `ibv_device` part of a freshly allocated device.
///
/// # Safety
/// `vdev` is the non-NULL `verbs_device` that `ops`' `alloc_device` just
/// returned for `dev`, not yet shared with anyone.
unsafe fn fill(vdev: *mut verbs_device, ops: Registered, dev: &SysfsDev) -> bool {
    // SAFETY: the caller guarantees `vdev` is a live verbs_device that only
    // we can reach, so a unique reference to it is sound.
    let v = unsafe { &mut *vdev };
    v.ops = ops.as_ptr();
    v.refcount.store(1, Ordering::SeqCst);
    let s = dev.get();
    let d = &mut v.device;
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
    v.sysfs = dev.as_ptr();
    true
}

/// Upstream's `try_driver`: one provider for one device.
pub fn try_driver(ops: Registered, dev: &mut SysfsDev) -> Result<*mut verbs_device, Refusal> {
    match_device(ops, dev)?;
    let vdev = match ops.ops().alloc_device {
        // SAFETY: the provider's own alloc_device, given the record it
        // matched: a live verbs_sysfs_dev (the provider may keep pointers
        // into it; it is freed only with the device).
        Some(f) => unsafe { f(dev.as_ptr()) },
        None => std::ptr::null_mut(),
    };
    if vdev.is_null() {
        eprintln!("{PFX}Fatal: couldn't allocate device for {}", dev.ibdev_path());
        return Err(Refusal::AllocFailed);
    }
    // SAFETY: vdev is the non-NULL device alloc_device just returned for
    // this record; nothing else has seen it yet.
    if !unsafe { fill(vdev, ops, dev) } {
        if let Some(u) = ops.ops().uninit_device {
            // SAFETY: the provider's destructor for the device it just
            // allocated, called once; the device was never handed out.
            unsafe { u(vdev) };
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

fn attempt(ops: Registered, dev: &mut SysfsDev) -> Option<*mut verbs_device> {
    match try_driver(ops, dev) {
        Ok(v) => {
            log(
                LEVEL_DEBUG,
                format_args!(
                    "{PFX}device {}: claimed by provider '{}'\n",
                    dev.ibdev_name(),
                    ops.name()
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
                    ops.name(),
                    describe(dev, &r)
                ),
            );
            None
        }
    }
}

/// The passes of upstream's `try_drivers`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Passes {
    /// Both: the providers whose table lists the device's driver id, then
    /// every provider (upstream's `try_drivers`).
    Both,
    /// Only the first.
    DriverId,
    /// Only the second (after the first was done with the same providers
    /// listing the id).
    Rest,
}

/// Upstream's `try_drivers`: the device claimed by the first provider that
/// takes it (which then owns the sysfs record), or the record back.
pub fn try_drivers(drivers: &[Registered], dev: SysfsDev) -> Result<*mut verbs_device, SysfsDev> {
    try_drivers_passes(drivers, dev, Passes::Both)
}

/// [`try_drivers`] with only some of its passes.
pub fn try_drivers_passes(
    drivers: &[Registered],
    mut dev: SysfsDev,
    passes: Passes,
) -> Result<*mut verbs_device, SysfsDev> {
    if passes != Passes::Rest && dev.get().driver_id != abi::RDMA_DRIVER_UNKNOWN {
        for &d in drivers {
            if !match_driver_id(d, &dev).is_null() {
                if let Some(v) = attempt(d, &mut dev) {
                    dev.into_raw();
                    return Ok(v);
                }
            }
        }
    }
    if passes == Passes::DriverId {
        return Err(dev);
    }
    for &d in drivers {
        if let Some(v) = attempt(d, &mut dev) {
            dev.into_raw();
            return Ok(v);
        }
    }
    Err(dev)
}

/// Whether upstream's first pass is sure to hand the device to a provider
/// among `drivers` without any side effect on the way: the first of them
/// whose table lists the device's driver id takes it by table, without a
/// `match_device` of its own, and serves the device's kernel ABI.  (Only
/// its `alloc_device` may still fail.)
pub fn claims_by_driver_id(drivers: &[Registered], dev: &SysfsDev) -> bool {
    let Some(&d) = drivers.iter().find(|&&d| !match_driver_id(d, dev).is_null()) else {
        return false;
    };
    let t = d.ops();
    let abi = dev.get().abi_ver;
    t.match_device.is_none() && abi >= t.match_min_abi_version && abi <= t.match_max_abi_version
}

#[cfg(test)]
mod tests;
