//! Loading providers as rdma-core does (`load_drivers`): the config
//! directory's names and `RDMAV_DRIVERS`/`IBV_DRIVERS`, each tried as
//!
//! 1. an absolute path: `<name>-rdmav<N>.so`;
//! 2. else `<provider dir>/lib<name>-rdmav<N>.so`, then `lib<name>-rdmav<N>.so`
//!    on the library search path,
//!
//! for each private-ABI generation N this library serves, newest first
//! (`RDMAV_PROVIDER_ABI` overrides the order, see [`generation_order`]):
//! the first that loads serves the provider's devices.
//!
//! with `dlopen(RTLD_NOW)`; a provider registers itself from its
//! constructor.  Failures print upstream's warning; then, beyond upstream,
//! the reason in plain words when the file was there but could not be
//! loaded (a symbol version this library lacks, or the earlier attempt's
//! error that upstream's message hides), and every attempt in detail under
//! `VERBS_LOG_LEVEL`.
//!
//! Upstream loads every configured provider the first time a device is
//! left unclaimed.  This library loads first only the ones that can claim
//! the devices found ([`load_needed`]): a device the kernel names a driver
//! id for is claimed, upstream's way, by the first provider whose match
//! table lists that id, and the rdma-core providers' tables are facts
//! ([`KNOWN`]).  The others are loaded when a device needs more than that
//! ([`load_drivers`]); their place in the provider list is upstream's all
//! the same (`super::order_key`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use crate::log::{log, LEVEL_DEBUG, LEVEL_WARN, PFX};

/// The file-name suffix of this project's own provider (the software
/// device, a PABI 34 provider).
pub const SUFFIX: &str = "-rdmav34.so";

/// `VERBS_PROVIDER_DIR` (fixed when the library is built, like upstream's).
pub const PROVIDER_DIR: &str = match option_env!("IBVERBS_PROVIDER_DIR") {
    Some(d) => d,
    None => {
        if cfg!(target_arch = "x86_64") {
            "/usr/lib/x86_64-linux-gnu/libibverbs"
        } else if cfg!(target_arch = "aarch64") {
            "/usr/lib/aarch64-linux-gnu/libibverbs"
        } else {
            "/usr/lib/libibverbs"
        }
    }
};

/// One `dlopen` attempt that failed.
#[derive(Debug, Clone)]
pub struct Failure {
    pub path: Vec<u8>,
    pub dlerror: String,
}

/// `dlopen(path, RTLD_NOW)` (no other flag, as upstream): the handle is kept
/// for the life of the process (providers are never unloaded).  The error
/// is `dlerror()`'s text, which upstream's warning prints.
fn dlopen_now(path: &[u8]) -> Result<(), String> {
    if path.contains(&0) {
        return Err("name contains a NUL byte".into());
    }
    // SAFETY: dlopen runs the file's ELF constructors: the files tried are
    // providers named by the system's configuration or the user's
    // environment, exactly those upstream loads, and a provider's
    // constructor calls verbs_register_driver_34, which takes only the
    // registry lock (not held here: registered() releases it).  Their
    // destructors do not run early: the library is never closed
    // (`into_raw` below).  The path has no interior NUL (checked above).
    let lib = unsafe { libloading::os::unix::Library::open(Some(OsStr::from_bytes(path)), libc::RTLD_NOW) };
    match lib {
        Ok(lib) => {
            // Give up the handle without dlclose: providers stay loaded.
            let _ = lib.into_raw();
            Ok(())
        }
        Err(libloading::Error::DlOpen { source }) => Err(source.to_string()),
        Err(_) => Err("unknown dlopen error".into()),
    }
}

