//! The ucma log: every command written to a channel, its answer and every
//! event, one line each, decoded field by field, so that one workload can
//! be recorded on the kernel's rdma_cm (`SWRDMA_UCMA_KERNEL=1`: the
//! interposer passes the channel to the real `/dev/infiniband/rdma_cm` and
//! only records) and on ours, and the two compared after normalising the
//! values that differ by nature (handles, QPNs, PSNs, ports, GUIDs, GIDs,
//! addresses: `compat-tests/ucma-log/normalize.py`).
//!
//! `SWRDMA_UCMA_LOG=<prefix>` writes `<prefix>.<pid>`; nothing is written
//! otherwise.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Mutex, OnceLock};

use crate::abi::{self, cmd, size, u16_at, u32_at, u64_at};

static FILE: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();

/// The port space of each user pointer and each id seen (from CREATE_ID,
/// CONNECT_REQUEST and ACCEPT), so that an event's parameters are decoded
/// as the id's kind says: a UD id's as `rdma_ucm_ud_param`, others' as
/// `rdma_ucm_conn_param`.
#[derive(Default)]
struct Kinds {
    by_uid: std::collections::HashMap<u64, u16>,
    by_id: std::collections::HashMap<u32, u16>,
}

static KINDS: OnceLock<Mutex<Kinds>> = OnceLock::new();

fn kinds() -> std::sync::MutexGuard<'static, Kinds> {
    KINDS
        .get_or_init(|| Mutex::new(Kinds::default()))
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn is_ud_ps(ps: u16) -> bool {
    ps == 0x0111 || ps == 0x0002
}

fn file() -> Option<&'static Mutex<std::fs::File>> {
    FILE.get_or_init(|| {
        let prefix = std::env::var_os("SWRDMA_UCMA_LOG")?;
        let mut p = prefix.into_encoded_bytes();
        p.extend_from_slice(format!(".{}", std::process::id()).as_bytes());
        // SAFETY: the bytes came from an OsString with an ASCII suffix.
        let path = unsafe { std::ffi::OsString::from_encoded_bytes_unchecked(p) };
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
            .map(Mutex::new)
    })
    .as_ref()
}

pub fn on() -> bool {
    file().is_some()
}

/// The order of a line in the log: taken when a command is issued (or, for
/// `GET_EVENT`, when its event is taken), so that a command is always
/// before the events it causes, whichever thread writes its line first.
pub fn seq() -> u64 {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn emit(line: &str) {
    if let Some(f) = file() {
        let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(f, "{line}");
    }
}

pub fn name(c: u32) -> &'static str {
    const N: [&str; 23] = [
        "CREATE_ID",
        "DESTROY_ID",
        "BIND_IP",
        "RESOLVE_IP",
        "RESOLVE_ROUTE",
        "QUERY_ROUTE",
        "CONNECT",
        "LISTEN",
        "ACCEPT",
        "REJECT",
        "DISCONNECT",
        "INIT_QP_ATTR",
        "GET_EVENT",
        "GET_OPTION",
        "SET_OPTION",
        "NOTIFY",
        "JOIN_IP_MCAST",
        "LEAVE_MCAST",
        "MIGRATE_ID",
        "QUERY",
        "BIND",
        "RESOLVE_ADDR",
        "JOIN_MCAST",
    ];
    N.get(c as usize).copied().unwrap_or("UNKNOWN")
}

fn addr(b: &[u8]) -> String {
    match abi::parse_addr(b) {
        Some(abi::SockAddr::Ip(a)) => format!("addr={} port={}", a.ip(), a.port()),
        Some(abi::SockAddr::Ib {
            pkey,
            gid,
            sid,
            sid_mask,
        }) => {
            format!("ib pkey=0x{pkey:x} gid={} sid=0x{sid:x}/0x{sid_mask:x}", gid_str(&gid))
        }
        None => format!("family={}", u16_at(b, 0)),
    }
}

fn gid_str(g: &[u8]) -> String {
    let v: [u8; 16] = g[..16].try_into().unwrap_or([0; 16]);
    std::net::Ipv6Addr::from(v).to_string()
}

