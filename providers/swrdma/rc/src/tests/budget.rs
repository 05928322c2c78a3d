//! The requester's retry and RNR budgets, and the transport's timers.

use crate::budget::{Budget, RNR_INFINITE};
use crate::timers::{ack_timeout_ns, give_up_ns, rnr_timer_ns};
use ibverbs_abi::*;

// ---- the retry budget --------------------------------------------------------

#[test]
fn retry_budget_exhausts_after_exactly_retry_cnt() {
    for retry_cnt in 0..=7u8 {
        let mut b = Budget::default();
        for i in 0..retry_cnt {
            assert_eq!(
                b.timed_out(retry_cnt, 14),
                Ok(ack_timeout_ns(14)),
                "retry_cnt {retry_cnt}: retry {}",
                i + 1
            );
        }
        assert_eq!(b.retries, retry_cnt);
        assert_eq!(
            b.timed_out(retry_cnt, 14),
            Err(IBV_WC_RETRY_EXC_ERR),
            "retry_cnt {retry_cnt}"
        );
        assert_eq!(b.timed_out(retry_cnt, 14), Err(IBV_WC_RETRY_EXC_ERR), "and it stays so");
        assert_eq!(b.retries, retry_cnt, "nothing counted past the end");
    }
}

#[test]
fn retry_cnt_is_three_bits() {
    let mut b = Budget::default();
    for _ in 0..7 {
        assert!(b.timed_out(255, 1).is_ok());
    }
    assert_eq!(b.timed_out(255, 1), Err(IBV_WC_RETRY_EXC_ERR), "255 counts as 7");
}

#[test]
fn retry_delay_is_the_ack_timeout() {
    let mut b = Budget::default();
    for timeout in [0u8, 1, 8, 14, 20, 31] {
        b.refill();
        assert_eq!(
            b.timed_out(7, timeout),
            Ok(ack_timeout_ns(timeout)),
            "timeout {timeout}"
        );
    }
    b.refill();
    assert_eq!(b.timed_out(7, 10), Ok(4096 << 10));
}

// ---- the RNR budget --------------------------------------------------------------

#[test]
fn rnr_budget_exhausts_after_exactly_rnr_retry() {
    for rnr_retry in 0..7u8 {
        let mut b = Budget::default();
        for _ in 0..rnr_retry {
            assert_eq!(b.rnr_nak(rnr_retry, 1), Ok(rnr_timer_ns(1)), "rnr_retry {rnr_retry}");
        }
        assert_eq!(b.rnrs, rnr_retry);
        assert_eq!(
            b.rnr_nak(rnr_retry, 1),
            Err(IBV_WC_RNR_RETRY_EXC_ERR),
            "rnr_retry {rnr_retry}"
        );
        assert_eq!(
            b.rnr_nak(rnr_retry, 1),
            Err(IBV_WC_RNR_RETRY_EXC_ERR),
            "and it stays so"
        );
    }
}

#[test]
fn rnr_retry_7_never_exhausts() {
    assert_eq!(RNR_INFINITE, 7);
    for rnr_retry in [7u8, 8, 255] {
        let mut b = Budget::default();
        for _ in 0..1000 {
            assert_eq!(b.rnr_nak(rnr_retry, 0), Ok(rnr_timer_ns(0)), "rnr_retry {rnr_retry}");
        }
        assert_eq!(b.rnrs, 0, "rnr_retry {rnr_retry}: nothing counted");
    }
}

#[test]
fn rnr_delay_is_the_responders_timer() {
    let mut b = Budget::default();
    for code in [0u32, 1, 13, 31, 32 + 14] {
        assert_eq!(b.rnr_nak(7, code), Ok(rnr_timer_ns(code)), "code {code}");
    }
    assert_eq!(b.rnr_nak(7, 14), Ok(1_280_000));
}

// ---- both -------------------------------------------------------------------------

