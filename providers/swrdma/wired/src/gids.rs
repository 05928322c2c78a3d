//! What the agent knows of its interface: its name by index, and the
//! wire device's GID table on it, read from the interface as the
//! provider's `device.rs` (`wire_gids`) builds it for the
//! same device, so that the agent's `modify_qp` and `create_ah` take the
//! same source GID indices as the provider's: slot 0 the default GID
//! (`fe80::` and the EUI-64 of the MAC), then each IPv4 address (as
//! `::ffff:a.b.c.d`), then each IPv6 address, in the interface's order,
//! without repeats and without the zero GID, at most
//! [`GID_TABLE_LEN`] entries.
//!
//! The agent reads it again for each request that names a GID, so an
//! address added or removed since is seen as the provider's next context
//! sees it.

use std::net::IpAddr;

/// The slots of the port's GID table (the provider's `WIRE_GID_TBL_LEN`).
pub const GID_TABLE_LEN: usize = 1024;

/// rxe's `RXE_MAX_HDR_LENGTH`: what rxe takes off the interface MTU for
/// its headers before choosing the port's active MTU.
const RXE_MAX_HDR_LENGTH: u32 = 80;

/// rxe's `eth_mtu_int_to_enum` and `rxe_set_mtu`: the largest IB MTU
/// (`IBV_MTU_*`) that fits in the interface MTU less rxe's headers, at
/// least 256, at most 4096 (the port's active MTU of a wire device).
pub fn mtu_enum(if_mtu: u32) -> u32 {
    use ibverbs_abi::verbs::*;
    match if_mtu.saturating_sub(RXE_MAX_HDR_LENGTH) {
        4096.. => IBV_MTU_4096,
        2048.. => IBV_MTU_2048,
        1024.. => IBV_MTU_1024,
        512.. => IBV_MTU_512,
        _ => IBV_MTU_256,
    }
}

/// The MTU of interface `ifindex` now (None: no such interface, or the
/// `SIOCGIFMTU` ioctl fails).
pub fn if_mtu(ifindex: u32) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let name = ifname(ifindex)?;
    let sock = rustix::net::socket(rustix::net::AddressFamily::INET, rustix::net::SocketType::DGRAM, None).ok()?;
    // SAFETY: `ifreq` is plain C data: all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    let b = name.as_bytes();
    if b.len() >= req.ifr_name.len() {
        return None;
    }
    for (d, s) in req.ifr_name.iter_mut().zip(b) {
        *d = *s as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads the NUL-terminated name of `req` and writes
    // its `ifru_mtu`; `req` lives across the call.
    let r = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut req) };
    if r != 0 {
        return None;
    }
    // SAFETY: SIOCGIFMTU filled the union's `ifru_mtu`.
    Some(unsafe { req.ifr_ifru.ifru_mtu } as u32)
}

/// The interface's GIDs and addresses, as read at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gids {
    /// The used entries of the GID table, in order.
    pub table: Vec<[u8; 16]>,
    /// The interface's addresses (IPv4 first, then IPv6): the sources a
    /// connected QP's path may use.
    pub addrs: Vec<IpAddr>,
}

/// What `getifaddrs` says of one interface.
#[derive(Default)]
struct Iface {
    v4: Vec<IpAddr>,
    v6: Vec<IpAddr>,
    mac: Option<[u8; 6]>,
}

/// The addresses and MAC of interface `name` (empty when it has none or
/// `getifaddrs` fails).
fn iface(name: &str) -> Iface {
    let mut out = Iface::default();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs stores the head of a list it allocated into our
    // local `list`; it is freed below, once.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut p = list;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list (not freed yet): its name is a
        // NUL-terminated string, and its address is NULL or a socket
        // address of the size its family implies (sockaddr_in, _in6, _ll).
        unsafe {
            let e = &*p;
            p = e.ifa_next;
            if e.ifa_addr.is_null() || std::ffi::CStr::from_ptr(e.ifa_name).to_bytes() != name.as_bytes() {
                continue;
            }
            match i32::from((*e.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let a = &*(e.ifa_addr as *const libc::sockaddr_in);
                    out.v4.push(IpAddr::V4(u32::from_be(a.sin_addr.s_addr).into()));
                }
                libc::AF_INET6 => {
                    let a = &*(e.ifa_addr as *const libc::sockaddr_in6);
                    out.v6.push(IpAddr::V6(a.sin6_addr.s6_addr.into()));
                }
                libc::AF_PACKET => {
                    let a = &*(e.ifa_addr as *const libc::sockaddr_ll);
                    if a.sll_halen == 6 {
                        let mut m = [0u8; 6];
                        m.copy_from_slice(&a.sll_addr[..6]);
                        out.mac = Some(m);
                    }
                }
                _ => {}
            }
        }
    }
    // SAFETY: the list getifaddrs made, freed once; nothing of it is used
    // after this.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The interface identifier of the default GID: the MAC with `ff:fe` in
