//! The table: every kernel operation the command layer uses, described once
//! (ioctl object/method, fallback slot, `write()` forms).  The `ibv_cmd_*`
//! implementations in [`super::verbs`] only fill attributes and objects.
//!
//! `op` is the `verbs_context_ops` slot under which upstream remembers that
//! the kernel lacks the ioctl (including upstream's choices of an unrelated
//! slot: `free_context` for GET_CONTEXT, `destroy_ah` for the flow and
//! RWQ-indirection-table destroys, `async_event` for the GID queries).
//! Methods with `op: None` and an ioctl have no `write()` fallback.
//! A fallback to the plain `write()` uses the legacy form, or the extended
//! one for commands that only exist extended.

use super::builder::{Method, WriteForm};
use super::uapi::*;
use crate::op_bit;

macro_rules! w {
    ($cmd:expr, $req:ty, $resp:ty) => {
        Some(WriteForm::of::<$req, $resp>($cmd))
    };
}

macro_rules! methods {
    ($( $name:ident = { ioctl: $io:expr, op: $op:expr, write: $w:expr, write_ex: $wx:expr $(,)? } )*) => {
        $( pub static $name: Method = Method {
            name: stringify!($name),
            ioctl: $io,
            op: $op,
            write: $w,
            write_ex: $wx,
        }; )*
        /// Every method, for table checks.
        pub static ALL: &[&Method] = &[$(&$name),*];
    };
}

