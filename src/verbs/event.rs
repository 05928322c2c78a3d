//! Which object an asynchronous event is about: the kernel reports the
//! element as the user handle the library gave the object (its address) or
//! a port number, and the event type says which.  One list, used by the
//! current entry points and the IBVERBS_1.0 translation alike.

use crate::abi::*;

/// The events whose element is a QP.
pub fn is_qp_event(t: ibv_event_type) -> bool {
    matches!(
        t,
        IBV_EVENT_QP_FATAL
            | IBV_EVENT_QP_REQ_ERR
            | IBV_EVENT_QP_ACCESS_ERR
            | IBV_EVENT_COMM_EST
            | IBV_EVENT_SQ_DRAINED
            | IBV_EVENT_PATH_MIG
            | IBV_EVENT_PATH_MIG_ERR
            | IBV_EVENT_QP_LAST_WQE_REACHED
    )
}

/// The events whose element is an SRQ.
pub fn is_srq_event(t: ibv_event_type) -> bool {
    matches!(t, IBV_EVENT_SRQ_ERR | IBV_EVENT_SRQ_LIMIT_REACHED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert!(is_qp_event(IBV_EVENT_COMM_EST) && is_qp_event(IBV_EVENT_QP_LAST_WQE_REACHED));
        assert!(!is_qp_event(IBV_EVENT_CQ_ERR) && !is_qp_event(IBV_EVENT_SRQ_ERR));
        // WQ events postdate 1.0 and have no class here (passed through).
        assert!(!is_qp_event(IBV_EVENT_WQ_FATAL) && !is_srq_event(IBV_EVENT_WQ_FATAL));
        assert!(is_srq_event(IBV_EVENT_SRQ_LIMIT_REACHED) && !is_srq_event(IBV_EVENT_DEVICE_FATAL));
    }
}
