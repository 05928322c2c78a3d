//! The two kernel commands the context layer itself issues while opening a
//! device: probing for the ioctl "invoke write" method and allocating the
//! async event fd.  Both go through the exported `execute_ioctl` (the
//! kernel command layer, src/api/cmd*), so the context layer depends only on
//! the provider-ABI entry point, not on the command layer's internals.

use std::os::raw::c_int;

use crate::abi::{ib_uverbs_attr, ib_uverbs_ioctl_hdr, ibv_command_buffer, ibv_context};

const UVERBS_OBJECT_DEVICE: u16 = 0;
const UVERBS_METHOD_INVOKE_WRITE: u16 = 0;
const UVERBS_ATTR_WRITE_CMD: u16 = 2;
const UVERBS_OBJECT_ASYNC_EVENT: u16 = 16;
const UVERBS_METHOD_ASYNC_EVENT_ALLOC: u16 = 0;
const UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE: u16 = 0;
const IB_USER_VERBS_CMD_QUERY_DEVICE: u64 = 1;
const UVERBS_ATTR_F_MANDATORY: u16 = 1;

extern "C" {
    fn execute_ioctl(context: *mut ibv_context, cmd: *mut ibv_command_buffer) -> c_int;
}

/// A command buffer with room for one attribute, laid out as upstream's
/// `DECLARE_COMMAND_BUFFER(…, 1)`: the header's flexible attribute array
/// continues into `attrs`.
#[repr(C)]
struct OneAttrCmd {
    cmd: ibv_command_buffer,
    attrs: [ib_uverbs_attr; 1],
}

impl OneAttrCmd {
    fn new(object_id: u16, method_id: u16, attr: ib_uverbs_attr) -> Box<Self> {
        let mut b = Box::new(OneAttrCmd {
            cmd: ibv_command_buffer {
                next: std::ptr::null_mut(),
                next_attr: std::ptr::null_mut(),
                last_attr: std::ptr::null_mut(),
                uhw_in_idx: 0xff,
                uhw_out_idx: 0xff,
                uhw_in_headroom_dwords: 0,
                uhw_out_headroom_dwords: 0,
                flags: 0,
                hdr: ib_uverbs_ioctl_hdr { object_id, method_id, ..Default::default() },
            },
            attrs: [attr],
        });
        let first = b.attrs.as_mut_ptr();
        b.cmd.next_attr = first.wrapping_add(1);
        b.cmd.last_attr = first.wrapping_add(1);
        b
    }
}

/// Upstream's `has_ioctl_write`: the kernel takes write() commands through
/// ioctl unless it answers EPROTONOSUPPORT or ENOTTY to a deliberately
/// short request.
///
/// # Safety
/// `ctx` is a context being initialised with a valid `cmd_fd`.
pub unsafe fn has_ioctl_write(ctx: *mut ibv_context) -> bool {
    if (*ctx).cmd_fd < 0 {
        return false;
    }
    let attr = ib_uverbs_attr {
        attr_id: UVERBS_ATTR_WRITE_CMD,
        len: 8,
        flags: UVERBS_ATTR_F_MANDATORY,
        attr_data: 0,
        data: IB_USER_VERBS_CMD_QUERY_DEVICE,
    };
    let mut b = OneAttrCmd::new(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE, attr);
    let rc = execute_ioctl(ctx, &mut b.cmd);
    !(rc == libc::EPROTONOSUPPORT || rc == libc::ENOTTY)
}

/// Upstream's `ibv_cmd_alloc_async_fd`: 0 or an errno value.
///
/// # Safety
/// `ctx` is an initialised context.
pub unsafe fn alloc_async_fd(ctx: *mut ibv_context) -> c_int {
    let attr = ib_uverbs_attr {
        attr_id: UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE,
        len: 0,
        flags: UVERBS_ATTR_F_MANDATORY,
        attr_data: 0,
        data: 0,
    };
    let mut b = OneAttrCmd::new(UVERBS_OBJECT_ASYNC_EVENT, UVERBS_METHOD_ASYNC_EVENT_ALLOC, attr);
    let rc = execute_ioctl(ctx, &mut b.cmd);
    if rc != 0 {
        return rc;
    }
    (*ctx).async_fd = b.attrs[0].data as c_int;
    0
}
