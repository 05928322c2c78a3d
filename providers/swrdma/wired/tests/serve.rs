//! The agent serving its clients' control path (plan step 2), with the
//! real program over real sockets: the verbs' requests of one client, two
//! clients kept apart, a client killed with its objects alive, clients
//! that break the protocol, and a client over its budget of descriptors
//! and mappings.  Each test has an agent of its own (a private
//! scope); the clients are this process (`client::Session::call`) or
//! `swrdma-wired-hello --objects`.

mod common;
use common::*;

use ibverbs_abi::verbs::*;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};
use swrdma_wired::client::{self, Error, Options, Session, Target};
use swrdma_wired::ctl::msg::{AhAttr, CreateCq, QpAttr, Queue, RegMr, Reply, Request, MAX_NUM};
use swrdma_wired::wq::format::CQE_SLOT;
use swrdma_wired::wq::Slots;

const WAIT: Duration = Duration::from_secs(5);

fn lo() -> u32 {
    // SAFETY: a NUL-terminated name; the call only reads it.
    unsafe { libc::if_nametoindex(c"lo".as_ptr()) }
}

/// A client in this process, with what its objects need kept alive.
struct Client {
    s: Session,
    _access: OwnedFd,
    _async: (OwnedFd, OwnedFd),
    queues: Vec<Slots>,
}

impl Client {
    /// Connects to the agent of `scope` (started with idle time `idle_ms`
    /// when none runs) and greets it.
    fn open(scope: &str, idle_ms: u64) -> Client {
        let access = client::access_page().unwrap();
        let pipe = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let t = Target {
            ifindex: lo(),
            scope: scope.to_string(),
        };
        let o = Options {
            program: Some(AGENT.into()),
            idle_ms: Some(idle_ms),
            wait: WAIT,
            dir: None,
        };
        let s = client::connect_or_start(&t, &o, access.as_fd(), pipe.1.as_fd()).unwrap();
        assert!(!s.transport, "no --dir: the control path only");
        Client {
            s,
            _access: access,
            _async: pipe,
            queues: Vec::new(),
        }
    }

    fn agent(&self) -> u32 {
        self.s.agent_pid
    }

