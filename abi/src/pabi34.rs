//! Provider ABI 34 (`IBVERBS_PRIVATE_34`): the layouts of the command
//! structs providers hand to `ibv_cmd_*` (kern-abi.h).  Each is the uverbs
//! header — `ib_uverbs_cmd_hdr`, or `ex_hdr` for extended commands —
//! followed by the kernel's request struct, and, in the provider's
//! allocation, by the provider's private data.  A later private-ABI
//! generation that changes how commands are framed gets a sibling module.
#![allow(non_camel_case_types)]

use super::uapi::*;

/// kern-abi.h's `DECLARE_CMD`: `{ struct ib_uverbs_cmd_hdr hdr; <kernel request> }`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct CmdReq<P> {
    pub hdr: ib_uverbs_cmd_hdr,
    pub core: P,
}

/// kern-abi.h's `DECLARE_CMD_EX`: `{ struct ex_hdr hdr; <kernel request> }`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct CmdReqEx<P> {
    pub hdr: ex_hdr,
    pub core: P,
}

pub type ibv_get_context = CmdReq<ib_uverbs_get_context>;
pub type ibv_query_device = CmdReq<ib_uverbs_query_device>;
pub type ibv_query_port = CmdReq<ib_uverbs_query_port>;
pub type ibv_alloc_pd = CmdReq<ib_uverbs_alloc_pd>;
pub type ibv_create_comp_channel = CmdReq<ib_uverbs_create_comp_channel>;
pub type ibv_dealloc_pd = CmdReq<ib_uverbs_dealloc_pd>;
pub type ibv_open_xrcd = CmdReq<ib_uverbs_open_xrcd>;
pub type ibv_close_xrcd = CmdReq<ib_uverbs_close_xrcd>;
pub type ibv_reg_mr = CmdReq<ib_uverbs_reg_mr>;
pub type ibv_rereg_mr = CmdReq<ib_uverbs_rereg_mr>;
pub type ibv_dereg_mr = CmdReq<ib_uverbs_dereg_mr>;
pub type ibv_alloc_mw = CmdReq<ib_uverbs_alloc_mw>;
pub type ibv_dealloc_mw = CmdReq<ib_uverbs_dealloc_mw>;
pub type ibv_create_cq = CmdReq<ib_uverbs_create_cq>;
pub type ibv_resize_cq = CmdReq<ib_uverbs_resize_cq>;
pub type ibv_poll_cq = CmdReq<ib_uverbs_poll_cq>;
pub type ibv_req_notify_cq = CmdReq<ib_uverbs_req_notify_cq>;
pub type ibv_destroy_cq = CmdReq<ib_uverbs_destroy_cq>;
pub type ibv_create_qp = CmdReq<ib_uverbs_create_qp>;
pub type ibv_open_qp = CmdReq<ib_uverbs_open_qp>;
pub type ibv_query_qp = CmdReq<ib_uverbs_query_qp>;
pub type ibv_modify_qp = CmdReq<ib_uverbs_modify_qp>;
pub type ibv_destroy_qp = CmdReq<ib_uverbs_destroy_qp>;
pub type ibv_post_send = CmdReq<ib_uverbs_post_send>;
pub type ibv_post_recv = CmdReq<ib_uverbs_post_recv>;
pub type ibv_post_srq_recv = CmdReq<ib_uverbs_post_srq_recv>;
pub type ibv_create_ah = CmdReq<ib_uverbs_create_ah>;
pub type ibv_destroy_ah = CmdReq<ib_uverbs_destroy_ah>;
pub type ibv_attach_mcast = CmdReq<ib_uverbs_attach_mcast>;
pub type ibv_detach_mcast = CmdReq<ib_uverbs_detach_mcast>;
pub type ibv_create_srq = CmdReq<ib_uverbs_create_srq>;
pub type ibv_create_xsrq = CmdReq<ib_uverbs_create_xsrq>;
pub type ibv_modify_srq = CmdReq<ib_uverbs_modify_srq>;
pub type ibv_modify_srq_v3 = CmdReq<ib_uverbs_modify_srq_v3>;
pub type ibv_query_srq = CmdReq<ib_uverbs_query_srq>;
pub type ibv_destroy_srq = CmdReq<ib_uverbs_destroy_srq>;

