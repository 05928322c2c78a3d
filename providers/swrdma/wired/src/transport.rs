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
//! * **A turn** ([`Transport::turn`]): what came in is received and the
//!   timers run (`Wire::progress`), then every client's send queues are
//!   taken onto the wire (at most [`SEND_BATCH`] WQEs per queue), then the
//!   clients hear what happened: the doorbells of CQs whose consumer
//!   sleeps are written, the async events go into each client's async pipe
//!   ([`event_record`]), and a QP the engine moved to the error state is
//!   in that state in the control path's tables (`query_qp`).
//! * **Sleeping.**  Before the agent's loop sleeps it marks every send
//!   queue's consumer asleep ([`Transport::may_sleep`]); a client that
//!   then writes a WQE sends a `DOORBELL` message on its connection, which
//!   wakes the loop.  A queue with an entry already keeps it awake.
//! * **Control changes**: a QP made, modified or destroyed reaches the
//!   engine through [`Transport::changed`] (the path, PSNs and MTU of a
//!   `modify_qp`, the error state's flushes, the last ACK of a destroyed
//!   RC QP), and a client's end through [`Transport::gone`].

use crate::ctl::tables::ClientId;
use crate::data::{take_sends, ClientData, Event, Serving};
use crate::gids::Gids;
use crate::session::{Changed, Control};
use crate::userdir;
use crate::wire::engine::Wire;
use crate::wire::host::{Host, HostQp};
use crate::wire::sock::Sock;
use ibverbs_abi::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// At most this many WQEs of one send queue per turn, so that one client
/// that keeps posting does not keep the others waiting.
pub const SEND_BATCH: usize = 64;

/// The bytes of an async event record in a client's async pipe.
pub const EVENT_RECORD: usize = 16;

/// The async event `e` as its record: the object's kind (1 a QP, 2 a CQ, 3
/// an SRQ) and the client's handle of it (native-endian `u32`s), then the
/// event (`IBV_EVENT_*`, a native-endian `u64`).
pub fn event_record(e: &Event) -> [u8; EVENT_RECORD] {
    let (what, h, ev) = match *e {
        Event::Qp(h, ev) => (1u32, h, ev),
        Event::Cq(h, ev) => (2, h, ev),
        Event::Srq(h, ev) => (3, h, ev),
    };
    let mut r = [0u8; EVENT_RECORD];
    r[..4].copy_from_slice(&what.to_ne_bytes());
    r[4..8].copy_from_slice(&h.to_ne_bytes());
    r[8..].copy_from_slice(&(ev as u64).to_ne_bytes());
    r
}

/// The event of record `r` (None: not a record of [`event_record`]).
pub fn parse_event_record(r: &[u8]) -> Option<Event> {
    let r: &[u8; EVENT_RECORD] = r.try_into().ok()?;
    let what = u32::from_ne_bytes(r[..4].try_into().ok()?);
    let h = u32::from_ne_bytes(r[4..8].try_into().ok()?);
    let ev = u32::try_from(u64::from_ne_bytes(r[8..].try_into().ok()?)).ok()?;
    Some(match what {
        1 => Event::Qp(h, ev),
        2 => Event::Cq(h, ev),
        3 => Event::Srq(h, ev),
        _ => return None,
    })
}

