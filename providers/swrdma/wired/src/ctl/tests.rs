//! The control messages (round trips at the limits, refusals, random and
//! mutated bytes, descriptors over a real socket pair) and the object
//! tables (each errno rule, two clients, a client's cleanup, the limits,
//! the QP state machine).

use super::msg::*;
use super::tables::*;
use ibverbs_abi::verbs::*;
use libc::{EAGAIN, EBUSY, EFAULT, EINVAL, ENOENT, EOPNOTSUPP};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A small xorshift generator (xorshift64*), so the tests need no crate.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (> 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bit(&mut self) -> bool {
        self.next() & 1 != 0
    }

    /// A u32 that is often a boundary value.
    fn u32(&mut self) -> u32 {
        match self.below(6) {
            0 => 0,
            1 => u32::MAX,
            2 => 1,
            _ => self.next() as u32,
        }
    }

    fn u64(&mut self) -> u64 {
        match self.below(5) {
            0 => 0,
            1 => u64::MAX,
            _ => self.next(),
        }
    }

    fn u8(&mut self) -> u8 {
        self.next() as u8
    }

    /// An optional handle (never `Some(0)`).
    fn opt(&mut self) -> Option<u32> {
        match self.below(3) {
            0 => None,
            1 => Some(u32::MAX),
            _ => Some(self.next() as u32 | 1),
        }
    }

    fn queue(&mut self) -> Queue {
        Queue {
            depth: 1 << self.below(17),
            slot_size: 64 * (1 + self.below(64) as u32),
        }
    }
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

const Q_MIN: Queue = Queue {
    depth: 1,
    slot_size: 64,
};
const Q_MAX: Queue = Queue {
    depth: 65536,
    slot_size: 4096,
};

fn caps_max() -> Caps {
    Caps {
        max_send_wr: u32::MAX,
        max_recv_wr: u32::MAX,
        max_send_sge: u32::MAX,
        max_recv_sge: u32::MAX,
        max_inline_data: u32::MAX,
    }
}

fn ah_max() -> AhAttr {
    AhAttr {
        dgid: [0xff; 16],
        flow_label: u32::MAX,
        sgid_index: 255,
        hop_limit: 255,
        traffic_class: 255,
        is_global: 255,
        dlid: u16::MAX,
        sl: 255,
        src_path_bits: 255,
        static_rate: 255,
        port_num: 255,
    }
}

/// Every field at its largest, the mask every known bit.
fn attr_max() -> QpAttr {
    QpAttr {
        mask: QP_ATTR_KNOWN,
        qp_state: IBV_QPS_ERR as u8,
        cur_qp_state: IBV_QPS_UNKNOWN as u8,
        en_sqd_async_notify: 255,
        qp_access_flags: u32::MAX,
        pkey_index: u16::MAX,
        port_num: 255,
        qkey: u32::MAX,
        ah_attr: ah_max(),
        path_mtu: u32::MAX,
        timeout: 255,
        retry_cnt: 255,
        rnr_retry: 255,
        rq_psn: u32::MAX,
        max_rd_atomic: 255,
        alt_ah_attr: ah_max(),
        alt_pkey_index: u16::MAX,
        alt_port_num: 255,
        alt_timeout: 255,
        min_rnr_timer: 255,
        sq_psn: u32::MAX,
        max_dest_rd_atomic: 255,
        path_mig_state: u32::MAX,
        cap: caps_max(),
        dest_qp_num: u32::MAX,
        rate_limit: u32::MAX,
    }
}

/// `attr`'s fields that `mask` names, with the mask `mask` (the others 0).
fn only(mask: u32, attr: &QpAttr) -> QpAttr {
    let mut o = QpAttr {
        mask,
        ..QpAttr::default()
    };
    QpAttr { mask, ..*attr }.apply_to(&mut o);
    o.mask = mask;
    o
}

/// A multicast GID: IPv4 group 239.1.2.3, as rdma_cm makes it.
const MGID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3];

/// Requests of every kind, with boundary values.
fn request_samples() -> Vec<Request> {
    let mut v = vec![
        Request::AllocPd { parent: None },
        Request::AllocPd { parent: Some(1) },
        Request::AllocPd { parent: Some(u32::MAX) },
        Request::DeallocPd { pd: 0 },
        Request::DeallocPd { pd: u32::MAX },
        Request::DestroyCq { cq: 7 },
        Request::QuerySrq { srq: 1 },
        Request::DestroySrq { srq: u32::MAX },
        Request::DestroyQp { qp: 3 },
        Request::DeregMr { mr: 9 },
        Request::DeallocMw { mw: 2 },
        Request::DestroyAh { ah: 4 },
        Request::AllocXrcd,
        Request::DeallocXrcd { xrcd: 5 },
        Request::AttachMcast {
            qp: 1,
            gid: [0xff; 16],
            lid: u16::MAX,
        },
        Request::AttachMcast {
            qp: 0,
            gid: [0; 16],
            lid: 0,
        },
        Request::DetachMcast {
            qp: u32::MAX,
            gid: MGID,
            lid: 0xc001,
        },
        Request::DetachMcast {
            qp: 1,
            gid: [0; 16],
            lid: 0,
        },
        Request::QueryQp { qp: 1, mask: 0 },
        Request::QueryQp {
            qp: u32::MAX,
            mask: QP_ATTR_KNOWN,
        },
        Request::ModifySrq {
            srq: 1,
            mask: u32::MAX,
            max_wr: u32::MAX,
            srq_limit: 0,
        },
        Request::AllocMw { pd: 1, ty: MwType::One },
        Request::AllocMw {
            pd: u32::MAX,
            ty: MwType::Two,
        },
        Request::CreateAh {
            pd: 1,
            attr: AhAttr::default(),
        },
        Request::CreateAh { pd: 1, attr: ah_max() },
        Request::ResizeCq {
            cq: 1,
            cqe: u32::MAX,
            queue: None,
        },
        Request::ResizeCq {
            cq: 1,
            cqe: 0,
            queue: Some(Q_MAX),
        },
        Request::RegMr(RegMr {
            pd: 1,
            access: u32::MAX,
            addr: u64::MAX,
            length: u64::MAX,
            iova: 0,
        }),
        Request::ReregMr(ReregMr {
            mr: 1,
            flags: IBV_REREG_MR_FLAGS_SUPPORTED,
            pd: None,
            access: u32::MAX,
            addr: u64::MAX,
            length: 0,
        }),
        Request::ReregMr(ReregMr {
            mr: u32::MAX,
            flags: 0,
            pd: Some(u32::MAX),
            access: 0,
            addr: 0,
            length: u64::MAX,
        }),
        Request::ModifyQp {
            qp: 1,
            attr: QpAttr::default(),
        },
        Request::ModifyQp {
            qp: 1,
            attr: attr_max(),
        },
    ];
    for (doorbell, channel) in [(false, false), (true, false), (false, true), (true, true)] {
        v.push(Request::CreateCq(CreateCq {
            user_handle: if doorbell { u64::MAX } else { 0 },
            cqe: u32::MAX,
            queue: if doorbell { Q_MAX } else { Q_MIN },
            doorbell,
            channel,
        }));
    }
    for ty in [SrqType::Basic, SrqType::Xrc] {
        let xrc = ty == SrqType::Xrc;
        v.push(Request::CreateSrq(CreateSrq {
            user_handle: if xrc { u64::MAX } else { 1 },
            pd: if xrc { Some(u32::MAX) } else { None },
            ty,
            xrcd: xrc.then_some(1),
            cq: xrc.then_some(u32::MAX),
            max_wr: u32::MAX,
            max_sge: 0,
            srq_limit: u32::MAX,
            queue: Q_MAX,
        }));
    }
    for (i, qp_type) in QpType::ALL.into_iter().enumerate() {
        v.push(Request::CreateQp(CreateQp {
            user_handle: 0x8000_0000_0000_0000 | i as u64,
            pd: Some(1),
            xrcd: (i % 2 == 0).then_some(u32::MAX),
            qp_type,
            send_cq: Some(2),
            recv_cq: None,
            srq: Some(u32::MAX),
            sq_sig_all: i % 2 == 1,
            cap: if i == 0 { caps_max() } else { Caps::default() },
            sq: (i != 1).then_some(Q_MIN),
            rq: (i >= 2).then_some(Q_MAX),
        }));
    }
    // Each attribute alone.
    for bit in 0..26 {
        v.push(Request::ModifyQp {
            qp: 2,
            attr: only(1 << bit, &attr_max()),
        });
    }
    v
}

/// Replies of every kind, with boundary values.
fn reply_samples() -> Vec<Reply> {
    vec![
        Reply::Err(1),
        Reply::Err(MAX_ERRNO),
        Reply::Done,
        Reply::Pd { handle: 1 },
        Reply::Pd { handle: u32::MAX },
        Reply::Cq {
            handle: 1,
            cqe: u32::MAX,
        },
        Reply::Srq {
            handle: u32::MAX,
            srqn: MAX_NUM,
            max_wr: u32::MAX,
            max_sge: 0,
        },
        Reply::SrqAttr {
            max_wr: 0,
            max_sge: u32::MAX,
            srq_limit: 1,
        },
        Reply::Qp {
            handle: 1,
            qpn: 0,
            cap: caps_max(),
        },
        Reply::QpAttr(attr_max()),
        Reply::QpAttr(QpAttr::default()),
        Reply::Mr {
            handle: 1,
            lkey: 0,
            rkey: u32::MAX,
        },
        Reply::Mw {
            handle: 2,
            rkey: u32::MAX,
        },
        Reply::Ah { handle: u32::MAX },
        Reply::Xrcd { handle: 1 },
    ]
}

#[test]
fn every_request_round_trips() {
    let mut kinds = std::collections::HashSet::new();
    for req in request_samples() {
        for id in [0, 1, u32::MAX] {
            let b = req.encode(id).unwrap_or_else(|e| panic!("{req:?}: {e}"));
            assert!(b.len() <= MAX_MSG && is_ctl(&b));
            let h = Header::parse(&b).unwrap();
            assert_eq!((h.kind, h.nfds, h.id), (req.kind(), req.fd_count(), id));
            assert_eq!(Request::decode(&b), Ok((id, req)), "{req:?}");
            assert_eq!(Reply::decode(&b), Err(MsgError::Kind(req.kind())));
        }
        kinds.insert(req.kind());
    }
    assert_eq!(kinds.len(), 24, "every request kind");
    // The longest message: every attribute.
    let b = Request::ModifyQp {
        qp: 1,
        attr: attr_max(),
    }
    .encode(0)
    .unwrap();
    assert_eq!(b.len(), HEADER + 4 + 136);
}

#[test]
fn every_reply_round_trips() {
    for rep in reply_samples() {
        for id in [0, 7, u32::MAX] {
            let b = rep.encode(id).unwrap_or_else(|e| panic!("{rep:?}: {e}"));
            assert_eq!(Reply::decode(&b), Ok((id, rep)), "{rep:?}");
            assert_eq!(Request::decode(&b), Err(MsgError::Kind(rep.kind())));
            assert_eq!(Header::parse(&b).unwrap().nfds, 0);
        }
    }
}

#[test]
fn body_lengths_are_the_documented_ones() {
    let body = |r: &Request| r.encode(0).unwrap().len() - HEADER;
    assert_eq!(body(&Request::AllocXrcd), 0);
    assert_eq!(body(&Request::AllocPd { parent: None }), 4);
    let cq = CreateCq {
        user_handle: 0xc0,
        cqe: 1,
        queue: Q_MIN,
        doorbell: true,
        channel: true,
    };
    assert_eq!(body(&Request::CreateCq(cq)), 8 + 16);
    let srq = request_samples()
        .into_iter()
        .find(|r| matches!(r, Request::CreateSrq(_)))
        .unwrap();
    assert_eq!(body(&srq), 8 + 36);
    let qp = CreateQp {
        user_handle: 0x90,
        pd: Some(1),
        xrcd: None,
        qp_type: QpType::Rc,
        send_cq: Some(2),
        recv_cq: Some(2),
        srq: None,
        sq_sig_all: false,
        cap: Caps::default(),
        sq: Some(Q_MIN),
        rq: Some(Q_MIN),
    };
    assert_eq!(body(&Request::CreateQp(qp)), 8 + 44 + 16);
    assert_eq!(body(&Request::CreateQp(CreateQp { rq: None, ..qp })), 8 + 44 + 8);
    assert_eq!(body(&Request::CreateAh { pd: 1, attr: ah_max() }), 36);
    for m in [
        Request::AttachMcast {
            qp: 1,
            gid: MGID,
            lid: 2,
        },
        Request::DetachMcast {
            qp: 1,
            gid: MGID,
            lid: 2,
        },
    ] {
        assert_eq!(body(&m), 4 + 16 + 2 + 2, "{m:?}");
        // qp, gid, lid, little-endian, then the padding.
        let b = m.encode(0).unwrap();
        assert_eq!(b[HEADER..HEADER + 4], 1u32.to_le_bytes());
        assert_eq!(b[HEADER + 4..HEADER + 20], MGID);
        assert_eq!(b[HEADER + 20..], [2, 0, 0, 0]);
    }
    assert_eq!(
        body(&Request::RegMr(RegMr {
            pd: 1,
            access: 0,
            addr: 0,
            length: 0,
            iova: 0
        })),
        32
    );
    assert_eq!(Reply::QpAttr(attr_max()).encode(0).unwrap().len(), HEADER + 136);
    assert_eq!(
        Reply::Qp {
            handle: 1,
            qpn: 2,
            cap: Caps::default()
        }
        .encode(0)
        .unwrap()
        .len(),
        HEADER + 28
    );
}

