//! Reads the symbol versions an ELF shared object needs from each library
//! (`.gnu.version_r`, `SHT_GNU_verneed`), to say which version of this
//! library a provider that failed to load was built for.  A small reader of
//! its own: 64- and 32-bit little-endian ELF, bounds-checked throughout.

/// The version nodes this library defines (symbols.map; checked by test).
pub const PROVIDED: &[&str] = &[
    "IBVERBS_1.0",
    "IBVERBS_1.1",
    "IBVERBS_1.5",
    "IBVERBS_1.6",
    "IBVERBS_1.7",
    "IBVERBS_1.8",
    "IBVERBS_1.9",
    "IBVERBS_1.10",
    "IBVERBS_1.11",
    "IBVERBS_1.12",
    "IBVERBS_1.13",
    "IBVERBS_1.14",
    "IBVERBS_PRIVATE_34",
];

/// Our soname, as it appears in a provider's needs.
pub const SONAME: &str = "libibverbs.so.1";

const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;

/// One library a shared object needs versions from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub file: String,
    pub versions: Vec<String>,
}

struct Reader<'a> {
    b: &'a [u8],
    wide: bool,
}

impl Reader<'_> {
    fn u16(&self, o: usize) -> Option<u16> {
        Some(u16::from_le_bytes(self.b.get(o..o.checked_add(2)?)?.try_into().ok()?))
    }
    fn u32(&self, o: usize) -> Option<u32> {
        Some(u32::from_le_bytes(self.b.get(o..o.checked_add(4)?)?.try_into().ok()?))
    }
    fn u64(&self, o: usize) -> Option<u64> {
        Some(u64::from_le_bytes(self.b.get(o..o.checked_add(8)?)?.try_into().ok()?))
    }
    /// A word: 8 bytes in ELF64, 4 in ELF32.
    fn word(&self, o: usize) -> Option<usize> {
        if self.wide {
            usize::try_from(self.u64(o)?).ok()
        } else {
            Some(self.u32(o)? as usize)
        }
    }
    fn cstr(&self, o: usize) -> Option<String> {
        let s = self.b.get(o..)?;
        let end = s.iter().position(|&c| c == 0)?;
        Some(String::from_utf8_lossy(&s[..end]).into_owned())
    }
}

/// A section header: type, file offset, size, link.
struct Section {
    kind: u32,
    offset: usize,
    size: usize,
    link: u32,
    info: u32,
}

fn sections(r: &Reader<'_>) -> Option<Vec<Section>> {
    let (shoff, shentsize, shnum) = if r.wide {
        (r.word(0x28)?, r.u16(0x3a)? as usize, r.u16(0x3c)? as usize)
    } else {
        (r.word(0x20)?, r.u16(0x2e)? as usize, r.u16(0x30)? as usize)
    };
    let min = if r.wide { 0x40 } else { 0x28 };
    if shentsize < min {
        return None;
    }
    let mut out = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        let s = if r.wide {
            Section {
                kind: r.u32(h + 4)?,
                offset: r.word(h + 0x18)?,
                size: r.word(h + 0x20)?,
                link: r.u32(h + 0x28)?,
                info: r.u32(h + 0x2c)?,
            }
        } else {
            Section {
                kind: r.u32(h + 4)?,
                offset: r.word(h + 0x10)?,
                size: r.word(h + 0x14)?,
                link: r.u32(h + 0x18)?,
                info: r.u32(h + 0x1c)?,
            }
        };
        out.push(s);
    }
    Some(out)
}

/// The version needs of an ELF image; `None` when it is not a
/// little-endian ELF file this reader understands.
pub fn needs(b: &[u8]) -> Option<Vec<Need>> {
    if b.get(..4)? != b"\x7fELF" || *b.get(5)? != 1 {
        return None;
    }
    let wide = match b.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let r = Reader { b, wide };
    let secs = sections(&r)?;
    let mut out = Vec::new();
    for s in secs.iter().filter(|s| s.kind == SHT_GNU_VERNEED) {
        let strtab = secs.get(s.link as usize)?;
        let end = s.offset.checked_add(s.size)?;
        let str_at = |o: u32| -> Option<String> {
            if (o as usize) >= strtab.size {
                return None;
            }
            r.cstr(strtab.offset.checked_add(o as usize)?)
        };
        let mut at = s.offset;
        // sh_info holds the entry count; never trust it beyond the section.
        for _ in 0..s.info.min(4096) {
            if at.checked_add(16)? > end {
                break;
            }
            let cnt = r.u16(at + 2)?;
            let file = str_at(r.u32(at + 4)?)?;
            let mut aux = at.checked_add(r.u32(at + 8)? as usize)?;
            let mut versions = Vec::new();
            for _ in 0..cnt {
                if aux.checked_add(16)? > end {
                    break;
                }
                versions.push(str_at(r.u32(aux + 8)?)?);
                let next = r.u32(aux + 12)? as usize;
                if next == 0 {
                    break;
                }
                aux = aux.checked_add(next)?;
            }
            out.push(Need { file, versions });
            let next = r.u32(at + 12)? as usize;
            if next == 0 {
                break;
            }
            at = at.checked_add(next)?;
        }
    }
    Some(out)
}

/// The versions `needs` asks of this library that it does not define.
pub fn missing(needs: &[Need]) -> Vec<String> {
    needs
        .iter()
        .filter(|n| n.file == SONAME)
        .flat_map(|n| n.versions.iter())
        .filter(|v| !PROVIDED.contains(&v.as_str()))
        .cloned()
        .collect()
}

/// How we describe what we provide in place of a missing version.
pub fn provided_for(missing: &str) -> &'static str {
    if missing.starts_with("IBVERBS_PRIVATE_") {
        "IBVERBS_PRIVATE_34"
    } else {
        "IBVERBS_1.0 to IBVERBS_1.14"
    }
}

/// The missing versions of the file at `path` (empty when it cannot be
/// read or needs nothing we lack).
pub fn missing_in_file(path: &std::path::Path) -> Vec<String> {
    // Providers are small; refuse to slurp anything absurd.
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() <= 512 << 20 => {}
        _ => return Vec::new(),
    }
    std::fs::read(path)
        .ok()
        .and_then(|b| needs(&b))
        .map(|n| missing(&n))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
