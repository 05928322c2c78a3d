//! The kernel rdma_cm character device's `write()` ABI, version 4 (Linux
//! 6.1's `<rdma/rdma_user_cm.h>`): command numbers, the size of each
//! command and response, and the offsets of their fields, as byte
//! positions (the structs are read from and written to the caller's memory
//! as bytes: `__u64` fields are naturally aligned, the kernel's
//! `sockaddr_storage` is 128 bytes aligned to 8).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

pub const ABI_VERSION: u32 = 4;
pub const HDR_LEN: usize = 8;

/// Command numbers (`RDMA_USER_CM_CMD_*`).
pub mod cmd {
    pub const CREATE_ID: u32 = 0;
    pub const DESTROY_ID: u32 = 1;
    pub const BIND_IP: u32 = 2;
    pub const RESOLVE_IP: u32 = 3;
    pub const RESOLVE_ROUTE: u32 = 4;
    pub const QUERY_ROUTE: u32 = 5;
    pub const CONNECT: u32 = 6;
    pub const LISTEN: u32 = 7;
    pub const ACCEPT: u32 = 8;
    pub const REJECT: u32 = 9;
    pub const DISCONNECT: u32 = 10;
    pub const INIT_QP_ATTR: u32 = 11;
    pub const GET_EVENT: u32 = 12;
    pub const GET_OPTION: u32 = 13;
    pub const SET_OPTION: u32 = 14;
    pub const NOTIFY: u32 = 15;
    pub const JOIN_IP_MCAST: u32 = 16;
    pub const LEAVE_MCAST: u32 = 17;
    pub const MIGRATE_ID: u32 = 18;
    pub const QUERY: u32 = 19;
    pub const BIND: u32 = 20;
    pub const RESOLVE_ADDR: u32 = 21;
    pub const JOIN_MCAST: u32 = 22;
    /// Commands of Linux 6.1 (those above).
    pub const COUNT: u32 = 23;
}

/// Command payload sizes (after the 8-byte header).
pub mod size {
    pub const CREATE_ID: usize = 24;
    pub const DESTROY_ID: usize = 16;
    pub const BIND_IP: usize = 40;
    pub const BIND: usize = 136;
    pub const RESOLVE_IP: usize = 64;
    pub const RESOLVE_ADDR: usize = 272;
    pub const RESOLVE_ROUTE: usize = 8;
    pub const QUERY: usize = 16;
    pub const CONNECT: usize = 288;
    pub const LISTEN: usize = 8;
    pub const ACCEPT: usize = 296;
    pub const REJECT: usize = 264;
    pub const DISCONNECT: usize = 4;
    pub const INIT_QP_ATTR: usize = 16;
    pub const NOTIFY: usize = 8;
    pub const GET_EVENT: usize = 8;
    pub const SET_OPTION: usize = 24;
    pub const MIGRATE_ID: usize = 16;
    pub const JOIN_IP_MCAST: usize = 48;
    pub const JOIN_MCAST: usize = 152;
    pub const LEAVE_MCAST: usize = 16;
    // responses
    pub const CREATE_ID_RESP: usize = 4;
    pub const DESTROY_ID_RESP: usize = 4;
    pub const QUERY_ROUTE_RESP: usize = 208;
    pub const QUERY_ADDR_RESP: usize = 280;
    pub const QUERY_PATH_RESP: usize = 8;
    pub const PATH_DATA: usize = 72;
    pub const QP_ATTR_RESP: usize = 144;
    pub const EVENT_RESP: usize = 336;
    /// The smallest `GET_EVENT` buffer the kernel takes (without the
    /// trailing reserved word and ECE).
    pub const EVENT_RESP_MIN: usize = 336 - 4 - 8;
    pub const MIGRATE_RESP: usize = 4;
}

pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;
pub const AF_IB: u16 = 27;
pub const SOCKADDR_IN_LEN: usize = 16;
pub const SOCKADDR_IN6_LEN: usize = 28;
pub const SOCKADDR_IB_LEN: usize = 48;

pub fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes([b[o], b[o + 1]])
}
pub fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
pub fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_ne_bytes(a)
}
pub fn put16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_ne_bytes());
}
pub fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
}
pub fn put64(b: &mut [u8], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_ne_bytes());
}

/// An address as a caller passed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockAddr {
    Ip(SocketAddr),
    Ib {
        pkey: u16,
        gid: [u8; 16],
        sid: u64,
        sid_mask: u64,
    },
}

/// The kernel's `rdma_addr_size` of the address at `b` (0: a family it
/// does not know).
pub fn addr_size(b: &[u8]) -> usize {
    match u16_at(b, 0) {
        AF_INET => SOCKADDR_IN_LEN,
        AF_INET6 => SOCKADDR_IN6_LEN,
        AF_IB => SOCKADDR_IB_LEN,
        _ => 0,
    }
}

