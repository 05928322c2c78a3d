//! The requester's retry and RNR budgets, with one meaning for both
//! transports: counted per QP, the tries left since the requester last
//! made progress (a response that completed a request or moved the oldest
//! unacknowledged one forward), as rxe's completer counts them.

use crate::timers::{ack_timeout_ns, rnr_timer_ns};
use ibverbs_abi::*;

/// `rnr_retry` 7: RNR NAKs are retried without limit.
pub const RNR_INFINITE: u8 = 7;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    pub retry_left: u8,
    pub rnr_left: u8,
}

impl Budget {
    /// A full budget for a QP with these attributes.
    pub fn new(retry_cnt: u8, rnr_retry: u8) -> Budget {
        Budget {
            retry_left: retry_cnt.min(7),
            rnr_left: rnr_retry.min(7),
        }
    }

    /// The requester made progress: full again.
    pub fn refill(&mut self, retry_cnt: u8, rnr_retry: u8) {
        *self = Budget::new(retry_cnt, rnr_retry);
    }

    /// An RNR NAK with the responder's timer `code`: Ok(wait before sending
    /// again, ns), or Err(the status the request fails with).
    pub fn rnr_nak(&mut self, code: u32) -> Result<u64, u32> {
        if self.rnr_left == 0 {
            return Err(IBV_WC_RNR_RETRY_EXC_ERR);
        }
        if self.rnr_left != RNR_INFINITE {
            self.rnr_left -= 1;
        }
        Ok(rnr_timer_ns(code))
    }

    /// No answer within the local ACK timeout (`timeout` code), or the
    /// responder was not ready: Ok(wait before sending again, ns), or
    /// Err(the status the request fails with).
    pub fn timed_out(&mut self, timeout: u8) -> Result<u64, u32> {
        if self.retry_left == 0 {
            return Err(IBV_WC_RETRY_EXC_ERR);
        }
        self.retry_left -= 1;
        Ok(ack_timeout_ns(timeout))
    }
}
