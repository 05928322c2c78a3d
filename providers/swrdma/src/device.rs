//! The device: allocation for the library and the sysfs-shaped tree that
//! the library's generic code reads (GIDs, GUID, pkeys ...).
//!
//! A *wire* device (modalias `swrdma:<name>@<ifname>`) is bound to a
//! network interface: its identity is the one the kernel gives an rxe
//! device on that interface (GID table built by `roce_gid_mgmt` from the
//! interface's MAC and addresses, node GUID from the MAC, port MTU and
//! state from the interface).

use ibverbs_abi::*;
use std::ffi::CStr;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[repr(C)]
pub struct SwDevice {
    pub vdev: verbs_device,
    /// A wire device's interface name, NUL-terminated (all zero: a plain
    /// device), from the modalias at `alloc_device`; the interface itself is
    /// read again whenever a context is opened.
    pub ifname: [u8; IFNAMSIZ],
}

/// `IFNAMSIZ`: an interface name and its NUL.
pub const IFNAMSIZ: usize = 16;

/// The GID table of a plain device: `fe80::<GUID>`, `::ffff:127.0.0.1`
/// and `::1`.
pub const PLAIN_GID_TBL_LEN: usize = 3;

/// The GID table length of a wire device: rxe's (`RXE_PORT_GID_TBL_LEN`).
pub const WIRE_GID_TBL_LEN: usize = 1024;

/// The network interface of a wire device, as it was when read.
#[derive(Clone, Debug)]
pub struct WireCfg {
    pub ifname: String,
    #[allow(dead_code)] // for the wire engine (sockets bound to the interface)
    pub ifindex: u32,
    /// The interface MTU (bytes).
    pub mtu: u32,
    /// The interface's IPv4 then IPv6 addresses (link-local included), in
    /// the kernel's order (`getifaddrs`, a netlink dump, lists them as the
    /// kernel's per-interface lists hold them).
    pub addrs: Vec<std::net::IpAddr>,
    /// The hardware address, when it is a 6-byte (Ethernet) one.
    pub mac: Option<[u8; 6]>,
    /// The interface's `dev_id` (nonzero on a few shared NICs: it replaces
    /// `ff:fe` in the EUI-64, see [`WireCfg::eui64`]).
    pub dev_id: u16,
}

/// Everything every process of the user derives identically from the name
/// (plain devices) or from the name and the interface (wire devices).
#[derive(Clone)]
pub struct DevInfo {
    pub name: String,
    pub path: PathBuf, // ibdev_path: <rt>/ibverbs-soft-<uid>/<name>
    pub guid: u64,     // host order
    /// The used entries of the GID table, in order (types:
    /// [`DevInfo::gid_type_str`]); the table has [`DevInfo::gid_tbl_len`]
    /// slots, those after these are empty.
    pub gids: Vec<[u8; 16]>,
    pub wire: Option<WireCfg>,
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
    /// A plain device (the loopback fabric).
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
        // ::1, as rxe on lo has it (and rdma_cm binds loopback to it).
        let mut g2 = [0u8; 16];
        g2[15] = 1;
        DevInfo {
            name: name.to_string(),
            path: path.to_path_buf(),
            guid,
            gids: vec![g0, g1, g2],
            wire: None,
        }
    }

    /// A wire device on interface `w`: the node GUID is the EUI-64 of the
    /// interface's MAC (rxe's), else (no Ethernet address) the plain
    /// device's; the GIDs are [`wire_gids`].
    pub fn new_wire(name: &str, path: &Path, w: WireCfg) -> DevInfo {
        let mut d = DevInfo::new(name, path);
        if let Some(mac) = w.mac {
            d.guid = u64::from_be_bytes([mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]]);
        }
        d.gids = wire_gids(&w);
        d.wire = Some(w);
        d
    }

    /// The type of GID `i`: on a plain device `IB/RoCE v1` (GID 0) and
    /// `RoCE v2` (GID 1); on a wire device every GID is `RoCE v2` (rxe's port
    /// supports RoCE v2 only: the kernel adds each address once).
    pub fn gid_type_str(&self, i: usize) -> &'static str {
        if i == 0 && self.wire.is_none() {
            "IB/RoCE v1"
        } else {
            "RoCE v2"
        }
    }

    /// The GID table's length (`ibv_port_attr.gid_tbl_len`).
    pub fn gid_tbl_len(&self) -> usize {
        gid_tbl_len(self.wire.as_ref())
    }

    /// The network device of every GID (`gid_attrs/ndevs`).
    pub fn ndev(&self) -> &str {
        self.wire.as_ref().map_or("lo", |w| &w.ifname)
    }
}

