//! The rdma_cm model fed by hand: two processes' models joined by a queue
//! of messages, every event and message checked.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use crate::cma::*;
use crate::mad::{self, Mad, Msg};
use ibverbs_abi::*;

/// A host with one device (127.0.0.1), ports in a set, messages into a
/// queue tagged with the sender's name.
struct Fake {
    /// No process listens anywhere: sends to a listener find nobody.
    no_listeners: bool,
    /// Peers whose process is gone.
    dead: Vec<Dest>,
    name: Vec<u8>,
    ports: Vec<(u16, u16)>,
    out: VecDeque<(Dest, Vec<u8>)>,
    rng: u32,
}

impl Fake {
    fn new(name: &str) -> Fake {
        Fake {
            no_listeners: false,
            dead: Vec::new(),
            name: name.as_bytes().to_vec(),
            ports: Vec::new(),
            out: VecDeque::new(),
            rng: 0x1234_5678,
        }
    }
}

use crate::testkit::loopback_dev as dev;

impl Host for Fake {
    fn claim_port(&mut self, ps: u16, _ip: IpAddr, port: u16, _reuse: bool) -> Result<u16, i32> {
        let port = if port == 0 {
            40000 + self.ports.len() as u16
        } else {
            port
        };
        if self.ports.contains(&(ps, port)) {
            return Err(EADDRINUSE);
        }
        self.ports.push((ps, port));
        Ok(port)
    }
    fn release_port(&mut self, ps: u16, port: u16) {
        self.ports.retain(|p| *p != (ps, port));
    }
    fn listen_port(&mut self, _ps: u16, _port: u16) -> Result<(), i32> {
        Ok(())
    }
    fn device_for(&mut self, ip: IpAddr) -> Option<Dev> {
        (ip == IpAddr::from([127, 0, 0, 1])).then(dev)
    }
    fn route(&mut self, _src: Option<IpAddr>, dst: SocketAddr) -> Result<(Dev, IpAddr), i32> {
        let dst = dst.ip();
        if dst == IpAddr::from([127, 0, 0, 1]) {
            Ok((dev(), dst))
        } else {
            Err(ENETUNREACH)
        }
    }
    fn send(&mut self, to: &Dest, mad: &[u8; mad::MAD_LEN]) -> bool {
        if self.no_listeners && matches!(to, Dest::Listener { .. }) {
            return false;
        }
        self.out.push_back((to.clone(), mad.to_vec()));
        true
    }
    fn alive(&mut self, to: &Dest) -> bool {
        !self.dead.contains(to)
    }
    fn random(&mut self) -> u32 {
        self.rng = self.rng.wrapping_mul(1_103_515_245).wrapping_add(12345);
        self.rng
    }
}

const CA: ChanId = 1;
const CP: ChanId = 2;

fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Delivers every queued message of `from` to `to` (`from`'s name as the
/// sender); the messages' kinds.
fn deliver(from: &mut Cma<Fake>, to: &mut Cma<Fake>, now: u64) -> Vec<mad::AttrId> {
    let mut kinds = Vec::new();
    while let Some((dest, bytes)) = from.host.out.pop_front() {
        let m = Mad::decode(&bytes).unwrap();
        kinds.push(m.msg.attr_id());
        let to_port = match dest {
            Dest::Listener { ps, port, .. } => Some((ps, port)),
            Dest::Peer(_) => None,
        };
        let sender = Dest::Peer(from.host.name.clone());
        to.recv(now, &sender, to_port, &bytes);
    }
    kinds
}

fn param(qpn: u32) -> ConnParam {
    ConnParam {
        qp_num: qpn,
        responder_resources: 4,
        initiator_depth: 4,
        retry_count: 7,
        rnr_retry_count: 7,
        private_data: b"hello".to_vec(),
        valid: true,
        ..Default::default()
    }
}

/// Active id resolved and routed to 127.0.0.1:7174.
fn active(a: &mut Cma<Fake>) -> Handle {
    let h = a.create_id(CA, 0xaaaa, ps::TCP, 0).unwrap();
    a.resolve_addr(h, None, sa("127.0.0.1:7174")).unwrap();
    assert_eq!(a.get_event(CA).unwrap().event, ev::ADDR_RESOLVED);
    a.resolve_route(h).unwrap();
    assert_eq!(a.get_event(CA).unwrap().event, ev::ROUTE_RESOLVED);
    h
}

fn listener(p: &mut Cma<Fake>, backlog: u32) -> Handle {
    let l = p.create_id(CP, 0xbbbb, ps::TCP, 0).unwrap();
    p.bind(l, Addr::Ip(sa("0.0.0.0:7174"))).unwrap();
    p.listen(l, backlog).unwrap();
    l
}

#[test]
fn rc_connect_and_disconnect_as_the_kernel_reports_them() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    let l = listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(0x11)).unwrap();
    let req_psn = match Mad::decode(&a.host.out[0].1).unwrap().msg {
        Msg::Req(r) => r.starting_psn,
        m => panic!("{m:?}"),
    };
    assert_eq!(deliver(&mut a, &mut p, 0), vec![mad::AttrId::Req]);
    // the listener gets the request, the user data after the IP CM header
    let req = p.get_event(CP).unwrap();
    assert_eq!((req.event, req.uid, req.owner), (ev::CONNECT_REQUEST, 0xbbbb, l));
    let Param::Conn(c) = &req.param else { panic!() };
    assert_eq!(&c.private_data[..5], b"hello");
    assert_eq!(c.private_data.len(), 56);
    assert_eq!(c.qp_num, 0x11);
    let child = req.id;
    // the passive side's MRA is only prepared (sent for a duplicate REQ)
    assert!(deliver(&mut p, &mut a, 0).is_empty());
    // the child's QP attributes: RTR names the active QP and its PSN
    let rtr = p.init_qp_attr(child, 2).unwrap();
    assert_eq!(rtr.dest_qp_num, 0x11);
    assert_eq!(rtr.path_mtu, 5);
    assert_eq!(rtr.ah.sgid_index, 1);
    p.accept(0, child, Some(0xcccc), Some(&param(0x22))).unwrap();
    let rep_psn = match Mad::decode(&p.host.out[0].1).unwrap().msg {
        Msg::Rep(r) => r.starting_psn,
        m => panic!("{m:?}"),
    };
    assert_eq!(deliver(&mut p, &mut a, 0), vec![mad::AttrId::Rep]);
    let resp = a.get_event(CA).unwrap();
    assert_eq!(resp.event, ev::CONNECT_RESPONSE);
    let Param::Conn(c) = &resp.param else { panic!() };
    assert_eq!(c.qp_num, 0x22);
    // each side receives from the PSN it announced and sends from its
    // peer's, as the kernel's rdma_cm: the REQ's PSN is the passive
    // side's send PSN, the REP's the active side's (rxe NAKs a first
    // packet with any other, seen against the kernel in vm-rdmacm)
    let (artr, arts) = (a.init_qp_attr(h, 2).unwrap(), a.init_qp_attr(h, 3).unwrap());
    let (prtr, prts) = (p.init_qp_attr(child, 2).unwrap(), p.init_qp_attr(child, 3).unwrap());
    assert_eq!(artr.dest_qp_num, 0x22);
    assert_ne!(req_psn, rep_psn);
    assert_eq!((artr.rq_psn, prts.sq_psn), (req_psn, req_psn));
    assert_eq!((prtr.rq_psn, arts.sq_psn), (rep_psn, rep_psn));
    assert_eq!(arts.retry_cnt, 7);
    assert!(arts.mask & IBV_QP_TIMEOUT != 0 && arts.timeout > 0);
    // the active side's MRA for the REP is only prepared too, then
    // librdmacm's ACCEPT sends the RTU
    assert!(deliver(&mut a, &mut p, 0).is_empty());
    a.accept(0, h, None, None).unwrap();
    assert_eq!(deliver(&mut a, &mut p, 0), vec![mad::AttrId::Rtu]);
    let est = p.get_event(CP).unwrap();
    assert_eq!((est.event, est.uid, est.id), (ev::ESTABLISHED, 0xcccc, child));
    // disconnect from the active side: DREQ, DISCONNECTED there; the
    // passive side's DISCONNECT answers DREP, DISCONNECTED here
    a.disconnect(0, h).unwrap();
    assert_eq!(deliver(&mut a, &mut p, 0), vec![mad::AttrId::Dreq]);
    assert_eq!(p.get_event(CP).unwrap().event, ev::DISCONNECTED);
    p.disconnect(0, child).unwrap();
    assert_eq!(deliver(&mut p, &mut a, 0), vec![mad::AttrId::Drep]);
    assert_eq!(a.get_event(CA).unwrap().event, ev::DISCONNECTED);
    assert!(a.get_event(CA).is_none() && p.get_event(CP).is_none());
    // events reported count on the ids (the request on the listener)
    assert_eq!(a.destroy_id(CA, h).unwrap(), 4);
    assert_eq!(p.destroy_id(CP, child).unwrap(), 2);
    assert_eq!(p.destroy_id(CP, l).unwrap(), 1);
}

