//! The requester's retry and RNR budgets, with one meaning for both
//! transports: counted per QP, the tries spent since the requester last
//! made progress (a response that completed a request or moved the oldest
//! unacknowledged one forward), as rxe's completer counts them.  A fresh
//! (default) budget is full; the QP's `retry_cnt` and `rnr_retry` are
//! read at each try, so a budget needs no set-up.

use crate::timers::{ack_timeout_ns, rnr_timer_ns};
use ibverbs_abi::*;

/// `rnr_retry` 7: RNR NAKs are retried without limit.
pub const RNR_INFINITE: u8 = 7;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// Retransmissions after a timeout (or a responder not ready) so far.
    pub retries: u8,
    /// RNR NAKs so far.
    pub rnrs: u8,
}

impl Budget {
    /// The requester made progress: full again.
    pub fn refill(&mut self) {
        *self = Budget::default();
    }

    /// An RNR NAK with the responder's timer `code`, on a QP with
    /// `rnr_retry`: Ok(wait before sending again, ns), or Err(the status the
    /// request fails with: `RNR_RETRY_EXC_ERR`).
    pub fn rnr_nak(&mut self, rnr_retry: u8, code: u32) -> Result<u64, u32> {
        let limit = rnr_retry.min(7);
        if limit != RNR_INFINITE {
            if self.rnrs >= limit {
                return Err(IBV_WC_RNR_RETRY_EXC_ERR);
            }
            self.rnrs += 1;
        }
        Ok(rnr_timer_ns(code))
    }

    /// No answer within the local ACK timeout (or the responder was not
    /// ready), on a QP with `retry_cnt` and `timeout`: Ok(wait before
    /// sending again, ns), or Err(`RETRY_EXC_ERR`).
    pub fn timed_out(&mut self, retry_cnt: u8, timeout: u8) -> Result<u64, u32> {
        if self.retries >= retry_cnt.min(7) {
            return Err(IBV_WC_RETRY_EXC_ERR);
        }
        self.retries += 1;
        Ok(ack_timeout_ns(timeout))
    }
}
