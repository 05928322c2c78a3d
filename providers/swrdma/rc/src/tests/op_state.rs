//! The operation kinds and the QP state rules.

use crate::op::Op;
use crate::qpstate::{intake, takes_responses, Intake};
use ibverbs_abi::*;

#[test]
fn operation_table() {
    // op, remote right, atomic, has a response, requester's opcode
    for (op, right, atomic, response, wc) in [
        (Op::Send, 0, false, false, IBV_WC_SEND),
        (Op::Write, IBV_ACCESS_REMOTE_WRITE, false, false, IBV_WC_RDMA_WRITE),
        (Op::Read, IBV_ACCESS_REMOTE_READ, false, true, IBV_WC_RDMA_READ),
        (Op::CmpSwap, IBV_ACCESS_REMOTE_ATOMIC, true, true, IBV_WC_COMP_SWAP),
        (Op::FetchAdd, IBV_ACCESS_REMOTE_ATOMIC, true, true, IBV_WC_FETCH_ADD),
        (
            Op::AtomicWrite,
            IBV_ACCESS_REMOTE_WRITE,
            true,
            false,
            IBV_WC_ATOMIC_WRITE,
        ),
    ] {
        assert_eq!(op.remote_access(), right, "{op:?} remote_access");
        assert_eq!(op.is_atomic(), atomic, "{op:?} is_atomic");
        assert_eq!(op.has_response(), response, "{op:?} has_response");
        assert_eq!(op.wc_opcode(), wc, "{op:?} wc_opcode");
    }
}

#[test]
fn intake_of_each_state() {
    for (state, want) in [
        (IBV_QPS_RESET, Intake::NotReady),
        (IBV_QPS_INIT, Intake::NotReady),
        (IBV_QPS_RTR, Intake::Take),
        (IBV_QPS_RTS, Intake::Take),
        (IBV_QPS_SQD, Intake::Take),
        (IBV_QPS_SQE, Intake::Take),
        (IBV_QPS_ERR, Intake::Drop),
        (IBV_QPS_UNKNOWN, Intake::Drop),
        (99, Intake::Drop),
    ] {
        assert_eq!(intake(state), want, "state {state}");
    }
}

#[test]
fn takes_responses_of_each_state() {
    for (state, want) in [
        (IBV_QPS_RESET, false),
        (IBV_QPS_INIT, false),
        (IBV_QPS_RTR, false),
        (IBV_QPS_RTS, true),
        (IBV_QPS_SQD, true),
        (IBV_QPS_SQE, true),
        (IBV_QPS_ERR, false),
        (IBV_QPS_UNKNOWN, false),
        (99, false),
    ] {
        assert_eq!(takes_responses(state), want, "state {state}");
    }
}
