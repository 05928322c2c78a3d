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

/// `_UHW_NO_INDEX`: `uhw_in_idx` / `uhw_out_idx` when there is no UHW.
pub const _UHW_NO_INDEX: u8 = 0xFF;

/// Bits of [`ibv_command_buffer::flags`] (C bit-fields, allocated from the
/// least significant bit as the SysV ABI lays them out).
pub const CMDB_BUFFER_ERROR: u8 = 1 << 0;
pub const CMDB_FALLBACK_REQUIRE_EX: u8 = 1 << 1;
pub const CMDB_FALLBACK_IOCTL_ONLY: u8 = 1 << 2;

impl ibv_command_buffer {
    /// `cmd->hdr.attrs`: the attribute array that follows the header in
    /// the same allocation.
    ///
    /// # Safety
    /// `this` must point to a command buffer.
    #[inline]
    pub unsafe fn attrs(this: *mut Self) -> *mut ib_uverbs_attr {
        // SAFETY: `this` points to a command buffer (caller's contract), so
        // `hdr` is in bounds, and one `ib_uverbs_ioctl_hdr` past it is the end
        // of the struct: at most one past the allocation, never beyond.
        unsafe {
            core::ptr::addr_of_mut!((*this).hdr)
                .cast::<u8>()
                .add(core::mem::size_of::<ib_uverbs_ioctl_hdr>())
                .cast::<ib_uverbs_attr>()
        }
    }

    /// Number of attributes written into this block (`next_attr - attrs`).
    ///
    /// # Safety
    /// `this` must point to a command buffer whose `next_attr` points into
    /// its own attribute array.
    #[inline]
    pub unsafe fn used(this: *mut Self) -> usize {
        // SAFETY: `this` points to a command buffer whose `next_attr` lies in
        // its own attribute array (caller's contract), so both pointers are
        // in (or one past) the same allocation, as `offset_from` requires.
        unsafe { (*this).next_attr.offset_from(Self::attrs(this)).max(0) as usize }
    }
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
        assert_eq!(offset_of!(ibv_command_buffer, flags), 28);
    }

    /// The bit-field positions of `buffer_error`, `fallback_require_ex` and
    /// `fallback_ioctl_only`, measured from a C compiler.
    #[test]
    fn flag_bits_match_c_bitfields() {
        let exprs: Vec<String> = ["buffer_error", "fallback_require_ex", "fallback_ioctl_only"]
            .iter()
            .map(|f| {
                format!(
                    "({{ struct {{ void *a, *b, *c; unsigned char d[4]; unsigned char buffer_error:1, \
                     fallback_require_ex:1, fallback_ioctl_only:1; }} s; memset(&s, 0, sizeof s); s.{f} = 1; \
                     ((unsigned char *)&s)[28]; }})"
                )
            })
            .collect();
        if let Some(v) = crate::testutil::c_values(&["string.h"], &exprs) {
            assert_eq!(
                v,
                vec![
                    CMDB_BUFFER_ERROR as i64,
                    CMDB_FALLBACK_REQUIRE_EX as i64,
                    CMDB_FALLBACK_IOCTL_ONLY as i64
                ]
            );
        }
    }
}