/// Parses a sockaddr of any of the three families.
pub fn parse_addr(b: &[u8]) -> Option<SockAddr> {
    match u16_at(b, 0) {
        AF_INET => {
            let port = u16::from_be_bytes([b[2], b[3]]);
            let ip = Ipv4Addr::new(b[4], b[5], b[6], b[7]);
            Some(SockAddr::Ip(SocketAddr::V4(SocketAddrV4::new(ip, port))))
        }
        AF_INET6 => {
            let port = u16::from_be_bytes([b[2], b[3]]);
            let flow = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            let mut a = [0u8; 16];
            a.copy_from_slice(&b[8..24]);
            let scope = u32_at(b, 24);
            Some(SockAddr::Ip(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a),
                port,
                flow,
                scope,
            ))))
        }
        AF_IB => {
            let pkey = u16::from_be_bytes([b[2], b[3]]);
            let mut gid = [0u8; 16];
            gid.copy_from_slice(&b[8..24]);
            let sid = u64::from_be_bytes(b[24..32].try_into().ok()?);
            let sid_mask = u64::from_be_bytes(b[32..40].try_into().ok()?);
            Some(SockAddr::Ib {
                pkey,
                gid,
                sid,
                sid_mask,
            })
        }
        _ => None,
    }
}

/// Writes a socket address at `b` (zeroing what it does not use of its
/// length) and returns its size.
pub fn write_ip(b: &mut [u8], a: &SocketAddr) -> usize {
    match a {
        SocketAddr::V4(v) => {
            b[..SOCKADDR_IN_LEN].fill(0);
            put16(b, 0, AF_INET);
            b[2..4].copy_from_slice(&v.port().to_be_bytes());
            b[4..8].copy_from_slice(&v.ip().octets());
            SOCKADDR_IN_LEN
        }
        SocketAddr::V6(v) => {
            b[..SOCKADDR_IN6_LEN].fill(0);
            put16(b, 0, AF_INET6);
            b[2..4].copy_from_slice(&v.port().to_be_bytes());
            b[4..8].copy_from_slice(&v.flowinfo().to_be_bytes());
            b[8..24].copy_from_slice(&v.ip().octets());
            put32(b, 24, v.scope_id());
            SOCKADDR_IN6_LEN
        }
    }
}

/// An `sockaddr_ib` (the `QUERY` GID answer).
pub fn write_ib(b: &mut [u8], pkey: u16, gid: &[u8; 16], sid: u64, mask: u64) -> usize {
    b[..SOCKADDR_IB_LEN].fill(0);
    put16(b, 0, AF_IB);
    b[2..4].copy_from_slice(&pkey.to_be_bytes());
    b[8..24].copy_from_slice(gid);
    b[24..32].copy_from_slice(&sid.to_be_bytes());
    b[32..40].copy_from_slice(&mask.to_be_bytes());
    SOCKADDR_IB_LEN
}

