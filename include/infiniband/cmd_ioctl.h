/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * cmd_ioctl.h - building uverbs ioctl() commands (private provider interface
 * of libibverbs, rdma-core 44 / IBVERBS_PRIVATE_34).
 *
 * A command is described by a chain of `struct ibv_command_buffer` blocks.
 * Every caller in a call chain declares its own block on the stack with
 * DECLARE_COMMAND_BUFFER_LINK(), fills in the attributes it owns with the
 * fill_attr_*() helpers, and hands the block down; the innermost caller runs
 * execute_ioctl(), which gathers the attributes of the whole chain into one
 * ib_uverbs_ioctl_hdr and issues RDMA_VERBS_IOCTL.
 */
#ifndef __INFINIBAND_VERBS_IOCTL_H
#define __INFINIBAND_VERBS_IOCTL_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <infiniband/verbs.h>

/* Pointers travel to the kernel as zero-extended 64-bit integers. */
static inline uint64_t ioctl_ptr_to_u64(const void *ptr)
{
	return (uint64_t)(uintptr_t)ptr;
}

/* On 64-bit targets a pointer attribute already has its final encoding. */
static inline void _scrub_ptr_attr(void **ptr)
{
#if UINTPTR_MAX != UINT64_MAX
	uint64_t wide = ioctl_ptr_to_u64(*ptr);

	memcpy(ptr, &wide, sizeof(wide));
#else
	(void)ptr;
#endif
}

#define scrub_ptr_attr(ptr) _scrub_ptr_attr((void **)(&(ptr)))

struct ibv_command_buffer {
	/* next (outer) block of the chain, or NULL */
	struct ibv_command_buffer *next;
	/* free slots of this block: [next_attr, last_attr) */
	struct ib_uverbs_attr *next_attr;
	struct ib_uverbs_attr *last_attr;
	/*
	 * Legacy write() fallback: position of the driver's UHW in/out
	 * attributes (_UHW_NO_INDEX when absent) and the number of 32-bit
	 * words the core may write in front of them.
	 */
	uint8_t uhw_in_idx;
	uint8_t uhw_out_idx;
	uint8_t uhw_in_headroom_dwords;
	uint8_t uhw_out_headroom_dwords;

	/* set when an attribute could not be encoded */
	uint8_t buffer_error:1;
	/* when falling back to write(), use the extended command form */
	uint8_t fallback_require_ex:1;
	/* the command has no write() form at all */
	uint8_t fallback_ioctl_only:1;
	/* must be last: hdr.attrs[] extends into the following blocks */
	struct ib_uverbs_ioctl_hdr hdr;
};

enum { _UHW_NO_INDEX = 0xFF };

/* How many command_buffer elements hold a header plus _num_attrs attrs. */
#define _IOCTL_NUM_CMDB(_num_attrs)                                           \
	((sizeof(struct ibv_command_buffer) +                                 \
	  sizeof(struct ib_uverbs_attr) * (_num_attrs) +                      \
	  sizeof(struct ibv_command_buffer) - 1) /                            \
	 sizeof(struct ibv_command_buffer))

/* num_attrs plus every attribute slot of the blocks reachable from link. */
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
				     struct ibv_command_buffer *link);

#define _ioctl_final_num_attrs(_num_attrs, _link)                             \
	((__builtin_constant_p(!(_link)) && !(_link)) ?                       \
		 (_num_attrs) :                                               \
		 __ioctl_final_num_attrs(_num_attrs, _link))

#define _COMMAND_BUFFER_INIT(_hdr, _object_id, _method_id, _num_attrs, _link) \
	((struct ibv_command_buffer){                                         \
		.next = (_link),                                              \
		.next_attr = (_hdr).attrs,                                    \
		.last_attr = (_hdr).attrs + (_num_attrs),                     \
		.uhw_in_idx = _UHW_NO_INDEX,                                  \
		.uhw_out_idx = _UHW_NO_INDEX,                                 \
		.hdr = { .object_id = (_object_id),                           \
			 .method_id = (_method_id) },                         \
	})

