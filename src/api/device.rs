//! Device-level verbs: opening, importing and closing contexts, device and
//! port queries, GIDs and P_Keys, asynchronous events (upstream's
//! `device.c` and the query part of `verbs.c`).
//!
//! Upstream does not check its pointer arguments; where it would crash on a
//! NULL pointer these functions fail cleanly instead, with EINVAL in the
//! function's error convention (errno value, -1 with errno, or NULL with
//! errno).  Everything else — results, errno values, fields filled — is
//! upstream's.

use std::mem::size_of;
use std::os::raw::{c_int, c_uint};
use std::ptr::null_mut;

use crate::abi::*;
use crate::ffi::{errno, set_errno};
use crate::verbs::event::{is_qp_event, is_srq_event};
use crate::verbs::{gid, null_errno};

/// `struct ib_uverbs_async_event_desc`: what the async event fd yields.
#[repr(C)]
#[derive(Default)]
struct ib_uverbs_async_event_desc {
    element: u64,
    event_type: u32,
    reserved: u32,
}

/// The element of an async event as the kernel reports it (`ev.element`
/// is the user handle the library gave the object, i.e. its address, or a
/// port number).
fn event_element(t: ibv_event_type, element: u64) -> ibv_async_event_element {
    match t {
        IBV_EVENT_CQ_ERR => ibv_async_event_element {
            cq: element as usize as *mut ibv_cq,
        },
        t if is_qp_event(t) => ibv_async_event_element {
            qp: element as usize as *mut ibv_qp,
        },
        t if is_srq_event(t) => ibv_async_event_element {
            srq: element as usize as *mut ibv_srq,
        },
        IBV_EVENT_WQ_FATAL => ibv_async_event_element {
            wq: element as usize as *mut ibv_wq,
        },
        _ => ibv_async_event_element {
            port_num: element as c_int,
        },
    }
}

/// Increments an object's completed-event counter under its mutex and wakes
/// a waiter (the destroy paths of providers wait on these).
///
/// # Safety
/// The three pointers are the initialised mutex, condition variable and
/// counter of one live object.
unsafe fn ack_one(mutex: *mut libc::pthread_mutex_t, cond: *mut libc::pthread_cond_t, counter: *mut u32) {
    // SAFETY: the object's own mutex guards its counter (contract).
    unsafe {
        libc::pthread_mutex_lock(mutex);
        *counter = (*counter).wrapping_add(1);
        libc::pthread_cond_signal(cond);
        libc::pthread_mutex_unlock(mutex);
    }
}

