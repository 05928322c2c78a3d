//! The timers of IB's reliable transport, in nanoseconds.

/// The RNR timer encoding (`min_rnr_timer`, 5 bits): 0 is 655.36 ms,
/// 1..31 go from 0.01 ms to 491.52 ms.
pub fn rnr_timer_ns(code: u32) -> u64 {
    const US10: [u32; 32] = [
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072,
        4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
    ];
    US10[(code & 31) as usize] as u64 * 10_000
}

/// The local ACK timeout (`timeout`: 4.096 us * 2^timeout), capped at
/// 2^20 units (4.3 s); 0 ("infinite" on hardware) waits as 14 (67 ms).
pub fn ack_timeout_ns(code: u8) -> u64 {
    let c = if code == 0 { 14 } else { code.min(20) };
    4096u64 << c
}

/// How long a requester whose requests go unanswered (the peer is gone)
/// waits before `RETRY_EXC_ERR`: `retry_cnt` + 1 ACK timeouts, at most 2 s.
pub fn give_up_ns(timeout: u8, retry_cnt: u8) -> u64 {
    (ack_timeout_ns(timeout) * (retry_cnt.min(7) as u64 + 1)).min(2_000_000_000)
}