#[test]
fn encoding_refuses_what_it_cannot_carry() {
    use MsgError::*;
    let e = |r: Request| r.encode(1).err();
    assert_eq!(e(Request::AllocPd { parent: Some(0) }), Some(NotCanonical));
    let mut a = QpAttr {
        mask: IBV_QP_STATE,
        qkey: 5,
        ..QpAttr::default()
    };
    assert_eq!(
        e(Request::ModifyQp { qp: 1, attr: a }),
        Some(NotCanonical),
        "a field the mask does not name"
    );
    a.qkey = 0;
    a.qp_state = 7;
    assert_eq!(e(Request::ModifyQp { qp: 1, attr: a }), Some(Range("QP state")));
    let a = QpAttr {
        mask: 1 << 26,
        ..QpAttr::default()
    };
    assert_eq!(
        e(Request::ModifyQp { qp: 1, attr: a }),
        Some(Range("QP attribute mask"))
    );
    let bad_q = Queue {
        depth: 3,
        slot_size: 64,
    };
    let cq = CreateCq {
        user_handle: 0,
        cqe: 1,
        queue: bad_q,
        doorbell: false,
        channel: false,
    };
    assert_eq!(e(Request::CreateCq(cq)), Some(Range("queue geometry")));
    for q in [
        Queue {
            depth: 1 << 17,
            slot_size: 64,
        },
        Queue {
            depth: 1,
            slot_size: 96,
        },
        Queue {
            depth: 1,
            slot_size: 8192,
        },
        Queue {
            depth: 0,
            slot_size: 64,
        },
    ] {
        assert!(e(Request::ResizeCq {
            cq: 1,
            cqe: 1,
            queue: Some(q)
        })
        .is_some());
    }
    let srq = CreateSrq {
        user_handle: 0,
        pd: Some(1),
        ty: SrqType::Basic,
        xrcd: Some(1),
        cq: None,
        max_wr: 1,
        max_sge: 1,
        srq_limit: 0,
        queue: Q_MIN,
    };
    assert!(matches!(e(Request::CreateSrq(srq)), Some(Range(_))));
    let r = |rep: Reply| rep.encode(1).err();
    assert_eq!(r(Reply::Err(0)), Some(Range("errno")));
    assert_eq!(r(Reply::Err(-5)), Some(Range("errno")));
    assert_eq!(r(Reply::Err(MAX_ERRNO + 1)), Some(Range("errno")));
    assert_eq!(r(Reply::Pd { handle: 0 }), Some(Range("handle")));
    assert_eq!(
        r(Reply::Qp {
            handle: 1,
            qpn: MAX_NUM + 1,
            cap: Caps::default()
        }),
        Some(Range("QP or SRQ number"))
    );
}

/// A valid message with byte `at` set to `v`.
fn with(b: &[u8], at: usize, v: u8) -> Vec<u8> {
    let mut c = b.to_vec();
    c[at] = v;
    c
}

#[test]
fn decoding_refuses_bad_headers_and_bodies() {
    use MsgError::*;
    let pd = Request::DeallocPd { pd: 3 }.encode(9).unwrap();
    let d = |b: &[u8]| Request::decode(b).err();
    assert_eq!(d(&[]), Some(Length));
    assert_eq!(d(&pd[..HEADER - 1]), Some(Length));
    assert_eq!(
        d(&pd[..pd.len() - 1]),
        Some(Length),
        "body shorter than its length field"
    );
    let mut long = pd.clone();
    long.push(0);
    assert_eq!(d(&long), Some(Length), "datagram longer than its length field");
    assert_eq!(d(&with(&pd, 1, 2)), Some(Version(2)), "the version before");
    assert_eq!(d(&with(&pd, 1, 4)), Some(Version(4)));
    assert_eq!(d(&with(&pd, 1, 0x52)), Some(Version(0x52)));
    for k in [0u8, 25, 0x3f, 0x40, 0x4b, 0x4c, 0xff] {
        assert_eq!(d(&with(&pd, 0, k)), Some(Kind(k)));
    }
    assert_eq!(d(&with(&pd, 2, 4)), Some(Flags(4)), "more descriptors than any message");
    assert_eq!(d(&with(&pd, 3, 1)), Some(Flags(0x100)));
    assert_eq!(d(&with(&pd, 2, 1)), Some(Fds { want: 0, got: 1 }));
    // A body longer than its fields (length field and datagram agree).
    let mut trailing = pd.clone();
    trailing.push(0);
    trailing[8] += 1;
    assert_eq!(d(&trailing), Some(Body));
    let mut short = pd[..pd.len() - 1].to_vec();
    short[8] -= 1;
    assert_eq!(d(&short), Some(Body));
    // Enumerations, booleans, reserved bytes, flag fields.
    let mw = Request::AllocMw { pd: 1, ty: MwType::One }.encode(0).unwrap();
    for t in [0u8, 3, 255] {
        assert_eq!(d(&with(&mw, HEADER + 4, t)), Some(Range("window type")));
    }
    assert_eq!(d(&with(&mw, HEADER + 7, 1)), Some(Reserved));
    let qp = request_samples()
        .into_iter()
        .find(|r| matches!(r, Request::CreateQp(c) if c.qp_type == QpType::Rc))
        .unwrap()
        .encode(0)
        .unwrap();
    for t in [0u8, 1, 5, 8, 11, 0xff] {
        assert_eq!(d(&with(&qp, HEADER + 28, t)), Some(Range("QP type")), "type {t}");
    }
    assert_eq!(d(&with(&qp, HEADER + 29, 2)), Some(Range("sq_sig_all")));
    assert_eq!(d(&with(&qp, HEADER + 30, 4)), Some(Range("QP queue bits")));
    assert_eq!(d(&with(&qp, HEADER + 31, 1)), Some(Reserved));
    let ah = Request::CreateAh { pd: 1, attr: ah_max() }.encode(0).unwrap();
    assert_eq!(d(&with(&ah, HEADER + 4 + 30, 1)), Some(Reserved));
    assert_eq!(d(&with(&ah, HEADER + 4 + 31, 1)), Some(Reserved));
    let srq = request_samples()
        .into_iter()
        .find(|r| matches!(r, Request::CreateSrq(_)))
        .unwrap()
        .encode(0)
        .unwrap();
    assert_eq!(d(&with(&srq, HEADER + 12, 2)), Some(Range("SRQ type")), "tag matching");
    assert_eq!(d(&with(&srq, HEADER + 13, 1)), Some(Reserved));
    let q = Request::QueryQp { qp: 1, mask: 0 }.encode(0).unwrap();
    assert_eq!(d(&with(&q, HEADER + 7, 4)), Some(Range("QP attribute mask")));
    for k in [kind::ATTACH_MCAST, kind::DETACH_MCAST] {
        let m = with(
            &Request::AttachMcast {
                qp: 1,
                gid: MGID,
                lid: 3,
            }
            .encode(0)
            .unwrap(),
            0,
            k,
        );
        assert!(Request::decode(&m).is_ok());
        assert_eq!(d(&with(&m, HEADER + 22, 1)), Some(Reserved));
        assert_eq!(d(&with(&m, HEADER + 23, 0x80)), Some(Reserved));
        let mut short = m[..m.len() - 2].to_vec();
        short[8] -= 2;
        assert_eq!(d(&short), Some(Body), "without its padding");
        assert_eq!(d(&with(&m, 2, 1)), Some(Fds { want: 0, got: 1 }));
    }
    let rr = Request::ReregMr(ReregMr {
        mr: 1,
        flags: 0,
        pd: None,
        access: 0,
        addr: 0,
        length: 0,
    })
    .encode(0)
    .unwrap();
    assert_eq!(d(&with(&rr, HEADER + 4, 8)), Some(Range("rereg flags")));
    let m = Request::ModifyQp {
        qp: 1,
        attr: only(IBV_QP_STATE | IBV_QP_CUR_STATE, &attr_max()),
    }
    .encode(0)
    .unwrap();
    assert_eq!(d(&with(&m, HEADER + 8, 7)), Some(Range("QP state")));
    assert_eq!(d(&with(&m, HEADER + 9, 8)), Some(Range("current QP state")));
    // Replies.
    let rd = |b: &[u8]| Reply::decode(b).err();
    let err = Reply::Err(5).encode(0).unwrap();
    assert_eq!(rd(&with(&err, HEADER, 0)), Some(Range("errno")));
    assert_eq!(rd(&with(&err, HEADER + 1, 0x10)), Some(Range("errno")));
    let p = Reply::Pd { handle: 1 }.encode(0).unwrap();
    assert_eq!(rd(&with(&p, HEADER, 0)), Some(Range("handle")));
    assert_eq!(rd(&with(&p, 2, 1)), Some(Fds { want: 0, got: 1 }));
}

/// The create requests that carry a user handle (the first sample of
/// each), with user handle `uh`.
fn with_user_handle(uh: u64) -> Vec<Request> {
    let mut v = Vec::new();
    for k in [kind::CREATE_CQ, kind::CREATE_SRQ, kind::CREATE_QP] {
        let r = request_samples().into_iter().find(|r| r.kind() == k).unwrap();
        v.push(match r {
            Request::CreateCq(c) => Request::CreateCq(CreateCq { user_handle: uh, ..c }),
            Request::CreateSrq(c) => Request::CreateSrq(CreateSrq { user_handle: uh, ..c }),
            Request::CreateQp(c) => Request::CreateQp(CreateQp { user_handle: uh, ..c }),
            r => panic!("{r:?}"),
        });
    }
    v
}

#[test]
fn user_handles_are_carried_as_given() {
    use MsgError::*;
    for uh in [0, 1, 0xA001, 0x7fff_1234_5678, 1 << 63, u64::MAX] {
        for req in with_user_handle(uh) {
            let b = req.encode(3).unwrap_or_else(|e| panic!("{req:?}: {e}"));
            assert_eq!(Request::decode(&b), Ok((3, req)), "{req:?}");
            // The body's first 8 bytes, little-endian, as every integer.
            assert_eq!(b[HEADER..HEADER + 8], uh.to_le_bytes(), "{req:?}");
            // Any value is one: another decodes to the same request with it.
            let other = with(&b, HEADER + 7, b[HEADER + 7] ^ 0x80);
            let (_, back) = Request::decode(&other).unwrap();
            let flipped = uh ^ (0x80 << 56);
            let want = match req {
                Request::CreateCq(c) => Request::CreateCq(CreateCq {
                    user_handle: flipped,
                    ..c
                }),
                Request::CreateSrq(c) => Request::CreateSrq(CreateSrq {
                    user_handle: flipped,
                    ..c
                }),
                Request::CreateQp(c) => Request::CreateQp(CreateQp {
                    user_handle: flipped,
                    ..c
                }),
                r => panic!("{r:?}"),
            };
            assert_eq!(back, want);
            assert_eq!(want.encode(3).unwrap(), other, "what decodes encodes back");
        }
    }
    for req in with_user_handle(0xA001) {
        let b = req.encode(0).unwrap();
        let body = b.len() - HEADER;
        // A body cut inside the user handle (its length field agreeing).
        for keep in [0, 1, 4, 7] {
            let mut cut = b[..HEADER + keep].to_vec();
            cut[8..12].copy_from_slice(&(keep as u32).to_le_bytes());
            assert_eq!(Request::decode(&cut), Err(Body), "{req:?} cut at {keep}");
        }
        // The layout without the user handle is no longer a request.
        let mut old = b[..HEADER].to_vec();
        old.extend_from_slice(&b[HEADER + 8..]);
        old[8..12].copy_from_slice(&((body - 8) as u32).to_le_bytes());
        assert!(Request::decode(&old).is_err(), "{req:?} without its user handle");
        // A user handle more is too long.
        let mut long = b[..HEADER].to_vec();
        long.extend_from_slice(&b[HEADER..HEADER + 8]);
        long.extend_from_slice(&b[HEADER..]);
        long[8..12].copy_from_slice(&((body + 8) as u32).to_le_bytes());
        assert!(Request::decode(&long).is_err(), "{req:?} with two user handles");
    }
}

#[test]
fn hello_messages_are_not_control_messages() {
    let hello = crate::proto::Hello {
        pid: 1,
        flags: 0,
        probe_addr: 0,
        probe_value: 0,
    }
    .to_bytes();
    assert!(!is_ctl(&hello));
    assert!(Request::decode(&hello).is_err());
    assert!(!is_ctl(&crate::proto::bare(crate::proto::kind::QUERY)));
    assert!(is_ctl(&Request::AllocXrcd.encode(0).unwrap()));
}

#[test]
fn replies_answer_their_requests() {
    let pairs = [
        (kind::ALLOC_PD, kind::PD),
        (kind::CREATE_CQ, kind::CQ),
        (kind::CREATE_SRQ, kind::SRQ),
        (kind::QUERY_SRQ, kind::SRQ_ATTR),
        (kind::CREATE_QP, kind::QP),
        (kind::QUERY_QP, kind::QP_ATTR),
        (kind::REG_MR, kind::MR),
        (kind::ALLOC_MW, kind::MW),
        (kind::CREATE_AH, kind::AH),
        (kind::ALLOC_XRCD, kind::XRCD),
    ];
    for req in request_samples() {
        for rep in reply_samples() {
            let want = pairs.iter().find(|p| p.0 == req.kind()).map_or(kind::DONE, |p| p.1);
            let fits = rep.kind() == kind::ERR || rep.kind() == want;
            assert_eq!(rep.answers(req.kind()), fits, "{req:?} {rep:?}");
        }
    }
    assert!(!Reply::Err(1).answers(kind::ERR), "a reply answers no reply");
}

#[test]
fn qp_attr_converts_to_and_from_the_verbs_struct() {
    // SAFETY: `ibv_qp_attr` is integers, integer unions and arrays: any
    // bytes are a valid value.
    let mut v: ibv_qp_attr = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the bytes written are the struct's own.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(
            &mut v as *mut ibv_qp_attr as *mut u8,
            std::mem::size_of::<ibv_qp_attr>(),
        )
    };
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(37) | 1;
    }
    v.qp_state = IBV_QPS_RTS;
    v.cur_qp_state = IBV_QPS_UNKNOWN;
    let a = QpAttr::from_verbs(QP_ATTR_KNOWN, &v).unwrap();
    let back = a.to_verbs();
    assert_eq!(QpAttr::from_verbs(QP_ATTR_KNOWN, &back), Ok(a));
    assert_eq!(
        (back.qkey, back.sq_psn, back.rate_limit),
        (v.qkey, v.sq_psn, v.rate_limit)
    );
    assert_eq!(AhAttr::from(&back.alt_ah_attr), AhAttr::from(&v.alt_ah_attr));
    assert_eq!(Caps::from(back.cap), Caps::from(v.cap));
    // Only the named fields.
    let s = QpAttr::from_verbs(IBV_QP_STATE | IBV_QP_QKEY, &v).unwrap();
    assert_eq!(
        s,
        QpAttr {
            mask: IBV_QP_STATE | IBV_QP_QKEY,
            qp_state: IBV_QPS_RTS as u8,
            qkey: v.qkey,
            ..QpAttr::default()
        }
    );
    assert!(Request::ModifyQp { qp: 1, attr: s }.encode(0).is_ok());
    let mut bad = v;
    bad.qp_state = 0x101;
    assert!(QpAttr::from_verbs(IBV_QP_STATE, &bad).is_err(), "no silent truncation");
    assert!(
        QpAttr::from_verbs(IBV_QP_QKEY, &bad).is_ok(),
        "a field not named is not looked at"
    );
    assert!(QpAttr::from_verbs(1 << 26, &v).is_err());
}

