//! The data path's host in one process: this test process is the client
//! (its memory reached by cross-memory attach on itself), each queue's two
//! halves are in the test (the client's half kept, the agent's given to
//! the `ClientData`).

use super::*;
use crate::place::AccessPage;
use crate::wq::format::{decode_cqe, encode_recv, RecvWqe, Remote, Sge, SgeList, UdAddr};
use crate::wq::{DtxPath, Slots};
use std::net::Ipv4Addr;
use std::os::fd::AsFd;

const PD: u32 = 7;
const LKEY: u32 = 0x100;
/// An MR without local write (READ and atomics cannot scatter into it).
const RO_KEY: u32 = 0x200;
const CQ: u32 = 3;
const QPN: u32 = 0x42;
/// The client's number.
const ID: ClientId = 5;

/// Client `ID`'s data in `d`.
fn cd(d: &DataPath) -> &ClientData {
    d.client(ID).unwrap()
}

/// Client `ID`'s keys `k` as the engine's key tables.
fn tables(k: Keys) -> HashMap<ClientId, Keys> {
    HashMap::from([(ID, k)])
}

/// The client's memory: a buffer registered under `LKEY` (and `RO_KEY`).
struct Client {
    buf: Vec<u8>,
    keys: Keys,
}

impl Client {
    fn new() -> Client {
        let buf = vec![0u8; 16384];
        let mut keys = Keys::default();
        let mr = |access| swrdma_rc::keys::MrEnt {
            pd: PD,
            va: buf.as_ptr() as u64,
            addr: buf.as_ptr() as u64,
            len: buf.len() as u64,
            access,
            mw: 0,
            parent: 0,
            qpn: 0,
        };
        let all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        keys.insert(LKEY, mr(all));
        keys.insert(RO_KEY, mr(0));
        Client { buf, keys }
    }

    fn at(&self, off: usize) -> u64 {
        self.buf.as_ptr() as u64 + off as u64
    }
}

/// Cross-memory attach on ourselves, with an access page of our own (as
/// a client without the provider makes one: `client::access_page`).
fn own_mem() -> ClientMem {
    let fd = crate::client::access_page().unwrap();
    let page = AccessPage::map(fd.as_fd()).unwrap();
    ClientMem::new(std::process::id() as libc::pid_t, None, false, page)
}

/// A data path with one RC QP (its own receive queue of `rq_depth`) and
/// one CQ of `cq_depth`: the client's halves of both queues.
fn setup(rq_depth: usize, cq_depth: usize) -> (DataPath, Producer, Consumer) {
    let mut p = DataPath::default();
    p.add_client(ID, own_mem());
    let d = p.client_mut(ID).unwrap();
    let (cq, _) = Slots::create(cq_depth, CQE_SLOT).unwrap();
    let (cq_agent, cq_client) = cq.split();
    let (rq, _) = Slots::create(rq_depth, 128).unwrap();
    let (rq_client, rq_agent) = rq.split();
    d.cqs.borrow_mut().insert(CQ, cq_agent);
    d.rqs.borrow_mut().insert(QPN, rq_agent);
    let qp = DataQp::new(ID, QPN, IBV_QPT_RC, PD, 9, Some(CQ), Some(CQ), None, false, 4);
    assert!(p.add_qp(Arc::new(qp)));
    (p, rq_client, cq_client)
}

fn post_recv(q: &mut Producer, wr_id: u64, sges: &[Sge]) {
    let mut b = [0u8; 128];
    let n = encode_recv(
        &RecvWqe {
            wr_id,
            sges: SgeList::new(sges),
        },
        4,
        &mut b,
    )
    .unwrap();
    let _ = q.try_push(&b[..n]).unwrap();
}

/// The agent's side of data path `d`, with key tables `keys` and GID
/// table `gids`.
fn serving<'a>(d: &'a DataPath, keys: &'a mut HashMap<ClientId, Keys>, gids: &'a [[u8; 16]]) -> Serving<'a> {
    Serving {
        data: d,
        keys: RefCell::new(keys as &mut dyn KeyTables),
        gids,
    }
}

fn cqes(q: &mut Consumer) -> Vec<Cqe> {
    let mut out = Vec::new();
    let mut b = [0u8; CQE_SLOT];
    while let Ok(Some(n)) = q.try_pop(&mut b) {
        out.push(decode_cqe(&b[..n]).unwrap());
    }
    out
}

fn entry(seq: u64, signaled: bool, done: Option<u32>) -> SqEntry {
    SqEntry {
        seq,
        wr_id: 100 + seq,
        opcode: IBV_WC_SEND,
        len: 5,
        signaled,
        done,
    }
}

