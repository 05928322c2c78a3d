//! Provider drivers: the registry that `verbs_register_driver_34` fills.
//! Providers register from their ELF constructor when they are loaded
//! (dlopen'ed by discovery, or linked/preloaded into the program).

use std::sync::Mutex;

/// A registered provider: its `const struct verbs_device_ops *`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Registered(pub *const crate::abi::verbs_device_ops);

// SAFETY: the ops tables are immutable static data of the provider library,
// valid for the life of the process (providers are never unloaded).
unsafe impl Send for Registered {}

static DRIVERS: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

/// Records a provider (in registration order, as upstream's list).
pub fn register(ops: *const crate::abi::verbs_device_ops) {
    DRIVERS.lock().unwrap_or_else(|p| p.into_inner()).push(Registered(ops));
}

/// The providers registered so far.
pub fn registered() -> Vec<Registered> {
    DRIVERS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
