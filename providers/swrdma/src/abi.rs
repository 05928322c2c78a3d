//! The main library's `#[repr(C)]` mirrors of verbs.h / driver.h, included
//! by path (types only: linking the main crate would export its symbols).
#[path = "../../../src/abi/driver.rs"]
pub mod driver;
#[path = "../../../src/abi/verbs.rs"]
pub mod verbs;
pub use driver::*;
pub use verbs::*;