/// A random request the encoder takes.
fn rand_request(r: &mut Rng) -> Request {
    let qp_type = QpType::ALL[r.below(5) as usize];
    match r.below(24) + 1 {
        1 => Request::AllocPd { parent: r.opt() },
        2 => Request::DeallocPd { pd: r.u32() },
        3 => Request::CreateCq(CreateCq {
            user_handle: r.u64(),
            cqe: r.u32(),
            queue: r.queue(),
            doorbell: r.bit(),
            channel: r.bit(),
        }),
        4 => Request::ResizeCq {
            cq: r.u32(),
            cqe: r.u32(),
            queue: r.bit().then(|| r.queue()),
        },
        5 => Request::DestroyCq { cq: r.u32() },
        6 => {
            let xrc = r.bit();
            Request::CreateSrq(CreateSrq {
                user_handle: r.u64(),
                pd: r.opt(),
                ty: if xrc { SrqType::Xrc } else { SrqType::Basic },
                xrcd: if xrc { r.opt() } else { None },
                cq: if xrc { r.opt() } else { None },
                max_wr: r.u32(),
                max_sge: r.u32(),
                srq_limit: r.u32(),
                queue: r.queue(),
            })
        }
        7 => Request::ModifySrq {
            srq: r.u32(),
            mask: r.u32(),
            max_wr: r.u32(),
            srq_limit: r.u32(),
        },
        8 => Request::QuerySrq { srq: r.u32() },
        9 => Request::DestroySrq { srq: r.u32() },
        10 => Request::CreateQp(CreateQp {
            user_handle: r.u64(),
            pd: r.opt(),
            xrcd: r.opt(),
            qp_type,
            send_cq: r.opt(),
            recv_cq: r.opt(),
            srq: r.opt(),
            sq_sig_all: r.bit(),
            cap: Caps {
                max_send_wr: r.u32(),
                max_recv_wr: r.u32(),
                max_send_sge: r.u32(),
                max_recv_sge: r.u32(),
                max_inline_data: r.u32(),
            },
            sq: r.bit().then(|| r.queue()),
            rq: r.bit().then(|| r.queue()),
        }),
        11 => Request::ModifyQp {
            qp: r.u32(),
            attr: rand_attr(r),
        },
        12 => Request::QueryQp {
            qp: r.u32(),
            mask: r.u32() & QP_ATTR_KNOWN,
        },
        13 => Request::DestroyQp { qp: r.u32() },
        14 => Request::RegMr(RegMr {
            pd: r.u32(),
            access: r.u32(),
            addr: r.u64(),
            length: r.u64(),
            iova: r.u64(),
        }),
        15 => Request::ReregMr(ReregMr {
            mr: r.u32(),
            flags: r.u32() & IBV_REREG_MR_FLAGS_SUPPORTED,
            pd: r.opt(),
            access: r.u32(),
            addr: r.u64(),
            length: r.u64(),
        }),
        16 => Request::DeregMr { mr: r.u32() },
        17 => Request::AllocMw {
            pd: r.u32(),
            ty: if r.bit() { MwType::One } else { MwType::Two },
        },
        18 => Request::DeallocMw { mw: r.u32() },
        19 => Request::CreateAh {
            pd: r.u32(),
            attr: rand_ah(r),
        },
        20 => Request::DestroyAh { ah: r.u32() },
        21 => Request::AllocXrcd,
        22 => Request::DeallocXrcd { xrcd: r.u32() },
        n => {
            let mut gid = [0u8; 16];
            gid.iter_mut().for_each(|b| *b = r.u8());
            if r.bit() {
                gid = MGID;
            }
            let (qp, lid) = (r.u32(), r.next() as u16);
            if n == 23 {
                Request::AttachMcast { qp, gid, lid }
            } else {
                Request::DetachMcast { qp, gid, lid }
            }
        }
    }
}

fn rand_ah(r: &mut Rng) -> AhAttr {
    let mut dgid = [0u8; 16];
    dgid.iter_mut().for_each(|b| *b = r.u8());
    AhAttr {
        dgid,
        flow_label: r.u32(),
        sgid_index: r.u8(),
        hop_limit: r.u8(),
        traffic_class: r.u8(),
        is_global: r.u8(),
        dlid: r.next() as u16,
        sl: r.u8(),
        src_path_bits: r.u8(),
        static_rate: r.u8(),
        port_num: r.u8(),
    }
}

/// Random attributes: every field random, then only those a random mask
/// names kept.
fn rand_attr(r: &mut Rng) -> QpAttr {
    let all = QpAttr {
        mask: QP_ATTR_KNOWN,
        qp_state: r.below(7) as u8,
        cur_qp_state: r.below(8) as u8,
        en_sqd_async_notify: r.u8(),
        qp_access_flags: r.u32(),
        pkey_index: r.next() as u16,
        port_num: r.u8(),
        qkey: r.u32(),
        ah_attr: rand_ah(r),
        path_mtu: r.u32(),
        timeout: r.u8(),
        retry_cnt: r.u8(),
        rnr_retry: r.u8(),
        rq_psn: r.u32(),
        max_rd_atomic: r.u8(),
        alt_ah_attr: rand_ah(r),
        alt_pkey_index: r.next() as u16,
        alt_port_num: r.u8(),
        alt_timeout: r.u8(),
        min_rnr_timer: r.u8(),
        sq_psn: r.u32(),
        max_dest_rd_atomic: r.u8(),
        path_mig_state: r.u32(),
        cap: Caps {
            max_send_wr: r.u32(),
            max_recv_wr: r.u32(),
            max_send_sge: r.u32(),
            max_recv_sge: r.u32(),
            max_inline_data: r.u32(),
        },
        dest_qp_num: r.u32(),
        rate_limit: r.u32(),
    };
    only(r.next() as u32 & QP_ATTR_KNOWN, &all)
}

/// A random reply the encoder takes.
fn rand_reply(r: &mut Rng) -> Reply {
    let h = r.next() as u32 | 1;
    let num = r.below(MAX_NUM as u64 + 1) as u32;
    match r.below(12) {
        0 => Reply::Err(1 + r.below(MAX_ERRNO as u64) as i32),
        1 => Reply::Done,
        2 => Reply::Pd { handle: h },
        3 => Reply::Cq {
            handle: h,
            cqe: r.u32(),
        },
        4 => Reply::Srq {
            handle: h,
            srqn: num,
            max_wr: r.u32(),
            max_sge: r.u32(),
        },
        5 => Reply::SrqAttr {
            max_wr: r.u32(),
            max_sge: r.u32(),
            srq_limit: r.u32(),
        },
        6 => Reply::Qp {
            handle: h,
            qpn: num,
            cap: Caps {
                max_send_wr: r.u32(),
                ..Caps::default()
            },
        },
        7 => Reply::QpAttr(rand_attr(r)),
        8 => Reply::Mr {
            handle: h,
            lkey: r.u32(),
            rkey: r.u32(),
        },
        9 => Reply::Mw {
            handle: h,
            rkey: r.u32(),
        },
        10 => Reply::Ah { handle: h },
        _ => Reply::Xrcd { handle: h },
    }
}

/// `b` changed a little: bytes flipped or set, cut, or lengthened (the
/// header's length field sometimes kept consistent).
fn mutate(r: &mut Rng, b: &mut Vec<u8>) {
    for _ in 0..1 + r.below(3) {
        match r.below(6) {
            0 | 1 if !b.is_empty() => {
                let i = r.below(b.len() as u64) as usize;
                b[i] ^= 1 << r.below(8);
            }
            2 if !b.is_empty() => {
                let i = r.below(b.len() as u64) as usize;
                b[i] = [0, 1, 0xff, r.u8()][r.below(4) as usize];
            }
            3 => {
                let n = r.below(b.len() as u64 + 1) as usize;
                b.truncate(n);
            }
            4 => {
                for _ in 0..1 + r.below(8) {
                    b.push(r.u8());
                }
            }
            _ => {}
        }
        if b.len() >= HEADER && r.bit() {
            let body = (b.len() - HEADER) as u32;
            b[8..12].copy_from_slice(&body.to_le_bytes());
        }
    }
}

/// Random and mutated bytes never panic a decoder, and whatever a decoder
/// takes encodes back to the same bytes.
#[test]
fn random_and_mutated_bytes() {
    let mut r = Rng::new(SEED);
    let (mut took, mut refused) = (0u32, 0u32);
    let check = |b: &[u8], took: &mut u32, refused: &mut u32| {
        match Request::decode(b) {
            Ok((id, req)) => {
                *took += 1;
                assert_eq!(req.encode(id).as_deref(), Ok(b), "{req:?}");
            }
            Err(_) => *refused += 1,
        }
        if let Ok((id, rep)) = Reply::decode(b) {
            assert_eq!(rep.encode(id).as_deref(), Ok(b), "{rep:?}");
        }
    };
    for i in 0..250_000u32 {
        let mut b = if i % 2 == 0 {
            rand_request(&mut r)
                .encode(r.next() as u32)
                .expect("a valid request encodes")
        } else {
            rand_reply(&mut r)
                .encode(r.next() as u32)
                .expect("a valid reply encodes")
        };
        check(&b, &mut took, &mut refused);
        mutate(&mut r, &mut b);
        check(&b, &mut took, &mut refused);
    }
    // Bytes with nothing of a message but, often, a valid first word.
    for _ in 0..150_000 {
        let n = r.below(200) as usize;
        let mut b: Vec<u8> = (0..n).map(|_| r.u8()).collect();
        if n >= HEADER && r.bit() {
            b[0] = r.below(0x50) as u8;
            b[1] = VERSION;
            b[2] = r.below(4) as u8;
            b[3] = 0;
            let body = (n - HEADER) as u32;
            b[8..12].copy_from_slice(&body.to_le_bytes());
        }
        check(&b, &mut took, &mut refused);
    }
    assert!(took > 150_000 && refused > 150_000, "took {took}, refused {refused}");
}

/// The generator's seed (a constant, so that a failure repeats).
const SEED: u64 = 0x5eed_0c71;

// ---------------------------------------------------------------------------
// Descriptors over a socket pair
// ---------------------------------------------------------------------------

fn seqpacket_pair() -> (OwnedFd, OwnedFd) {
    use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
    socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None).unwrap()
}

fn memfd(name: &str) -> OwnedFd {
    rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC).unwrap()
}

/// The descriptors this process has open.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    let (x, y) = (rustix::fs::fstat(a).unwrap(), rustix::fs::fstat(b).unwrap());
    (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino)
}

/// Sends `b` with `fds` as they are (no check of the header's count).
fn raw_send(sock: BorrowedFd<'_>, b: &[u8], fds: &[BorrowedFd<'_>]) {
    use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    let mut space = vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(fds.len().max(1)))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() {
        assert!(cmsg.push(SendAncillaryMessage::ScmRights(fds)));
    }
    let n = sendmsg(sock, &[std::io::IoSlice::new(b)], &mut cmsg, SendFlags::NOSIGNAL).unwrap();
    assert_eq!(n, b.len());
}

/// `n` pipes: the read ends, and the write ends to send.  A read end sees
/// the end of its pipe only when every copy of its write end is closed.
fn pipes(n: usize) -> (Vec<OwnedFd>, Vec<OwnedFd>) {
    (0..n).map(|_| rustix::pipe::pipe().unwrap()).unzip()
}

/// Every pipe has ended: no copy of a write end is left open anywhere.
fn all_ended(rd: &[OwnedFd]) -> bool {
    rd.iter().all(|r| {
        let _ = rustix::io::ioctl_fionbio(r, true);
        rustix::io::read(r, &mut [0u8; 1]) == Ok(0)
    })
}

/// The descriptor checks, alone in a forked child so that the count of
/// /proc/self/fd is ours only (other tests' threads open descriptors).
fn fd_checks() {
    let before = open_fds();
    let (x, y) = seqpacket_pair();
    fd_cases(x.as_fd(), y.as_fd());
    drop((x, y));
    assert_eq!(
        open_fds(),
        before,
        "every descriptor a case opened or received is closed"
    );
}

