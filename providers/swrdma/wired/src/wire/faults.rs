//! Fault injection around the wire link (tests and debugging), kept out
//! of the protocol code: the engine only ever sees the packets that get
//! through.

use crate::now_ns;
use std::sync::atomic::{AtomicU64, Ordering};

/// `SWRDMA_WIRE_DROP=<per million>`: received packets dropped at random
/// (a test knob: loss without `tc netem`, which needs root).
pub fn drop_received() -> bool {
    static P: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let p = *P.get_or_init(|| {
        std::env::var("SWRDMA_WIRE_DROP")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            .min(1_000_000)
    });
    if p == 0 {
        return false;
    }
    static SEED: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let mut x = SEED.load(Ordering::Relaxed) ^ now_ns();
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    SEED.store(x, Ordering::Relaxed);
    x % 1_000_000 < p
}
