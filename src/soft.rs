//! Software devices: our one extension beyond upstream, and the one home of
//! everything that treats them specially.
//!
//! A software RDMA device (our `swrdma` provider) has no kernel counterpart,
//! so neither netlink nor sysfs can report it.  It exists only where someone
//! asked for it: `RDMAV_SOFT_DEVICES=swr0[,swr1…]` (ignored by setuid
//! programs, like the other user-controlled paths).  An entry
//! `<name>@<ifname>` (`rw0@veth1`) asks for a *wire* device: one bound to
//! network interface `<ifname>` (RoCE v2 on that interface, its GIDs made
//! from the interface's addresses by the provider); see [`requested_names`]
//! for the syntax.  This module gives
//!
//! * discovery ([`crate::device`]) the device [`records`] it adds to what the
//!   kernel reports, each with
//!   - `modalias` `swrdma:<name>`, or `swrdma:<name>@<ifname>` for a wire
//!     device (the provider matches on `swrdma:*` and reads the interface
//!     from it),
//!   - [`VSYSFS_SOFT`] in `flags` (no character device is opened for it),
//!   - `ibdev_path` a per-user directory `<rt>/ibverbs-soft-<uid>/<name>`
//!     (`<rt>` = `$XDG_RUNTIME_DIR` when set to an absolute path of a
//!     directory owned by the user that neither group nor others may write
//!     to, else `/tmp` (when it is sticky or closed to other writers), with
//!     a warning on stderr when the variable was set but refused) in which the provider keeps a sysfs-shaped description
//!     of the device (GIDs, P_Keys, node GUID), read by the same generic
//!     code that reads a real device's sysfs.  The per-user directory is
//!     created with mode 0700 and used only when, checked with `lstat`, it
//!     is a real directory (not a symlink) of the user with mode 0700 (else
//!     software devices are disabled, with a message on stderr); the
//!     provider opens every file in it with `O_NOFOLLOW`;
//! * provider loading the extra step [`load_provider`] (our provider beside
//!   this library or in the provider directory);
//! * the context layer [`is_soft`] (open no command fd);
//! * the verbs layer completion channels without a kernel
//!   ([`create_channel`], [`destroy_channel`]).
//!
//! Dependencies point one way: discovery → here → [`crate::provider`];
//! this module uses only the record type of [`crate::device`].

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::raw::c_int;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::abi::verbs_sysfs_dev;
use crate::device::record::{self, SysfsDev};
use crate::log::{log, LEVEL_WARN, PFX};
use crate::provider::load::{PROVIDER_DIR, SUFFIX};

/// Our private bit in `verbs_sysfs_dev.flags`: a device without a kernel
/// character device.  Upstream's flags use the low bits only.
pub const VSYSFS_SOFT: u32 = 1 << 31;

/// The environment variable that enables software devices.
pub const ENV: &str = "RDMAV_SOFT_DEVICES";

/// The name our provider registers under.
const PROVIDER: &[u8] = b"swrdma";

/// One requested software device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoftDevice {
    pub name: String,
    pub ibdev_path: PathBuf,
    pub modalias: String,
}

/// One entry of the environment variable: a device name and, for a wire
/// device, the network interface it is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    pub name: String,
    pub ifname: Option<String>,
}

impl Requested {
    /// The modalias of the device's record: `swrdma:<name>`, or
    /// `swrdma:<name>@<ifname>` for a wire device.
    pub fn modalias(&self) -> String {
        match &self.ifname {
            Some(i) => format!("swrdma:{}@{i}", self.name),
            None => format!("swrdma:{}", self.name),
        }
    }
}

