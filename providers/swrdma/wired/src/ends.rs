//! The connections of the agent's processes, as far as QP1's relay sees
//! them, so that a process that exits without ending its connections does
//! not leave its peers waiting for ever.
//!
//! With the kernel's rdma_cm, a process's connections end with its file:
//! the kernel's `cm_destroy_id` sends a DREQ for an established connection
//! and a REJ (consumer defined, 28) for one still being set up, whether the
//! process ended it or was killed.  Here each process runs its own CM, so a
//! killed process sends nothing; the agent, which relays every CM message
//! of the host, follows each connection's stage from what it relays (no
//! I/O, no clock here: [`Ends`] is fed messages and asked) and, once the
//! process is found gone (`qp1.rs`), sends what the kernel would have.
//!
//! Only what the agent can build is sent: a connection whose peer comm ID
//! it has not seen (a REQ sent and not answered yet: the peer's REP then
//! finds no one and is dropped; its REQ retries find no listener, REJ 8) is
//! forgotten.  At most [`MAX_TRACKED`] connections and [`MAX_REQS`]
//! requests' QPNs are kept (the oldest go first).

use std::collections::HashMap;
use std::net::IpAddr;
use swrdma_cm::mad::{self, Mad, Msg};

/// Connections followed at most (only our processes make them).
pub const MAX_TRACKED: usize = 65536;
/// Requests from other hosts whose QPN is kept until our REP, at most.
pub const MAX_REQS: usize = 4096;

/// A connection's stage, as the relayed messages show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Our process sent the REQ.
    ReqSent,
    /// Our process (passive) answered a REQ with its REP.
    RepSent,
    /// Our process (active) was given the peer's REP.
    RepRcvd,
    /// RTU sent or received.
    Established,
}

/// One connection of one of our processes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Track {
    pub host: IpAddr,
    /// The peer's comm ID (0 until seen).
    pub theirs: u32,
    /// The peer's QPN (0 until seen).
    pub their_qpn: u32,
    pub stage: Stage,
    /// Order of the last change (the oldest is dropped first).
    seq: u64,
}

#[derive(Default)]
pub struct Ends {
    /// Our comm ID -> the connection.
    tracks: HashMap<u32, Track>,
    /// (host, their comm ID) of a REQ we relayed in -> (its QPN, order).
    req_qpns: HashMap<(IpAddr, u32), (u32, u64)>,
    seq: u64,
}

impl Ends {
    pub fn len(&self) -> usize {
        self.tracks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tracks.is_empty()
    }

    /// Our comm IDs being followed.
    pub fn ours(&self) -> Vec<u32> {
        self.tracks.keys().copied().collect()
    }

    pub fn get(&self, ours: u32) -> Option<&Track> {
        self.tracks.get(&ours)
    }

