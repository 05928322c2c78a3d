//! Completion channels and completion queues (upstream's `verbs.c`).
//!
//! A completion channel is the library's own small object around the fd the
//! kernel returns for `CREATE_COMP_CHANNEL`; CQs count the channels that
//! point at them (`refcnt`, under the context mutex) so that a channel in
//! use cannot be destroyed.
//!
//! Where upstream would crash on a NULL object pointer these functions fail
//! cleanly with EINVAL in the function's error convention.

use std::os::raw::{c_int, c_uint, c_void};
use std::ptr::null_mut;

use crate::abi::*;
use crate::ffi::set_errno;
use crate::verbs::null_errno;

/// `struct ib_uverbs_comp_event_desc`: what a channel fd yields.
#[repr(C)]
#[derive(Default)]
struct CompEventDesc {
    cq_handle: u64,
}

crate::export! {
    fn ibv_create_comp_channel(context: *mut ibv_context) -> *mut ibv_comp_channel [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: an open context; the command buffers are locals that
        // outlive the command.  The channel is freed by
        // ibv_destroy_comp_channel with free().
        unsafe {
            let channel = libc::malloc(std::mem::size_of::<ibv_comp_channel>()).cast::<ibv_comp_channel>();
            if channel.is_null() {
                return null_errno(libc::ENOMEM);
            }
            if (*context).cmd_fd == -1 {
                // A software device (no kernel): the channel is a pipe whose
                // read end the application sees; see crate::soft.
                let fd = crate::soft::create_channel();
                if fd < 0 {
                    libc::free(channel.cast());
                    return null_mut();
                }
                channel.write(ibv_comp_channel { context, fd, refcnt: 0 });
                return channel;
            }
            let fd = match crate::kernel::verbs::device::create_comp_channel(context) {
                Ok(fd) => fd,
                Err(e) => {
                    libc::free(channel.cast());
                    set_errno(e);
                    return null_mut();
                }
            };
            channel.write(ibv_comp_channel { context, fd, refcnt: 0 });
            channel
        }
    }

    /// 0, EBUSY while CQs still use the channel, or EINVAL.
    fn ibv_destroy_comp_channel(channel: *mut ibv_comp_channel) -> c_int [on_panic: libc::EIO] {
        if channel.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a channel from ibv_create_comp_channel of an open context.
        unsafe {
            let context = (*channel).context;
            let m = std::ptr::addr_of_mut!((*context).mutex);
            libc::pthread_mutex_lock(m);
            let ret = if (*channel).refcnt != 0 {
                libc::EBUSY
            } else {
                crate::soft::destroy_channel((*channel).fd);
                libc::close((*channel).fd);
                libc::free(channel.cast());
                0
            };
            libc::pthread_mutex_unlock(m);
            ret
        }
    }

    fn __ibv_create_cq_1_1(context: *mut ibv_context, cqe: c_int, cq_context: *mut c_void, channel: *mut ibv_comp_channel, comp_vector: c_int) -> *mut ibv_cq [on_panic: null_mut()] {
        if context.is_null() {
            return null_errno(libc::EINVAL);
        }
        // SAFETY: an open context; channel is NULL or one of its channels.
        unsafe {
            let f = crate::op!(context, create_cq);
            let cq = f(context, cqe, channel, comp_vector);
            if !cq.is_null() {
                crate::context::ops::init_cq(cq, context, channel, cq_context);
            }
            cq
        }
    }

    /// 0 or an errno value.
    fn __ibv_resize_cq_1_1(cq: *mut ibv_cq, cqe: c_int) -> c_int [on_panic: libc::EIO] {
        if cq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a CQ of an open context.
        unsafe {
            let f = crate::op!((*cq).context, resize_cq);
            f(cq, cqe)
        }
    }

    /// 0 or an errno value; the CQ's channel is released on success.
    fn __ibv_destroy_cq_1_1(cq: *mut ibv_cq) -> c_int [on_panic: libc::EIO] {
        if cq.is_null() {
            return libc::EINVAL;
        }
        // SAFETY: a CQ of an open context; its channel (read before the
        // provider frees the CQ) outlives it.
        unsafe {
            let channel = (*cq).channel;
            let f = crate::op!((*cq).context, destroy_cq);
            let ret = f(cq);
            if !channel.is_null() && ret == 0 {
                let m = std::ptr::addr_of_mut!((*(*channel).context).mutex);
                libc::pthread_mutex_lock(m);
                (*channel).refcnt -= 1;
                libc::pthread_mutex_unlock(m);
            }
            ret
        }
    }

    /// Waits for the next completion event of a channel; 0 with the CQ and
    /// its context, or -1 with errno.
    fn __ibv_get_cq_event_1_1(channel: *mut ibv_comp_channel, cq: *mut *mut ibv_cq, cq_context: *mut *mut c_void) -> c_int [on_panic: -1] {
        if channel.is_null() || cq.is_null() || cq_context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: a channel of an open context; the kernel reports the CQ's
        // user handle, which is the CQ's address.
        unsafe {
            let mut ev = CompEventDesc::default();
            let n = std::mem::size_of::<CompEventDesc>();
            if libc::read((*channel).fd, (&mut ev as *mut CompEventDesc).cast(), n) != n as isize {
                return -1;
            }
            let c = ev.cq_handle as usize as *mut ibv_cq;
            *cq = c;
            *cq_context = (*c).cq_context;
            crate::op!((*c).context, cq_event)(c);
            0
        }
    }

    /// Acknowledges `nevents` completion events of a CQ.
    fn __ibv_ack_cq_events_1_1(cq: *mut ibv_cq, nevents: c_uint) -> () [on_panic: ()] {
        if cq.is_null() {
            return;
        }
        // SAFETY: a CQ initialised by the library (mutex and cond set up).
        unsafe {
            libc::pthread_mutex_lock(&mut (*cq).mutex);
            (*cq).comp_events_completed = (*cq).comp_events_completed.wrapping_add(nevents);
            libc::pthread_cond_signal(&mut (*cq).cond);
            libc::pthread_mutex_unlock(&mut (*cq).mutex);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_layouts() {
        assert_eq!(
            std::mem::size_of::<crate::kernel::pabi34::ibv_create_comp_channel>(),
            16
        );
        assert_eq!(
            std::mem::size_of::<crate::kernel::uapi::ib_uverbs_create_comp_channel_resp>(),
            4
        );
        assert_eq!(std::mem::size_of::<CompEventDesc>(), 8);
    }

    #[test]
    fn null_arguments_fail_cleanly() {
        // SAFETY: NULL arguments are refused before any use.
        unsafe {
            assert!(ibv_create_comp_channel(null_mut()).is_null());
            assert_eq!(crate::ffi::errno(), libc::EINVAL);
            assert_eq!(ibv_destroy_comp_channel(null_mut()), libc::EINVAL);
            assert!(__ibv_create_cq_1_1(null_mut(), 1, null_mut(), null_mut(), 0).is_null());
            assert_eq!(__ibv_resize_cq_1_1(null_mut(), 1), libc::EINVAL);
            assert_eq!(__ibv_destroy_cq_1_1(null_mut()), libc::EINVAL);
            assert_eq!(__ibv_get_cq_event_1_1(null_mut(), null_mut(), null_mut()), -1);
            __ibv_ack_cq_events_1_1(null_mut(), 1);
        }
    }

    #[test]
    fn channel_refcount_and_events() {
        // A channel over a pipe, with a context that only has a mutex: the
        // destroy path takes the context mutex and honours the refcount.
        // SAFETY: all objects are locals or malloc'ed like the library does.
        unsafe {
            let ctx: *mut ibv_context = Box::into_raw(Box::new(std::mem::zeroed()));
            libc::pthread_mutex_init(&mut (*ctx).mutex, std::ptr::null());
            let mut fds = [0; 2];
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let ch = libc::malloc(std::mem::size_of::<ibv_comp_channel>()).cast::<ibv_comp_channel>();
            ch.write(ibv_comp_channel {
                context: ctx,
                fd: fds[0],
                refcnt: 1,
            });
            assert_eq!(ibv_destroy_comp_channel(ch), libc::EBUSY);
            // A short read from the channel fd is a failure.
            libc::write(fds[1], [1u8; 4].as_ptr().cast(), 4);
            libc::close(fds[1]);
            let mut cq = null_mut();
            let mut cqc = null_mut();
            assert_eq!(__ibv_get_cq_event_1_1(ch, &mut cq, &mut cqc), -1);
            (*ch).refcnt = 0;
            assert_eq!(ibv_destroy_comp_channel(ch), 0);
            drop(Box::from_raw(ctx));
        }
    }
}
