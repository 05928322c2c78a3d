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

/// An atomic's original value (in our byte order) into its 8-byte local
/// buffer: Err(`LOC_PROT_ERR`) when it cannot be written.
pub fn place_atomic(mem: &dyn Memory, sges: &[ibv_sge], orig: u64) -> Result<(), u32> {
    if scatter(mem, sges, 0, &orig.to_ne_bytes()) {
        Ok(())
    } else {
        Err(IBV_WC_LOC_PROT_ERR)
    }
}
