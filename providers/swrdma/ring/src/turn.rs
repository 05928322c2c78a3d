//! A lock whose release is a plain store: the producer and consumer sides
//! of a link (`Link::tx_lock`, `Link::rx_lock`).
//!
//! Why not `std::sync::Mutex`: its release is an atomic swap (it must see
//! whether a thread sleeps on the futex), a locked instruction, and on
//! x86 a locked instruction waits until every store before it is visible
//! to the other CPUs.  The stores before the release of a link's side are
//! the record just written into the ring and its position — cache lines
//! the peer process on the other CPU read last — so the swap waits for
//! their transfer: measured with `perf` on `ib_send_lat`, the swap after
//! `post_send`'s record and the one after the responder's ACK were 55 %
//! and 88 % of the time of the functions around them.  A plain store
//! leaves the stores to drain while the thread goes on (x86 keeps them in
//! order; the release store publishes everything before it, as `Release`
//! promises).
//!
//! The price: the release cannot use an atomic read-modify-write to learn
//! whether a thread sleeps on the lock, nor a fence between its store and
//! a load of a count of sleepers (a fence waits for the stores as the
//! swap does).  It stores, then loads the count without a fence, and
//! wakes one sleeper when it sees any.  A waiter spins a little (the
//! sides are held for the writing or reading of a few records), then
//! counts itself and sleeps on the lock's futex, for at most `NAP`: the
//! release's load may pass its own store and miss a waiter that counted
//! itself at that moment (then the waiter looks again when `NAP` is up;
//! in practice the kernel's check of the futex word comes after the store
//! is visible, and the wait ends at once).  Sleeping rather than yielding
//! or napping matters when the CPUs are busy: a thread that yields or
//! naps behind a holder that was switched out hands its CPU to whatever
//! else runs there, for a time slice; a woken sleeper runs as soon as the
//! holder lets go.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Spins before a waiter goes to sleep.
const SPINS: u32 = 128;
/// The longest sleep of a waiter before it looks again.
const NAP: Duration = Duration::from_micros(100);

/// A lock around a `T`, released with a plain store (see the module).
#[derive(Default)]
pub struct TurnLock<T> {
    /// 0 free, 1 held (a futex word).
    held: AtomicU32,
    /// Threads sleeping on `held`, or about to.
    sleepers: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and one guard exists
// at a time (`held`, taken with an acquiring compare-and-swap and given
// back with a releasing store): the lock hands `T` from thread to thread
// as a `Mutex<T>` does, so it needs `T: Send` and nothing more.
unsafe impl<T: Send> Sync for TurnLock<T> {}
// SAFETY: moving the lock moves the `T` it owns.
unsafe impl<T: Send> Send for TurnLock<T> {}

/// The lock held: the only way to the value.
pub struct TurnGuard<'a, T> {
    lock: &'a TurnLock<T>,
}

/// futex(2) on a word of this process (FUTEX_PRIVATE_FLAG).
fn futex(word: &AtomicU32, op: libc::c_int, val: u32, timeout: Option<&libc::timespec>) {
    let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned 32-bit word for the call's
    // duration; FUTEX_WAIT reads it and FUTEX_WAKE only uses its address;
    // `ts` is null or a live timespec.  Errors (EAGAIN: the word changed;
    // EINTR; ETIMEDOUT) all send the caller back to look at the lock.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            ts,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

impl<T> TurnLock<T> {
    pub const fn new(value: T) -> TurnLock<T> {
        TurnLock {
            held: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// The lock when it is free now.
    #[inline]
    pub fn try_lock(&self) -> Option<TurnGuard<'_, T>> {
        // (A load first: a held lock's line stays shared while it is
        // looked at, not pulled over by a failing swap.)
        if self.held.load(Ordering::Relaxed) != 0 {
            return None;
        }
        self.held
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| TurnGuard { lock: self })
    }

    /// The lock, waiting for it (spinning, then sleeping until a release
    /// wakes it or `NAP` is up).
    pub fn lock(&self) -> TurnGuard<'_, T> {
        for _ in 0..SPINS {
            if let Some(g) = self.try_lock() {
                return g;
            }
            std::hint::spin_loop();
        }
        let nap = libc::timespec {
            tv_sec: 0,
            tv_nsec: NAP.as_nanos() as libc::c_long,
        };
        loop {
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            let g = self.try_lock();
            if g.is_none() {
                futex(&self.held, libc::FUTEX_WAIT, 1, Some(&nap));
            }
            self.sleepers.fetch_sub(1, Ordering::Relaxed);
            if let Some(g) = g.or_else(|| self.try_lock()) {
                return g;
            }
        }
    }

    /// The value, through exclusive access to the lock (no locking).
    pub fn get_mut(&mut self) -> &mut T {
        self.value.get_mut()
    }
}

impl<T> Deref for TurnGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the lock's only one (see `Sync`).
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for TurnGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as above, and the guard is borrowed mutably.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for TurnGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        let l = self.lock;
        l.held.store(0, Ordering::Release);
        if l.sleepers.load(Ordering::Relaxed) != 0 {
            futex(&l.held, libc::FUTEX_WAKE, 1, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn one_holder_at_a_time() {
        let l = TurnLock::new(5);
        let g = l.try_lock().expect("free");
        assert!(l.try_lock().is_none());
        assert_eq!(*g, 5);
        drop(g);
        *l.lock() += 1;
        assert_eq!(*l.try_lock().expect("free again"), 6);
    }

    #[test]
    fn threads_take_turns() {
        // Counted without atomics under the lock: a lost update would show
        // as a total below the number of increments.
        const THREADS: usize = 4;
        const EACH: u64 = 200_000;
        let l = Arc::new(TurnLock::new(0u64));
        let hs: Vec<_> = (0..THREADS)
            .map(|_| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        if i % 2 == 0 {
                            *l.lock() += 1;
                        } else {
                            loop {
                                if let Some(mut g) = l.try_lock() {
                                    *g += 1;
                                    break;
                                }
                                std::hint::spin_loop();
                            }
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(*l.lock(), THREADS as u64 * EACH);
    }

    #[test]
    fn a_waiter_gets_it_after_a_long_hold() {
        let l = Arc::new(TurnLock::new(()));
        let g = l.lock();
        let l2 = l.clone();
        let h = std::thread::spawn(move || {
            let _g = l2.lock();
        });
        std::thread::sleep(Duration::from_millis(30));
        drop(g);
        h.join().unwrap();
    }
}
