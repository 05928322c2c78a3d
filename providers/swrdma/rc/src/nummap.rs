//! Tables keyed by a number this context gave out (a QP's, an SRQ's, a
//! memory key), looked up for every message a context takes in.

use std::collections::HashMap;

/// The hasher of the tables keyed by a QP's or SRQ's number or a memory
/// key: one multiplication (Fibonacci
/// hashing: the odd constant spreads the number's bits into the high bits
/// the map's probe tags use) where the standard map's SipHash took a
/// third of the lookup.  SipHash defends a map against keys chosen to
/// collide; these maps hold only numbers this context gave out (a peer's
/// number for a QP or a key that is not there just misses; nothing a
/// peer sends is inserted).
#[derive(Clone, Copy, Default)]
pub struct NumHash;

pub struct NumHasher(u64);

const NUM_HASH_K: u64 = 0x9e37_79b9_7f4a_7c15;

impl std::hash::Hasher for NumHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(NUM_HASH_K);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ n as u64).wrapping_mul(NUM_HASH_K);
    }
}

impl std::hash::BuildHasher for NumHash {
    type Hasher = NumHasher;
    fn build_hasher(&self) -> NumHasher {
        NumHasher(0)
    }
}

/// A table keyed by a QP's or SRQ's number, or by a memory key.
pub type NumMap<V> = HashMap<u32, V, NumHash>;