#[test]
fn receives_are_placed_and_completed_into_the_cq() {
    let mut c = Client::new();
    let (d, mut rq, mut cq) = setup(8, 8);
    let gids = [[0u8; 16]];
    let mut keys = tables(std::mem::take(&mut c.keys));
    let h = serving(&d, &mut keys, &gids);
    let qp = h.qp(QPN).unwrap();
    let mut st = qp.lock();
    assert!(h.accept_recv(&qp, &mut st).is_none(), "nothing posted");
    post_recv(
        &mut rq,
        77,
        &[Sge {
            addr: c.at(100),
            length: 16,
            lkey: LKEY,
        }],
    );
    let mut cur = h.accept_recv(&qp, &mut st).expect("the WQE posted");
    let to = RecvCq {
        client: ID,
        cq: Some(CQ),
    };
    assert_eq!((cur.wr_id, cur.err, cur.cq), (77, 0, to));
    cur.place(h.mem(&qp), 0, b"via the agent");
    let done = Completion {
        qpn: QPN,
        src_qp: 0x99,
        opcode: IBV_WC_RECV,
        len: 13,
        imm: Some(0x1234),
        inv: None,
    };
    let (wc, to) = h.finish_recv(cur, &done);
    h.push_recv(&to, wc, false);
    drop(st);
    assert_eq!(&c.buf[100..113], b"via the agent");
    let got = cqes(&mut cq);
    assert_eq!(got.len(), 1);
    let e = got[0];
    assert_eq!((e.wr_id, e.status, e.opcode, e.byte_len), (77, 0, IBV_WC_RECV, 13));
    assert_eq!((e.qp_num, e.src_qp, e.imm), (QPN, 0x99, 0x1234));
    assert_ne!(e.wc_flags & IBV_WC_WITH_IMM, 0);
    // A receive whose lkey is not the client's: taken, completes LOC_PROT_ERR.
    post_recv(
        &mut rq,
        78,
        &[Sge {
            addr: c.at(0),
            length: 16,
            lkey: 0x999,
        }],
    );
    let mut st = qp.lock();
    let cur = h.accept_recv(&qp, &mut st).unwrap();
    assert_eq!(cur.err, IBV_WC_LOC_PROT_ERR);
    // Nothing to write into on a read-only MR either.
    post_recv(
        &mut rq,
        79,
        &[Sge {
            addr: c.at(0),
            length: 16,
            lkey: RO_KEY,
        }],
    );
    assert_eq!(h.accept_recv(&qp, &mut st).unwrap().err, IBV_WC_LOC_PROT_ERR);
    assert!(cd(&d).take_events().is_empty());
}

#[test]
fn a_garbage_receive_queue_gives_no_receive_and_one_fatal_event() {
    let (d, mut rq, _cq) = setup(8, 8);
    let mut keys = tables(Keys::default());
    let h = serving(&d, &mut keys, &[]);
    let qp = h.qp(QPN).unwrap();
    let mut st = qp.lock();
    let _ = rq.try_push(&[0xff; 40]).unwrap();
    let _ = rq.try_push(&[0xee; 24]).unwrap();
    assert!(h.accept_recv(&qp, &mut st).is_none());
    assert!(h.accept_recv(&qp, &mut st).is_none());
    assert_eq!(cd(&d).take_events(), vec![Event::Qp(9, IBV_EVENT_QP_FATAL)]);
    assert_eq!(h.gid(5), [0; 16], "no GIDs: a zero GID, no panic");
}

#[test]
fn send_completions_in_order_signaled_or_failed_only() {
    let (d, _rq, mut cq) = setup(8, 8);
    let mut keys = tables(Keys::default());
    let h = serving(&d, &mut keys, &[]);
    let qp = h.qp(QPN).unwrap();
    let mut st = qp.lock();
    st.sq
        .extend([entry(0, true, None), entry(1, false, None), entry(2, true, None)]);
    st.sq_done(1, 0);
    st.sq_done(2, 0);
    h.complete_sq(&qp, &mut st);
    assert!(cqes(&mut cq).is_empty(), "the first is not done: nothing completes");
    st.sq_done(0, 0);
    st.sq_fail(0, IBV_WC_REM_ACCESS_ERR); // (done already: kept)
    h.complete_sq(&qp, &mut st);
    let got: Vec<(u64, u32)> = cqes(&mut cq).iter().map(|e| (e.wr_id, e.status)).collect();
    assert_eq!(got, vec![(100, 0), (102, 0)], "the unsignaled success has no CQE");
    assert!(st.sq.is_empty());
}

#[test]
fn the_error_state_flushes_sends_the_receive_in_progress_and_the_queue() {
    let mut c = Client::new();
    let (d, mut rq, mut cq) = setup(8, 16);
    let mut keys = tables(std::mem::take(&mut c.keys));
    let h = serving(&d, &mut keys, &[]);
    let qp = h.qp(QPN).unwrap();
    let mut st = qp.lock();
    for id in 1..=3 {
        post_recv(
            &mut rq,
            id,
            &[Sge {
                addr: c.at(0),
                length: 8,
                lkey: LKEY,
            }],
        );
    }
    st.cur = h.accept_recv(&qp, &mut st);
    st.sq
        .extend([entry(0, false, Some(0)), entry(1, false, None), entry(2, true, None)]);
    h.to_err(&qp, &mut st);
    assert_eq!(st.state, IBV_QPS_ERR);
    let got: Vec<(u64, u32, u32)> = cqes(&mut cq).iter().map(|e| (e.wr_id, e.status, e.opcode)).collect();
    let f = IBV_WC_WR_FLUSH_ERR;
    assert_eq!(
        got,
        vec![
            (101, f, IBV_WC_SEND),
            (102, f, IBV_WC_SEND),
            (1, f, IBV_WC_RECV),
            (2, f, IBV_WC_RECV),
            (3, f, IBV_WC_RECV)
        ],
        "sends first (the completed unsignaled one has none), then the receive taken, then the queue"
    );
}

