//! Netlink discovery, upstream's first choice: an `RDMA_NLDEV_CMD_GET` dump
//! (name, index, node type, node GUID, port count of every IB device), then
//! per device `RDMA_NLDEV_CMD_GET_CHARDEV` for "uverbs" (char device, ABI,
//! `uverbsN` name, driver id), falling back to sysfs for that device's
//! uverbs entry; devices whose `/dev/infiniband/uverbsN` cannot be stat'ed
//! are dropped.
//!
//! The kernel exchange is behind [`Transport`] so that the record building
//! and libnl's validation rules can be tested (and fuzzed) with crafted
//! replies.

use std::collections::VecDeque;

use super::record::{self, set_cstr, SysfsDev};
use crate::abi::{self, RDMA_DRIVER_UNKNOWN};
use crate::kernel::netlink::{self as nl, Attr};

/// An error of a reply callback (libnl's `NLE_PARSE_ERR`, `NLE_RANGE`…).
pub const PARSE_ERR: i32 = libc::EINVAL;

type Callback<'a> = dyn FnMut(&[Attr<'_>]) -> Result<(), i32> + 'a;

/// The two requests discovery makes.
pub trait Transport {
    /// `RDMA_NLDEV_CMD_GET` as a dump; `f` sees every data message.
    fn get_devices(&mut self, f: &mut Callback<'_>) -> Result<(), i32>;
    /// `RDMA_NLDEV_CMD_GET_CHARDEV` for `name` on device `idx` (-1: none).
    fn get_chardev(&mut self, idx: i32, name: &str, f: &mut Callback<'_>) -> Result<(), i32>;
}

/// The kernel, over a `NETLINK_RDMA` socket.
pub struct Kernel(nl::Socket);

impl Kernel {
    pub fn open() -> Result<Self, i32> {
        nl::Socket::open().map(Kernel)
    }
}

impl Transport for Kernel {
    fn get_devices(&mut self, f: &mut Callback<'_>) -> Result<(), i32> {
        self.0
            .send(nl::nl_type(nl::RDMA_NL_NLDEV, nl::RDMA_NLDEV_CMD_GET), true, &[])?;
        self.0.collect(|_, attrs| f(attrs))
    }

    fn get_chardev(&mut self, idx: i32, name: &str, f: &mut Callback<'_>) -> Result<(), i32> {
        let idx_b = (idx as u32).to_ne_bytes();
        let mut ty = name.as_bytes().to_vec();
        ty.push(0);
        let mut attrs: Vec<(u16, &[u8])> = Vec::new();
        if idx != -1 {
            attrs.push((nl::RDMA_NLDEV_ATTR_DEV_INDEX, &idx_b));
        }
        attrs.push((nl::RDMA_NLDEV_ATTR_CHARDEV_TYPE, &ty));
        self.0.send(
            nl::nl_type(nl::RDMA_NL_NLDEV, nl::RDMA_NLDEV_CMD_GET_CHARDEV),
            false,
            &attrs,
        )?;
        self.0.collect(|_, attrs| f(attrs))
    }
}

/// The minimum payload length rdma-core's attribute policy
/// (`rdmanl_policy`) demands of an attribute type; libnl refuses the whole
/// message when one is shorter.  String attributes carry no policy.
fn policy_min_len(kind: u16) -> usize {
    match kind {
        nl::RDMA_NLDEV_ATTR_CHARDEV | nl::RDMA_NLDEV_ATTR_CHARDEV_ABI | nl::RDMA_NLDEV_ATTR_NODE_GUID => 8,
        nl::RDMA_NLDEV_ATTR_DEV_INDEX | nl::RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID | nl::RDMA_NLDEV_ATTR_PORT_INDEX => 4,
        nl::RDMA_NLDEV_ATTR_DEV_NODE_TYPE | nl::RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK => 1,
        _ => 0,
    }
}

/// libnl's `nlmsg_parse` with rdma-core's policy: attribute types above
/// `RDMA_NLDEV_ATTR_MAX - 1` are ignored, a later duplicate replaces an
/// earlier one, a too-short attribute fails the message.
pub fn table<'a>(attrs: &[Attr<'a>]) -> Result<Vec<Option<Attr<'a>>>, i32> {
    let max = nl::RDMA_NLDEV_ATTR_MAX as usize;
    let mut tb: Vec<Option<Attr<'a>>> = vec![None; max];
    for a in attrs {
        let t = a.kind as usize;
        if t >= max {
            continue;
        }
        if a.data.len() < policy_min_len(a.kind) {
            return Err(libc::ERANGE);
        }
        tb[t] = Some(a.clone());
    }
    Ok(tb)
}