/// One `dlopen` of `path` for the provider `name`, logged under
/// `VERBS_LOG_LEVEL`.
pub fn attempt(name: &[u8], path: &[u8]) -> Result<(), Failure> {
    let before = super::registered().len();
    let r = dlopen_now(path);
    let shown = String::from_utf8_lossy(path);
    match &r {
        Ok(()) => {
            let n = super::registered().len() - before;
            log(
                LEVEL_DEBUG,
                format_args!(
                    "{PFX}provider '{}': dlopen(\"{shown}\", RTLD_NOW) loaded it; {n} provider(s) registered\n",
                    String::from_utf8_lossy(name)
                ),
            );
        }
        Err(e) => {
            let st = if path.contains(&b'/') {
                match std::fs::metadata(OsStr::from_bytes(path)) {
                    Ok(_) => "the file exists".to_string(),
                    Err(err) => format!("stat: errno {} ({})", err.raw_os_error().unwrap_or(0), err),
                }
            } else {
                "searched the library path".to_string()
            };
            log(
                LEVEL_DEBUG,
                format_args!(
                    "{PFX}provider '{}': dlopen(\"{shown}\", RTLD_NOW) failed: {e}; {st}\n",
                    String::from_utf8_lossy(name)
                ),
            );
        }
    }
    r.map_err(|dlerror| Failure {
        path: path.to_vec(),
        dlerror,
    })
}

/// The file a failed attempt concerns, when it exists: the path itself, or
/// the object named by "(required by …)" in the loader's message (for a
/// search-path attempt, or a dependency of the provider).
fn file_of(f: &Failure) -> Option<Vec<u8>> {
    if let Some(i) = f.dlerror.rfind("(required by ") {
        let rest = &f.dlerror[i + "(required by ".len()..];
        if let Some(j) = rest.find(')') {
            return Some(rest.as_bytes()[..j].to_vec());
        }
    }
    if f.path.starts_with(b"/") && Path::new(OsStr::from_bytes(&f.path)).is_file() {
        return Some(f.path.clone());
    }
    None
}

/// The explanation lines for failed attempts (beyond upstream's warning).
/// `last` is the attempt upstream reports; earlier ones are ones upstream
/// drops silently.
pub fn explain(failures: &[Failure]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, f) in failures.iter().enumerate() {
        let last = i + 1 == failures.len();
        let Some(file) = file_of(f) else { continue };
        let missing = super::elf::missing_in_file(Path::new(OsStr::from_bytes(&file)));
        let shown = String::from_utf8_lossy(&file);
        if !missing.is_empty() {
            for v in missing {
                out.push(format!(
                    "{PFX}Warning: {shown} needs {v}, this library provides {}\n",
                    super::elf::provided_for(&v)
                ));
            }
        } else if !last {
            out.push(format!(
                "{PFX}Warning: {} could not be loaded: {}\n",
                String::from_utf8_lossy(&f.path),
                f.dlerror
            ));
        }
    }
    out
}

fn warn(so_name: &[u8], failures: &[Failure]) {
    let dlerr = failures.last().map(|f| f.dlerror.as_str()).unwrap_or("");
    let mut msg = format!(
        "{PFX}Warning: couldn't load driver '{}': {dlerr}\n",
        String::from_utf8_lossy(so_name)
    );
    for l in explain(failures) {
        msg.push_str(&l);
    }
    eprint!("{msg}");
}

/// The private-ABI generations tried for a provider name, in order:
/// `RDMAV_PROVIDER_ABI` (generation numbers, e.g. "34" or "34,65"; unknown
/// numbers are ignored) or, by default, newest first (65, then 34), a
/// generation other than the system's only when its file is in the
/// provider directory ([`worth_trying`]).  The first generation whose file
/// loads serves the provider's devices.
pub fn generation_order() -> Vec<u32> {
    let known: Vec<u32> = crate::generation::GENERATIONS.iter().map(|g| g.number).collect();
    let chosen: Vec<u32> = crate::env::get("RDMAV_PROVIDER_ABI")
        .map(|v| {
            String::from_utf8_lossy(v.to_bytes())
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter_map(|t| t.parse().ok())
                .filter(|n| known.contains(n))
                .collect()
        })
        .unwrap_or_default();
    if chosen.is_empty() {
        known
    } else {
        chosen
    }
}

