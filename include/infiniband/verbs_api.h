/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * verbs_api.h - part of the ibverbs_rs libibverbs replacement.
 *
 * Supplies RDMA_UAPI_PTR() (a pointer member that always occupies 64 bits,
 * as the kernel ABI expects) before pulling in the uverbs ioctl definitions,
 * and maps the ibv_* spellings of a few verbs enums/structs onto their
 * ib_uverbs_* counterparts.
 *
 * Like the original this header expects <stdint.h>, <endian.h> (via libc)
 * and <linux/types.h> to be visible already; <infiniband/verbs.h> arranges
 * that.
 */
#ifndef VERBS_API_H
#define VERBS_API_H

/* Replaces any earlier (e.g. the kernel UAPI's plain __aligned_u64) version. */
#undef RDMA_UAPI_PTR

#if UINTPTR_MAX == UINT32_MAX
/* 32-bit pointers: pad the pointer up to 64 bits on the correct side. */
# if __BYTE_ORDER == __LITTLE_ENDIAN
#  define RDMA_UAPI_PTR(_type, _name)                                        \
	union {                                                              \
		struct {                                                     \
			_type _name;                                         \
			__u32 _name##_reserved;                              \
		};                                                           \
		__aligned_u64 _name##_data_u64;                              \
	}
# else
#  define RDMA_UAPI_PTR(_type, _name)                                        \
	union {                                                              \
		struct {                                                     \
			__u32 _name##_reserved;                              \
			_type _name;                                         \
		};                                                           \
		__aligned_u64 _name##_data_u64;                              \
	}
# endif
#elif UINTPTR_MAX == UINT64_MAX
/* 64-bit pointers: the pointer already fills the slot. */
# define RDMA_UAPI_PTR(_type, _name)                                         \
	union {                                                              \
		_type _name;                                                 \
		__aligned_u64 _name##_data_u64;                              \
	}
#else
# error "Pointer size not supported"
#endif

#include <infiniband/ib_user_ioctl_verbs.h>

/* ESP flow action (IPsec offload) */
#define ibv_flow_action_esp_keymat ib_uverbs_flow_action_esp_keymat
#define IBV_FLOW_ACTION_ESP_KEYMAT_AES_GCM IB_UVERBS_FLOW_ACTION_ESP_KEYMAT_AES_GCM
#define ibv_flow_action_esp_keymat_aes_gcm_iv_algo ib_uverbs_flow_action_esp_keymat_aes_gcm_iv_algo
#define IBV_FLOW_ACTION_IV_ALGO_SEQ IB_UVERBS_FLOW_ACTION_IV_ALGO_SEQ
#define ibv_flow_action_esp_keymat_aes_gcm ib_uverbs_flow_action_esp_keymat_aes_gcm
#define ibv_flow_action_esp_replay ib_uverbs_flow_action_esp_replay
#define IBV_FLOW_ACTION_ESP_REPLAY_NONE IB_UVERBS_FLOW_ACTION_ESP_REPLAY_NONE
#define IBV_FLOW_ACTION_ESP_REPLAY_BMP IB_UVERBS_FLOW_ACTION_ESP_REPLAY_BMP
#define ibv_flow_action_esp_replay_bmp ib_uverbs_flow_action_esp_replay_bmp
#define ibv_flow_action_esp_flags ib_uverbs_flow_action_esp_flags
#define IBV_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO IB_UVERBS_FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO
#define IBV_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD IB_UVERBS_FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD
#define IBV_FLOW_ACTION_ESP_FLAGS_TUNNEL IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TUNNEL
#define IBV_FLOW_ACTION_ESP_FLAGS_TRANSPORT IB_UVERBS_FLOW_ACTION_ESP_FLAGS_TRANSPORT
#define IBV_FLOW_ACTION_ESP_FLAGS_DECRYPT IB_UVERBS_FLOW_ACTION_ESP_FLAGS_DECRYPT
#define IBV_FLOW_ACTION_ESP_FLAGS_ENCRYPT IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ENCRYPT
#define IBV_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW IB_UVERBS_FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW
#define ibv_flow_action_esp_encap ib_uverbs_flow_action_esp_encap
#define ibv_flow_action_esp ib_uverbs_flow_action_esp

/* ibv_advise_mr() */
#define ibv_advise_mr_advice ib_uverbs_advise_mr_advice
#define IBV_ADVISE_MR_ADVICE_PREFETCH IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH
#define IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE
#define IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT
#define IBV_ADVISE_MR_FLAG_FLUSH IB_UVERBS_ADVISE_MR_FLAG_FLUSH

/* Port flags */
#define IBV_QPF_GRH_REQUIRED IB_UVERBS_QPF_GRH_REQUIRED

/* Optional MR access bits */
#define IBV_ACCESS_OPTIONAL_RANGE IB_UVERBS_ACCESS_OPTIONAL_RANGE
#define IBV_ACCESS_OPTIONAL_FIRST IB_UVERBS_ACCESS_OPTIONAL_FIRST

#endif /* VERBS_API_H */