/// The GID table's length of a device: plain or wire on `w`.
pub fn gid_tbl_len(w: Option<&WireCfg>) -> usize {
    if w.is_some() {
        WIRE_GID_TBL_LEN
    } else {
        PLAIN_GID_TBL_LEN
    }
}

pub use swrdma_wired::gids::mtu_enum;

/// The port's active MTU: 4096 on a plain device; on a wire device rxe's
/// choice for the interface's MTU now (it follows MTU changes, as rxe does
/// on `NETDEV_CHANGEMTU`; the MTU read at open when it cannot be read now).
pub fn active_mtu(w: Option<&WireCfg>) -> u32 {
    match w {
        None => IBV_MTU_4096,
        Some(w) => mtu_enum(if_mtu(&w.ifname).unwrap_or(w.mtu)),
    }
}

/// The port's state and physical state now: a plain device is always
/// `ACTIVE`/`LinkUp`; a wire device is `ACTIVE`/`LinkUp` while its interface
/// is up and running (rxe's `netif_running && netif_carrier_ok`), else
/// `DOWN`, with physical state `Disabled` (3) when the interface is down
/// (or gone) and `Polling` (2) when it is up without a carrier.
pub fn port_state(w: Option<&WireCfg>) -> (u32, u8) {
    let Some(w) = w else { return (IBV_PORT_ACTIVE, 5) };
    let flags = if_flags(&w.ifname).unwrap_or(0);
    let up = flags & libc::IFF_UP as u32 != 0;
    if up && flags & libc::IFF_RUNNING as u32 != 0 {
        (IBV_PORT_ACTIVE, 5)
    } else if up {
        (IBV_PORT_DOWN, 2)
    } else {
        (IBV_PORT_DOWN, 3)
    }
}

/// The GID table of an rxe device on `w`, as `roce_gid_mgmt` fills it when
/// the device is created (rxe's port has one GID type, RoCE v2, so each
/// GID takes one slot): the default GID `fe80::<EUI-64 of the MAC>` in the
/// slot reserved for it (0), then every IPv4 address (as
/// `::ffff:a.b.c.d`), then every IPv6 address, in the interface's order; a
/// GID already in the table (the IPv6 link-local address that is the
/// default GID, a repeated address) is not added again, nor is the zero
/// GID.
pub fn wire_gids(w: &WireCfg) -> Vec<[u8; 16]> {
    let mut g0 = [0u8; 16];
    g0[0] = 0xfe;
    g0[1] = 0x80;
    if let Some(e) = w.eui64() {
        g0[8..].copy_from_slice(&e);
    }
    let mut out = vec![g0];
    let v4 = w.addrs.iter().filter_map(|a| match a {
        std::net::IpAddr::V4(a) => Some(a.to_ipv6_mapped().octets()),
        _ => None,
    });
    let v6 = w.addrs.iter().filter_map(|a| match a {
        std::net::IpAddr::V6(a) => Some(a.octets()),
        _ => None,
    });
    for g in v4.chain(v6) {
        if out.len() == WIRE_GID_TBL_LEN {
            break;
        }
        if g != [0u8; 16] && !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

impl WireCfg {
    /// The interface identifier of the default GID (the kernel's
    /// `addrconf_ifid_eui48`): the MAC with `ff:fe` (or the `dev_id`) in the
    /// middle, the universal/local bit flipped (not with a `dev_id`).
    pub fn eui64(&self) -> Option<[u8; 8]> {
        let m = self.mac?;
        Some(if self.dev_id != 0 {
            let d = self.dev_id.to_be_bytes();
            [m[0], m[1], m[2], d[0], d[1], m[3], m[4], m[5]]
        } else {
            [m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]]
        })
    }

    /// Reads interface `ifname` now (`getifaddrs`, `if_nametoindex`, the
    /// `SIOCGIFMTU` ioctl); `None` when there is no such interface.
    pub fn read(ifname: &str) -> Option<WireCfg> {
        let cname = std::ffi::CString::new(ifname).ok()?;
        // SAFETY: `cname` is a NUL-terminated string that outlives the call.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return None;
        }
        let mtu = if_mtu(ifname)?;
        let mut w = WireCfg {
            ifname: ifname.to_string(),
            ifindex,
            mtu,
            addrs: Vec::new(),
            mac: None,
            dev_id: 0,
        };
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: getifaddrs writes the head of a list it allocated into
        // `list` (a live local), freed below with freeifaddrs.
        if unsafe { libc::getifaddrs(&mut list) } != 0 {
            return None;
        }
        let mut v4 = Vec::new();
        let mut v6 = Vec::new();
        let mut p = list;
        while !p.is_null() {
            // SAFETY: `p` is a node of the list getifaddrs made (not freed
            // yet); its name is a NUL-terminated string and its address NULL
            // or a socket address of the family it names, of that family's
            // size (sockaddr_in / sockaddr_in6 / sockaddr_ll).
            unsafe {
                let e = &*p;
                p = e.ifa_next;
                if e.ifa_addr.is_null() || std::ffi::CStr::from_ptr(e.ifa_name) != cname.as_c_str() {
                    continue;
                }
                match (*e.ifa_addr).sa_family as i32 {
                    libc::AF_INET => {
                        let a = &*(e.ifa_addr as *const libc::sockaddr_in);
                        v4.push(std::net::IpAddr::V4(u32::from_be(a.sin_addr.s_addr).into()));
                    }
                    libc::AF_INET6 => {
                        let a = &*(e.ifa_addr as *const libc::sockaddr_in6);
                        v6.push(std::net::IpAddr::V6(a.sin6_addr.s6_addr.into()));
                    }
                    libc::AF_PACKET => {
                        let a = &*(e.ifa_addr as *const libc::sockaddr_ll);
                        if a.sll_halen == 6 {
                            let mut m = [0u8; 6];
                            m.copy_from_slice(&a.sll_addr[..6]);
                            w.mac = Some(m);
                        }
                    }
                    _ => {}
                }
            }
        }
        // SAFETY: `list` is the list getifaddrs made, freed once; nothing
        // of it is used after this.
        unsafe { libc::freeifaddrs(list) };
        w.addrs = v4.into_iter().chain(v6).collect();
        w.dev_id = std::fs::read_to_string(format!("/sys/class/net/{ifname}/dev_id"))
            .ok()
            .and_then(|s| u16::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok())
            .unwrap_or(0);
        Some(w)
    }
}