#[test]
fn a_receive_posted_in_the_error_state_completes_flushed() {
    let mut c = Client::new();
    let (d, mut rq, mut cq) = setup(8, 16);
    let mut keys = tables(std::mem::take(&mut c.keys));
    let h = serving(&d, &mut keys, &[]);
    let qp = h.qp(QPN).unwrap();
    let sge = [Sge {
        addr: c.at(0),
        length: 8,
        lkey: LKEY,
    }];
    post_recv(&mut rq, 1, &sge);
    assert_eq!(
        h.flush_late_recvs(&qp),
        0,
        "not in the error state: the receive waits for a SEND"
    );
    assert!(cqes(&mut cq).is_empty());
    {
        let mut st = qp.lock();
        h.to_err(&qp, &mut st);
    }
    assert_eq!(cqes(&mut cq).len(), 1, "the one posted before: flushed by the move");
    post_recv(&mut rq, 7, &sge);
    post_recv(&mut rq, 8, &sge);
    assert_eq!(h.flush_late_recvs(&qp), 2);
    let got: Vec<(u64, u32, u32)> = cqes(&mut cq).iter().map(|e| (e.wr_id, e.status, e.opcode)).collect();
    assert_eq!(
        got,
        vec![
            (7, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV),
            (8, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV)
        ]
    );
    assert_eq!(h.flush_late_recvs(&qp), 0);
}

#[test]
fn a_full_cq_overruns_once_and_takes_nothing_more() {
    let (d, _rq, mut cq) = setup(8, 2);
    let wc = wc_of(1, 0, IBV_WC_SEND, 0, QPN);
    assert!(cd(&d).push_cqe(Some(CQ), &wc, false));
    assert!(cd(&d).push_cqe(Some(CQ), &wc, false));
    assert!(!cd(&d).push_cqe(Some(CQ), &wc, false), "no room: overrun");
    assert_eq!(cqes(&mut cq).len(), 2);
    assert!(!cd(&d).push_cqe(Some(CQ), &wc, false), "overrun for good");
    assert!(cqes(&mut cq).is_empty());
    assert_eq!(cd(&d).take_events(), vec![Event::Cq(CQ, IBV_EVENT_CQ_ERR)]);
    assert!(cd(&d).push_cqe(None, &wc, false), "no CQ: nothing to do");
    assert!(
        !cd(&d).push_cqe(Some(CQ + 1), &wc, false),
        "a CQ the agent does not hold"
    );
    // (The client slept on it meanwhile? Its doorbell is asked for once.)
    let (d, _rq, mut cq) = setup(8, 8);
    assert!(cq.prepare_sleep(), "empty: the client sleeps");
    assert!(cd(&d).push_cqe(Some(CQ), &wc, false));
    assert_eq!(cd(&d).take_doorbells().bells, vec![CQ]);
    assert_eq!(cd(&d).take_doorbells(), Wakeups::default());
}

#[test]
fn send_wqes_become_the_engines_requests() {
    let c = Client::new();
    let ctx = |qpt| SendCtx {
        qpt,
        pd: PD,
        qkey: 0x1111,
        mtu: 1024,
        keys: &c.keys,
    };
    let list = [Sge {
        addr: c.at(64),
        length: 32,
        lkey: LKEY,
    }];
    let wqe = |op, data| SendWqe {
        wr_id: 5,
        op,
        send_flags: IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
        ud: None,
        xrc_srqn: None,
        data,
    };
    let no_path = |_: &UdAddr| None;
    let rc = ctx(IBV_QPT_RC);
    // RDMA WRITE with immediate from a gather list.
    let remote = Remote {
        addr: 0xabc000,
        rkey: 0x77,
    };
    let w = wqe(
        SendOp::RdmaWriteWithImm(remote, 0x0102_0304u32.to_be()),
        Data::Sges(SgeList::new(&list)),
    );
    let (r, e) = request(&w, &rc, 9, no_path).unwrap();
    assert_eq!(
        (r.seq, r.kind, r.len, r.raddr, r.rkey),
        (9, Op::Write, 32, 0xabc000, 0x77)
    );
    assert_eq!(
        (r.imm, r.se, r.sges.len(), r.data.is_none()),
        (Some(0x0102_0304), true, 1, true)
    );
    assert_eq!(
        e,
        SqEntry {
            seq: 9,
            wr_id: 5,
            opcode: IBV_WC_RDMA_WRITE,
            len: 32,
            signaled: true,
            done: None
        }
    );
    // Inline SEND: the bytes copied.
    let (r, _) = request(&wqe(SendOp::Send, Data::Inline(b"inline")), &rc, 1, no_path).unwrap();
    assert_eq!(r.data.as_deref(), Some(&b"inline"[..]));
    // Atomics and READ scatter: a read-only MR is LOC_PROT_ERR.
    let ro = [Sge {
        addr: c.at(0),
        length: 8,
        lkey: RO_KEY,
    }];
    let cas = SendOp::CompareAndSwap {
        remote,
        compare: 1,
        swap: 2,
    };
    assert_eq!(
        request(&wqe(cas, Data::Sges(SgeList::new(&ro))), &rc, 1, no_path).err(),
        Some(Refused::Local(IBV_WC_LOC_PROT_ERR))
    );
    let (r, e) = request(
        &wqe(
            SendOp::FetchAndAdd { remote, add: 3 },
            Data::Sges(SgeList::new(&list[..])),
        ),
        &rc,
        2,
        no_path,
    )
    .unwrap();
    assert_eq!((r.kind, r.cmp, e.opcode), (Op::FetchAdd, 3, IBV_WC_FETCH_ADD));
    // An unknown lkey.
    let bad = [Sge {
        addr: c.at(0),
        length: 8,
        lkey: 0x999,
    }];
    assert_eq!(
        request(&wqe(SendOp::Send, Data::Sges(SgeList::new(&bad))), &rc, 1, no_path).err(),
        Some(Refused::Local(IBV_WC_LOC_PROT_ERR))
    );
    // Not the wire's, or not this QP type's.
    assert_eq!(
        request(
            &wqe(SendOp::AtomicWrite(remote), Data::Inline(&[0; 8])),
            &rc,
            1,
            no_path
        )
        .err(),
        Some(Refused::Op)
    );
    assert_eq!(
        request(
            &wqe(SendOp::RdmaRead(remote), Data::Sges(SgeList::new(&list))),
            &ctx(IBV_QPT_UC),
            1,
            no_path
        )
        .err(),
        Some(Refused::Op)
    );
    assert!(request(
        &wqe(SendOp::RdmaWrite(remote), Data::Sges(SgeList::new(&list))),
        &ctx(IBV_QPT_UC),
        1,
        no_path
    )
    .is_ok());
    // UD: the address's path, the Q_Key (high bit: the QP's), the MTU.
    let ud = ctx(IBV_QPT_UD);
    let here = IpAddr::V4(Ipv4Addr::new(169, 254, 1, 1));
    let there = IpAddr::V4(Ipv4Addr::new(169, 254, 1, 2));
    let path = |_: &UdAddr| Some((here, there));
    let mut w = wqe(SendOp::Send, Data::Sges(SgeList::new(&list)));
    assert_eq!(request(&w, &ud, 1, path).err(), Some(Refused::Op), "no address");
    w.ud = Some(UdAddr {
        remote_qpn: 0x55,
        remote_qkey: 0x8000_0000,
        is_global: true,
        traffic_class: 0x20,
        ..Default::default()
    });
    assert_eq!(request(&w, &ud, 1, no_path).err(), Some(Refused::Op), "no path");
    let (r, _) = request(&w, &ud, 1, path).unwrap();
    assert_eq!(r.ud, Some((here, there, 0x55, 0x1111, 0x20)));
    w.ud = w.ud.map(|a| UdAddr {
        remote_qkey: 0x2222,
        ..a
    });
    assert_eq!(request(&w, &ud, 1, path).unwrap().0.ud.map(|u| u.3), Some(0x2222));
    let big = vec![0u8; 1025];
    w.data = Data::Inline(&big);
    assert_eq!(request(&w, &ud, 1, path).err(), Some(Refused::Op), "over the MTU");
    w.op = SendOp::RdmaWrite(remote);
    w.data = Data::Inline(b"x");
    assert_eq!(request(&w, &ud, 1, path).err(), Some(Refused::Op), "UD sends only");
}