crate::export! {
    /// Opens a device: the provider allocates the context.
    fn __ibv_open_device_1_1(device: *mut ibv_device) -> *mut ibv_context [on_panic: null_mut()] {
        if device.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: a device from ibv_get_device_list (first member of a
        // provider's verbs_device).
        unsafe { crate::context::open_device(device, null_mut()) }
    }

    /// Closes a context: the provider frees it.  Always 0, as upstream.
    fn __ibv_close_device_1_1(context: *mut ibv_context) -> c_int [on_panic: -1] {
        if context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: an open context.
        unsafe { crate::context::close_device(context) }
    }

    /// Builds a context around a command fd opened by another process (or
    /// another context) and passed in.
    fn ibv_import_device(cmd_fd: c_int) -> *mut ibv_context [on_panic: null_mut()] {
        // SAFETY: fstat with a valid out-parameter; the list and its
        // devices come from our own ibv_get_device_list.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(cmd_fd, &mut st) != 0 || (st.st_mode & libc::S_IFMT) != libc::S_IFCHR {
                return null_errno(libc::EINVAL);
            }
            let list = crate::api::list::__ibv_get_device_list_1_1(null_mut());
            if list.is_null() {
                return null_errno(libc::ENODEV);
            }
            let mut vdev: *mut verbs_device = null_mut();
            let mut i = 0;
            while !(*list.add(i)).is_null() {
                let d = (*list.add(i)).cast::<verbs_device>();
                // Upstream dereferences sysfs unconditionally; devices
                // without one (not backed by the kernel) cannot match.
                let sysfs = (*d).sysfs;
                if !sysfs.is_null() && (*sysfs).sysfs_cdev == st.st_rdev {
                    vdev = d;
                    break;
                }
                i += 1;
            }
            let ctx = crate::context::import_device(vdev, cmd_fd);
            let e = errno();
            crate::api::list::__ibv_free_device_list_1_1(list);
            set_errno(e);
            ctx
        }
    }

    /// Reads one asynchronous event (blocking unless the fd is
    /// non-blocking); 0, or -1 with errno.
    fn __ibv_get_async_event_1_1(context: *mut ibv_context, event: *mut ibv_async_event) -> c_int [on_panic: -1] {
        if context.is_null() || event.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: an open context and the caller's event; read() fills at
        // most the descriptor's size.
        unsafe {
            let mut ev = ib_uverbs_async_event_desc::default();
            let n = size_of::<ib_uverbs_async_event_desc>();
            if libc::read((*context).async_fd, (&mut ev as *mut ib_uverbs_async_event_desc).cast(), n) != n as isize {
                return -1;
            }
            (*event).event_type = ev.event_type;
            (*event).element = event_element(ev.event_type, ev.element);
            crate::op!(context, async_event)(context, event);
            0
        }
    }

    /// Acknowledges an event: counts it on its CQ/QP/SRQ/WQ.
    fn __ibv_ack_async_event_1_1(event: *mut ibv_async_event) -> () [on_panic: ()] {
        if event.is_null() {
            return;
        }
        // SAFETY: an event returned by ibv_get_async_event; its element is
        // a live object of the type the event implies.
        unsafe {
            let t = (*event).event_type;
            let el = (*event).element;
            if t == IBV_EVENT_CQ_ERR {
                let cq = el.cq;
                if !cq.is_null() {
                    ack_one(&mut (*cq).mutex, &mut (*cq).cond, &mut (*cq).async_events_completed);
                }
            } else if is_qp_event(t) {
                let qp = el.qp;
                if !qp.is_null() {
                    ack_one(&mut (*qp).mutex, &mut (*qp).cond, &mut (*qp).events_completed);
                }
            } else if is_srq_event(t) {
                let srq = el.srq;
                if !srq.is_null() {
                    ack_one(&mut (*srq).mutex, &mut (*srq).cond, &mut (*srq).events_completed);
                }
            } else if t == IBV_EVENT_WQ_FATAL {
                let wq = el.wq;
                if !wq.is_null() {
                    ack_one(&mut (*wq).mutex, &mut (*wq).cond, &mut (*wq).events_completed);
                }
            }
        }
    }

    /// 0 or an errno value.  The provider fills the `ibv_device_attr` that
    /// starts an `ibv_device_attr_ex`, told the size is that of the former.
    fn __ibv_query_device_1_1(context: *mut ibv_context, device_attr: *mut ibv_device_attr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: the caller's context and attribute (NULL is refused).
        unsafe { crate::context::ops::query_device(context, device_attr) }
    }

    /// The IBVERBS_1.1 entry of `ibv_query_port` (binaries that predate the
    /// inline wrapper): fills the old, shorter `ibv_port_attr`.
    fn __ibv_query_port_1_1(context: *mut ibv_context, port_num: u8, port_attr: *mut _compat_ibv_port_attr) -> c_int [on_panic: libc::EIO] {
        // SAFETY: the caller's context and buffer (NULL is refused).
        unsafe { crate::context::ops::compat_query_port(context, port_num, port_attr) }
    }

    /// 0 (an empty GID reads as all zeroes), or -1.
    fn __ibv_query_gid_1_1(context: *mut ibv_context, port_num: u8, index: c_int, gid: *mut ibv_gid) -> c_int [on_panic: -1] {
        if context.is_null() || gid.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: an open context and the caller's GID.
        unsafe {
            let mut entry: ibv_gid_entry = std::mem::zeroed();
            let ret = gid::query_gid_ex(context, port_num as u32, index as u32, &mut entry, 0, size_of::<ibv_gid_entry>(), VERBS_QUERY_GID_ATTR_GID);
            if ret == libc::ENODATA {
                *gid = ibv_gid { raw: [0; 16] };
                return 0;
            }
            if ret != 0 {
                return -1;
            }
            *gid = entry.gid;
            0
        }
    }

    /// 0 or an errno value.
    fn _ibv_query_gid_ex(context: *mut ibv_context, port_num: u32, gid_index: u32, entry: *mut ibv_gid_entry, flags: u32, entry_size: usize) -> c_int [on_panic: libc::EIO] {
        if context.is_null() {
            return libc::EINVAL;
        }
        // The kernel's answer when it cannot write the entry (upstream
        // passes the pointer on; its sysfs fallback would crash).
        if entry.is_null() {
            return libc::EFAULT;
        }
        // SAFETY: an open context; entry holds entry_size bytes.
        unsafe { gid::query_gid_ex(context, port_num, gid_index, entry, flags, entry_size, gid::ALL_ATTRS) }
    }

    /// The number of entries written, or a negative errno value.
    fn _ibv_query_gid_table(context: *mut ibv_context, entries: *mut ibv_gid_entry, max_entries: usize, flags: u32, entry_size: usize) -> isize [on_panic: -(libc::EIO as isize)] {
        if context.is_null() {
            return -(libc::EINVAL as isize);
        }
        // As the kernel answers a table it cannot write (upstream's sysfs
        // fallback, which a device without the kernel's GID methods takes,
        // would crash).
        if entries.is_null() && max_entries > 0 {
            set_errno(libc::EFAULT);
            return -(libc::EFAULT as isize);
        }
        // SAFETY: an open context; entries holds max_entries entries.
        unsafe { gid::query_gid_table(context, entries, max_entries, flags, entry_size) }
    }

    /// The GID's type as sysfs names it; 0 (an empty GID is "IB/RoCE v1"),
    /// or -1.
    fn ibv_query_gid_type(context: *mut ibv_context, port_num: u8, index: c_uint, type_: *mut ibv_gid_type_sysfs) -> c_int [on_panic: -1] {
        if context.is_null() || type_.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: an open context and the caller's out-parameter.
        unsafe {
            let mut entry: ibv_gid_entry = std::mem::zeroed();
            let ret = gid::query_gid_ex(context, port_num as u32, index, &mut entry, 0, size_of::<ibv_gid_entry>(), VERBS_QUERY_GID_ATTR_TYPE);
            if ret == libc::ENODATA {
                *type_ = IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
                return 0;
            }
            if ret != 0 {
                return -1;
            }
            *type_ = gid::sysfs_type_of(entry.gid_type);
            0
        }
    }

    /// The P_Key at `index` in network byte order; 0 or -1.
    fn __ibv_query_pkey_1_1(context: *mut ibv_context, port_num: u8, index: c_int, pkey: *mut u16) -> c_int [on_panic: -1] {
        if context.is_null() || pkey.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: an open context and the caller's out-parameter.
        unsafe {
            match gid::query_pkey(context, port_num, index) {
                Some(v) => {
                    *pkey = v;
                    0
                }
                None => -1,
            }
        }
    }

    /// The index of `pkey` (network byte order) in the port's table, or -1.
    fn ibv_get_pkey_index(context: *mut ibv_context, port_num: u8, pkey: u16) -> c_int [on_panic: -1] {
        let mut i: c_int = 0;
        loop {
            let mut p: u16 = 0;
            // SAFETY: our own export, with a valid out-parameter.
            let ret = unsafe { __ibv_query_pkey_1_1(context, port_num, i, &mut p) };
            if ret < 0 {
                return ret;
            }
            if p == pkey {
                return i;
            }
            i = i.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compat_port_attr_size() {
        assert_eq!(crate::context::ops::COMPAT_PORT_ATTR_SIZE, 48);
        assert_eq!(size_of::<ib_uverbs_async_event_desc>(), 16);
    }

    #[test]
    fn event_elements() {
        // SAFETY: reading the member the event type selects.
        unsafe {
            assert_eq!(event_element(IBV_EVENT_CQ_ERR, 0x1000).cq as usize, 0x1000);
            for t in [
                IBV_EVENT_QP_FATAL,
                IBV_EVENT_COMM_EST,
                IBV_EVENT_QP_LAST_WQE_REACHED,
                IBV_EVENT_PATH_MIG_ERR,
            ] {
                assert_eq!(event_element(t, 0x2000).qp as usize, 0x2000);
            }
            assert_eq!(event_element(IBV_EVENT_SRQ_LIMIT_REACHED, 0x3000).srq as usize, 0x3000);
            assert_eq!(event_element(IBV_EVENT_WQ_FATAL, 0x4000).wq as usize, 0x4000);
            assert_eq!(event_element(IBV_EVENT_PORT_ACTIVE, 2).port_num, 2);
            assert_eq!(event_element(IBV_EVENT_GID_CHANGE, 1).port_num, 1);
        }
        assert!(!is_qp_event(IBV_EVENT_CQ_ERR));
        assert!(!is_srq_event(IBV_EVENT_DEVICE_FATAL));
    }

    #[test]
    fn null_arguments_fail_cleanly() {
        // SAFETY: NULL arguments are refused before any use.
        unsafe {
            assert!(__ibv_open_device_1_1(null_mut()).is_null());
            assert_eq!(errno(), libc::EINVAL);
            assert_eq!(__ibv_close_device_1_1(null_mut()), -1);
            assert_eq!(__ibv_query_device_1_1(null_mut(), null_mut()), libc::EINVAL);
            assert_eq!(__ibv_query_port_1_1(null_mut(), 1, null_mut()), libc::EINVAL);
            assert_eq!(__ibv_query_gid_1_1(null_mut(), 1, 0, null_mut()), -1);
            assert_eq!(__ibv_query_pkey_1_1(null_mut(), 1, 0, null_mut()), -1);
            assert_eq!(ibv_get_pkey_index(null_mut(), 1, 0xffff), -1);
            assert_eq!(
                _ibv_query_gid_table(null_mut(), null_mut(), 0, 0, 32),
                -(libc::EINVAL as isize)
            );
            __ibv_ack_async_event_1_1(null_mut());
            assert_eq!(__ibv_get_async_event_1_1(null_mut(), null_mut()), -1);
        }
    }

    #[test]
    fn import_refuses_non_char_fd() {
        // SAFETY: /dev/null is a character device but not an RDMA one; a
        // pipe is not a character device at all.
        unsafe {
            let mut fds = [0; 2];
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            assert!(ibv_import_device(fds[0]).is_null());
            assert_eq!(errno(), libc::EINVAL);
            libc::close(fds[0]);
            libc::close(fds[1]);
            assert!(ibv_import_device(-1).is_null());
            assert_eq!(errno(), libc::EINVAL);
        }
    }
}
