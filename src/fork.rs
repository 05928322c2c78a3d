//! Fork support: `ibv_fork_init` and the reference-counted `MADV_DONTFORK`
//! ranges that keep registered memory out of forked children.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// `enum ibv_fork_status`
pub const IBV_FORK_DISABLED: u32 = 0;
pub const IBV_FORK_ENABLED: u32 = 1;
pub const IBV_FORK_UNNEEDED: u32 = 2;

struct State {
    /// `ibv_fork_init` succeeded: ranges are tracked and madvise'd.
    enabled: bool,
    /// A range call happened before initialisation: too late to enable.
    too_late: bool,
    /// `RDMAV_HUGEPAGES_SAFE`: align ranges to the backing page size.
    huge_pages: bool,
    page_size: usize,
    /// Disjoint ranges [start, end) → reference count (always > 0).
    ranges: BTreeMap<usize, (usize, u32)>,
}

static STATE: Mutex<State> = Mutex::new(State {
    enabled: false,
    too_late: false,
    huge_pages: false,
    page_size: 4096,
    ranges: BTreeMap::new(),
});

fn lock() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

fn sys_page_size() -> Result<usize, i32> {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p <= 0 {
        Err(crate::ffi::errno())
    } else {
        Ok(p as usize)
    }
}

/// Page size backing `addr`, from /proc/self/smaps (`KernelPageSize`), used
/// with `RDMAV_HUGEPAGES_SAFE`; falls back to the base page size.
fn backing_page_size(addr: usize, base: usize) -> usize {
    let Ok(s) = std::fs::read_to_string("/proc/self/smaps") else {
        return base;
    };
    let mut inside = false;
    for line in s.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("KernelPageSize:") {
                let kb: usize = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
                return if kb == 0 { base } else { kb * 1024 };
            }
        }
    }
    base
}

/// `ibv_fork_init`: 0 or an errno value.
pub fn init() -> i32 {
    let mut st = lock();
    if crate::env::get("RDMAV_HUGEPAGES_SAFE").is_some() {
        st.huge_pages = true;
    }
    if st.enabled {
        return 0;
    }
    if st.too_late {
        return libc::EINVAL;
    }
    let page = match sys_page_size() {
        Ok(p) => p,
        Err(e) => return e,
    };
    // Probe that the kernel supports MADV_DONTFORK/MADV_DOFORK on a page of
    // our own.
    let mut p: *mut libc::c_void = std::ptr::null_mut();
    // SAFETY: posix_memalign writes a fresh allocation into p.
    if unsafe { libc::posix_memalign(&mut p, page, page) } != 0 {
        return libc::ENOMEM;
    }
    let (start, size) = if st.huge_pages {
        let sz = backing_page_size(p as usize, page);
        ((p as usize) & !(sz - 1), sz)
    } else {
        (p as usize, page)
    };
    // SAFETY: the range is (or contains) our own allocation; the advice only
    // changes fork inheritance and is reverted at once.
    let bad = unsafe {
        libc::madvise(start as *mut _, size, libc::MADV_DONTFORK) != 0
            || libc::madvise(start as *mut _, size, libc::MADV_DOFORK) != 0
    };
    // SAFETY: p came from posix_memalign.
    unsafe { libc::free(p) };
    if bad {
        return libc::ENOSYS;
    }
    st.page_size = page;
    st.enabled = true;
    0
}

/// `ibv_is_fork_initialized`.
pub fn status() -> u32 {
    if crate::kernel::netlink::copy_on_fork() {
        return IBV_FORK_UNNEEDED;
    }
    if lock().enabled {
        IBV_FORK_ENABLED
    } else {
        IBV_FORK_DISABLED
    }
}

/// Whether fork protection is active (ranges are being tracked).
pub fn enabled() -> bool {
    lock().enabled
}

fn madvise(start: usize, end: usize, advice: i32) -> bool {
    // SAFETY: the advice only changes fork inheritance of the caller's pages.
    unsafe { libc::madvise(start as *mut _, end - start, advice) == 0 }
}

/// Splits the interval containing `at` (if any) so that `at` is a boundary.
fn split_at(r: &mut BTreeMap<usize, (usize, u32)>, at: usize) {
    let hit = r.range(..at).next_back().map(|(&s, &(e, c))| (s, e, c));
    if let Some((s, e, c)) = hit {
        if s < at && at < e {
            r.insert(s, (at, c));
            r.insert(at, (e, c));
        }
    }
}

/// `ibv_dontfork_range` (`dont == true`) / `ibv_dofork_range`: 0 or -1.
pub fn range(base: usize, size: usize, dont: bool) -> i32 {
    let mut st = lock();
    if !st.enabled {
        st.too_late = true;
        return 0;
    }
    if size == 0 {
        return 0;
    }
    let align = if st.huge_pages {
        backing_page_size(base, st.page_size)
    } else {
        st.page_size
    };
    let start = base & !(align - 1);
    let Some(end) = base.checked_add(size).and_then(|e| e.checked_add(align - 1)) else {
        crate::ffi::set_errno(libc::EINVAL);
        return -1;
    };
    let end = end & !(align - 1);
    let r = &mut st.ranges;
    split_at(r, start);
    split_at(r, end);
    // Walk [start, end): existing pieces change their count, gaps are new.
    let mut pos = start;
    let pieces: Vec<(usize, usize, u32)> = r.range(start..end).map(|(&s, &(e, c))| (s, e, c)).collect();
    let mut changed: Vec<(usize, usize, Option<u32>)> = Vec::new(); // for rollback
    let mut ok = true;
    let mut todo: Vec<(usize, usize, u32)> = Vec::new();
    for (s, e, c) in pieces {
        if pos < s {
            todo.push((pos, s, 0));
        }
        todo.push((s, e, c));
        pos = e;
    }
    if pos < end {
        todo.push((pos, end, 0));
    }
    for (s, e, c) in todo {
        let newc = if dont { c + 1 } else { c.saturating_sub(1) };
        if c == newc {
            continue;
        }
        let need = if dont { c == 0 } else { newc == 0 };
        if need && !madvise(s, e, if dont { libc::MADV_DONTFORK } else { libc::MADV_DOFORK }) {
            ok = false;
            break;
        }
        changed.push((s, e, if c == 0 { None } else { Some(c) }));
        if newc == 0 {
            r.remove(&s);
        } else {
            r.insert(s, (e, newc));
        }
    }
    if !ok {
        // Roll back what was already changed, like upstream.
        for (s, e, old) in changed.into_iter().rev() {
            match old {
                None => {
                    r.remove(&s);
                    madvise(s, e, if dont { libc::MADV_DOFORK } else { libc::MADV_DONTFORK });
                }
                Some(c) => {
                    if !r.contains_key(&s) {
                        madvise(s, e, if dont { libc::MADV_DOFORK } else { libc::MADV_DONTFORK });
                    }
                    r.insert(s, (e, c));
                }
            }
        }
        return -1;
    }
    // Merge neighbours with equal counts to keep the map small.
    let keys: Vec<usize> = r.keys().copied().collect();
    let mut prev: Option<usize> = None;
    for k in keys {
        if let Some(p) = prev {
            let (pe, pc) = r[&p];
            let (e, c) = r[&k];
            if pe == k && pc == c {
                r.insert(p, (e, c));
                r.remove(&k);
                continue;
            }
        }
        prev = Some(k);
    }
    0
}
