//! What the crate's unit tests and its fuzz target (`fuzz/fuzz_targets/
//! cm_mad.rs`) both feed the model: not used by the interposer.

use crate::cma::Dev;

/// `swr0` as a process sees it on 127.0.0.1: GID 1 `::ffff:127.0.0.1`
/// (RoCE v2), path MTU 4096, the default P_Key.
pub fn loopback_dev() -> Dev {
    let mut gid = [0u8; 16];
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&[127, 0, 0, 1]);
    Dev {
        name: "swr0".into(),
        guid: 0x0211_22ff_fe33_4455,
        ibdev_index: 0,
        port_num: 1,
        gid_index: 1,
        gid,
        mtu: 5,
        pkey: 0xffff,
        ack_delay: 15,
        max_rd_atomic: 16,
    }
}