#[test]
fn no_listener_is_rejected_with_invalid_service_id() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    deliver(&mut a, &mut p, 0);
    assert_eq!(deliver(&mut p, &mut a, 0), vec![mad::AttrId::Rej]);
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.event, e.status), (ev::REJECTED, 8));
}

#[test]
fn reject_carries_private_data_and_reason_28() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    deliver(&mut a, &mut p, 0);
    let child = p.get_event(CP).unwrap().id;
    p.reject(child, 28, b"go away").unwrap();
    deliver(&mut p, &mut a, 0);
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.event, e.status), (ev::REJECTED, 28));
    let Param::Conn(c) = &e.param else { panic!() };
    assert_eq!(&c.private_data[..7], b"go away");
}

#[test]
fn unanswered_req_is_retried_then_unreachable() {
    let mut a = Cma::new(Fake::new("A"));
    a.timeout_override_ms = Some(10);
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    a.host.out.clear();
    let mut t = 0;
    for _ in 0..crate::conn::MAX_CM_RETRIES {
        t += 10_000_000;
        a.tick(t);
        assert_eq!(a.host.out.len(), 1, "one REQ again per timeout");
        a.host.out.clear();
        assert!(a.get_event(CA).is_none());
    }
    t += 10_000_000;
    a.tick(t);
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.event, e.status), (ev::UNREACHABLE, -ETIMEDOUT));
    assert!(a.next_deadline().is_none());
}

#[test]
fn duplicate_req_gets_mra_and_no_second_request() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    let (dest, req) = a.host.out.front().cloned().unwrap();
    deliver(&mut a, &mut p, 0);
    p.host.out.clear();
    let to_port = match dest {
        Dest::Listener { ps, port, .. } => Some((ps, port)),
        _ => None,
    };
    p.recv(0, &Dest::Peer(b"A".to_vec()), to_port, &req);
    assert_eq!(p.get_event(CP).unwrap().event, ev::CONNECT_REQUEST);
    assert!(p.get_event(CP).is_none(), "the duplicate made no second request");
    let kinds: Vec<_> = p
        .host
        .out
        .iter()
        .map(|(_, b)| Mad::decode(b).unwrap().msg.attr_id())
        .collect();
    assert_eq!(kinds, vec![mad::AttrId::Mra]);
}

#[test]
fn backlog_refuses_beyond_undelivered_requests() {
    let mut p = Cma::new(Fake::new("P"));
    listener(&mut p, 2);
    let mut actives: Vec<Cma<Fake>> = (0..3).map(|i| Cma::new(Fake::new(&format!("A{i}")))).collect();
    let mut rejected = 0;
    for a in actives.iter_mut() {
        let h = active(a);
        a.connect(0, h, &param(1)).unwrap();
        deliver(a, &mut p, 0);
        deliver(&mut p, a, 0);
        if let Some(e) = a.get_event(CA) {
            assert_eq!((e.event, e.status), (ev::REJECTED, 28));
            rejected += 1;
        }
    }
    assert_eq!(rejected, 1);
    assert_eq!(p.pending(CP), 2);
}

