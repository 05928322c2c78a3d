//! The agent carrying its clients' traffic (plan step 2, `transport.rs`),
//! with the real program: two clients of one agent (both in this process,
//! each with its own connection, objects and keys) connect an RC QP each
//! over `lo`, post work requests into their send and receive queues and
//! find the completions in their CQ queues; the agent places the data into
//! their memory by cross-memory attach.  The agent joins a private
//! directory of endpoints (`--dir`) as a wire context: its QPs are linked
//! there.  Their UD QPs attached to a multicast group take what is sent
//! to it (`attach_mcast`, `detach_mcast`).

mod common;
use common::*;

use ibverbs_abi::verbs::*;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use swrdma_wired::client::{self, Options, Session, Target};
use swrdma_wired::ctl::msg::{AhAttr, MwType, QpAttr, QpType, RegMr, Reply, Request};
use swrdma_wired::transport::{parse_event_record, EVENT_RECORD};
use swrdma_wired::wq::format::{
    decode_cqe, encode_recv, encode_send, send_slot_size, Cqe, Data, MwBind, QpKind, RecvWqe, Remote, SendOp,
    SendShape, SendWqe, Sge, SgeList, UdAddr, CQE_SLOT,
};
use swrdma_wired::wq::{Consumer, Producer, Push};

const WAIT: Duration = Duration::from_secs(5);
const SHAPE: SendShape = SendShape {
    kind: QpKind::Connected,
    max_sge: 1,
    max_inline: 256,
};

fn lo() -> u32 {
    // SAFETY: a NUL-terminated name; the call only reads it.
    unsafe { libc::if_nametoindex(c"lo".as_ptr()) }
}

