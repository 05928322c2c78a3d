//! The main library's `#[repr(C)]` mirrors of verbs.h / driver.h, included
//! by path (types only: linking the main crate would export its symbols).
#[path = "../../../src/abi/verbs.rs"]
pub mod verbs;
#[path = "../../../src/abi/driver.rs"]
pub mod driver;
pub use driver::*;
pub use verbs::*;
