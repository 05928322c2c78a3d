//! The agent's transport (issue 33, plan step 2): the wire engine run by
//! the agent's loop for every client's QPs.
//!
//! * **One more wire context of its user.**  Until the per-process wire
//!   contexts go (plan step 7), the agent joins the user's private
//!   directory of endpoints (`userdir`) as they do: a context id from the
//!   user's id counter, a listening `c<id>` socket (so that `reclaim` sees
//!   it alive), the UDP sockets of `sock.rs` on the interface's addresses
//!   (in the same `SO_REUSEPORT` groups as the processes'), and a QPN link
//!   `q<n>` -> `c<id>` for each of its clients' QPs.  Its QP numbers come
//!   from the same counter ([`Transport::numbers`]).  So a datagram for one
//!   of its QPs that lands on a process's socket is forwarded to it, and one
//!   for a process's QP that lands on its socket is forwarded there; a
//!   connected QP gets its own source port and flow socket (`engine.rs`,
//!   `steer`), so none of its datagrams is forwarded in the steady state.
//! * **A turn** ([`Transport::turn`]): what came in is received (from the
//!   sockets the loop's `epoll_wait` found readable: [`Transport::hint_ready`])
//!   and the timers run (`Wire::progress`), then every client's send queues are
//!   taken onto the wire (at most [`SEND_BATCH`] WQEs per queue), then the
//!   clients hear what happened: the doorbells of CQs whose consumer
//!   sleeps are written, the async events go into each client's async pipe
//!   as the kernel's uverbs writes them ([`event_record`]: the object's
//!   user handle from the control path's tables, then the event), and a QP
//!   the engine moved to the error state is in that state in the control
//!   path's tables (`query_qp`).
//! * **Sleeping.**  Before the agent's loop sleeps it marks every send
//!   queue's consumer asleep ([`Transport::may_sleep`]); a client that
//!   then writes a WQE sends a `DOORBELL` message on its connection, which
//!   wakes the loop.  A queue with an entry already keeps it awake.
//! * **Control changes**: a QP made, modified or destroyed reaches the
//!   engine through [`Transport::changed`] (the path, PSNs and MTU of a
//!   `modify_qp`, the error state's flushes, the last ACK of a destroyed
//!   RC QP), and a client's end through [`Transport::gone`].  A QP that
//!   goes leaves every multicast group it was attached to
//!   (`Sock::leave_all`); `attach_mcast` and `detach_mcast` join and
//!   leave through [`Transport::join_group`] and [`Transport::leave_group`].
//!   A request that changes a client's keys (`DeregMr`, `ReregMr`,
//!   `DeallocMw`) is served after the WQEs the client posted before it
//!   ([`Transport::take_client`]).
//! * **Local operations** (`BIND_MW`, `LOCAL_INV`) are done as the turn
//!   takes them (`data::run_local`), against the client's tables.

use crate::ctl::tables::{ClientId, Kind, Tables};
use crate::data::{take_sends, ClientData, Event, Serving};
use crate::gids::Gids;
use crate::session::{Changed, Control};
use crate::userdir;
use crate::wire::engine::Wire;
use crate::wire::host::{Host, HostQp};
use crate::wire::sock::Sock;
use ibverbs_abi::*;
use std::cell::RefCell;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// At most this many WQEs of one send queue per turn, so that one client
/// that keeps posting does not keep the others waiting.
pub const SEND_BATCH: usize = 64;

/// The bytes of an async event record in a client's async pipe: the
/// kernel's `struct ib_uverbs_async_event_desc`.
pub const EVENT_RECORD: usize = 16;

/// The record of an async event, as the kernel's uverbs writes it into the
/// async event file that libibverbs reads in `ibv_get_async_event`
/// (`struct ib_uverbs_async_event_desc`, native-endian): `element` (a
/// `u64`: the user handle the client gave when it made the CQ, QP or SRQ),
/// `event_type` (a `u32`: `IBV_EVENT_*`), then a reserved `u32`, 0.
pub fn event_record(element: u64, event_type: u32) -> [u8; EVENT_RECORD] {
    let mut r = [0u8; EVENT_RECORD];
    r[..8].copy_from_slice(&element.to_ne_bytes());
    r[8..12].copy_from_slice(&event_type.to_ne_bytes());
    r
}

