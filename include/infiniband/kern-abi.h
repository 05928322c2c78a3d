/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * kern-abi.h - userspace framing of the uverbs "write" commands.
 *
 * Part of the private provider interface of libibverbs (rdma-core 44,
 * IBVERBS_PRIVATE_34).  Each command struct declared here is the 8-byte
 * uverbs command header (or the 24-byte extended header) followed by the
 * kernel's request struct from <rdma/ib_user_verbs.h>.  The kernel's
 * members are visible twice: unnamed, so that `cmd->pd_handle` works, and
 * as the named member `core_payload`.  Providers append their own
 * driver-private data with DECLARE_DRV_CMD().
 */
#ifndef KERN_ABI_H
#define KERN_ABI_H

#include <stddef.h>
#include <linux/types.h>
#include <rdma/ib_user_verbs.h>

/* Range of kernel uverbs ABI versions this library speaks. */
#define IB_USER_VERBS_MIN_ABI_VERSION	3
#define IB_USER_VERBS_MAX_ABI_VERSION	6

/* Header of an extended ("_EX") write command. */
struct ex_hdr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
};

/*
 * Unnamed copies of the kernel request structs.  _STRUCT_<name> expands to
 * an untagged struct whose members are those of `struct <name>` in
 * <rdma/ib_user_verbs.h>, so the command wrappers below can expose them
 * without a member name.
 */
