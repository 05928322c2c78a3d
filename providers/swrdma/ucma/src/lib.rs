//! `libswrdma-ucma.so`: a user-space `/dev/infiniband/rdma_cm` for the
//! software RDMA device, so that Debian's unmodified librdmacm (and every
//! rdma_cm program above it) runs on `swr0` with no kernel module.
//!
//! Loaded with `LD_PRELOAD` (the `swrdma-cm` command does that), it takes
//! exactly one path: an `open()` of `/dev/infiniband/rdma_cm` returns an
//! eventfd that stands for the channel, and `write()`, `fstat()` and
//! `close()` on such a descriptor are answered here; every other call goes
//! to the next definition (libc) untouched.  librdmacm's own behaviour stays
//! upstream's; this library answers its commands as the kernel's ucma does.
//!
//! | concern | module |
//! |---|---|
//! | the ABI: command numbers, sizes, field offsets | [`abi`] |
//! | channels, each command checked and answered | [`ucma`] |
//! | devices, ports, and the carrier between processes | [`host`] |
//! | ids on the kernel's own devices, handed to its rdma_cm | [`kernel`] |
//! | the thread that answers peers while the application sleeps | [`progress`] |
//! | the interposed libc entry points | [`interpose`] |
//! | the command log (ours, or the kernel's passed through) | [`log`] |
//!
//! The connection manager itself (IBTA CM messages and state, rdma_cm
//! semantics) is the `swrdma-cm` crate: no I/O, unit-tested.

pub mod abi;
pub mod host;
pub mod interpose;
pub mod kernel;
pub mod log;
pub mod progress;
pub mod ucma;
pub mod waiters;