/// An `ifreq` for `ifname`, or `None` when the name does not fit.
fn ifreq(ifname: &str) -> Option<libc::ifreq> {
    let b = ifname.as_bytes();
    if b.is_empty() || b.len() >= IFNAMSIZ || b.contains(&0) {
        return None;
    }
    // SAFETY: `ifreq` is a C struct of a byte array and a union of
    // integers, addresses and pointers: all zero is a valid value of it.
    let mut r: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    Some(r)
}

/// An interface ioctl (`SIOCGIFMTU`, `SIOCGIFFLAGS`) on a datagram Unix
/// socket (interface ioctls work on any socket, in its network namespace).
fn if_ioctl(ifname: &str, req: libc::Ioctl) -> Option<libc::ifreq> {
    let mut r = ifreq(ifname)?;
    // SAFETY: plain socket creation; the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh descriptor of ours, owned (and closed) here.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: both requests read the name of and write one field of the
    // `ifreq` they are given, which is a live local.
    let rc = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&fd), req, &mut r) };
    (rc == 0).then_some(r)
}

/// The interface's MTU now (`SIOCGIFMTU`).
pub fn if_mtu(ifname: &str) -> Option<u32> {
    let r = if_ioctl(ifname, libc::SIOCGIFMTU)?;
    // SAFETY: SIOCGIFMTU succeeded, so it wrote the MTU member of the union.
    Some(unsafe { r.ifr_ifru.ifru_mtu } as u32)
}