/// A signaled send WQE (inline when its data is).
fn signaled_wqe(wr_id: u64, op: SendOp, data: Data<'_>) -> SendWqe<'_> {
    let inline = if matches!(data, Data::Inline(_)) {
        IBV_SEND_INLINE
    } else {
        0
    };
    SendWqe {
        wr_id,
        op,
        send_flags: IBV_SEND_SIGNALED | inline,
        ud: None,
        xrc_srqn: None,
        data,
    }
}

/// QP `qpn` connected to `peer` over `addr` (both ends in this process),
/// moved to RTS as the control path would, through the engine's
/// `modified`.
fn connect(h: &Serving<'_>, wire: &Wire, qp: &DataQp, peer: u32) {
    let mut st = qp.lock();
    let a = &mut st.attr;
    a.dest_qp_num = peer;
    a.rq_psn = 100;
    a.sq_psn = 100;
    a.path_mtu = IBV_MTU_1024;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.min_rnr_timer = 1;
    a.max_rd_atomic = 4;
    a.max_dest_rd_atomic = 4;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid.raw = h.gids[0];
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.port_num = 1;
    st.state = IBV_QPS_RTR;
    let rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    wire.modified(h, qp, &mut st, IBV_QPS_RTR, rtr);
    st.state = IBV_QPS_RTS;
    wire.modified(h, qp, &mut st, IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/// The queues, QP and socket of one direct transmit ([`through_window`]).
struct Window<'a> {
    qp: &'a Arc<DataQp>,
    sq_client: &'a mut Producer,
    sq_agent: &'a mut Consumer,
    shape: &'a SendShape,
    cq: &'a mut Consumer,
    ifindex: u32,
    /// The client's socket's port (its packet's source port).
    sport: u16,
}

/// Direct transmit as client and agent do it: the QP's send queue opens
/// its window as the agent would before it sleeps; the client takes it,
/// writes `w`'s entry marked direct and makes the request's only packet
/// (carrying `data`, `len` bytes); the agent takes the entry as sent.
/// Then for 50 ms (within the ACK timeout) the agent must send no copy
/// and nothing completes.  The packet (for the caller to send) and the
/// window's path.
fn through_window(
    h: &Serving<'_>,
    wire: &Wire,
    q: Window<'_>,
    w: &SendWqe<'_>,
    data: &[u8],
    len: u64,
) -> (Vec<u8>, DtxPath) {
    use crate::wq::format::encode_send;
    let (psn, path, t) = wire
        .dtx_path(&**q.qp, &mut *q.qp.lock(), q.ifindex)
        .expect("the QP may open its window");
    assert!(t > 0);
    assert!(q.sq_agent.prepare_sleep());
    q.sq_agent.dtx_open(psn, &path);
    let o = q.sq_client.dtx_offer().expect("the window offered");
    assert_eq!(o.psn, psn);
    let r = direct_request(w, data, len).unwrap();
    let mut pkt = Vec::new();
    assert!(crate::wire::engine::direct_packet(
        &r,
        path.dqpn,
        o.psn,
        path.pmtu,
        (path.src, q.sport, path.dst),
        &mut pkt
    ));
    let mut ebuf = vec![0u8; q.shape.slot_size().unwrap()];
    let n = encode_send(w, q.shape, &mut ebuf).unwrap();
    crate::wq::format::mark_direct(&mut ebuf[..n]);
    assert!(q.sq_client.dtx_claim(&o));
    q.sq_client.try_push_quiet(&ebuf[..n]).unwrap();
    q.sq_agent.wake_up();
    assert!(q.sq_agent.dtx_close());
    assert_eq!(take_sends(h, wire, q.qp, q.sq_agent, q.shape, 16), 1);
    let quiet = std::time::Instant::now() + std::time::Duration::from_millis(50);
    while std::time::Instant::now() < quiet {
        wire.progress(h);
    }
    assert!(cqes(q.cq).is_empty(), "the agent sent no copy of {}", w.wr_id);
    (pkt, path)
}

/// Runs the engine until `want` CQEs came (2 s at most).
fn run_until(h: &Serving<'_>, wire: &Wire, cq: &mut Consumer, want: usize) -> Vec<Cqe> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let mut got = Vec::new();
    while got.len() < want && std::time::Instant::now() < end {
        wire.progress(h);
        got.extend(cqes(cq));
    }
    got
}

/// The engine over the agent's host, end to end: two RC QPs of one client
/// connected over a loopback address, a SEND into a posted receive, an
/// RDMA WRITE, a READ and a fetch-and-add into the client's memory, all
/// placed by cross-memory attach, completed into the CQ's queue; then a
/// WRITE with a bad rkey: REM_ACCESS_ERR, the requester in the error
/// state, its next WQE flushed.
#[test]
fn the_engine_runs_over_the_agents_host() {
    use crate::wq::format::{encode_send, QpKind};
    let addr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 6));
    let dir = std::env::temp_dir().join(format!("swrdma-data-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    // SAFETY: a NUL-terminated name.
    let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
    let sock = match crate::wire::sock::Sock::open(&dir, 1, lo, &[addr]) {
        Ok(s) => s,
        Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => {
            eprintln!("skipped: {addr}:4791 is held by another user or the kernel's rxe");
            return;
        }
        Err(e) => panic!("Sock::open: {e}"),
    };
    let wire = Wire::new(sock, 1024, Box::new(|_| None));
    let mut c = Client::new();
    let (mut d, mut rq_b, mut cq) = setup(8, 64);
    // QP A (0x41) sends; QP B (QPN) receives; both complete into CQ.
    let a = Arc::new(DataQp::new(
        ID,
        0x41,
        IBV_QPT_RC,
        PD,
        8,
        Some(CQ),
        Some(CQ),
        None,
        false,
        4,
    ));
    assert!(d.add_qp(a.clone()));
    let shape = SendShape {
        kind: QpKind::Connected,
        max_sge: 4,
        max_inline: 64,
    };
    let (sq, _) = Slots::create(16, shape.slot_size().unwrap()).unwrap();
    let (mut sq_client, mut sq_agent) = sq.split();
    let gids = [match addr {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }];
    // Three pages registered under HOLE_KEY, the middle one made
    // inaccessible after (as an application that mprotects or unmaps
    // registered memory): a WRITE into it faults while being placed.
    const HOLE_KEY: u32 = 0x300;
    // SAFETY: a fresh anonymous mapping of three pages, ours alone.
    let hole = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            3 * 4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(hole, libc::MAP_FAILED);
    // SAFETY: the middle page of the mapping above.
    let r = unsafe { libc::mprotect(hole.cast::<u8>().add(4096).cast(), 4096, libc::PROT_NONE) };
    assert_eq!(r, 0);
    let hole = hole as u64;
    c.keys.insert(
        HOLE_KEY,
        swrdma_rc::keys::MrEnt {
            pd: PD,
            va: hole,
            addr: hole,
            len: 3 * 4096,
            access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
            mw: 0,
            parent: 0,
            qpn: 0,
        },
    );
    let mut keys = tables(std::mem::take(&mut c.keys));
    let h = serving(&d, &mut keys, &gids);
    let b = h.qp(QPN).unwrap();
    connect(&h, &wire, &a, QPN);
    connect(&h, &wire, &b, 0x41);
    let post = |q: &mut Producer, w: &SendWqe<'_>| {
        let mut buf = vec![0u8; shape.slot_size().unwrap()];
        let n = encode_send(w, &shape, &mut buf).unwrap();
        let _ = q.try_push(&buf[..n]).unwrap();
    };
    // A SEND of 20 bytes (from the client's buffer) into B's receive.
    c.buf[0..20].copy_from_slice(b"twenty bytes, placed");
    post_recv(
        &mut rq_b,
        500,
        &[Sge {
            addr: c.at(1000),
            length: 64,
            lkey: LKEY,
        }],
    );
    let src = [Sge {
        addr: c.at(0),
        length: 20,
        lkey: LKEY,
    }];
    post(
        &mut sq_client,
        &signaled_wqe(1, SendOp::Send, Data::Sges(SgeList::new(&src))),
    );
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 1);
    let got = run_until(&h, &wire, &mut cq, 2);
    let mut seen: Vec<(u64, u32, u32, u32)> = got.iter().map(|e| (e.wr_id, e.status, e.opcode, e.byte_len)).collect();
    seen.sort_unstable();
    assert_eq!(seen, vec![(1, 0, IBV_WC_SEND, 20), (500, 0, IBV_WC_RECV, 20)]);
    assert_eq!(&c.buf[1000..1020], b"twenty bytes, placed");
    // An RDMA WRITE (inline), a READ back, a fetch-and-add.
    let remote = Remote {
        addr: c.at(2000),
        rkey: LKEY,
    };
    post(
        &mut sq_client,
        &signaled_wqe(2, SendOp::RdmaWrite(remote), Data::Inline(b"written remotely")),
    );
    let back = [Sge {
        addr: c.at(3000),
        length: 16,
        lkey: LKEY,
    }];
    post(
        &mut sq_client,
        &signaled_wqe(3, SendOp::RdmaRead(remote), Data::Sges(SgeList::new(&back))),
    );
    c.buf[4000..4008].copy_from_slice(&40u64.to_ne_bytes());
    let orig = [Sge {
        addr: c.at(4100),
        length: 8,
        lkey: LKEY,
    }];
    let faa = SendOp::FetchAndAdd {
        remote: Remote {
            addr: c.at(4000),
            rkey: LKEY,
        },
        add: 2,
    };
    post(&mut sq_client, &signaled_wqe(4, faa, Data::Sges(SgeList::new(&orig))));
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 3);
    let got = run_until(&h, &wire, &mut cq, 3);
    let seen: Vec<(u64, u32)> = got.iter().map(|e| (e.wr_id, e.status)).collect();
    assert_eq!(seen, vec![(2, 0), (3, 0), (4, 0)], "in order, each succeeded");
    assert_eq!(&c.buf[2000..2016], b"written remotely");
    assert_eq!(&c.buf[3000..3016], b"written remotely");
    assert_eq!(c.buf[4000..4008], 42u64.to_ne_bytes());
    assert_eq!(c.buf[4100..4108], 40u64.to_ne_bytes());
    // A WRITE of three packets (MTU 1024) from two SGEs (read ahead in one
    // go by the requester), and a READ of it back (the responder's three
    // response packets read in one go).
    for (i, v) in c.buf[5000..8000].iter_mut().enumerate() {
        *v = (i * 7 % 251) as u8;
    }
    let two = [
        Sge {
            addr: c.at(5000),
            length: 1500,
            lkey: LKEY,
        },
        Sge {
            addr: c.at(6500),
            length: 1500,
            lkey: LKEY,
        },
    ];
    let far = Remote {
        addr: c.at(8500),
        rkey: LKEY,
    };
    post(
        &mut sq_client,
        &signaled_wqe(10, SendOp::RdmaWrite(far), Data::Sges(SgeList::new(&two))),
    );
    let into = [Sge {
        addr: c.at(12000),
        length: 3000,
        lkey: LKEY,
    }];
    post(
        &mut sq_client,
        &signaled_wqe(11, SendOp::RdmaRead(far), Data::Sges(SgeList::new(&into))),
    );
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 2);
    let got = run_until(&h, &wire, &mut cq, 2);
    assert_eq!(
        got.iter().map(|e| (e.wr_id, e.status, e.byte_len)).collect::<Vec<_>>(),
        vec![(10, 0, 3000), (11, 0, 3000)]
    );
    assert!(c.buf[8500..11500] == c.buf[5000..8000], "written in order");
    assert!(c.buf[12000..15000] == c.buf[5000..8000], "read back in order");
    // A READ of 2500 bytes of it into three SGEs that its packets straddle
    // (the responses' data placed in one copy, `defer_read`).
    let split = [(15000, 1200), (4200, 800), (11500, 500)].map(|(at, length)| Sge {
        addr: c.at(at),
        length,
        lkey: LKEY,
    });
    post(
        &mut sq_client,
        &signaled_wqe(13, SendOp::RdmaRead(far), Data::Sges(SgeList::new(&split))),
    );
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 1);
    let got = run_until(&h, &wire, &mut cq, 1);
    assert_eq!(
        got.iter().map(|e| (e.wr_id, e.status, e.byte_len)).collect::<Vec<_>>(),
        vec![(13, 0, 2500)]
    );
    assert!(c.buf[15000..16200] == c.buf[5000..6200], "the first SGE");
    assert!(c.buf[4200..5000] == c.buf[6200..7000], "the second SGE");
    assert!(c.buf[11500..12000] == c.buf[7000..7500], "the third SGE");
    // A SEND of three packets into a receive of two SGEs: its first two
    // packets' placement waits for its last (`defer_send`).
    c.buf[8500..11500].fill(0);
    post_recv(
        &mut rq_b,
        501,
        &[
            Sge {
                addr: c.at(8500),
                length: 1000,
                lkey: LKEY,
            },
            Sge {
                addr: c.at(9500),
                length: 3000,
                lkey: LKEY,
            },
        ],
    );
    post(
        &mut sq_client,
        &signaled_wqe(12, SendOp::Send, Data::Sges(SgeList::new(&two))),
    );
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 1);
    let got = run_until(&h, &wire, &mut cq, 2);
    let mut seen: Vec<(u64, u32, u32)> = got.iter().map(|e| (e.wr_id, e.status, e.byte_len)).collect();
    seen.sort_unstable();
    assert_eq!(seen, vec![(12, 0, 3000), (501, 0, 3000)]);
    assert!(c.buf[8500..11500] == c.buf[5000..8000], "received in order");
    // Direct transmit: A's send queue opens its window as the agent would
    // before it sleeps; the client takes it, writes a WRITE's entry marked
    // direct and sends the WRITE's only packet itself, after the agent took
    // the entry.  The packet carries other bytes ("direct!") than the entry
    // ("agent's"), which a copy sent by the agent would carry.
    let target = Remote {
        addr: c.at(2100),
        rkey: LKEY,
    };
    let w = signaled_wqe(20, SendOp::RdmaWrite(target), Data::Inline(b"agent's"));
    let udp = std::net::UdpSocket::bind((addr, 0)).unwrap();
    let sport = udp.local_addr().unwrap().port();
    macro_rules! window {
        () => {
            Window {
                qp: &a,
                sq_client: &mut sq_client,
                sq_agent: &mut sq_agent,
                shape: &shape,
                cq: &mut cq,
                ifindex: lo,
                sport,
            }
        };
    }
    let (pkt, path) = through_window(&h, &wire, window!(), &w, b"direct!", 7);
    assert_eq!((path.src, path.dst, path.dqpn, path.pmtu), (addr, addr, QPN, 1024));
    assert_ne!(&c.buf[2100..2107], b"agent's");
    udp.send_to(&pkt, (addr, swrdma_roce::ROCE_PORT)).unwrap();
    let got = run_until(&h, &wire, &mut cq, 1);
    assert_eq!(
        got.iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(20, 0)]
    );
    assert_eq!(
        &c.buf[2100..2107],
        b"direct!",
        "the client's packet, not an agent's copy"
    );
    // The next request goes the usual way (the window is closed) with the
    // PSN after the direct one's.
    post(
        &mut sq_client,
        &signaled_wqe(21, SendOp::RdmaWrite(target), Data::Inline(b"after")),
    );
    assert!(sq_client.dtx_offer().is_none());
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 1);
    let got = run_until(&h, &wire, &mut cq, 1);
    assert_eq!(
        got.iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(21, 0)]
    );
    assert_eq!(&c.buf[2100..2105], b"after");
    // A READ and a fetch-and-add through the window, each as the WRITE
    // above: the agent sends no copy, the client's request packet makes
    // the responder answer, and the agent places the answer (the READ's
    // 1000 bytes, the original value) and completes the request.
    c.buf[4000..4008].copy_from_slice(&7u64.to_ne_bytes());
    let asks = [
        (30, SendOp::RdmaRead(far), 1000u32, 1000usize),
        (
            31,
            SendOp::FetchAndAdd {
                remote: Remote {
                    addr: c.at(4000),
                    rkey: LKEY,
                },
                add: 5,
            },
            8,
            8,
        ),
    ];
    for (id, op, length, len) in asks {
        c.buf[13000..13000 + len].fill(0xee);
        let into = [Sge {
            addr: c.at(13000),
            length,
            lkey: LKEY,
        }];
        let w = signaled_wqe(id, op, Data::Sges(SgeList::new(&into)));
        let (pkt, _) = through_window(&h, &wire, window!(), &w, &[], len as u64);
        udp.send_to(&pkt, (addr, swrdma_roce::ROCE_PORT)).unwrap();
        let got = run_until(&h, &wire, &mut cq, 1);
        assert_eq!(
            got.iter().map(|e| (e.wr_id, e.status, e.byte_len)).collect::<Vec<_>>(),
            vec![(id, 0, len as u32)]
        );
        if id == 30 {
            assert!(c.buf[13000..14000] == c.buf[8500..9500], "read");
        }
    }
    assert_eq!(c.buf[13000..13008], 7u64.to_ne_bytes(), "the original value");
    assert_eq!(c.buf[4000..4008], 12u64.to_ne_bytes(), "added once");
    // A WRITE of seven packets that passes its checks but reaches, 1500
    // bytes in, the page B's client made inaccessible (its last packet
    // lies past that page): its first six packets' placement waits for its
    // last (`defer_write`), the copy stops at the page (what comes before
    // it is placed, as rxe places the packets before the one that faults),
    // the responder NAKs it, A's request completes REM_ACCESS_ERR, A goes
    // to the error state and what is posted next completes flushed.
    let bad = Remote {
        addr: hole + 4096 - 1500,
        rkey: HOLE_KEY,
    };
    let seven = [Sge {
        addr: c.at(5000),
        length: 7000,
        lkey: LKEY,
    }];
    post(
        &mut sq_client,
        &signaled_wqe(5, SendOp::RdmaWrite(bad), Data::Sges(SgeList::new(&seven))),
    );
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 1);
    let got = run_until(&h, &wire, &mut cq, 1);
    assert_eq!(
        got.iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(5, IBV_WC_REM_ACCESS_ERR)]
    );
    assert_eq!(a.lock().state, IBV_QPS_ERR);
    post(&mut sq_client, &signaled_wqe(6, SendOp::Send, Data::Inline(b"late")));
    assert_eq!(take_sends(&h, &wire, &a, &mut sq_agent, &shape, 16), 1);
    assert_eq!(
        cqes(&mut cq).iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(6, IBV_WC_WR_FLUSH_ERR)]
    );
    // SAFETY: the first page of the mapping, readable.
    let placed = unsafe { std::slice::from_raw_parts((hole + 4096 - 1500) as *const u8, 1500) };
    assert!(placed == &c.buf[5000..6500], "what comes before the fault is placed");
    // (B's responder went to the error state too, with its owner's event.)
    assert_eq!(b.lock().state, IBV_QPS_ERR);
    assert_eq!(cd(&d).take_events(), vec![Event::Qp(9, IBV_EVENT_QP_ACCESS_ERR)]);
    assert!(d.remove_client(ID).is_some());
    assert!(
        d.qp(QPN).is_none() && d.qp(0x41).is_none(),
        "the client's QPs went with it"
    );
    // SAFETY: the mapping made above, no longer used.
    unsafe { libc::munmap(hole as *mut libc::c_void, 3 * 4096) };
    let _ = std::fs::remove_dir_all(&dir);
}