    fn tick(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn put(&mut self, ours: u32, t: Track) {
        if self.tracks.len() >= MAX_TRACKED && !self.tracks.contains_key(&ours) {
            if let Some(&old) = self.tracks.iter().min_by_key(|(_, t)| t.seq).map(|(k, _)| k) {
                self.tracks.remove(&old);
            }
        }
        self.tracks.insert(ours, t);
    }

    /// A message one of our processes sends to `host`.
    pub fn outgoing(&mut self, host: IpAddr, m: &Msg) {
        let seq = self.tick();
        match m {
            Msg::Req(r) => {
                let t = Track {
                    host,
                    theirs: 0,
                    their_qpn: 0,
                    stage: Stage::ReqSent,
                    seq,
                };
                self.put(r.local_comm_id, t);
            }
            Msg::Rep(r) => {
                let their_qpn = self.req_qpns.remove(&(host, r.remote_comm_id)).map_or(0, |q| q.0);
                let t = Track {
                    host,
                    theirs: r.remote_comm_id,
                    their_qpn,
                    stage: Stage::RepSent,
                    seq,
                };
                self.put(r.local_comm_id, t);
            }
            Msg::Rtu(r) => {
                if let Some(t) = self.tracks.get_mut(&r.local_comm_id).filter(|t| t.host == host) {
                    t.stage = Stage::Established;
                    t.seq = seq;
                }
            }
            Msg::Rej(r) => self.end(host, r.local_comm_id),
            Msg::Dreq(r) => self.end(host, r.local_comm_id),
            Msg::Drep(r) => self.end(host, r.local_comm_id),
            _ => {}
        }
    }

    /// A message from `host` the agent gave to one of our processes (or
    /// would have: the message is enough).
    pub fn incoming(&mut self, host: IpAddr, m: &Msg) {
        let seq = self.tick();
        match m {
            Msg::Req(r) => {
                if self.req_qpns.len() >= MAX_REQS {
                    // (any host may send REQs that are never answered: the
                    // older half goes at once, so a flood costs no scan
                    // per REQ)
                    let keep_from = seq.saturating_sub(MAX_REQS as u64 / 2);
                    self.req_qpns.retain(|_, v| v.1 >= keep_from);
                }
                self.req_qpns.insert((host, r.local_comm_id), (r.local_qpn, seq));
            }
            Msg::Rep(r) => {
                let t = self.tracks.get_mut(&r.remote_comm_id);
                if let Some(t) = t.filter(|t| t.host == host && t.stage == Stage::ReqSent) {
                    t.theirs = r.local_comm_id;
                    t.their_qpn = r.local_qpn;
                    t.stage = Stage::RepRcvd;
                    t.seq = seq;
                }
            }
            Msg::Rtu(r) => {
                let t = self.tracks.get_mut(&r.remote_comm_id);
                if let Some(t) = t.filter(|t| t.host == host && t.theirs == r.local_comm_id) {
                    t.stage = Stage::Established;
                    t.seq = seq;
                }
            }
            Msg::Rej(r) => self.end_theirs(host, r.remote_comm_id, r.local_comm_id),
            Msg::Dreq(r) => self.end_theirs(host, r.remote_comm_id, r.local_comm_id),
            Msg::Drep(r) => self.end_theirs(host, r.remote_comm_id, r.local_comm_id),
            _ => {}
        }
    }

    fn end(&mut self, host: IpAddr, ours: u32) {
        if self.tracks.get(&ours).is_some_and(|t| t.host == host) {
            self.tracks.remove(&ours);
        }
    }

    /// A message of the peer ends the connection (its comm ID must match
    /// once known: a REJ to our REQ names none).
    fn end_theirs(&mut self, host: IpAddr, ours: u32, theirs: u32) {
        if self
            .tracks
            .get(&ours)
            .is_some_and(|t| t.host == host && (t.theirs == 0 || t.theirs == theirs))
        {
            self.tracks.remove(&ours);
        }
    }

    /// The process holding `ours` is gone: the connection is forgotten,
    /// and what the kernel's `cm_destroy_id` sends for it is returned (with
    /// the host it goes to), if the agent can build it.
    pub fn gone(&mut self, ours: u32, tid: u64) -> Option<(IpAddr, Mad)> {
        let t = self.tracks.remove(&ours)?;
        let msg = match t.stage {
            Stage::ReqSent => return None,
            Stage::Established => Msg::Dreq(mad::Dreq {
                local_comm_id: ours,
                remote_comm_id: t.theirs,
                remote_qpn_eecn: t.their_qpn,
                ..Default::default()
            }),
            Stage::RepSent | Stage::RepRcvd => Msg::Rej(mad::Rej {
                local_comm_id: ours,
                remote_comm_id: t.theirs,
                // The kernel's cm_format_rej: REP_RCVD rejects the REP,
                // REP_SENT "other".
                message_rejected: if t.stage == Stage::RepRcvd { 1 } else { 2 },
                reason: mad::rej_reason::CONSUMER_DEFINED,
                ..Default::default()
            }),
        };
        Some((t.host, Mad { tid, msg }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swrdma_cm::mad::{Drep, Dreq, Rej, Rep, Req, Rtu};

    fn host(n: u8) -> IpAddr {
        IpAddr::from([169, 254, 0, n])
    }

    fn req(local: u32, qpn: u32) -> Msg {
        Msg::Req(Req {
            local_comm_id: local,
            local_qpn: qpn,
            ..Default::default()
        })
    }

    fn rep(local: u32, remote: u32, qpn: u32) -> Msg {
        Msg::Rep(Rep {
            local_comm_id: local,
            remote_comm_id: remote,
            local_qpn: qpn,
            ..Default::default()
        })
    }

    fn rtu(local: u32, remote: u32) -> Msg {
        Msg::Rtu(Rtu {
            local_comm_id: local,
            remote_comm_id: remote,
            ..Default::default()
        })
    }

    #[test]
    fn an_established_connection_of_a_gone_process_gets_the_kernels_dreq() {
        // active: our REQ, their REP, our RTU
        let mut e = Ends::default();
        e.outgoing(host(2), &req(0x11, 0x100));
        assert_eq!(e.gone(0x11, 1), None, "nothing to say to a peer not heard yet");
        e.outgoing(host(2), &req(0x11, 0x100));
        e.incoming(host(2), &rep(0x22, 0x11, 0x200));
        e.outgoing(host(2), &rtu(0x11, 0x22));
        let (h, m) = e.gone(0x11, 7).unwrap();
        assert_eq!(h, host(2));
        let Msg::Dreq(d) = m.msg else { panic!("{m:?}") };
        assert_eq!(
            (d.local_comm_id, d.remote_comm_id, d.remote_qpn_eecn),
            (0x11, 0x22, 0x200)
        );
        assert!(e.is_empty());
        // passive: their REQ, our REP, their RTU
        e.incoming(host(3), &req(0x33, 0x300));
        e.outgoing(host(3), &rep(0x44, 0x33, 0x400));
        e.incoming(host(3), &rtu(0x33, 0x44));
        let Msg::Dreq(d) = e.gone(0x44, 8).unwrap().1.msg else {
            panic!()
        };
        assert_eq!(
            (d.local_comm_id, d.remote_comm_id, d.remote_qpn_eecn),
            (0x44, 0x33, 0x300)
        );
    }

    #[test]
    fn a_connection_being_set_up_gets_rej_28() {
        let mut e = Ends::default();
        e.incoming(host(3), &req(0x33, 0x300));
        e.outgoing(host(3), &rep(0x44, 0x33, 0x400));
        let Msg::Rej(r) = e.gone(0x44, 1).unwrap().1.msg else {
            panic!()
        };
        assert_eq!(
            (r.local_comm_id, r.remote_comm_id, r.reason, r.message_rejected),
            (0x44, 0x33, 28, 2)
        );
        e.outgoing(host(2), &req(0x11, 0x100));
        e.incoming(host(2), &rep(0x22, 0x11, 0x200));
        let Msg::Rej(r) = e.gone(0x11, 1).unwrap().1.msg else {
            panic!()
        };
        assert_eq!((r.remote_comm_id, r.message_rejected), (0x22, 1));
    }

    #[test]
    fn ended_connections_and_strangers_leave_nothing() {
        let mut e = Ends::default();
        e.outgoing(host(2), &req(0x11, 0x100));
        e.incoming(host(2), &rep(0x22, 0x11, 0x200));
        e.outgoing(host(2), &rtu(0x11, 0x22));
        // a DREQ of another host, or naming another comm ID, ends nothing
        let forged = |l, r| {
            Msg::Dreq(Dreq {
                local_comm_id: l,
                remote_comm_id: r,
                ..Default::default()
            })
        };
        e.incoming(host(9), &forged(0x22, 0x11));
        e.incoming(host(2), &forged(0x23, 0x11));
        assert_eq!(e.len(), 1);
        e.incoming(host(2), &forged(0x22, 0x11));
        assert!(e.is_empty());
        e.outgoing(host(2), &req(0x12, 0x100));
        e.incoming(
            host(2),
            &Msg::Rej(Rej {
                remote_comm_id: 0x12,
                reason: 8,
                ..Default::default()
            }),
        );
        assert!(e.is_empty());
        e.outgoing(host(2), &req(0x13, 0x100));
        e.incoming(host(2), &rep(0x24, 0x13, 0x200));
        e.outgoing(host(2), &rtu(0x13, 0x24));
        e.outgoing(
            host(2),
            &Msg::Drep(Drep {
                local_comm_id: 0x13,
                remote_comm_id: 0x24,
                ..Default::default()
            }),
        );
        assert!(e.is_empty() && e.gone(0x13, 1).is_none());
    }

    #[test]
    fn tracking_is_bounded() {
        let mut e = Ends::default();
        for i in 0..(MAX_TRACKED as u32 + 10) {
            e.outgoing(host(2), &req(i + 1, 5));
            e.incoming(host(2), &req(i + 1, 5));
        }
        assert_eq!(e.len(), MAX_TRACKED);
        assert!(e.req_qpns.len() <= MAX_REQS);
        assert!(e.get(1).is_none() && e.get(MAX_TRACKED as u32 + 10).is_some());
    }
}
