//! Provider drivers.
//!
//! * this file — the registry that `verbs_register_driver_34` fills;
//!   providers register from their ELF constructor when they are loaded
//!   (dlopen'ed by [`load`], or linked/preloaded into the program);
//! * [`config`] — the driver names of `/etc/libibverbs.d/*.driver` and
//!   `RDMAV_DRIVERS` / `IBV_DRIVERS`;
//! * [`load`] — upstream's load order and `dlopen(RTLD_NOW)`, with the
//!   reason spelled out when a provider cannot be loaded;
//! * [`elf`] — reads a provider's symbol-version needs (`.gnu.version_r`);
//! * [`matching`] — which provider claims a device, and `alloc_device`.

pub mod config;
pub mod elf;
pub mod load;
pub mod matching;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::abi::verbs_device_ops;
use crate::generation::{Pabi, Registration};

/// A registered provider: its `const struct verbs_device_ops *`.
///
/// Invariant: the pointer is non-NULL and points to a provider's ops table
/// that stays valid and unchanged for the rest of the process (providers
/// declare it `static const`, and are never unloaded).  Only
/// [`Registered::new`] (unsafe, the caller vouches) and
/// [`Registered::from_static`] make one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Registered(*const verbs_device_ops);

// SAFETY: by the type's invariant the pointer designates immutable data that
// lives for the whole process and has no thread affinity, so the value may
// move to (and the registry be locked from) any thread.
unsafe impl Send for Registered {}

impl Registered {
    /// Wraps a provider's ops table.
    ///
    /// # Safety
    /// `ops` is non-NULL, and points to a `verbs_device_ops` that stays valid
    /// and unchanged for the rest of the process, as a provider's static
    /// table is.
    pub unsafe fn new(ops: *const verbs_device_ops) -> Self {
        Registered(ops)
    }

    /// A table that is static data of this program (tests, built-ins).
    pub fn from_static(ops: &'static verbs_device_ops) -> Self {
        Registered(ops)
    }

    /// The `const struct verbs_device_ops *` itself.
    pub fn as_ptr(self) -> *const verbs_device_ops {
        self.0
    }

    /// The ops table.
    pub fn ops(self) -> &'static verbs_device_ops {
        // SAFETY: by the type's invariant the pointer is non-NULL, aligned
        // (it designates a real table) and the table is neither freed nor
        // written for the rest of the process.
        unsafe { &*self.0 }
    }

    /// The provider's `name` as a C string (`None` when NULL).
    fn c_name(self) -> Option<&'static std::ffi::CStr> {
        let n = self.ops().name;
        if n.is_null() {
            return None;
        }
        // SAFETY: a provider's `name` is NULL (handled above) or points to a
        // NUL-terminated string in its static data, which lives as long as
        // the table.
        Some(unsafe { std::ffi::CStr::from_ptr(n) })
    }

    /// The provider's `name` (lossy; for messages).
    pub fn name(&self) -> String {
        match self.c_name() {
            Some(n) => n.to_string_lossy().into_owned(),
            None => "(unnamed)".into(),
        }
    }

    /// Whether the provider's `name` is exactly `name`.
    pub fn is_named(&self, name: &[u8]) -> bool {
        self.c_name().is_some_and(|n| n.to_bytes() == name)
    }
}

/// One registration: the table, its generation, the file it came from, and
/// (worked out on first need, see [`registration_of`]) whether a PABI 34
/// provider is of rdma-core 53 or later.
struct Entry {
    ops: Registered,
    pabi: Pabi,
    file: Option<std::path::PathBuf>,
    later: Option<bool>,
    /// Where upstream's list would have it: see [`order_key`].
    key: u64,
}

/// Whether loading has begun (registrations after that, outside a load of
/// ours, come after every provider upstream would have loaded).
static STARTED: AtomicBool = AtomicBool::new(false);

/// Marks the start of loading (see [`order_key`]).
pub fn loading_begins() {
    STARTED.store(true, Ordering::SeqCst);
}

