/*
 * The uverbs stand-in: a user-space model of the kernel's uverbs character
 * device (/dev/infiniband/uverbsN), loaded with LD_PRELOAD.  See README.md
 * beside this file.
 *
 * standin.c   interposition (open/close/ioctl/write/mmap/stat...), the fd
 *             table, the command log, fault injection
 * uverbs.c    the uverbs uAPI: write() commands, RDMA_VERBS_IOCTL methods,
 *             the object table, core responses, async events
 * drv_*.c     each kernel driver's own data (udata in/out, mmaps, driver
 *             methods): one `struct sti_driver` per file
 */
#ifndef STANDIN_H
#define STANDIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STI_MAX_OBJS 4096

enum sti_type {
	STI_T_NONE,
	STI_T_PD,
	STI_T_MR,
	STI_T_MW,
	STI_T_CQ,
	STI_T_QP,
	STI_T_SRQ,
	STI_T_AH,
	STI_T_XRCD,
	STI_T_WQ,
	STI_T_RWQ_IND_TBL,
	STI_T_FLOW,
	STI_T_DM,
	STI_T_COUNTERS,
	STI_T_COMP_CHANNEL,
	STI_T_ASYNC,
	STI_T_FLOW_ACTION,
	STI_T_DRIVER, /* an object of a driver's own type (DEVX, VAR, UAR...) */
	/* objects of the latest kernel only (STANDIN_KERNEL=latest) */
	STI_T_DMAH,
	STI_T_COMP_CNTR,
};

struct sti_obj {
	enum sti_type type;
	uint32_t handle;
	uint32_t num;       /* QP/SRQ/WQ/RWQ_IND_TBL number, MR/MW lkey */
	uint32_t rkey;
	uint32_t qp_type;
	uint32_t state;     /* QP state */
	uint32_t cqe;
	uint64_t user_handle;
	int fd;             /* COMP_CHANNEL / ASYNC: the write end of the pipe */
	int rfd;            /* ... and the read end handed to the process */
	void *drv;          /* driver's per-object data */
	/* COMP_CNTR: the completion and error counts, and where the device
	 * writes them in the process (0: nowhere) */
	uint64_t cntr[2], cntr_va[2];
	/* The kernel's references between objects (usecnt, uxrcd refcnt):
	 * how many objects use this one, and the objects this one uses
	 * (each gives its use back when it is destroyed).  A destroy of an
	 * object still in use is refused with EBUSY. */
	uint32_t usecnt;
	uint32_t nuses;
	struct sti_obj **uses;
	/* QP: the multicast groups attached (16-byte GID, 2-byte LID each) */
	uint32_t nmcast;
	uint8_t (*mcast)[18];
};

struct sti_dev {
	int index;           /* N of uverbsN */
	char ibdev[64];
	const struct sti_driver *drv;
};

struct sti_ctx {
	int cmd_fd;
	struct sti_dev dev;
	int async_rfd, async_wfd; /* the context's async event pipe, -1 none */
	int have_ucontext;
	uint32_t next_qpn, next_key, next_num;
	struct sti_obj *objs[STI_MAX_OBJS];
	void *drv;           /* driver's per-context data */
};

/* What a driver hook is asked: one verb's driver data. */
enum sti_op {
	STI_OP_GET_CONTEXT,
	STI_OP_QUERY_DEVICE,  /* query_device_ex's udata */
	STI_OP_ALLOC_PD,
	STI_OP_REG_MR,
	STI_OP_REREG_MR,
	STI_OP_ALLOC_MW,
	STI_OP_CREATE_CQ,
	STI_OP_RESIZE_CQ,
	STI_OP_CREATE_QP,
	STI_OP_MODIFY_QP,
	STI_OP_QUERY_QP,
	STI_OP_CREATE_SRQ,
	STI_OP_MODIFY_SRQ,
	STI_OP_CREATE_AH,
	STI_OP_OPEN_XRCD,
	STI_OP_CREATE_WQ,
	STI_OP_MODIFY_WQ,
	STI_OP_CREATE_RWQ_IND_TBL,
	STI_OP_CREATE_FLOW,
	STI_OP_ALLOC_DM,
	STI_OP_REG_DM_MR,
	STI_OP_REG_DMABUF_MR,
	STI_OP_OTHER,
};