/// A private directory of endpoints (mode 0700), removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        use std::os::unix::fs::DirBuilderExt;
        let p = std::env::temp_dir().join(format!("swrdma-traffic-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::DirBuilder::new().mode(0o700).create(&p).unwrap();
        Dir(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether another user (or the kernel's rxe) holds `127.0.0.1:4791`: a
/// socket of ours cannot join it.
fn port_taken() -> bool {
    use rustix::net::{bind, socket, sockopt, AddressFamily, SocketAddrV4, SocketType};
    let s = socket(AddressFamily::INET, SocketType::DGRAM, None).unwrap();
    sockopt::set_socket_reuseport(&s, true).unwrap();
    bind(&s, &SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 4791)) == Err(rustix::io::Errno::ADDRINUSE)
}

/// A client in this process: its session, its memory, its objects'
/// queues (our halves) and its async pipe.
struct Client {
    s: Session,
    _access: OwnedFd,
    async_r: OwnedFd,
    _async_w: OwnedFd,
    buf: Vec<u8>,
    pd: u32,
    /// The MR over `buf`: its handle and key.
    mr: (u32, u32),
    /// The CQ: its handle and our half of its queue.
    cq_h: u32,
    cq: Consumer,
    _cq_bell: OwnedFd,
    qp: u32,
    /// Its QP's user handle (our name of it: the `element` of its async
    /// events).
    qp_uh: u64,
    qpn: u32,
    sq: Producer,
    rq: Producer,
}

impl Client {
    /// Client `n` (its CQ's user handle is `0xA000 + 0x10 n + 1`, its QP's
    /// `0xA000 + 0x10 n + 2`: each distinct).
    fn open(scope: &str, dir: &Path, n: u64) -> Client {
        let access = client::access_page().unwrap();
        let (async_r, async_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        rustix::io::ioctl_fionbio(&async_r, true).unwrap();
        let t = Target {
            ifindex: lo(),
            scope: scope.to_string(),
        };
        let o = Options {
            program: Some(AGENT.into()),
            idle_ms: Some(300),
            wait: WAIT,
            dir: Some(dir.to_path_buf()),
        };
        let mut s = client::connect_or_start(&t, &o, access.as_fd(), async_w.as_fd()).unwrap();
        let mut call = |req: Request, fds: &[BorrowedFd<'_>]| s.call(&req, fds, WAIT).unwrap();
        let Reply::Pd { handle: pd } = call(Request::AllocPd { parent: None }, &[]) else {
            panic!("alloc_pd")
        };
        let buf = vec![0u8; 1 << 16];
        let all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        let reg = RegMr {
            pd,
            access: all,
            addr: buf.as_ptr() as u64,
            length: buf.len() as u64,
            iova: buf.as_ptr() as u64,
        };
        let Reply::Mr { handle, lkey, .. } = call(Request::RegMr(reg), &[]) else {
            panic!("reg_mr")
        };
        let (c, cq_slots, cq_fd, bell) = cq_request(0xA000 + 0x10 * n + 1, true);
        let Reply::Cq { handle: cq, .. } = call(Request::CreateCq(c), &[cq_fd.as_fd(), bell.as_fd()]) else {
            panic!("create_cq")
        };
        let qp_uh = 0xA000 + 0x10 * n + 2;
        let (c, [(sq, sq_fd), (rq, rq_fd)]) = rc_qp_request(qp_uh, pd, cq);
        let (qp, qpn) = match call(Request::CreateQp(c), &[sq_fd.as_fd(), rq_fd.as_fd()]) {
            Reply::Qp { handle, qpn, cap } => {
                assert_eq!(
                    (cap.max_send_sge, cap.max_inline_data),
                    (1, 256),
                    "the shape of our WQEs"
                );
                (handle, qpn)
            }
            r => panic!("create_qp: {r:?}"),
        };
        Client {
            s,
            _access: access,
            async_r,
            _async_w: async_w,
            buf,
            pd,
            mr: (handle, lkey),
            cq_h: cq,
            cq: cq_slots.into_consumer(),
            _cq_bell: bell,
            qp,
            qp_uh,
            qpn,
            sq: sq.into_producer(),
            rq: rq.into_producer(),
        }
    }

    fn call(&mut self, req: Request) -> Reply {
        self.s.call(&req, &[], WAIT).unwrap()
    }

    fn at(&self, off: usize) -> u64 {
        self.buf.as_ptr() as u64 + off as u64
    }

    fn key(&self) -> u32 {
        self.mr.1
    }

    /// RESET -> INIT -> RTR -> RTS, connected to `dest` over 127.0.0.1.
    fn connect(&mut self, dest: u32) {
        let modify = |mask: u32, state: u32, f: &dyn Fn(&mut QpAttr)| {
            let mut attr = QpAttr {
                mask: mask | IBV_QP_STATE,
                qp_state: state as u8,
                ..QpAttr::default()
            };
            f(&mut attr);
            attr
        };
        let steps = [
            modify(
                IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                IBV_QPS_INIT,
                &|a| {
                    a.port_num = 1;
                    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
                },
            ),
            modify(
                IBV_QP_AV
                    | IBV_QP_PATH_MTU
                    | IBV_QP_DEST_QPN
                    | IBV_QP_RQ_PSN
                    | IBV_QP_MAX_DEST_RD_ATOMIC
                    | IBV_QP_MIN_RNR_TIMER,
                IBV_QPS_RTR,
                &|a| {
                    a.ah_attr = AhAttr {
                        dgid: std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets(),
                        sgid_index: 1,
                        hop_limit: 64,
                        is_global: 1,
                        port_num: 1,
                        ..AhAttr::default()
                    };
                    a.path_mtu = IBV_MTU_1024;
                    a.dest_qp_num = dest;
                    a.rq_psn = 0x100;
                    a.max_dest_rd_atomic = 4;
                    a.min_rnr_timer = 1;
                },
            ),
            modify(
                IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QPS_RTS,
                &|a| {
                    a.timeout = 14;
                    a.retry_cnt = 7;
                    a.rnr_retry = 7;
                    a.sq_psn = 0x100;
                    a.max_rd_atomic = 4;
                },
            ),
        ];
        for attr in steps {
            let qp = self.qp;
            assert_eq!(self.call(Request::ModifyQp { qp, attr }), Reply::Done, "{attr:?}");
        }
    }

    /// Posts send WQE `w`, ringing the agent when its consumer slept.
    fn post_send(&mut self, w: &SendWqe<'_>) {
        let mut b = vec![0u8; send_slot_size(1, 256).unwrap()];
        let n = encode_send(w, &SHAPE, &mut b).unwrap();
        if self.sq.try_push(&b[..n]).unwrap() == Push::Ring {
            self.s.doorbell().unwrap();
        }
    }

    /// Posts send WQE `w` without ringing the agent (as a client does
    /// while the agent's consumer is awake): the agent finds it at its
    /// next wake-up, whatever wakes it.
    fn post_send_quiet(&mut self, w: &SendWqe<'_>) {
        let mut b = vec![0u8; send_slot_size(1, 256).unwrap()];
        let n = encode_send(w, &SHAPE, &mut b).unwrap();
        let _ = self.sq.try_push(&b[..n]).unwrap();
    }

    fn post_recv(&mut self, wr_id: u64, off: usize, len: u32) {
        let (addr, lkey) = (self.at(off), self.key());
        push_recv(&mut self.rq, wr_id, addr, len, lkey);
    }

    /// A UD QP on our PD and CQ (user handle `user_handle`), brought to
    /// RTS with Q_Key [`QKEY`].
    fn ud_qp(&mut self, user_handle: u64) -> Ud {
        let (c, [(sq, sq_fd), (rq, rq_fd)]) = qp_request(QpType::Ud, user_handle, self.pd, self.cq_h);
        let (qp, qpn) = match self
            .s
            .call(&Request::CreateQp(c), &[sq_fd.as_fd(), rq_fd.as_fd()], WAIT)
        {
            Ok(Reply::Qp { handle, qpn, .. }) => (handle, qpn),
            r => panic!("create_qp (UD): {r:?}"),
        };
        let steps = [
            (IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
            (IBV_QPS_RTR, 0),
            (IBV_QPS_RTS, IBV_QP_SQ_PSN),
        ];
        for (state, mask) in steps {
            let attr = QpAttr {
                mask: mask | IBV_QP_STATE,
                qp_state: state as u8,
                port_num: if mask & IBV_QP_PORT != 0 { 1 } else { 0 },
                qkey: if mask & IBV_QP_QKEY != 0 { QKEY } else { 0 },
                sq_psn: if mask & IBV_QP_SQ_PSN != 0 { 0x10 } else { 0 },
                ..QpAttr::default()
            };
            assert_eq!(self.call(Request::ModifyQp { qp, attr }), Reply::Done, "{attr:?}");
        }
        Ud {
            qp,
            qpn,
            sq: sq.into_producer(),
            rq: rq.into_producer(),
        }
    }

    /// Posts a signaled inline SEND of `data` on UD QP `u` to `dest`.
    fn ud_send(&mut self, u: &mut Ud, wr_id: u64, dest: UdAddr, data: &[u8]) {
        let w = SendWqe {
            wr_id,
            op: SendOp::Send,
            send_flags: IBV_SEND_SIGNALED | IBV_SEND_INLINE,
            ud: Some(dest),
            xrc_srqn: None,
            data: Data::Inline(data),
        };
        let mut b = vec![0u8; send_slot_size(1, 256).unwrap()];
        let n = encode_send(&w, &UD_SHAPE, &mut b).unwrap();
        if u.sq.try_push(&b[..n]).unwrap() == Push::Ring {
            self.s.doorbell().unwrap();
        }
    }

    /// Posts a receive of `len` bytes at `off` of our memory on UD QP `u`.
    fn ud_recv(&mut self, u: &mut Ud, wr_id: u64, off: usize, len: u32) {
        let (addr, lkey) = (self.at(off), self.key());
        push_recv(&mut u.rq, wr_id, addr, len, lkey);
    }

    fn attach(&mut self, qp: u32, gid: [u8; 16]) -> Reply {
        self.call(Request::AttachMcast { qp, gid, lid: 0 })
    }

    fn detach(&mut self, qp: u32, gid: [u8; 16]) -> Reply {
        self.call(Request::DetachMcast { qp, gid, lid: 0 })
    }

    /// The CQEs that came within `WAIT`, until `want` did.
    fn poll(&mut self, want: usize) -> Vec<Cqe> {
        let end = Instant::now() + WAIT;
        let mut got = Vec::new();
        let mut b = [0u8; CQE_SLOT];
        while got.len() < want && Instant::now() < end {
            match self.cq.try_pop(&mut b).unwrap() {
                Some(n) => got.push(decode_cqe(&b[..n]).unwrap()),
                None => std::thread::sleep(Duration::from_micros(50)),
            }
        }
        got
    }

    /// The async events in our pipe now, as the kernel's records
    /// (`ib_uverbs_async_event_desc`): each one's element (the object's
    /// user handle) and event.
    fn events(&self) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        let mut r = [0u8; EVENT_RECORD];
        while let Ok(EVENT_RECORD) = rustix::io::read(&self.async_r, &mut r) {
            out.push(parse_event_record(&r).unwrap());
        }
        out
    }

    /// An MR over `len` bytes of our memory from `off` (its IOVAs are its
    /// addresses) with `access`: its lkey.
    fn reg_mr(&mut self, off: usize, len: usize, access: u32) -> u32 {
        let (pd, addr) = (self.pd, self.at(off));
        let reg = RegMr {
            pd,
            access,
            addr,
            length: len as u64,
            iova: addr,
        };
        match self.call(Request::RegMr(reg)) {
            Reply::Mr { lkey, .. } => lkey,
            r => panic!("reg_mr: {r:?}"),
        }
    }

    /// A memory window of type `ty` on our PD: its handle and rkey.
    fn alloc_mw(&mut self, ty: MwType) -> (u32, u32) {
        let pd = self.pd;
        match self.call(Request::AllocMw { pd, ty }) {
            Reply::Mw { handle, rkey } => (handle, rkey),
            r => panic!("alloc_mw: {r:?}"),
        }
    }

    fn state(&mut self) -> u32 {
        let qp = self.qp;
        match self.call(Request::QueryQp { qp, mask: 0 }) {
            Reply::QpAttr(a) => a.qp_state as u32,
            r => panic!("query_qp: {r:?}"),
        }
    }
}

/// Writes a receive WQE of one SGE (`addr`, `len`, `lkey`) into `q`.
fn push_recv(q: &mut Producer, wr_id: u64, addr: u64, len: u32, lkey: u32) {
    let sge = [Sge {
        addr,
        length: len,
        lkey,
    }];
    let mut b = [0u8; 128];
    let n = encode_recv(
        &RecvWqe {
            wr_id,
            sges: SgeList::new(&sge),
        },
        1,
        &mut b,
    )
    .unwrap();
    let _ = q.try_push(&b[..n]).unwrap();
}

/// The Q_Key of the UD QPs.
const QKEY: u32 = 0x1357_2468;
const UD_SHAPE: SendShape = SendShape {
    kind: QpKind::Ud,
    max_sge: 1,
    max_inline: 256,
};
/// The bytes of the GRH before a UD receive's data.
const GRH: usize = 40;

/// A client's UD QP: its handle, its number, our halves of its queues.
struct Ud {
    qp: u32,
    qpn: u32,
    sq: Producer,
    rq: Producer,
}

fn wqe(wr_id: u64, op: SendOp, data: Data<'_>) -> SendWqe<'_> {
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

fn summary(c: &[Cqe]) -> Vec<(u64, u32, u32, u32)> {
    c.iter().map(|e| (e.wr_id, e.status, e.opcode, e.byte_len)).collect()
}

/// A QPN link of the directory: the context it names (`c<id>`).
fn link(dir: &Path, qpn: u32) -> Option<String> {
    Some(
        std::fs::read_link(dir.join(format!("q{qpn}")))
            .ok()?
            .to_str()?
            .to_string(),
    )
}

#[test]
fn the_agent_carries_rc_traffic_between_its_clients() {
    if port_taken() {
        eprintln!("skipped: 127.0.0.1:4791 is held by another user or the kernel's rxe");
        return;
    }
    let dir = Dir::new("rc");
    let s = scope("traffic");
    let mut a = Client::open(&s, &dir.0, 0);
    let mut b = Client::open(&s, &dir.0, 1);
    assert_ne!(a.qp_uh, b.qp_uh);
    assert_eq!(a.s.agent_pid, b.s.agent_pid, "one agent");
    assert!(a.s.transport && b.s.transport, "an agent with --dir carries traffic");
    let agent = a.s.agent_pid;
    // Its QPs are linked to its endpoint in the directory.
    let ctx = link(&dir.0, a.qpn).expect("A's QPN linked");
    assert!(ctx.starts_with('c'), "{ctx}");
    let list: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        link(&dir.0, b.qpn).as_deref(),
        Some(&ctx[..]),
        "{list:?} {} {}",
        a.qpn,
        b.qpn
    );
    assert!(dir.0.join(&ctx).exists(), "the agent's endpoint {ctx}");
    let (an, bn) = (a.qpn, b.qpn);
    a.connect(bn);
    b.connect(an);
    // A SEND from A's memory into B's posted receive.
    a.buf[..20].copy_from_slice(b"twenty bytes, placed");
    b.post_recv(500, 1000, 64);
    let src = [Sge {
        addr: a.at(0),
        length: 20,
        lkey: a.key(),
    }];
    a.post_send(&wqe(1, SendOp::Send, Data::Sges(SgeList::new(&src))));
    assert_eq!(summary(&a.poll(1)), vec![(1, 0, IBV_WC_SEND, 20)]);
    assert_eq!(summary(&b.poll(1)), vec![(500, 0, IBV_WC_RECV, 20)]);
    assert_eq!(&b.buf[1000..1020], b"twenty bytes, placed");
    // WRITE into B, READ it back into A, fetch-and-add on B.
    let remote = Remote {
        addr: b.at(2000),
        rkey: b.key(),
    };
    a.post_send(&wqe(2, SendOp::RdmaWrite(remote), Data::Inline(b"written remotely")));
    let back = [Sge {
        addr: a.at(3000),
        length: 16,
        lkey: a.key(),
    }];
    a.post_send(&wqe(3, SendOp::RdmaRead(remote), Data::Sges(SgeList::new(&back))));
    b.buf[4000..4008].copy_from_slice(&40u64.to_ne_bytes());
    let orig = [Sge {
        addr: a.at(4100),
        length: 8,
        lkey: a.key(),
    }];
    let faa = SendOp::FetchAndAdd {
        remote: Remote {
            addr: b.at(4000),
            rkey: b.key(),
        },
        add: 2,
    };
    a.post_send(&wqe(4, faa, Data::Sges(SgeList::new(&orig))));
    let got = a.poll(3);
    assert_eq!(
        got.iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(2, 0), (3, 0), (4, 0)],
        "in order, each succeeded"
    );
    assert_eq!(&b.buf[2000..2016], b"written remotely");
    assert_eq!(&a.buf[3000..3016], b"written remotely");
    assert_eq!(b.buf[4000..4008], 42u64.to_ne_bytes());
    assert_eq!(a.buf[4100..4108], 40u64.to_ne_bytes());
    assert!(b.poll(1).is_empty(), "one-sided: nothing for B");
    // Each client's keys are its own: an MR of A's (a key B's tables do
    // not have) does not open B's memory.
    let (pd, base) = (a.pd, a.at(0));
    let Reply::Mr { lkey: a_only, .. } = a.call(Request::RegMr(RegMr {
        pd,
        access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
        addr: base,
        length: 4096,
        iova: base,
    })) else {
        panic!("reg_mr")
    };
    assert_ne!(a_only, b.key());
    let bad = Remote {
        addr: b.at(0),
        rkey: a_only,
    };
    a.post_send(&wqe(5, SendOp::RdmaWrite(bad), Data::Inline(b"no")));
    assert_eq!(
        a.poll(1).iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(5, IBV_WC_REM_ACCESS_ERR)]
    );
    assert_eq!(&b.buf[0..2], &[0, 0], "nothing written");
    // Both QPs went to the error state, as the control path answers, and
    // B heard of it on its async pipe.
    assert_eq!(a.state(), IBV_QPS_ERR);
    let end = Instant::now() + WAIT;
    let mut evs = b.events();
    while evs.is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
        evs = b.events();
    }
    // The kernel's record: element = B's QP's user handle (what libibverbs
    // reads as the `ibv_qp *`), the event.
    assert_eq!(evs, vec![(b.qp_uh, IBV_EVENT_QP_ACCESS_ERR)]);
    assert_eq!(b.qp_uh, 0xA012);
    assert_eq!(b.state(), IBV_QPS_ERR);
    assert!(a.events().is_empty(), "the requester has a completion, not an event");
    // A destroyed QP's link goes.
    let qp = a.qp;
    assert_eq!(a.call(Request::DestroyQp { qp }), Reply::Done);
    assert_eq!(link(&dir.0, an), None);
    assert!(link(&dir.0, bn).is_some());
    drop(a);
    drop(b);
    assert!(wait_gone(agent, Duration::from_secs(5)), "idle exit");
    assert!(!dir.0.join(&ctx).exists(), "the endpoint went with the agent");
}

/// Whether IPv4 group `g` has members on `lo` (`/proc/net/igmp`, the
/// kernel's list of memberships per interface); None: the list cannot be
/// read here.
fn lo_member_of(g: std::net::Ipv4Addr) -> Option<bool> {
    let t = std::fs::read_to_string("/proc/net/igmp").ok()?;
    // (The address as the kernel prints it: its network-order word, in hex.)
    let want = format!("{:08X}", u32::from_ne_bytes(g.octets()));
    let mut on_lo = false;
    for l in t.lines().skip(1) {
        if !l.starts_with('\t') {
            on_lo = l.split_whitespace().nth(1) == Some("lo");
        } else if on_lo && l.split_whitespace().next() == Some(&want[..]) {
            return Some(true);
        }
    }
    Some(false)
}

/// Waits up to `WAIT` for `lo_member_of(g)` to be `want` (true when the
/// list cannot be read: nothing to look at).
fn lo_membership_becomes(g: std::net::Ipv4Addr, want: bool) -> bool {
    let end = Instant::now() + WAIT;
    loop {
        match lo_member_of(g) {
            None => return true,
            Some(m) if m == want => return true,
            Some(_) if Instant::now() >= end => return false,
            Some(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

#[test]
fn the_agent_carries_multicast_between_its_clients() {
    if port_taken() {
        eprintln!("skipped: 127.0.0.1:4791 is held by another user or the kernel's rxe");
        return;
    }
    let dir = Dir::new("mcast");
    let s = scope("mcast");
    let mut a = Client::open(&s, &dir.0, 0);
    let mut b = Client::open(&s, &dir.0, 1);
    assert_eq!(a.s.agent_pid, b.s.agent_pid, "one agent");
    assert!(a.s.transport, "an agent with --dir carries traffic");
    let agent = a.s.agent_pid;
    let group = std::net::Ipv4Addr::new(239, 1, 2, 3);
    let mgid = group.to_ipv6_mapped().octets();
    let mut ua = a.ud_qp(0xB001);
    let mut ub = b.ud_qp(0xB002);
    match a.attach(ua.qp, mgid) {
        Reply::Done => {}
        Reply::Err(e) if e != libc::EINVAL && e != libc::EOPNOTSUPP => {
            // (The kernel refused the group socket on lo: the agent joins
            // as the provider's own wire context does, and `wire::sock`'s
            // test of groups skips alike.)
            eprintln!("skipped: the agent cannot join a group on lo here (errno {e})");
            return;
        }
        r => panic!("attach_mcast: {r:?}"),
    }
    assert_eq!(b.attach(ub.qp, mgid), Reply::Done);
    assert_eq!(b.attach(ub.qp, mgid), Reply::Done, "the same again: no change");
    assert!(lo_membership_becomes(group, true), "the agent joined {group} on lo");
    // An AH to the group is one of the PD's like any other; a UD send to
    // it names QPN 0xffffff and the QPs' Q_Key.
    let av = AhAttr {
        dgid: mgid,
        sgid_index: 1,
        hop_limit: 64,
        is_global: 1,
        port_num: 1,
        ..AhAttr::default()
    };
    let pd = a.pd;
    let Reply::Ah { .. } = a.call(Request::CreateAh { pd, attr: av }) else {
        panic!("create_ah to the group")
    };
    let to_group = UdAddr {
        remote_qpn: 0xff_ffff,
        remote_qkey: QKEY,
        dgid: av.dgid,
        flow_label: av.flow_label,
        sgid_index: av.sgid_index,
        hop_limit: av.hop_limit,
        traffic_class: av.traffic_class,
        is_global: true,
    };
    // One datagram: a copy for each QP attached, the sender's own too (as
    // rxe gives it).
    let msg = b"to every member of the group";
    let len = (GRH + msg.len()) as u32;
    b.ud_recv(&mut ub, 700, 8000, 256);
    b.ud_recv(&mut ub, 701, 9000, 256);
    a.ud_recv(&mut ua, 600, 8000, 256);
    a.ud_recv(&mut ua, 601, 9000, 256);
    a.ud_send(&mut ua, 11, to_group, msg);
    let got_a = a.poll(2);
    let got_b = b.poll(1);
    let sent = got_a
        .iter()
        .find(|e| e.opcode == IBV_WC_SEND)
        .map(|e| (e.wr_id, e.status));
    assert_eq!(sent, Some((11, 0)), "{:?}", summary(&got_a));
    assert_eq!(summary(&got_b), vec![(700, 0, IBV_WC_RECV, len)]);
    assert_eq!((got_b[0].src_qp, got_b[0].qp_num), (ua.qpn, ub.qpn));
    assert_eq!(&b.buf[8000 + GRH..8000 + GRH + msg.len()], msg);
    let own: Vec<_> = got_a.iter().filter(|e| e.opcode == IBV_WC_RECV).collect();
    assert_eq!(own.len(), 1, "{:?}", summary(&got_a));
    assert_eq!((own[0].wr_id, own[0].status, own[0].qp_num), (600, 0, ua.qpn));
    // B detaches: the next datagram reaches A only.
    assert_eq!(b.detach(ub.qp, mgid), Reply::Done);
    let msg2 = b"the second, for A only";
    a.ud_send(&mut ua, 12, to_group, msg2);
    let got_a = a.poll(2);
    assert_eq!(got_a.len(), 2, "A's send and its own copy: {:?}", summary(&got_a));
    assert!(got_a
        .iter()
        .any(|e| (e.wr_id, e.status, e.opcode) == (12, 0, IBV_WC_SEND)));
    assert!(got_a
        .iter()
        .any(|e| (e.wr_id, e.status, e.opcode) == (601, 0, IBV_WC_RECV)));
    assert_eq!(&a.buf[9000 + GRH..9000 + GRH + msg2.len()], msg2);
    std::thread::sleep(Duration::from_millis(300));
    let mut cqe = [0u8; CQE_SLOT];
    assert_eq!(b.cq.try_pop(&mut cqe).unwrap(), None, "B detached: nothing for it");
    assert_eq!(b.buf[9000..9000 + GRH + msg2.len()], vec![0u8; GRH + msg2.len()]);
    // The answers of the provider's own verbs.
    assert_eq!(b.detach(ub.qp, mgid), Reply::Err(libc::EINVAL), "detached already");
    let other = std::net::Ipv4Addr::new(239, 1, 2, 4).to_ipv6_mapped().octets();
    assert_eq!(b.detach(ub.qp, other), Reply::Err(libc::EINVAL), "never attached");
    let rc = b.qp;
    assert_eq!(b.attach(rc, mgid), Reply::Err(libc::EINVAL), "an RC QP");
    let unicast = std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets();
    assert_eq!(b.attach(ub.qp, unicast), Reply::Err(libc::EINVAL), "not a group");
    assert_eq!(b.attach(0xdead, mgid), Reply::Err(libc::ENOENT), "no such QP");
    // A's UD QP goes while attached: the agent leaves the group (it was
    // the last member).
    assert!(lo_membership_becomes(group, true));
    let qp = ua.qp;
    assert_eq!(a.call(Request::DestroyQp { qp }), Reply::Done);
    assert!(lo_membership_becomes(group, false), "left with the last QP's destroy");
    // B attached again, then gone: left with the client.
    assert_eq!(b.attach(ub.qp, mgid), Reply::Done);
    assert!(lo_membership_becomes(group, true), "joined again");
    drop(ub);
    drop(b);
    assert!(lo_membership_becomes(group, false), "left with the client's end");
    drop(a);
    assert!(wait_gone(agent, Duration::from_secs(5)), "idle exit");
}

/// A signaled `BIND_MW` WQE: window `mw` over `len` bytes at `addr` of MR
/// `lkey` (IOVAs: addresses here), remote write, new rkey `rkey`.
fn bind_wqe(wr_id: u64, mw: u32, rkey: u32, lkey: u32, addr: u64, len: u64) -> SendWqe<'static> {
    let bind = MwBind {
        mw,
        mr_lkey: lkey,
        addr,
        length: len,
        access: IBV_ACCESS_REMOTE_WRITE,
    };
    wqe(wr_id, SendOp::BindMw { rkey, bind }, Data::Sges(SgeList::new(&[])))
}

/// A signaled inline RDMA WRITE of `data` to `addr` through `rkey`.
fn write_wqe(wr_id: u64, addr: u64, rkey: u32, data: &[u8]) -> SendWqe<'_> {
    wqe(wr_id, SendOp::RdmaWrite(Remote { addr, rkey }), Data::Inline(data))
}

/// `ibv_inc_rkey`: the next 8-bit key of the same index.
fn inc_rkey(rkey: u32) -> u32 {
    (rkey & !0xff) | (rkey.wrapping_add(1) & 0xff)
}

/// Memory windows through the agent: binds and invalidations are WQEs of
/// the owner's send queue, done by the agent against its tables as it
/// takes them and completed in order; the peer's RDMA reaches the memory
/// through a bound window's rkey only.  Type 2 (C's window, D writes): a
/// bind after a WRITE completes after it; D's WRITE through it lands; D's
/// SEND with invalidate unbinds it (C's receive says so), so C binds it
/// again; C's LOCAL_INV unbinds it and D's next WRITE is `REM_ACCESS_ERR`;
/// a bind in the error state is flushed.  Type 1 (A's window, B writes)
/// likewise, and a bind posted just before the window's `dealloc_mw` is
/// done first, the dealloc then unbinding it.  A bind that fails (an MR
/// without `MW_BIND`) is `MW_BIND_ERR`, the QP in the error state, what
/// comes after it flushed.
#[test]
fn the_agent_binds_and_invalidates_memory_windows() {
    if port_taken() {
        eprintln!("skipped: 127.0.0.1:4791 is held by another user or the kernel's rxe");
        return;
    }
    let dir = Dir::new("mw");
    let s = scope("mw");
    let mut a = Client::open(&s, &dir.0, 0);
    let mut b = Client::open(&s, &dir.0, 1);
    let mut c = Client::open(&s, &dir.0, 2);
    let mut d = Client::open(&s, &dir.0, 3);
    assert!(a.s.transport, "an agent with --dir carries traffic");
    let agent = a.s.agent_pid;
    let (an, bn, cn, dn) = (a.qpn, b.qpn, c.qpn, d.qpn);
    a.connect(bn);
    b.connect(an);
    c.connect(dn);
    d.connect(cn);
    let bindable = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;

    // Type 2: C's window over 4 KiB at 8192 of an MR of C's.
    let mr = c.reg_mr(0, 1 << 16, bindable);
    let (mw2, r0) = c.alloc_mw(MwType::Two);
    let r2 = (r0 & !0xff) | 0x5a;
    let (at, (dat, dkey)) = (c.at(8192), (d.at(100), d.key()));
    c.post_send(&write_wqe(1, dat, dkey, b"before the bind"));
    c.post_send(&bind_wqe(2, mw2, r2, mr, at, 4096));
    assert_eq!(
        summary(&c.poll(2)),
        vec![(1, 0, IBV_WC_RDMA_WRITE, 15), (2, 0, IBV_WC_BIND_MW, 0)],
        "the bind completes after the WRITE before it"
    );
    assert_eq!(&d.buf[100..115], b"before the bind");
    d.post_send(&write_wqe(10, at, r2, b"through the window"));
    assert_eq!(summary(&d.poll(1)), vec![(10, 0, IBV_WC_RDMA_WRITE, 18)]);
    assert_eq!(&c.buf[8192..8210], b"through the window");
    // D's SEND with invalidate: C's receive says it, the window is unbound
    // (so C can bind it again: a bound type 2 window cannot be).
    c.post_recv(20, 0, 64);
    d.post_send(&wqe(11, SendOp::SendWithInv { rkey: r2 }, Data::Inline(b"inv")));
    assert_eq!(summary(&d.poll(1)), vec![(11, 0, IBV_WC_SEND, 3)]);
    let got = c.poll(1);
    assert_eq!(summary(&got), vec![(20, 0, IBV_WC_RECV, 3)]);
    assert_ne!(got[0].wc_flags & IBV_WC_WITH_INV, 0);
    assert_eq!(got[0].imm, r2, "the rkey invalidated");
    let r3 = (r0 & !0xff) | 0x5b;
    c.post_send(&bind_wqe(3, mw2, r3, mr, at, 4096));
    assert_eq!(summary(&c.poll(1)), vec![(3, 0, IBV_WC_BIND_MW, 0)]);
    d.post_send(&write_wqe(12, at + 100, r3, b"bound again"));
    assert_eq!(summary(&d.poll(1)), vec![(12, 0, IBV_WC_RDMA_WRITE, 11)]);
    assert_eq!(&c.buf[8292..8303], b"bound again");
    // C's LOCAL_INV: D's next WRITE through it is refused, nothing lands.
    c.post_send(&wqe(4, SendOp::LocalInv { rkey: r3 }, Data::Sges(SgeList::new(&[]))));
    assert_eq!(summary(&c.poll(1)), vec![(4, 0, IBV_WC_LOCAL_INV, 0)]);
    d.post_send(&write_wqe(13, at + 200, r3, b"too late"));
    assert_eq!(
        d.poll(1).iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(13, IBV_WC_REM_ACCESS_ERR)]
    );
    assert_eq!(c.buf[8392..8400], [0; 8], "nothing written");
    assert_eq!(c.state(), IBV_QPS_ERR, "the responder in the error state");
    // In the error state a bind is flushed, with its opcode.
    c.post_send(&bind_wqe(5, mw2, (r0 & !0xff) | 0x5c, mr, at, 4096));
    assert_eq!(summary(&c.poll(1)), vec![(5, IBV_WC_WR_FLUSH_ERR, IBV_WC_BIND_MW, 0)]);
    assert_eq!(c.call(Request::DeallocMw { mw: mw2 }), Reply::Done);

    // Type 1: A's window, B writes through it.
    let mr = a.reg_mr(0, 1 << 16, bindable);
    let (mw1, r0) = a.alloc_mw(MwType::One);
    let r1 = inc_rkey(r0);
    let at = a.at(8192);
    a.post_send(&bind_wqe(1, mw1, r1, mr, at, 4096));
    assert_eq!(summary(&a.poll(1)), vec![(1, 0, IBV_WC_BIND_MW, 0)]);
    b.post_send(&write_wqe(10, at, r1, b"type 1"));
    assert_eq!(summary(&b.poll(1)), vec![(10, 0, IBV_WC_RDMA_WRITE, 6)]);
    assert_eq!(&a.buf[8192..8198], b"type 1");
    // Bound again (its next rkey) and deallocated at once: the bind
    // posted before the dealloc is done first, then the dealloc unbinds.
    // (Posted without the doorbell: the dealloc is what wakes the agent.)
    let r1b = inc_rkey(r1);
    a.post_send_quiet(&bind_wqe(2, mw1, r1b, mr, at + 4096, 4096));
    assert_eq!(a.call(Request::DeallocMw { mw: mw1 }), Reply::Done);
    assert_eq!(
        summary(&a.poll(1)),
        vec![(2, 0, IBV_WC_BIND_MW, 0)],
        "done before the dealloc"
    );
    assert_eq!(
        a.call(Request::DeallocMw { mw: mw1 }),
        Reply::Err(libc::ENOENT),
        "deallocated"
    );
    b.post_send(&write_wqe(11, at + 4096, r1b, b"gone"));
    assert_eq!(
        b.poll(1).iter().map(|e| (e.wr_id, e.status)).collect::<Vec<_>>(),
        vec![(11, IBV_WC_REM_ACCESS_ERR)]
    );
    assert_eq!(a.buf[12288..12292], [0; 4], "nothing written");
    let mut cqe = [0u8; CQE_SLOT];
    assert_eq!(a.cq.try_pop(&mut cqe).unwrap(), None, "nothing for the window's owner");

    // A bind that fails: an MR without MW_BIND (E's QP is connected to
    // D's, which sends it nothing).
    let mut e = Client::open(&s, &dir.0, 4);
    e.connect(dn);
    let plain = e.reg_mr(0, 1 << 16, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    let (mw, r0) = e.alloc_mw(MwType::One);
    let eat = e.at(0);
    e.post_send(&bind_wqe(1, mw, inc_rkey(r0), plain, eat, 64));
    e.post_send(&wqe(2, SendOp::Send, Data::Inline(b"after")));
    assert_eq!(
        summary(&e.poll(2)),
        vec![
            (1, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW, 0),
            (2, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 0)
        ]
    );
    assert_eq!(e.state(), IBV_QPS_ERR);
    assert!(e.events().is_empty(), "a completion, not an event");
    assert_eq!(e.call(Request::DeallocMw { mw }), Reply::Done);
    drop((a, b, c, d, e));
    assert!(wait_gone(agent, Duration::from_secs(5)), "idle exit");
}
