//! The process-wide device list: one-time initialisation (environment,
//! sysfs root, memlock check, logging) and discovery, as rdma-core 44 does
//! it.
//!
//! * [`netlink`] — discovery through RDMA netlink (upstream's first choice);
//! * [`sysfs`] — discovery through `$SYSFS_PATH/class/infiniband_verbs`
//!   (the fallback), the `abi_version` check, the `/dev/infiniband` check;
//! * [`record`] — the `verbs_sysfs_dev` records both produce;
//! * [`list`] — the list across rescans, reference counts, handing devices
//!   to the providers (`crate::provider`);
//! * [`crate::soft`] — software devices (`RDMAV_SOFT_DEVICES`), our one
//!   extension: their records are added to what the kernel reports, and
//!   their provider is loaded after upstream's.
//!
//! Results where nothing usable is found match upstream: no RDMA support in
//! the kernel at all gives `ENOSYS`; support without devices an empty list.

pub mod list;
pub mod netlink;
pub mod record;
pub mod sysfs;

use std::sync::Mutex;

use crate::abi::ibv_device;
use crate::log::PFX;

use crate::kernel::state::{abi_ver, set_abi_ver};

struct State {
    initialized: bool,
    list: list::List,
}

static STATE: Mutex<State> = Mutex::new(State {
    initialized: false,
    list: list::List {
        devices: std::collections::VecDeque::new(),
        drivers_loaded: false,
        partly_loaded: false,
    },
});

/// Upstream's `ibverbs_init`, run once before the first discovery.
fn init_once() {
    let fork_safe = crate::env::is_enabled("RDMAV_FORK_SAFE") || crate::env::is_enabled("IBV_FORK_SAFE");
    if fork_safe && crate::fork::init() != 0 {
        eprintln!("{PFX}Warning: fork()-safety requested but init failed");
    }
    let allow =
        crate::env::is_enabled("RDMAV_ALLOW_DISASSOC_DESTROY") || crate::env::is_enabled("MLX4_DEVICE_FATAL_CLEANUP");
    crate::kernel::state::verbs_allow_disassociate_destroy.store(allow, std::sync::atomic::Ordering::Relaxed);
    let _ = crate::sysfs::path();
    check_memlock_limit();
    crate::log::init();
}

fn check_memlock_limit() {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        return;
    }
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `struct rlimit` through its pointer, and
    // `rl` is a live, writable one.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) } != 0 {
        eprint!("{PFX}Warning: getrlimit(RLIMIT_MEMLOCK) failed.");
        return;
    }
    if rl.rlim_cur <= 32768 {
        eprintln!(
            "{PFX}Warning: RLIMIT_MEMLOCK is {} bytes.\n    This will severely limit memory registrations.",
            rl.rlim_cur
        );
    }
}

/// Upstream's `check_abi_version` (only asked when devices were found).
fn check_abi_version() -> Result<(), i32> {
    if abi_ver() != 0 {
        return Ok(());
    }
    let (verdict, v) = sysfs::read_abi_version();
    set_abi_ver(v);
    match verdict {
        sysfs::AbiCheck::Ok => Ok(()),
        sysfs::AbiCheck::Unreadable => Err(libc::ENOSYS),
        sysfs::AbiCheck::Mismatch(v) => {
            eprintln!(
                "{PFX}Fatal: kernel ABI version {v} doesn't match library version {}.",
                crate::abi::IB_USER_VERBS_MAX_ABI_VERSION
            );
            Err(libc::ENOSYS)
        }
    }
}