/// A device name: 1–63 of `[A-Za-z0-9_-]`.
fn valid_name(n: &str) -> bool {
    !n.is_empty() && n.len() < 64 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A network interface name as the kernel accepts one (`dev_valid_name`):
/// 1–15 bytes (`IFNAMSIZ` - 1), not `.` or `..`, no `/`, `:` or white space
/// (the kernel's `isspace`, which includes 0xa0).
pub fn valid_ifname(n: &str) -> bool {
    !n.is_empty()
        && n.len() < 16
        && n != "."
        && n != ".."
        && n.bytes()
            .all(|b| b != b'/' && b != b':' && !b.is_ascii_whitespace() && b != 0x0b && b != 0xa0)
}

/// The entries of the environment variable: comma separated, each
/// `<name>` (a device of the loopback fabric) or `<name>@<ifname>` (a wire
/// device bound to interface `<ifname>`), `<name>` 1–63 of
/// `[A-Za-z0-9_-]`, `<ifname>` a name the kernel would accept for an
/// interface ([`valid_ifname`]).  Anything else is ignored with a warning,
/// as is a second entry for a name with another interface and a second
/// wire device on one interface (rxe too refuses a second device on a
/// network device); an exact repetition is dropped silently.
pub fn requested_names(value: &str) -> Vec<Requested> {
    parse(value, true)
}

/// [`requested_names`], with its warnings on stderr when `warn`.
fn parse(value: &str, warn: bool) -> Vec<Requested> {
    let mut out: Vec<Requested> = Vec::new();
    for e in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let (n, ifname) = match e.split_once('@') {
            Some((n, i)) => (n, Some(i)),
            None => (e, None),
        };
        if !valid_name(n) || !ifname.is_none_or(valid_ifname) {
            if warn {
                eprintln!("{PFX}Warning: ignoring software device name '{e}' in {ENV}");
            }
            continue;
        }
        let r = Requested {
            name: n.to_owned(),
            ifname: ifname.map(str::to_owned),
        };
        match out
            .iter()
            .find(|o| o.name == r.name || (r.ifname.is_some() && o.ifname == r.ifname))
        {
            None => out.push(r),
            Some(o) if *o == r => {}
            Some(_) if warn => {
                eprintln!("{PFX}Warning: ignoring software device name '{e}' in {ENV} (already requested)")
            }
            Some(_) => {}
        }
    }
    out
}

/// Our directory (as it is: not through a symlink) is a directory of the
/// user with mode 0700.
fn private_dir_ok(p: &Path, uid: u32) -> bool {
    match std::fs::symlink_metadata(p) {
        Ok(m) => m.is_dir() && m.uid() == uid && m.mode() & 0o777 == 0o700,
        Err(_) => false,
    }
}

/// `$XDG_RUNTIME_DIR` is usable: a directory of the user that neither its
/// group nor others may write to (what a session manager makes: 0700).
fn runtime_dir_ok(p: &Path, uid: u32) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0)
}

/// The per-user directory, created if needed; `None` when it cannot be
/// made safe.
pub fn user_dir() -> Option<PathBuf> {
    // SAFETY: getuid takes no arguments, cannot fail and touches no memory
    // of ours.
    let uid = unsafe { libc::getuid() };
    let rt = crate::env::get("XDG_RUNTIME_DIR")
        .map(|v| PathBuf::from(v.to_string_lossy().into_owned()))
        .filter(|p| p.is_absolute())
        .filter(|p| {
            let ok = runtime_dir_ok(p, uid);
            if !ok {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!(
                        "{PFX}Warning: XDG_RUNTIME_DIR {} is not a directory of uid {uid} closed to other \
                         users' writes; software devices use /tmp",
                        p.display()
                    )
                });
            }
            ok
        })
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    // The fallback is shared: others may create entries in it, but only
    // a sticky directory keeps them from renaming or removing ours.
    let shared_ok =
        std::fs::metadata(&rt).is_ok_and(|m| m.is_dir() && (m.mode() & 0o022 == 0 || m.mode() & 0o1000 != 0));
    if !shared_ok {
        eprintln!(
            "{PFX}Warning: {} is writable by others and not sticky; software devices disabled",
            rt.display()
        );
        return None;
    }
    let dir = rt.join(format!("ibverbs-soft-{uid}"));
    if std::fs::symlink_metadata(&dir).is_err() {
        let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    }
    if private_dir_ok(&dir, uid) {
        Some(dir)
    } else {
        eprintln!(
            "{PFX}Warning: {} is not a private directory of uid {uid}; software devices disabled",
            dir.display()
        );
        None
    }
}

/// The devices requested by the environment (no directory is created;
/// quiet: [`records`] has warned about the entries it ignores).
pub fn requested_env() -> Vec<Requested> {
    if crate::env::is_setuid() {
        return Vec::new();
    }
    match crate::env::get(ENV) {
        Some(v) => parse(&v.to_string_lossy(), false),
        None => Vec::new(),
    }
}

