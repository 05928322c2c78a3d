//! Reads the symbol versions an ELF shared object needs from each library
//! (`.gnu.version_r`, `SHT_GNU_verneed`), to say which version of this
//! library a provider that failed to load was built for.  The ELF is read
//! with the `object` crate (64- and 32-bit little-endian, bounds-checked).

use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
use object::{FileKind, LittleEndian};

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
    "IBVERBS_1.15",
    "IBVERBS_1.16",
    "IBVERBS_1.17",
    "IBVERBS_1.18",
    "IBVERBS_PRIVATE_34",
    "IBVERBS_PRIVATE_65",
];

/// Our soname, as it appears in a provider's needs.
pub const SONAME: &str = "libibverbs.so.1";

/// One library a shared object needs versions from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub file: String,
    pub versions: Vec<String>,
}

/// The version needs of an ELF image; `None` when it is not a
/// little-endian ELF file (32- or 64-bit) that reads cleanly.
pub fn needs(b: &[u8]) -> Option<Vec<Need>> {
    match FileKind::parse(b).ok()? {
        FileKind::Elf32 => needs_of::<elf::FileHeader32<LittleEndian>>(b),
        FileKind::Elf64 => needs_of::<elf::FileHeader64<LittleEndian>>(b),
        _ => None,
    }
}

/// Every `SHT_GNU_VERNEED` section's entries, with their names from the
/// string table the section links to.
fn needs_of<H: FileHeader<Endian = LittleEndian>>(b: &[u8]) -> Option<Vec<Need>> {
    let header = H::parse(b).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.section_headers(endian, b).ok()?;
    let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
    let mut out = Vec::new();
    for section in sections {
        let Some((mut entries, link)) = section.gnu_verneed(endian, b).ok()? else {
            continue;
        };
        let strings = sections.get(link.0)?.strings(endian, b).ok()??;
        while let Some((need, mut aux)) = entries.next().ok()? {
            let file = text(need.file(endian, strings).ok()?);
            let mut versions = Vec::new();
            while let Some(v) = aux.next().ok()? {
                versions.push(text(v.name(endian, strings).ok()?));
            }
            out.push(Need { file, versions });
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

/// Whether the ELF image imports (has an undefined dynamic symbol) `name`.
pub fn imports(b: &[u8], name: &str) -> bool {
    use object::{Object, ObjectSymbol};
    let Ok(file) = object::File::parse(b) else {
        return false;
    };
    file.dynamic_symbols()
        .any(|s| s.is_undefined() && s.name_bytes().is_ok_and(|n| n == name.as_bytes()))
}

/// [`imports`] of the file at `path` (false when it cannot be read).
pub fn imports_in_file(path: &std::path::Path, name: &str) -> bool {
    std::fs::read(path).is_ok_and(|b| imports(&b, name))
}

/// The file of the loaded object that contains `addr` (`dladdr`).  The
/// address is only looked up in the loader's tables, never dereferenced.
pub fn file_of_address(addr: usize) -> Option<std::path::PathBuf> {
    let addr = addr as *const std::os::raw::c_void;
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: dladdr only reads the loader's tables; `info` is a plain
    // out-struct it fills on success.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: as above; any address may be asked about.
    if unsafe { libc::dladdr(addr, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: on success dli_fname is the loader's NUL-terminated path.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
}