/// An SRQ armed with a limit: the receive that leaves fewer WQEs than the
/// limit fires `IBV_EVENT_SRQ_LIMIT_REACHED` once and disarms it (rxe's
/// `get_srq_wqe`); the SRQ's other receives are taken as usual.
#[test]
fn an_srq_limit_fires_once_when_fewer_are_left() {
    const SRQ: u32 = 11;
    const SQPN: u32 = 0x77;
    let c = Client::new();
    let (mut d, _rq, _cq) = setup(8, 8);
    let (q, _) = Slots::create(8, 128).unwrap();
    let (mut client, agent) = q.split();
    d.client_mut(ID).unwrap().srqs.get_mut().insert(
        SRQ,
        SrqQueue {
            queue: agent,
            pd: PD,
            max_sge: 4,
            limit: 2,
        },
    );
    let qp = Arc::new(DataQp::new(
        ID,
        SQPN,
        IBV_QPT_RC,
        PD,
        12,
        Some(CQ),
        Some(CQ),
        Some(SRQ),
        false,
        4,
    ));
    assert!(d.add_qp(qp.clone()));
    let sge = |off| Sge {
        addr: c.at(off),
        length: 8,
        lkey: LKEY,
    };
    for id in 1..=3 {
        post_recv(&mut client, id, &[sge(0)]);
    }
    let mut keys = tables(Keys::default());
    let h = serving(&d, &mut keys, &[]);
    let mut st = qp.lock();
    assert_eq!(h.accept_recv(&qp, &mut st).map(|r| r.wr_id), Some(1));
    assert!(cd(&d).take_events().is_empty(), "2 left: not fewer than the limit");
    assert_eq!(h.accept_recv(&qp, &mut st).map(|r| r.wr_id), Some(2));
    assert_eq!(
        cd(&d).take_events(),
        vec![Event::Srq(SRQ, IBV_EVENT_SRQ_LIMIT_REACHED)],
        "1 left"
    );
    assert_eq!(cd(&d).take_limits_reached(), vec![SRQ]);
    assert_eq!(cd(&d).srqs.borrow()[&SRQ].limit, 0, "disarmed");
    assert_eq!(h.accept_recv(&qp, &mut st).map(|r| r.wr_id), Some(3));
    assert!(cd(&d).take_events().is_empty(), "once per arm");
    assert!(cd(&d).take_limits_reached().is_empty());
}