methods! {
    // device
    GET_CONTEXT = { ioctl: Some((obj::DEVICE, method::GET_CONTEXT)), op: Some(op_bit!(free_context)),
        write: w!(cmd::GET_CONTEXT, ib_uverbs_get_context, ib_uverbs_get_context_resp), write_ex: None }
    QUERY_CONTEXT = { ioctl: Some((obj::DEVICE, method::QUERY_CONTEXT)), op: None, write: None, write_ex: None }
    QUERY_PORT = { ioctl: Some((obj::DEVICE, method::QUERY_PORT)), op: Some(op_bit!(query_port)),
        write: w!(cmd::QUERY_PORT, ib_uverbs_query_port, ib_uverbs_query_port_resp), write_ex: None }
    QUERY_DEVICE = { ioctl: None, op: None,
        write: w!(cmd::QUERY_DEVICE, ib_uverbs_query_device, ib_uverbs_query_device_resp), write_ex: None }
    QUERY_DEVICE_EX = { ioctl: None, op: None, write: None,
        write_ex: w!(cmd::EX_QUERY_DEVICE, ib_uverbs_ex_query_device, ib_uverbs_ex_query_device_resp) }
    CREATE_COMP_CHANNEL = { ioctl: None, op: None,
        write: w!(cmd::CREATE_COMP_CHANNEL, ib_uverbs_create_comp_channel, ib_uverbs_create_comp_channel_resp), write_ex: None }
    ASYNC_EVENT_ALLOC = { ioctl: Some((obj::ASYNC_EVENT, method::ASYNC_EVENT_ALLOC)), op: None, write: None, write_ex: None }
    QUERY_GID_ENTRY = { ioctl: Some((obj::DEVICE, method::QUERY_GID_ENTRY)), op: Some(op_bit!(async_event)), write: None, write_ex: None }
    QUERY_GID_TABLE = { ioctl: Some((obj::DEVICE, method::QUERY_GID_TABLE)), op: Some(op_bit!(async_event)), write: None, write_ex: None }

    // pd, xrcd
    ALLOC_PD = { ioctl: None, op: None, write: w!(cmd::ALLOC_PD, ib_uverbs_alloc_pd, ib_uverbs_alloc_pd_resp), write_ex: None }
    DEALLOC_PD = { ioctl: Some((obj::PD, method::PD_DESTROY)), op: Some(op_bit!(dealloc_pd)),
        write: w!(cmd::DEALLOC_PD, ib_uverbs_dealloc_pd, empty), write_ex: None }
    OPEN_XRCD = { ioctl: None, op: None, write: w!(cmd::OPEN_XRCD, ib_uverbs_open_xrcd, ib_uverbs_open_xrcd_resp), write_ex: None }
    CLOSE_XRCD = { ioctl: Some((obj::XRCD, method::XRCD_DESTROY)), op: Some(op_bit!(close_xrcd)),
        write: w!(cmd::CLOSE_XRCD, ib_uverbs_close_xrcd, empty), write_ex: None }

    // mr, mw, dm
    REG_MR = { ioctl: None, op: None, write: w!(cmd::REG_MR, ib_uverbs_reg_mr, ib_uverbs_reg_mr_resp), write_ex: None }
    REREG_MR = { ioctl: None, op: None, write: w!(cmd::REREG_MR, ib_uverbs_rereg_mr, ib_uverbs_rereg_mr_resp), write_ex: None }
    DEREG_MR = { ioctl: Some((obj::MR, method::MR_DESTROY)), op: Some(op_bit!(dereg_mr)),
        write: w!(cmd::DEREG_MR, ib_uverbs_dereg_mr, empty), write_ex: None }
    QUERY_MR = { ioctl: Some((obj::MR, method::QUERY_MR)), op: None, write: None, write_ex: None }
    ADVISE_MR = { ioctl: Some((obj::MR, method::ADVISE_MR)), op: None, write: None, write_ex: None }
    REG_DMABUF_MR = { ioctl: Some((obj::MR, method::REG_DMABUF_MR)), op: None, write: None, write_ex: None }
    REG_DM_MR = { ioctl: Some((obj::MR, method::DM_MR_REG)), op: None, write: None, write_ex: None }
    ALLOC_MW = { ioctl: None, op: None, write: w!(cmd::ALLOC_MW, ib_uverbs_alloc_mw, ib_uverbs_alloc_mw_resp), write_ex: None }
    DEALLOC_MW = { ioctl: Some((obj::MW, method::MW_DESTROY)), op: Some(op_bit!(dealloc_mw)),
        write: w!(cmd::DEALLOC_MW, ib_uverbs_dealloc_mw, empty), write_ex: None }
    ALLOC_DM = { ioctl: Some((obj::DM, method::DM_ALLOC)), op: None, write: None, write_ex: None }
    FREE_DM = { ioctl: Some((obj::DM, method::DM_FREE)), op: None, write: None, write_ex: None }

    // cq
    CREATE_CQ = { ioctl: Some((obj::CQ, method::CQ_CREATE)), op: Some(op_bit!(create_cq)),
        write: w!(cmd::CREATE_CQ, ib_uverbs_create_cq, ib_uverbs_create_cq_resp),
        write_ex: w!(cmd::EX_CREATE_CQ, ib_uverbs_ex_create_cq, ib_uverbs_ex_create_cq_resp) }
    DESTROY_CQ = { ioctl: Some((obj::CQ, method::CQ_DESTROY)), op: Some(op_bit!(destroy_cq)),
        write: w!(cmd::DESTROY_CQ, ib_uverbs_destroy_cq, ib_uverbs_destroy_cq_resp), write_ex: None }
    RESIZE_CQ = { ioctl: None, op: None, write: w!(cmd::RESIZE_CQ, ib_uverbs_resize_cq, ib_uverbs_resize_cq_resp), write_ex: None }
    POLL_CQ = { ioctl: None, op: None, write: w!(cmd::POLL_CQ, ib_uverbs_poll_cq, ib_uverbs_poll_cq_resp), write_ex: None }
    REQ_NOTIFY_CQ = { ioctl: None, op: None, write: w!(cmd::REQ_NOTIFY_CQ, ib_uverbs_req_notify_cq, empty), write_ex: None }
    MODIFY_CQ = { ioctl: None, op: None, write: None, write_ex: w!(cmd::EX_MODIFY_CQ, ib_uverbs_ex_modify_cq, empty) }

    // qp
    CREATE_QP = { ioctl: Some((obj::QP, method::QP_CREATE)), op: Some(op_bit!(create_qp)),
        write: w!(cmd::CREATE_QP, ib_uverbs_create_qp, ib_uverbs_create_qp_resp),
        write_ex: w!(cmd::EX_CREATE_QP, ib_uverbs_ex_create_qp, ib_uverbs_ex_create_qp_resp) }
    DESTROY_QP = { ioctl: Some((obj::QP, method::QP_DESTROY)), op: Some(op_bit!(destroy_qp)),
        write: w!(cmd::DESTROY_QP, ib_uverbs_destroy_qp, ib_uverbs_destroy_qp_resp), write_ex: None }
    OPEN_QP = { ioctl: None, op: None, write: w!(cmd::OPEN_QP, ib_uverbs_open_qp, ib_uverbs_create_qp_resp), write_ex: None }
    QUERY_QP = { ioctl: None, op: None, write: w!(cmd::QUERY_QP, ib_uverbs_query_qp, ib_uverbs_query_qp_resp), write_ex: None }
    MODIFY_QP = { ioctl: None, op: None, write: w!(cmd::MODIFY_QP, ib_uverbs_modify_qp, empty), write_ex: None }
    MODIFY_QP_EX = { ioctl: None, op: None, write: None,
        write_ex: w!(cmd::EX_MODIFY_QP, ib_uverbs_ex_modify_qp, ib_uverbs_ex_modify_qp_resp) }
    POST_SEND = { ioctl: None, op: None, write: w!(cmd::POST_SEND, ib_uverbs_post_send, ib_uverbs_post_send_resp), write_ex: None }
    POST_RECV = { ioctl: None, op: None, write: w!(cmd::POST_RECV, ib_uverbs_post_recv, ib_uverbs_post_recv_resp), write_ex: None }
    POST_SRQ_RECV = { ioctl: None, op: None,
        write: w!(cmd::POST_SRQ_RECV, ib_uverbs_post_srq_recv, ib_uverbs_post_srq_recv_resp), write_ex: None }

    // srq
    CREATE_SRQ = { ioctl: Some((obj::SRQ, method::SRQ_CREATE)), op: Some(op_bit!(create_srq)),
        write: w!(cmd::CREATE_SRQ, ib_uverbs_create_srq, ib_uverbs_create_srq_resp), write_ex: None }
    DESTROY_SRQ = { ioctl: Some((obj::SRQ, method::SRQ_DESTROY)), op: Some(op_bit!(destroy_srq)),
        write: w!(cmd::DESTROY_SRQ, ib_uverbs_destroy_srq, ib_uverbs_destroy_srq_resp), write_ex: None }
    MODIFY_SRQ = { ioctl: None, op: None, write: w!(cmd::MODIFY_SRQ, ib_uverbs_modify_srq, empty), write_ex: None }
    QUERY_SRQ = { ioctl: None, op: None, write: w!(cmd::QUERY_SRQ, ib_uverbs_query_srq, ib_uverbs_query_srq_resp), write_ex: None }

    // ah, multicast
    CREATE_AH = { ioctl: None, op: None, write: w!(cmd::CREATE_AH, ib_uverbs_create_ah, ib_uverbs_create_ah_resp), write_ex: None }
    DESTROY_AH = { ioctl: Some((obj::AH, method::AH_DESTROY)), op: Some(op_bit!(destroy_ah)),
        write: w!(cmd::DESTROY_AH, ib_uverbs_destroy_ah, empty), write_ex: None }
    ATTACH_MCAST = { ioctl: None, op: None, write: w!(cmd::ATTACH_MCAST, ib_uverbs_attach_mcast, empty), write_ex: None }
    DETACH_MCAST = { ioctl: None, op: None, write: w!(cmd::DETACH_MCAST, ib_uverbs_detach_mcast, empty), write_ex: None }

    // flow steering, flow actions, counters
    CREATE_FLOW = { ioctl: None, op: None, write: None,
        write_ex: w!(cmd::EX_CREATE_FLOW, ib_uverbs_create_flow, ib_uverbs_create_flow_resp) }
    DESTROY_FLOW = { ioctl: Some((obj::FLOW, method::FLOW_DESTROY)), op: Some(op_bit!(destroy_ah)),
        write: None, write_ex: w!(cmd::EX_DESTROY_FLOW, ib_uverbs_destroy_flow, empty) }
    CREATE_FLOW_ACTION_ESP = { ioctl: Some((obj::FLOW_ACTION, method::FLOW_ACTION_ESP_CREATE)), op: None, write: None, write_ex: None }
    MODIFY_FLOW_ACTION_ESP = { ioctl: Some((obj::FLOW_ACTION, method::FLOW_ACTION_ESP_MODIFY)), op: None, write: None, write_ex: None }
    DESTROY_FLOW_ACTION = { ioctl: Some((obj::FLOW_ACTION, method::FLOW_ACTION_DESTROY)), op: None, write: None, write_ex: None }
    CREATE_COUNTERS = { ioctl: Some((obj::COUNTERS, method::COUNTERS_CREATE)), op: None, write: None, write_ex: None }
    DESTROY_COUNTERS = { ioctl: Some((obj::COUNTERS, method::COUNTERS_DESTROY)), op: None, write: None, write_ex: None }
    READ_COUNTERS = { ioctl: Some((obj::COUNTERS, method::COUNTERS_READ)), op: None, write: None, write_ex: None }

    // wq, rwq indirection tables
    CREATE_WQ = { ioctl: Some((obj::WQ, method::WQ_CREATE)), op: Some(op_bit!(create_wq)),
        write: None, write_ex: w!(cmd::EX_CREATE_WQ, ib_uverbs_ex_create_wq, ib_uverbs_ex_create_wq_resp) }
    DESTROY_WQ = { ioctl: Some((obj::WQ, method::WQ_DESTROY)), op: Some(op_bit!(destroy_wq)),
        write: None, write_ex: w!(cmd::EX_DESTROY_WQ, ib_uverbs_ex_destroy_wq, ib_uverbs_ex_destroy_wq_resp) }
    MODIFY_WQ = { ioctl: None, op: None, write: None, write_ex: w!(cmd::EX_MODIFY_WQ, ib_uverbs_ex_modify_wq, empty) }
    CREATE_RWQ_IND_TBL = { ioctl: None, op: None, write: None,
        write_ex: w!(cmd::EX_CREATE_RWQ_IND_TBL, ib_uverbs_ex_create_rwq_ind_table, ib_uverbs_ex_create_rwq_ind_table_resp) }
    DESTROY_RWQ_IND_TBL = { ioctl: Some((obj::RWQ_IND_TBL, method::RWQ_IND_TBL_DESTROY)), op: Some(op_bit!(destroy_ah)),
        write: None, write_ex: w!(cmd::EX_DESTROY_RWQ_IND_TBL, ib_uverbs_ex_destroy_rwq_ind_table, empty) }

    // added by rdma-core 65 (ioctl only, except REG_MR_EX, whose fallback is
    // the legacy REG_MR write for an address-based request, remembered under
    // the reg_mr_ex slot as upstream does)
    QUERY_PORT_SPEED = { ioctl: Some((obj::DEVICE, method::QUERY_PORT_SPEED)), op: None, write: None, write_ex: None }
    QUERY_COMP_CNTR_CAPS = { ioctl: Some((obj::DEVICE, method::QUERY_COMP_CNTR_CAPS)), op: None, write: None, write_ex: None }
    REG_MR_EX = { ioctl: Some((obj::MR, method::REG_MR)), op: Some(op_bit!(reg_mr_ex)),
        write: w!(cmd::REG_MR, ib_uverbs_reg_mr, ib_uverbs_reg_mr_resp), write_ex: None }
    ALLOC_DMAH = { ioctl: Some((obj::DMAH, method::DMAH_ALLOC)), op: None, write: None, write_ex: None }
    FREE_DMAH = { ioctl: Some((obj::DMAH, method::DMAH_FREE)), op: None, write: None, write_ex: None }
    ALLOC_DMABUF = { ioctl: Some((obj::DMABUF, method::DMABUF_ALLOC)), op: None, write: None, write_ex: None }
    CREATE_COMP_CNTR = { ioctl: Some((obj::COMP_CNTR, method::COMP_CNTR_CREATE)), op: None, write: None, write_ex: None }
    DESTROY_COMP_CNTR = { ioctl: Some((obj::COMP_CNTR, method::COMP_CNTR_DESTROY)), op: None, write: None, write_ex: None }
    MODIFY_COMP_CNTR = { ioctl: Some((obj::COMP_CNTR, method::COMP_CNTR_MODIFY)), op: None, write: None, write_ex: None }
    READ_COMP_CNTR = { ioctl: Some((obj::COMP_CNTR, method::COMP_CNTR_READ)), op: None, write: None, write_ex: None }
    QP_ATTACH_COMP_CNTR = { ioctl: Some((obj::QP, method::QP_ATTACH_COMP_CNTR)), op: None, write: None, write_ex: None }
}

