//! The libc entry points this library defines ahead of libc when it is in
//! `LD_PRELOAD`: `open`/`open64` of `/dev/infiniband/rdma_cm`, and
//! `write`, `close`, `fstat`/`fstat64` on the descriptors those opens
//! returned.  Every other call goes straight to the next definition
//! (`dlsym(RTLD_NEXT)`); deciding costs one atomic load of a bit.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use crate::ucma;

/// The path librdmacm opens (`RDMA_CDEV_DIR "/rdma_cm"`).
pub const RDMA_CM_PATH: &[u8] = b"/dev/infiniband/rdma_cm";

/// One bit per descriptor below 65536: is it a channel of ours.
static CHANNELS: [AtomicU64; 1024] = [const { AtomicU64::new(0) }; 1024];
/// The same for the kernel's channels passed through and recorded
/// (`SWRDMA_UCMA_KERNEL=1`).
static KERNEL: [AtomicU64; 1024] = [const { AtomicU64::new(0) }; 1024];

fn bit(set: &[AtomicU64; 1024], fd: c_int) -> bool {
    (0..65536).contains(&fd) && set[fd as usize / 64].load(Ordering::Acquire) & (1 << (fd % 64)) != 0
}

fn is_channel(fd: c_int) -> bool {
    bit(&CHANNELS, fd)
}

fn set_bit(set: &[AtomicU64; 1024], fd: c_int, on: bool) {
    if (0..65536).contains(&fd) {
        let bit = 1u64 << (fd % 64);
        if on {
            set[fd as usize / 64].fetch_or(bit, Ordering::AcqRel);
        } else {
            set[fd as usize / 64].fetch_and(!bit, Ordering::AcqRel);
        }
    }
}

fn mark(fd: c_int, on: bool) {
    set_bit(&CHANNELS, fd, on);
}

/// `SWRDMA_UCMA_KERNEL=1`: the real device, recorded, not ours.
fn kernel_mode() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SWRDMA_UCMA_KERNEL").is_some_and(|v| v == "1"))
}

fn set_errno(e: c_int) {
    // SAFETY: the calling thread's errno.
    unsafe { *libc::__errno_location() = e };
}

/// The next definition of `name` after ours, looked up once.
fn next(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    // SAFETY: dlsym with a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    slot.store(p, Ordering::Release);
    p
}

static NEXT_OPEN: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static NEXT_OPEN64: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static NEXT_WRITE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static NEXT_CLOSE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static NEXT_FSTAT: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static NEXT_FSTAT64: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, libc::mode_t) -> c_int;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, usize) -> isize;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type FstatFn = unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int;

/// Is `path` the rdma_cm device.
///
/// # Safety
/// `path` is NULL or a C string.
unsafe fn is_rdma_cm(path: *const c_char) -> bool {
    // SAFETY: per the contract.
    !path.is_null() && unsafe { CStr::from_ptr(path) }.to_bytes() == RDMA_CM_PATH
}

/// A new channel: an eventfd, readable while events are queued.
fn open_channel(flags: c_int) -> c_int {
    let mut ef = 0;
    if flags & libc::O_CLOEXEC != 0 {
        ef |= libc::EFD_CLOEXEC;
    }
    if flags & libc::O_NONBLOCK != 0 {
        ef |= libc::EFD_NONBLOCK;
    }
    // SAFETY: eventfd with valid flags.
    let fd = unsafe { libc::eventfd(0, ef) };
    if fd < 0 {
        return -1;
    }
    ucma::model().open_channel(fd);
    mark(fd, true);
    crate::progress::start();
    fd
}

/// An open of `path`: a channel of ours for the rdma_cm device, else the
/// next definition of `name` (libc's `open` or `open64`), the kernel's
/// rdma_cm recorded in pass-through mode.
///
/// # Safety
/// As `open(2)`.
unsafe fn open_as(
    slot: &AtomicPtr<c_void>,
    name: &CStr,
    path: *const c_char,
    flags: c_int,
    mode: libc::mode_t,
) -> c_int {
    // SAFETY: path is the caller's C string (or NULL).
    let cm = unsafe { is_rdma_cm(path) };
    if cm && !kernel_mode() {
        return open_channel(flags);
    }
    let f = next(slot, name);
    // SAFETY: libc's function of that name, with the caller's arguments.
    let fd = unsafe { std::mem::transmute::<*mut c_void, OpenFn>(f)(path, flags, mode) };
    if cm && fd >= 0 {
        set_bit(&KERNEL, fd, true);
    }
    fd
}

