//! A context's list of links, read at every poll of the application and
//! every pass of the context's thread, changed when a link is made or dies.
//!
//! The list is an `Arc<Vec<Arc<Link>>>` replaced whole under a mutex.  A
//! reader that took the mutex and cloned the `Arc` at each poll paid four
//! locked instructions for it (the lock, its release, the count's increment
//! and decrement): on two CPUs, a quarter of an empty poll of `ib_send_lat`,
//! and the first of them waits for the stores the thread made just before
//! (the request it posted) to reach the peer's CPU.  Each list gets a number
//! from one counter of the process when it is made, and each thread keeps
//! the list it last walked with its number: `walk` compares the context's
//! number with the thread's (one load) and walks the kept list when they
//! match; else it takes the mutex once and keeps the new list.
//!
//! A list a thread keeps holds its links (their sockets and ring mappings)
//! until that thread walks a list again or ends: a link removed while a
//! thread that polled the context no longer polls stays open that long.
//! `forget` drops the calling thread's list (a context that is closed).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use swrdma_ring::Link;

type List = Arc<Vec<Arc<Link>>>;

/// The numbers of the lists of every context of the process: a number names
/// one list of one context.
static NEXT_NUMBER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The list this thread walked last, with its number (taken out of the
    /// cell while it is walked: a walk inside a walk takes the mutex).
    static KEPT: Cell<Option<(u64, List)>> = const { Cell::new(None) };
}

pub struct LinkList {
    list: Mutex<List>,
    /// The number of `list` (written under the mutex, after it).
    number: AtomicU64,
}

impl LinkList {
    pub fn new() -> LinkList {
        LinkList {
            list: Mutex::new(Arc::new(Vec::new())),
            number: AtomicU64::new(NEXT_NUMBER.fetch_add(1, Ordering::Relaxed)),
        }
    }

    /// The list now (a reference of its own).
    pub fn get(&self) -> List {
        crate::sys::lock(&self.list).clone()
    }

    /// Replaces the list by what `f` makes of it.
    pub fn change(&self, f: impl FnOnce(&[Arc<Link>]) -> Vec<Arc<Link>>) {
        let mut g = crate::sys::lock(&self.list);
        *g = Arc::new(f(&g));
        self.number
            .store(NEXT_NUMBER.fetch_add(1, Ordering::Relaxed), Ordering::Release);
    }

    /// Runs `f` on the list, the thread's kept copy when it is the current
    /// one (see the module's comment).
    pub fn walk<R>(&self, f: impl FnOnce(&[Arc<Link>]) -> R) -> R {
        let now = self.number.load(Ordering::Acquire);
        // (None too while the thread's locals are torn down.)
        let kept = KEPT.try_with(|k| k.take()).ok().flatten();
        let (number, list) = match kept {
            Some((n, l)) if n == now => (n, l),
            _ => {
                // (The number read before the list: a list changed in
                // between is kept under the older number and taken again
                // at the next walk.)
                drop(kept);
                (now, self.get())
            }
        };
        let r = f(&list);
        let _ = KEPT.try_with(|k| k.set(Some((number, list))));
        r
    }

    /// The calling thread drops the list it keeps (the context closes).
    pub fn forget() {
        let _ = KEPT.try_with(|k| drop(k.take()));
    }
}