    fn call(&mut self, req: Request, fds: &[BorrowedFd<'_>]) -> Reply {
        self.s.call(&req, fds, WAIT).unwrap()
    }

    /// The errno a request fails with.
    fn err(&mut self, req: Request, fds: &[BorrowedFd<'_>]) -> i32 {
        match self.call(req, fds) {
            Reply::Err(e) => e,
            r => panic!("{req:?}: {r:?}, not an error"),
        }
    }

    fn done(&mut self, req: Request) {
        assert_eq!(self.call(req, &[]), Reply::Done, "{req:?}");
    }

    fn pd(&mut self) -> u32 {
        match self.call(Request::AllocPd { parent: None }, &[]) {
            Reply::Pd { handle } => handle,
            r => panic!("alloc_pd: {r:?}"),
        }
    }

    /// A CQ of 64 with its CQE queue and a doorbell.
    fn cq(&mut self) -> u32 {
        self.try_cq(true).unwrap_or_else(|e| panic!("create_cq: errno {e}"))
    }

    /// A CQ of 64 with its CQE queue, and a doorbell when `doorbell`: its
    /// handle, or the errno.
    fn try_cq(&mut self, doorbell: bool) -> Result<u32, i32> {
        let (c, q, fd, bell) = cq_request(0xc000, doorbell);
        let fds = [fd.as_fd(), bell.as_fd()];
        match self.call(Request::CreateCq(c), &fds[..1 + doorbell as usize]) {
            Reply::Cq { handle, cqe: 64 } => {
                self.queues.push(q);
                Ok(handle)
            }
            Reply::Err(e) => Err(e),
            r => panic!("create_cq: {r:?}"),
        }
    }

    /// An RC QP on `pd` and `cq` with its SQ and RQ: (handle, QPN).
    fn rc_qp(&mut self, pd: u32, cq: u32) -> (u32, u32) {
        let (c, [(sq, sq_fd), (rq, rq_fd)]) = rc_qp_request(0x9000, pd, cq);
        match self.call(Request::CreateQp(c), &[sq_fd.as_fd(), rq_fd.as_fd()]) {
            Reply::Qp { handle, qpn, cap } => {
                assert!((2..=MAX_NUM).contains(&qpn), "{qpn}");
                assert_eq!((cap.max_send_wr, cap.max_inline_data), (16, 256), "granted: {cap:?}");
                self.queues.extend([sq, rq]);
                (handle, qpn)
            }
            r => panic!("create_qp: {r:?}"),
        }
    }
}

fn modify(qp: u32, mask: u32, state: u32, f: impl FnOnce(&mut QpAttr)) -> Request {
    let mut attr = QpAttr {
        mask: mask | IBV_QP_STATE,
        qp_state: state as u8,
        ..QpAttr::default()
    };
    f(&mut attr);
    Request::ModifyQp { qp, attr }
}

/// A path over `lo`: from GID 1 (127.0.0.1) to 127.0.0.1.
fn lo_path() -> AhAttr {
    AhAttr {
        dgid: std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped().octets(),
        flow_label: 0,
        sgid_index: 1,
        hop_limit: 64,
        traffic_class: 0,
        is_global: 1,
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        port_num: 1,
    }
}

/// RESET -> INIT -> RTR -> RTS of RC QP `qp` (connected to `dest`), with
/// the errnos of invalid steps on the way.
fn connect_rc(c: &mut Client, qp: u32, dest: u32) {
    let init = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    let rtr = IBV_QP_AV
        | IBV_QP_PATH_MTU
        | IBV_QP_DEST_QPN
        | IBV_QP_RQ_PSN
        | IBV_QP_MAX_DEST_RD_ATOMIC
        | IBV_QP_MIN_RNR_TIMER;
    let rts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
    assert_eq!(
        c.err(modify(qp, 0, IBV_QPS_RTS, |_| ()), &[]),
        libc::EINVAL,
        "RESET -> RTS"
    );
    assert_eq!(
        c.err(modify(qp, init, IBV_QPS_INIT, |a| a.port_num = 2), &[]),
        libc::EINVAL,
        "port 2"
    );
    c.done(modify(qp, init, IBV_QPS_INIT, |a| {
        a.port_num = 1;
        a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    }));
    let to_rtr = |a: &mut QpAttr| {
        a.ah_attr = lo_path();
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = dest;
        a.rq_psn = 0x123;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
    };
    assert_eq!(
        c.err(modify(qp, 0, IBV_QPS_RTR, |_| ()), &[]),
        libc::EINVAL,
        "RTR without a path"
    );
    let bad_gid = modify(qp, rtr, IBV_QPS_RTR, |a| {
        to_rtr(a);
        a.ah_attr.sgid_index = 200;
    });
    assert_eq!(c.err(bad_gid, &[]), libc::EINVAL, "a GID index lo has not");
    assert_eq!(
        c.err(modify(999, 0, IBV_QPS_ERR, |_| ()), &[]),
        libc::ENOENT,
        "no such QP"
    );
    c.done(modify(qp, rtr, IBV_QPS_RTR, to_rtr));
    let to_rts = |a: &mut QpAttr| {
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.sq_psn = 0x456;
        a.max_rd_atomic = 1;
    };
    let late = modify(qp, rts, IBV_QPS_RTS, |a| {
        to_rts(a);
        a.timeout = 32;
    });
    assert_eq!(c.err(late, &[]), libc::EINVAL, "timeout 32");
    c.done(modify(qp, rts, IBV_QPS_RTS, to_rts));
    assert_eq!(
        c.err(modify(qp, 0, IBV_QPS_INIT, |_| ()), &[]),
        libc::EINVAL,
        "RTS -> INIT"
    );
    match c.call(Request::QueryQp { qp, mask: 0 }, &[]) {
        Reply::QpAttr(a) => {
            assert_eq!((a.qp_state as u32, a.dest_qp_num, a.sq_psn), (IBV_QPS_RTS, dest, 0x456));
            assert_eq!(a.ah_attr, lo_path());
        }
        r => panic!("query_qp: {r:?}"),
    }
}

#[test]
fn one_client_through_the_verbs() {
    let s = scope("verbs");
    // A short idle time: the agent must stay while the session is open.
    let mut c = Client::open(&s, 300);
    let agent = c.agent();
    let pd = c.pd();
    // A CQE queue of another geometry than its file: EINVAL, nothing made.
    let (_q, fd) = Slots::create(64, CQE_SLOT).unwrap();
    let wrong = CreateCq {
        user_handle: 0xc001,
        cqe: 64,
        queue: Queue {
            depth: 128,
            slot_size: CQE_SLOT as u32,
        },
        doorbell: false,
        channel: false,
    };
    assert_eq!(c.err(Request::CreateCq(wrong), &[fd.as_fd()]), libc::EINVAL);
    let cq = c.cq();
    assert_eq!(cq, pd + 1, "the refused CQ took no handle");
    std::thread::sleep(Duration::from_millis(700));
    assert!(alive(agent), "a connected client keeps the agent past its idle time");
    let (qp, qpn) = c.rc_qp(pd, cq);
    connect_rc(&mut c, qp, qpn);
    // An MR on our own memory; one where nothing is mapped.
    let mem = vec![0u8; 1 << 16];
    let reg = |addr: u64, length: u64| {
        Request::RegMr(RegMr {
            pd,
            access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
            addr,
            length,
            iova: addr,
        })
    };
    let mr = match c.call(reg(mem.as_ptr() as u64, mem.len() as u64), &[]) {
        Reply::Mr { handle, lkey, rkey } => {
            assert_eq!(lkey, rkey);
            handle
        }
        r => panic!("reg_mr: {r:?}"),
    };
    assert_eq!(c.err(reg(4096, 4096), &[]), libc::EFAULT, "nothing mapped at 4096");
    c.done(Request::DeregMr { mr });
    assert_eq!(c.err(Request::DeregMr { mr }, &[]), libc::ENOENT);
    // Out of order: EBUSY; then in order.
    assert_eq!(c.err(Request::DestroyCq { cq }, &[]), libc::EBUSY);
    assert_eq!(c.err(Request::DeallocPd { pd }, &[]), libc::EBUSY);
    assert_eq!(c.err(Request::DestroyCq { cq: pd }, &[]), libc::EINVAL, "a PD's handle");
    c.done(Request::DestroyQp { qp });
    c.done(Request::DestroyCq { cq });
    c.done(Request::DeallocPd { pd });
    assert_eq!(c.err(Request::DeallocPd { pd }, &[]), libc::ENOENT);
    assert_eq!(c.err(Request::DestroyQp { qp }, &[]), libc::ENOENT);
    // The session ends: the agent, idle, exits.
    drop(c);
    assert!(
        wait_gone(agent, Duration::from_secs(5)),
        "idle exit once the client left"
    );
}

#[test]
fn two_clients_are_isolated() {
    let s = scope("two");
    let mut a = Client::open(&s, 2000);
    let mut b = Client::open(&s, 2000);
    assert_eq!(a.agent(), b.agent());
    let pd_a = a.pd();
    let cq_a = a.cq();
    let (qp_a, qpn_a) = a.rc_qp(pd_a, cq_a);
    // B has a PD of the same number, and nothing else.
    assert_eq!(b.pd(), pd_a, "handles count per client");
    assert_eq!(b.err(Request::DestroyCq { cq: cq_a }, &[]), libc::ENOENT);
    assert_eq!(b.err(Request::QueryQp { qp: qp_a, mask: 0 }, &[]), libc::ENOENT);
    assert_eq!(b.err(Request::DestroyQp { qp: qp_a }, &[]), libc::ENOENT);
    assert_eq!(b.err(modify(qp_a, 0, IBV_QPS_ERR, |_| ()), &[]), libc::ENOENT);
    // B's own objects get the same handles and other numbers.
    let cq_b = b.cq();
    let (qp_b, qpn_b) = b.rc_qp(pd_a, cq_b);
    assert_eq!((cq_b, qp_b), (cq_a, qp_a));
    assert_ne!(qpn_a, qpn_b, "QP numbers are the agent's");
    connect_rc(&mut a, qp_a, qpn_b);
    connect_rc(&mut b, qp_b, qpn_a);
    // A's destruction is A's.
    a.done(Request::DestroyQp { qp: qp_a });
    match b.call(Request::QueryQp { qp: qp_b, mask: 0 }, &[]) {
        Reply::QpAttr(at) => assert_eq!(at.qp_state as u32, IBV_QPS_RTS),
        r => panic!("B's QP: {r:?}"),
    }
    let agent = a.agent();
    drop((a, b));
    stop_agent(agent);
}

/// The agent's open descriptors and mappings.
fn resources(pid: u32) -> (usize, usize) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap()
        .lines()
        .count();
    (fds, maps)
}

/// Waits at most `within` for the agent's resources to be `want`.
fn resources_back(pid: u32, want: (usize, usize), within: Duration) -> (usize, usize) {
    let end = Instant::now() + within;
    loop {
        let r = resources(pid);
        if r == want || Instant::now() >= end {
            return r;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn killed_client_cleaned_up_and_agent_serves_on() {
    let s = scope("killed");
    let mut h = Holder::start(&mut hello(&s, &[]));
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    let before = resources(agent);
    // A client that ends its session with objects alive ...
    let out = run(&mut hello(&s, &["--objects"]));
    assert!(out.contains("objects pd=1 cq=2 qp=3"), "{out}");
    let back = resources_back(agent, before, Duration::from_secs(1));
    assert_eq!(back, before, "(fds, maps) after a client's end");
    // ... and one killed with them.
    let mut k = Holder::start(&mut hello(&s, &["--objects"]));
    welcome(&k.line());
    assert!(k.line().starts_with("objects "));
    let (fds, maps) = resources(agent);
    // Its connection, pidfd, async pipe, doorbell; its access page, CQ, SQ, RQ.
    assert!(
        fds >= before.0 + 4 && maps >= before.1 + 4,
        "{before:?} -> {:?}",
        (fds, maps)
    );
    kill(k.child.id(), libc::SIGKILL);
    k.child.wait().unwrap();
    let back = resources_back(agent, before, Duration::from_secs(1));
    assert_eq!(back, before, "(fds, maps) within 1 s of the kill");
    // The agent serves on.
    let out = run(&mut hello(&s, &["--objects"]));
    assert!(out.contains("objects pd=1 cq=2 qp=3"), "{out}");
    assert!(h.release().success());
    stop_agent(agent);
}

#[test]
fn bad_messages_end_only_their_client() {
    let s = scope("garbage");
    let log = std::env::temp_dir().join(format!("{s}.log"));
    // The agent logs (it inherits SWRDMA_WIRED_LOG from its first client).
    let mut h = Holder::start(hello(&s, &[]).env("SWRDMA_WIRED_LOG", &log));
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    let mut good = Client::open(&s, 2000);
    let pd = good.pd();
    let create_cq = Request::CreateCq(CreateCq {
        user_handle: 0xc002,
        cqe: 1,
        queue: Queue {
            depth: 1,
            slot_size: 64,
        },
        doorbell: false,
        channel: false,
    });
    let mut bad: Vec<Vec<u8>> = vec![
        b"garbage, no protocol".to_vec(),
        vec![0x7f, swrdma_wired::ctl::msg::VERSION, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], // a kind that is none
        Request::AllocPd { parent: None }.encode(1).unwrap()[..11].to_vec(),       // cut short
        Reply::Done.encode(1).unwrap(),                                            // a reply
        create_cq.encode(1).unwrap(),                                              // without its memfd
    ];
    let mut pdm = Request::DeallocPd { pd: 1 }.encode(1).unwrap();
    pdm.push(0); // a body longer than it says
    bad.push(pdm);
    for (i, m) in bad.iter().enumerate() {
        let mut c = Client::open(&s, 2000);
        rustix::net::send(c.s.fd(), m, rustix::net::SendFlags::NOSIGNAL).unwrap();
        let r = c.s.call(&Request::AllocPd { parent: None }, &[], WAIT);
        assert_eq!(r, Err(Error::GoneAway), "message {i}: {m:?}");
        // The others are served meanwhile.
        assert!(matches!(
            good.call(Request::AllocPd { parent: None }, &[]),
            Reply::Pd { .. }
        ));
    }
    // More descriptors than the request names.
    let mut c = Client::open(&s, 2000);
    let (_q, fd) = Slots::create(1, 64).unwrap();
    assert!(matches!(
        c.call(Request::AllocPd { parent: None }, &[]),
        Reply::Pd { .. }
    ));
    let m = Request::AllocPd { parent: None }.encode(100).unwrap();
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut cmsg = rustix::net::SendAncillaryBuffer::new(&mut space);
    let fds = [fd.as_fd()];
    assert!(cmsg.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)));
    let iov = [std::io::IoSlice::new(&m)];
    rustix::net::sendmsg(c.s.fd(), &iov, &mut cmsg, rustix::net::SendFlags::NOSIGNAL).unwrap();
    let r = c.s.call(&Request::AllocPd { parent: None }, &[], WAIT);
    assert_eq!(r, Err(Error::GoneAway), "a descriptor too many");
    // The good client's objects are intact, and it still counts.
    good.done(Request::DeallocPd { pd });
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let ended = text
        .lines()
        .filter(|l| l.contains("gone: a bad control message"))
        .count();
    let garbage = text
        .lines()
        .filter(|l| l.contains("gone: a message that is no request"))
        .count();
    assert_eq!((ended, garbage), (bad.len(), 1), "one line each:\n{text}");
    assert!(h.release().success());
    drop(good);
    stop_agent(agent);
    let _ = std::fs::remove_file(&log);
}

#[test]
fn a_client_over_its_budget_is_refused_and_others_are_not() {
    let s = scope("budget");
    // Each client may keep 4 descriptors and 6 mappings (the variables
    // for tests; the agent inherits them from its first client).
    let mut h = Holder::start(
        hello(&s, &[])
            .env("SWRDMA_WIRED_CLIENT_FDS", "4")
            .env("SWRDMA_WIRED_CLIENT_MAPS", "6"),
    );
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    let mut b = Client::open(&s, 2000);
    let base = resources(agent);
    let mut a = Client::open(&s, 2000);
    // A makes CQs with a doorbell (a descriptor and a mapping each) until
    // refused: the fifth, with the errno of one object too many.
    let mut cqs = Vec::new();
    let refused = loop {
        match a.try_cq(true) {
            Ok(cq) => cqs.push(cq),
            Err(e) => break e,
        }
        assert!(cqs.len() <= 4, "no refusal past the budget");
    };
    assert_eq!((cqs.len(), refused), (4, libc::EINVAL));
    // Nothing is made or kept of a refused one: the agent's descriptors
    // and mappings stay, and the next CQ gets the next handle.
    let before = resources(agent);
    assert_eq!(a.try_cq(true), Err(libc::EINVAL));
    assert_eq!(resources(agent), before, "(fds, maps) after a refusal");
    // Without a doorbell a CQ keeps only its mapping: two more fit.
    assert_eq!(a.try_cq(false), Ok(cqs[3] + 1), "the refused CQs took no handle");
    assert!(a.try_cq(false).is_ok());
    assert_eq!(a.try_cq(false), Err(libc::EINVAL), "a mapping too many");
    // B, connected all along, makes its own objects: four CQs with their
    // doorbells and a QP with two queues.
    let b_cqs: Vec<u32> = (0..4).map(|_| b.cq()).collect();
    let pd = b.pd();
    let (qp, _) = b.rc_qp(pd, b_cqs[0]);
    // A destroys two: room for two again, and no more.
    a.done(Request::DestroyCq { cq: cqs[0] });
    a.done(Request::DestroyCq { cq: cqs[1] });
    assert!(a.try_cq(true).is_ok() && a.try_cq(true).is_ok(), "the budget came back");
    assert_eq!(a.try_cq(true), Err(libc::EINVAL));
    // B's objects go; A ends with its objects: everything is given back.
    b.done(Request::DestroyQp { qp });
    for cq in b_cqs {
        b.done(Request::DestroyCq { cq });
    }
    b.done(Request::DeallocPd { pd });
    drop(a);
    let back = resources_back(agent, base, Duration::from_secs(1));
    assert_eq!(back, base, "(fds, maps) once A ended and B destroyed its objects");
    // A new client has the whole budget.
    let mut c = Client::open(&s, 2000);
    for _ in 0..4 {
        c.cq();
    }
    assert_eq!(c.try_cq(true), Err(libc::EINVAL));
    assert!(h.release().success());
    drop((b, c));
    stop_agent(agent);
}