static inline int _ioctl_init_cmdb(struct ibv_command_buffer *cmd,
				   uint16_t object_id, uint16_t method_id,
				   size_t num_attrs,
				   struct ibv_command_buffer *link)
{
	*cmd = _COMMAND_BUFFER_INIT(cmd->hdr, object_id, method_id, num_attrs,
				    link);
	return 0;
}

/*
 * Declare `_name`, a stack command buffer for method _method_id of object
 * _object_id with room for _num_attrs attributes (need not be a constant),
 * chained in front of _link.
 */
#define DECLARE_COMMAND_BUFFER_LINK(_name, _object_id, _method_id, _num_attrs, \
				    _link)                                     \
	const unsigned int __##_name##total =                                  \
		_ioctl_final_num_attrs(_num_attrs, _link);                     \
	struct ibv_command_buffer _name[_IOCTL_NUM_CMDB(__##_name##total)];    \
	int __attribute__((unused)) __##_name##dummy = _ioctl_init_cmdb(       \
		_name, _object_id, _method_id, __##_name##total, _link)

#define DECLARE_COMMAND_BUFFER(_name, _object_id, _method_id, _num_attrs)     \
	DECLARE_COMMAND_BUFFER_LINK(_name, _object_id, _method_id, _num_attrs, \
				    NULL)

/* Issue the command; returns 0 or an errno value. */
int execute_ioctl(struct ibv_context *context, struct ibv_command_buffer *cmd);

/* Take the next free slot of cmd, initialised as a mandatory attribute. */
static inline struct ib_uverbs_attr *
_ioctl_next_attr(struct ibv_command_buffer *cmd, uint16_t attr_id)
{
	struct ib_uverbs_attr *slot;

	assert(cmd->next_attr < cmd->last_attr);
	slot = cmd->next_attr;
	cmd->next_attr = slot + 1;
	memset(slot, 0, sizeof(*slot));
	slot->attr_id = attr_id;
	slot->flags = UVERBS_ATTR_F_MANDATORY;
	return slot;
}

/* Wrap a fill_attr_*() call to make that attribute optional. */
static inline struct ib_uverbs_attr *attr_optional(struct ib_uverbs_attr *attr)
{
	if (attr)
		attr->flags &= (uint16_t)~UVERBS_ATTR_F_MANDATORY;
	return attr;
}

/* UVERBS_ATTR_TYPE_IDR input: an object handle. */
static inline struct ib_uverbs_attr *
fill_attr_in_obj(struct ibv_command_buffer *cmd, uint16_t attr_id, uint32_t idr)
{
	struct ib_uverbs_attr *attr = _ioctl_next_attr(cmd, attr_id);

	attr->data = idr;
	return attr;
}

/* UVERBS_ATTR_TYPE_IDR output: the kernel writes the new handle back. */
static inline struct ib_uverbs_attr *
fill_attr_out_obj(struct ibv_command_buffer *cmd, uint16_t attr_id)
{
	return fill_attr_in_obj(cmd, attr_id, 0);
}

static inline uint32_t read_attr_obj(uint16_t attr_id,
				     struct ib_uverbs_attr *attr)
{
	assert(attr->attr_id == attr_id);
	(void)attr_id;
	return (uint32_t)attr->data;
}

/* UVERBS_ATTR_TYPE_PTR_IN: up to 8 bytes are sent inline, else by address. */
static inline struct ib_uverbs_attr *
fill_attr_in(struct ibv_command_buffer *cmd, uint16_t attr_id, const void *data,
	     size_t len)
{
	struct ib_uverbs_attr *attr = _ioctl_next_attr(cmd, attr_id);

	if (len > UINT16_MAX)
		cmd->buffer_error = 1;
	attr->len = (uint16_t)len;
	if (len > sizeof(attr->data))
		attr->data = ioctl_ptr_to_u64(data);
	else
		memcpy(&attr->data, data, len);
	return attr;
}

#define fill_attr_in_ptr(cmd, attr_id, ptr)                                   \
	fill_attr_in(cmd, attr_id, ptr, sizeof(*(ptr)))

static inline struct ib_uverbs_attr *
fill_attr_in_uint64(struct ibv_command_buffer *cmd, uint16_t attr_id,
		    uint64_t data)
{
	struct ib_uverbs_attr *attr = _ioctl_next_attr(cmd, attr_id);

	attr->len = sizeof(data);
	attr->data = data;
	return attr;
}

#define fill_attr_const_in(cmd, attr_id, _data)                               \
	fill_attr_in_uint64(cmd, attr_id, _data)

static inline struct ib_uverbs_attr *
fill_attr_in_uint32(struct ibv_command_buffer *cmd, uint16_t attr_id,
		    uint32_t data)
{
	struct ib_uverbs_attr *attr = _ioctl_next_attr(cmd, attr_id);

	attr->len = sizeof(data);
	memcpy(&attr->data, &data, sizeof(data));
	return attr;
}

/* UVERBS_ATTR_TYPE_FD input; an fd of -1 means "no attribute". */
static inline struct ib_uverbs_attr *
fill_attr_in_fd(struct ibv_command_buffer *cmd, uint16_t attr_id, int fd)
{
	struct ib_uverbs_attr *attr;

	if (fd == -1)
		return NULL;
	attr = _ioctl_next_attr(cmd, attr_id);
	attr->data = (uint64_t)fd;
	return attr;
}

static inline struct ib_uverbs_attr *
fill_attr_out_fd(struct ibv_command_buffer *cmd, uint16_t attr_id, int fd)
{
	struct ib_uverbs_attr *attr = _ioctl_next_attr(cmd, attr_id);

	(void)fd;
	attr->data = 0;
	return attr;
}

static inline int read_attr_fd(uint16_t attr_id, struct ib_uverbs_attr *attr)
{
	assert(attr->attr_id == attr_id);
	(void)attr_id;
	return (int)attr->data;
}

/* UVERBS_ATTR_TYPE_PTR_OUT: always passed by address. */
static inline struct ib_uverbs_attr *
fill_attr_out(struct ibv_command_buffer *cmd, uint16_t attr_id, void *data,
	      size_t len)
{
	struct ib_uverbs_attr *attr = _ioctl_next_attr(cmd, attr_id);

	if (len > UINT16_MAX)
		cmd->buffer_error = 1;
	attr->len = (uint16_t)len;
	attr->data = ioctl_ptr_to_u64(data);
	return attr;
}

#define fill_attr_out_ptr(cmd, attr_id, ptr)                                  \
	fill_attr_out(cmd, attr_id, ptr, sizeof(*(ptr)))

/* size * nelems, saturating at SIZE_MAX. */
static inline size_t _array_len(size_t size, size_t nelems)
{
	if (size && nelems >= SIZE_MAX / size)
		return SIZE_MAX;
	return size * nelems;
}

#define fill_attr_out_ptr_array(cmd, attr_id, ptr, nelems)                    \
	fill_attr_out(cmd, attr_id, ptr, _array_len(sizeof(*(ptr)), nelems))

#define fill_attr_in_ptr_array(cmd, attr_id, ptr, nelems)                     \
	fill_attr_in(cmd, attr_id, ptr, _array_len(sizeof(*(ptr)), nelems))

static inline size_t __check_divide(size_t val, unsigned int div)
{
	assert(val % div == 0);
	return val / div;
}

/* UVERBS_ATTR_TYPE_ENUM_IN: which variant (elem_id) plus its payload. */
static inline struct ib_uverbs_attr *
fill_attr_in_enum(struct ibv_command_buffer *cmd, uint16_t attr_id,
		  uint8_t elem_id, const void *data, size_t len)
{
	struct ib_uverbs_attr *attr = fill_attr_in(cmd, attr_id, data, len);

	attr->attr_data.enum_data.elem_id = elem_id;
	return attr;
}

/* UVERBS_ATTR_TYPE_IDRS_ARRAY: an array of object handles. */
static inline struct ib_uverbs_attr *
fill_attr_in_objs_arr(struct ibv_command_buffer *cmd, uint16_t attr_id,
		      const uint32_t *idrs_arr, size_t nelems)
{
	return fill_attr_in(cmd, attr_id, idrs_arr,
			    _array_len(sizeof(*idrs_arr), nelems));
}

#endif /* __INFINIBAND_VERBS_IOCTL_H */