/// The unspecified address of `ip`'s family with `port`.
pub fn any_like(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// `struct rdma_ucm_conn_param` offsets (272 bytes).
pub mod conn_param {
    pub const QP_NUM: usize = 0;
    pub const QKEY: usize = 4;
    pub const PRIVATE_DATA: usize = 8;
    pub const PRIVATE_DATA_LEN: usize = 264;
    pub const SRQ: usize = 265;
    pub const RESPONDER_RESOURCES: usize = 266;
    pub const INITIATOR_DEPTH: usize = 267;
    pub const FLOW_CONTROL: usize = 268;
    pub const RETRY_COUNT: usize = 269;
    pub const RNR_RETRY_COUNT: usize = 270;
    pub const VALID: usize = 271;
    pub const LEN: usize = 272;
}

/// Reads a `rdma_ucm_conn_param` at `b`.
pub fn parse_conn_param(b: &[u8]) -> swrdma_cm::cma::ConnParam {
    use conn_param::*;
    let n = (b[PRIVATE_DATA_LEN] as usize).min(256);
    swrdma_cm::cma::ConnParam {
        qp_num: u32_at(b, QP_NUM),
        qkey: u32_at(b, QKEY),
        private_data: b[PRIVATE_DATA..PRIVATE_DATA + n].to_vec(),
        srq: b[SRQ],
        responder_resources: b[RESPONDER_RESOURCES],
        initiator_depth: b[INITIATOR_DEPTH],
        flow_control: b[FLOW_CONTROL],
        retry_count: b[RETRY_COUNT],
        rnr_retry_count: b[RNR_RETRY_COUNT],
        valid: b[VALID] != 0,
    }
}

/// Writes a `struct ib_uverbs_ah_attr` (32 bytes).
pub fn write_ah(b: &mut [u8], ah: &swrdma_cm::cma::Ah) {
    b[..16].copy_from_slice(&ah.dgid);
    put32(b, 16, ah.flow_label);
    b[20] = ah.sgid_index;
    b[21] = ah.hop_limit;
    b[22] = ah.traffic_class;
    b[23] = 0;
    put16(b, 24, ah.dlid);
    b[26] = ah.sl;
    b[27] = 0;
    b[28] = ah.static_rate;
    b[29] = ah.is_global;
    b[30] = ah.port_num;
    b[31] = 0;
}

/// Writes `struct rdma_ucm_event_resp` (336 bytes).
pub fn write_event(e: &swrdma_cm::cma::Event) -> [u8; size::EVENT_RESP] {
    use swrdma_cm::cma::Param;
    let mut b = [0u8; size::EVENT_RESP];
    put64(&mut b, 0, e.uid);
    put32(&mut b, 8, e.id);
    put32(&mut b, 12, e.event);
    put32(&mut b, 16, e.status as u32);
    let p = 20;
    match &e.param {
        Param::Conn(c) => {
            use conn_param::*;
            put32(&mut b, p + QP_NUM, c.qp_num);
            put32(&mut b, p + QKEY, c.qkey);
            let n = c.private_data.len().min(256);
            b[p + PRIVATE_DATA..p + PRIVATE_DATA + n].copy_from_slice(&c.private_data[..n]);
            b[p + PRIVATE_DATA_LEN] = n as u8;
            b[p + SRQ] = c.srq;
            b[p + RESPONDER_RESOURCES] = c.responder_resources;
            b[p + INITIATOR_DEPTH] = c.initiator_depth;
            b[p + FLOW_CONTROL] = c.flow_control;
            b[p + RETRY_COUNT] = c.retry_count;
            b[p + RNR_RETRY_COUNT] = c.rnr_retry_count;
        }
        Param::Ud {
            qp_num,
            qkey,
            ah,
            private_data,
        } => {
            put32(&mut b, p, *qp_num);
            put32(&mut b, p + 4, *qkey);
            write_ah(&mut b[p + 8..p + 40], ah);
            let n = private_data.len().min(256);
            b[p + 40..p + 40 + n].copy_from_slice(&private_data[..n]);
            b[p + 296] = n as u8;
        }
    }
    put32(&mut b, 328, e.ece.0);
    put32(&mut b, 332, e.ece.1);
    b
}

/// Writes `struct ib_uverbs_qp_attr` (144 bytes).
pub fn write_qp_attr(a: &swrdma_cm::cma::QpAttr) -> [u8; size::QP_ATTR_RESP] {
    let mut b = [0u8; size::QP_ATTR_RESP];
    put32(&mut b, 0, a.mask);
    put32(&mut b, 4, a.qp_state);
    put32(&mut b, 12, a.path_mtu);
    put32(&mut b, 20, a.qkey);
    put32(&mut b, 24, a.rq_psn);
    put32(&mut b, 28, a.sq_psn);
    put32(&mut b, 32, a.dest_qp_num);
    put32(&mut b, 36, a.qp_access_flags);
    write_ah(&mut b[40..72], &a.ah);
    // alt_ah_attr 72..104, max_send_wr.. 104..124
    put16(&mut b, 124, a.pkey_index);
    b[130] = a.max_rd_atomic;
    b[131] = a.max_dest_rd_atomic;
    b[132] = a.min_rnr_timer;
    b[133] = a.port_num;
    b[134] = a.timeout;
    b[135] = a.retry_cnt;
    b[136] = a.rnr_retry;
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip() {
        let mut b = [0u8; 128];
        let a: SocketAddr = "127.0.0.1:7174".parse().unwrap();
        assert_eq!(write_ip(&mut b, &a), 16);
        assert_eq!(addr_size(&b), 16);
        assert_eq!(parse_addr(&b), Some(SockAddr::Ip(a)));
        assert_eq!(&b[2..4], &[0x1c, 0x06]);
        let a6: SocketAddr = "[::1]:18515".parse().unwrap();
        assert_eq!(write_ip(&mut b, &a6), 28);
        assert_eq!(parse_addr(&b), Some(SockAddr::Ip(a6)));
        write_ib(&mut b, 0xffff, &[0; 16], 0x0106_0000, u64::MAX);
        assert_eq!(addr_size(&b), 48);
        assert!(matches!(parse_addr(&b), Some(SockAddr::Ib { sid: 0x0106_0000, .. })));
    }

    #[test]
    fn qp_attr_layout_matches_the_abi_crate() {
        // ib_uverbs_qp_attr as the uverbs mirror lays it out: the offsets
        // written here are the ones librdmacm's ibv_copy_qp_attr_from_kern
        // reads.
        assert_eq!(size::QP_ATTR_RESP, 144);
        let a = swrdma_cm::cma::QpAttr {
            mask: 1,
            timeout: 14,
            port_num: 1,
            ..Default::default()
        };
        let b = write_qp_attr(&a);
        assert_eq!(b[134], 14);
        assert_eq!(b[133], 1);
    }
}