fn nla_str<'a>(a: &Attr<'a>) -> &'a [u8] {
    let end = a.data.iter().position(|&b| b == 0).unwrap_or(a.data.len());
    &a.data[..end]
}

/// Upstream's per-device dump callback: a record for one IB device, or an
/// error that fails the whole netlink discovery.
pub fn device_from_attrs(attrs: &[Attr<'_>]) -> Result<SysfsDev, i32> {
    let tb = table(attrs)?;
    let get = |k: u16| tb[k as usize].as_ref();
    let (Some(name), Some(nt), Some(idx), Some(guid), Some(ports)) = (
        get(nl::RDMA_NLDEV_ATTR_DEV_NAME),
        get(nl::RDMA_NLDEV_ATTR_DEV_NODE_TYPE),
        get(nl::RDMA_NLDEV_ATTR_DEV_INDEX),
        get(nl::RDMA_NLDEV_ATTR_NODE_GUID),
        get(nl::RDMA_NLDEV_ATTR_PORT_INDEX),
    ) else {
        return Err(PARSE_ERR);
    };
    let mut dev = SysfsDev::new().ok_or(libc::ENOMEM)?;
    let d = dev.get_mut();
    d.ibdev_idx = idx.u32().unwrap_or(0) as i32;
    d.num_ports = ports.u32().unwrap_or(0);
    d.node_guid = guid.u64().unwrap_or(0);
    d.flags |= abi::VSYSFS_READ_NODE_GUID;
    if !set_cstr(&mut d.ibdev_name, nla_str(name)) {
        return Err(PARSE_ERR);
    }
    let path = [
        record::sysfs_root(),
        b"/class/infiniband/",
        record::cbytes(&d.ibdev_name),
    ]
    .concat();
    if !set_cstr(&mut d.ibdev_path, &path) {
        return Err(PARSE_ERR);
    }
    d.node_type = record::decode_knode_type(u32::from(nt.u8().unwrap_or(0)));
    Ok(dev)
}

/// Converts the kernel's `huge_encode_dev` form to a `dev_t`.
pub fn decode_cdev(cdev64: u64) -> libc::dev_t {
    let major = ((cdev64 & 0xfff00) >> 8) as u32;
    let minor = ((cdev64 & 0xff) | ((cdev64 >> 12) & 0xfff00)) as u32;
    libc::makedev(major, minor)
}

/// Upstream's char-device callback: fills the uverbs side of `dev` (in the
/// same order, so a failure leaves the same partial record).
pub fn chardev_from_attrs(attrs: &[Attr<'_>], dev: &mut SysfsDev) -> Result<(), i32> {
    let tb = table(attrs)?;
    let get = |k: u16| tb[k as usize].as_ref();
    let (Some(cdev), Some(abi_a), Some(name)) = (
        get(nl::RDMA_NLDEV_ATTR_CHARDEV),
        get(nl::RDMA_NLDEV_ATTR_CHARDEV_ABI),
        get(nl::RDMA_NLDEV_ATTR_CHARDEV_NAME),
    ) else {
        return Err(PARSE_ERR);
    };
    // The uverbs ABI is 6 whenever the kernel answers this request.
    crate::kernel::state::set_abi_ver(6);
    let d = dev.get_mut();
    d.abi_ver = abi_a.u64().unwrap_or(0) as u32;
    d.driver_id = get(nl::RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID)
        .and_then(|a| a.u32())
        .unwrap_or(RDMA_DRIVER_UNKNOWN);
    d.sysfs_cdev = decode_cdev(cdev.u64().unwrap_or(0));
    if !set_cstr(&mut d.sysfs_name, nla_str(name)) {
        return Err(PARSE_ERR);
    }
    Ok(())
}

fn find_uverbs_nl(t: &mut dyn Transport, dev: &mut SysfsDev) -> Result<(), i32> {
    let idx = dev.get().ibdev_idx;
    t.get_chardev(idx, "uverbs", &mut |attrs| chardev_from_attrs(attrs, dev))?;
    if dev.get().sysfs_name[0] == 0 {
        return Err(libc::ENOENT);
    }
    Ok(())
}

/// Hooks for the per-device steps that touch the file system, so tests can
/// run the netlink logic without sysfs or /dev.
pub struct Steps<'a> {
    pub uverbs_sysfs: &'a mut dyn FnMut(&mut SysfsDev) -> Result<(), i32>,
    pub access: &'a mut dyn FnMut(&SysfsDev) -> Result<(), i32>,
}

/// Upstream's `find_sysfs_devs_nl` over a transport: `Err` means "use sysfs
/// instead".  The list is newest-first, like upstream's.
pub fn find_with(t: &mut dyn Transport, steps: Steps<'_>) -> Result<VecDeque<SysfsDev>, i32> {
    let mut list = VecDeque::new();
    let r = t.get_devices(&mut |attrs| {
        list.push_front(device_from_attrs(attrs)?);
        Ok(())
    });
    if let Err(e) = r {
        crate::log::log(
            crate::log::LEVEL_DEBUG,
            format_args!(
                "{}netlink device dump failed ({}), using sysfs\n",
                crate::log::PFX,
                std::io::Error::from_raw_os_error(e)
            ),
        );
        return Err(libc::EINVAL);
    }
    let mut out = VecDeque::with_capacity(list.len());
    for mut dev in list {
        let found = find_uverbs_nl(t, &mut dev).is_ok() || (steps.uverbs_sysfs)(&mut dev).is_ok();
        if found && (steps.access)(&dev).is_ok() {
            out.push_back(dev);
        } else if !found {
            crate::log::log(
                crate::log::LEVEL_INFO,
                format_args!(
                    "{}dropping device {}: no uverbs char device found\n",
                    crate::log::PFX,
                    dev.ibdev_name()
                ),
            );
        }
    }
    Ok(out)
}

/// Netlink discovery against the running kernel.
pub fn find() -> Result<VecDeque<SysfsDev>, i32> {
    let mut k = Kernel::open().map_err(|e| {
        crate::log::log(
            crate::log::LEVEL_DEBUG,
            format_args!(
                "{}no RDMA netlink ({}), using sysfs\n",
                crate::log::PFX,
                std::io::Error::from_raw_os_error(e)
            ),
        );
        libc::EOPNOTSUPP
    })?;
    find_with(
        &mut k,
        Steps {
            uverbs_sysfs: &mut super::sysfs::find_uverbs_under_ibdev,
            access: &mut super::sysfs::try_access_device,
        },
    )
}

/// Replies recorded as raw datagrams (tests and fuzzing).
pub struct Canned<'b> {
    pub devices: &'b [u8],
    /// Per device index, the reply to its char-device request.
    pub chardev: &'b dyn Fn(i32) -> Vec<u8>,
}

impl Transport for Canned<'_> {
    fn get_devices(&mut self, f: &mut Callback<'_>) -> Result<(), i32> {
        nl::replay(self.devices, |_, a| f(a))
    }
    fn get_chardev(&mut self, idx: i32, _name: &str, f: &mut Callback<'_>) -> Result<(), i32> {
        let b = (self.chardev)(idx);
        nl::replay(&b, |_, a| f(a))
    }
}

/// Runs netlink discovery over arbitrary reply bytes (the fuzz entry
/// point): never touches the file system; must never panic.
pub fn discover_from_bytes(devices: &[u8], chardev: &[u8]) -> Result<Vec<SysfsDev>, i32> {
    let cd = |_: i32| chardev.to_vec();
    let mut t = Canned { devices, chardev: &cd };
    let steps = Steps {
        uverbs_sysfs: &mut |_| Err(libc::ENOENT),
        access: &mut |_| Ok(()),
    };
    find_with(&mut t, steps).map(Vec::from)
}

#[cfg(test)]
mod tests;
