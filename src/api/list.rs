//! The device list and per-device identification.

use std::os::raw::{c_char, c_int};

use crate::abi::{__be64, ibv_device, verbs_device, VSYSFS_READ_NODE_GUID};
use crate::ffi::set_errno;

crate::export! {
    /// A NULL-terminated array of the devices found, or NULL with errno.
    fn __ibv_get_device_list_1_1(num_devices: *mut c_int) -> *mut *mut ibv_device [on_panic: std::ptr::null_mut()] {
        if !num_devices.is_null() {
            // SAFETY: caller's out-parameter.
            unsafe { *num_devices = 0 };
        }
        // Each listed device gets a reference for this list (put by
        // ibv_free_device_list).
        let devs = match crate::device::get_list() {
            Ok(d) => d,
            Err(e) => {
                set_errno(e);
                return std::ptr::null_mut();
            }
        };
        // The array is freed by ibv_free_device_list with free(), so it is
        // allocated with the C allocator.
        // SAFETY: calloc of (n + 1) pointers.
        let l = unsafe { libc::calloc(devs.len() + 1, std::mem::size_of::<*mut ibv_device>()) }
            .cast::<*mut ibv_device>();
        if l.is_null() {
            for &d in &devs {
                crate::device::put(d);
            }
            set_errno(libc::ENOMEM);
            return std::ptr::null_mut();
        }
        for (i, d) in devs.iter().enumerate() {
            // SAFETY: i < len + 1 slots allocated above.
            unsafe { *l.add(i) = *d };
        }
        if !num_devices.is_null() {
            // SAFETY: as above.
            unsafe { *num_devices = devs.len() as c_int };
        }
        l
    }

    fn __ibv_free_device_list_1_1(list: *mut *mut ibv_device) -> () [on_panic: ()] {
        // Upstream walks the list unconditionally; free(NULL) is harmless so a
        // NULL list is accepted.
        if list.is_null() {
            return;
        }
        let mut i = 0;
        // SAFETY: a NULL-terminated array from ibv_get_device_list; each
        // entry carries the reference that list took.
        unsafe {
            while !(*list.add(i)).is_null() {
                crate::device::put(*list.add(i));
                i += 1;
            }
            libc::free(list.cast());
        }
    }

    fn __ibv_get_device_name_1_1(device: *mut ibv_device) -> *const c_char [on_panic: std::ptr::null()] {
        // Upstream reads device->name without a check; a NULL device is
        // refused here instead of crashing.
        if device.is_null() {
            set_errno(libc::EINVAL);
            return std::ptr::null();
        }
        // SAFETY: a non-NULL device from the application's device list, so a
        // live ibv_device whose `name` array lives as long as the device.
        unsafe { (*device).name.as_ptr() }
    }

    /// The node GUID in network byte order, 0 when it cannot be read.
    fn __ibv_get_device_guid_1_1(device: *mut ibv_device) -> __be64 [on_panic: 0] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return 0;
        }
        // Every ibv_device handed out is the first member of a verbs_device
        // (the provider ABI guarantees it).
        let vdev = device.cast::<verbs_device>();
        // SAFETY: `vdev` is the live verbs_device around the application's
        // non-NULL device (see above).
        let sysfs = unsafe { (*vdev).sysfs };
        let _g = crate::device::DEV_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        if !sysfs.is_null() {
            // SAFETY: non-NULL sysfs record owned by the device.
            unsafe {
                if (*sysfs).flags & VSYSFS_READ_NODE_GUID != 0 {
                    return (*sysfs).node_guid.to_be();
                }
            }
        }
        drop(_g);
        let mut attr = [0 as c_char; 24];
        // SAFETY: attr is a local buffer of the given size.
        let n = unsafe {
            crate::api::misc::ibvrs_read_ibdev_sysfs_file(attr.as_mut_ptr(), attr.len(), sysfs, c"node_guid".as_ptr())
        };
        if n < 0 {
            return 0;
        }
        // SAFETY: the reader NUL-terminated attr on success.
        let text = unsafe { std::ffi::CStr::from_ptr(attr.as_ptr()) }.to_bytes();
        if text.iter().all(|b| b.is_ascii_whitespace()) {
            // glibc's sscanf clears errno when the input ends before the
            // first conversion; upstream's callers observe that.
            set_errno(0);
            return 0;
        }
        let Some(guid) = crate::device::parse_guid(text) else { return 0 };
        let _g = crate::device::DEV_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: sysfs is non-NULL here (the reader fails on NULL).
        unsafe {
            (*sysfs).node_guid = guid;
            (*sysfs).flags |= VSYSFS_READ_NODE_GUID;
        }
        guid.to_be()
    }

    fn ibv_get_device_index(device: *mut ibv_device) -> c_int [on_panic: -1] {
        if device.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: as in ibv_get_device_guid.
        let sysfs = unsafe { (*device.cast::<verbs_device>()).sysfs };
        if sysfs.is_null() {
            -1
        } else {
            // SAFETY: non-NULL sysfs record.
            unsafe { (*sysfs).ibdev_idx }
        }
    }
}