/// The software devices requested by the environment (setuid programs
/// ignore the variable), each with its per-user directory made.
pub fn requested() -> Vec<SoftDevice> {
    if crate::env::is_setuid() {
        return Vec::new();
    }
    let Some(v) = crate::env::get(ENV) else {
        return Vec::new();
    };
    let entries = requested_names(&v.to_string_lossy());
    if entries.is_empty() {
        return Vec::new();
    }
    let Some(dir) = user_dir() else { return Vec::new() };
    entries
        .into_iter()
        .filter_map(|r| {
            let p = dir.join(&r.name);
            if std::fs::symlink_metadata(&p).is_err() {
                let _ = std::fs::DirBuilder::new().mode(0o700).create(&p);
            }
            // A real directory of ours (not a symlink to elsewhere).
            let m = std::fs::symlink_metadata(&p).ok()?;
            // SAFETY: getuid takes no arguments, cannot fail and touches no
            // memory of ours.
            if !m.is_dir() || m.uid() != unsafe { libc::getuid() } {
                return None;
            }
            if m.mode() & 0o777 != 0o700 {
                let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700));
            }
            Some(SoftDevice {
                modalias: r.modalias(),
                ibdev_path: p,
                name: r.name,
            })
        })
        .collect()
}

/// The discovery records of the software devices the environment asks for:
/// no char device ([`VSYSFS_SOFT`]), matched by their `swrdma:<name>` or
/// `swrdma:<name>@<ifname>` modalias (already "read", so sysfs is not
/// asked), named `<name>`, index -1 and no
/// creation time, so a rescan keeps them.
pub fn records() -> Vec<SysfsDev> {
    let mut out = Vec::new();
    for s in requested() {
        let Some(mut r) = SysfsDev::new() else { break };
        let d = r.get_mut();
        d.ibdev_idx = -1;
        d.flags = VSYSFS_SOFT | crate::abi::VSYSFS_READ_MODALIAS;
        d.node_type = crate::abi::IBV_NODE_CA;
        d.abi_ver = crate::abi::IB_USER_VERBS_MAX_ABI_VERSION;
        let ok = record::set_cstr(&mut d.sysfs_name, s.name.as_bytes())
            && record::set_cstr(&mut d.ibdev_name, s.name.as_bytes())
            && record::set_cstr(&mut d.ibdev_path, s.ibdev_path.as_os_str().as_bytes())
            && record::set_cstr(&mut d.modalias, s.modalias.as_bytes());
        if ok {
            out.push(r);
        }
    }
    out
}

/// Whether a device record is a software device's (a context for it has
/// no kernel command fd).
pub fn is_soft(dev: &verbs_sysfs_dev) -> bool {
    dev.flags & VSYSFS_SOFT != 0
}

/// The directory this library was loaded from (via `dladdr`).
fn own_dir() -> Option<PathBuf> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only looks the address (a function of this library) up
    // and writes the out-parameter, which points to writable storage of the
    // right type.
    let found = unsafe { libc::dladdr(own_dir as *const libc::c_void, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: dladdr succeeded, so it filled the record; an all-zero
    // Dl_info (null pointers) was a valid value of it anyway.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is non-null and, per dladdr, the NUL-terminated
    // path of the loaded object; the loader keeps it alive while the object
    // is loaded (this library is never unloaded), and it is copied at once.
    let p = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_bytes();
    let p = std::fs::canonicalize(OsStr::from_bytes(p)).ok()?;
    p.parent().map(|d| d.to_path_buf())
}

/// Software devices need our `swrdma` provider.  When some are requested
/// and it has not registered through the normal paths, look for it beside
/// this library (`<dir>/libibverbs/`, the build tree and an install both
/// put it there), then in the provider directory.  Silent unless logging is
/// on: nothing here is upstream behaviour.  Run by discovery as the last
/// step of loading providers.
pub fn load_provider() {
    if requested_env().is_empty() {
        return;
    }
    if crate::provider::registered().iter().any(|r| r.is_named(PROVIDER)) {
        return;
    }
    let file = format!("libswrdma{SUFFIX}");
    let mut candidates: Vec<Vec<u8>> = Vec::new();
    if let Some(d) = own_dir() {
        candidates.push(d.join("libibverbs").join(&file).as_os_str().as_bytes().to_vec());
    }
    if !PROVIDER_DIR.is_empty() {
        candidates.push(format!("{PROVIDER_DIR}/{file}").into_bytes());
    }
    for c in candidates {
        if crate::provider::load::attempt(PROVIDER, &c).is_ok() {
            return;
        }
    }
    log(
        LEVEL_WARN,
        format_args!("{PFX}software devices requested but the swrdma provider ({file}) was not found\n"),
    );
}

// Completion channels of software devices (contexts without a kernel
// command fd): a pipe.  The application reads `struct
// ib_uverbs_comp_event_desc` records from the read end exactly as from a
// kernel channel; the provider obtains a write end of the same pipe by
// opening `/proc/self/fd/<channel fd>` for writing.  The library keeps its
// own write end open for the channel's lifetime so that a reader blocks
// (rather than seeing end-of-file) while no provider writer is open.

/// The library's write end of each software channel, by read end.
static WRITERS: Mutex<Option<HashMap<c_int, c_int>>> = Mutex::new(None);

/// Creates a software completion channel's pipe; returns the read end, or
/// -1 with errno.
pub fn create_channel() -> c_int {
    let mut fds = [0 as c_int; 2];
    // SAFETY: pipe2 writes exactly two descriptors into the array it is
    // given, and fds is a live two-element c_int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return -1;
    }
    WRITERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(fds[0], fds[1]);
    fds[0]
}

