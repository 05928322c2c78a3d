//! Conversions between `enum ibv_rate` and link speeds.

/// `IBV_RATE_MAX`: what upstream returns for a speed with no enum value.
pub const RATE_MAX: u32 = 0;

/// (enum value, multiple of 2.5 Gb/s or -1 when none, Mb/s)
const RATES: [(u32, i32, i32); 23] = [
    (2, 1, 2500),       // 2.5 Gb/s
    (5, 2, 5000),       // 5
    (3, 4, 10000),      // 10
    (6, 8, 20000),      // 20
    (4, 12, 30000),     // 30
    (7, 16, 40000),     // 40
    (8, 24, 60000),     // 60
    (9, 32, 80000),     // 80
    (10, 48, 120000),   // 120
    (11, -1, 14062),    // 14 (FDR)
    (12, -1, 56250),    // 56
    (13, -1, 112500),   // 112
    (14, -1, 168750),   // 168
    (15, -1, 25781),    // 25 (EDR)
    (16, -1, 103125),   // 100
    (17, -1, 206250),   // 200
    (18, -1, 309375),   // 300
    (19, 11, 28125),    // 28
    (20, 20, 53125),    // 50
    (21, 160, 425000),  // 400
    (22, 240, 637500),  // 600
    (23, 320, 850000),  // 800
    (24, 480, 1275000), // 1200
];

pub fn rate_to_mult(rate: u32) -> i32 {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.1)
}

pub fn mult_to_rate(mult: i32) -> u32 {
    if mult < 0 {
        return RATE_MAX;
    }
    RATES.iter().find(|r| r.1 == mult).map_or(RATE_MAX, |r| r.0)
}

pub fn rate_to_mbps(rate: u32) -> i32 {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.2)
}

pub fn mbps_to_rate(mbps: i32) -> u32 {
    RATES.iter().find(|r| r.2 == mbps).map_or(RATE_MAX, |r| r.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn round_trips() {
        for r in 0..=30u32 {
            let m = rate_to_mult(r);
            if m > 0 {
                assert_eq!(mult_to_rate(m), r);
            }
            let s = rate_to_mbps(r);
            if s > 0 {
                assert_eq!(mbps_to_rate(s), r);
            }
        }
        assert_eq!(mult_to_rate(-1), RATE_MAX);
        assert_eq!(rate_to_mbps(0), -1);
    }
}