/// The agent's wire context (see the module documentation).
pub struct Transport {
    wire: Wire,
    dir: PathBuf,
    /// Its context id in the directory.
    ctx: u32,
    /// Its `c<id>` socket: alive while the agent is.
    _endpoint: OwnedFd,
    /// The port's GID table when the transport opened.
    gids: Vec<[u8; 16]>,
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
        let ctx = userdir::alloc_ids(dir, 1);
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
            _endpoint: endpoint,
            gids: gids.table,
        })
    }

    /// Its context id in the directory.
    pub fn ctx(&self) -> u32 {
        self.ctx
    }

    /// The descriptors to wait on (level triggered; a turn drains them).
    pub fn fds(&self) -> Vec<BorrowedFd<'_>> {
        self.wire.sock.fds()
    }

    /// Where the agent's QP numbers come from: the user's id counter, as
    /// the provider's contexts take theirs (`Control::number_from`).
    pub fn numbers(&self) -> Box<dyn FnMut() -> u32> {
        let dir = self.dir.clone();
        match userdir::open_ids(&dir) {
            Ok(f) => Box::new(move || userdir::alloc_ids_in(&f, 1)),
            Err(_) => Box::new(move || userdir::alloc_ids(&dir, 1)),
        }
    }

    /// Some QP has packets unacknowledged or waits for a timer: the loop
    /// must turn again within a millisecond.
    pub fn busy(&self) -> bool {
        self.wire.busy()
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
                userdir::unpublish(&self.dir, qp.qpn);
            }
        }
    }

    /// A client is gone: its QPs' last words, and their links.
    pub fn gone(&self, d: ClientData) {
        for qp in d.qps.values() {
            self.wire.farewell(&**qp, &qp.lock());
            userdir::unpublish(&self.dir, qp.qpn);
        }
    }

    /// Marks every send queue's consumer asleep before the loop sleeps:
    /// false when one has an entry already (then the loop turns again at
    /// once; the marks are cleared).
    pub fn may_sleep(&self, ctl: &Control) -> bool {
        let data = ctl.data();
        let mut ok = true;
        for id in data.ids() {
            let Some(c) = data.client(id) else { continue };
            for (sq, _) in c.sqs.borrow_mut().values_mut() {
                ok &= sq.prepare_sleep();
            }
        }
        if !ok {
            self.woke(ctl);
        }
        ok
    }

    /// After the loop slept (or decided not to): the marks are cleared.
    pub fn woke(&self, ctl: &Control) {
        let data = ctl.data();
        for id in data.ids() {
            if let Some(c) = data.client(id) {
                for (sq, _) in c.sqs.borrow_mut().values_mut() {
                    sq.wake_up();
                }
            }
        }
    }

    /// One turn (see the module documentation); `async_w` gives each
    /// client's async pipe.  Whether anything was done.
    pub fn turn(&self, ctl: &mut Control, async_w: &HashMap<ClientId, BorrowedFd<'_>>) -> bool {
        let (data, tables) = ctl.data_and_keys();
        let ids = data.ids();
        let mut done;
        {
            let h = Serving {
                data,
                keys: RefCell::new(tables),
                gids: &self.gids,
            };
            done = self.wire.progress(&h);
            for &id in &ids {
                let Some(c) = data.client(id) else { continue };
                let mut sqs = c.sqs.borrow_mut();
                for (qpn, (sq, shape)) in sqs.iter_mut() {
                    if let Some(qp) = c.qps.get(qpn) {
                        done += take_sends(&h, &self.wire, qp, sq, shape, SEND_BATCH);
                    }
                }
            }
        }
        let mut moved = Vec::new();
        for &id in &ids {
            let Some(c) = data.client(id) else { continue };
            for cq in c.take_doorbells() {
                if let Some(b) = c.bells.get(&cq) {
                    let _ = crate::wq::ring(b.as_fd());
                }
            }
            let evs = c.take_events();
            if let Some(w) = async_w.get(&id) {
                for e in &evs {
                    // (Non-blocking: a client that does not read its
                    // events loses those that find its pipe full.)
                    let _ = rustix::io::write(w, &event_record(e));
                }
            }
            moved.extend(c.take_moved().into_iter().map(|q| (id, q)));
        }
        for (id, qpn) in moved {
            ctl.engine_moved(id, qpn, IBV_QPS_ERR);
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
    fn event_records_round_trip() {
        for e in [
            Event::Qp(7, IBV_EVENT_QP_FATAL),
            Event::Cq(0xffff_ffff, IBV_EVENT_CQ_ERR),
            Event::Srq(1, IBV_EVENT_SRQ_LIMIT_REACHED),
        ] {
            assert_eq!(parse_event_record(&event_record(&e)), Some(e));
        }
        let mut r = event_record(&Event::Qp(1, 2));
        r[0] = 9;
        assert_eq!(parse_event_record(&r), None, "no such kind");
        assert_eq!(parse_event_record(&r[..8]), None, "short");
    }
}
