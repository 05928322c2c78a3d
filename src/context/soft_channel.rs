//! Completion channels of software devices (contexts without a kernel
//! command fd): a pipe.  The application reads `struct
//! ib_uverbs_comp_event_desc` records from the read end exactly as from a
//! kernel channel; the provider obtains a write end of the same pipe by
//! opening `/proc/self/fd/<channel fd>` for writing.  The library keeps its
//! own write end open for the channel's lifetime so that a reader blocks
//! (rather than seeing end-of-file) while no provider writer is open.

use std::collections::HashMap;
use std::os::raw::c_int;
use std::sync::Mutex;

static WRITERS: Mutex<Option<HashMap<c_int, c_int>>> = Mutex::new(None);

/// Creates the pipe; returns the read end, or -1 with errno.
pub fn create() -> c_int {
    let mut fds = [0 as c_int; 2];
    // SAFETY: fds is a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return -1;
    }
    WRITERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(fds[0], fds[1]);
    fds[0]
}

/// Closes the library's write end of a software channel (no-op for kernel
/// channels).
pub fn destroy(read_fd: c_int) {
    let w = WRITERS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_mut()
        .and_then(|m| m.remove(&read_fd));
    if let Some(w) = w {
        // SAFETY: our own descriptor.
        unsafe { libc::close(w) };
    }
}
