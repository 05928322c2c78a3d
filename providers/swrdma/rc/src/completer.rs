//! The requester's side of responses: READ data and atomic results placed
//! in the work request's local list, and what a NAK completes it with.

use crate::memory::{scatter, Memory};
use ibverbs_abi::*;

pub use crate::fault::nak_status;

/// A READ response's `data`, for byte `off` of a READ of `len` bytes, into
/// its local list: Err(`LOC_LEN_ERR`) when it lies outside the READ,
/// Err(`LOC_PROT_ERR`) when the memory is no longer mapped writable.
pub fn place_read(mem: &dyn Memory, sges: &[ibv_sge], len: u64, off: u64, data: &[u8]) -> Result<(), u32> {
    if off.checked_add(data.len() as u64).is_none_or(|e| e > len) {
        return Err(IBV_WC_LOC_LEN_ERR);
    }
    if !scatter(mem, sges, off, data) {
        return Err(IBV_WC_LOC_PROT_ERR);
    }
    Ok(())
}

/// Where READ response packet `i` of a READ of `len` bytes lies, as
/// `(offset, responder's path MTU)`, or None when it is not one the READ
/// can have: `plen` its payload, `ends` whether it is a LAST or ONLY, `pmtu`
/// our path MTU, `rmtu` the responder's as earlier responses showed it (0:
/// none yet).  The responder cuts its answer at its own path MTU, which
/// IBTA makes one value per path; when the two ends were given different
/// ones, a larger responder MTU shows in the packet (FIRST and MIDDLE carry
/// exactly one MTU, a LAST at packet i > 0 begins at i MTUs, an ONLY carries
/// the whole READ) and the data lands at its offset all the same (rxe's
/// requester takes such responses too).  A smaller one is refused: its
/// responses would use PSNs past the READ's.
pub fn read_resp_place(len: u64, pmtu: u32, rmtu: u32, i: u32, plen: usize, ends: bool) -> Option<(u64, u32)> {
    let fits = |m: u32| {
        let n = len.div_ceil(m as u64).max(1);
        let off = i as u64 * m as u64;
        let want = (len - off.min(len)).min(m as u64);
        (i as u64) < n && ends == (i as u64 + 1 == n) && plen as u64 == want
    };
    let valid = |m: u32| m >= pmtu && m.is_power_of_two() && (256..=4096).contains(&m);
    let m = if rmtu != 0 {
        rmtu
    } else if fits(pmtu) {
        pmtu
    } else if !ends {
        plen as u32
    } else if i == 0 {
        // (An ONLY: any MTU of at least its length; the smallest.)
        (plen as u32).max(256).checked_next_power_of_two()?
    } else {
        let before = len.checked_sub(plen as u64)?;
        if before % i as u64 != 0 {
            return None;
        }
        u32::try_from(before / i as u64).ok()?
    };
    (valid(m) && fits(m)).then_some((i as u64 * m as u64, m))
}

/// An atomic's original value (in our byte order) into its 8-byte local
/// buffer: Err(`LOC_PROT_ERR`) when it cannot be written.
pub fn place_atomic(mem: &dyn Memory, sges: &[ibv_sge], orig: u64) -> Result<(), u32> {
    if scatter(mem, sges, 0, &orig.to_ne_bytes()) {
        Ok(())
    } else {
        Err(IBV_WC_LOC_PROT_ERR)
    }
}