fn conn_param(b: &[u8]) -> String {
    use abi::conn_param::*;
    format!(
        "qp_num={} qkey=0x{:x} pd_len={} srq={} resp_res={} init_depth={} flow={} retry={} rnr={} valid={}",
        u32_at(b, QP_NUM),
        u32_at(b, QKEY),
        b[PRIVATE_DATA_LEN],
        b[SRQ],
        b[RESPONDER_RESOURCES],
        b[INITIATOR_DEPTH],
        b[FLOW_CONTROL],
        b[RETRY_COUNT],
        b[RNR_RETRY_COUNT],
        b[VALID]
    )
}

fn ah(b: &[u8]) -> String {
    format!(
        "dgid={} flow_label={} sgid_index={} hop_limit={} tclass={} dlid={} sl={} rate={} global={} port={}",
        gid_str(&b[..16]),
        u32_at(b, 16),
        b[20],
        b[21],
        b[22],
        u16_at(b, 24),
        b[26],
        b[28],
        b[29],
        b[30]
    )
}

/// The command's arguments, decoded (`a`: the bytes after the header).
pub fn args(c: u32, a: &[u8]) -> String {
    let need = match c {
        cmd::CREATE_ID => size::CREATE_ID,
        cmd::DESTROY_ID | cmd::QUERY | cmd::QUERY_ROUTE | cmd::INIT_QP_ATTR | cmd::MIGRATE_ID => 16,
        cmd::BIND_IP => size::BIND_IP,
        cmd::BIND => size::BIND,
        cmd::RESOLVE_IP => size::RESOLVE_IP,
        cmd::RESOLVE_ADDR => size::RESOLVE_ADDR,
        cmd::CONNECT => size::CONNECT,
        cmd::ACCEPT => size::ACCEPT,
        cmd::REJECT => size::REJECT,
        cmd::SET_OPTION => size::SET_OPTION,
        cmd::DISCONNECT => size::DISCONNECT,
        cmd::JOIN_IP_MCAST => size::JOIN_IP_MCAST,
        cmd::JOIN_MCAST => 24,
        cmd::LEAVE_MCAST => size::LEAVE_MCAST,
        _ => 8,
    };
    if a.len() < need {
        return "short".into();
    }
    match c {
        cmd::CREATE_ID => format!("uid={:#x} ps=0x{:04x} qp_type={}", u64_at(a, 0), u16_at(a, 16), a[18]),
        cmd::DESTROY_ID => format!("id={}", u32_at(a, 8)),
        cmd::BIND_IP => format!("id={} {}", u32_at(a, 36), addr(&a[8..36])),
        cmd::BIND => format!("id={} size={} {}", u32_at(a, 0), u16_at(a, 4), addr(&a[8..])),
        cmd::RESOLVE_IP => format!(
            "id={} src[{}] dst[{}] timeout={}",
            u32_at(a, 56),
            addr(&a[..28]),
            addr(&a[28..56]),
            u32_at(a, 60)
        ),
        cmd::RESOLVE_ADDR => format!(
            "id={} src_size={} src[{}] dst_size={} dst[{}] timeout={}",
            u32_at(a, 0),
            u16_at(a, 8),
            if u16_at(a, 8) == 0 {
                "none".into()
            } else {
                addr(&a[16..])
            },
            u16_at(a, 10),
            addr(&a[144..]),
            u32_at(a, 4)
        ),
        cmd::RESOLVE_ROUTE | cmd::LISTEN | cmd::NOTIFY => format!("id={} arg={}", u32_at(a, 0), u32_at(a, 4)),
        cmd::DISCONNECT => format!("id={}", u32_at(a, 0)),
        cmd::QUERY => format!("id={} option={}", u32_at(a, 8), u32_at(a, 12)),
        cmd::QUERY_ROUTE => format!("id={}", u32_at(a, 8)),
        cmd::CONNECT => format!(
            "id={} {} ece={}/{}",
            u32_at(a, 272),
            conn_param(&a[..272]),
            u32_at(a, 280),
            u32_at(a, 284)
        ),
        cmd::ACCEPT => format!(
            "id={} uid={:#x} {}",
            u32_at(a, 280),
            u64_at(a, 0),
            conn_param(&a[8..280])
        ),
        cmd::REJECT => format!("id={} pd_len={} reason={}", u32_at(a, 0), a[4], a[5]),
        cmd::INIT_QP_ATTR => format!("id={} qp_state={}", u32_at(a, 8), u32_at(a, 12)),
        cmd::SET_OPTION => format!(
            "id={} level={} name={} len={}",
            u32_at(a, 8),
            u32_at(a, 12),
            u32_at(a, 16),
            u32_at(a, 20)
        ),
        cmd::MIGRATE_ID => format!("id={}", u32_at(a, 8)),
        cmd::JOIN_IP_MCAST => format!("id={} uid={:#x} {}", u32_at(a, 44), u64_at(a, 8), addr(&a[16..44])),
        cmd::JOIN_MCAST => format!(
            "id={} uid={:#x} size={} flags={} {}",
            u32_at(a, 16),
            u64_at(a, 8),
            u16_at(a, 20),
            u16_at(a, 22),
            if a.len() >= size::JOIN_MCAST {
                addr(&a[24..])
            } else {
                "short".into()
            }
        ),
        cmd::LEAVE_MCAST => format!("mc={}", u32_at(a, 8)),
        _ => String::new(),
    }
}