/// A CQ with a completion channel: the CQEs written call for the channel
/// only when its consumer armed it for them (any completion, or a
/// solicited or failed one), once per arm; a CQ without a channel never.
#[test]
fn armed_cqs_call_for_their_channel() {
    let (mut d, _rq, mut cq) = setup(8, 8);
    let (_r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    d.client_mut(ID).unwrap().channels.insert(CQ, w);
    let ok = wc_of(1, 0, IBV_WC_RECV, 0, QPN);
    let failed = wc_of(2, IBV_WC_REM_ACCESS_ERR, IBV_WC_SEND, 0, QPN);
    // Not armed: nothing.
    assert!(cd(&d).push_cqe(Some(CQ), &ok, false));
    assert_eq!(cd(&d).take_doorbells().channels, Vec::<u32>::new());
    // Armed for any: the next one calls, once.
    cq.arm(false);
    assert!(cd(&d).push_cqe(Some(CQ), &ok, false));
    assert_eq!(cd(&d).take_doorbells().channels, vec![CQ]);
    assert!(cd(&d).push_cqe(Some(CQ), &ok, false));
    assert_eq!(cd(&d).take_doorbells().channels, Vec::<u32>::new(), "one per arm");
    // Solicited only: not for an unsolicited success; for a solicited one,
    // and for a failure.
    cq.arm(true);
    assert!(cd(&d).push_cqe(Some(CQ), &ok, false));
    assert_eq!(cd(&d).take_doorbells().channels, Vec::<u32>::new());
    assert!(cd(&d).push_cqe(Some(CQ), &ok, true));
    assert_eq!(cd(&d).take_doorbells().channels, vec![CQ]);
    cq.arm(true);
    let _ = cqes(&mut cq);
    assert!(cd(&d).push_cqe(Some(CQ), &failed, false));
    assert_eq!(cd(&d).take_doorbells().channels, vec![CQ], "a failure notifies");
    // Without a channel the arm calls for nothing.
    d.client_mut(ID).unwrap().channels.clear();
    cq.arm(false);
    let _ = cqes(&mut cq);
    assert!(cd(&d).push_cqe(Some(CQ), &ok, false));
    assert_eq!(cd(&d).take_doorbells().channels, Vec::<u32>::new());
}