#[test]
fn forged_messages_with_guessed_comm_ids_change_nothing() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    deliver(&mut a, &mut p, 0);
    let child = p.get_event(CP).unwrap().id;
    p.host.out.clear();
    // a stranger's RTU and DREQ for comm IDs it guesses: no event, and a
    // DREQ for no connection gets only a DREP
    for guess in [0u32, 1, 0x1234_5678, u32::MAX] {
        let rtu = mad::Rtu {
            local_comm_id: 9,
            remote_comm_id: guess,
            ..Default::default()
        };
        p.recv(
            0,
            &Dest::Peer(b"X".to_vec()),
            None,
            &Mad {
                tid: 1,
                msg: Msg::Rtu(rtu),
            }
            .encode(),
        );
        let dreq = mad::Dreq {
            local_comm_id: 9,
            remote_comm_id: guess,
            ..Default::default()
        };
        p.recv(
            0,
            &Dest::Peer(b"X".to_vec()),
            None,
            &Mad {
                tid: 1,
                msg: Msg::Dreq(dreq),
            }
            .encode(),
        );
    }
    assert!(p.get_event(CP).is_none());
    for (_, b) in &p.host.out {
        assert_eq!(Mad::decode(b).unwrap().msg.attr_id(), mad::AttrId::Drep);
    }
    // malformed bytes are dropped
    p.recv(0, &Dest::Peer(b"X".to_vec()), None, &[0u8; 10]);
    p.recv(0, &Dest::Peer(b"X".to_vec()), None, &[0xffu8; 256]);
    assert!(p.get_event(CP).is_none());
    // the real connection still completes
    p.host.out.clear();
    p.accept(0, child, Some(5), Some(&param(2))).unwrap();
    deliver(&mut p, &mut a, 0);
    assert_eq!(a.get_event(CA).unwrap().event, ev::CONNECT_RESPONSE);
}

#[test]
fn ud_connects_through_sidr() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    let l = p.create_id(CP, 7, ps::UDP, 0).unwrap();
    p.bind(l, Addr::Ip(sa("127.0.0.1:7174"))).unwrap();
    p.listen(l, 0).unwrap();
    let h = a.create_id(CA, 8, ps::UDP, 0).unwrap();
    a.resolve_addr(h, None, sa("127.0.0.1:7174")).unwrap();
    a.get_event(CA).unwrap();
    a.resolve_route(h).unwrap();
    a.get_event(CA).unwrap();
    a.connect(0, h, &param(0)).unwrap();
    assert_eq!(deliver(&mut a, &mut p, 0), vec![mad::AttrId::SidrReq]);
    let req = p.get_event(CP).unwrap();
    assert_eq!(req.event, ev::CONNECT_REQUEST);
    assert!(matches!(req.param, Param::Ud { .. }));
    p.accept(0, req.id, Some(9), Some(&param(0x33))).unwrap();
    assert_eq!(deliver(&mut p, &mut a, 0), vec![mad::AttrId::SidrRep]);
    let e = a.get_event(CA).unwrap();
    assert_eq!(e.event, ev::ESTABLISHED);
    let Param::Ud { qp_num, qkey, ah, .. } = e.param else {
        panic!()
    };
    assert_eq!((qp_num, qkey, ah.is_global), (0x33, UDP_QKEY, 1));
    // a UD id's INIT carries the Q_Key
    let init = a.init_qp_attr(h, 1).unwrap();
    assert!(init.mask & IBV_QP_QKEY != 0);
    assert_eq!(init.qkey, UDP_QKEY);
}

#[test]
fn handles_are_the_lowest_free_as_the_kernels_xarray_gives() {
    let mut p = Cma::new(Fake::new("P"));
    let h: Vec<Handle> = (0..5).map(|i| p.create_id(CP, i, ps::TCP, 0).unwrap()).collect();
    assert_eq!(h, vec![0, 1, 2, 3, 4]);
    p.destroy_id(CP, 3).unwrap();
    p.destroy_id(CP, 1).unwrap();
    assert_eq!(p.create_id(CP, 9, ps::TCP, 0), Ok(1));
    assert_eq!(p.create_id(CP, 9, ps::TCP, 0), Ok(3));
    assert_eq!(p.create_id(CP, 9, ps::TCP, 0), Ok(5));
    for i in 0..6 {
        p.destroy_id(CP, i).unwrap();
    }
    assert_eq!(p.create_id(CP, 9, ps::TCP, 0), Ok(0));
    assert_eq!(p.create_id(CP, 9, ps::TCP, 0), Ok(1));
}