/// the middle and the universal/local bit flipped, or, on an interface
/// with a `dev_id`, the `dev_id` in the middle and the bit kept (the
/// kernel's `addrconf_ifid_eui48`).
fn eui64(mac: [u8; 6], dev_id: u16) -> [u8; 8] {
    let [a, b, c, d, e, f] = mac;
    if dev_id != 0 {
        let [h, l] = dev_id.to_be_bytes();
        [a, b, c, h, l, d, e, f]
    } else {
        [a ^ 2, b, c, 0xff, 0xfe, d, e, f]
    }
}

/// The `dev_id` of interface `name` (0 when it has none).
fn dev_id(name: &str) -> u16 {
    std::fs::read_to_string(format!("/sys/class/net/{name}/dev_id"))
        .ok()
        .and_then(|s| u16::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok())
        .unwrap_or(0)
}

/// The interface's name, when index `ifindex` exists in our network
/// namespace.
pub fn ifname(ifindex: u32) -> Option<String> {
    let mut b = [0u8; libc::IF_NAMESIZE];
    // SAFETY: if_indextoname writes at most IF_NAMESIZE bytes (a
    // NUL-terminated name) into `b`, which is that long.
    let p = unsafe { libc::if_indextoname(ifindex, b.as_mut_ptr().cast()) };
    if p.is_null() {
        return None;
    }
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    Some(String::from_utf8_lossy(&b[..n]).into_owned())
}

/// The GID of an address (IPv4 as an IPv4-mapped IPv6 address).
fn gid_of(a: &IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The address a GID stands for (RoCE v2).
pub fn gid_ip(g: &[u8; 16]) -> IpAddr {
    let v6 = std::net::Ipv6Addr::from(*g);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    }
}

impl Gids {
    /// The table of interface `ifindex` now (only the default GID when the
    /// interface has gone).
    pub fn read(ifindex: u32) -> Gids {
        let name = ifname(ifindex).unwrap_or_default();
        let i = if name.is_empty() {
            Iface::default()
        } else {
            iface(&name)
        };
        let mut g0 = [0u8; 16];
        g0[..2].copy_from_slice(&[0xfe, 0x80]);
        if let Some(m) = i.mac {
            g0[8..].copy_from_slice(&eui64(m, dev_id(&name)));
        }
        let addrs: Vec<IpAddr> = i.v4.into_iter().chain(i.v6).collect();
        let mut table = vec![g0];
        for g in addrs.iter().map(gid_of) {
            if table.len() == GID_TABLE_LEN {
                break;
            }
            if g != [0; 16] && !table.contains(&g) {
                table.push(g);
            }
        }
        Gids { table, addrs }
    }

    /// Whether the wire carries a connected QP's path from source GID
    /// `sgid_index` to `dgid`: the source is one of the interface's
    /// addresses and the destination of the same family (the provider's
    /// `wire::engine::ud_path`).
    pub fn path_ok(&self, sgid_index: u8, dgid: &[u8; 16]) -> bool {
        let Some(s) = self.table.get(sgid_index as usize).map(gid_ip) else {
            return false;
        };
        let d = gid_ip(dgid);
        s.is_ipv4() == d.is_ipv4() && self.addrs.contains(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ib_mtu_of_an_interface_mtu() {
        use ibverbs_abi::verbs::*;
        assert_eq!(mtu_enum(1500), IBV_MTU_1024);
        assert_eq!(mtu_enum(9000), IBV_MTU_4096);
        assert_eq!(mtu_enum(65536), IBV_MTU_4096);
        assert_eq!(mtu_enum(1104), IBV_MTU_1024);
        assert_eq!(mtu_enum(1103), IBV_MTU_512);
        assert_eq!(mtu_enum(0), IBV_MTU_256);
        // SAFETY: a NUL-terminated name; the call only reads it.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert!(if_mtu(lo).is_some_and(|m| m >= 1280), "lo's MTU");
        assert_eq!(if_mtu(u32::MAX), None);
    }

    #[test]
    fn loopback_table() {
        // SAFETY: a NUL-terminated name; the call only reads it.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        let g = Gids::read(lo);
        assert_eq!(&g.table[0][..8], &[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
        let v4 = gid_of(&IpAddr::from([127, 0, 0, 1]));
        let i = g.table.iter().position(|x| *x == v4).expect("127.0.0.1 is a GID of lo");
        assert_eq!(i, 1, "IPv4 addresses come first: {:?}", g.table);
        assert!(g.path_ok(1, &v4));
        assert!(!g.path_ok(0, &v4), "the default GID is no address of lo");
        assert!(!g.path_ok(200, &v4));
        assert_eq!(Gids::read(u32::MAX).table.len(), 1);
    }

    #[test]
    fn default_gid_interface_id() {
        let m = [0x52, 0x54, 0, 0x12, 0x34, 0x56];
        assert_eq!(eui64(m, 0), [0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56]);
        assert_eq!(eui64(m, 0x0102), [0x52, 0x54, 0, 1, 2, 0x12, 0x34, 0x56]);
    }
}