/// The cases of [`fd_checks`] on the connected pair `a`, `b`: each closes
/// what it opens.
fn fd_cases(a: BorrowedFd<'_>, b: BorrowedFd<'_>) {
    // A QP with its two queues.
    let qp = CreateQp {
        user_handle: 0x7fff_0000_1000,
        pd: Some(1),
        xrcd: None,
        qp_type: QpType::Rc,
        send_cq: Some(2),
        recv_cq: Some(2),
        srq: None,
        sq_sig_all: false,
        cap: Caps::default(),
        sq: Some(Q_MIN),
        rq: Some(Q_MAX),
    };
    let (sq, rq) = (memfd("sq"), memfd("rq"));
    send_request(a, 42, &Request::CreateQp(qp), &[sq.as_fd(), rq.as_fd()]).unwrap();
    let (id, req, fds) = recv_request(b).unwrap();
    assert_eq!((id, req, fds.len()), (42, Request::CreateQp(qp), 2));
    assert!(
        same_file(fds[0].as_fd(), sq.as_fd()) && same_file(fds[1].as_fd(), rq.as_fd()),
        "in order"
    );
    for f in &fds {
        let fl = rustix::io::fcntl_getfd(f).unwrap();
        assert!(fl.contains(rustix::io::FdFlags::CLOEXEC), "close-on-exec");
    }
    drop(fds);
    // A CQ with its doorbell and channel: three.
    let cq = Request::CreateCq(CreateCq {
        user_handle: 0x7fff_0000_2000,
        cqe: 8,
        queue: Q_MIN,
        doorbell: true,
        channel: true,
    });
    let (q, bell, chan) = (memfd("cq"), memfd("bell"), memfd("chan"));
    send_request(a, 1, &cq, &[q.as_fd(), bell.as_fd(), chan.as_fd()]).unwrap();
    let (_, _, fds) = recv_request(b).unwrap();
    assert!(same_file(fds[2].as_fd(), chan.as_fd()));
    drop(fds);
    // The reply, the other way.
    send_reply(
        b,
        42,
        &Reply::Qp {
            handle: 5,
            qpn: 0x11,
            cap: Caps::default(),
        },
    )
    .unwrap();
    assert_eq!(recv_reply(a).unwrap().0, 42);
    // The sender refuses another count; nothing goes.
    let e = send_request(a, 2, &Request::CreateQp(qp), &[sq.as_fd()]);
    assert_eq!(e, Err(MsgError::Fds { want: 2, got: 1 }));
    let e = send_request(a, 2, &Request::AllocXrcd, &[sq.as_fd()]);
    assert_eq!(e, Err(MsgError::Fds { want: 0, got: 1 }));
    // The receiver refuses another count and closes all that came.
    let one = Request::ResizeCq {
        cq: 1,
        cqe: 1,
        queue: Some(Q_MIN),
    }
    .encode(3)
    .unwrap();
    for (msg, n, want) in [
        (&one, 2, 1),
        (&one, 0, 1),
        (&Request::AllocXrcd.encode(4).unwrap(), 3, 0),
    ] {
        let (rd, wr) = pipes(n);
        let wfds: Vec<BorrowedFd<'_>> = wr.iter().map(|w| w.as_fd()).collect();
        raw_send(a, msg, &wfds);
        drop(wfds);
        drop(wr);
        assert!(n == 0 || !all_ended(&rd), "in flight, the copies hold the pipes open");
        assert_eq!(recv_request(b).err(), Some(MsgError::Fds { want, got: n }));
        assert!(all_ended(&rd), "the descriptors that came were closed");
    }
    // More than the receive has room for, a datagram too long, bytes that
    // are no message: refused, nothing kept.
    let (rd12, wr) = pipes(12);
    let wfds: Vec<BorrowedFd<'_>> = wr.iter().map(|w| w.as_fd()).collect();
    raw_send(a, &one, &wfds);
    assert_eq!(recv_request(b).err(), Some(MsgError::Truncated));
    raw_send(a, &[0u8; MAX_MSG + 50], &wfds[..1]);
    assert_eq!(recv_request(b).err(), Some(MsgError::Truncated));
    raw_send(a, b"not a message", &wfds[..2]);
    assert_eq!(recv_request(b).err(), Some(MsgError::Version(b'o')));
    drop(wfds);
    drop(wr);
    assert!(all_ended(&rd12));
    drop(rd12);
    // A reply with a descriptor is refused as well.
    let (rd, wr) = pipes(1);
    let mut done = Reply::Done.encode(6).unwrap();
    done[2] = 1;
    raw_send(b, &done, &[wr[0].as_fd()]);
    drop(wr);
    assert_eq!(recv_reply(a).err(), Some(MsgError::Fds { want: 0, got: 1 }));
    assert!(all_ended(&rd));
    drop(rd);
    // The peer's close.
    drop((sq, rq, q, bell, chan));
    let (c, d) = seqpacket_pair();
    drop(c);
    assert_eq!(recv_reply(d.as_fd()).err(), Some(MsgError::Closed));
}

/// The descriptors: the right count arrives in order, another count is
/// refused both ways, extras are closed, nothing leaks.
#[test]
fn descriptors_over_a_socket_pair() {
    let (rd, wr) = rustix::pipe::pipe().unwrap();
    // SAFETY: the child runs `fd_checks` (system calls and allocation,
    // which glibc's fork makes safe; no lock of ours) and ends with
    // `_exit`, never returning into the test harness.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        drop(rd);
        let msg = match std::panic::catch_unwind(fd_checks) {
            Ok(()) => String::new(),
            Err(p) => p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into()),
        };
        let _ = rustix::io::write(&wr, msg.as_bytes());
        // SAFETY: ends the child without running the test harness.
        unsafe { libc::_exit(if msg.is_empty() { 0 } else { 1 }) };
    }
    drop(wr);
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    while let Ok(n) = rustix::io::read(&rd, &mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    let text = String::from_utf8_lossy(&out);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child: {text}"
    );
}

// ---------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------

/// The hooks of the table tests: numbers from a counter (or a fixed one),
/// and the engine's answers as set.
struct H {
    next: u32,
    fixed: Option<Result<u32, i32>>,
    freed: Vec<u32>,
    gids: usize,
    path: bool,
    mapped: Result<(), i32>,
    pending: u32,
    posted: u32,
    /// The groups joined and left, (QPN, MGID), in order.
    joins: Vec<(u32, [u8; 16])>,
    leaves: Vec<(u32, [u8; 16])>,
    /// `join_group`'s answer when set.
    join_err: Option<i32>,
}

impl H {
    fn new() -> H {
        H {
            next: 0x10,
            fixed: None,
            freed: Vec::new(),
            gids: 2,
            path: true,
            mapped: Ok(()),
            pending: 0,
            posted: 0,
            joins: Vec::new(),
            leaves: Vec::new(),
            join_err: None,
        }
    }
}

impl Hooks for H {
    fn alloc_num(&mut self) -> Result<u32, i32> {
        if let Some(f) = self.fixed {
            return f;
        }
        self.next += 1;
        Ok(self.next)
    }

    fn free_num(&mut self, num: u32) {
        self.freed.push(num);
    }

    fn gid_count(&self) -> usize {
        self.gids
    }

    fn path_ok(&self, _ah: &AhAttr) -> bool {
        self.path
    }

    fn check_mapped(&self, _client: ClientId, _addr: u64, _len: u64, _writable: bool) -> Result<(), i32> {
        self.mapped
    }

    fn cq_pending(&self, _client: ClientId, _cq: u32) -> u32 {
        self.pending
    }

    fn srq_posted(&self, _client: ClientId, _srq: u32) -> u32 {
        self.posted
    }

    fn join_group(&mut self, qpn: u32, mgid: &[u8; 16]) -> Result<(), i32> {
        if let Some(e) = self.join_err {
            return Err(e);
        }
        self.joins.push((qpn, *mgid));
        Ok(())
    }

    fn leave_group(&mut self, qpn: u32, mgid: &[u8; 16]) {
        self.leaves.push((qpn, *mgid));
    }
}

/// Tables with clients 1 and 2, and the hooks.
struct T {
    t: Tables,
    h: H,
}

impl T {
    fn new(limits: Limits) -> T {
        let mut t = Tables::new(limits);
        assert!(t.add_client(1) && t.add_client(2));
        T { t, h: H::new() }
    }

    fn x(&mut self, c: ClientId, req: Request) -> Reply {
        self.t.exec(c, &req, &mut self.h)
    }

    /// The errno of a request that must fail.
    fn err(&mut self, c: ClientId, req: Request) -> i32 {
        match self.x(c, req) {
            Reply::Err(e) => e,
            r => panic!("{req:?} gave {r:?}"),
        }
    }

    fn done(&mut self, c: ClientId, req: Request) {
        assert_eq!(self.x(c, req), Reply::Done, "{req:?}");
    }

    fn pd(&mut self, c: ClientId) -> u32 {
        match self.x(c, Request::AllocPd { parent: None }) {
            Reply::Pd { handle } => handle,
            r => panic!("{r:?}"),
        }
    }

    fn cq(&mut self, c: ClientId) -> u32 {
        match self.x(c, Request::CreateCq(cq_req(16))) {
            Reply::Cq { handle, .. } => handle,
            r => panic!("{r:?}"),
        }
    }

    /// A QP, its handle and number.
    fn qp(&mut self, c: ClientId, q: CreateQp) -> (u32, u32) {
        match self.x(c, Request::CreateQp(q)) {
            Reply::Qp { handle, qpn, .. } => (handle, qpn),
            r => panic!("{q:?}: {r:?}"),
        }
    }

    /// A basic SRQ, its handle and number.
    fn srq(&mut self, c: ClientId, pd: u32) -> (u32, u32) {
        match self.x(c, Request::CreateSrq(srq_req(pd))) {
            Reply::Srq { handle, srqn, .. } => (handle, srqn),
            r => panic!("{r:?}"),
        }
    }

    /// An MR of `len` bytes at `addr`: its handle and key.
    fn mr(&mut self, c: ClientId, pd: u32, addr: u64, len: u64, access: u32) -> (u32, u32) {
        match self.x(c, Request::RegMr(mr_req(pd, addr, len, access))) {
            Reply::Mr { handle, lkey, rkey } => {
                assert_eq!(lkey, rkey);
                (handle, lkey)
            }
            r => panic!("{r:?}"),
        }
    }

    fn client(&self, c: ClientId) -> &Client {
        self.t.client(c).unwrap()
    }
}

fn cq_req(cqe: u32) -> CreateCq {
    CreateCq {
        user_handle: 0xc000 + cqe as u64,
        cqe,
        queue: Q_MIN,
        doorbell: false,
        channel: false,
    }
}

fn srq_req(pd: u32) -> CreateSrq {
    CreateSrq {
        user_handle: 0x5000 + pd as u64,
        pd: Some(pd),
        ty: SrqType::Basic,
        xrcd: None,
        cq: None,
        max_wr: 64,
        max_sge: 2,
        srq_limit: 0,
        queue: Q_MIN,
    }
}

fn mr_req(pd: u32, addr: u64, length: u64, access: u32) -> RegMr {
    RegMr {
        pd,
        access,
        addr,
        length,
        iova: addr,
    }
}

/// A QP of type `qpt` on `pd` completing into `cq`, with the queues its
/// type needs.
fn qp_req(qpt: QpType, pd: u32, cq: u32) -> CreateQp {
    let (sends, recvs) = qp_queues(qpt, false);
    CreateQp {
        user_handle: 0x9000 + pd as u64,
        pd: Some(pd),
        xrcd: None,
        qp_type: qpt,
        send_cq: Some(cq),
        recv_cq: Some(cq),
        srq: None,
        sq_sig_all: false,
        cap: Caps {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        sq: sends.then_some(Q_MIN),
        rq: recvs.then_some(Q_MIN),
    }
}

const WIRE: Limits = Limits::WIRE;
const XRC: Limits = Limits {
    xrc: true,
    ..Limits::WIRE
};

#[test]
fn handles_name_one_object_of_one_client() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let cq = t.cq(1);
    assert_eq!((pd, cq), (1, 2), "one sequence for every kind, from 1");
    assert_eq!(t.err(1, Request::DeallocPd { pd: cq }), EINVAL, "a CQ named as a PD");
    assert_eq!(t.err(1, Request::DestroyCq { cq: pd }), EINVAL);
    assert_eq!(t.err(1, Request::DeallocPd { pd: 0 }), ENOENT);
    assert_eq!(t.err(1, Request::DeallocPd { pd: 999 }), ENOENT);
    // Client 2's handle 1 is its own object; client 1's CQ is not its.
    let cq2 = t.cq(2);
    assert_eq!(cq2, 1);
    assert_eq!(t.err(2, Request::DestroyCq { cq: 2 }), ENOENT, "another client's CQ");
    assert_eq!(t.err(2, Request::DeallocPd { pd: 1 }), EINVAL, "its handle 1 is a CQ");
    assert_eq!(
        t.err(2, Request::CreateQp(qp_req(QpType::Rc, 2, 1))),
        ENOENT,
        "client 1's PD 2"
    );
    assert_eq!(
        t.err(2, Request::CreateQp(qp_req(QpType::Rc, 1, 1))),
        EINVAL,
        "its handle 1 is a CQ"
    );
    t.done(1, Request::DestroyCq { cq });
    assert_eq!(t.err(1, Request::DestroyCq { cq }), ENOENT, "destroyed already");
    assert_eq!(t.client(2).count(Kind::Cq), 1);
    assert_eq!(t.client(1).kind_of(pd), Some(Kind::Pd));
    assert_eq!(
        t.t.exec(9, &Request::AllocXrcd, &mut t.h),
        Reply::Err(ENOENT),
        "no such client"
    );
}

#[test]
fn dealloc_pd_is_busy_while_anything_uses_it() {
    let mut t = T::new(WIRE);
    let cq = t.cq(1);
    type Make = fn(&mut T, u32, u32) -> Request;
    let users: [(&str, Make); 6] = [
        ("QP", |t, pd, cq| Request::DestroyQp {
            qp: t.qp(1, qp_req(QpType::Rc, pd, cq)).0,
        }),
        ("SRQ", |t, pd, _| Request::DestroySrq { srq: t.srq(1, pd).0 }),
        ("MR", |t, pd, _| Request::DeregMr {
            mr: t.mr(1, pd, 0x1000, 64, 0).0,
        }),
        ("MW", |t, pd, _| {
            match t.x(1, Request::AllocMw { pd, ty: MwType::Two }) {
                Reply::Mw { handle, .. } => Request::DeallocMw { mw: handle },
                r => panic!("{r:?}"),
            }
        }),
        ("AH", |t, pd, _| {
            match t.x(1, Request::CreateAh { pd, attr: good_av() }) {
                Reply::Ah { handle } => Request::DestroyAh { ah: handle },
                r => panic!("{r:?}"),
            }
        }),
        ("parent domain", |t, pd, _| {
            match t.x(1, Request::AllocPd { parent: Some(pd) }) {
                Reply::Pd { handle } => Request::DeallocPd { pd: handle },
                r => panic!("{r:?}"),
            }
        }),
    ];
    for (what, make) in users {
        let pd = t.pd(1);
        let undo = make(&mut t, pd, cq);
        assert_eq!(t.client(1).pd(pd).unwrap().users(), 1, "{what}");
        assert_eq!(t.err(1, Request::DeallocPd { pd }), EBUSY, "{what}");
        t.done(1, undo);
        assert_eq!(t.client(1).pd(pd).unwrap().users(), 0, "{what}");
        t.done(1, Request::DeallocPd { pd });
    }
}

#[test]
fn parent_domains() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let cq = t.cq(1);
    let Reply::Pd { handle: par } = t.x(1, Request::AllocPd { parent: Some(pd) }) else {
        panic!()
    };
    assert_eq!(t.client(1).pd(par).unwrap().pd_id, pd, "the same protection domain");
    assert_eq!(t.err(1, Request::AllocPd { parent: Some(cq) }), EINVAL, "not a PD");
    assert_eq!(
        t.err(1, Request::AllocPd { parent: Some(77) }),
        EINVAL,
        "EINVAL, not ENOENT"
    );
    // An MR on the parent domain is checked against its PD's domain, and
    // holds the parent domain.
    let (mr, key) = t.mr(1, par, 0x1000, 64, 0);
    assert_eq!(t.client(1).keys().get(key).unwrap().pd, pd);
    assert_eq!(t.err(1, Request::DeallocPd { pd: par }), EBUSY);
    t.done(1, Request::DeregMr { mr });
    t.done(1, Request::DeallocPd { pd: par });
    t.done(1, Request::DeallocPd { pd });
}