/// The response the command wrote (`r`: the bytes at its response
/// pointer, as long as the command said).
pub fn response(c: u32, option: u32, r: &[u8]) -> String {
    let mut s = String::new();
    match c {
        cmd::CREATE_ID if r.len() >= 4 => {
            let _ = write!(s, "id={}", u32_at(r, 0));
        }
        cmd::DESTROY_ID | cmd::MIGRATE_ID | cmd::LEAVE_MCAST if r.len() >= 4 => {
            let _ = write!(s, "events_reported={}", u32_at(r, 0));
        }
        cmd::JOIN_IP_MCAST | cmd::JOIN_MCAST if r.len() >= 4 => {
            let _ = write!(s, "mc={}", u32_at(r, 0));
        }
        cmd::QUERY if option == 0 && r.len() >= size::QUERY_ADDR_RESP => {
            let _ = write!(
                s,
                "node_guid={:#x} port={} pkey=0x{:x} src_size={} src[{}] dst_size={} dst[{}] ibdev_index={}",
                u64::from_be(u64_at(r, 0)),
                r[8],
                u16_at(r, 10),
                u16_at(r, 12),
                addr(&r[16..144]),
                u16_at(r, 14),
                addr(&r[144..272]),
                u32_at(r, 272) as i32
            );
        }
        cmd::QUERY if option == 2 && r.len() >= size::QUERY_ADDR_RESP => {
            let _ = write!(
                s,
                "port={} pkey=0x{:x} src[{}] dst[{}]",
                r[8],
                u16_at(r, 10),
                addr(&r[16..144]),
                addr(&r[144..272])
            );
        }
        cmd::QUERY if option == 1 && r.len() >= 8 => {
            let n = u32_at(r, 0) as usize;
            let _ = write!(s, "num_paths={n}");
            for i in 0..n {
                let o = 8 + i * size::PATH_DATA;
                if r.len() < o + size::PATH_DATA {
                    break;
                }
                let p = &r[o + 8..o + 72];
                let flhl = u32::from_be_bytes([p[44], p[45], p[46], p[47]]);
                let _ = write!(
                    s,
                    " [flags=0x{:x} dgid={} sgid={} dlid={} slid={} flow_label={} hop_limit={} tclass={} rev_num=0x{:x} pkey=0x{:x} sl={} mtu=0x{:x} rate=0x{:x} plt=0x{:x} pref={}]",
                    u32_at(r, o),
                    gid_str(&p[8..24]),
                    gid_str(&p[24..40]),
                    u16::from_be_bytes([p[40], p[41]]),
                    u16::from_be_bytes([p[42], p[43]]),
                    (flhl >> 8) & 0xf_ffff,
                    flhl & 0xff,
                    p[48],
                    p[49],
                    u16::from_be_bytes([p[50], p[51]]),
                    u16::from_be_bytes([p[52], p[53]]) & 0xf,
                    p[54],
                    p[55],
                    p[56],
                    p[57]
                );
            }
        }
        cmd::INIT_QP_ATTR if r.len() >= size::QP_ATTR_RESP => {
            let _ = write!(
                s,
                "mask=0x{:x} state={} mtu={} qkey=0x{:x} rq_psn={} sq_psn={} dest_qp={} access=0x{:x} ah[{}] pkey_index={} max_rd_atomic={} max_dest_rd_atomic={} min_rnr_timer={} port={} timeout={} retry={} rnr_retry={}",
                u32_at(r, 0),
                u32_at(r, 4),
                u32_at(r, 12),
                u32_at(r, 20),
                u32_at(r, 24),
                u32_at(r, 28),
                u32_at(r, 32),
                u32_at(r, 36),
                ah(&r[40..72]),
                u16_at(r, 124),
                r[130],
                r[131],
                r[132],
                r[133],
                r[134],
                r[135],
                r[136]
            );
        }
        cmd::GET_EVENT if r.len() >= size::EVENT_RESP_MIN => {
            let (uid, id, ev) = (u64_at(r, 0), u32_at(r, 8), u32_at(r, 12));
            let _ = write!(s, "uid={uid:#x} id={id} event={ev} status={}", u32_at(r, 16) as i32);
            let ps = {
                let mut k = kinds();
                let ps = k.by_uid.get(&uid).or(k.by_id.get(&id)).copied();
                if let (Some(ps), 4) = (ps, ev) {
                    k.by_id.insert(id, ps);
                }
                ps
            };
            let p = &r[20..];
            if ps.is_some_and(is_ud_ps) {
                let (q, k) = (u32_at(p, 0), u32_at(p, 4));
                let _ = write!(s, " ud[qp_num={q} qkey=0x{k:x} {} pd_len={}]", ah(&p[8..40]), p[296]);
            } else {
                let _ = write!(s, " conn[{}]", conn_param(&p[..272]));
            }
            if r.len() >= size::EVENT_RESP {
                let _ = write!(s, " ece={}/{}", u32_at(r, 328), u32_at(r, 332));
            }
        }
        _ => {}
    }
    s
}