thread_local! {
    /// The index in the plan of the provider this thread is loading (its
    /// constructor registers while `dlopen` runs, on this thread).
    static LOADING: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Where a provider registering now goes in the provider list: providers
/// registered before the first load (linked into the program) first, then
/// the loaded ones in upstream's load order (whenever this library loads
/// them), then any registered later by other means (a program's own
/// `dlopen` of a provider).  Equal keys keep registration order.
pub fn order_key() -> u64 {
    match LOADING.with(Cell::get) {
        Some(i) => (1 << 32) | u64::from(i),
        None if STARTED.load(Ordering::SeqCst) => 2 << 32,
        None => 0,
    }
}

/// Runs `f` (which loads providers) as the load of plan entry `index`.
pub fn as_entry<R>(index: usize, f: impl FnOnce() -> R) -> R {
    let prev = LOADING.with(|c| c.replace(Some(u32::try_from(index).unwrap_or(u32::MAX))));
    let r = f();
    LOADING.with(|c| c.set(prev));
    r
}

static DRIVERS: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// Records a provider (in registration order, as upstream's list) with its
/// private-ABI generation (`verbs_register_driver_34` or `_65`).
///
/// `ops` must be a provider's static ops table (non-NULL): this is the
/// body of `verbs_register_driver_<N>`, which a provider's constructor calls
/// with its `static const` table and which rejects NULL.  It stays a safe
/// function only because that caller (src/api/provider.rs) calls it outside
/// an `unsafe` block; it should become `unsafe fn` with the caller's
/// `unsafe` block stating the contract.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn register(ops: *const verbs_device_ops, pabi: Pabi) {
    if ops.is_null() {
        return;
    }
    // SAFETY: non-NULL (checked above), and the table of the provider whose
    // constructor is registering: static data of a library that is never
    // unloaded (see the contract above).
    let r = unsafe { Registered::new(ops) };
    let file = elf::file_of_address(ops as usize);
    let (min, max) = (r.ops().match_min_abi_version, r.ops().match_max_abi_version);
    crate::log::log(
        crate::log::LEVEL_DEBUG,
        format_args!(
            "{}provider '{}' registered (IBVERBS_PRIVATE_{}, kernel ABI {} to {}){}\n",
            crate::log::PFX,
            r.name(),
            pabi.info().number,
            min,
            max,
            file.as_ref()
                .map(|f| format!(" from {}", f.display()))
                .unwrap_or_default(),
        ),
    );
    let key = order_key();
    let mut drivers = DRIVERS.lock().unwrap_or_else(|p| p.into_inner());
    // Upstream appends to its list as providers register, and loads them
    // all at once; this library loads some later (load::load_needed), so
    // each registration goes where upstream's would be: after every entry
    // whose key is not greater (registration order among equal keys).
    let at = drivers.iter().position(|e| e.key > key).unwrap_or(drivers.len());
    drivers.insert(
        at,
        Entry {
            ops: r,
            pabi,
            file,
            later: None,
            key,
        },
    );
}

/// The private-ABI generation of the provider whose device ops are `ops`
/// (PABI 34 for one that never registered), without the look at its file
/// that [`registration_of`] may take.
pub fn pabi_of(ops: *const verbs_device_ops) -> Pabi {
    let drivers = DRIVERS.lock().unwrap_or_else(|p| p.into_inner());
    drivers
        .iter()
        .find(|e| e.ops.as_ptr() == ops)
        .map_or(Registration::default().pabi, |e| e.pabi)
}

/// What is known of the provider whose device ops are `ops` (a provider
/// that never registered — built-in tables of tests — counts as PABI 34 of
/// rdma-core 44).  For a PABI 34 provider, whether it is of rdma-core 53 or
/// later (it imports `ibv_cmd_create_cq_ex2`) is read from its file the
/// first time a context of it opens, not at registration: loading stays as
/// cheap as upstream's.
pub fn registration_of(ops: *const verbs_device_ops) -> Registration {
    let mut drivers = DRIVERS.lock().unwrap_or_else(|p| p.into_inner());
    let Some(e) = drivers.iter_mut().find(|e| e.ops.as_ptr() == ops) else {
        return Registration::default();
    };
    let later = match e.pabi {
        Pabi::P65 => true,
        Pabi::P34 => *e.later.get_or_insert_with(|| {
            let later = e
                .file
                .as_deref()
                .is_some_and(|f| elf::imports_in_file(f, "ibv_cmd_create_cq_ex2") || siblings_later(f));
            crate::log::log(
                crate::log::LEVEL_DEBUG,
                format_args!(
                    "{}provider '{}' (IBVERBS_PRIVATE_34) is {}\n",
                    crate::log::PFX,
                    e.ops.name(),
                    if later {
                        "of rdma-core 53 or later"
                    } else {
                        "taken as rdma-core 44"
                    }
                ),
            );
            later
        }),
    };
    Registration {
        pabi: e.pabi,
        dmabuf_driver_arg: later,
        // rdma-core 45 grew ibv_qp_ex; a provider known to be 53 or later
        // (or of PABI 65) has the new verbs_qp; of the others, those of 44
        // have the old one and those of 45 to 52 the new, and no import
        // tells them apart.
        qp_ex_grown: if later { Some(true) } else { None },
    }
}

/// Whether another PABI 34 provider file in `file`'s directory imports
/// `ibv_cmd_create_cq_ex2`: a distribution builds all its providers from
/// one rdma-core, so one file of rdma-core 53 or later dates the others
/// (trixie's mlx4 and hns import nothing newer than 44's symbols; its mlx5
/// does).  Our own provider (swrdma) is no witness.  Worked out once per
/// directory.
fn siblings_later(file: &std::path::Path) -> bool {
    static DIRS: Mutex<Vec<(std::path::PathBuf, bool)>> = Mutex::new(Vec::new());
    let Some(dir) = file.parent() else { return false };
    let mut dirs = DIRS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&(_, v)) = dirs.iter().find(|(d, _)| d == dir) {
        return v;
    }
    let v = std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|ent| {
            let name = ent.file_name();
            let name = name.to_string_lossy();
            name.starts_with("lib")
                && name.ends_with("-rdmav34.so")
                && name != "libswrdma-rdmav34.so"
                && ent.path() != file
                && elf::imports_in_file(&ent.path(), "ibv_cmd_create_cq_ex2")
        })
    });
    dirs.push((dir.to_path_buf(), v));
    v
}

/// The providers registered so far.
pub fn registered() -> Vec<Registered> {
    DRIVERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|e| e.ops)
        .collect()
}