#[test]
fn destroy_cq_is_busy_while_a_qp_or_srq_completes_into_it() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let (scq, rcq) = (t.cq(1), t.cq(1));
    let q = CreateQp {
        recv_cq: Some(rcq),
        ..qp_req(QpType::Rc, pd, scq)
    };
    let (qp, _) = t.qp(1, q);
    assert_eq!(t.err(1, Request::DestroyCq { cq: scq }), EBUSY, "send CQ");
    assert_eq!(t.err(1, Request::DestroyCq { cq: rcq }), EBUSY, "receive CQ");
    t.done(1, Request::DestroyQp { qp });
    // One CQ for both: two uses.
    let (qp, _) = t.qp(1, qp_req(QpType::Ud, pd, scq));
    assert_eq!(t.client(1).cq(scq).unwrap().users(), 2);
    t.done(1, Request::DestroyQp { qp });
    // An XRC SRQ's CQ.
    let Reply::Xrcd { handle: x } = t.x(1, Request::AllocXrcd) else {
        panic!()
    };
    let s = CreateSrq {
        ty: SrqType::Xrc,
        xrcd: Some(x),
        cq: Some(scq),
        ..srq_req(pd)
    };
    let Reply::Srq { handle: srq, .. } = t.x(1, Request::CreateSrq(s)) else {
        panic!()
    };
    assert_eq!(t.err(1, Request::DestroyCq { cq: scq }), EBUSY, "XRC SRQ");
    t.done(1, Request::DestroySrq { srq });
    for cq in [scq, rcq] {
        t.done(1, Request::DestroyCq { cq });
    }
}

#[test]
fn create_qp_rules() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let cq = t.cq(1);
    let rc = qp_req(QpType::Rc, pd, cq);
    for qpt in [QpType::XrcSend, QpType::XrcRecv] {
        let q = CreateQp {
            pd: None,
            qp_type: qpt,
            ..rc
        };
        assert_eq!(t.err(1, Request::CreateQp(q)), EOPNOTSUPP, "no XRC on the wire");
    }
    assert_eq!(
        t.err(1, Request::CreateQp(CreateQp { pd: None, ..rc })),
        EINVAL,
        "no PD"
    );
    assert_eq!(
        t.err(1, Request::CreateQp(CreateQp { pd: Some(cq), ..rc })),
        EINVAL,
        "a CQ as PD"
    );
    assert_eq!(t.err(1, Request::CreateQp(CreateQp { pd: Some(50), ..rc })), ENOENT);
    let bad = |f: fn(&mut CreateQp)| {
        let mut q = rc;
        f(&mut q);
        q
    };
    type Case = (fn(&mut CreateQp), i32, &'static str);
    let cases: [Case; 14] = [
        (|q| q.send_cq = None, EINVAL, "no send CQ"),
        (|q| q.recv_cq = None, EINVAL, "no receive CQ"),
        (|q| q.send_cq = Some(1), EINVAL, "a PD as send CQ"),
        (|q| q.recv_cq = Some(40), ENOENT, "no such receive CQ"),
        (|q| q.srq = Some(41), ENOENT, "no such SRQ"),
        (|q| q.srq = Some(1), EINVAL, "a PD as SRQ"),
        (|q| q.cap.max_send_wr = 16385, EINVAL, "max_send_wr"),
        (|q| q.cap.max_recv_wr = 16385, EINVAL, "max_recv_wr"),
        (|q| q.cap.max_send_sge = 33, EINVAL, "max_send_sge"),
        (|q| q.cap.max_recv_sge = 33, EINVAL, "max_recv_sge"),
        (|q| q.cap.max_inline_data = 1025, EINVAL, "max_inline_data"),
        (|q| q.sq = None, EINVAL, "no send queue"),
        (|q| q.rq = None, EINVAL, "no receive queue"),
        (
            |q| {
                q.cap.max_send_wr = 1 << 20;
                q.pd = Some(60);
            },
            ENOENT,
            "the lookups come before the caps",
        ),
    ];
    for (f, e, what) in cases {
        assert_eq!(t.err(1, Request::CreateQp(bad(f))), e, "{what}");
    }
    assert_eq!(t.client(1).count(Kind::Qp), 0);
    // At the limits; the caps as granted.
    let mut q = rc;
    q.cap = Caps {
        max_send_wr: 16384,
        max_recv_wr: 16384,
        max_send_sge: 0,
        max_recv_sge: 32,
        max_inline_data: 0,
    };
    let Reply::Qp { cap, .. } = t.x(1, Request::CreateQp(q)) else {
        panic!()
    };
    assert_eq!(
        cap,
        Caps {
            max_send_wr: 16384,
            max_recv_wr: 16384,
            max_send_sge: 1,
            max_recv_sge: 32,
            max_inline_data: 256,
        }
    );
    assert_eq!(grant_qp_caps(&WIRE, &q), Ok(cap));
    // With an SRQ: no receive queue, no receive CQ needed, no receive caps.
    let (srq, _) = t.srq(1, pd);
    let q = CreateQp {
        srq: Some(srq),
        recv_cq: None,
        rq: None,
        ..rc
    };
    let Reply::Qp { cap, .. } = t.x(1, Request::CreateQp(q)) else {
        panic!()
    };
    assert_eq!((cap.max_recv_wr, cap.max_recv_sge), (0, 0));
    let with_rq = CreateQp { rq: Some(Q_MIN), ..q };
    assert_eq!(
        t.err(1, Request::CreateQp(with_rq)),
        EINVAL,
        "a receive queue besides the SRQ"
    );
}

#[test]
fn xrc_qps_where_the_device_has_them() {
    let mut t = T::new(XRC);
    let pd = t.pd(1);
    let cq = t.cq(1);
    let Reply::Xrcd { handle: x } = t.x(1, Request::AllocXrcd) else {
        panic!()
    };
    let tgt = CreateQp {
        user_handle: 0x9100,
        pd: None,
        xrcd: None,
        qp_type: QpType::XrcRecv,
        send_cq: None,
        recv_cq: None,
        srq: None,
        sq_sig_all: false,
        cap: caps_max(),
        sq: None,
        rq: None,
    };
    assert_eq!(t.err(1, Request::CreateQp(tgt)), EINVAL, "no XRC domain");
    assert_eq!(
        t.err(
            1,
            Request::CreateQp(CreateQp {
                cap: Caps::default(),
                xrcd: Some(pd),
                ..tgt
            })
        ),
        EINVAL
    );
    let tgt = CreateQp {
        cap: Caps {
            max_send_wr: 5,
            ..Caps::default()
        },
        xrcd: Some(x),
        ..tgt
    };
    let Reply::Qp { cap, handle, .. } = t.x(1, Request::CreateQp(tgt)) else {
        panic!()
    };
    assert_eq!(cap, Caps::default(), "a target has no queues");
    assert_eq!(t.client(1).qp(handle).unwrap().pd, None);
    let ini = CreateQp {
        rq: None,
        ..qp_req(QpType::XrcSend, pd, cq)
    };
    let Reply::Qp { cap, .. } = t.x(1, Request::CreateQp(ini)) else {
        panic!()
    };
    assert_eq!((cap.max_recv_wr, cap.max_send_sge), (0, 1));
    // Closing the domain while a QP names it succeeds, as the provider's.
    t.done(1, Request::DeallocXrcd { xrcd: x });
}

#[test]
fn cq_rules() {
    let mut t = T::new(WIRE);
    for cqe in [0, (1 << 20) + 1, u32::MAX] {
        assert_eq!(t.err(1, Request::CreateCq(cq_req(cqe))), EINVAL, "cqe {cqe}");
    }
    assert_eq!(
        t.x(1, Request::CreateCq(cq_req(1 << 20))),
        Reply::Cq {
            handle: 1,
            cqe: 1 << 20
        }
    );
    let cq = t.cq(1);
    let resize = |cq, cqe, queue| Request::ResizeCq { cq, cqe, queue };
    assert_eq!(t.err(1, resize(77, 0, None)), EINVAL, "the depth before the lookup");
    assert_eq!(t.err(1, resize(77, 5, None)), ENOENT);
    t.h.pending = 6;
    assert_eq!(t.err(1, resize(cq, 5, None)), EINVAL, "6 completions do not fit in 5");
    t.done(1, resize(cq, 6, Some(Q_MAX)));
    let c = t.client(1).cq(cq).unwrap();
    assert_eq!((c.cqe, c.queue), (6, Q_MAX));
}

#[test]
fn srq_rules() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let cq = t.cq(1);
    let Reply::Xrcd { handle: x } = t.x(1, Request::AllocXrcd) else {
        panic!()
    };
    let s = srq_req(pd);
    let xrc = CreateSrq {
        ty: SrqType::Xrc,
        xrcd: Some(x),
        cq: Some(cq),
        ..s
    };
    let cases = [
        (CreateSrq { pd: None, ..s }, EINVAL, "no PD"),
        (CreateSrq { cq: None, ..xrc }, EINVAL, "an XRC SRQ without CQ"),
        (CreateSrq { xrcd: None, ..xrc }, EINVAL, "an XRC SRQ without domain"),
        (CreateSrq { pd: Some(90), ..s }, ENOENT, "no such PD"),
        (CreateSrq { cq: Some(pd), ..xrc }, EINVAL, "a PD as CQ"),
        (CreateSrq { xrcd: Some(cq), ..xrc }, EINVAL, "a CQ as XRC domain"),
        (CreateSrq { max_wr: 0, ..s }, EINVAL, "max_wr 0"),
        (CreateSrq { max_wr: 16385, ..s }, EINVAL, "max_wr"),
        (CreateSrq { max_sge: 33, ..s }, EINVAL, "max_sge"),
    ];
    for (c, e, what) in cases {
        assert_eq!(t.err(1, Request::CreateSrq(c)), e, "{what}");
    }
    let Reply::Srq {
        handle: srq,
        srqn,
        max_wr,
        max_sge,
    } = t.x(1, Request::CreateSrq(CreateSrq { max_sge: 0, ..s }))
    else {
        panic!()
    };
    assert_eq!((max_wr, max_sge), (64, 1), "max_sge 0 is granted as 1");
    assert_eq!(t.t.srq_owner(srqn), Some((1, srq)));
    assert_eq!(t.client(1).srq_by_srqn(srqn).map(|s| s.0), Some(srq));
    assert!(matches!(t.x(1, Request::CreateSrq(xrc)), Reply::Srq { .. }));
    let modify = |mask, max_wr, srq_limit| Request::ModifySrq {
        srq,
        mask,
        max_wr,
        srq_limit,
    };
    assert_eq!(t.err(1, modify(IBV_SRQ_MAX_WR, 0, 0)), EINVAL);
    assert_eq!(t.err(1, modify(IBV_SRQ_MAX_WR, 16385, 0)), EINVAL);
    t.h.posted = 10;
    assert_eq!(t.err(1, modify(IBV_SRQ_MAX_WR, 9, 0)), EINVAL, "fewer than it holds");
    assert_eq!(t.err(1, modify(IBV_SRQ_LIMIT, 0, 65)), EINVAL, "a limit over max_wr");
    assert_eq!(t.err(1, modify(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 20, 21)), EINVAL);
    let query = Request::QuerySrq { srq };
    let unchanged = Reply::SrqAttr {
        max_wr: 64,
        max_sge: 1,
        srq_limit: 0,
    };
    assert_eq!(t.x(1, query), unchanged, "nothing changes when refused");
    t.done(1, modify(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT | 0xf0, 100, 100));
    let attr = Reply::SrqAttr {
        max_wr: 100,
        max_sge: 1,
        srq_limit: 100,
    };
    assert_eq!(t.x(1, query), attr);
    assert_eq!(t.err(1, Request::QuerySrq { srq: pd }), EINVAL);
    // A QP on it does not keep it (as the provider).
    let q = CreateQp {
        srq: Some(srq),
        rq: None,
        ..qp_req(QpType::Rc, pd, cq)
    };
    t.qp(1, q);
    t.done(1, Request::DestroySrq { srq });
    assert_eq!(t.h.freed, vec![srqn]);
    assert_eq!(t.t.srq_owner(srqn), None);
}

#[test]
fn mr_rules() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let reg = |addr, len, access| Request::RegMr(mr_req(pd, addr, len, access));
    let lw = IBV_ACCESS_LOCAL_WRITE;
    let odp = IBV_ACCESS_ON_DEMAND;
    let cases = [
        (mr_req(55, 0x1000, 1, 0), ENOENT, "no such PD"),
        (
            mr_req(pd, 0x1000, 1, IBV_ACCESS_REMOTE_WRITE),
            EINVAL,
            "remote write without local",
        ),
        (
            mr_req(pd, 0x1000, 1, IBV_ACCESS_REMOTE_ATOMIC),
            EINVAL,
            "remote atomic without local",
        ),
        (mr_req(pd, 0x1000, 1, 1 << 10), EINVAL, "an access bit it does not know"),
        (mr_req(pd, 0x1000, 0, 0), EINVAL, "no page"),
        (mr_req(pd, 0x1001, 0, odp), EINVAL, "an on-demand MR of no byte"),
        (mr_req(pd, u64::MAX, 2, odp), EINVAL, "a range that wraps"),
    ];
    for (m, e, what) in cases {
        assert_eq!(t.err(1, Request::RegMr(m)), e, "{what}");
    }
    assert!(
        matches!(t.x(1, reg(0, u64::MAX, odp | lw)), Reply::Mr { .. }),
        "implicit"
    );
    assert!(
        matches!(t.x(1, reg(0x1001, 0, 0)), Reply::Mr { .. }),
        "0 bytes inside a page"
    );
    assert!(matches!(
        t.x(
            1,
            reg(0x1000, 8, IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_RELAXED_ORDERING)
        ),
        Reply::Mr { .. }
    ));
    t.h.mapped = Err(EFAULT);
    assert_eq!(t.err(1, reg(0x1000, 8, 0)), EFAULT, "memory not mapped");
    assert!(
        matches!(t.x(1, reg(0, u64::MAX, odp)), Reply::Mr { .. }),
        "on demand: not looked at"
    );
    t.h.mapped = Ok(());
    // What the engine finds under the key.
    let Reply::Mr { handle, lkey, .. } = t.x(
        1,
        Request::RegMr(RegMr {
            iova: 0x9000,
            ..mr_req(pd, 0x7000, 100, lw | IBV_ACCESS_REMOTE_READ)
        }),
    ) else {
        panic!()
    };
    let e = t.client(1).keys().get(lkey).unwrap();
    assert_eq!((e.pd, e.va, e.addr, e.len, e.mw), (pd, 0x7000, 0x9000, 100, 0));
    assert_eq!(
        t.client(1)
            .keys()
            .grant(0, pd, lkey, 0x9000, 100, IBV_ACCESS_REMOTE_READ),
        Some(0x7000)
    );
    assert_eq!(t.client(1).mr(handle).unwrap().key, lkey);
    t.done(1, Request::DeregMr { mr: handle });
    assert!(t.client(1).keys().get(lkey).is_none());
    assert_eq!(t.err(1, Request::DeregMr { mr: handle }), ENOENT);
}

