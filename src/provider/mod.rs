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

use std::sync::Mutex;

use crate::abi::verbs_device_ops;

/// A registered provider: its `const struct verbs_device_ops *`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Registered(pub *const verbs_device_ops);

// SAFETY: the ops tables are immutable static data of the provider library,
// valid for the life of the process (providers are never unloaded).
unsafe impl Send for Registered {}

impl Registered {
    /// The provider's `name` (lossy; for messages).
    pub fn name(&self) -> String {
        // SAFETY: a registered ops table; name is NULL or a C string.
        unsafe {
            let n = (*self.0).name;
            if n.is_null() {
                "(unnamed)".into()
            } else {
                std::ffi::CStr::from_ptr(n).to_string_lossy().into_owned()
            }
        }
    }

    /// Whether the provider's `name` is exactly `name`.
    pub fn is_named(&self, name: &[u8]) -> bool {
        // SAFETY: a registered ops table; name is NULL or a C string.
        unsafe {
            !self.0.is_null()
                && !(*self.0).name.is_null()
                && std::ffi::CStr::from_ptr((*self.0).name).to_bytes() == name
        }
    }
}

static DRIVERS: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// Records a provider (in registration order, as upstream's list).
pub fn register(ops: *const verbs_device_ops) {
    let r = Registered(ops);
    DRIVERS.lock().unwrap_or_else(|p| p.into_inner()).push(r);
    // SAFETY: a provider's ops table (checked non-NULL by the caller).
    let (min, max) = unsafe { ((*ops).match_min_abi_version, (*ops).match_max_abi_version) };
    crate::log::log(
        crate::log::LEVEL_DEBUG,
        format_args!(
            "{}provider '{}' registered (kernel ABI {} to {})\n",
            crate::log::PFX,
            r.name(),
            min,
            max
        ),
    );
}

/// The providers registered so far.
pub fn registered() -> Vec<Registered> {
    DRIVERS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
