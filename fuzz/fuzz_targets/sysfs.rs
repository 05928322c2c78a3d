//! Fuzzes the library's parsers of sysfs file contents: `node_guid`
//! (device::parse_guid), `abi_version` and other decimal attributes
//! (record::strtol / strtoul), a uverbs `dev` attribute (record::parse_dev),
//! upstream's read termination rule (sysfs::terminate), the bounded path
//! join (device::sysfs::join_checked), C-string records (record::set_cstr,
//! cstr, as_cstr) and the names devices are matched by
//! (provider::matching::name_alias, pci_pattern).  Nothing may panic; the
//! results must keep their documented invariants.
#![no_main]

use ibverbs_rs::device::record::{self, SysfsDev};
use ibverbs_rs::device::{parse_guid, sysfs::join_checked};
use ibverbs_rs::provider::matching::{name_alias, pci_pattern};
use ibverbs_rs::sysfs::{terminate, ReadOutcome};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // node_guid: a parsed GUID prints back to a text that parses the same.
    if let Some(g) = parse_guid(data) {
        let text = format!(
            "{:04x}:{:04x}:{:04x}:{:04x}",
            g >> 48,
            (g >> 32) & 0xffff,
            (g >> 16) & 0xffff,
            g & 0xffff
        );
        assert_eq!(parse_guid(text.as_bytes()), Some(g), "{text}");
    }

    // decimal attributes (abi_version, port numbers, ...)
    let l = record::strtol(data);
    let u = record::strtoul(data);
    // (strtol saturates at i64::MAX, strtoul only at u64::MAX)
    if !data.contains(&b'-') && (0..i64::MAX).contains(&l) {
        assert_eq!(u, l as u64);
    }
    if let Some((major, minor)) = record::parse_dev(data) {
        let _ = (major, minor);
        assert!(data.contains(&b':'));
    }

    // the read termination rule: a buffer of 1..=256 bytes holding n bytes read
    let cap = 1 + usize::from(data.first().copied().unwrap_or(0));
    let n = data.len().min(cap);
    let mut buf = vec![0u8; cap];
    buf[..n].copy_from_slice(&data[..n]);
    match terminate(&mut buf, n) {
        ReadOutcome::Len(k) => {
            assert!(k <= n && k < cap);
            assert_eq!(buf[k], 0);
        }
        ReadOutcome::Err(_) => assert!(n == cap && data[n - 1] != b'\n'),
    }

    // bounded path joins
    let mid = data.len() / 2;
    if let Some(v) = join_checked(&[&data[..mid], b"/", &data[mid..]], cap) {
        assert!(v.len() < cap);
    }

    // C-string records and the names a device is matched by
    if let Some(mut dev) = SysfsDev::new() {
        let fits = record::set_cstr(&mut dev.get_mut().ibdev_name, data);
        let name = record::cstr(&dev.get().ibdev_name);
        let bytes = record::cbytes(&dev.get().ibdev_name);
        assert_eq!(record::as_cstr(&dev.get().ibdev_name).to_bytes(), bytes);
        assert!(bytes.len() < dev.get().ibdev_name.len());
        if fits {
            assert!(data.starts_with(bytes));
        }
        let alias = name_alias(&dev);
        assert!(alias.as_bytes().starts_with(b"rdma_device:N"));
        let _ = name;
    }
    if data.len() >= 4 {
        let p = pci_pattern(
            u16::from_le_bytes([data[0], data[1]]),
            u16::from_le_bytes([data[2], data[3]]),
        );
        assert_eq!(p.as_bytes().len(), "pci:v00000000d00000000sv*".len());
    }
});