#[test]
fn keys_are_an_index_and_a_tag() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let mut seen = std::collections::HashSet::new();
    for n in 1..=200u32 {
        let (_, key) = t.mr(1, pd, 0x1000, 8, 0);
        assert_eq!(key >> 8, n);
        assert_eq!(key & 0xff, (n.wrapping_mul(0x9e37_79b9) >> 24) & 0xff);
        assert!(seen.insert(key));
    }
    // After the index wraps, those in use are skipped; 0 is never one.
    let c = t.t.client_mut(1).unwrap();
    c.set_next(1, 0xff_fffe);
    let (_, a) = t.mr(1, pd, 0x1000, 8, 0);
    let (_, b) = t.mr(1, pd, 0x1000, 8, 0);
    let Reply::Mw { rkey: w, .. } = t.x(1, Request::AllocMw { pd, ty: MwType::One }) else {
        panic!()
    };
    assert_eq!((a >> 8, b >> 8, w >> 8), (0xff_fffe, 0xff_ffff, 201));
    // Handles too: after a wrap, 0 and those in use are skipped.
    t.t.client_mut(1).unwrap().set_next(u32::MAX, 1);
    let h1 = t.pd(1);
    let h2 = t.pd(1);
    assert_eq!((h1, h2), (u32::MAX, 205), "0 and 1..=204 (in use) skipped");
}

#[test]
fn rereg_mr_rules() {
    let mut t = T::new(WIRE);
    let (pd, pd2) = (t.pd(1), t.pd(1));
    let (mr, key) = t.mr(1, pd, 0x1000, 64, IBV_ACCESS_LOCAL_WRITE);
    let rr = |flags, pd, access, addr, length| {
        Request::ReregMr(ReregMr {
            mr,
            flags,
            pd,
            access,
            addr,
            length,
        })
    };
    let (tr, cpd, acc) = (
        IBV_REREG_MR_CHANGE_TRANSLATION,
        IBV_REREG_MR_CHANGE_PD,
        IBV_REREG_MR_CHANGE_ACCESS,
    );
    assert_eq!(t.err(1, rr(acc, None, IBV_ACCESS_REMOTE_WRITE, 0, 0)), EINVAL);
    assert_eq!(t.err(1, rr(cpd, None, 0, 0, 0)), EINVAL, "no PD");
    assert_eq!(t.err(1, rr(cpd, Some(99), 0, 0, 0)), ENOENT);
    assert_eq!(
        t.err(1, rr(tr | acc, None, IBV_ACCESS_ON_DEMAND, u64::MAX, 2)),
        EINVAL,
        "wraps"
    );
    t.h.mapped = Err(EFAULT);
    assert_eq!(t.err(1, rr(tr, None, 0, 0x5000, 8)), EFAULT);
    t.h.mapped = Ok(());
    let other = Request::ReregMr(ReregMr {
        mr: pd,
        flags: acc,
        pd: None,
        access: 0,
        addr: 0,
        length: 0,
    });
    assert_eq!(t.err(1, other), EINVAL, "a PD as MR");
    assert_eq!(*t.client(1).keys().get(key).as_ref().unwrap(), {
        let mut e = t.client(1).keys().get(key).unwrap();
        e.access = IBV_ACCESS_LOCAL_WRITE;
        e
    });
    t.done(1, rr(tr | cpd | acc, Some(pd2), 0, 0x5000, 8));
    let e = t.client(1).keys().get(key).unwrap();
    assert_eq!((e.pd, e.va, e.addr, e.len, e.access), (pd2, 0x5000, 0x5000, 8, 0));
    let c = t.client(1);
    assert_eq!(
        (c.pd(pd).unwrap().users(), c.pd(pd2).unwrap().users()),
        (0, 1),
        "the use moved"
    );
    t.done(1, Request::DeallocPd { pd });
    assert_eq!(t.err(1, Request::DeallocPd { pd: pd2 }), EBUSY);
}

#[test]
fn windows_bind_and_go() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let cq = t.cq(1);
    let (qp, qpn) = t.qp(1, qp_req(QpType::Rc, pd, cq));
    let acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
    let (_, key) = t.mr(1, pd, 0x1000, 0x1000, acc);
    assert_eq!(
        t.err(
            1,
            Request::AllocMw {
                pd: 70,
                ty: MwType::One
            }
        ),
        ENOENT
    );
    let Reply::Mw { handle: mw, rkey } = t.x(1, Request::AllocMw { pd, ty: MwType::One }) else {
        panic!()
    };
    assert!(t.client(1).keys().get(rkey).is_none(), "unbound");
    let c = t.t.client_mut(1).unwrap();
    let r1 = c
        .bind_mw(qp, mw, IBV_ACCESS_REMOTE_READ, 0, Some((key, 0x1100, 16)))
        .unwrap();
    assert_eq!(r1 >> 8, rkey >> 8, "the index stays");
    assert_ne!(r1, rkey, "the tag moves");
    assert_eq!(c.mw(mw).unwrap().rkey, r1);
    assert_eq!(
        c.keys().grant(qpn, pd, r1, 0x1100, 16, IBV_ACCESS_REMOTE_READ),
        Some(0x1100)
    );
    assert_eq!(c.bind_mw(qp, 999, 0, 0, None), Err(IBV_WC_MW_BIND_ERR));
    assert_eq!(
        c.bind_mw(qp, mw, 0, 0, Some((key, 0x3000, 16))),
        Err(IBV_WC_MW_BIND_ERR),
        "outside the MR"
    );
    t.done(1, Request::DeallocMw { mw });
    assert!(t.client(1).keys().get(r1).is_none(), "the binding went with the window");
    // Type 2: bound to its QP, invalidated.
    let Reply::Mw { handle: mw, .. } = t.x(1, Request::AllocMw { pd, ty: MwType::Two }) else {
        panic!()
    };
    let c = t.t.client_mut(1).unwrap();
    let r2 = c
        .bind_mw(qp, mw, IBV_ACCESS_REMOTE_READ, 0x42, Some((key, 0x1000, 8)))
        .unwrap();
    assert_eq!(r2 & 0xff, 0x42);
    assert!(
        c.keys()
            .grant(qpn + 1, pd, r2, 0x1000, 8, IBV_ACCESS_REMOTE_READ)
            .is_none(),
        "another QP"
    );
    assert!(!c.invalidate(r2, qpn + 1));
    assert!(c.invalidate(r2, qpn));
    assert!(c.keys().get(r2).is_none());
}

/// What a `BIND_MW` WQE and a `SEND_WITH_INV` do to a window through the
/// tables (`data::run_local`, the engine's receive): a type 2 window
/// invalidated is unbound and may be bound again (a bound one may not); a
/// window's rkey is kept in step by every bind, so `DeallocMw` takes the
/// binding of its latest rkey with it.
#[test]
fn windows_rebound_after_invalidation_and_deallocated_bound() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let cq = t.cq(1);
    let (qp, qpn) = t.qp(1, qp_req(QpType::Rc, pd, cq));
    let (_, key) = t.mr(1, pd, 0x1000, 0x1000, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    let Reply::Mw { handle: mw, rkey } = t.x(1, Request::AllocMw { pd, ty: MwType::Two }) else {
        panic!()
    };
    let c = t.t.client_mut(1).unwrap();
    let wr = IBV_ACCESS_REMOTE_WRITE;
    let r1 = c.bind_mw(qp, mw, wr, 0x11, Some((key, 0x1000, 64))).unwrap();
    assert_eq!(r1, (rkey & !0xff) | 0x11);
    assert_eq!(
        c.bind_mw(qp, mw, wr, 0x12, Some((key, 0x1000, 64))),
        Err(IBV_WC_MW_BIND_ERR),
        "bound already"
    );
    assert!(c.invalidate(r1, qpn), "a SEND with invalidate on its QP");
    let r2 = c.bind_mw(qp, mw, wr, 0x12, Some((key, 0x1040, 64))).unwrap();
    assert_eq!((c.mw(mw).unwrap().rkey, r2 & 0xff), (r2, 0x12));
    assert!(c.keys().get(r1).is_none() && c.keys().get(r2).is_some());
    assert!(!c.invalidate(r1, 0), "the old rkey names nothing");
    // Type 1: bound twice (each bind the next 8-bit key), then deallocated
    // bound: no binding of it is left.
    let Reply::Mw { handle: mw1, rkey } = t.x(1, Request::AllocMw { pd, ty: MwType::One }) else {
        panic!()
    };
    let c = t.t.client_mut(1).unwrap();
    let a = c.bind_mw(qp, mw1, wr, 0, Some((key, 0x1000, 64))).unwrap();
    let b = c.bind_mw(qp, mw1, wr, 0, Some((key, 0x1100, 64))).unwrap();
    assert_eq!((a >> 8, b >> 8), (rkey >> 8, rkey >> 8));
    assert_eq!((a & 0xff, b & 0xff), ((rkey + 1) & 0xff, (rkey + 2) & 0xff));
    assert!(c.keys().get(a).is_none(), "rebinding moves it");
    assert!(!c.invalidate(b, 0), "LOCAL_INV is for type 2 windows");
    t.done(1, Request::DeallocMw { mw: mw1 });
    t.done(1, Request::DeallocMw { mw });
    let c = t.client(1);
    assert!(c.keys().get(b).is_none() && c.keys().get(r2).is_none());
    assert!(c.keys().get(key).is_some(), "the MR stays");
}

fn good_av() -> AhAttr {
    AhAttr {
        dgid: [0xfe; 16],
        is_global: 1,
        port_num: 1,
        sgid_index: 1,
        ..AhAttr::default()
    }
}

#[test]
fn address_vectors() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let ah = |attr| Request::CreateAh { pd, attr };
    let g = good_av();
    let cases = [
        (AhAttr { port_num: 2, ..g }, "port"),
        (AhAttr { is_global: 0, ..g }, "no GRH"),
        (AhAttr { sgid_index: 2, ..g }, "a source GID past the table"),
        (AhAttr { dgid: [0; 16], ..g }, "destination GID 0"),
    ];
    for (a, what) in cases {
        assert_eq!(t.err(1, ah(a)), EINVAL, "{what}");
        assert_eq!(check_av(&a, 2, false), Err(EINVAL), "{what}");
    }
    assert_eq!(t.err(1, Request::CreateAh { pd: 5, attr: g }), ENOENT);
    let Reply::Ah { handle } = t.x(1, ah(g)) else { panic!() };
    assert_eq!(t.client(1).ah(handle).unwrap().attr, g);
    t.done(1, Request::DestroyAh { ah: handle });
    assert_eq!(t.err(1, Request::DestroyAh { ah: handle }), ENOENT);
    // LID routing, where allowed.
    let mut t = T::new(Limits {
        lid_routing: true,
        ..WIRE
    });
    let pd = t.pd(1);
    let lid = AhAttr { is_global: 0, ..g };
    assert!(matches!(t.x(1, Request::CreateAh { pd, attr: lid }), Reply::Ah { .. }));
}

#[test]
fn limits_of_each_kind() {
    let small = Limits { max_objects: 3, ..XRC };
    let mut t = T::new(small);
    let pd = t.pd(1);
    let cq = t.cq(1);
    type Make = fn(u32, u32) -> Request;
    let makers: [(Kind, Make); 8] = [
        (Kind::Pd, |_, _| Request::AllocPd { parent: None }),
        (Kind::Cq, |_, _| Request::CreateCq(cq_req(4))),
        (Kind::Srq, |pd, _| Request::CreateSrq(srq_req(pd))),
        (Kind::Qp, |pd, cq| Request::CreateQp(qp_req(QpType::Uc, pd, cq))),
        (Kind::Mr, |pd, _| Request::RegMr(mr_req(pd, 0x1000, 8, 0))),
        (Kind::Mw, |pd, _| Request::AllocMw { pd, ty: MwType::One }),
        (Kind::Ah, |pd, _| Request::CreateAh { pd, attr: good_av() }),
        (Kind::Xrcd, |_, _| Request::AllocXrcd),
    ];
    let mut last_ah = 0;
    for (k, make) in makers {
        while t.client(1).count(k) < 3 {
            match t.x(1, make(pd, cq)) {
                Reply::Err(e) => panic!("{k:?}: {e}"),
                Reply::Ah { handle } => last_ah = handle,
                _ => {}
            }
        }
        assert_eq!(t.err(1, make(pd, cq)), EINVAL, "one {k:?} over the limit");
    }
    // Per client: client 2 has room.
    assert!(matches!(t.x(2, Request::AllocPd { parent: None }), Reply::Pd { .. }));
    // One goes, one more comes.
    t.done(1, Request::DestroyAh { ah: last_ah });
    assert!(matches!(
        t.x(1, Request::CreateAh { pd, attr: good_av() }),
        Reply::Ah { .. }
    ));
    // The provider's limit itself.
    let mut t = T::new(WIRE);
    for _ in 0..16384 {
        t.pd(2);
    }
    assert_eq!(t.err(2, Request::AllocPd { parent: None }), EINVAL);
    assert_eq!(t.client(2).count(Kind::Pd), 16384);
}