pub type ibv_query_device_ex = CmdReqEx<ib_uverbs_ex_query_device>;
pub type ibv_create_cq_ex = CmdReqEx<ib_uverbs_ex_create_cq>;
pub type ibv_create_qp_ex = CmdReqEx<ib_uverbs_ex_create_qp>;
pub type ibv_modify_qp_ex = CmdReqEx<ib_uverbs_ex_modify_qp>;
pub type ibv_create_flow = CmdReqEx<ib_uverbs_create_flow>;
pub type ibv_destroy_flow = CmdReqEx<ib_uverbs_destroy_flow>;
pub type ibv_create_wq = CmdReqEx<ib_uverbs_ex_create_wq>;
pub type ibv_modify_wq = CmdReqEx<ib_uverbs_ex_modify_wq>;
pub type ibv_destroy_wq = CmdReqEx<ib_uverbs_ex_destroy_wq>;
pub type ibv_create_rwq_ind_table = CmdReqEx<ib_uverbs_ex_create_rwq_ind_table>;
pub type ibv_destroy_rwq_ind_table = CmdReqEx<ib_uverbs_ex_destroy_rwq_ind_table>;
pub type ibv_modify_cq = CmdReqEx<ib_uverbs_ex_modify_cq>;

/// Size of the library's part of a provider request: header + core.
pub const fn core_size<T>() -> usize {
    core::mem::size_of::<T>()
}

