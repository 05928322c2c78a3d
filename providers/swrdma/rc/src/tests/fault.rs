//! The error classes, one table: the NAK code, the requester's status, the
//! responder's async event; a failed receive's class; NAK codes to status.

use crate::completer;
use crate::fault::*;
use ibverbs_abi::*;

/// The table of fault.rs, written out again.
const TABLE: [(Fault, u8, u32, Option<u32>); 5] = [
    (
        Fault::InvalidRequest,
        1,
        IBV_WC_REM_INV_REQ_ERR,
        Some(IBV_EVENT_QP_REQ_ERR),
    ),
    (
        Fault::RemoteAccess,
        2,
        IBV_WC_REM_ACCESS_ERR,
        Some(IBV_EVENT_QP_ACCESS_ERR),
    ),
    (Fault::RemoteOperational, 3, IBV_WC_REM_OP_ERR, None),
    (Fault::ReceiveTooLong, 1, IBV_WC_REM_INV_REQ_ERR, None),
    (Fault::BadInvalidation, 1, IBV_WC_REM_INV_REQ_ERR, None),
];

#[test]
fn nak_codes_are_ibtas() {
    assert_eq!(
        [
            NAK_PSN_SEQ,
            NAK_INVALID_REQUEST,
            NAK_REMOTE_ACCESS,
            NAK_REMOTE_OPERATIONAL,
            NAK_INVALID_RD_REQUEST
        ],
        [0, 1, 2, 3, 4]
    );
}

#[test]
fn each_class_nak_code() {
    for (f, code, _, _) in TABLE {
        assert_eq!(f.nak_code(), code, "{f:?}");
    }
}

#[test]
fn each_class_requester_status() {
    for (f, _, status, _) in TABLE {
        assert_eq!(f.requester_status(), status, "{f:?}");
        assert_eq!(
            nak_status(f.nak_code()),
            status,
            "{f:?}: the ring's status is what the wire's NAK completes with"
        );
    }
}

#[test]
fn each_class_async_event() {
    for (f, _, _, ev) in TABLE {
        assert_eq!(f.async_event(), ev, "{f:?}");
    }
}

#[test]
fn a_failed_receive_has_a_class() {
    assert_eq!(Fault::of_receive(IBV_WC_SUCCESS), None);
    assert_eq!(Fault::of_receive(IBV_WC_LOC_PROT_ERR), Some(Fault::RemoteOperational));
    assert_eq!(Fault::of_receive(IBV_WC_LOC_LEN_ERR), Some(Fault::ReceiveTooLong));
    assert_eq!(Fault::of_receive(IBV_WC_REM_INV_REQ_ERR), Some(Fault::BadInvalidation));
    for other in [IBV_WC_LOC_QP_OP_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_GENERAL_ERR] {
        assert_eq!(
            Fault::of_receive(other),
            Some(Fault::RemoteOperational),
            "status {other}: any other failure of the receive WQE"
        );
    }
}

#[test]
fn a_failed_receive_is_told_to_the_requester() {
    for (recv, requester) in [
        (IBV_WC_LOC_PROT_ERR, IBV_WC_REM_OP_ERR),
        (IBV_WC_LOC_LEN_ERR, IBV_WC_REM_INV_REQ_ERR),
        (IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR),
    ] {
        let f = Fault::of_receive(recv).unwrap();
        assert_eq!(f.requester_status(), requester, "receive {recv}");
        assert_eq!(f.async_event(), None, "receive {recv}: its completion tells its owner");
    }
}

#[test]
fn nak_status_of_each_code() {
    assert_eq!(nak_status(NAK_INVALID_REQUEST), IBV_WC_REM_INV_REQ_ERR);
    assert_eq!(nak_status(NAK_REMOTE_ACCESS), IBV_WC_REM_ACCESS_ERR);
    assert_eq!(nak_status(NAK_REMOTE_OPERATIONAL), IBV_WC_REM_OP_ERR);
    assert_eq!(nak_status(NAK_INVALID_RD_REQUEST), IBV_WC_REM_INV_RD_REQ_ERR);
    for unknown in [5, 0x1f, 0xff] {
        assert_eq!(nak_status(unknown), IBV_WC_REM_INV_RD_REQ_ERR, "code {unknown}");
    }
    assert_eq!(
        completer::nak_status(NAK_REMOTE_ACCESS),
        IBV_WC_REM_ACCESS_ERR,
        "the completer's is the same table"
    );
}
