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
//! The price: a thread that finds the lock held cannot sleep on it until
//! woken (nobody would wake it: the release looks at no waiter).  It spins
//! a little, then yields its CPU, then naps `NAP` at a time and looks
//! again.  The sides are held for the writing or reading of a few records
//! (a posting thread that waits for ring room holds its producer side the
//! longest, and makes progress meanwhile), so a waiter rarely gets past
//! the spinning.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Spins before a waiter starts yielding its CPU.
const SPINS: u32 = 128;
/// Yields before it starts napping.
const YIELDS: u32 = 64;
/// One nap of a waiter that still finds the lock held.
const NAP: Duration = Duration::from_micros(20);

/// A lock around a `T`, released with a plain store (see the module).
#[derive(Default)]
pub struct TurnLock<T> {
    held: AtomicBool,
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

impl<T> TurnLock<T> {
    pub const fn new(value: T) -> TurnLock<T> {
        TurnLock {
            held: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The lock when it is free now.
    #[inline]
    pub fn try_lock(&self) -> Option<TurnGuard<'_, T>> {
        // (A load first: a held lock's line stays shared while it is
        // looked at, not pulled over by a failing swap.)
        if self.held.load(Ordering::Relaxed) {
            return None;
        }
        self.held
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| TurnGuard { lock: self })
    }

    /// The lock, waiting for it (spinning, then yielding, then napping).
    pub fn lock(&self) -> TurnGuard<'_, T> {
        let mut tries = 0u32;
        loop {
            if let Some(g) = self.try_lock() {
                return g;
            }
            tries = tries.saturating_add(1);
            if tries < SPINS {
                std::hint::spin_loop();
            } else if tries < SPINS + YIELDS {
                std::thread::yield_now();
            } else {
                std::thread::sleep(NAP);
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
        self.lock.held.store(false, Ordering::Release);
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