#[test]
fn qp_numbers_come_from_the_hook_and_are_one_clients() {
    let mut t = T::new(WIRE);
    let (pd, cq) = (t.pd(1), t.cq(1));
    let (pd2, cq2) = (t.pd(2), t.cq(2));
    let (qp, qpn) = t.qp(1, qp_req(QpType::Rc, pd, cq));
    assert_eq!(qpn, 0x11);
    assert_eq!(t.t.qp_owner(qpn), Some((1, qp)));
    assert_eq!(t.client(1).qp_by_qpn(qpn).map(|q| q.0), Some(qp));
    assert!(t.client(2).qp_by_qpn(qpn).is_none());
    for bad in [Ok(0), Ok(1), Ok(MAX_NUM + 1), Ok(qpn), Err(libc::ENOSPC)] {
        t.h.fixed = Some(bad);
        let e = t.err(2, Request::CreateQp(qp_req(QpType::Rc, pd2, cq2)));
        assert_eq!(e, if bad.is_err() { libc::ENOSPC } else { EAGAIN }, "{bad:?}");
        assert_eq!(t.err(2, Request::CreateSrq(srq_req(pd2))), e);
    }
    assert_eq!(t.client(2).count(Kind::Qp) + t.client(2).count(Kind::Srq), 0);
    t.h.fixed = Some(Ok(MAX_NUM));
    let (qp2, n2) = t.qp(2, qp_req(QpType::Rc, pd2, cq2));
    assert_eq!(t.t.qp_owner(n2), Some((2, qp2)));
    t.h.fixed = None;
    t.done(1, Request::DestroyQp { qp });
    assert_eq!((t.t.qp_owner(qpn), t.h.freed.clone()), (None, vec![qpn]));
}

#[test]
fn removing_a_client_removes_everything_it_has() {
    let mut t = T::new(XRC);
    let mut n = 0;
    let pd = t.pd(1);
    let cq = t.cq(1);
    let Reply::Pd { .. } = t.x(1, Request::AllocPd { parent: Some(pd) }) else {
        panic!()
    };
    let Reply::Xrcd { handle: x } = t.x(1, Request::AllocXrcd) else {
        panic!()
    };
    let (srq, srqn) = t.srq(1, pd);
    let (_, qpn) = t.qp(1, qp_req(QpType::Rc, pd, cq));
    let q = CreateQp {
        srq: Some(srq),
        rq: None,
        ..qp_req(QpType::Ud, pd, cq)
    };
    let (_, qpn2) = t.qp(1, q);
    let tgt = CreateQp {
        user_handle: 0x9200,
        pd: None,
        xrcd: Some(x),
        qp_type: QpType::XrcRecv,
        send_cq: None,
        recv_cq: None,
        srq: None,
        sq_sig_all: true,
        cap: Caps::default(),
        sq: None,
        rq: None,
    };
    let (_, qpn3) = t.qp(1, tgt);
    let (_, key) = t.mr(1, pd, 0x1000, 8, 0);
    t.x(1, Request::AllocMw { pd, ty: MwType::Two });
    t.x(1, Request::CreateAh { pd, attr: good_av() });
    n += 11;
    // Client 2 has its own, untouched.
    let pd2 = t.pd(2);
    let (_, key2) = t.mr(2, pd2, 0x2000, 8, 0);
    let cq2 = t.cq(2);
    let (qp2, qpn4) = t.qp(2, qp_req(QpType::Uc, pd2, cq2));
    let gone = t.t.remove_client(1, &mut t.h).unwrap();
    assert_eq!((gone.id(), gone.len()), (1, n));
    assert!(gone.keys().get(key).is_some(), "the engine sees what was there");
    let mut freed = t.h.freed.clone();
    freed.sort();
    let mut want = vec![srqn, qpn, qpn2, qpn3];
    want.sort();
    assert_eq!(freed, want);
    for q in [qpn, qpn2, qpn3] {
        assert_eq!(t.t.qp_owner(q), None);
    }
    assert_eq!(t.t.srq_owner(srqn), None);
    assert!(t.t.client(1).is_none());
    assert_eq!(t.t.exec(1, &Request::AllocXrcd, &mut t.h), Reply::Err(ENOENT));
    assert!(t.t.remove_client(1, &mut t.h).is_none());
    assert_eq!(t.t.clients(), 1);
    let c2 = t.client(2);
    assert_eq!((c2.len(), c2.keys().get(key2).is_some()), (4, true));
    assert_eq!(t.t.qp_owner(qpn4), Some((2, qp2)));
    // The same number again is a new, empty client.
    assert!(t.t.add_client(1) && !t.t.add_client(2));
    assert!(t.client(1).is_empty());
    assert_eq!(t.pd(1), 1);
}

/// Attributes every transition's checks take (each field valid).
fn valid_attr() -> QpAttr {
    QpAttr {
        mask: QP_ATTR_KNOWN,
        qp_access_flags: IBV_ACCESS_REMOTE_WRITE,
        pkey_index: 0,
        port_num: 1,
        qkey: 0x1111,
        ah_attr: good_av(),
        path_mtu: IBV_MTU_1024,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        rq_psn: 100,
        max_rd_atomic: 1,
        alt_ah_attr: good_av(),
        alt_port_num: 1,
        min_rnr_timer: 12,
        sq_psn: 200,
        max_dest_rd_atomic: 1,
        dest_qp_num: 0x22,
        ..QpAttr::default()
    }
}

/// `modify_qp` to `new` with `IBV_QP_STATE` and `extra`.
fn to_state(new: u32, extra: u32) -> QpAttr {
    let mut a = only(IBV_QP_STATE | extra, &valid_attr());
    a.qp_state = new as u8;
    a
}

/// A QP of type `qpt` (client 1) brought to state `st`: through RESET,
/// INIT, RTR, RTS, SQD by `modify_qp`, to ERR by `modify_qp`, to SQE by
/// the engine.
fn qp_in(t: &mut T, qpt: QpType, st: u32) -> u32 {
    let (pd, cq) = (1, 2);
    let q = match qpt {
        QpType::XrcRecv => CreateQp {
            pd: None,
            xrcd: Some(3),
            send_cq: None,
            recv_cq: None,
            sq: None,
            rq: None,
            ..qp_req(qpt, pd, cq)
        },
        _ => qp_req(qpt, pd, cq),
    };
    let (qp, _) = t.qp(1, q);
    let path = [IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD];
    let mut cur = IBV_QPS_RESET;
    for next in path {
        if cur == st || st == IBV_QPS_ERR || st == IBV_QPS_SQE {
            break;
        }
        let attr = to_state(next, required_attrs(qpt, cur, next));
        t.done(1, Request::ModifyQp { qp, attr });
        cur = next;
    }
    if st == IBV_QPS_ERR {
        t.done(
            1,
            Request::ModifyQp {
                qp,
                attr: to_state(IBV_QPS_ERR, 0),
            },
        );
    }
    if st == IBV_QPS_SQE {
        assert!(t.t.client_mut(1).unwrap().set_qp_state(qp, IBV_QPS_SQE));
    }
    assert_eq!(t.client(1).qp(qp).unwrap().state, st);
    qp
}

/// The transitions `modify_qp` takes (the provider's table, written out).
const VALID: [(u32, u32); 9] = [
    (IBV_QPS_RESET, IBV_QPS_INIT),
    (IBV_QPS_INIT, IBV_QPS_INIT),
    (IBV_QPS_INIT, IBV_QPS_RTR),
    (IBV_QPS_RTR, IBV_QPS_RTS),
    (IBV_QPS_RTS, IBV_QPS_RTS),
    (IBV_QPS_RTS, IBV_QPS_SQD),
    (IBV_QPS_SQD, IBV_QPS_SQD),
    (IBV_QPS_SQD, IBV_QPS_RTS),
    (IBV_QPS_SQE, IBV_QPS_RTS),
];

#[test]
fn the_qp_state_machine() {
    let mut t = T::new(XRC);
    let (pd, cq) = (t.pd(1), t.cq(1));
    let Reply::Xrcd { handle: 3 } = t.x(1, Request::AllocXrcd) else {
        panic!()
    };
    assert_eq!((pd, cq), (1, 2));
    let mut taken = 0;
    for qpt in QpType::ALL {
        for cur in IBV_QPS_RESET..=IBV_QPS_ERR {
            for new in IBV_QPS_RESET..=IBV_QPS_ERR {
                let ok = new == IBV_QPS_RESET || new == IBV_QPS_ERR || VALID.contains(&(cur, new));
                assert_eq!(valid_transition(cur, new), ok, "{cur} -> {new}");
                let need = required_attrs(qpt, cur, new);
                let qp = qp_in(&mut t, qpt, cur);
                let rep = t.x(
                    1,
                    Request::ModifyQp {
                        qp,
                        attr: to_state(new, need),
                    },
                );
                if !ok {
                    assert_eq!(rep, Reply::Err(EINVAL), "{qpt:?} {cur} -> {new}");
                    continue;
                }
                assert_eq!(rep, Reply::Done, "{qpt:?} {cur} -> {new}");
                assert_eq!(t.client(1).qp(qp).unwrap().state, new);
                taken += 1;
                // Each required attribute missing, or one not allowed.
                for bit in (0..32).map(|b| 1u32 << b).filter(|b| need & b != 0) {
                    let qp = qp_in(&mut t, qpt, cur);
                    let e = t.err(
                        1,
                        Request::ModifyQp {
                            qp,
                            attr: to_state(new, need & !bit),
                        },
                    );
                    assert_eq!(e, EINVAL, "{qpt:?} {cur} -> {new} without {bit:#x}");
                }
                let qp = qp_in(&mut t, qpt, cur);
                let e = t.err(
                    1,
                    Request::ModifyQp {
                        qp,
                        attr: to_state(new, need | IBV_QP_RATE_LIMIT),
                    },
                );
                assert_eq!(e, EINVAL, "{qpt:?} {cur} -> {new} with a rate limit");
            }
        }
    }
    assert_eq!(taken, 5 * (9 + 7 + 7), "every valid transition of every type");
}

#[test]
fn the_attributes_each_transition_requires() {
    use QpType::*;
    let (reset, init, rtr, rts) = (IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS);
    let base = IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    assert_eq!(required_attrs(Rc, reset, init), base | IBV_QP_ACCESS_FLAGS);
    assert_eq!(required_attrs(Ud, reset, init), base | IBV_QP_QKEY);
    let path = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    let rd = IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    assert_eq!(required_attrs(Rc, init, rtr), path | rd);
    assert_eq!(required_attrs(XrcRecv, init, rtr), path | rd);
    assert_eq!(required_attrs(Uc, init, rtr), path);
    assert_eq!(required_attrs(XrcSend, init, rtr), path);
    assert_eq!(required_attrs(Ud, init, rtr), 0);
    let retry = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    assert_eq!(required_attrs(Rc, rtr, rts), retry);
    assert_eq!(required_attrs(XrcSend, rtr, rts), retry);
    assert_eq!(required_attrs(XrcRecv, rtr, rts), IBV_QP_TIMEOUT | IBV_QP_SQ_PSN);
    assert_eq!(required_attrs(Ud, rtr, rts), IBV_QP_SQ_PSN);
    assert_eq!(required_attrs(Rc, rts, IBV_QPS_ERR), 0);
    assert_eq!(optional_attrs(Rc, rts, IBV_QPS_SQD), IBV_QP_EN_SQD_ASYNC_NOTIFY);
    assert_eq!(optional_attrs(Ud, init, rtr), IBV_QP_PKEY_INDEX | IBV_QP_QKEY);
}

#[test]
fn modify_qp_checks_the_values() {
    let mut t = T::new(XRC);
    let (pd, cq) = (t.pd(1), t.cq(1));
    assert_eq!((pd, cq), (1, 2));
    let Reply::Xrcd { .. } = t.x(1, Request::AllocXrcd) else {
        panic!()
    };
    let m = |qp, attr| Request::ModifyQp { qp, attr };
    let rc_init = |t: &mut T| qp_in(t, QpType::Rc, IBV_QPS_INIT);
    let need = required_attrs(QpType::Rc, IBV_QPS_INIT, IBV_QPS_RTR);
    let rtr = to_state(IBV_QPS_RTR, need);
    type Bad = fn(&mut QpAttr);
    let cases: [(Bad, &str); 8] = [
        (|a| a.ah_attr.port_num = 2, "AV port"),
        (|a| a.ah_attr.is_global = 0, "AV without GRH"),
        (|a| a.ah_attr.sgid_index = 2, "AV source GID"),
        (|a| a.ah_attr.dgid = [0; 16], "AV destination GID"),
        (|a| a.path_mtu = 0, "path MTU 0"),
        (|a| a.path_mtu = IBV_MTU_4096 + 1, "path MTU"),
        (
            |a| {
                a.mask |= IBV_QP_CUR_STATE;
                a.cur_qp_state = IBV_QPS_RTS as u8;
            },
            "cur_qp_state",
        ),
        (
            |a| {
                a.mask |= IBV_QP_PORT;
                a.port_num = 2;
            },
            "port",
        ),
    ];
    for (f, what) in cases {
        let qp = rc_init(&mut t);
        let mut a = rtr;
        f(&mut a);
        assert_eq!(t.err(1, m(qp, a)), EINVAL, "{what}");
        assert_eq!(t.client(1).qp(qp).unwrap().state, IBV_QPS_INIT, "{what}: no change");
    }
    // RTR -> RTS may name cur_qp_state: UNKNOWN, or the state, but no other.
    let rts_need = required_attrs(QpType::Rc, IBV_QPS_RTR, IBV_QPS_RTS);
    for (cur, ok) in [(IBV_QPS_UNKNOWN, true), (IBV_QPS_RTR, true), (IBV_QPS_INIT, false)] {
        let qp = qp_in(&mut t, QpType::Rc, IBV_QPS_RTR);
        let mut a = to_state(IBV_QPS_RTS, rts_need | IBV_QP_CUR_STATE);
        a.cur_qp_state = cur as u8;
        let want = if ok { Reply::Done } else { Reply::Err(EINVAL) };
        assert_eq!(t.x(1, m(qp, a)), want, "cur_qp_state {cur}");
    }
    // The wire's path.
    t.h.path = false;
    let qp = rc_init(&mut t);
    assert_eq!(t.err(1, m(qp, rtr)), EINVAL, "a path the wire cannot carry");
    t.h.path = true;
    // RTR -> RTS: the device's max_rd_atomic, the timeout's 5 bits.
    for (f, what) in [
        ((|a| a.max_rd_atomic = 129) as Bad, "max_rd_atomic"),
        (|a| a.timeout = 32, "timeout"),
    ] {
        let qp = qp_in(&mut t, QpType::Rc, IBV_QPS_RTR);
        let mut a = to_state(IBV_QPS_RTS, rts_need);
        f(&mut a);
        assert_eq!(t.err(1, m(qp, a)), EINVAL, "{what}");
    }
    let qp = qp_in(&mut t, QpType::Rc, IBV_QPS_RTR);
    let mut a = to_state(IBV_QPS_RTS, rts_need);
    a.max_rd_atomic = 128;
    a.timeout = 31;
    t.done(1, m(qp, a));
    // Without IBV_QP_STATE: the state to itself (RTR to RTR is no
    // transition), any known attribute.
    let qp = qp_in(&mut t, QpType::Rc, IBV_QPS_RTR);
    assert_eq!(t.err(1, m(qp, only(IBV_QP_QKEY, &valid_attr()))), EINVAL);
    let qp = qp_in(&mut t, QpType::Rc, IBV_QPS_RTS);
    t.done(
        1,
        m(qp, only(IBV_QP_QKEY | IBV_QP_CAP | IBV_QP_RATE_LIMIT, &valid_attr())),
    );
    // A UD QP's address vector is not the wire's path check.
    t.h.path = false;
    let qp = qp_in(&mut t, QpType::Ud, IBV_QPS_RTS);
    t.done(1, m(qp, only(IBV_QP_AV, &valid_attr())));
    assert_eq!(t.err(1, m(77, to_state(IBV_QPS_INIT, 0))), ENOENT);
    assert_eq!(t.err(1, m(pd, to_state(IBV_QPS_INIT, 0))), EINVAL);
}

