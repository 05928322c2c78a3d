//! The ioctl command buffer of the provider ABI (`cmd_ioctl.h`) and the
//! kernel's `RDMA_VERBS_IOCTL` header/attribute layouts
//! (`rdma_user_ioctl_cmds.h`).

/// `struct ib_uverbs_attr` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_attr {
    pub attr_id: u16,
    pub len: u16,
    pub flags: u16,
    /// `union { struct { __u8 elem_id; __u8 reserved; } enum_data; __u16 reserved; } attr_data`
    pub attr_data: u16,
    /// `union { __aligned_u64 data; __s64 data_s64; }`
    pub data: u64,
}

/// `struct ib_uverbs_ioctl_hdr` (24 bytes, followed by the attributes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ib_uverbs_ioctl_hdr {
    pub length: u16,
    pub object_id: u16,
    pub method_id: u16,
    pub num_attrs: u16,
    pub reserved1: u64,
    pub driver_id: u32,
    pub reserved2: u32,
    // struct ib_uverbs_attr attrs[];
}

/// `struct ibv_command_buffer`: a header followed (in the same allocation)
/// by the attribute array; buffers can be chained through `next`.
#[repr(C)]
pub struct ibv_command_buffer {
    pub next: *mut ibv_command_buffer,
    pub next_attr: *mut ib_uverbs_attr,
    pub last_attr: *mut ib_uverbs_attr,
    pub uhw_in_idx: u8,
    pub uhw_out_idx: u8,
    pub uhw_in_headroom_dwords: u8,
    pub uhw_out_headroom_dwords: u8,
    /// bit 0: buffer_error, bit 1: fallback_require_ex, bit 2: fallback_ioctl_only
    pub flags: u8,
    pub hdr: ib_uverbs_ioctl_hdr,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};
    #[test]
    fn layout() {
        assert_eq!(size_of::<ib_uverbs_attr>(), 16);
        assert_eq!(size_of::<ib_uverbs_ioctl_hdr>(), 24);
        assert_eq!(offset_of!(ibv_command_buffer, hdr), 32);
        assert_eq!(size_of::<ibv_command_buffer>(), 56);
    }
}
