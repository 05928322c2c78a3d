//! Netlink discovery over crafted replies.

use super::*;
use crate::kernel::netlink::{encode, encode_done, encode_error};

const T: u16 = nl::nl_type(nl::RDMA_NL_NLDEV, nl::RDMA_NLDEV_CMD_GET);

fn dev_msg(idx: u32, name: &str, extra: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    let mut attrs: Vec<(u16, Vec<u8>)> = vec![
        (nl::RDMA_NLDEV_ATTR_DEV_INDEX, idx.to_ne_bytes().to_vec()),
        (nl::RDMA_NLDEV_ATTR_DEV_NAME, n),
        (nl::RDMA_NLDEV_ATTR_PORT_INDEX, 2u32.to_ne_bytes().to_vec()),
        (
            nl::RDMA_NLDEV_ATTR_NODE_GUID,
            0x0002_c903_0042_f1b0u64.to_ne_bytes().to_vec(),
        ),
        (nl::RDMA_NLDEV_ATTR_DEV_NODE_TYPE, vec![1]),
    ];
    attrs.extend(extra.iter().cloned());
    let r: Vec<(u16, &[u8])> = attrs.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    encode(T, 2, 0, &r)
}

fn chardev_msg(name: &str, abi: u64, cdev: u64, driver: Option<u32>) -> Vec<u8> {
    let mut n = name.as_bytes().to_vec();
    n.push(0);
    let mut attrs: Vec<(u16, Vec<u8>)> = vec![
        (nl::RDMA_NLDEV_ATTR_CHARDEV, cdev.to_ne_bytes().to_vec()),
        (nl::RDMA_NLDEV_ATTR_CHARDEV_ABI, abi.to_ne_bytes().to_vec()),
        (nl::RDMA_NLDEV_ATTR_CHARDEV_NAME, n),
    ];
    if let Some(d) = driver {
        attrs.push((nl::RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, d.to_ne_bytes().to_vec()));
    }
    let r: Vec<(u16, &[u8])> = attrs.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    encode(nl::nl_type(nl::RDMA_NL_NLDEV, nl::RDMA_NLDEV_CMD_GET_CHARDEV), 0, 0, &r)
}

struct Run {
    uverbs_sysfs_calls: Vec<i32>,
    deny_access: Vec<String>,
}

fn run(devices: &[u8], chardev: &dyn Fn(i32) -> Vec<u8>, r: &mut Run) -> Result<Vec<SysfsDev>, i32> {
    let mut t = Canned { devices, chardev };
    let calls = &mut r.uverbs_sysfs_calls;
    let deny = &r.deny_access;
    let steps = Steps {
        uverbs_sysfs: &mut |d: &mut SysfsDev| {
            calls.push(d.get().ibdev_idx);
            Err(libc::ENOENT)
        },
        access: &mut |d: &SysfsDev| {
            if deny.contains(&d.sysfs_name()) {
                Err(libc::ENOENT)
            } else {
                Ok(())
            }
        },
    };
    find_with(&mut t, steps).map(Vec::from)
}

fn fresh() -> Run {
    Run {
        uverbs_sysfs_calls: Vec::new(),
        deny_access: Vec::new(),
    }
}

#[test]
fn one_device_all_fields() {
    let mut b = dev_msg(7, "rxe0", &[]);
    b.extend(encode_done());
    // 231:192 in huge_encode_dev form, a large minor to check the split.
    let cdev = (231u64 << 8) | 0xc0 | (0x123u64 << 20);
    let cd = move |i: i32| {
        assert_eq!(i, 7);
        chardev_msg("uverbs3", 1, cdev, Some(11))
    };
    let v = run(&b, &cd, &mut fresh()).unwrap();
    assert_eq!(v.len(), 1);
    let d = v[0].get();
    assert_eq!(v[0].ibdev_name(), "rxe0");
    assert_eq!(v[0].sysfs_name(), "uverbs3");
    assert_eq!(
        v[0].ibdev_path(),
        format!("{}/class/infiniband/rxe0", crate::sysfs::root().display())
    );
    assert_eq!(d.ibdev_idx, 7);
    assert_eq!(d.num_ports, 2);
    assert_eq!(d.node_guid, 0x0002_c903_0042_f1b0);
    assert_eq!(d.flags & abi::VSYSFS_READ_NODE_GUID, abi::VSYSFS_READ_NODE_GUID);
    assert_eq!(d.node_type, abi::IBV_NODE_CA);
    assert_eq!(d.abi_ver, 1);
    assert_eq!(d.driver_id, 11);
    assert_eq!(libc::major(d.sysfs_cdev), 231);
    assert_eq!(libc::minor(d.sysfs_cdev), 0xc0 | 0x12300);
    assert_eq!(crate::kernel::state::abi_ver(), 6);
}

#[test]
fn order_is_newest_first_and_driver_id_defaults() {
    let mut b = dev_msg(1, "a0", &[]);
    b.extend(dev_msg(2, "b0", &[]));
    b.extend(encode_done());
    let cd = |i: i32| chardev_msg(&format!("uverbs{i}"), 1, 0, None);
    let v = run(&b, &cd, &mut fresh()).unwrap();
    let names: Vec<String> = v.iter().map(|d| d.ibdev_name()).collect();
    assert_eq!(names, ["b0", "a0"]);
    assert_eq!(v[0].get().driver_id, RDMA_DRIVER_UNKNOWN);
}

