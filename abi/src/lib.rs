//! `#[repr(C)]` mirrors of the C types this library shares with its callers.
//!
//! * [`verbs`] — the public types of `<infiniband/verbs.h>` (and the headers it
//!   pulls in) as rdma-core 44 lays them out.
//! * [`driver`] — the private provider ABI (`IBVERBS_PRIVATE_34`): the types of
//!   rdma-core 44's `driver.h` that upstream provider drivers are compiled
//!   against.  A later private-ABI generation gets a sibling module.
//!
//! Every size and offset here is checked against upstream by the layout tests
//! (`compat-tests/layout`, and the Rust tests in each module).
#![recursion_limit = "512"]
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, dead_code)]

pub mod driver;
pub mod ioctl;
pub mod pabi34;
pub mod uapi;
pub mod verbs;
pub mod verbs65;

/// Test helper shared with the library's tests (evaluates C expressions
/// against the installed headers); not part of the ABI.
#[doc(hidden)]
pub mod testutil;

pub use driver::*;
pub use ioctl::*;
pub use verbs::*;
pub use verbs65::*;