struct sti_req {
	enum sti_op op;
	struct sti_ctx *ctx;
	struct sti_obj *obj;       /* the object made or acted on, or NULL */
	const void *uin;           /* driver data in (may be NULL) */
	size_t uin_len;
	void *uout;                /* driver data out: zeroed, uout_len bytes */
	size_t uout_len;
	size_t uout_written;       /* the hook says how much it wrote */
	/* core parameters a hook may need */
	uint32_t cqe;              /* CQ: entries granted (hook may change) */
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
	uint32_t qp_type;
	uint32_t attr_mask, qp_state;
	uint64_t length;           /* MR / DM length */
};

/* One attribute of an ioctl, for a driver's own methods. */
struct sti_attr {
	uint16_t id, len, flags;
	uint8_t elem_id;
	uint64_t *data;            /* &attr->data in the caller's buffer */
	uint16_t *pflags;          /* &attr->flags in the caller's buffer */
	/* Of an output: the bytes the model wrote, when fewer than len (the
	 * log shows only those: the rest is whatever the caller's memory
	 * held); 0: all of len. */
	size_t written;
};

struct sti_ioctl {
	uint16_t object, method;
	uint32_t driver_id;
	unsigned nattrs;
	struct sti_attr *attrs;
};

/* The limits a device reports in QUERY_DEVICE and its kernel driver
 * enforces when a CQ, QP or SRQ is made (or resized, or an SRQ's max_wr
 * modified): above them the command fails with EINVAL, as every modelled
 * driver's checks do.  A field left 0 in a driver's table is the generic
 * device's (a ConnectX-4 class one, uverbs.c).  QUERY_DEVICE reports
 * max_qp_wr and max_sge as the smaller of the send and receive sides, as
 * the kernel's ib_device_attr is filled by drivers with both. */
struct sti_limits {
	uint32_t max_send_wr, max_recv_wr;   /* per QP queue */
	uint32_t max_send_sge, max_recv_sge; /* per work request */
	uint32_t max_inline;                 /* inline bytes per send (not reported) */
	uint32_t max_cqe;                    /* CQ entries */
	uint32_t max_srq_wr, max_srq_sge;
	/* The longest MR, and the errno of a driver that refuses a REG_MR
	 * (user memory, by address) longer than it before pinning the memory
	 * (0: the driver has no such check; a longer one fails, if at all,
	 * where the kernel pins it, which the stand-in does not do).
	 * `mr_size`, when set, reports the figure instead (siw: the process's
	 * RLIMIT_MEMLOCK) and says how much the REG_MR may have. */
	uint64_t max_mr_size;
	int mr_size_err;
	uint64_t (*mr_size)(uint64_t *left);
	/* The errno of a create past the device's object count (max_pd,
	 * max_qp, ...; 0: ENOMEM), and for an MR (0: count_err's) */
	int count_err, mr_count_err;
};

struct sti_driver {
	const char *name;        /* the ibdev name's prefix: "mlx5" for mlx5_0 */
	uint32_t driver_id;      /* enum rdma_driver_id */
	uint32_t vendor_id, vendor_part_id, hw_ver;
	uint32_t node_type;      /* 1 CA, 4 RNIC */
	uint8_t link_layer;      /* 1 IB, 2 Ethernet */
	unsigned caps;           /* STI_CAP_*: what the kernel driver implements */
	/* The verbs the kernel driver does not implement (STI_LACKS(op) | ...):
	 * the core answers them EOPNOTSUPP without asking the hook. */
	uint64_t lacks;
	/* Fill r->uout for r->op; 0, or an errno the command fails with. */
	int (*hook)(struct sti_req *r);
	/* A driver method (object or method in the driver's namespace, or a
	 * driver method of a core object): 0, an errno, or -1 "no such
	 * method" (EPROTONOSUPPORT, as the kernel answers). */
	int (*ioctl)(struct sti_ctx *ctx, struct sti_ioctl *io);
	/* mmap on the command fd, after anonymous shared memory was mapped
	 * at `mem` for it: the driver may fill it (queue headers...).  0, or
	 * an errno the mmap fails with. */
	int (*mmap)(struct sti_ctx *ctx, uint64_t offset, size_t len, void *mem);
	/* Bytes of a request's driver data that the provider leaves
	 * uninitialised (reserved fields of a struct on its stack): cleared in
	 * the log's copy, so that two runs compare.  `cmd` is the write command
	 * number, STI_EX(n) for an extended one, or STI_METHOD(obj, method). */
	void (*norm_in)(uint32_t cmd, uint8_t *copy, size_t len);
	/* How an attribute of a driver method (object or method in the
	 * driver's namespace) is read, for the log: one of STI_A_*, 0 when
	 * unknown (then only its length, and its value when inline, show). */
	int (*attr_kind)(uint16_t object, uint16_t method, uint16_t attr);
	/* A context (obj NULL) or object goes away: the driver forgets what it
	 * kept of it.  The core frees ctx->drv and obj->drv itself after. */
	void (*release)(struct sti_ctx *ctx, struct sti_obj *obj);
	/* The device's own limits (NULL: the generic device's). */
	const struct sti_limits *lim;
};