#[test]
fn ports_bind_once_and_errors_are_the_kernels() {
    let mut p = Cma::new(Fake::new("P"));
    let a = p.create_id(CP, 1, ps::TCP, 0).unwrap();
    let b = p.create_id(CP, 2, ps::TCP, 0).unwrap();
    p.bind(a, Addr::Ip(sa("127.0.0.1:5000"))).unwrap();
    assert_eq!(p.bind(b, Addr::Ip(sa("127.0.0.1:5000"))), Err(EADDRINUSE));
    assert_eq!(p.bind(a, Addr::Ip(sa("127.0.0.1:5001"))), Err(EINVAL));
    assert_eq!(p.bind(b, Addr::Ip(sa("10.9.9.9:1"))), Err(EADDRNOTAVAIL));
    assert_eq!(p.create_id(CP, 3, 0x9999, 0), Err(EINVAL));
    assert_eq!(p.check(CA, a), Err(EINVAL));
    assert_eq!(p.check(CP, 999), Err(ENOENT));
    assert_eq!(p.connect(0, b, &param(1)), Err(EINVAL));
    assert_eq!(p.init_qp_attr(b, 2), Err(EINVAL));
    // destroy releases the port
    p.destroy_id(CP, a).unwrap();
    p.bind(b, Addr::Ip(sa("127.0.0.1:5000"))).unwrap();
}

#[test]
fn a_port_nobody_holds_answers_as_the_kernels_cm() {
    let mut a = Cma::new(Fake::new("A"));
    a.host.no_listeners = true;
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.event, e.status), (ev::REJECTED, 8));
    assert!(a.next_deadline().is_none(), "nothing left to retry");
    // UD: SIDR status 1 (unsupported), as UNREACHABLE
    let u = a.create_id(CA, 9, ps::UDP, 0).unwrap();
    a.resolve_addr(u, None, sa("127.0.0.1:9")).unwrap();
    a.get_event(CA).unwrap();
    a.resolve_route(u).unwrap();
    a.get_event(CA).unwrap();
    a.connect(0, u, &param(0)).unwrap();
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.event, e.status), (ev::UNREACHABLE, 1));
}

#[test]
fn a_child_destroyed_after_its_rep_rejects_it_as_the_kernel() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    deliver(&mut a, &mut p, 0);
    let child = p.get_event(CP).unwrap().id;
    p.accept(0, child, Some(5), Some(&param(2))).unwrap();
    deliver(&mut p, &mut a, 0);
    assert_eq!(a.get_event(CA).unwrap().event, ev::CONNECT_RESPONSE);
    a.host.out.clear();
    // the server gives up before the RTU: REJ 28, "other" rejected
    p.destroy_id(CP, child).unwrap();
    let (_, b) = p.host.out.back().cloned().unwrap();
    let Msg::Rej(r) = Mad::decode(&b).unwrap().msg else {
        panic!("not a REJ")
    };
    assert_eq!((r.reason, r.message_rejected), (28, 2));
    deliver(&mut p, &mut a, 0);
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.event, e.status), (ev::REJECTED, 28));
}

#[test]
fn a_vanished_peer_ends_its_connections_as_the_kernels_cm_would() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(1)).unwrap();
    deliver(&mut a, &mut p, 0);
    let child = p.get_event(CP).unwrap().id;
    p.accept(0, child, Some(5), Some(&param(2))).unwrap();
    deliver(&mut p, &mut a, 0);
    a.get_event(CA).unwrap();
    a.accept(0, h, None, None).unwrap();
    deliver(&mut a, &mut p, 0);
    assert_eq!(p.get_event(CP).unwrap().event, ev::ESTABLISHED);
    assert!(
        a.next_deadline().is_some(),
        "an established connection's peer is watched"
    );
    // the passive process dies: the active side's next check says DISCONNECTED
    a.host.dead.push(Dest::Peer(b"P".to_vec()));
    a.tick(PEER_CHECK_NS * 2);
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.event, e.status), (ev::DISCONNECTED, 0));
    // nothing more, and a live peer's connection is not touched
    a.tick(PEER_CHECK_NS * 4);
    assert!(a.get_event(CA).is_none());
    p.tick(PEER_CHECK_NS * 2);
    assert!(p.get_event(CP).is_none());
}