/// The `element` and `event_type` of record `r` (None: not
/// [`EVENT_RECORD`] bytes, or a reserved word that is not 0).
pub fn parse_event_record(r: &[u8]) -> Option<(u64, u32)> {
    let r: &[u8; EVENT_RECORD] = r.try_into().ok()?;
    let (element, rest) = r.split_first_chunk::<8>()?;
    let (event_type, reserved) = rest.split_first_chunk::<4>()?;
    if reserved.iter().any(|&b| b != 0) {
        return None;
    }
    Some((u64::from_ne_bytes(*element), u32::from_ne_bytes(*event_type)))
}

/// The record of client `id`'s event `e`: the object's user handle from the
/// control path's tables, and the event.  None: the object is gone (or the
/// handle names one of another kind now): the event is dropped.
pub fn record_of(tables: &Tables, id: ClientId, e: &Event) -> Option<[u8; EVENT_RECORD]> {
    let (kind, h, ev) = match *e {
        Event::Qp(h, ev) => (Kind::Qp, h, ev),
        Event::Cq(h, ev) => (Kind::Cq, h, ev),
        Event::Srq(h, ev) => (Kind::Srq, h, ev),
    };
    let c = tables.client(id)?;
    if c.kind_of(h) != Some(kind) {
        return None;
    }
    Some(event_record(c.user_handle(h)?, ev))
}

/// The agent's wire context (see the module documentation).
pub struct Transport {
    wire: Wire,
    dir: PathBuf,
    /// Its context id in the directory.
    ctx: u32,
    /// The directory's id counter, open since `open` (`numbers`).
    ids: std::sync::Arc<std::fs::File>,
    /// Its `c<id>` socket: alive while the agent is.
    _endpoint: OwnedFd,
    /// The port's GID table when the transport opened (grown by
    /// [`Transport::refresh`]).
    gids: Vec<[u8; 16]>,
    /// The interface.
    ifindex: u32,
    /// While the loop sleeps with direct-transmit windows open: the
    /// shortest of their QPs' ACK timeouts (ns; 0: none open), the most it
    /// may sleep (a request sent through a window meanwhile is seen when
    /// its ACK wakes the loop, or, lost, at the latest then).
    dtx_bound: std::sync::atomic::AtomicU64,
}

