//! One connection's IBTA Vol 1 chapter 12 state (the kernel's `ib_cm`
//! states), its timers and retry budget, and the QP attributes each side
//! derives from the other's messages.  [`crate::cma`] drives it; nothing
//! here reads a clock: deadlines are nanoseconds of the caller's clock.

use crate::mad::{Mad, Msg};

/// The IB CM state of a connection (IBTA 12.9.5; the names of the kernel's
/// `enum ib_cm_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmState {
    Idle,
    ReqSent,
    ReqRcvd,
    MraReqSent,
    RepSent,
    RepRcvd,
    MraRepRcvd,
    Established,
    DreqSent,
    DreqRcvd,
    Timewait,
    SidrReqSent,
    SidrReqRcvd,
}

/// The CM response timeout the kernel's rdma_cm puts in a REQ
/// (`CMA_CM_RESPONSE_TIMEOUT`: 4.096 us x 2^20, about 4.3 s).
pub const CM_RESPONSE_TIMEOUT: u8 = 20;
/// How often the kernel's rdma_cm lets a REQ or REP be sent again
/// (`CMA_MAX_CM_RETRIES`).
pub const MAX_CM_RETRIES: u8 = 15;
/// The packet life time rdma_cm assumes on RoCE (`CMA_IBOE_PACKET_LIFETIME`
/// of Linux 6.1).
pub const IBOE_PACKET_LIFETIME: u8 = 18;
/// The service timeout of the MRA the kernel sends for a REQ or REP it has
/// handed to user space (`CMA_CM_MRA_SETTING`: 24, about 68 s).
pub const MRA_SERVICE_TIMEOUT: u8 = 24;

/// 4.096 us x 2^`t`, in nanoseconds (IBTA's encoding of every CM timeout).
pub fn timeout_ns(t: u8) -> u64 {
    4096u64 << (t.min(31) as u32)
}

/// How long to wait for the answer to a message whose peer said it answers
/// within `remote_cm_response` (the kernel's `cm_convert_to_ms` of the path's
/// packet life time twice plus the peer's response timeout).  The
/// environment variable `SWRDMA_CM_TIMEOUT_MS` (read by the shell, passed as
/// `scale_ms`) replaces the whole figure in tests.
pub fn response_wait_ns(packet_life_time: u8, remote_cm_response: u8, override_ms: Option<u64>) -> u64 {
    if let Some(ms) = override_ms {
        return ms.max(1) * 1_000_000;
    }
    (2 * iba_ms(packet_life_time) + iba_ms(remote_cm_response)) * 1_000_000
}

/// A message that may have to go again, with its budget.
#[derive(Clone, Debug)]
pub struct Retry {
    pub mad: Mad,
    pub deadline: u64,
    pub wait: u64,
    pub left: u8,
}

/// The negotiated parameters of a connection, from both sides' messages:
/// what `INIT_QP_ATTR` answers.
#[derive(Clone, Debug, Default)]
pub struct QpParams {
    pub local_qpn: u32,
    pub remote_qpn: u32,
    /// Our send PSN (the starting PSN we put in our REQ or REP).
    pub sq_psn: u32,
    /// The peer's starting PSN (our receive PSN).
    pub rq_psn: u32,
    pub path_mtu: u8,
    /// Reads the peer may have outstanding at us (max_dest_rd_atomic).
    pub responder_resources: u8,
    /// Reads we may have outstanding (max_rd_atomic).
    pub initiator_depth: u8,
    pub retry_count: u8,
    pub rnr_retry_count: u8,
    /// The local ACK timeout of the QP (IBTA encoding).
    pub ack_timeout: u8,
    pub srq: bool,
}

/// One connection's protocol state.
#[derive(Clone, Debug)]
pub struct Conn {
    pub state: CmState,
    pub local_comm_id: u32,
    pub remote_comm_id: u32,
    pub tid: u64,
    pub qp: QpParams,
    /// The message to send again on a timeout (REQ, REP, DREQ, SIDR_REQ).
    pub retry: Option<Retry>,
    /// The last REP or DREP or RTU we sent: a duplicate REQ / DREQ / REP
    /// gets it again.
    pub last_sent: Option<Mad>,
    /// When the timewait ends (state `Timewait`).
    pub timewait_end: u64,
}

impl Conn {
    pub fn new(local_comm_id: u32, tid: u64) -> Conn {
        Conn {
            state: CmState::Idle,
            local_comm_id,
            remote_comm_id: 0,
            tid,
            qp: QpParams::default(),
            retry: None,
            last_sent: None,
            timewait_end: 0,
        }
    }

