//! Helpers for the C boundary: errno access and the panic guard.

use std::os::raw::c_int;

/// Sets the calling thread's `errno`.
pub fn set_errno(e: c_int) {
    // SAFETY: __errno_location always returns a valid pointer to this
    // thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// Reads the calling thread's `errno`.
pub fn errno() -> c_int {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() }
}

/// Runs `f`, turning a panic into `on_panic` instead of letting it unwind
/// into C.  The shipped library is built with `panic = "abort"`, so there a
/// panic aborts the process before this matters; under `cargo test` (which
/// always unwinds) this keeps the C-facing contract.
#[inline]
pub fn guard<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            set_errno(libc::EIO);
            on_panic
        }
    }
}

/// Defines an exported C function whose body runs inside [`guard`].
///
/// ```ignore
/// export! {
///     /// docs
///     fn ibv_foo(x: c_int) -> c_int [on_panic: -1] { ... }
/// }
/// ```
#[macro_export]
macro_rules! export {
    ($(
        $(#[$m:meta])*
        fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty [on_panic: $err:expr] $body:block
    )*) => {$(
        $(#[$m])*
        #[no_mangle]
        #[allow(clippy::missing_safety_doc, unused_variables)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            $crate::ffi::guard($err, move || $body)
        }
    )*};
}

/// Result of a verb whose implementation belongs to a later part of the
/// project: upstream's documented failure for "not supported".
pub const NOT_SUPPORTED: c_int = libc::EOPNOTSUPP;
