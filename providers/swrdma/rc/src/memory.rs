//! How the engine reaches memory: process addresses that passed the key
//! checks, copied through [`Memory`] (the provider's fault-safe copies: a
//! range the owner no longer maps fails the copy, it never faults).

use ibverbs_abi::ibv_sge;

/// An 8-byte atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Atomic {
    /// Compare (first) and swap (second).
    Cas(u64, u64),
    Add(u64),
    /// ATOMIC_WRITE: the 8 bytes stored at once.
    Store(u64),
}

pub trait Memory {
    /// Copies `src` to [dst, dst + len); false when not mapped writable.
    fn write(&self, dst: u64, src: &[u8]) -> bool;
    /// Copies [src, src + len) into `dst`; false when not mapped readable.
    fn read(&self, src: u64, dst: &mut [u8]) -> bool;
    /// The atomic on the 8 bytes at `addr` (8-aligned): the value before,
    /// or None when not mapped writable.
    fn atomic(&self, addr: u64, op: Atomic) -> Option<u64>;
}

/// Walks the list from byte `off`: `f(addr, from, n)` for each piece of
/// `len` bytes (from: the offset in the data); false when the list is too
/// short or `f` failed.
fn walk(sges: &[ibv_sge], mut off: u64, len: usize, mut f: impl FnMut(u64, usize, usize) -> bool) -> bool {
    let mut done = 0usize;
    for s in sges {
        if done == len {
            break;
        }
        let sl = s.length as u64;
        if off >= sl {
            off -= sl;
            continue;
        }
        let n = ((sl - off) as usize).min(len - done);
        if !f(s.addr + off, done, n) {
            return false;
        }
        done += n;
        off = 0;
    }
    done == len
}

/// Copies `src` into the scatter list from byte `off`; false when the list
/// is too short or a destination is not mapped writable.
pub fn scatter(mem: &dyn Memory, sges: &[ibv_sge], off: u64, src: &[u8]) -> bool {
    walk(sges, off, src.len(), |a, from, n| mem.write(a, &src[from..from + n]))
}

/// Copies from the gather list, from byte `off`, into `dst`; false when the
/// list is too short or a source is not mapped readable.
pub fn gather(mem: &dyn Memory, sges: &[ibv_sge], off: u64, dst: &mut [u8]) -> bool {
    let len = dst.len();
    walk(sges, off, len, |a, from, n| mem.read(a, &mut dst[from..from + n]))
}