/// The generation of the providers installed on this system: the newest
/// one with a `lib*-rdmav<N>.so` in the provider directory (the oldest
/// served when there is none).  Read once.
pub fn system_generation() -> u32 {
    static GEN: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *GEN.get_or_init(|| {
        let names = provider_dir_files();
        let gens = &crate::generation::GENERATIONS;
        gens.iter()
            .map(|g| g.number)
            .find(|n| {
                let suffix = format!("-rdmav{n}.so");
                names
                    .iter()
                    .any(|f| f.starts_with(b"lib") && f.ends_with(suffix.as_bytes()))
            })
            .unwrap_or(gens[gens.len() - 1].number)
    })
}

/// The file names in the provider directory (read once).
fn provider_dir_files() -> &'static [Vec<u8>] {
    static FILES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    FILES.get_or_init(|| {
        super::config::dir_entries(PROVIDER_DIR.as_bytes())
            .map(|v| v.into_iter().map(|(name, _)| name).collect())
            .unwrap_or_default()
    })
}

/// Whether generation `n` is worth trying for provider `name` (not an
/// absolute path): by default, another generation than the system's is
/// tried only when its file is in the provider directory, so that loading
/// costs what upstream's does (one dlopen per provider); with
/// `RDMAV_PROVIDER_ABI` set, every listed generation is tried everywhere.
fn worth_trying(name: &[u8], n: u32, overridden: bool) -> bool {
    if overridden || name.first() == Some(&b'/') || n == system_generation() {
        return true;
    }
    let file = [b"lib", name, format!("-rdmav{n}.so").as_bytes()].concat();
    provider_dir_files().contains(&file)
}

/// Upstream's `load_driver` for one name, for each generation in
/// [`generation_order`] until one loads.  When none does, the warning is
/// upstream's for the generation whose file exists (the one whose failure
/// says something), else for the system's generation
/// ([`system_generation`]): the message that system's own libibverbs prints.
pub fn load_driver(name: &[u8]) {
    let mut tried: Vec<(Vec<u8>, Vec<Failure>)> = Vec::new();
    let overridden = crate::env::get("RDMAV_PROVIDER_ABI").is_some();
    for n in generation_order() {
        if !worth_trying(name, n, overridden) {
            continue;
        }
        let suffix = format!("-rdmav{n}.so");
        match load_generation(name, suffix.as_bytes()) {
            Ok(()) => {
                for (so, f) in &tried {
                    for l in explain(f) {
                        log(LEVEL_DEBUG, format_args!("{l}"));
                    }
                    log(
                        LEVEL_DEBUG,
                        format_args!(
                            "{PFX}provider '{}': {} not loaded, a later generation was\n",
                            String::from_utf8_lossy(name),
                            String::from_utf8_lossy(so)
                        ),
                    );
                }
                return;
            }
            Err(t) => tried.push(t),
        }
    }
    let system = format!("-rdmav{}.so", system_generation());
    let pick = tried
        .iter()
        .position(|(_, f)| f.iter().any(|x| file_of(x).is_some()))
        .or_else(|| tried.iter().position(|(so, _)| so.ends_with(system.as_bytes())))
        .unwrap_or(0);
    if let Some((so, f)) = tried.get(pick) {
        warn(so, f);
    }
}

/// One generation's attempts (upstream's order): an absolute name as is,
/// else the provider directory, then the library search path.  On failure,
/// the file name upstream's warning shows and every failed attempt.
fn load_generation(name: &[u8], suffix: &[u8]) -> Result<(), (Vec<u8>, Vec<Failure>)> {
    if name.first() == Some(&b'/') {
        let so = [name, suffix].concat();
        return attempt(name, &so).map_err(|f| (so, vec![f]));
    }
    let mut failures = Vec::new();
    if !PROVIDER_DIR.is_empty() {
        let so = [PROVIDER_DIR.as_bytes(), b"/lib", name, suffix].concat();
        match attempt(name, &so) {
            Ok(()) => return Ok(()),
            Err(f) => failures.push(f),
        }
    }
    let so = [b"lib", name, suffix].concat();
    match attempt(name, &so) {
        Ok(()) => {
            // Upstream is silent here; the earlier failure is worth a log line.
            for l in explain(&failures) {
                log(LEVEL_WARN, format_args!("{l}"));
            }
            Ok(())
        }
        Err(f) => {
            failures.push(f);
            Err((so, failures))
        }
    }
}