#define _STRUCT_ib_uverbs_alloc_mw \
	struct { \
		__aligned_u64 response; \
		__u32 pd_handle; \
		__u8 mw_type; \
		__u8 reserved[3]; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_alloc_pd \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_attach_mcast \
	struct { \
		__u8 gid[16]; \
		__u32 qp_handle; \
		__u16 mlid; \
		__u16 reserved; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_close_xrcd \
	struct { \
		__u32 xrcd_handle; \
	}

#define _STRUCT_ib_uverbs_create_ah \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 user_handle; \
		__u32 pd_handle; \
		__u32 reserved; \
		struct ib_uverbs_ah_attr attr; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_create_comp_channel \
	struct { \
		__aligned_u64 response; \
	}

#define _STRUCT_ib_uverbs_create_cq \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 user_handle; \
		__u32 cqe; \
		__u32 comp_vector; \
		__s32 comp_channel; \
		__u32 reserved; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_create_qp \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 user_handle; \
		__u32 pd_handle; \
		__u32 send_cq_handle; \
		__u32 recv_cq_handle; \
		__u32 srq_handle; \
		__u32 max_send_wr; \
		__u32 max_recv_wr; \
		__u32 max_send_sge; \
		__u32 max_recv_sge; \
		__u32 max_inline_data; \
		__u8 sq_sig_all; \
		__u8 qp_type; \
		__u8 is_srq; \
		__u8 reserved; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_create_srq \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 user_handle; \
		__u32 pd_handle; \
		__u32 max_wr; \
		__u32 max_sge; \
		__u32 srq_limit; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_create_xsrq \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 user_handle; \
		__u32 srq_type; \
		__u32 pd_handle; \
		__u32 max_wr; \
		__u32 max_sge; \
		__u32 srq_limit; \
		__u32 max_num_tags; \
		__u32 xrcd_handle; \
		__u32 cq_handle; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_dealloc_mw \
	struct { \
		__u32 mw_handle; \
	}

#define _STRUCT_ib_uverbs_dealloc_pd \
	struct { \
		__u32 pd_handle; \
	}

#define _STRUCT_ib_uverbs_dereg_mr \
	struct { \
		__u32 mr_handle; \
	}

#define _STRUCT_ib_uverbs_destroy_ah \
	struct { \
		__u32 ah_handle; \
	}

#define _STRUCT_ib_uverbs_destroy_cq \
	struct { \
		__aligned_u64 response; \
		__u32 cq_handle; \
		__u32 reserved; \
	}

#define _STRUCT_ib_uverbs_destroy_qp \
	struct { \
		__aligned_u64 response; \
		__u32 qp_handle; \
		__u32 reserved; \
	}

#define _STRUCT_ib_uverbs_destroy_srq \
	struct { \
		__aligned_u64 response; \
		__u32 srq_handle; \
		__u32 reserved; \
	}

#define _STRUCT_ib_uverbs_detach_mcast \
	struct { \
		__u8 gid[16]; \
		__u32 qp_handle; \
		__u16 mlid; \
		__u16 reserved; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_get_context \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_modify_qp \
	struct { \
		struct ib_uverbs_qp_dest dest; \
		struct ib_uverbs_qp_dest alt_dest; \
		__u32 qp_handle; \
		__u32 attr_mask; \
		__u32 qkey; \
		__u32 rq_psn; \
		__u32 sq_psn; \
		__u32 dest_qp_num; \
		__u32 qp_access_flags; \
		__u16 pkey_index; \
		__u16 alt_pkey_index; \
		__u8 qp_state; \
		__u8 cur_qp_state; \
		__u8 path_mtu; \
		__u8 path_mig_state; \
		__u8 en_sqd_async_notify; \
		__u8 max_rd_atomic; \
		__u8 max_dest_rd_atomic; \
		__u8 min_rnr_timer; \
		__u8 port_num; \
		__u8 timeout; \
		__u8 retry_cnt; \
		__u8 rnr_retry; \
		__u8 alt_port_num; \
		__u8 alt_timeout; \
		__u8 reserved[2]; \
		__aligned_u64 driver_data[0]; \
	}

#define _STRUCT_ib_uverbs_modify_srq \
	struct { \
		__u32 srq_handle; \
		__u32 attr_mask; \
		__u32 max_wr; \
		__u32 srq_limit; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_open_qp \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 user_handle; \
		__u32 pd_handle; \
		__u32 qpn; \
		__u8 qp_type; \
		__u8 reserved[7]; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_open_xrcd \
	struct { \
		__aligned_u64 response; \
		__u32 fd; \
		__u32 oflags; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_poll_cq \
	struct { \
		__aligned_u64 response; \
		__u32 cq_handle; \
		__u32 ne; \
	}

#define _STRUCT_ib_uverbs_post_recv \
	struct { \
		__aligned_u64 response; \
		__u32 qp_handle; \
		__u32 wr_count; \
		__u32 sge_count; \
		__u32 wqe_size; \
		struct ib_uverbs_recv_wr recv_wr[]; \
	}

#define _STRUCT_ib_uverbs_post_send \
	struct { \
		__aligned_u64 response; \
		__u32 qp_handle; \
		__u32 wr_count; \
		__u32 sge_count; \
		__u32 wqe_size; \
		struct ib_uverbs_send_wr send_wr[]; \
	}

#define _STRUCT_ib_uverbs_post_srq_recv \
	struct { \
		__aligned_u64 response; \
		__u32 srq_handle; \
		__u32 wr_count; \
		__u32 sge_count; \
		__u32 wqe_size; \
		struct ib_uverbs_recv_wr recv[]; \
	}

#define _STRUCT_ib_uverbs_query_device \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_query_port \
	struct { \
		__aligned_u64 response; \
		__u8 port_num; \
		__u8 reserved[7]; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_query_qp \
	struct { \
		__aligned_u64 response; \
		__u32 qp_handle; \
		__u32 attr_mask; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_query_srq \
	struct { \
		__aligned_u64 response; \
		__u32 srq_handle; \
		__u32 reserved; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_reg_mr \
	struct { \
		__aligned_u64 response; \
		__aligned_u64 start; \
		__aligned_u64 length; \
		__aligned_u64 hca_va; \
		__u32 pd_handle; \
		__u32 access_flags; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_req_notify_cq \
	struct { \
		__u32 cq_handle; \
		__u32 solicited_only; \
	}

#define _STRUCT_ib_uverbs_rereg_mr \
	struct { \
		__aligned_u64 response; \
		__u32 mr_handle; \
		__u32 flags; \
		__aligned_u64 start; \
		__aligned_u64 length; \
		__aligned_u64 hca_va; \
		__u32 pd_handle; \
		__u32 access_flags; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_resize_cq \
	struct { \
		__aligned_u64 response; \
		__u32 cq_handle; \
		__u32 cqe; \
		__aligned_u64 driver_data[]; \
	}

#define _STRUCT_ib_uverbs_ex_create_cq \
	struct { \
		__aligned_u64 user_handle; \
		__u32 cqe; \
		__u32 comp_vector; \
		__s32 comp_channel; \
		__u32 comp_mask; \
		__u32 flags; \
		__u32 reserved; \
	}

#define _STRUCT_ib_uverbs_create_flow \
	struct { \
		__u32 comp_mask; \
		__u32 qp_handle; \
		struct ib_uverbs_flow_attr flow_attr; \
	}

#define _STRUCT_ib_uverbs_ex_create_qp \
	struct { \
		__aligned_u64 user_handle; \
		__u32 pd_handle; \
		__u32 send_cq_handle; \
		__u32 recv_cq_handle; \
		__u32 srq_handle; \
		__u32 max_send_wr; \
		__u32 max_recv_wr; \
		__u32 max_send_sge; \
		__u32 max_recv_sge; \
		__u32 max_inline_data; \
		__u8 sq_sig_all; \
		__u8 qp_type; \
		__u8 is_srq; \
		__u8 reserved; \
		__u32 comp_mask; \
		__u32 create_flags; \
		__u32 rwq_ind_tbl_handle; \
		__u32 source_qpn; \
	}

#define _STRUCT_ib_uverbs_ex_create_rwq_ind_table \
	struct { \
		__u32 comp_mask; \
		__u32 log_ind_tbl_size; \
		__u32 wq_handles[]; \
	}

#define _STRUCT_ib_uverbs_ex_create_wq \
	struct { \
		__u32 comp_mask; \
		__u32 wq_type; \
		__aligned_u64 user_handle; \
		__u32 pd_handle; \
		__u32 cq_handle; \
		__u32 max_wr; \
		__u32 max_sge; \
		__u32 create_flags; \
		__u32 reserved; \
	}

#define _STRUCT_ib_uverbs_destroy_flow \
	struct { \
		__u32 comp_mask; \
		__u32 flow_handle; \
	}

#define _STRUCT_ib_uverbs_ex_destroy_rwq_ind_table \
	struct { \
		__u32 comp_mask; \
		__u32 ind_tbl_handle; \
	}

#define _STRUCT_ib_uverbs_ex_destroy_wq \
	struct { \
		__u32 comp_mask; \
		__u32 wq_handle; \
	}

#define _STRUCT_ib_uverbs_ex_modify_cq \
	struct { \
		__u32 cq_handle; \
		__u32 attr_mask; \
		struct ib_uverbs_cq_moderation attr; \
		__u32 reserved; \
	}

#define _STRUCT_ib_uverbs_ex_modify_qp \
	struct { \
		struct ib_uverbs_modify_qp base; \
		__u32 rate_limit; \
		__u32 reserved; \
	}

#define _STRUCT_ib_uverbs_ex_modify_wq \
	struct { \
		__u32 attr_mask; \
		__u32 wq_handle; \
		__u32 wq_state; \
		__u32 curr_wq_state; \
		__u32 flags; \
		__u32 flags_mask; \
	}

#define _STRUCT_ib_uverbs_ex_query_device \
	struct { \
		__u32 comp_mask; \
		__u32 reserved; \
	}

/* Stand-in for "no kernel struct" (commands without a response, etc.). */
struct empty {};
#define _STRUCT_empty struct {}

/*
 * Type names derived from a command number:
 *   IBV_ABI_REQ(e)   the full request (header + kernel payload) for command e
 *   IBV_KABI_REQ(e)  the kernel request struct of command e
 *   IBV_KABI_RESP(e) the kernel response struct of command e
 *   IBV_ABI_ALIGN(e) the size granularity of that command (4 or 8 bytes)
 */
#define IBV_ABI_REQ(_enum) _ABI_REQ_STRUCT_##_enum
#define IBV_KABI_REQ(_enum) _KABI_REQ_STRUCT_##_enum
#define IBV_KABI_RESP(_enum) _KABI_RESP_STRUCT_##_enum
#define IBV_ABI_ALIGN(_enum) _ABI_ALIGN_##_enum

/* A legacy write command: 8-byte header, then the kernel request. */
#define DECLARE_CMDX(_enum, _name, _kabi, _kabi_resp)                         \
	struct _name {                                                        \
		struct ib_uverbs_cmd_hdr hdr;                                 \
		union {                                                       \
			_STRUCT_##_kabi;                                      \
			struct _kabi core_payload;                            \
		};                                                            \
	};                                                                    \
	typedef struct _name IBV_ABI_REQ(_enum);                              \
	typedef struct _kabi IBV_KABI_REQ(_enum);                             \
	typedef struct _kabi_resp IBV_KABI_RESP(_enum);                       \
	enum { IBV_ABI_ALIGN(_enum) = 4 };                                    \
	_Static_assert(sizeof(struct _kabi_resp) % 4 == 0,                    \
		       #_name ": response size not a multiple of 4");        \
	_Static_assert(_enum != -1, #_name ": bad command number");          \
	_Static_assert(sizeof(struct _name) ==                                \
			       sizeof(struct ib_uverbs_cmd_hdr) +             \
				       sizeof(struct _kabi),                  \
		       #_name ": unexpected padding")

#define DECLARE_CMD(_enum, _name, _kabi)                                      \
	DECLARE_CMDX(_enum, _name, _kabi, _kabi##_resp)

/* An extended write command: 24-byte header, then the kernel request. */
#define DECLARE_CMD_EXX(_enum, _name, _kabi, _kabi_resp)                      \
	struct _name {                                                        \
		struct ex_hdr hdr;                                            \
		union {                                                       \
			_STRUCT_##_kabi;                                      \
			struct _kabi core_payload;                            \
		};                                                            \
	};                                                                    \
	typedef struct _name IBV_ABI_REQ(_enum);                              \
	typedef struct _kabi IBV_KABI_REQ(_enum);                             \
	typedef struct _kabi_resp IBV_KABI_RESP(_enum);                       \
	enum { IBV_ABI_ALIGN(_enum) = 8 };                                    \
	_Static_assert(_enum != -1, #_name ": bad command number");          \
	_Static_assert(sizeof(struct _kabi) % 8 == 0,                         \
		       #_name ": request size not a multiple of 8");         \
	_Static_assert(sizeof(struct _kabi_resp) % 8 == 0,                    \
		       #_name ": response size not a multiple of 8");        \
	_Static_assert(sizeof(struct _name) ==                                \
			       sizeof(struct ex_hdr) + sizeof(struct _kabi),  \
		       #_name ": unexpected padding");                       \
	_Static_assert(sizeof(struct _name) % 8 == 0,                         \
		       #_name ": size not a multiple of 8")

#define DECLARE_CMD_EX(_enum, _name, _kabi)                                   \
	DECLARE_CMD_EXX(_enum, _name, _kabi, _kabi##_resp)

/*
 * For providers: declare `struct _name` (the core request for command _enum
 * followed by the driver's request struct _kabi_req) and `struct
 * _name_resp` (the core response followed by _kabi_resp).  A matching
 * _STRUCT_<kabi> macro must exist for both driver structs.  The asserts
 * reject layouts with padding between the core and driver parts.
 */
#define DECLARE_DRV_CMD(_name, _enum, _kabi_req, _kabi_resp)                  \
	struct _name {                                                        \
		IBV_ABI_REQ(_enum) ibv_cmd;                                   \
		union {                                                       \
			_STRUCT_##_kabi_req;                                  \
			struct _kabi_req drv_payload;                         \
		};                                                            \
	};                                                                    \
	struct _name##_resp {                                                 \
		IBV_KABI_RESP(_enum) ibv_resp;                                \
		union {                                                       \
			_STRUCT_##_kabi_resp;                                 \
			struct _kabi_resp drv_payload;                        \
		};                                                            \
	};                                                                    \
	_Static_assert(sizeof(IBV_KABI_REQ(_enum)) %                          \
			       __alignof__(struct _kabi_req) == 0,            \
		       #_name ": core request length breaks alignment");     \
	_Static_assert(sizeof(struct _name) ==                                \
			       sizeof(IBV_ABI_REQ(_enum)) +                   \
				       sizeof(struct _kabi_req),              \
		       #_name ": unexpected request padding");               \
	_Static_assert(sizeof(struct _name) % IBV_ABI_ALIGN(_enum) == 0,      \
		       #_name ": request size misaligned");                  \
	_Static_assert(sizeof(IBV_KABI_RESP(_enum)) %                         \
			       __alignof__(struct _kabi_resp) == 0,           \
		       #_name ": core response length breaks alignment");    \
	_Static_assert(sizeof(struct _name##_resp) ==                         \
			       sizeof(IBV_KABI_RESP(_enum)) +                 \
				       sizeof(struct _kabi_resp),             \
		       #_name ": unexpected response padding");              \
	_Static_assert(sizeof(struct _name##_resp) %                          \
				       IBV_ABI_ALIGN(_enum) == 0,             \
		       #_name ": response size misaligned");

DECLARE_CMD(IB_USER_VERBS_CMD_ALLOC_MW, ibv_alloc_mw, ib_uverbs_alloc_mw);
DECLARE_CMD(IB_USER_VERBS_CMD_ALLOC_PD, ibv_alloc_pd, ib_uverbs_alloc_pd);
DECLARE_CMDX(IB_USER_VERBS_CMD_ATTACH_MCAST, ibv_attach_mcast,
	     ib_uverbs_attach_mcast, empty);
DECLARE_CMDX(IB_USER_VERBS_CMD_CLOSE_XRCD, ibv_close_xrcd,
	     ib_uverbs_close_xrcd, empty);
DECLARE_CMD(IB_USER_VERBS_CMD_CREATE_AH, ibv_create_ah, ib_uverbs_create_ah);
DECLARE_CMD(IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, ibv_create_comp_channel,
	    ib_uverbs_create_comp_channel);
DECLARE_CMD(IB_USER_VERBS_CMD_CREATE_CQ, ibv_create_cq, ib_uverbs_create_cq);
DECLARE_CMD(IB_USER_VERBS_CMD_CREATE_QP, ibv_create_qp, ib_uverbs_create_qp);
DECLARE_CMD(IB_USER_VERBS_CMD_CREATE_SRQ, ibv_create_srq,
	    ib_uverbs_create_srq);
DECLARE_CMDX(IB_USER_VERBS_CMD_CREATE_XSRQ, ibv_create_xsrq,
	     ib_uverbs_create_xsrq, ib_uverbs_create_srq_resp);
DECLARE_CMDX(IB_USER_VERBS_CMD_DEALLOC_MW, ibv_dealloc_mw,
	     ib_uverbs_dealloc_mw, empty);
DECLARE_CMDX(IB_USER_VERBS_CMD_DEALLOC_PD, ibv_dealloc_pd,
	     ib_uverbs_dealloc_pd, empty);
DECLARE_CMDX(IB_USER_VERBS_CMD_DEREG_MR, ibv_dereg_mr, ib_uverbs_dereg_mr,
	     empty);
DECLARE_CMDX(IB_USER_VERBS_CMD_DESTROY_AH, ibv_destroy_ah,
	     ib_uverbs_destroy_ah, empty);
DECLARE_CMD(IB_USER_VERBS_CMD_DESTROY_CQ, ibv_destroy_cq,
	    ib_uverbs_destroy_cq);
DECLARE_CMD(IB_USER_VERBS_CMD_DESTROY_QP, ibv_destroy_qp,
	    ib_uverbs_destroy_qp);
DECLARE_CMD(IB_USER_VERBS_CMD_DESTROY_SRQ, ibv_destroy_srq,
	    ib_uverbs_destroy_srq);
DECLARE_CMDX(IB_USER_VERBS_CMD_DETACH_MCAST, ibv_detach_mcast,
	     ib_uverbs_detach_mcast, empty);
DECLARE_CMD(IB_USER_VERBS_CMD_GET_CONTEXT, ibv_get_context,
	    ib_uverbs_get_context);
DECLARE_CMDX(IB_USER_VERBS_CMD_MODIFY_QP, ibv_modify_qp, ib_uverbs_modify_qp,
	     empty);
DECLARE_CMDX(IB_USER_VERBS_CMD_MODIFY_SRQ, ibv_modify_srq,
	     ib_uverbs_modify_srq, empty);
DECLARE_CMDX(IB_USER_VERBS_CMD_OPEN_QP, ibv_open_qp, ib_uverbs_open_qp,
	     ib_uverbs_create_qp_resp);
DECLARE_CMD(IB_USER_VERBS_CMD_OPEN_XRCD, ibv_open_xrcd, ib_uverbs_open_xrcd);
DECLARE_CMD(IB_USER_VERBS_CMD_POLL_CQ, ibv_poll_cq, ib_uverbs_poll_cq);
DECLARE_CMD(IB_USER_VERBS_CMD_POST_RECV, ibv_post_recv, ib_uverbs_post_recv);
DECLARE_CMD(IB_USER_VERBS_CMD_POST_SEND, ibv_post_send, ib_uverbs_post_send);
DECLARE_CMD(IB_USER_VERBS_CMD_POST_SRQ_RECV, ibv_post_srq_recv,
	    ib_uverbs_post_srq_recv);
DECLARE_CMD(IB_USER_VERBS_CMD_QUERY_DEVICE, ibv_query_device,
	    ib_uverbs_query_device);
DECLARE_CMD(IB_USER_VERBS_CMD_QUERY_PORT, ibv_query_port,
	    ib_uverbs_query_port);
DECLARE_CMD(IB_USER_VERBS_CMD_QUERY_QP, ibv_query_qp, ib_uverbs_query_qp);
DECLARE_CMD(IB_USER_VERBS_CMD_QUERY_SRQ, ibv_query_srq, ib_uverbs_query_srq);
DECLARE_CMD(IB_USER_VERBS_CMD_REG_MR, ibv_reg_mr, ib_uverbs_reg_mr);
DECLARE_CMDX(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, ibv_req_notify_cq,
	     ib_uverbs_req_notify_cq, empty);
DECLARE_CMD(IB_USER_VERBS_CMD_REREG_MR, ibv_rereg_mr, ib_uverbs_rereg_mr);
DECLARE_CMD(IB_USER_VERBS_CMD_RESIZE_CQ, ibv_resize_cq, ib_uverbs_resize_cq);

DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_CREATE_CQ, ibv_create_cq_ex,
	       ib_uverbs_ex_create_cq);
DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_CREATE_FLOW, ibv_create_flow,
	       ib_uverbs_create_flow);
DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_CREATE_QP, ibv_create_qp_ex,
	       ib_uverbs_ex_create_qp);
DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL,
	       ibv_create_rwq_ind_table, ib_uverbs_ex_create_rwq_ind_table);
DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_CREATE_WQ, ibv_create_wq,
	       ib_uverbs_ex_create_wq);
DECLARE_CMD_EXX(IB_USER_VERBS_EX_CMD_DESTROY_FLOW, ibv_destroy_flow,
		ib_uverbs_destroy_flow, empty);
DECLARE_CMD_EXX(IB_USER_VERBS_EX_CMD_DESTROY_RWQ_IND_TBL,
		ibv_destroy_rwq_ind_table, ib_uverbs_ex_destroy_rwq_ind_table,
		empty);
DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_DESTROY_WQ, ibv_destroy_wq,
	       ib_uverbs_ex_destroy_wq);
DECLARE_CMD_EXX(IB_USER_VERBS_EX_CMD_MODIFY_CQ, ibv_modify_cq,
		ib_uverbs_ex_modify_cq, empty);
DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_MODIFY_QP, ibv_modify_qp_ex,
	       ib_uverbs_ex_modify_qp);
DECLARE_CMD_EXX(IB_USER_VERBS_EX_CMD_MODIFY_WQ, ibv_modify_wq,
		ib_uverbs_ex_modify_wq, empty);
DECLARE_CMD_EX(IB_USER_VERBS_EX_CMD_QUERY_DEVICE, ibv_query_device_ex,
	       ib_uverbs_ex_query_device);

/*
 * The extended create-QP request begins with the same members as the legacy
 * one (up to and excluding `response`), so view it through the legacy type.
 * Only the members from user_handle onward may be touched through the
 * returned pointer.
 */
static inline struct ib_uverbs_create_qp *
ibv_create_qp_ex_to_reg(struct ibv_create_qp_ex *cmd_ex)
{
	return (struct ib_uverbs_create_qp *)((char *)&cmd_ex->user_handle -
		offsetof(struct ib_uverbs_create_qp, user_handle));
}

/* Flow-steering specs as laid out in the create-flow request. */
struct ibv_kern_ipv4_filter {
	__u32 src_ip;
	__u32 dst_ip;
};

struct ibv_kern_spec_ipv4 {
	__u32 type;
	__u16 size;
	__u16 reserved;
	struct ibv_kern_ipv4_filter val;
	struct ibv_kern_ipv4_filter mask;
};

struct ibv_kern_spec {
	union {
		struct ib_uverbs_flow_spec_hdr hdr;
		struct ib_uverbs_flow_spec_eth eth;
		struct ibv_kern_spec_ipv4 ipv4;
		struct ib_uverbs_flow_spec_ipv4 ipv4_ext;
		struct ib_uverbs_flow_spec_esp esp;
		struct ib_uverbs_flow_spec_tcp_udp tcp_udp;
		struct ib_uverbs_flow_spec_ipv6 ipv6;
		struct ib_uverbs_flow_spec_gre gre;
		struct ib_uverbs_flow_spec_tunnel tunnel;
		struct ib_uverbs_flow_spec_mpls mpls;
		struct ib_uverbs_flow_spec_action_tag flow_tag;
		struct ib_uverbs_flow_spec_action_drop drop;
		struct ib_uverbs_flow_spec_action_handle handle;
		struct ib_uverbs_flow_spec_action_count flow_count;
	};
};

/*
 * Requests and responses of older kernel ABI revisions (3 to 5).  The
 * modify-SRQ v3 request has no unnamed copy; use its core_payload member.
 */
struct ib_uverbs_modify_srq_v3 {
	__u32 srq_handle;
	__u32 attr_mask;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 reserved;
};
#define _STRUCT_ib_uverbs_modify_srq_v3
enum { IB_USER_VERBS_CMD_MODIFY_SRQ_V3 = IB_USER_VERBS_CMD_MODIFY_SRQ };
DECLARE_CMDX(IB_USER_VERBS_CMD_MODIFY_SRQ_V3, ibv_modify_srq_v3,
	     ib_uverbs_modify_srq_v3, empty);

struct ibv_create_qp_resp_v3 {
	__u32 qp_handle;
	__u32 qpn;
};

struct ibv_create_qp_resp_v4 {
	__u32 qp_handle;
	__u32 qpn;
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
};

struct ibv_create_srq_resp_v5 {
	__u32 srq_handle;
};

#define _STRUCT_ib_uverbs_create_srq_v5
enum { IB_USER_VERBS_CMD_CREATE_SRQ_V5 = IB_USER_VERBS_CMD_CREATE_SRQ };
DECLARE_CMDX(IB_USER_VERBS_CMD_CREATE_SRQ_V5, ibv_create_srq_v5,
	     ib_uverbs_create_srq, ibv_create_srq_resp_v5);

#define _STRUCT_ib_uverbs_create_qp_v4
enum { IB_USER_VERBS_CMD_CREATE_QP_V4 = IB_USER_VERBS_CMD_CREATE_QP };
DECLARE_CMDX(IB_USER_VERBS_CMD_CREATE_QP_V4, ibv_create_qp_v4,
	     ib_uverbs_create_qp, ibv_create_qp_resp_v4);

#define _STRUCT_ib_uverbs_create_qp_v3
enum { IB_USER_VERBS_CMD_CREATE_QP_V3 = IB_USER_VERBS_CMD_CREATE_QP };
DECLARE_CMDX(IB_USER_VERBS_CMD_CREATE_QP_V3, ibv_create_qp_v3,
	     ib_uverbs_create_qp, ibv_create_qp_resp_v3);

#endif /* KERN_ABI_H */