/// `(request pointer, its core size, its full size)`: the library's view of
/// a provider command buffer of type `T` with `size` bytes in all.
pub fn req<T>(cmd: *mut T, size: usize) -> (*mut u8, usize, usize) {
    (cmd.cast(), core_size::<T>(), size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uapi::tests::check;
    use core::mem::{align_of, offset_of, size_of};

    macro_rules! cmd {
        ($m:ident, $($t:ident),* $(,)?) => {$(
            $m.push((format!("sizeof struct {}", stringify!($t)), size_of::<$t>() as i64));
            $m.push((format!("alignof struct {}", stringify!($t)), align_of::<$t>() as i64));
            $m.push((format!("offsetof struct {} hdr", stringify!($t)), offset_of!($t, hdr) as i64));
            $m.push((format!("offsetof struct {} core_payload", stringify!($t)), offset_of!($t, core) as i64));
        )*};
    }

    /// Every command struct against the pinned rdma-core 44 table.
    #[test]
    fn command_structs_match_pinned_table() {
        let mut m: Vec<(String, i64)> = Vec::new();
        cmd!(
            m,
            ibv_create_comp_channel,
            ibv_get_context,
            ibv_query_device,
            ibv_query_port,
            ibv_alloc_pd,
            ibv_dealloc_pd,
            ibv_open_xrcd,
            ibv_close_xrcd,
            ibv_reg_mr,
            ibv_rereg_mr,
            ibv_dereg_mr,
            ibv_alloc_mw,
            ibv_dealloc_mw,
            ibv_create_cq,
            ibv_resize_cq,
            ibv_poll_cq,
            ibv_req_notify_cq,
            ibv_destroy_cq,
            ibv_create_qp,
            ibv_open_qp,
            ibv_query_qp,
            ibv_modify_qp,
            ibv_destroy_qp,
            ibv_post_send,
            ibv_post_recv,
            ibv_post_srq_recv,
            ibv_create_ah,
            ibv_destroy_ah,
            ibv_attach_mcast,
            ibv_detach_mcast,
            ibv_create_srq,
            ibv_create_xsrq,
            ibv_modify_srq,
            ibv_modify_srq_v3,
            ibv_query_srq,
            ibv_destroy_srq,
            ibv_query_device_ex,
            ibv_create_cq_ex,
            ibv_create_qp_ex,
            ibv_modify_qp_ex,
            ibv_create_flow,
            ibv_destroy_flow,
            ibv_create_wq,
            ibv_modify_wq,
            ibv_destroy_wq,
            ibv_create_rwq_ind_table,
            ibv_destroy_rwq_ind_table,
            ibv_modify_cq
        );
        check(&m);
    }

    /// The kernel members as seen through each command struct (kern-abi.h
    /// exposes them unnamed: `offsetof(struct ibv_create_qp, pd_handle)`),
    /// i.e. header size + the member's offset in the kernel struct.
    #[test]
    fn command_members_match_pinned_table() {
        let t = crate::uapi::tests::table();
        let lay = crate::uapi::tests::layouts();
        macro_rules! members {
            ($($c:ident => $k:ident),* $(,)?) => {{
                let mut bad = Vec::new();
                let mut seen = 0;
                $(
                    let l = lay.iter().find(|l| l.name == stringify!($k)).expect(stringify!($k));
                    let base = offset_of!($c, core);
                    for (f, o) in &l.fields {
                        if f.starts_with('_') {
                            continue;
                        }
                        let key = format!("offsetof struct {} {}", stringify!($c), f);
                        match t.get(&key) {
                            Some(&v) if v == (base + o) as i64 => seen += 1,
                            Some(&v) => bad.push(format!("{key}: pinned {v}, ours {}", base + o)),
                            None => bad.push(format!("{key}: not pinned")),
                        }
                    }
                )*
                assert!(bad.is_empty(), "{}", bad.join("\n"));
                assert!(seen > 200, "only {seen} members checked");
            }};
        }
        members!(
            ibv_create_comp_channel => ib_uverbs_create_comp_channel,
            ibv_get_context => ib_uverbs_get_context, ibv_query_device => ib_uverbs_query_device,
            ibv_query_port => ib_uverbs_query_port, ibv_alloc_pd => ib_uverbs_alloc_pd,
            ibv_dealloc_pd => ib_uverbs_dealloc_pd, ibv_open_xrcd => ib_uverbs_open_xrcd,
            ibv_close_xrcd => ib_uverbs_close_xrcd, ibv_reg_mr => ib_uverbs_reg_mr,
            ibv_rereg_mr => ib_uverbs_rereg_mr, ibv_dereg_mr => ib_uverbs_dereg_mr,
            ibv_alloc_mw => ib_uverbs_alloc_mw, ibv_dealloc_mw => ib_uverbs_dealloc_mw,
            ibv_create_cq => ib_uverbs_create_cq, ibv_resize_cq => ib_uverbs_resize_cq,
            ibv_poll_cq => ib_uverbs_poll_cq, ibv_req_notify_cq => ib_uverbs_req_notify_cq,
            ibv_destroy_cq => ib_uverbs_destroy_cq, ibv_create_qp => ib_uverbs_create_qp,
            ibv_open_qp => ib_uverbs_open_qp, ibv_query_qp => ib_uverbs_query_qp,
            ibv_modify_qp => ib_uverbs_modify_qp, ibv_destroy_qp => ib_uverbs_destroy_qp,
            ibv_post_send => ib_uverbs_post_send, ibv_post_recv => ib_uverbs_post_recv,
            ibv_post_srq_recv => ib_uverbs_post_srq_recv, ibv_create_ah => ib_uverbs_create_ah,
            ibv_destroy_ah => ib_uverbs_destroy_ah, ibv_attach_mcast => ib_uverbs_attach_mcast,
            ibv_detach_mcast => ib_uverbs_detach_mcast, ibv_create_srq => ib_uverbs_create_srq,
            ibv_create_xsrq => ib_uverbs_create_xsrq, ibv_modify_srq => ib_uverbs_modify_srq,
            ibv_query_srq => ib_uverbs_query_srq, ibv_destroy_srq => ib_uverbs_destroy_srq,
            ibv_query_device_ex => ib_uverbs_ex_query_device, ibv_create_cq_ex => ib_uverbs_ex_create_cq,
            ibv_create_qp_ex => ib_uverbs_ex_create_qp, ibv_modify_qp_ex => ib_uverbs_ex_modify_qp,
            ibv_create_flow => ib_uverbs_create_flow, ibv_destroy_flow => ib_uverbs_destroy_flow,
            ibv_create_wq => ib_uverbs_ex_create_wq, ibv_modify_wq => ib_uverbs_ex_modify_wq,
            ibv_destroy_wq => ib_uverbs_ex_destroy_wq, ibv_create_rwq_ind_table => ib_uverbs_ex_create_rwq_ind_table,
            ibv_destroy_rwq_ind_table => ib_uverbs_ex_destroy_rwq_ind_table, ibv_modify_cq => ib_uverbs_ex_modify_cq,
        );
    }
}