#[test]
fn missing_required_attribute_fails_whole_dump() {
    for drop in [
        nl::RDMA_NLDEV_ATTR_DEV_NAME,
        nl::RDMA_NLDEV_ATTR_DEV_INDEX,
        nl::RDMA_NLDEV_ATTR_PORT_INDEX,
        nl::RDMA_NLDEV_ATTR_NODE_GUID,
        nl::RDMA_NLDEV_ATTR_DEV_NODE_TYPE,
    ] {
        let full = dev_msg(1, "a0", &[]);
        let attrs = nl::parse_messages(&full);
        let nl::Message::Data { attrs, .. } = &attrs[0] else {
            panic!()
        };
        let kept: Vec<(u16, &[u8])> = attrs
            .iter()
            .filter(|a| a.kind != drop)
            .map(|a| (a.kind, a.data))
            .collect();
        let mut b = dev_msg(0, "ok0", &[]);
        b.extend(encode(T, 2, 0, &kept));
        b.extend(encode_done());
        let cd = |_: i32| chardev_msg("uverbs0", 1, 0, None);
        assert_eq!(
            run(&b, &cd, &mut fresh()).unwrap_err(),
            libc::EINVAL,
            "without attr {drop}"
        );
    }
}

#[test]
fn policy_lengths_and_unknown_types() {
    // A 2-byte DEV_INDEX fails the policy.
    let short = encode(T, 2, 0, &[(nl::RDMA_NLDEV_ATTR_DEV_INDEX, &[1, 0])]);
    let mut b = dev_msg(1, "a0", &[]);
    b.extend(short);
    let cd = |_: i32| chardev_msg("uverbs0", 1, 0, None);
    assert!(run(&b, &cd, &mut fresh()).is_err());
    // Types at or above RDMA_NLDEV_ATTR_MAX are ignored, even malformed.
    let b = dev_msg(1, "a0", &[(nl::RDMA_NLDEV_ATTR_MAX, vec![]), (500, vec![1])]);
    assert_eq!(run(&b, &cd, &mut fresh()).unwrap().len(), 1);
    // A later duplicate wins.
    let b = dev_msg(1, "a0", &[(nl::RDMA_NLDEV_ATTR_DEV_NAME, b"z9\0".to_vec())]);
    assert_eq!(run(&b, &cd, &mut fresh()).unwrap()[0].ibdev_name(), "z9");
}

#[test]
fn long_names_fail() {
    let long = "x".repeat(64);
    let b = dev_msg(1, &long, &[]);
    let cd = |_: i32| chardev_msg("uverbs0", 1, 0, None);
    assert!(run(&b, &cd, &mut fresh()).is_err());
    // A too-long char device name makes that request fail: sysfs is asked.
    let b = dev_msg(1, "a0", &[]);
    let cd = |_: i32| chardev_msg(&long, 1, 0, None);
    let mut r = fresh();
    assert_eq!(run(&b, &cd, &mut r).unwrap().len(), 0);
    assert_eq!(r.uverbs_sysfs_calls, [1]);
}

#[test]
fn chardev_failures_fall_back_and_access_drops() {
    let mut b = dev_msg(1, "a0", &[]);
    b.extend(dev_msg(2, "b0", &[]));
    b.extend(dev_msg(3, "c0", &[]));
    b.extend(encode_done());
    let cd = |i: i32| match i {
        1 => encode_error(-libc::ENOENT),
        2 => encode(
            nl::nl_type(5, 15),
            0,
            0,
            &[(nl::RDMA_NLDEV_ATTR_CHARDEV_NAME, b"uverbs2\0")],
        ),
        _ => chardev_msg(&format!("uverbs{i}"), 1, 0, None),
    };
    let mut r = fresh();
    r.deny_access.push("uverbs3".into());
    assert_eq!(run(&b, &cd, &mut r).unwrap().len(), 0);
    r.uverbs_sysfs_calls.sort();
    assert_eq!(r.uverbs_sysfs_calls, [1, 2]);
}

#[test]
fn kernel_error_in_dump_fails() {
    let mut b = dev_msg(1, "a0", &[]);
    b.extend(encode_error(-libc::EPERM));
    let cd = |_: i32| chardev_msg("uverbs0", 1, 0, None);
    assert_eq!(run(&b, &cd, &mut fresh()).unwrap_err(), libc::EINVAL);
}

/// Every prefix and a set of byte flips of valid replies: no panic.
#[test]
fn crafted_corpus_never_panics() {
    let mut b = dev_msg(1, "a0", &[]);
    b.extend(dev_msg(
        2,
        "b0",
        &[(nl::RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 5u32.to_ne_bytes().to_vec())],
    ));
    b.extend(encode_done());
    let c = chardev_msg("uverbs0", 1, 0x1234_5678_9abc, Some(3));
    for n in 0..=b.len() {
        let _ = discover_from_bytes(&b[..n], &c);
    }
    for n in 0..=c.len() {
        let _ = discover_from_bytes(&b, &c[..n]);
    }
    for i in 0..b.len() {
        for v in [0u8, 1, 0x7f, 0xff] {
            let mut x = b.clone();
            x[i] = v;
            let _ = discover_from_bytes(&x, &c);
        }
    }
    for i in 0..c.len() {
        let mut x = c.clone();
        x[i] ^= 0xff;
        let _ = discover_from_bytes(&b, &x);
    }
}