    /// Arms the retransmission of `mad` (sent now), `retries` more times.
    pub fn arm(&mut self, mad: Mad, now: u64, wait: u64, retries: u8) {
        self.retry = Some(Retry {
            mad,
            deadline: now + wait,
            wait,
            left: retries,
        });
    }

    pub fn disarm(&mut self) {
        self.retry = None;
    }

    /// The earliest instant this connection wants [`Conn::expire`] called.
    pub fn deadline(&self) -> Option<u64> {
        match (&self.retry, self.state) {
            (Some(r), _) => Some(r.deadline),
            (None, CmState::Timewait) => Some(self.timewait_end),
            _ => None,
        }
    }

    /// A timer that ran out: the message to send again, or `Err(())` when
    /// the budget is spent (the caller reports the timeout).
    pub fn expire(&mut self, now: u64) -> Option<Result<Mad, ()>> {
        let r = self.retry.as_mut()?;
        if now < r.deadline {
            return None;
        }
        if r.left == 0 {
            self.retry = None;
            return Some(Err(()));
        }
        r.left -= 1;
        r.deadline = now + r.wait;
        Some(Ok(r.mad.clone()))
    }

    /// A MRA for our outstanding REQ or REP: wait `service_timeout` more
    /// before sending again (IBTA 12.6.6).
    pub fn extend(&mut self, now: u64, service_timeout: u8, packet_life_time: u8, override_ms: Option<u64>) {
        if let Some(r) = self.retry.as_mut() {
            let extra = response_wait_ns(packet_life_time, service_timeout, override_ms);
            r.deadline = now + extra;
        }
    }
}

/// The local ACK timeout a QP gets from the packet life time of its path
/// and the CA's ACK delay (the kernel's `cm_ack_timeout`: the round trip,
/// life time + 1, or the delay if larger, plus one when the other is within
/// one of it; at most 31).
pub fn ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let rt = packet_life_time as u32 + 1;
    let d = ca_ack_delay as u32;
    let t = if rt >= d {
        rt + u32::from(d + 1 >= rt)
    } else {
        d + u32::from(rt + 1 >= d)
    };
    t.min(31) as u8
}

/// An IBTA time (4.096 us x 2^t) in milliseconds as the kernel's CM rounds
/// it (`cm_convert_to_ms`: 2^(t-8) ms).
pub fn iba_ms(t: u8) -> u64 {
    1u64 << (t.saturating_sub(8).min(31) as u32)
}

/// The comm IDs a message names: (its sender's, ours).
pub fn comm_ids(m: &Msg) -> (u32, u32) {
    match m {
        Msg::Req(r) => (r.local_comm_id, 0),
        Msg::Mra(r) => (r.local_comm_id, r.remote_comm_id),
        Msg::Rej(r) => (r.local_comm_id, r.remote_comm_id),
        Msg::Rep(r) => (r.local_comm_id, r.remote_comm_id),
        Msg::Rtu(r) => (r.local_comm_id, r.remote_comm_id),
        Msg::Dreq(r) => (r.local_comm_id, r.remote_comm_id),
        Msg::Drep(r) => (r.local_comm_id, r.remote_comm_id),
        Msg::SidrReq(r) => (r.request_id, 0),
        Msg::SidrRep(r) => (0, r.request_id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mad::Rtu;

    #[test]
    fn timeouts_as_ibta_encodes_them() {
        assert_eq!(timeout_ns(0), 4096);
        assert_eq!(timeout_ns(20), 4096 << 20);
        // a REQ's wait as the kernel rounds it: 2 x 1024 ms + 4096 ms
        assert_eq!(response_wait_ns(18, 20, None), 6_144_000_000);
        assert_eq!(response_wait_ns(18, 20, Some(50)), 50_000_000);
        // life time 18 (round trip 19) beside ack delays below, at, above
        assert_eq!(ack_timeout(0, 18), 19);
        assert_eq!(ack_timeout(15, 18), 19);
        assert_eq!(ack_timeout(18, 18), 20);
        assert_eq!(ack_timeout(19, 18), 20);
        assert_eq!(ack_timeout(20, 18), 21);
        assert_eq!(ack_timeout(25, 18), 25);
        assert_eq!(ack_timeout(31, 31), 31);
    }

    #[test]
    fn retries_then_gives_up() {
        let mut c = Conn::new(7, 1);
        let mad = Mad {
            tid: 1,
            msg: Msg::Rtu(Rtu::default()),
        };
        c.arm(mad, 0, 10, 2);
        assert!(c.expire(9).is_none());
        assert!(matches!(c.expire(10), Some(Ok(_))));
        assert_eq!(c.deadline(), Some(20));
        assert!(matches!(c.expire(20), Some(Ok(_))));
        assert!(matches!(c.expire(30), Some(Err(()))));
        assert!(c.deadline().is_none());
    }
}
