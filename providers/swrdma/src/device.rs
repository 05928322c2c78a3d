//! The device: allocation for the library and the sysfs-shaped tree that
//! the library's generic code reads (GIDs, GUID, pkeys ...).

use crate::abi::*;
use std::ffi::CStr;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[repr(C)]
pub struct SwDevice {
    pub vdev: verbs_device,
}

pub const GID_TBL_LEN: usize = 2;

/// Everything every process of the user derives identically from the name.
#[derive(Clone)]
pub struct DevInfo {
    pub name: String,
    pub path: PathBuf, // ibdev_path: <rt>/ibverbs-soft-<uid>/<name>
    pub guid: u64,     // host order
    pub gids: [[u8; 16]; GID_TBL_LEN],
}

fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in data {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

impl DevInfo {
    pub fn new(name: &str, path: &Path) -> DevInfo {
        let uid = rustix::process::getuid().as_raw();
        let h = fnv(format!("swrdma:{uid}:{name}").as_bytes());
        // EUI-64 shaped, locally administered: 02xx:xxff:fexx:xxxx.
        let b = h.to_be_bytes();
        let guid = u64::from_be_bytes([b[0] & 0xfc | 0x02, b[1], b[2], 0xff, 0xfe, b[5], b[6], b[7]]);
        let mut g0 = [0u8; 16];
        g0[0] = 0xfe;
        g0[1] = 0x80;
        g0[8..].copy_from_slice(&guid.to_be_bytes());
        let mut g1 = [0u8; 16];
        g1[10] = 0xff;
        g1[11] = 0xff;
        g1[12..].copy_from_slice(&[127, 0, 0, 1]);
        DevInfo {
            name: name.to_string(),
            path: path.to_path_buf(),
            guid,
            gids: [g0, g1],
        }
    }

    pub fn gid_type_str(i: usize) -> &'static str {
        if i == 0 {
            "IB/RoCE v1"
        } else {
            "RoCE v2"
        }
    }
}

pub fn fmt_gid(g: &[u8; 16]) -> String {
    let mut s = String::new();
    for i in 0..8 {
        if i > 0 {
            s.push(':');
        }
        s.push_str(&format!("{:02x}{:02x}", g[2 * i], g[2 * i + 1]));
    }
    s
}

fn fmt_guid(g: u64) -> String {
    let b = g.to_be_bytes();
    format!(
        "{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}:{:02x}{:02x}",
        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
    )
}

/// Checks that `dir` is ours and private (0700, our uid); creates it (0700)
/// when missing.  The directory it is in must be closed to writers other
/// than its owner, or sticky (`/tmp`).
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(p) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        if let Ok(md) = std::fs::metadata(p) {
            let open = md.mode() & 0o022 != 0;
            let sticky = md.mode() & 0o1000 != 0;
            if !md.is_dir() || (open && !sticky) {
                eprintln!(
                    "libibverbs: swrdma: {} is open to other users' writes; not used",
                    p.display()
                );
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            }
        }
    }
    match std::fs::symlink_metadata(dir) {
        Ok(_) => private_dir_check(dir),
        Err(_) => {
            if let Some(p) = dir.parent() {
                if !p.as_os_str().is_empty() && !p.exists() {
                    private_dir(p)?;
                }
            }
            let r = std::fs::DirBuilder::new().mode(0o700).create(dir);
            if let Err(e) = r {
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(e);
                }
            }
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            private_dir_check(dir)
        }
    }
}

/// `dir` (as it is, not through a symlink) is a directory of ours with
/// mode 0700.
fn private_dir_check(dir: &Path) -> std::io::Result<()> {
    let md = std::fs::symlink_metadata(dir)?;
    if !md.is_dir() || md.uid() != rustix::process::getuid().as_raw() || md.mode() & 0o777 != 0o700 {
        eprintln!(
            "libibverbs: swrdma: {} is not a private directory (a real directory of uid {} with mode 0700); \
             software device not opened",
            dir.display(),
            rustix::process::getuid().as_raw()
        );
        return Err(std::io::Error::from_raw_os_error(libc::EPERM));
    }
    Ok(())
}