/// Rescans, and returns the listed devices with one reference taken on each
/// for the caller (released with [`put`]), or an errno value.
pub fn get_list() -> Result<Vec<*mut ibv_device>, i32> {
    let mut st = STATE.lock().unwrap_or_else(|p| p.into_inner());
    if !st.initialized {
        init_once();
        st.initialized = true;
    }
    let soft = crate::soft::records();
    let mut found = match netlink::find() {
        Ok(v) => v,
        Err(_) => match sysfs::find() {
            Ok(v) => v,
            // Without kernel RDMA support only software devices can exist.
            Err(e) if soft.is_empty() => return Err(e),
            Err(_) => Default::default(),
        },
    };
    if !found.is_empty() {
        check_abi_version()?;
    }
    for d in soft {
        found.push_front(d);
    }
    list::update_lazily(
        &mut st.list,
        found,
        &crate::provider::registered,
        &mut crate::provider::load::load_needed,
        &mut || crate::provider::load::load_drivers(crate::soft::load_provider),
    );
    let out: Vec<*mut ibv_device> = st.list.devices.iter().map(|d| d.0.cast::<ibv_device>()).collect();
    for &d in &out {
        // SAFETY: `d` is in the list, which holds a reference to it, and the
        // list lock (`st`) is held, so no rescan can drop it meanwhile.
        unsafe { list::hold(d) };
    }
    Ok(out)
}

/// Takes a reference to a listed device (an open context holds one).
///
/// `dev` must be NULL or a device this library handed out that the caller
/// still holds a reference to.  This is an `unsafe` contract on a safe
/// function: its callers (src/api/list.rs, src/context/mod.rs) call it
/// outside `unsafe` blocks today; it should become `unsafe fn`.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn hold(dev: *mut ibv_device) {
    if !dev.is_null() {
        // SAFETY: non-NULL, and by this function's contract a live listed
        // device (the caller's reference keeps it alive).
        unsafe { list::hold(dev) }
    }
}

/// Releases a reference taken by [`get_list`] or [`hold`].
///
/// `dev` must be NULL or a device whose reference the caller owns and gives
/// up here (same caveat as [`hold`]: it should become `unsafe fn`).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn put(dev: *mut ibv_device) {
    if !dev.is_null() {
        // SAFETY: non-NULL, a live device, and by this function's contract
        // the caller owns the reference it hands back.
        unsafe { list::put(dev) }
    }
}

/// Guards the mutable fields of devices' sysfs records (upstream's
/// `dev_list_lock`).
pub static DEV_LOCK: Mutex<()> = Mutex::new(());

/// Parses a sysfs `node_guid` ("xxxx:xxxx:xxxx:xxxx", each part up to 16
/// bits as `%hx` reads it) into a host-order GUID.
pub fn parse_guid(text: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(text).ok()?;
    let mut guid = 0u64;
    let mut parts = s.splitn(4, ':');
    for i in 0..4 {
        let p = parts.next()?;
        // %hx skips leading whitespace, accepts an optional sign and 0x
        // prefix, and stops at the first non-hex character; the value is
        // truncated to 16 bits.
        let p = p.trim_start();
        let (neg, p) = match p.as_bytes().first() {
            Some(b'-') => (true, &p[1..]),
            Some(b'+') => (false, &p[1..]),
            _ => (false, p),
        };
        let p = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")).unwrap_or(p);
        let hex: String = p.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        if hex.is_empty() {
            return None;
        }
        // Anything after the digits (other than the separator consumed by
        // splitn) makes the next %hx fail, except for the last part.
        if i < 3 && hex.len() != p.len() {
            return None;
        }
        let v = u128::from_str_radix(&hex, 16).unwrap_or(u128::MAX) as u64;
        let mut v = (v & 0xffff) as u16;
        if neg {
            v = v.wrapping_neg();
        }
        guid = (guid << 16) | v as u64;
    }
    Some(guid)
}

#[cfg(test)]
mod tests {
    use super::parse_guid;
    #[test]
    fn guid() {
        assert_eq!(parse_guid(b"0002:c903:0042:f1b0"), Some(0x0002_c903_0042_f1b0));
        assert_eq!(parse_guid(b"1:2:3:4"), Some(0x0001_0002_0003_0004));
        assert_eq!(parse_guid(b"1:2:3"), None);
        assert_eq!(parse_guid(b"zz:2:3:4"), None);
        assert_eq!(parse_guid(b"1:2:3:4xyz"), Some(0x0001_0002_0003_0004));
    }
}