/// The interface's flags now (`SIOCGIFFLAGS`: `IFF_UP`, `IFF_RUNNING` ...).
pub fn if_flags(ifname: &str) -> Option<u32> {
    let r = if_ioctl(ifname, libc::SIOCGIFFLAGS)?;
    // SAFETY: SIOCGIFFLAGS succeeded, so it wrote the flags member.
    Some(unsafe { r.ifr_ifru.ifru_flags } as u16 as u32)
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

/// Removes the entries named by a number `>= len` from directory `dir`
/// (our own files: a real directory of ours, see `sub_dir`).
fn prune(dir: &Path, len: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name();
        if let Some(i) = name.to_str().and_then(|n| n.parse::<usize>().ok()) {
            if i >= len {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// The files of the device's sysfs-shaped description: path, content.
fn tree_files(info: &DevInfo) -> Vec<(PathBuf, String)> {
    let d = &info.path;
    let mut f: Vec<(PathBuf, String)> = Vec::with_capacity(3 * info.gid_tbl_len() + 24);
    let mut file = |path: PathBuf, content: &str| f.push((path, content.to_owned()));
    file(d.join("node_guid"), &format!("{}\n", fmt_guid(info.guid)));
    file(d.join("sys_image_guid"), &format!("{}\n", fmt_guid(info.guid)));
    file(d.join("node_type"), "1: CA\n");
    file(d.join("node_desc"), &format!("swrdma {}\n", info.name));
    file(d.join("fw_ver"), "44.0.0\n");
    file(d.join("hw_rev"), "0\n");
    file(d.join("hca_type"), "swrdma\n");
    let p = d.join("ports/1");
    // Every slot of the table has its files.  An empty slot's GID is the
    // zero GID, as in the kernel's sysfs.  The kernel fails reads of an
    // empty slot's type and netdev (EINVAL), which the library's sysfs
    // reading takes as type `IB/RoCE v1` and no netdev: so an empty slot has
    // that type and no netdev file, and every GID query answers for it what
    // upstream answers for an empty slot of an rxe device (`ibv_query_gid`:
    // the zero GID; `ibv_query_gid_ex`: ENODATA; `ibv_query_gid_type`:
    // `IB/RoCE v1`; `ibv_query_gid_table` skips it).
    let zero = format!("{}\n", fmt_gid(&[0u8; 16]));
    for i in 0..info.gid_tbl_len() {
        let (gid, ty) = match info.gids.get(i) {
            Some(g) => (format!("{}\n", fmt_gid(g)), info.gid_type_str(i)),
            None => (zero.clone(), "IB/RoCE v1"),
        };
        file(p.join(format!("gids/{i}")), &gid);
        file(p.join(format!("gid_attrs/types/{i}")), &format!("{ty}\n"));
        if i < info.gids.len() {
            file(p.join(format!("gid_attrs/ndevs/{i}")), &format!("{}\n", info.ndev()));
        }
    }
    file(p.join("pkeys/0"), "0xffff\n");
    file(p.join("link_layer"), "Ethernet\n");
    let (state, phys) = port_state(info.wire.as_ref());
    file(
        p.join("state"),
        if state == IBV_PORT_ACTIVE {
            "4: ACTIVE\n"
        } else {
            "1: DOWN\n"
        },
    );
    file(
        p.join("phys_state"),
        match phys {
            5 => "5: LinkUp\n",
            2 => "2: Polling\n",
            _ => "3: Disabled\n",
        },
    );
    file(p.join("lid"), "0x0\n");
    file(p.join("lid_mask_count"), "0\n");
    file(p.join("sm_lid"), "0x0\n");
    file(p.join("sm_sl"), "0\n");
    file(p.join("rate"), "100 Gb/sec (4X EDR)\n");
    // (last: `write_tree` takes it as the sign that a tree is complete)
    file(p.join("cap_mask"), "0x04010000\n");
    f
}

/// How long a tree this process wrote is taken as still there, unchanged,
/// when the same description is asked for again (a context opened just
/// after the device list was read, and librdmacm's own open after it).
const TREE_FRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// The tree each device path last got from this process: a hash of its
/// files and when.
static TREES: std::sync::Mutex<Vec<(PathBuf, u64, std::time::Instant)>> = std::sync::Mutex::new(Vec::new());

/// Writes the sysfs-shaped description of the device into its directory:
/// each file whose content differs (see `put`), then what an earlier,
/// larger table left is pruned.  A tree this process wrote with the same
/// content less than `TREE_FRESH` ago, whose last file is still there, is
/// not read again (2,000 files for a table of 1,024 GIDs: milliseconds
/// that every context open would otherwise spend).
pub fn write_tree(info: &DevInfo) -> std::io::Result<()> {
    use std::hash::{Hash, Hasher};
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
    let files = tree_files(info);
    let mut h = std::collections::hash_map::DefaultHasher::new();
    files.hash(&mut h);
    let sum = h.finish();
    let now = std::time::Instant::now();
    let last = files.last().map(|(p, _)| p.clone()).unwrap_or_default();
    {
        let t = TREES.lock().unwrap_or_else(|e| e.into_inner());
        let fresh = t
            .iter()
            .any(|(p, s, at)| p == d && *s == sum && now.duration_since(*at) < TREE_FRESH);
        if fresh && std::fs::symlink_metadata(&last).is_ok_and(|m| m.is_file()) {
            return Ok(());
        }
    }
    for (path, content) in &files {
        put(path, content)?;
    }
    // What an earlier, larger table (another interface state, or the name
    // used for another kind of device) left.
    let p = d.join("ports/1");
    prune(&p.join("gids"), info.gid_tbl_len());
    prune(&p.join("gid_attrs/types"), info.gid_tbl_len());
    prune(&p.join("gid_attrs/ndevs"), info.gids.len());
    let mut t = TREES.lock().unwrap_or_else(|e| e.into_inner());
    t.retain(|(p, _, _)| p != d);
    t.push((d.clone(), sum, now));
    Ok(())
}

/// The device's description for a context being opened: a wire device's
/// interface is read again (`ENODEV` when it is gone).
///
/// # Safety
/// `device` is a live `ibv_device` (the library's, for our driver): its
/// `name` and `ibdev_path` are NUL-terminated arrays, and it is the start
/// of the `SwDevice` `alloc_device` made.
pub unsafe fn info_of_device(device: *const ibv_device) -> Result<DevInfo, libc::c_int> {
    // SAFETY: `device` is live and both arrays are NUL-terminated (the
    // contract); the strings are copied at once.  It is the `ibv_device` at
    // offset 0 of the `vdev` at offset 0 of our `SwDevice` (both
    // `#[repr(C)]`), whose `ifname` is a NUL-terminated array (calloc'ed,
    // at most 15 bytes written).
    let (name, path, ifname) = unsafe {
        (
            CStr::from_ptr((*device).name.as_ptr()).to_string_lossy().into_owned(),
            CStr::from_ptr((*device).ibdev_path.as_ptr())
                .to_string_lossy()
                .into_owned(),
            CStr::from_ptr((*(device as *const SwDevice)).ifname.as_ptr().cast())
                .to_string_lossy()
                .into_owned(),
        )
    };
    if ifname.is_empty() {
        return Ok(DevInfo::new(&name, Path::new(&path)));
    }
    let w = WireCfg::read(&ifname).ok_or(libc::ENODEV)?;
    Ok(DevInfo::new_wire(&name, Path::new(&path), w))
}

/// The interface of a wire device's modalias `swrdma:<name>@<ifname>`
/// (`None` for a plain device's `swrdma:<name>`).
fn modalias_ifname(modalias: &str) -> Option<&str> {
    modalias.strip_prefix("swrdma:")?.split_once('@').map(|(_, i)| i)
}

/// # Safety
/// Called by libibverbs (`verbs_device_ops.alloc_device`) with a live
/// `verbs_sysfs_dev` whose name, path and modalias arrays are
/// NUL-terminated.
pub unsafe extern "C" fn alloc_device(sysfs_dev: *mut verbs_sysfs_dev) -> *mut verbs_device {
    // SAFETY: `sysfs_dev` is live and the arrays are NUL-terminated (the
    // library's contract); the strings are copied at once.
    let (name, path, modalias) = unsafe {
        (
            CStr::from_ptr((*sysfs_dev).ibdev_name.as_ptr())
                .to_string_lossy()
                .into_owned(),
            CStr::from_ptr((*sysfs_dev).ibdev_path.as_ptr())
                .to_string_lossy()
                .into_owned(),
            CStr::from_ptr((*sysfs_dev).modalias.as_ptr())
                .to_string_lossy()
                .into_owned(),
        )
    };
    if path.is_empty() {
        return std::ptr::null_mut();
    }
    let mut ifname = [0u8; IFNAMSIZ];
    let info = match modalias_ifname(&modalias) {
        None => DevInfo::new(&name, Path::new(&path)),
        Some(i) if i.is_empty() || i.len() >= IFNAMSIZ || i.contains('\0') => return std::ptr::null_mut(),
        Some(i) => {
            let Some(w) = WireCfg::read(i) else {
                eprintln!("libibverbs: swrdma: {name}: no network interface {i}");
                return std::ptr::null_mut();
            };
            ifname[..i.len()].copy_from_slice(i.as_bytes());
            DevInfo::new_wire(&name, Path::new(&path), w)
        }
    };
    if write_tree(&info).is_err() {
        return std::ptr::null_mut();
    }
    // SAFETY: a plain zeroed allocation (the library reads and fills the
    // `verbs_device`, zero is its initial state); freed by uninit_device.
    let d = unsafe { libc::calloc(1, std::mem::size_of::<SwDevice>()) } as *mut SwDevice;
    if d.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: `d` is non-null, fresh and big enough for an `SwDevice`; the
    // name array is a plain field of it.
    unsafe {
        (*d).ifname = ifname;
        std::ptr::addr_of_mut!((*d).vdev)
    }
}

/// # Safety
/// Called by libibverbs once, with a device `alloc_device` returned (the
/// `vdev` at offset 0 of the calloc'ed `SwDevice`).
pub unsafe extern "C" fn uninit_device(vdev: *mut verbs_device) {
    // SAFETY: `vdev` is the calloc'ed block (offset 0), freed once.
    unsafe { libc::free(vdev as *mut _) };
}