/// The kernel driver ids (`enum rdma_driver_id`) the match table of each
/// rdma-core provider lists (`VERBS_DRIVER_ID` entries; the same in
/// rdma-core 44 to 65).  A provider listing none (hns, mthca) matches only
/// by name, modalias or PCI id.  `RDMA_DRIVER_MANA` is 20 and
/// `RDMA_DRIVER_IONIC` 21 (newer than this library's headers).
pub const KNOWN: &[(&str, &[u32])] = &[
    ("bnxt_re", &[crate::abi::RDMA_DRIVER_BNXT_RE]),
    ("cxgb4", &[crate::abi::RDMA_DRIVER_CXGB4]),
    ("efa", &[crate::abi::RDMA_DRIVER_EFA]),
    ("erdma", &[crate::abi::RDMA_DRIVER_ERDMA]),
    ("hfi1verbs", &[crate::abi::RDMA_DRIVER_HFI1]),
    ("hns", &[]),
    ("ionic", &[21]),
    ("ipathverbs", &[crate::abi::RDMA_DRIVER_QIB]),
    ("irdma", &[crate::abi::RDMA_DRIVER_IRDMA]),
    ("mana", &[20]),
    ("mlx4", &[crate::abi::RDMA_DRIVER_MLX4]),
    ("mlx5", &[crate::abi::RDMA_DRIVER_MLX5]),
    ("mthca", &[]),
    ("ocrdma", &[crate::abi::RDMA_DRIVER_OCRDMA]),
    ("qedr", &[crate::abi::RDMA_DRIVER_QEDR]),
    ("rxe", &[crate::abi::RDMA_DRIVER_RXE]),
    ("siw", &[crate::abi::RDMA_DRIVER_SIW]),
    ("vmw_pvrdma", &[crate::abi::RDMA_DRIVER_VMW_PVRDMA]),
];

/// The driver ids of a known provider name ([`KNOWN`]).
pub fn known_ids(name: &[u8]) -> Option<&'static [u32]> {
    KNOWN.iter().find(|(n, _)| n.as_bytes() == name).map(|(_, ids)| *ids)
}

/// The names to load, in upstream's order (the environment's, then the
/// configuration directory's), and which of them were loaded.
struct Plan {
    names: Vec<Vec<u8>>,
    loaded: Vec<bool>,
}

static PLAN: Mutex<Option<Plan>> = Mutex::new(None);

/// Upstream's first steps of `load_drivers`: the configuration directory
/// is read (its warnings come first), the environment's names go first.
fn plan_of(g: &mut Option<Plan>) -> &mut Plan {
    g.get_or_insert_with(|| {
        super::loading_begins();
        let configured = super::config::read_dir(super::config::CONFIG_DIR);
        let mut names = super::config::env_drivers();
        names.extend(configured);
        Plan {
            loaded: vec![false; names.len()],
            names,
        }
    })
}

fn load_entry(plan: &mut Plan, i: usize) {
    if plan.loaded[i] {
        return;
    }
    plan.loaded[i] = true;
    let name = plan.names[i].clone();
    super::as_entry(i, || load_driver(&name));
}