/// Closes the library's write end of a software channel (no-op for kernel
/// channels).
pub fn destroy_channel(read_fd: c_int) {
    let w = WRITERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_mut()
        .and_then(|m| m.remove(&read_fd));
    if let Some(w) = w {
        // SAFETY: w is the write end create_channel opened and recorded; it
        // was just removed from the table, so it is closed exactly once and
        // nothing else in the library uses it.
        unsafe { libc::close(w) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_dir_rules() {
        // SAFETY: getuid takes no arguments, cannot fail and touches no
        // memory of ours.
        let uid = unsafe { libc::getuid() };
        let d = std::env::temp_dir().join(format!("soft-rt-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(runtime_dir_ok(&d, uid));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!runtime_dir_ok(&d, uid));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o720)).unwrap();
        assert!(!runtime_dir_ok(&d, uid));
        assert!(!runtime_dir_ok(&d, uid.wrapping_add(1)));
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        let sub = d.join("ibverbs-soft-x");
        std::fs::DirBuilder::new().mode(0o700).create(&sub).unwrap();
        assert!(private_dir_ok(&sub, uid));
        let link = d.join("link");
        std::os::unix::fs::symlink(&sub, &link).unwrap();
        assert!(!private_dir_ok(&link, uid));
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(!private_dir_ok(&sub, uid));
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn plain(n: &str) -> Requested {
        Requested {
            name: n.into(),
            ifname: None,
        }
    }

    fn wire(n: &str, i: &str) -> Requested {
        Requested {
            name: n.into(),
            ifname: Some(i.into()),
        }
    }

    #[test]
    fn names() {
        assert_eq!(requested_names("swr0, swr1,,swr0"), vec![plain("swr0"), plain("swr1")]);
        assert!(requested_names("../x").is_empty());
        assert!(requested_names("").is_empty());
        assert!(requested_names(&"a".repeat(64)).is_empty());
        assert_eq!(requested_names(&"a".repeat(63)), vec![plain(&"a".repeat(63))]);
    }

    #[test]
    fn wire_entries() {
        assert_eq!(
            requested_names("swr0,rw0@veth1, rw1@eth0.100 ,rw0@veth1"),
            vec![plain("swr0"), wire("rw0", "veth1"), wire("rw1", "eth0.100")]
        );
        // The same name again with another interface (or none): the first
        // entry stays.
        assert_eq!(requested_names("rw0@veth1,rw0@veth0,rw0"), vec![wire("rw0", "veth1")]);
        assert_eq!(requested_names("swr0,swr0@lo"), vec![plain("swr0")]);
        // One wire device per interface.
        assert_eq!(
            requested_names("rw0@lo,rw1@lo,rw2@veth0"),
            vec![wire("rw0", "lo"), wire("rw2", "veth0")]
        );
        // The interface name as the kernel's dev_valid_name takes it.
        assert_eq!(
            requested_names(&format!("a@{}", "i".repeat(15))),
            vec![wire("a", &"i".repeat(15))]
        );
        for bad in [
            "a@",
            "@lo",
            "a@.",
            "a@..",
            "a@x/y",
            "a@x:1",
            "a@x y",
            "a@x\ty",
            "a@\u{a0}x",
            "a/b@lo",
        ] {
            assert!(requested_names(bad).is_empty(), "{bad:?}");
        }
        assert!(requested_names(&format!("a@{}", "i".repeat(16))).is_empty());
        // Split at the first '@': the kernel allows '@' in interface names.
        assert_eq!(requested_names("a@b@c"), vec![wire("a", "b@c")]);
        assert_eq!(requested_names("a@..x"), vec![wire("a", "..x")]);
    }

    #[test]
    fn modaliases() {
        assert_eq!(plain("swr0").modalias(), "swrdma:swr0");
        assert_eq!(wire("rw0", "veth1").modalias(), "swrdma:rw0@veth1");
    }
}