#[test]
fn query_qp_gives_what_modify_qp_set() {
    let mut t = T::new(WIRE);
    let (pd, cq) = (t.pd(1), t.cq(1));
    let (qp, _) = t.qp(1, qp_req(QpType::Rc, pd, cq));
    let Reply::QpAttr(a) = t.x(1, Request::QueryQp { qp, mask: 0 }) else {
        panic!()
    };
    assert_eq!((a.qp_state, a.cur_qp_state, a.port_num), (0, 0, 1), "port 1 before any");
    assert_eq!(a.cap, t.client(1).qp(qp).unwrap().cap);
    assert_eq!(a.mask, QP_ATTR_FIELDS);
    let need = required_attrs(QpType::Rc, IBV_QPS_RESET, IBV_QPS_INIT);
    t.done(
        1,
        Request::ModifyQp {
            qp,
            attr: to_state(IBV_QPS_INIT, need),
        },
    );
    let need = required_attrs(QpType::Rc, IBV_QPS_INIT, IBV_QPS_RTR);
    t.done(
        1,
        Request::ModifyQp {
            qp,
            attr: to_state(IBV_QPS_RTR, need),
        },
    );
    let Reply::QpAttr(a) = t.x(1, Request::QueryQp { qp, mask: 0 }) else {
        panic!()
    };
    let v = valid_attr();
    assert_eq!((a.qp_state, a.cur_qp_state), (IBV_QPS_RTR as u8, IBV_QPS_RTR as u8));
    assert_eq!(
        (a.qp_access_flags, a.dest_qp_num, a.rq_psn, a.path_mtu),
        (v.qp_access_flags, 0x22, 100, v.path_mtu)
    );
    assert_eq!(
        (a.ah_attr, a.min_rnr_timer, a.sq_psn),
        (v.ah_attr, 12, 0),
        "SQ PSN not set yet"
    );
    assert!(Reply::QpAttr(a).encode(1).is_ok());
    assert_eq!(t.err(1, Request::QueryQp { qp: cq, mask: 0 }), EINVAL);
}

#[test]
fn user_handles_are_kept_by_handle() {
    let mut t = T::new(WIRE);
    let pd = t.pd(1);
    let cq = t.cq(1);
    let (qp, _) = t.qp(1, qp_req(QpType::Rc, pd, cq));
    let (srq, _) = t.srq(1, pd);
    let c = t.t.client(1).unwrap();
    assert_eq!(c.cq(cq).unwrap().user_handle, cq_req(16).user_handle);
    assert_eq!(c.qp(qp).unwrap().user_handle, qp_req(QpType::Rc, pd, cq).user_handle);
    assert_eq!(c.srq(srq).unwrap().user_handle, srq_req(pd).user_handle);
    assert_eq!(c.user_handle(cq), Some(cq_req(16).user_handle));
    assert_eq!(c.user_handle(qp), Some(qp_req(QpType::Rc, pd, cq).user_handle));
    assert_eq!(c.user_handle(srq), Some(srq_req(pd).user_handle));
    assert_eq!(c.user_handle(pd), None, "a PD has none");
    assert_eq!(c.user_handle(srq + 1), None, "no such object");
    assert_eq!(t.t.client(2).unwrap().user_handle(cq), None, "another client's");
    // Any value, the same in two objects too: the client's business.
    let same = CreateCq {
        user_handle: u64::MAX,
        ..cq_req(4)
    };
    let Reply::Cq { handle: a, .. } = t.x(1, Request::CreateCq(same)) else {
        panic!()
    };
    let Reply::Cq { handle: b, .. } = t.x(1, Request::CreateCq(same)) else {
        panic!()
    };
    let c = t.t.client(1).unwrap();
    assert_eq!((c.user_handle(a), c.user_handle(b)), (Some(u64::MAX), Some(u64::MAX)));
    // Gone with the object.
    t.done(1, Request::DestroyQp { qp });
    t.done(1, Request::DestroySrq { srq });
    t.done(1, Request::DestroyCq { cq });
    let c = t.t.client(1).unwrap();
    assert_eq!(
        (c.user_handle(qp), c.user_handle(srq), c.user_handle(cq)),
        (None, None, None)
    );
}

// ---------------------------------------------------------------------------
// Multicast attachments
// ---------------------------------------------------------------------------

fn attach(qp: u32, gid: [u8; 16], lid: u16) -> Request {
    Request::AttachMcast { qp, gid, lid }
}

fn detach(qp: u32, gid: [u8; 16], lid: u16) -> Request {
    Request::DetachMcast { qp, gid, lid }
}

/// An IPv4-mapped GID of `a.b.c.d`.
fn v4(a: [u8; 4]) -> [u8; 16] {
    std::net::Ipv4Addr::from(a).to_ipv6_mapped().octets()
}

fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

#[test]
fn multicast_gids_are_the_kernels() {
    for g in [
        v4([224, 0, 0, 1]),
        v4([239, 255, 255, 255]),
        MGID,
        v6("ff02::1"),
        v6("ff0e::1234"),
        [0xff; 16],
    ] {
        assert!(is_multicast_gid(&g), "{g:?}");
    }
    for g in [
        [0; 16],
        v4([223, 255, 255, 255]),
        v4([240, 0, 0, 1]),
        v4([127, 0, 0, 1]),
        v6("::239.1.2.3"),
        v6("::fffe:ef01:203"),
        v6("fe80::1"),
        v6("fe02::1"),
        v6("::1"),
    ] {
        assert!(!is_multicast_gid(&g), "{g:?}");
    }
}

#[test]
fn attach_mcast_errnos_in_ops_rs_order() {
    let mut t = T::new(WIRE);
    let (pd, cq) = (t.pd(1), t.cq(1));
    let (ud, _) = t.qp(1, qp_req(QpType::Ud, pd, cq));
    let (rc, _) = t.qp(1, qp_req(QpType::Rc, pd, cq));
    let (uc, _) = t.qp(1, qp_req(QpType::Uc, pd, cq));
    // The QP's lookup first, whatever the GID.
    for gid in [MGID, [0; 16]] {
        assert_eq!(t.err(1, attach(999, gid, 0)), ENOENT, "no such object");
        assert_eq!(t.err(1, attach(0, gid, 0)), ENOENT, "handle 0");
        assert_eq!(t.err(1, attach(pd, gid, 0)), EINVAL, "a PD named as a QP");
        assert_eq!(t.err(2, attach(ud, gid, 0)), ENOENT, "another client's QP");
        assert_eq!(t.err(1, detach(999, gid, 0)), ENOENT);
        assert_eq!(t.err(1, detach(cq, gid, 0)), EINVAL);
        assert_eq!(t.err(2, detach(ud, gid, 0)), ENOENT);
    }
    // A GID that is not multicast, a QP that is not UD.
    for gid in [
        [0; 16],
        v4([10, 0, 0, 1]),
        v4([240, 0, 0, 1]),
        v6("fe80::1"),
        v6("::239.1.2.3"),
    ] {
        assert_eq!(t.err(1, attach(ud, gid, 0)), EINVAL, "{gid:?}");
    }
    for qp in [rc, uc] {
        assert_eq!(t.err(1, attach(qp, MGID, 0)), EINVAL, "not UD");
        assert_eq!(t.err(1, attach(qp, [0; 16], 0)), EINVAL);
    }
    // Detach: an attachment the QP does not have, whatever the GID.
    assert_eq!(t.err(1, detach(ud, MGID, 0)), EINVAL);
    assert_eq!(t.err(1, detach(ud, [0; 16], 0)), EINVAL);
    assert_eq!(t.err(1, detach(rc, MGID, 0)), EINVAL);
    assert!(t.h.joins.is_empty() && t.h.leaves.is_empty(), "nothing joined or left");
    assert!(t.client(1).qp(ud).unwrap().mcast.is_empty());
    // The hook's errno is the answer, and nothing is recorded.
    t.h.join_err = Some(libc::ENOMEM);
    assert_eq!(t.err(1, attach(ud, MGID, 0)), libc::ENOMEM);
    assert!(t.client(1).qp(ud).unwrap().mcast.is_empty());
    t.h.join_err = Some(EOPNOTSUPP);
    assert_eq!(t.err(1, attach(ud, MGID, 0)), EOPNOTSUPP);
    assert_eq!(t.err(1, detach(ud, MGID, 0)), EINVAL, "not attached");
    t.h.join_err = None;
    t.done(1, attach(ud, MGID, 0));
    // Attached, then other checks still come first.
    assert_eq!(t.err(1, attach(rc, MGID, 0)), EINVAL);
    assert_eq!(t.err(1, detach(ud, MGID, 1)), EINVAL, "another LID");
    assert_eq!(t.err(1, detach(ud, v4([239, 1, 2, 4]), 0)), EINVAL, "another group");
    assert_eq!(t.err(1, detach(rc, MGID, 0)), EINVAL, "another QP's attachment");
}

#[test]
fn groups_are_joined_with_the_first_attachment_and_left_with_the_last() {
    let mut t = T::new(WIRE);
    let (pd, cq) = (t.pd(1), t.cq(1));
    let (a, an) = t.qp(1, qp_req(QpType::Ud, pd, cq));
    let (b, bn) = t.qp(1, qp_req(QpType::Ud, pd, cq));
    let g6 = v6("ff0e::1");
    t.done(1, attach(a, MGID, 0));
    assert_eq!(t.h.joins, vec![(an, MGID)]);
    // The same again: no change.
    t.done(1, attach(a, MGID, 0));
    assert_eq!(t.client(1).qp(a).unwrap().mcast, vec![(MGID, 0)]);
    // Another LID of the group: recorded, no join.
    t.done(1, attach(a, MGID, 0xc001));
    // Another group; another QP of the same group (joined for it too).
    t.done(1, attach(a, g6, 0));
    t.done(1, attach(b, MGID, 0));
    assert_eq!(t.h.joins, vec![(an, MGID), (an, g6), (bn, MGID)]);
    assert_eq!(
        t.client(1).qp(a).unwrap().mcast,
        vec![(MGID, 0), (MGID, 0xc001), (g6, 0)]
    );
    // A join that fails for another LID of a group joined already is not
    // asked: the QP is in the group.
    t.h.join_err = Some(libc::ENOMEM);
    t.done(1, attach(a, MGID, 7));
    t.h.join_err = None;
    t.done(1, detach(a, MGID, 7));
    // The first of two LIDs goes: still in the group.
    t.done(1, detach(a, MGID, 0));
    assert!(t.h.leaves.is_empty());
    assert_eq!(t.err(1, detach(a, MGID, 0)), EINVAL, "detached already");
    // The last goes: left, for that QP only.
    t.done(1, detach(a, MGID, 0xc001));
    assert_eq!(t.h.leaves, vec![(an, MGID)]);
    assert_eq!(t.client(1).qp(a).unwrap().mcast, vec![(g6, 0)]);
    assert_eq!(t.client(1).qp(b).unwrap().mcast, vec![(MGID, 0)]);
    // Attached again: joined again.
    t.done(1, attach(a, MGID, 0));
    assert_eq!(t.h.joins.len(), 4);
    // A destroyed QP calls no hook (the transport forgets its groups), nor
    // does a client's end.
    t.done(1, Request::DestroyQp { qp: a });
    assert_eq!(t.h.leaves.len(), 1);
    assert_eq!(t.err(1, detach(a, g6, 0)), ENOENT, "the QP is gone");
    t.t.remove_client(1, &mut t.h);
    assert_eq!((t.h.joins.len(), t.h.leaves.len()), (4, 1));
}

#[test]
fn a_clients_attachments_are_bounded() {
    let mut t = T::new(WIRE);
    let (pd, cq) = (t.pd(1), t.cq(1));
    // 56 LIDs of one group on each QP (the device's max_mcast_qp_attach)
    // up to the total.
    let per_qp = 56u32;
    let mut qps = Vec::new();
    while (qps.len() as u32) * per_qp < MAX_MCAST_ATTACH {
        let (qp, _) = t.qp(1, qp_req(QpType::Ud, pd, cq));
        for lid in 0..per_qp as u16 {
            t.done(1, attach(qp, MGID, lid));
        }
        qps.push(qp);
    }
    let (more, _) = t.qp(1, qp_req(QpType::Ud, pd, cq));
    assert_eq!(t.err(1, attach(more, MGID, 0)), libc::ENOMEM);
    assert_eq!(t.h.joins.len(), qps.len(), "not asked past the bound");
    // What is there already is no change; another client has its own.
    t.done(1, attach(qps[0], MGID, 0));
    let (pd2, cq2) = (t.pd(2), t.cq(2));
    let (qp2, _) = t.qp(2, qp_req(QpType::Ud, pd2, cq2));
    t.done(2, attach(qp2, MGID, 0));
    // A detach or a destroyed QP gives room back.
    t.done(1, detach(qps[0], MGID, 0));
    t.done(1, attach(more, MGID, 0));
    assert_eq!(t.err(1, attach(more, MGID, 1)), libc::ENOMEM);
    t.done(1, Request::DestroyQp { qp: qps[1] });
    for lid in 1..=per_qp as u16 {
        t.done(1, attach(more, MGID, lid));
    }
    assert_eq!(t.err(1, attach(more, MGID, 0xffff)), libc::ENOMEM);
}
