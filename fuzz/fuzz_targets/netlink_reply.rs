//! Fuzzes the RDMA netlink reply parser and the discovery built on it:
//! arbitrary bytes stand for the kernel's reply to the device dump and to
//! the char-device requests.  Nothing may panic, read out of bounds or leak.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first two bytes say where the dump reply ends.
    let (split, rest) = match data {
        [a, b, rest @ ..] => (u16::from_le_bytes([*a, *b]) as usize, rest),
        _ => (0, data),
    };
    let split = split.min(rest.len());
    let (devices, chardev) = rest.split_at(split);
    for m in ibverbs_rs::kernel::netlink::parse_messages(devices) {
        let _ = m;
    }
    if let Ok(devs) = ibverbs_rs::device::netlink::discover_from_bytes(devices, chardev) {
        for d in devs {
            let _ = (d.ibdev_name(), d.sysfs_name(), d.ibdev_path());
        }
    }
});
