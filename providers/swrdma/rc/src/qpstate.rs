//! Which QP states take what, for both transports.

use ibverbs_abi::*;

/// What a responder QP does with a request in its current state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Intake {
    /// RTR, RTS, SQD, SQE: executed (a send queue in error does not stop
    /// the receive side).
    Take,
    /// RESET, INIT: not ready — dropped (the requester retries after its
    /// timeout; the ring says so at once).
    NotReady,
    /// ERR and anything else: dropped for good.
    Drop,
}

pub fn intake(state: u32) -> Intake {
    match state {
        IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_SQE => Intake::Take,
        IBV_QPS_RESET | IBV_QPS_INIT => Intake::NotReady,
        _ => Intake::Drop,
    }
}

/// A requester QP takes responses (ACKs, NAKs, READ responses, atomic
/// ACKs) in RTS, SQD and SQE.
pub fn takes_responses(state: u32) -> bool {
    matches!(state, IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_SQE)
}
