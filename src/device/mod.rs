//! The process-wide device list: one-time initialisation (environment,
//! sysfs root, memlock check) and discovery.
//!
//! Discovery follows upstream's order — RDMA netlink first, then
//! `$SYSFS_PATH/class/infiniband_verbs` — and upstream's results where
//! nothing usable is found: no RDMA support in the kernel at all gives
//! `ENOSYS`; RDMA support without devices gives an empty list.  Devices that
//! are found are handed to provider drivers; loading provider drivers is not
//! implemented yet, so every device found stays unmatched and is dropped,
//! exactly as upstream drops a device no driver claims (with the same
//! `IBV_SHOW_WARNINGS` message).

use std::sync::Mutex;

use crate::kernel::netlink;

/// `IB_USER_VERBS_MIN_ABI_VERSION` / `IB_USER_VERBS_MAX_ABI_VERSION`.
pub const MIN_ABI: i64 = 3;
pub const MAX_ABI: i64 = 6;

pub const PFX: &str = "libibverbs: ";

/// `verbs_allow_disassociate_destroy`, exported for providers.
#[no_mangle]
pub static mut verbs_allow_disassociate_destroy: bool = false;

struct ListState {
    initialized: bool,
    abi_ver: i64,
}

static LIST: Mutex<ListState> = Mutex::new(ListState { initialized: false, abi_ver: 0 });

/// Upstream's `ibverbs_init`, run once before the first discovery.
fn init_once() {
    if crate::env::is_enabled("RDMAV_FORK_SAFE") || crate::env::is_enabled("IBV_FORK_SAFE") {
        if crate::fork::init() != 0 {
            eprint!("{PFX}Warning: fork()-safety requested but init failed\n");
        }
    }
    let allow = crate::env::is_enabled("RDMAV_ALLOW_DISASSOC_DESTROY")
        || crate::env::is_enabled("MLX4_DEVICE_FATAL_CLEANUP");
    // SAFETY: written once under the list lock before any provider runs.
    unsafe { *std::ptr::addr_of_mut!(verbs_allow_disassociate_destroy) = allow };
    let _ = crate::sysfs::path();
    check_memlock_limit();
    crate::log::init();
}

fn check_memlock_limit() {
    // SAFETY: plain syscalls; rlimit is a valid out-parameter.
    unsafe {
        if libc::geteuid() == 0 {
            return;
        }
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) != 0 {
            eprint!("{PFX}Warning: getrlimit(RLIMIT_MEMLOCK) failed.");
            return;
        }
        if rl.rlim_cur <= 32768 {
            eprint!(
                "{PFX}Warning: RLIMIT_MEMLOCK is {} bytes.\n    This will severely limit memory registrations.\n",
                rl.rlim_cur
            );
        }
    }
}

/// A device seen by discovery (before any provider claimed it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub ibdev_name: String,
}

/// Netlink discovery: `Err` when RDMA netlink is unavailable (then sysfs is
/// tried), else the devices the kernel reports.
fn find_nl() -> Result<Vec<Found>, i32> {
    let mut s = netlink::Socket::open()?;
    s.send(netlink::nl_type(netlink::RDMA_NL_NLDEV, netlink::RDMA_NLDEV_CMD_GET), true, &[])?;
    let mut out = Vec::new();
    s.collect(|_, attrs| {
        if let Some(n) = attrs.iter().find(|a| a.kind == netlink::RDMA_NLDEV_ATTR_DEV_NAME) {
            if let Some(n) = n.str() {
                out.push(Found { ibdev_name: n.to_owned() });
            }
        }
    })?;
    Ok(out)
}

/// sysfs discovery: `class/infiniband_verbs/*/ibdev`.  ENOSYS when the class
/// directory does not exist (no RDMA support).
fn find_sysfs() -> Result<Vec<Found>, i32> {
    let class = crate::sysfs::root().join("class/infiniband_verbs");
    let rd = std::fs::read_dir(&class).map_err(|_| libc::ENOSYS)?;
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let name = ent.file_name();
        if name.as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        let dir = class.join(&name);
        if !dir.is_dir() {
            continue;
        }
        if let Some(ibdev) = crate::sysfs::read_string(&dir.join("ibdev")) {
            out.push(Found { ibdev_name: ibdev });
        }
    }
    Ok(out)
}

fn check_abi_version(st: &mut ListState) -> Result<(), i32> {
    if st.abi_ver != 0 {
        return Ok(());
    }
    let p = crate::sysfs::root().join("class/infiniband_verbs/abi_version");
    let mut buf = [0u8; 8];
    let n = match crate::sysfs::read_into(&p, &mut buf) {
        crate::sysfs::ReadOutcome::Len(n) => n,
        crate::sysfs::ReadOutcome::Err(_) => return Err(libc::ENOSYS),
    };
    let s = String::from_utf8_lossy(&buf[..n]);
    let digits: String = s.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    st.abi_ver = digits.parse().unwrap_or(0);
    if st.abi_ver < MIN_ABI || st.abi_ver > MAX_ABI {
        eprint!(
            "{PFX}Fatal: kernel ABI version {} doesn't match library version {}.\n",
            st.abi_ver, MAX_ABI
        );
        let v = st.abi_ver;
        st.abi_ver = v; // upstream keeps the value it read
        return Err(libc::ENOSYS);
    }
    Ok(())
}

/// Rescans and returns the devices that a provider claimed (`ibv_device *`
/// values), or an errno value.
pub fn scan() -> Result<Vec<*mut crate::abi::ibv_device>, i32> {
    let mut st = LIST.lock().unwrap_or_else(|p| p.into_inner());
    if !st.initialized {
        init_once();
        st.initialized = true;
    }
    let found = match find_nl() {
        Ok(v) => v,
        Err(_) => find_sysfs()?,
    };
    if !found.is_empty() {
        check_abi_version(&mut st)?;
    }
    // No provider is loaded yet: every device stays unmatched.
    for f in &found {
        if crate::env::get("IBV_SHOW_WARNINGS").is_some() {
            eprint!("{PFX}Warning: no userspace device-specific driver found for {}\n", f.ibdev_name);
        }
    }
    Ok(Vec::new())
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