/// Whether a known provider may wait until a device needs it: the
/// provider directory has its file for some generation (a regular file,
/// or a link to one), and [`load_driver`] tries every generation whose
/// file is there, so loading it now would only register it.  Each file is
/// looked at with one `stat` (oldest generation first, the usual one).
fn deferrable(name: &[u8]) -> bool {
    if known_ids(name).is_none() {
        return false;
    }
    crate::generation::GENERATIONS.iter().rev().any(|g| {
        let mut path = Vec::with_capacity(PROVIDER_DIR.len() + name.len() + 24);
        path.extend_from_slice(PROVIDER_DIR.as_bytes());
        path.extend_from_slice(b"/lib");
        path.extend_from_slice(name);
        path.extend_from_slice(b"-rdmav");
        path.extend_from_slice(g.number.to_string().as_bytes());
        path.extend_from_slice(b".so");
        std::fs::metadata(OsStr::from_bytes(&path)).is_ok_and(|m| m.is_file())
    })
}

/// The first step of loading for devices the kernel reported with the
/// driver ids `ids`: loads every provider that may claim one of them by
/// driver id, and every provider of the plan that cannot wait
/// ([`deferrable`]), in upstream's order.  Returns false, having loaded
/// nothing, when that is not enough to decide as upstream does (a device
/// without a driver id, an id no known provider lists, or
/// `RDMAV_PROVIDER_ABI` set): the caller then loads them all.
pub fn load_needed(ids: &[u32]) -> bool {
    if ids.is_empty()
        || ids.contains(&crate::abi::RDMA_DRIVER_UNKNOWN)
        || crate::env::get("RDMAV_PROVIDER_ABI").is_some()
    {
        return false;
    }
    let mut g = PLAN.lock().unwrap_or_else(|p| p.into_inner());
    let plan = plan_of(&mut g);
    let listed = |id: &u32| plan.names.iter().any(|n| known_ids(n).is_some_and(|k| k.contains(id)));
    if !ids.iter().all(listed) {
        return false;
    }
    for i in 0..plan.names.len() {
        let name = &plan.names[i];
        let needed = known_ids(name).is_none_or(|k| k.iter().any(|id| ids.contains(id)));
        if needed || !deferrable(name) {
            load_entry(plan, i);
        } else if !plan.loaded[i] {
            log(
                LEVEL_DEBUG,
                format_args!(
                    "{PFX}provider '{}': not loaded yet, no device found needs it\n",
                    String::from_utf8_lossy(name)
                ),
            );
        }
    }
    true
}

/// Upstream's `load_drivers`: the configuration directory is read first
/// (its warnings come first), then the environment's providers are loaded,
/// then the configured ones (those [`load_needed`] loaded are not loaded
/// again); then `extra` (the caller's providers beyond upstream's:
/// discovery passes the software device's, `crate::soft`), before the
/// count is logged.
pub fn load_drivers(extra: impl FnOnce()) {
    let mut g = PLAN.lock().unwrap_or_else(|p| p.into_inner());
    let plan = plan_of(&mut g);
    for i in 0..plan.names.len() {
        load_entry(plan, i);
    }
    let n = plan.names.len();
    drop(g);
    super::as_entry(n, extra);
    log(
        LEVEL_DEBUG,
        format_args!(
            "{PFX}{} provider(s) registered after loading\n",
            super::registered().len()
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_by_is_found() {
        let f = Failure {
            path: b"libx-rdmav34.so".to_vec(),
            dlerror: "/a/libibverbs.so.1: version `IBVERBS_PRIVATE_57' not found (required by /tmp/p/libx-rdmav34.so)"
                .into(),
        };
        assert_eq!(file_of(&f), Some(b"/tmp/p/libx-rdmav34.so".to_vec()));
        let g = Failure {
            path: b"libx-rdmav34.so".into(),
            dlerror: "libx-rdmav34.so: cannot open shared object file".into(),
        };
        assert_eq!(file_of(&g), None);
    }

    #[test]
    fn missing_file_is_not_explained() {
        let f = Failure {
            path: b"/nonexistent/libq-rdmav34.so".into(),
            dlerror: "x".into(),
        };
        assert!(explain(&[f.clone(), f]).is_empty());
    }
}
