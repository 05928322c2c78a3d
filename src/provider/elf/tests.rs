//! The verneed reader on a crafted image, a real provider, and garbage.

use super::*;

/// A minimal ELF64 with `.dynstr` and `.gnu.version_r` needing the given
/// versions of `file`.
fn image(file: &str, versions: &[&str]) -> Vec<u8> {
    let mut strtab = vec![0u8];
    let file_off = strtab.len() as u32;
    strtab.extend_from_slice(file.as_bytes());
    strtab.push(0);
    let mut voffs = Vec::new();
    for v in versions {
        voffs.push(strtab.len() as u32);
        strtab.extend_from_slice(v.as_bytes());
        strtab.push(0);
    }
    let str_off = 64usize;
    let mut vn_off = str_off + strtab.len();
    vn_off = (vn_off + 7) & !7;
    let mut vn = Vec::new();
    vn.extend_from_slice(&1u16.to_le_bytes());
    vn.extend_from_slice(&(versions.len() as u16).to_le_bytes());
    vn.extend_from_slice(&file_off.to_le_bytes());
    vn.extend_from_slice(&16u32.to_le_bytes());
    vn.extend_from_slice(&0u32.to_le_bytes());
    for (i, o) in voffs.iter().enumerate() {
        vn.extend_from_slice(&0u32.to_le_bytes());
        vn.extend_from_slice(&0u16.to_le_bytes());
        vn.extend_from_slice(&((i + 2) as u16).to_le_bytes());
        vn.extend_from_slice(&o.to_le_bytes());
        let next: u32 = if i + 1 < voffs.len() { 16 } else { 0 };
        vn.extend_from_slice(&next.to_le_bytes());
    }
    let sh_off = (vn_off + vn.len() + 7) & !7;
    let mut b = vec![0u8; sh_off + 3 * 64];
    b[..4].copy_from_slice(b"\x7fELF");
    b[4] = 2; // ELFCLASS64
    b[5] = 1; // ELFDATA2LSB
    b[6] = 1; // EV_CURRENT: the loader (and `object`) accept no other
    b[0x28..0x30].copy_from_slice(&(sh_off as u64).to_le_bytes());
    b[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    b[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
    b[str_off..str_off + strtab.len()].copy_from_slice(&strtab);
    b[vn_off..vn_off + vn.len()].copy_from_slice(&vn);
    let mut sh = |i: usize, kind: u32, off: usize, size: usize, link: u32, info: u32| {
        let h = sh_off + i * 64;
        b[h + 4..h + 8].copy_from_slice(&kind.to_le_bytes());
        b[h + 0x18..h + 0x20].copy_from_slice(&(off as u64).to_le_bytes());
        b[h + 0x20..h + 0x28].copy_from_slice(&(size as u64).to_le_bytes());
        b[h + 0x28..h + 0x2c].copy_from_slice(&link.to_le_bytes());
        b[h + 0x2c..h + 0x30].copy_from_slice(&info.to_le_bytes());
    };
    sh(1, elf::SHT_STRTAB.0, str_off, strtab.len(), 0, 0);
    sh(2, elf::SHT_GNU_VERNEED.0, vn_off, vn.len(), 1, 1);
    b
}

#[test]
fn crafted_needs() {
    let b = image(SONAME, &["IBVERBS_PRIVATE_57", "IBVERBS_1.1"]);
    let n = needs(&b).unwrap();
    assert_eq!(
        n,
        [Need {
            file: SONAME.into(),
            versions: vec!["IBVERBS_PRIVATE_57".into(), "IBVERBS_1.1".into()]
        }]
    );
    assert_eq!(missing(&n), ["IBVERBS_PRIVATE_57"]);
    assert_eq!(provided_for("IBVERBS_PRIVATE_57"), "IBVERBS_PRIVATE_34");
    assert_eq!(provided_for("IBVERBS_1.15"), "IBVERBS_1.0 to IBVERBS_1.14");
    let other = image("libc.so.6", &["GLIBC_9.99"]);
    assert!(missing(&needs(&other).unwrap()).is_empty());
}

#[test]
fn garbage_never_panics() {
    let b = image(SONAME, &["IBVERBS_PRIVATE_57", "IBVERBS_1.1"]);
    for n in 0..b.len() {
        let _ = needs(&b[..n]);
    }
    for i in 0..b.len() {
        for v in [0u8, 0x7f, 0xff] {
            let mut x = b.clone();
            x[i] = v;
            let _ = needs(&x);
        }
    }
    assert!(needs(b"not an elf").is_none());
}

#[test]
fn provided_matches_symbols_map() {
    let map = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/symbols.map")).unwrap();
    let nodes: Vec<&str> = map
        .lines()
        .filter_map(|l| l.strip_suffix(" {").or_else(|| l.strip_suffix('{')))
        .map(str::trim)
        .filter(|l| l.starts_with("IBVERBS_"))
        .collect();
    assert_eq!(nodes, PROVIDED);
}

#[test]
fn real_provider_needs_private_34() {
    let p = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so");
    if !p.exists() {
        eprintln!("skipped: {} not installed", p.display());
        return;
    }
    let n = needs(&std::fs::read(p).unwrap()).unwrap();
    let ours = n.iter().find(|n| n.file == SONAME).expect("needs libibverbs.so.1");
    assert!(ours.versions.iter().any(|v| v == "IBVERBS_PRIVATE_34"));
    assert!(missing(&n).is_empty(), "{n:?}");
    assert!(missing_in_file(p).is_empty());
}
