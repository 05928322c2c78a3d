//! The error classes of a responder, in one table: what each becomes on
//! the wire (the NAK code of the AETH), at the requester (the completion
//! status), for the responder's owner (an affiliated async event) — and
//! every one of them moves the responder QP to the error state.
//!
//! | class | NAK code | requester's status | responder's async event |
//! |---|---|---|---|
//! | `InvalidRequest` (opcode sequence, length, misaligned atomic) | 1 | `REM_INV_REQ_ERR` | `QP_REQ_ERR` |
//! | `RemoteAccess` (QP rights, R_Key, range) | 2 | `REM_ACCESS_ERR` | `QP_ACCESS_ERR` |
//! | `RemoteOperational` (the responder's receive WQE is bad) | 3 | `REM_OP_ERR` | — (its receive completes `LOC_PROT_ERR`) |
//! | `ReceiveTooLong` (the message does not fit the receive) | 1 | `REM_INV_REQ_ERR` | — (its receive completes `LOC_LEN_ERR`) |
//! | `BadInvalidation` (SEND with invalidate of a key it may not) | 1 | `REM_INV_REQ_ERR` | — (its receive completes `REM_INV_REQ_ERR`) |

use ibverbs_abi::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    InvalidRequest,
    RemoteAccess,
    RemoteOperational,
    ReceiveTooLong,
    BadInvalidation,
}

/// The AETH NAK codes (IBTA 9.7.5.2.2).
pub const NAK_PSN_SEQ: u8 = 0;
pub const NAK_INVALID_REQUEST: u8 = 1;
pub const NAK_REMOTE_ACCESS: u8 = 2;
pub const NAK_REMOTE_OPERATIONAL: u8 = 3;
pub const NAK_INVALID_RD_REQUEST: u8 = 4;

impl Fault {
    pub fn nak_code(self) -> u8 {
        match self {
            Fault::InvalidRequest | Fault::ReceiveTooLong | Fault::BadInvalidation => NAK_INVALID_REQUEST,
            Fault::RemoteAccess => NAK_REMOTE_ACCESS,
            Fault::RemoteOperational => NAK_REMOTE_OPERATIONAL,
        }
    }

    /// The status the requester's work request completes with.
    pub fn requester_status(self) -> u32 {
        nak_status(self.nak_code())
    }

    /// The affiliated async event the responder QP's owner is told of.
    pub fn async_event(self) -> Option<u32> {
        match self {
            Fault::InvalidRequest => Some(IBV_EVENT_QP_REQ_ERR),
            Fault::RemoteAccess => Some(IBV_EVENT_QP_ACCESS_ERR),
            _ => None,
        }
    }

    /// The status of the receive WQE a WRITE with immediate took before
    /// the responder found this fault (its R_Key or length): the
    /// requester's status, as rxe completes it.
    pub fn imm_receive_status(self) -> u32 {
        self.requester_status()
    }

    /// The class of a receive that completed in error with `status` (None:
    /// it did not).
    pub fn of_receive(status: u32) -> Option<Fault> {
        match status {
            IBV_WC_SUCCESS => None,
            IBV_WC_LOC_PROT_ERR => Some(Fault::RemoteOperational),
            IBV_WC_LOC_LEN_ERR => Some(Fault::ReceiveTooLong),
            IBV_WC_REM_INV_REQ_ERR => Some(Fault::BadInvalidation),
            _ => Some(Fault::RemoteOperational),
        }
    }
}

/// A NAK code to the requester's completion status.
pub fn nak_status(code: u8) -> u32 {
    match code {
        NAK_INVALID_REQUEST => IBV_WC_REM_INV_REQ_ERR,
        NAK_REMOTE_ACCESS => IBV_WC_REM_ACCESS_ERR,
        NAK_REMOTE_OPERATIONAL => IBV_WC_REM_OP_ERR,
        _ => IBV_WC_REM_INV_RD_REQ_ERR,
    }
}
