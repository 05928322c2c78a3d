//! Fuzzes the connection manager's messages (crate swrdma-cm) with arbitrary
//! datagrams, as another process or a host on the network may send them:
//! `Mad::decode` must refuse or return a message that encodes to bytes
//! that decode the same; and the rdma_cm model, with a listener and an id
//! waiting for its REP, must take any datagram without panicking.
//! (`cargo test -p swrdma-cm mutated` runs mutations of a real exchange on
//! stable.)
#![no_main]

use std::net::{IpAddr, SocketAddr};

use libfuzzer_sys::fuzz_target;
use swrdma_cm::cma::{ps, Addr, Cma, ConnParam, Dest, Dev, Host};
use swrdma_cm::mad::{Mad, MAD_LEN};

/// A host with one device on 127.0.0.1 whose messages go nowhere.
struct Quiet(u32);

use swrdma_cm::testkit::loopback_dev as dev;

impl Host for Quiet {
    fn claim_port(&mut self, _ps: u16, _ip: IpAddr, port: u16, _reuse: bool) -> Result<u16, i32> {
        Ok(if port == 0 { 40000 } else { port })
    }
    fn release_port(&mut self, _ps: u16, _port: u16) {}
    fn listen_port(&mut self, _ps: u16, _port: u16) -> Result<(), i32> {
        Ok(())
    }
    fn device_for(&mut self, _ip: IpAddr) -> Option<Dev> {
        Some(dev())
    }
    fn route(&mut self, _src: Option<IpAddr>, dst: SocketAddr) -> Result<(Dev, IpAddr), i32> {
        Ok((dev(), dst.ip()))
    }
    fn send(&mut self, _to: &Dest, _mad: &[u8; MAD_LEN]) -> bool {
        true
    }
    fn alive(&mut self, _to: &Dest) -> bool {
        true
    }
    fn random(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(1_103_515_245).wrapping_add(12345);
        self.0
    }
}

fuzz_target!(|input: &[u8]| {
    if let Ok(m) = Mad::decode(input) {
        assert_eq!(
            Mad::decode(&m.encode()).ok(),
            Some(m),
            "re-encoding changes the message"
        );
    }
    let mut c = Cma::new(Quiet(1));
    let any: SocketAddr = "0.0.0.0:7174".parse().unwrap();
    let l = c.create_id(1, 1, ps::TCP, 0).unwrap();
    let _ = c.bind(l, Addr::Ip(any));
    let _ = c.listen(l, 4);
    let h = c.create_id(1, 2, ps::TCP, 0).unwrap();
    let _ = c.resolve_addr(h, None, "127.0.0.1:7175".parse().unwrap());
    let _ = c.resolve_route(h);
    let p = ConnParam {
        qp_num: 0x11,
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: 7,
        rnr_retry_count: 7,
        valid: true,
        ..Default::default()
    };
    let _ = c.connect(0, h, &p);
    for (i, chunk) in input.chunks(MAD_LEN).enumerate() {
        let t = i as u64 * 1_000_000_000;
        c.recv(t, &Dest::Peer(b"peer".to_vec()), Some((ps::TCP, 7174)), chunk);
        c.recv(t, &Dest::Peer(b"peer".to_vec()), None, chunk);
        c.tick(t);
        while c.get_event(1).is_some() {}
    }
});