/// ABI-version variants of legacy forms (the kernel's uverbs ABI 3 to 5).
pub const CREATE_QP_V4: WriteForm = WriteForm::of::<ib_uverbs_create_qp, ibv_create_qp_resp_v4>(cmd::CREATE_QP);
pub const CREATE_QP_V3: WriteForm = WriteForm::of::<ib_uverbs_create_qp, ibv_create_qp_resp_v3>(cmd::CREATE_QP);
pub const CREATE_SRQ_V5: WriteForm = WriteForm::of::<ib_uverbs_create_srq, ibv_create_srq_resp_v5>(cmd::CREATE_SRQ);
pub const CREATE_XSRQ: WriteForm = WriteForm::of::<ib_uverbs_create_xsrq, ib_uverbs_create_srq_resp>(cmd::CREATE_XSRQ);
pub const MODIFY_SRQ_V3: WriteForm = WriteForm::of::<ib_uverbs_modify_srq_v3, empty>(cmd::MODIFY_SRQ);

#[cfg(test)]
mod tests {
    use super::*;

    /// Sanity of the table itself: every method can be sent somehow, a
    /// fallback slot implies both an ioctl and a write form, every ex form
    /// is 8-byte sized as the kernel requires, and the core sizes match
    /// kern-abi.h's pinned `_KABI_REQ/RESP_STRUCT_*` sizes.
    #[test]
    fn table_is_consistent() {
        let t = crate::kernel::testutil::pinned_table();
        for m in ALL {
            assert!(
                m.ioctl.is_some() || m.write.is_some() || m.write_ex.is_some(),
                "{}",
                m.name
            );
            if m.op.is_some() {
                assert!(m.ioctl.is_some(), "{}", m.name);
            }
            if let Some(f) = m.write_ex {
                assert_eq!(f.req % 8, 0, "{}", m.name);
                assert_eq!(f.resp % 8, 0, "{}", m.name);
            }
            if let Some(f) = m.write {
                assert_eq!(f.req % 4, 0, "{}", m.name);
                assert_eq!(f.resp % 4, 0, "{}", m.name);
            }
        }
        let names = [
            ("IB_USER_VERBS_CMD_ALLOC_PD", ALLOC_PD.write),
            ("IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL", CREATE_COMP_CHANNEL.write),
            ("IB_USER_VERBS_CMD_CREATE_CQ", CREATE_CQ.write),
            ("IB_USER_VERBS_CMD_CREATE_QP", CREATE_QP.write),
            ("IB_USER_VERBS_CMD_OPEN_QP", OPEN_QP.write),
            ("IB_USER_VERBS_CMD_MODIFY_QP", MODIFY_QP.write),
            ("IB_USER_VERBS_CMD_DESTROY_CQ", DESTROY_CQ.write),
            ("IB_USER_VERBS_CMD_QUERY_PORT", QUERY_PORT.write),
            ("IB_USER_VERBS_CMD_GET_CONTEXT", GET_CONTEXT.write),
            ("IB_USER_VERBS_CMD_REG_MR", REG_MR.write),
            ("IB_USER_VERBS_CMD_REREG_MR", REREG_MR.write),
            ("IB_USER_VERBS_CMD_CREATE_SRQ", CREATE_SRQ.write),
            ("IB_USER_VERBS_CMD_CREATE_XSRQ", Some(CREATE_XSRQ)),
            ("IB_USER_VERBS_CMD_CREATE_QP_V4", Some(CREATE_QP_V4)),
            ("IB_USER_VERBS_CMD_CREATE_QP_V3", Some(CREATE_QP_V3)),
            ("IB_USER_VERBS_CMD_CREATE_SRQ_V5", Some(CREATE_SRQ_V5)),
            ("IB_USER_VERBS_CMD_MODIFY_SRQ_V3", Some(MODIFY_SRQ_V3)),
            ("IB_USER_VERBS_EX_CMD_CREATE_CQ", CREATE_CQ.write_ex),
            ("IB_USER_VERBS_EX_CMD_CREATE_QP", CREATE_QP.write_ex),
            ("IB_USER_VERBS_EX_CMD_CREATE_WQ", CREATE_WQ.write_ex),
            ("IB_USER_VERBS_EX_CMD_DESTROY_WQ", DESTROY_WQ.write_ex),
            ("IB_USER_VERBS_EX_CMD_MODIFY_QP", MODIFY_QP_EX.write_ex),
            ("IB_USER_VERBS_EX_CMD_QUERY_DEVICE", QUERY_DEVICE_EX.write_ex),
            ("IB_USER_VERBS_EX_CMD_DESTROY_FLOW", DESTROY_FLOW.write_ex),
            ("IB_USER_VERBS_EX_CMD_MODIFY_CQ", MODIFY_CQ.write_ex),
            ("IB_USER_VERBS_EX_CMD_MODIFY_WQ", MODIFY_WQ.write_ex),
        ];
        for (n, f) in names {
            let f = f.unwrap();
            assert_eq!(
                t[&format!("sizeof typedef _KABI_REQ_STRUCT_{n}")],
                f.req as i64,
                "{n} request"
            );
            assert_eq!(
                t[&format!("sizeof typedef _KABI_RESP_STRUCT_{n}")],
                f.resp as i64,
                "{n} response"
            );
        }
    }
}