/// One command and its outcome.
pub fn command(seq: u64, fd: i32, c: u32, a: &[u8], result: Result<(), i32>, resp: Option<&[u8]>) {
    let option = if c == cmd::QUERY && a.len() >= 16 {
        u32_at(a, 12)
    } else {
        0
    };
    if result.is_ok() {
        let mut k = kinds();
        if c == cmd::CREATE_ID && a.len() >= size::CREATE_ID {
            let ps = u16_at(a, 16);
            k.by_uid.insert(u64_at(a, 0), ps);
            if let Some(r) = resp.filter(|r| r.len() >= 4) {
                k.by_id.insert(u32_at(r, 0), ps);
            }
        } else if c == cmd::ACCEPT && a.len() >= size::ACCEPT {
            if let Some(ps) = k.by_id.get(&u32_at(a, 280)).copied() {
                k.by_uid.insert(u64_at(a, 0), ps);
            }
        }
    }
    let res = match result {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("errno={e}"),
    };
    let r = resp.map(|r| response(c, option, r)).unwrap_or_default();
    let line = format!("seq={seq} fd={fd} {} {} -> {res} {r}", name(c), args(c, a));
    emit(line.trim_end());
}

/// What a command names as its response buffer: (address, length).
pub fn response_at(c: u32, a: &[u8], outl: usize) -> Option<(u64, usize)> {
    let at = match c {
        cmd::CREATE_ID if a.len() >= 16 => u64_at(a, 8),
        cmd::DESTROY_ID
        | cmd::QUERY
        | cmd::QUERY_ROUTE
        | cmd::INIT_QP_ATTR
        | cmd::MIGRATE_ID
        | cmd::GET_EVENT
        | cmd::JOIN_IP_MCAST
        | cmd::JOIN_MCAST
        | cmd::LEAVE_MCAST
            if a.len() >= 8 =>
        {
            u64_at(a, 0)
        }
        _ => return None,
    };
    (at != 0 && outl > 0).then_some((at, outl))
}
