//! The operation a request carries, once for both transports (the ring's
//! record kinds and RoCE's opcodes are mapped to it at the link).

use ibverbs_abi::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Send,
    Write,
    Read,
    CmpSwap,
    FetchAdd,
    /// ATOMIC_WRITE (8 bytes stored at once).
    AtomicWrite,
}

impl Op {
    /// The right a remote access of this kind needs on the QP and the key
    /// (none for SEND).
    pub fn remote_access(self) -> u32 {
        match self {
            Op::Send => 0,
            Op::Write | Op::AtomicWrite => IBV_ACCESS_REMOTE_WRITE,
            Op::Read => IBV_ACCESS_REMOTE_READ,
            Op::CmpSwap | Op::FetchAdd => IBV_ACCESS_REMOTE_ATOMIC,
        }
    }

    /// An 8-byte atomic (aligned to 8, one response).
    pub fn is_atomic(self) -> bool {
        matches!(self, Op::CmpSwap | Op::FetchAdd | Op::AtomicWrite)
    }

    /// A request whose response carries data (READ, CAS, FAA): it counts
    /// against `max_rd_atomic` and is done only by its response.
    pub fn has_response(self) -> bool {
        matches!(self, Op::Read | Op::CmpSwap | Op::FetchAdd)
    }

    /// The requester's completion opcode.
    pub fn wc_opcode(self) -> u32 {
        match self {
            Op::Send => IBV_WC_SEND,
            Op::Write => IBV_WC_RDMA_WRITE,
            Op::Read => IBV_WC_RDMA_READ,
            Op::CmpSwap => IBV_WC_COMP_SWAP,
            Op::FetchAdd => IBV_WC_FETCH_ADD,
            Op::AtomicWrite => IBV_WC_ATOMIC_WRITE,
        }
    }
}