/// `open(2)`.  The mode argument is read as libc's variadic third argument
/// is passed on Linux (in the register a third argument takes).
///
/// # Safety
/// As `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: the caller's arguments, as open(2) takes them.
    unsafe { open_as(&NEXT_OPEN, c"open", path, flags, mode) }
}

/// `open64(2)`: as [`open`].
///
/// # Safety
/// As `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: the caller's arguments, as open64(2) takes them.
    unsafe { open_as(&NEXT_OPEN64, c"open64", path, flags, mode) }
}

/// `write(2)`: a channel's command, or libc's write.
///
/// # Safety
/// As `write(2)`.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, count: usize) -> isize {
    if is_channel(fd) {
        return match ucma::command(fd, buf.cast(), count) {
            Ok(n) => n as isize,
            Err(e) => {
                set_errno(e);
                -1
            }
        };
    }
    let f = next(&NEXT_WRITE, c"write");
    if bit(&KERNEL, fd) {
        // SAFETY: libc's write, with the caller's arguments.
        let real = || unsafe { std::mem::transmute::<*mut c_void, WriteFn>(f)(fd, buf, count) };
        return ucma::kernel_command(fd, buf.cast(), count, &real);
    }
    // SAFETY: libc's write, with the caller's arguments.
    unsafe { std::mem::transmute::<*mut c_void, WriteFn>(f)(fd, buf, count) }
}

/// `close(2)`: a channel's ids go with it (as the kernel's release of the
/// file destroys them).
///
/// # Safety
/// As `close(2)`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if is_channel(fd) {
        crate::waiters::before_close(fd);
        mark(fd, false);
        ucma::model().close_channel(fd);
    }
    set_bit(&KERNEL, fd, false);
    let f = next(&NEXT_CLOSE, c"close");
    // SAFETY: libc's close.
    unsafe { std::mem::transmute::<*mut c_void, CloseFn>(f)(fd) }
}

/// What `fstat` says of a channel: a character device, as the real node.
fn as_chardev(st: &mut libc::stat) {
    st.st_mode = libc::S_IFCHR | 0o666;
    let mut real: libc::stat = unsafe_zeroed_stat();
    let p = c"/dev/infiniband/rdma_cm";
    // SAFETY: stat(2) of a constant path into a local struct.
    st.st_rdev = if unsafe { libc::stat(p.as_ptr(), &mut real) } == 0 && real.st_mode & libc::S_IFMT == libc::S_IFCHR {
        real.st_rdev
    } else {
        libc::makedev(10, 58)
    };
}

fn unsafe_zeroed_stat() -> libc::stat {
    // SAFETY: struct stat is plain integers.
    unsafe { std::mem::zeroed() }
}

/// `fstat(2)`.
///
/// # Safety
/// As `fstat(2)`.
#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, st: *mut libc::stat) -> c_int {
    let f = next(&NEXT_FSTAT, c"fstat");
    // SAFETY: libc's fstat, with the caller's arguments.
    let r = unsafe { std::mem::transmute::<*mut c_void, FstatFn>(f)(fd, st) };
    if r == 0 && is_channel(fd) && !st.is_null() {
        // SAFETY: libc filled the caller's struct; we adjust two fields.
        as_chardev(unsafe { &mut *st });
    }
    r
}

/// `fstat64(2)`: as [`fstat`] (the same struct on 64-bit Linux).
///
/// # Safety
/// As `fstat(2)`.
#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, st: *mut libc::stat) -> c_int {
    let f = next(&NEXT_FSTAT64, c"fstat64");
    // SAFETY: libc's fstat64, with the caller's arguments.
    let r = unsafe { std::mem::transmute::<*mut c_void, FstatFn>(f)(fd, st) };
    if r == 0 && is_channel(fd) && !st.is_null() {
        // SAFETY: as in fstat.
        as_chardev(unsafe { &mut *st });
    }
    r
}
