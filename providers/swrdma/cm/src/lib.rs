//! The connection manager of the software RDMA device (rdma_cm on `swr0`
//! and `rw0`), written as smoltcp writes a protocol: typed messages with no
//! I/O, and state machines that take a message, a command or a timer tick in
//! and hand messages, events and timer deadlines out.
//!
//! | concern | module |
//! |---|---|
//! | CM MADs (IBTA Vol 1 ch. 12): the nine messages, encode/decode | [`mad`] |
//! | the IP CM private-data header (IBTA Annex A11.4, `cma_hdr`) | [`ipcm`] |
//! | one connection's CM state, timers and retry budget | [`conn`] |
//! | the kernel rdma_cm's semantics behind `/dev/infiniband/rdma_cm` | [`cma`] |
//! | the abstract socket names of the carriers | [`names`] |

pub mod cma;
pub mod conn;
pub mod ipcm;
pub mod mad;
pub mod names;
#[doc(hidden)]
pub mod testkit;
pub mod timers;

#[cfg(test)]
mod tests_cma;