#[test]
fn multicast_join_and_leave_as_the_kernels_rdma_cm_on_roce() {
    let mut a = Cma::new(Fake::new("a"));
    let h = a.create_id(CA, 7, ps::UDP, 0).unwrap();
    let group: IpAddr = IpAddr::from([239, 1, 1, 1]);
    // no device yet (idle): EINVAL, as ucma_get_ctx_dev
    assert_eq!(a.join(h, 70, group, 0), Err(EINVAL));
    a.bind(h, Addr::Ip(sa("127.0.0.1:0"))).unwrap();
    // join flags other than full / send-only full member: EINVAL
    assert_eq!(a.join(h, 70, group, 2), Err(EINVAL));
    // IPv6 groups: ENOTSUPP on RoCE v2 (Linux 6.1)
    assert_eq!(a.join(h, 70, "ff0e::1".parse().unwrap(), 0), Err(524));
    assert_eq!(a.join(h, 70, IpAddr::from([0, 0, 0, 0]), 0), Err(EINVAL));
    let mc = a.join(h, 70, group, 0).unwrap();
    let e = a.get_event(CA).unwrap();
    assert_eq!((e.uid, e.id, e.event, e.status), (70, mc, ev::MULTICAST_JOIN, 0));
    let Param::Ud { qp_num, qkey, ah, .. } = e.param else {
        panic!("a UD event")
    };
    let mut mgid = [0u8; 16];
    mgid[10] = 0xff;
    mgid[11] = 0xff;
    mgid[12..].copy_from_slice(&[239, 1, 1, 1]);
    assert_eq!((qp_num, qkey), (0xff_ffff, UDP_QKEY));
    assert_eq!(
        (ah.dgid, ah.sgid_index, ah.hop_limit, ah.is_global, ah.port_num),
        (mgid, 1, 64, 1, 1)
    );
    // a second join: its own handle; leave it before its event is taken
    let mc2 = a.join(h, 71, group, 1).unwrap();
    assert_ne!(mc, mc2);
    assert_eq!(a.pending(CA), 1);
    // another channel's leave: EINVAL; no such handle: ENOENT
    assert_eq!(a.leave_mcast(CP, mc2), Err(EINVAL));
    assert_eq!(a.leave_mcast(CA, 99), Err(ENOENT));
    assert_eq!(a.leave_mcast(CA, mc2), Ok(0));
    assert_eq!(a.pending(CA), 0, "the left group's undelivered event goes with it");
    assert_eq!(a.leave_mcast(CA, mc), Ok(1));
    // an RC id cannot join
    let r = a.create_id(CA, 8, ps::TCP, 0).unwrap();
    a.bind(r, Addr::Ip(sa("127.0.0.1:0"))).unwrap();
    assert_eq!(a.join(r, 80, group, 0), Err(EINVAL));
    // destroying the id ends its joins: the handle is free again, and the
    // id's count includes its multicast event
    let mc3 = a.join(h, 72, group, 0).unwrap();
    assert!(a.get_event(CA).is_some());
    assert_eq!(a.destroy_id(CA, h), Ok(2));
    assert_eq!(a.leave_mcast(CA, mc3), Err(ENOENT));
}

