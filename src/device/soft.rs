//! Software devices: the one extension of discovery beyond upstream.
//!
//! A software RDMA device (our `swrdma` provider) has no kernel counterpart,
//! so neither netlink nor sysfs can report it.  It exists only where someone
//! asked for it: `RDMAV_SOFT_DEVICES=swr0[,swr1…]`.  For each name discovery
//! adds a device record whose
//!
//! * `modalias` is `swrdma:<name>` (the provider matches on it),
//! * `flags` carry [`VSYSFS_SOFT`] (no character device is opened for it),
//! * `ibdev_path` is a per-user directory `<rt>/ibverbs-soft-<uid>/<name>`
//!   (`<rt>` = `$XDG_RUNTIME_DIR` when set and owned by the user, else
//!   `/tmp`) in which the provider keeps a sysfs-shaped description of the
//!   device (GIDs, P_Keys, node GUID), read by the same generic code that
//!   reads a real device's sysfs.  The per-user directory is created with
//!   mode 0700 and refused when it belongs to someone else or is open to
//!   group/others.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Our private bit in `verbs_sysfs_dev.flags`: a device without a kernel
/// character device.  Upstream's flags use the low bits only.
pub const VSYSFS_SOFT: u32 = 1 << 31;

/// The environment variable that enables software devices.
pub const ENV: &str = "RDMAV_SOFT_DEVICES";

/// One requested software device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoftDevice {
    pub name: String,
    pub ibdev_path: PathBuf,
    pub modalias: String,
}

/// Device names from the environment: comma separated, each 1–63 of
/// `[A-Za-z0-9_-]` (anything else is ignored with a warning).
pub fn requested_names(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let ok = n.len() < 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            eprint!("libibverbs: Warning: ignoring software device name '{n}' in {ENV}\n");
            continue;
        }
        if !out.iter().any(|o| o == n) {
            out.push(n.to_owned());
        }
    }
    out
}

fn private_dir_ok(p: &Path, uid: u32) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(m) => m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0,
        Err(_) => false,
    }
}

/// The per-user directory, created if needed; `None` when it cannot be
/// made safe.
pub fn user_dir() -> Option<PathBuf> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let rt = crate::env::get("XDG_RUNTIME_DIR")
        .map(|v| PathBuf::from(v.to_string_lossy().into_owned()))
        .filter(|p| p.is_absolute())
        .filter(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_dir() && m.uid() == uid)
                .unwrap_or(false)
        })
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let dir = rt.join(format!("ibverbs-soft-{uid}"));
    if !dir.exists() {
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    }
    if private_dir_ok(&dir, uid) {
        Some(dir)
    } else {
        eprint!(
            "libibverbs: Warning: {} is not a private directory of uid {uid}; software devices disabled\n",
            dir.display()
        );
        None
    }
}

/// The names requested by the environment (no directory is created).
pub fn requested_env() -> Vec<String> {
    if crate::env::is_setuid() {
        return Vec::new();
    }
    match crate::env::get(ENV) {
        Some(v) => requested_names(&v.to_string_lossy()),
        None => Vec::new(),
    }
}

/// The software devices requested by the environment (setuid programs
/// ignore the variable, like the other user-controlled paths).
pub fn requested() -> Vec<SoftDevice> {
    if crate::env::is_setuid() {
        return Vec::new();
    }
    let Some(v) = crate::env::get(ENV) else {
        return Vec::new();
    };
    let names = requested_names(&v.to_string_lossy());
    if names.is_empty() {
        return Vec::new();
    }
    let Some(dir) = user_dir() else { return Vec::new() };
    names
        .into_iter()
        .filter_map(|name| {
            let p = dir.join(&name);
            if !p.exists() {
                let _ = std::fs::DirBuilder::new().mode(0o700).create(&p);
            }
            let m = std::fs::symlink_metadata(&p).ok()?;
            if !m.is_dir() {
                return None;
            }
            let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700));
            Some(SoftDevice {
                modalias: format!("swrdma:{name}"),
                ibdev_path: p,
                name,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::requested_names;
    #[test]
    fn names() {
        assert_eq!(requested_names("swr0, swr1,,swr0"), vec!["swr0", "swr1"]);
        assert!(requested_names("../x").is_empty());
        assert!(requested_names("").is_empty());
    }
}
