//! The layer that talks to the kernel.  Today: RDMA netlink.

pub mod netlink;