/// Every message of a real exchange (REQ, MRA, REP, MRA, RTU, DREQ, DREP,
/// SIDR_REQ, SIDR_REP), then 20,000 mutations of them (bytes flipped,
/// fields overwritten, lengths cut), each decoded and fed to both sides of
/// a listener and a connecting id: decoding never panics, what decodes
/// encodes to bytes that decode the same, and neither model panics or
/// grows (what a hostile or broken peer may send; the cargo-fuzz target
/// fuzz/fuzz_targets/cm_mad.rs does the same without a corpus).
#[test]
fn mutated_messages_never_panic_and_round_trip() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    let mut corpus: Vec<Vec<u8>> = Vec::new();
    let take = |from: &mut Cma<Fake>, corpus: &mut Vec<Vec<u8>>| {
        for (_, m) in from.host.out.iter() {
            corpus.push(m.clone());
        }
    };
    let l = listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(0x11)).unwrap();
    take(&mut a, &mut corpus);
    deliver(&mut a, &mut p, 0);
    let child = p.get_event(CP).unwrap().id;
    take(&mut p, &mut corpus);
    deliver(&mut p, &mut a, 0);
    p.accept(0, child, Some(1), Some(&param(0x22))).unwrap();
    take(&mut p, &mut corpus);
    deliver(&mut p, &mut a, 0);
    take(&mut a, &mut corpus);
    deliver(&mut a, &mut p, 0);
    a.accept(0, h, None, None).unwrap();
    take(&mut a, &mut corpus);
    deliver(&mut a, &mut p, 0);
    a.disconnect(0, h).unwrap();
    take(&mut a, &mut corpus);
    deliver(&mut a, &mut p, 0);
    p.disconnect(0, child).unwrap();
    take(&mut p, &mut corpus);
    deliver(&mut p, &mut a, 0);
    let ul = p.create_id(CP, 7, ps::UDP, 0).unwrap();
    p.bind(ul, Addr::Ip(sa("0.0.0.0:7174"))).ok();
    p.listen(ul, 4).ok();
    let u = a.create_id(CA, 8, ps::UDP, 0).unwrap();
    a.resolve_addr(u, None, sa("127.0.0.1:7174")).unwrap();
    a.resolve_route(u).unwrap();
    a.connect(0, u, &param(0x33)).unwrap();
    take(&mut a, &mut corpus);
    deliver(&mut a, &mut p, 0);
    if let Some(e) = p.get_event(CP) {
        if e.event == ev::CONNECT_REQUEST {
            p.accept(0, e.id, Some(2), Some(&param(0x44))).ok();
            take(&mut p, &mut corpus);
        }
    }
    // (an MRA is sent only for a duplicate: one for a REQ, one for a REP)
    let mra = mad::Mra {
        local_comm_id: 7,
        remote_comm_id: 9,
        service_timeout: 24,
        ..Default::default()
    };
    corpus.push(
        Mad {
            tid: 3,
            msg: Msg::Mra(mra.clone()),
        }
        .encode()
        .to_vec(),
    );
    let mra_rep = mad::Mra {
        message_mraed: 1,
        ..mra
    };
    corpus.push(
        Mad {
            tid: 4,
            msg: Msg::Mra(mra_rep),
        }
        .encode()
        .to_vec(),
    );
    assert!(corpus.len() >= 8, "a message of each kind: {}", corpus.len());
    // the listener and a connecting id wait for what comes
    while a.get_event(CA).is_some() {}
    while p.get_event(CP).is_some() {}
    let h2 = active(&mut a);
    a.connect(0, h2, &param(0x55)).unwrap();
    a.host.out.clear();
    let _ = l;
    let mut rng = 0x9e37_79b9u32;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        rng
    };
    let mut decoded = 0;
    for i in 0..20_000u32 {
        let mut m = corpus[(next() as usize) % corpus.len()].clone();
        for _ in 0..1 + next() % 6 {
            let at = next() as usize % m.len();
            match next() % 3 {
                0 => m[at] ^= 1 << (next() % 8),
                1 => m[at] = next() as u8,
                _ => {
                    let v = next().to_be_bytes();
                    let n = (m.len() - at).min(4);
                    m[at..at + n].copy_from_slice(&v[..n]);
                }
            }
        }
        if i % 97 == 0 {
            m.truncate(next() as usize % m.len());
        }
        if let Ok(d) = Mad::decode(&m) {
            decoded += 1;
            let again = d.encode();
            assert_eq!(Mad::decode(&again).ok(), Some(d), "re-encoding changes the message");
        }
        let t = u64::from(i) * 1_000_000;
        p.recv(t, &Dest::Peer(b"A".to_vec()), Some((ps::TCP, 7174)), &m);
        a.recv(t, &Dest::Peer(b"P".to_vec()), None, &m);
        p.host.out.clear();
        a.host.out.clear();
        while p.get_event(CP).is_some() {}
        while a.get_event(CA).is_some() {}
    }
    // (most mutations keep a decodable header: the models were fed them)
    assert!(decoded > 5_000, "only {decoded} of 20000 mutations decoded");
}

#[test]
fn the_ack_timeout_option_is_the_qps_timeout_at_rts() {
    let (mut a, mut p) = (Cma::new(Fake::new("A")), Cma::new(Fake::new("P")));
    listener(&mut p, 8);
    let h = active(&mut a);
    a.connect(0, h, &param(0x11)).unwrap();
    deliver(&mut a, &mut p, 0);
    let child = p.get_event(CP).unwrap().id;
    let computed = p.init_qp_attr(child, 3).unwrap().timeout;
    // set on the child after its request, as pyverbs' test_rdmacm does
    p.set_option(child, 0, 3, &[computed.wrapping_add(3)]).unwrap();
    let rts = p.init_qp_attr(child, 3).unwrap();
    assert!(rts.mask & IBV_QP_TIMEOUT != 0);
    assert_eq!(rts.timeout, computed.wrapping_add(3));
}
