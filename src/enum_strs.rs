//! Human-readable names of the public enums (`ibv_*_str`).  The texts are
//! part of upstream's observable behaviour (tools print them), so they are
//! reproduced exactly.

use std::ffi::CStr;

const UNKNOWN: &CStr = c"unknown";

fn pick(table: &'static [&'static CStr], first: i64, value: i64) -> &'static CStr {
    let idx = value - first;
    if idx < 0 || idx >= table.len() as i64 {
        return UNKNOWN;
    }
    table[idx as usize]
}

/// `enum ibv_node_type` (a signed enum: IBV_NODE_UNKNOWN is -1).
pub fn node_type(v: i32) -> &'static CStr {
    const T: [&CStr; 7] = [
        c"InfiniBand channel adapter",
        c"InfiniBand switch",
        c"InfiniBand router",
        c"iWARP NIC",
        c"usNIC",
        c"usNIC UDP",
        c"unspecified",
    ];
    pick(&T, 1, v as i64)
}

/// `enum ibv_port_state` (unsigned).
pub fn port_state(v: u32) -> &'static CStr {
    const T: [&CStr; 6] = [
        c"no state change (NOP)",
        c"down",
        c"init",
        c"armed",
        c"active",
        c"active defer",
    ];
    pick(&T, 0, v as i64)
}

/// `enum ibv_event_type` (unsigned).
pub fn event_type(v: u32) -> &'static CStr {
    const T: [&CStr; 21] = [
        c"CQ error",
        c"local work queue catastrophic error",
        c"invalid request local work queue error",
        c"local access violation work queue error",
        c"communication established",
        c"send queue drained",
        c"path migrated",
        c"path migration request error",
        c"local catastrophic error",
        c"port active",
        c"port error",
        c"LID change",
        c"P_Key change",
        c"SM change",
        c"SRQ catastrophic error",
        c"SRQ limit reached",
        c"last WQE reached",
        c"client reregistration",
        c"GID table change",
        c"WQ fatal",
        c"Device link speed change",
    ];
    pick(&T, 0, v as i64)
}

/// `enum ibv_wr_opcode` (unsigned; `ibv_wr_opcode_str`, rdma-core 49).
/// Upstream's table has no text for 12 and 13 (no opcode has them): NULL
/// there, "unknown" outside the table.
pub fn wr_opcode(v: u32) -> Option<&'static CStr> {
    const T: [Option<&CStr>; 16] = [
        Some(c"rdma-write"),
        Some(c"rdma-write-with-imm"),
        Some(c"send"),
        Some(c"send-with-imm"),
        Some(c"rdma-read"),
        Some(c"atomic-cmp-and-swp"),
        Some(c"atomic-fetch-and-add"),
        Some(c"local-inv"),
        Some(c"bind-mw"),
        Some(c"send-with-inv"),
        Some(c"tso"),
        Some(c"driver1"),
        None,
        None,
        Some(c"flush"),
        Some(c"atomic-write"),
    ];
    match T.get(v as usize) {
        Some(s) => *s,
        None => Some(UNKNOWN),
    }
}

/// `enum ibv_wc_status` (unsigned).
pub fn wc_status(v: u32) -> &'static CStr {
    const T: [&CStr; 24] = [
        c"success",
        c"local length error",
        c"local QP operation error",
        c"local EE context operation error",
        c"local protection error",
        c"Work Request Flushed Error",
        c"memory management operation error",
        c"bad response error",
        c"local access error",
        c"remote invalid request error",
        c"remote access error",
        c"remote operation error",
        c"transport retry counter exceeded",
        c"RNR retry counter exceeded",
        c"local RDD violation error",
        c"remote invalid RD request",
        c"aborted error",
        c"invalid EE context number",
        c"invalid EE context state",
        c"fatal error",
        c"response timeout error",
        c"general error",
        c"TM error",
        c"TM software rendezvous",
    ];
    pick(&T, 0, v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(node_type(0), UNKNOWN);
        assert_eq!(node_type(-1), UNKNOWN);
        assert_eq!(node_type(1).to_str().unwrap(), "InfiniBand channel adapter");
        assert_eq!(node_type(7).to_str().unwrap(), "unspecified");
        assert_eq!(node_type(8), UNKNOWN);
        assert_eq!(port_state(5).to_str().unwrap(), "active defer");
        assert_eq!(port_state(u32::MAX), UNKNOWN);
        assert_eq!(event_type(19).to_str().unwrap(), "WQ fatal");
        assert_eq!(event_type(20).to_str().unwrap(), "Device link speed change");
        assert_eq!(event_type(21), UNKNOWN);
        assert_eq!(wr_opcode(11), Some(c"driver1"));
        assert_eq!(wr_opcode(12), None);
        assert_eq!(wr_opcode(15), Some(c"atomic-write"));
        assert_eq!(wr_opcode(16), Some(UNKNOWN));
        assert_eq!(wc_status(23).to_str().unwrap(), "TM software rendezvous");
        assert_eq!(wc_status(24), UNKNOWN);
    }
}