/* Kernel driver functions whose objects the uverbs uAPI only has when the
 * driver implements them (UAPI_DEF_OBJ_NEEDS_FN); without, their methods
 * do not exist (EPROTONOSUPPORT). */
#define STI_CAP_DM 1u
#define STI_LACKS(op) (1ull << STI_OP_##op)

enum { STI_A_IN = 1, STI_A_OUT, STI_A_IDR, STI_A_NEW, STI_A_DEL, STI_A_FD, STI_A_FDNEW };

#define STI_EX(n) (0x80000000u | (n))
#define STI_METHOD(o, m) (0x40000000u | ((uint32_t)(o) << 16) | (m))

/* Whether a norm_in `cmd` is the write command `wcmd` (plain or
 * extended) or the method (obj, meth). */
static inline int sti_cmd_is(uint32_t cmd, uint32_t wcmd, uint16_t obj, uint16_t meth)
{
	return cmd == wcmd || cmd == STI_EX(wcmd) || cmd == STI_METHOD(obj, meth);
}

/* standin.c */
void sti_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Appends `len` bytes as hex with user-space pointers masked to `out`. */
void sti_hex(char *out, size_t outsz, const void *p, size_t len);
void sti_hex_out(char *out, size_t outsz, const void *p, size_t len);
int sti_real_close(int fd);
/* Whether the modelled kernel lacks the ioctl interface (STANDIN_WRITE_ONLY). */
int sti_write_only(void);

/* uverbs.c */
/* Which kernel the model answers as: 0 Linux 6.1 (the default), 1 the
 * latest uAPI (STANDIN_KERNEL=latest). */
int sti_kernel_latest(void);
int sti_uverbs_ioctl(struct sti_ctx *ctx, void *arg);
ssize_t sti_uverbs_write(struct sti_ctx *ctx, const void *buf, size_t len);
void sti_ctx_release(struct sti_ctx *ctx);
void sti_fatal(struct sti_ctx *ctx);
struct sti_obj *sti_get(struct sti_ctx *ctx, uint32_t handle, enum sti_type t);
struct sti_obj *sti_new(struct sti_ctx *ctx, enum sti_type t);
void sti_free(struct sti_ctx *ctx, struct sti_obj *o);
/* A read attribute's bytes: inline data (len <= 8) or the buffer it points to. */
const void *sti_attr_in(const struct sti_attr *a);
/* Copies an output attribute (at most its len) and marks it valid. */
int sti_attr_out(struct sti_attr *a, const void *src, size_t len);
struct sti_attr *sti_attr_find(struct sti_ioctl *io, uint16_t id);

/* The driver's data of a context: `size` zeroed bytes on first use
 * (NULL when out of memory); freed by the core with the context. */
void *sti_drv_ctx(struct sti_ctx *ctx, size_t size);
/* Writes a driver response (at most uout_len bytes of it; nothing when
 * the command has no driver response). */
void sti_put(struct sti_req *r, const void *p, size_t n);
/* The least power of two >= n (1 for 0). */
uint32_t sti_pow2(uint32_t n);

/* The limits of the context's device (the driver's, generic where unset). */
struct sti_limits sti_limits_of(const struct sti_ctx *ctx);

/* drivers */
const struct sti_driver *sti_driver_find(const char *ibdev);

#endif