impl Transport {
    /// Joins directory `dir` (a directory of ours, closed to others) as a
    /// wire context on interface `ifindex`: its endpoint, its UDP sockets.
    pub fn open(dir: &Path, ifindex: u32) -> Result<Transport, String> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let uid = rustix::process::geteuid().as_raw();
        if !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
            return Err(format!("{}: not a private directory of uid {uid}", dir.display()));
        }
        let ids = userdir::open_ids(dir).map_err(|e| format!("{}: {e}", dir.join("ids").display()))?;
        let ctx = userdir::alloc_ids_in(&ids, 1);
        let endpoint = userdir::listen(dir, ctx)
            .map_err(|e| format!("endpoint c{ctx}: {}", std::io::Error::from_raw_os_error(e)))?;
        let gids = Gids::read(ifindex);
        let sock = Sock::open(dir, ctx, ifindex, &gids.addrs).map_err(|e| {
            let _ = std::fs::remove_file(userdir::ctx_sock_path(dir, ctx));
            format!("UDP port {} on the interface's addresses: {e}", swrdma_roce::ROCE_PORT)
        })?;
        let mtu = swrdma_rc::responder::pmtu_bytes(crate::gids::mtu_enum(crate::gids::if_mtu(ifindex).unwrap_or(1500)));
        let d = dir.to_path_buf();
        let owner = Box::new(move |q: u32| userdir::resolve(&d, q));
        Ok(Transport {
            wire: Wire::new(sock, mtu, owner),
            dir: dir.to_path_buf(),
            ctx,
            ids: std::sync::Arc::new(ids),
            _endpoint: endpoint,
            gids: gids.table,
            ifindex,
            dtx_bound: Default::default(),
        })
    }

    /// Takes the interface's addresses again: binds those it gained since
    /// [`Transport::open`] (`Sock::add_addrs`) and takes the GID table
    /// when it only grew (an entry that moved or went keeps its old index
    /// here: QPs may be using it).  The addresses bound now.
    pub fn refresh(&mut self) -> Vec<std::net::IpAddr> {
        let g = Gids::read(self.ifindex);
        let added = self.wire.sock.add_addrs(&g.addrs);
        if g.table.len() > self.gids.len() && g.table.starts_with(&self.gids) {
            self.gids = g.table;
        }
        added
    }

    /// Its context id in the directory.
    pub fn ctx(&self) -> u32 {
        self.ctx
    }

    /// The descriptors to wait on (level triggered; a turn drains them).
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        self.wire.sock.fds()
    }

    /// Which of [`Transport::fds`] the loop's `epoll_wait` found readable
    /// (bit `i`: the `i`th), for the next turn (`Sock::hint_ready`).
    pub fn hint_ready(&self, mask: u64) {
        self.wire.sock.hint_ready(mask)
    }

    /// Where the agent's QP numbers come from: the user's id counter, as
    /// the provider's contexts take theirs (`Control::number_from`).
    pub fn numbers(&self) -> Box<dyn FnMut() -> u32> {
        // (The counter `open` took, used by nothing else since: `flock`
        // belongs to the open file, and the agent asks for one source.)
        let f = self.ids.clone();
        Box::new(move || userdir::alloc_ids_in(&f, 1))
    }

    /// Some QP has packets unacknowledged or waits for a timer: the loop
    /// must turn again within a millisecond.
    pub fn busy(&self) -> bool {
        self.wire.busy()
    }

    /// QP `qpn` takes the datagrams to multicast group `mgid`
    /// (`Sock::join_group`: the group's socket is opened with its first
    /// QP).  The errno is `attach_mcast`'s.
    pub fn join_group(&self, mgid: &[u8; 16], qpn: u32) -> Result<(), i32> {
        self.wire.sock.join_group(mgid, qpn)
    }

    /// QP `qpn` leaves multicast group `mgid` (the group's socket goes with
    /// its last QP).
    pub fn leave_group(&self, mgid: &[u8; 16], qpn: u32) {
        self.wire.sock.leave_group(mgid, qpn)
    }

    /// The control path changed a QP (`Control::serve`).
    pub fn changed(&self, ctl: &mut Control, ch: Changed) {
        match ch {
            Changed::NewQp(qpn) => userdir::publish(&self.dir, qpn, self.ctx),
            Changed::Modified { qpn, new, mask } => {
                let (data, tables) = ctl.data_and_keys();
                let Some(qp) = data.qp(qpn).cloned() else { return };
                let h = Serving {
                    data,
                    keys: RefCell::new(tables),
                    gids: &self.gids,
                };
                let mut st = qp.lock();
                match new {
                    IBV_QPS_ERR => h.to_err(&qp, &mut st),
                    IBV_QPS_RESET => {
                        // (Its outstanding work is forgotten, as a reset
                        // QP's: no completions.)
                        st.sq.clear();
                        st.cur = None;
                        st.bad_rq = false;
                    }
                    _ => {}
                }
                self.wire.modified(&h, &qp, &mut st, new, mask);
            }
            Changed::QpGone(qp) => {
                self.wire.farewell(&*qp, &qp.lock());
                self.wire.sock.leave_all(qp.qpn);
                userdir::unpublish(&self.dir, qp.qpn);
            }
        }
    }

    /// A client is gone: its QPs' last words, their groups, and their
    /// links.
    pub fn gone(&self, d: ClientData) {
        for qp in d.qps.values() {
            self.wire.farewell(&**qp, &qp.lock());
            self.wire.sock.leave_all(qp.qpn);
            userdir::unpublish(&self.dir, qp.qpn);
        }
    }

    /// Takes client `id`'s send queues now, as a turn does (at most a
    /// queue's depth each): the control path calls this before it serves
    /// a request of the client's that changes its keys (`DeregMr`,
    /// `ReregMr`, `DeallocMw`), so that the WQEs it posted before the
    /// request (a `BIND_MW` of the window it deallocates, a WRITE from the
    /// MR it deregisters) are done with the keys as they were, as the
    /// provider's verbs are done in the order they are called.  What they
    /// call for (doorbells, events, a QP moved to the error state) is told
    /// at the end of the next turn.  The number taken.
    pub fn take_client(&self, ctl: &mut Control, id: ClientId) -> usize {
        let (data, tables) = ctl.data_and_keys();
        let Some(c) = data.client(id) else { return 0 };
        let h = Serving {
            data,
            keys: RefCell::new(tables),
            gids: &self.gids,
        };
        let mut n = 0;
        for (qpn, (sq, shape)) in c.sqs.borrow_mut().iter_mut() {
            if let Some(qp) = c.qps.get(qpn) {
                let depth = sq.depth();
                n += take_sends(&h, &self.wire, qp, sq, shape, depth);
            }
        }
        n
    }

    /// Marks every send queue's consumer asleep before the loop sleeps:
    /// false when one has an entry already (then the loop turns again at
    /// once; the marks are cleared and the windows closed again).
    ///
    /// In the same pass, opens the direct-transmit window (`wq/mod.rs`) of
    /// every send queue whose QP allows one ([`Wire::dtx_path`]);
    /// [`Transport::sleep_bound`] says for how long it may sleep then.
    pub fn may_sleep(&self, ctl: &Control) -> bool {
        let data = ctl.data();
        // (0: no bound yet.)
        let mut bound = 0u64;
        let limit = |b: &mut u64, t: u64| *b = if *b == 0 { t } else { (*b).min(t) };
        let mut ok = true;
        'clients: for id in data.ids() {
            let Some(c) = data.client(id) else { continue };
            for (qpn, (sq, _)) in c.sqs.borrow_mut().iter_mut() {
                if !sq.prepare_sleep() {
                    ok = false;
                    break 'clients;
                }
                if sq.dtx_pending() {
                    // (A client between taking a window and writing its
                    // entry, which rings no doorbell: looked for again
                    // within a millisecond.)
                    limit(&mut bound, 1_000_000);
                    continue;
                }
                let Some(qp) = c.qps.get(qpn) else { continue };
                let mut st = qp.lock();
                if let Some((psn, path, t)) = self.wire.dtx_path(&**qp, &mut *st, self.ifindex) {
                    sq.dtx_open(psn, &path);
                    if t != 0 {
                        limit(&mut bound, t);
                    }
                }
            }
        }
        if !ok {
            self.woke(ctl);
            return false;
        }
        self.dtx_bound.store(bound, std::sync::atomic::Ordering::Relaxed);
        true
    }

    /// The most the loop may sleep after [`Transport::may_sleep`] (None:
    /// no limit of ours).
    pub fn sleep_bound(&self) -> Option<std::time::Duration> {
        let b = self.dtx_bound.load(std::sync::atomic::Ordering::Relaxed);
        (b != 0).then(|| std::time::Duration::from_nanos(b))
    }

    /// After the loop slept (or decided not to): the marks are cleared and
    /// the direct-transmit windows closed (a taken one's request is taken
    /// first thing in the next turn).
    pub fn woke(&self, ctl: &Control) {
        let data = ctl.data();
        self.dtx_bound.store(0, std::sync::atomic::Ordering::Relaxed);
        for id in data.ids() {
            if let Some(c) = data.client(id) {
                for (sq, _) in c.sqs.borrow_mut().values_mut() {
                    sq.wake_up();
                    sq.dtx_close();
                }
            }
        }
    }

    /// One turn (see the module documentation); `async_w` gives each
    /// client's async pipe.  Whether anything was done.
    pub fn turn<'a>(&self, ctl: &mut Control, async_w: impl Fn(ClientId) -> Option<BorrowedFd<'a>>) -> bool {
        let (data, tables) = ctl.data_and_keys();
        let ids = data.ids();
        let mut done = 0usize;
        {
            let h = Serving {
                data,
                keys: RefCell::new(&mut *tables),
                gids: &self.gids,
            };
            // A request sent through a direct-transmit window is taken
            // before anything received (its ACK may be there already).
            for &id in &ids {
                let Some(c) = data.client(id) else { continue };
                let mut sqs = c.sqs.borrow_mut();
                for (qpn, (sq, shape)) in sqs.iter_mut().filter(|(_, (sq, _))| sq.dtx_pending()) {
                    if let Some(qp) = c.qps.get(qpn) {
                        done += take_sends(&h, &self.wire, qp, sq, shape, SEND_BATCH);
                    }
                }
            }
            done += self.wire.progress(&h);
            for &id in &ids {
                let Some(c) = data.client(id) else { continue };
                let mut sqs = c.sqs.borrow_mut();
                for (qpn, (sq, shape)) in sqs.iter_mut() {
                    if let Some(qp) = c.qps.get(qpn) {
                        done += take_sends(&h, &self.wire, qp, sq, shape, SEND_BATCH);
                        done += h.flush_late_recvs(qp);
                    }
                }
            }
        }
        let mut moved = Vec::new();
        let mut fired = Vec::new();
        for &id in &ids {
            let Some(c) = data.client(id) else { continue };
            let w = c.take_doorbells();
            for cq in w.bells {
                if let Some(b) = c.bells.get(&cq) {
                    let _ = crate::wq::ring(b.as_fd());
                }
            }
            for cq in w.channels {
                // The kernel's completion event: the CQ's user handle
                // (non-blocking: a channel nobody reads loses events).
                let uh = tables.client(id).and_then(|t| t.user_handle(cq));
                if let (Some(ch), Some(uh)) = (c.channels.get(&cq), uh) {
                    let _ = rustix::io::write(ch, &uh.to_ne_bytes());
                }
            }
            let evs = c.take_events();
            if let Some(w) = async_w(id) {
                for r in evs.iter().filter_map(|e| record_of(tables, id, e)) {
                    // (Non-blocking: a client that does not read its
                    // events loses those that find its pipe full.)
                    let _ = rustix::io::write(w, &r);
                }
            }
            moved.extend(c.take_moved().into_iter().map(|q| (id, q)));
            fired.extend(c.take_limits_reached().into_iter().map(|s| (id, s)));
        }
        for (id, qpn) in moved {
            ctl.engine_moved(id, qpn, IBV_QPS_ERR);
        }
        for (id, srq) in fired {
            ctl.srq_limit_reached(id, srq);
        }
        done > 0
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(userdir::ctx_sock_path(&self.dir, self.ctx));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_records_are_the_kernels() {
        for (element, ev) in [
            (0u64, IBV_EVENT_QP_FATAL),
            (0x7f12_3456_7890, IBV_EVENT_CQ_ERR),
            (u64::MAX, IBV_EVENT_SRQ_LIMIT_REACHED),
            (1, u32::MAX),
        ] {
            let r = event_record(element, ev);
            assert_eq!(parse_event_record(&r), Some((element, ev)));
            // struct ib_uverbs_async_event_desc { __aligned_u64 element;
            // __u32 event_type; __u32 reserved; }, native-endian.
            assert_eq!(r[..8], element.to_ne_bytes());
            assert_eq!(r[8..12], ev.to_ne_bytes());
            assert_eq!(r[12..], [0; 4]);
        }
        let r = event_record(0xA001, IBV_EVENT_QP_ACCESS_ERR);
        for at in 12..16 {
            let mut bad = r;
            bad[at] = 1;
            assert_eq!(parse_event_record(&bad), None, "reserved byte {at} not 0");
        }
        assert_eq!(parse_event_record(&r[..15]), None, "short");
        assert_eq!(parse_event_record(&r[..8]), None, "short");
        assert_eq!(parse_event_record(&[]), None, "empty");
        let mut long = r.to_vec();
        long.push(0);
        assert_eq!(parse_event_record(&long), None, "long");
    }

    /// Numbers 2, 3, ... for the tables.
    struct Count(u32);

    impl crate::ctl::tables::Hooks for Count {
        fn alloc_num(&mut self) -> Result<u32, i32> {
            self.0 += 1;
            Ok(self.0)
        }

        fn gid_count(&self) -> usize {
            1
        }
    }

    #[test]
    fn events_name_their_objects_by_user_handle() {
        use crate::ctl::msg::{Caps, CreateCq, CreateQp, CreateSrq, QpType, Queue, Reply, Request, SrqType};
        use crate::ctl::tables::Limits;
        let mut t = Tables::new(Limits::WIRE);
        let mut n = Count(1);
        assert!(t.add_client(1) && t.add_client(2));
        let q = Queue {
            depth: 1,
            slot_size: 64,
        };
        let Reply::Pd { handle: pd } = t.exec(1, &Request::AllocPd { parent: None }, &mut n) else {
            panic!()
        };
        let cq = CreateCq {
            user_handle: 0xA001,
            cqe: 1,
            queue: q,
            doorbell: false,
            channel: false,
        };
        let Reply::Cq { handle: cq, .. } = t.exec(1, &Request::CreateCq(cq), &mut n) else {
            panic!()
        };
        let qp = CreateQp {
            user_handle: 0xA002,
            pd: Some(pd),
            xrcd: None,
            qp_type: QpType::Rc,
            send_cq: Some(cq),
            recv_cq: Some(cq),
            srq: None,
            sq_sig_all: false,
            cap: Caps::default(),
            sq: Some(q),
            rq: Some(q),
        };
        let Reply::Qp { handle: qp, .. } = t.exec(1, &Request::CreateQp(qp), &mut n) else {
            panic!()
        };
        let srq = CreateSrq {
            user_handle: u64::MAX,
            pd: Some(pd),
            ty: SrqType::Basic,
            xrcd: None,
            cq: None,
            max_wr: 1,
            max_sge: 1,
            srq_limit: 0,
            queue: q,
        };
        let Reply::Srq { handle: srq, .. } = t.exec(1, &Request::CreateSrq(srq), &mut n) else {
            panic!()
        };
        let rec = |t: &Tables, id, e| record_of(t, id, &e).and_then(|r| parse_event_record(&r));
        assert_eq!(
            rec(&t, 1, Event::Qp(qp, IBV_EVENT_QP_ACCESS_ERR)),
            Some((0xA002, IBV_EVENT_QP_ACCESS_ERR))
        );
        assert_eq!(
            rec(&t, 1, Event::Cq(cq, IBV_EVENT_CQ_ERR)),
            Some((0xA001, IBV_EVENT_CQ_ERR))
        );
        assert_eq!(
            rec(&t, 1, Event::Srq(srq, IBV_EVENT_SRQ_LIMIT_REACHED)),
            Some((u64::MAX, IBV_EVENT_SRQ_LIMIT_REACHED))
        );
        // Dropped: another kind's handle, a PD, another client, no client.
        assert_eq!(rec(&t, 1, Event::Qp(cq, IBV_EVENT_QP_FATAL)), None);
        assert_eq!(rec(&t, 1, Event::Cq(pd, IBV_EVENT_CQ_ERR)), None);
        assert_eq!(rec(&t, 2, Event::Qp(qp, IBV_EVENT_QP_FATAL)), None);
        assert_eq!(rec(&t, 3, Event::Qp(qp, IBV_EVENT_QP_FATAL)), None);
        // ... and an object gone.
        assert_eq!(t.exec(1, &Request::DestroyQp { qp }, &mut n), Reply::Done);
        assert_eq!(rec(&t, 1, Event::Qp(qp, IBV_EVENT_QP_FATAL)), None);
        assert!(rec(&t, 1, Event::Cq(cq, IBV_EVENT_CQ_ERR)).is_some());
    }
}