/// Makes directory `dir` (0700) if missing; it must then be a real
/// directory of ours (not a symlink).
fn sub_dir(dir: &Path) -> std::io::Result<()> {
    if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(dir) {
        if e.kind() != std::io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    let md = std::fs::symlink_metadata(dir)?;
    if !md.is_dir() || md.uid() != rustix::process::getuid().as_raw() {
        return Err(std::io::Error::from_raw_os_error(libc::EPERM));
    }
    Ok(())
}

/// Opens a file of the device's tree without following a symlink.
fn open_nofollow(opts: &mut std::fs::OpenOptions, path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    opts.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
}

/// Writes `content` to `path` (in a directory `sub_dir` made) unless it is
/// there already: a fresh file, renamed into place; never through a
/// symlink.
fn put(path: &Path, content: &str) -> std::io::Result<()> {
    use std::io::Read;
    if let Ok(mut f) = open_nofollow(std::fs::OpenOptions::new().read(true), path) {
        let mut old = String::new();
        let regular = f.metadata().is_ok_and(|m| m.file_type().is_file());
        if regular && f.read_to_string(&mut old).is_ok() && old == content {
            return Ok(());
        }
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let r = open_nofollow(
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600),
        &tmp,
    )
    .and_then(|mut f| f.write_all(content.as_bytes()))
    .and_then(|()| std::fs::rename(&tmp, path));
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Writes the sysfs-shaped description of the device into its directory.
pub fn write_tree(info: &DevInfo) -> std::io::Result<()> {
    let d = &info.path;
    if let Some(parent) = d.parent() {
        private_dir(parent)?;
    }
    for sub in [
        "",
        "ports",
        "ports/1",
        "ports/1/gids",
        "ports/1/gid_attrs",
        "ports/1/gid_attrs/types",
        "ports/1/gid_attrs/ndevs",
        "ports/1/pkeys",
    ] {
        sub_dir(&d.join(sub))?;
    }
    put(&d.join("node_guid"), &format!("{}\n", fmt_guid(info.guid)))?;
    put(&d.join("sys_image_guid"), &format!("{}\n", fmt_guid(info.guid)))?;
    put(&d.join("node_type"), "1: CA\n")?;
    put(&d.join("node_desc"), &format!("swrdma {}\n", info.name))?;
    put(&d.join("fw_ver"), "44.0.0\n")?;
    put(&d.join("hw_rev"), "0\n")?;
    put(&d.join("hca_type"), "swrdma\n")?;
    let p = d.join("ports/1");
    for i in 0..GID_TBL_LEN {
        put(&p.join(format!("gids/{i}")), &format!("{}\n", fmt_gid(&info.gids[i])))?;
        put(
            &p.join(format!("gid_attrs/types/{i}")),
            &format!("{}\n", DevInfo::gid_type_str(i)),
        )?;
        put(&p.join(format!("gid_attrs/ndevs/{i}")), "lo\n")?;
    }
    put(&p.join("pkeys/0"), "0xffff\n")?;
    put(&p.join("link_layer"), "Ethernet\n")?;
    put(&p.join("state"), "4: ACTIVE\n")?;
    put(&p.join("phys_state"), "5: LinkUp\n")?;
    put(&p.join("lid"), "0x0\n")?;
    put(&p.join("lid_mask_count"), "0\n")?;
    put(&p.join("sm_lid"), "0x0\n")?;
    put(&p.join("sm_sl"), "0\n")?;
    put(&p.join("rate"), "100 Gb/sec (4X EDR)\n")?;
    put(&p.join("cap_mask"), "0x04010000\n")?;
    Ok(())
}

/// # Safety
/// `device` is a live `ibv_device` (the library's, for our driver): its
/// `name` and `ibdev_path` are NUL-terminated arrays.
pub unsafe fn info_of_device(device: *const ibv_device) -> DevInfo {
    // SAFETY: `device` is live and both arrays are NUL-terminated (the
    // contract); the strings are copied at once.
    let (name, path) = unsafe {
        (
            CStr::from_ptr((*device).name.as_ptr()).to_string_lossy().into_owned(),
            CStr::from_ptr((*device).ibdev_path.as_ptr())
                .to_string_lossy()
                .into_owned(),
        )
    };
    DevInfo::new(&name, Path::new(&path))
}

/// # Safety
/// Called by libibverbs (`verbs_device_ops.alloc_device`) with a live
/// `verbs_sysfs_dev` whose name and path arrays are NUL-terminated.
pub unsafe extern "C" fn alloc_device(sysfs_dev: *mut verbs_sysfs_dev) -> *mut verbs_device {
    // SAFETY: `sysfs_dev` is live and both arrays are NUL-terminated (the
    // library's contract); the strings are copied at once.
    let (name, path) = unsafe {
        (
            CStr::from_ptr((*sysfs_dev).ibdev_name.as_ptr())
                .to_string_lossy()
                .into_owned(),
            CStr::from_ptr((*sysfs_dev).ibdev_path.as_ptr())
                .to_string_lossy()
                .into_owned(),
        )
    };
    if path.is_empty() {
        return std::ptr::null_mut();
    }
    let info = DevInfo::new(&name, Path::new(&path));
    if write_tree(&info).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: a plain zeroed allocation (the library reads and fills the
    // `verbs_device`, zero is its initial state); freed by uninit_device.
    let d = unsafe { libc::calloc(1, std::mem::size_of::<SwDevice>()) } as *mut SwDevice;
    if d.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `d` is non-null, fresh and big enough for an `SwDevice`.
    unsafe { std::ptr::addr_of_mut!((*d).vdev) }
}

/// # Safety
/// Called by libibverbs once, with a device `alloc_device` returned (the
/// `vdev` at offset 0 of the calloc'ed `SwDevice`).
pub unsafe extern "C" fn uninit_device(vdev: *mut verbs_device) {
    // SAFETY: `vdev` is the calloc'ed block (offset 0), freed once.
    unsafe { libc::free(vdev as *mut _) };
}