#[test]
fn refill_makes_the_budgets_full_again() {
    let mut b = Budget::default();
    assert!(b.timed_out(1, 14).is_ok());
    assert!(b.rnr_nak(1, 1).is_ok());
    assert!(b.timed_out(1, 14).is_err() && b.rnr_nak(1, 1).is_err());
    b.refill();
    assert_eq!(b, Budget::default());
    assert!(b.timed_out(1, 14).is_ok(), "progress: a retry again");
    assert!(b.rnr_nak(1, 1).is_ok(), "and an RNR NAK");
}

#[test]
fn retries_and_rnr_naks_are_counted_apart() {
    let mut b = Budget::default();
    assert!(b.rnr_nak(2, 1).is_ok());
    assert!(b.rnr_nak(2, 1).is_ok());
    assert_eq!((b.retries, b.rnrs), (0, 2));
    assert!(b.timed_out(2, 14).is_ok(), "RNR NAKs spend no retry");
    assert!(b.timed_out(2, 14).is_ok());
    assert_eq!(b.rnr_nak(2, 1), Err(IBV_WC_RNR_RETRY_EXC_ERR));
    assert_eq!(b.timed_out(2, 14), Err(IBV_WC_RETRY_EXC_ERR));
    assert_eq!((b.retries, b.rnrs), (2, 2));
}

// ---- timers ------------------------------------------------------------------------

#[test]
fn rnr_timer_table_is_ibtas() {
    // IBTA table 45 (the minimum RNR NAK timer field), in milliseconds.
    const MS: [f64; 32] = [
        655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96, 1.28, 1.92, 2.56, 3.84,
        5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52,
    ];
    for (code, ms) in MS.iter().enumerate() {
        assert_eq!(rnr_timer_ns(code as u32), (ms * 1e6).round() as u64, "code {code}");
    }
}

#[test]
fn rnr_timer_edges() {
    assert_eq!(rnr_timer_ns(0), 655_360_000, "0: the longest");
    assert_eq!(rnr_timer_ns(1), 10_000, "1: 10 us");
    assert_eq!(rnr_timer_ns(31), 491_520_000);
    assert_eq!(rnr_timer_ns(32), rnr_timer_ns(0), "5 bits");
    assert_eq!(rnr_timer_ns(63), rnr_timer_ns(31));
    for code in 2..32 {
        assert!(rnr_timer_ns(code) > rnr_timer_ns(code - 1), "1..31 grow: {code}");
    }
}

#[test]
fn ack_timeout_is_4096_ns_times_two_to_the_code() {
    for code in 1..=20u8 {
        assert_eq!(ack_timeout_ns(code), 4096u64 << code, "code {code}");
    }
    assert_eq!(ack_timeout_ns(14), 67_108_864, "14: 67 ms");
}

#[test]
fn ack_timeout_zero_and_cap() {
    assert_eq!(
        ack_timeout_ns(0),
        ack_timeout_ns(14),
        "0 (infinite on hardware) waits as 14"
    );
    assert_eq!(ack_timeout_ns(20), 4_294_967_296);
    for code in 21..=31u8 {
        assert_eq!(ack_timeout_ns(code), ack_timeout_ns(20), "code {code} capped at 20");
    }
    assert_eq!(ack_timeout_ns(255), ack_timeout_ns(20));
}

#[test]
fn give_up_is_retry_cnt_plus_one_timeouts_at_most_2_s() {
    assert_eq!(give_up_ns(14, 7), 8 * 67_108_864);
    assert_eq!(give_up_ns(14, 0), 67_108_864);
    assert_eq!(give_up_ns(1, 3), 4 * 8192);
    assert_eq!(give_up_ns(0, 1), 2 * 67_108_864, "timeout 0 as 14");
    assert_eq!(give_up_ns(14, 200), give_up_ns(14, 7), "retry_cnt is 3 bits");
    assert_eq!(give_up_ns(18, 0), 1_073_741_824);
    assert_eq!(give_up_ns(18, 1), 2_000_000_000, "2.1 s capped");
    assert_eq!(give_up_ns(20, 0), 2_000_000_000, "4.3 s capped");
    assert_eq!(give_up_ns(31, 7), 2_000_000_000);
}
