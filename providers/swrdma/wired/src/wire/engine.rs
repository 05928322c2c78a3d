//! The RoCE v2 transport of a wire device: requester and responder of RC,
//! UC and UD over UDP port 4791 (IBTA Annex A17), packet by packet, with
//! PSNs, ACK/NAK, retransmission after the QP's local ACK timeout
//! (`retry_cnt` times), RNR NAKs with the responder's RNR timer
//! (`rnr_retry` times, 7: without limit), duplicate and out-of-order
//! handling, the QP's path MTU and the ICRC on every packet.
//!
//! It runs over the objects of a host (`host.rs`): the provider's
//! per-process wire runs it over its own context's objects; issue 33 moves
//! it into the agent, over each client's.  Everything a QP does on the wire
//! happens under its lock (`HostQp::lock`): a post sends what the window
//! allows at once, received packets are handled by whoever makes progress
//! (in the provider, `ibv_poll_cq` or the context's thread), and the timers
//! are looked at by the same progress.  Every access to memory on behalf
//! of a peer is checked against the host's keys (`Host::with_keys`, through
//! `swrdma_rc::responder::Target`) and made through its memory
//! (`Host::mem`): a peer reaches only what an rkey grants.

use crate::now_ns;
use crate::wire::host::{Host, HostQp, HostSt};
use crate::wire::mcast;
use crate::wire::sock::{ip_gid, source_port, src_port, RxMeta, Sender, Sock, TxBatch};
pub use crate::wire::state::*;
use crate::wq::DtxPath;
use ibverbs_abi::*;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use swrdma_rc::completer;
use swrdma_rc::fault::{Fault, NAK_PSN_SEQ};
use swrdma_rc::memory::{Atomic, Memory};
use swrdma_rc::op::Op;
use swrdma_rc::qpstate::{self, Intake};
use swrdma_rc::recv::GidKind;
use swrdma_rc::responder::{pmtu_bytes, ReadRes, Target};
use swrdma_rc::timers::ack_timeout_ns;
use swrdma_roce as roce;
use swrdma_roce::{op, psn_add, psn_diff, Aeth, AtomicEth, Bth, Deth, Hdr, Reth};

/// Packets (PSNs) of one QP on the wire and not yet acknowledged: a
/// congestion window that halves on a loss and grows by one per
/// acknowledgement that makes progress, between these bounds (rxe keeps
/// at most 128 PSNs unacknowledged).
const CWND_MIN: u32 = 16;
const CWND_INIT: u32 = 32;
const CWND_MAX: u32 = 128;
/// A READ asks for at most this many response packets per request (a
/// larger one is asked for in parts, each its own READ request).
const READ_CHUNK: u32 = 16;
/// An RC requester asks for an ACK at least every this many packets.
const ACK_EVERY: u32 = 32;
/// The partition key of every packet (the default P_Key, full member).
const PKEY: u16 = 0xffff;

/// A responder step that ends the connection: the PSN to NAK and why.
type Fatal = Result<(), (u32, Fault)>;

/// Which process owns QPN `q` (the provider's per-process wire: the user's
/// directory of endpoints).
pub type Owner = Box<dyn Fn(u32) -> Option<u32> + Send + Sync>;

/// The transport of a wire context.
pub struct Wire {
    pub sock: Sock,
    /// The port's active MTU in bytes (UD's limit).
    pub mtu: u32,
    /// Which process of the user owns a QPN (its datagrams are forwarded
    /// there; None: nobody's, dropped).
    owner: Owner,
    /// QPs with work on the wire (timers to look at).
    busy: AtomicU32,
    last_timers: AtomicU64,
    /// Idle [`TxBatch`]es: a burst of packets is built in one and leaves in
    /// one `sendmmsg` (each thread that sends a burst takes one meanwhile).
    txq: Mutex<Vec<TxBatch>>,
}

/// Where a packet's payload starts in its [`TxBatch`] slot: the headers are
/// written just before it, so that the packet is one contiguous run.
const PAY: usize = roce::MAX_HDR;

/// Bytes of a [`TxBatch`] slot: headers, the largest payload (IB MTU 4096),
/// pad and ICRC.
const TX_SLOT: usize = PAY + 4096 + 8;

/// Idle batches kept (at most one per thread sending at once is used).
const TXQ_KEEP: usize = 4;

/// `SWRDMA_WIRE_TRACE=1`: every packet sent and received, on stderr.
fn trace() -> bool {
    static T: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *T.get_or_init(|| std::env::var_os("SWRDMA_WIRE_TRACE").is_some_and(|v| v == "1"))
}

/// The IP address a GID stands for (RoCE v2).
pub fn gid_ip(g: &[u8; 16]) -> IpAddr {
    let v6 = Ipv6Addr::from(*g);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    }
}

fn same_family(a: &IpAddr, b: &IpAddr) -> bool {
    a.is_ipv4() == b.is_ipv4()
}

impl Wire {
    pub fn new(sock: Sock, mtu: u32, owner: Owner) -> Wire {
        Wire {
            sock,
            mtu,
            owner,
            busy: AtomicU32::new(0),
            last_timers: AtomicU64::new(0),
            txq: Mutex::new(Vec::new()),
        }
    }

    /// Some QP has packets unacknowledged or waits for a timer: the
    /// context's thread must look again within a millisecond.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed) > 0
    }

    /// Receives what came in and runs the timers.
    pub fn progress<H: Host>(&self, c: &H) -> usize {
        let mine = |q: u32| c.qp(q).is_some();
        let owner = |q: u32| (self.owner)(q);
        // (Fault injection sits around the link, not in the protocol.)
        let mut f = |m: &RxMeta, pkt: &[u8]| {
            if !crate::wire::faults::drop_received() {
                self.rx(c, m, pkt)
            }
        };
        let n = self.sock.recv(64, &mine, &owner, &mut f);
        self.place_deferred(c);
        if self.busy() {
            let now = now_ns();
            let last = self.last_timers.load(Ordering::Relaxed);
            if now.saturating_sub(last) >= 50_000
                && self
                    .last_timers
                    .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                self.timers(c, now);
            }
        }
        n
    }

    /// Before the context closes: what waits in our sockets is handled
    /// (forwarded to its owner, if another process's), until they are
    /// empty (at most ~4000 datagrams).
    pub fn flush<H: Host>(&self, c: &H) {
        for _ in 0..64 {
            if self.progress(c) == 0 {
                break;
            }
        }
    }

    /// An RC QP about to go away sends the ACK of the last request it
    /// received once more: if the first copy was lost, the requester would
    /// retransmit to a QP that no longer answers and fail (a duplicate ACK
    /// is harmless).
    pub fn farewell<Q: HostQp>(&self, qp: &Q, st: &Q::St) {
        let live = matches!(st.state(), IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD);
        if qp.qpt() != IBV_QPT_RC || !live || st.wq().in_send || st.wq().wr.is_some() {
            return;
        }
        let (Some(src), Some(dst)) = (st.wq().src, st.wq().dst) else {
            return;
        };
        let h = Hdr {
            bth: Self::bth(op::RC_ACK, st.attr().dest_qp_num, psn_add(st.wq().epsn, 0xff_ffff)),
            aeth: Some(Aeth::ack(st.wq().msn)),
            ..Default::default()
        };
        self.tx(&src, st.wq().sender.as_ref(), &dst, &h, &[], tclass(st));
    }

    fn timers<H: Host>(&self, c: &H, now: u64) {
        // (A post meanwhile counts itself after the reset: never lost.)
        self.busy.store(0, Ordering::Relaxed);
        for qp in c.all_qps() {
            let mut st = qp.lock();
            if st.state() == IBV_QPS_ERR {
                st.wq_mut().reqs.clear();
            }
            if st.wq_mut().reqs.is_empty() {
                continue;
            }
            self.mark_busy();
            if st.state() != IBV_QPS_RTS && st.state() != IBV_QPS_SQD {
                continue;
            }
            if st.wq_mut().rnr_until != 0 {
                if now >= st.wq_mut().rnr_until {
                    st.wq_mut().rnr_until = 0;
                    self.pump(c, &qp, &mut st);
                }
                continue;
            }
            if st.wq_mut().timer_at != 0 && now >= st.wq_mut().timer_at {
                let (retry_cnt, timeout) = (st.attr().retry_cnt, st.attr().timeout);
                if let Err(status) = st.budget().timed_out(retry_cnt, timeout) {
                    crate::wire::record::note_qp(crate::wire::record::Ev::GiveUp, qp.qpn(), st.wq_mut().una);
                    self.fail_front(c, &qp, &mut st, status);
                    continue;
                }
                let una = st.wq_mut().una;
                crate::wire::record::note_qp(crate::wire::record::Ev::Timeout, qp.qpn(), una);
                self.lost(&mut *st);
                st.wq_mut().loss_at = Some(una);
                self.rewind(&mut *st, una);
                st.wq_mut().timer_at = 0;
                self.pump(c, &qp, &mut st);
            } else if st.wq_mut().next < st.wq_mut().reqs.len() {
                self.pump(c, &qp, &mut st);
            }
        }
    }

    fn mark_busy(&self) {
        self.busy.fetch_add(1, Ordering::Relaxed);
    }

    // ----- sending -------------------------------------------------------

    /// Sends one packet: headers, payload, pad and ICRC (from `src`, through
    /// the QP's sender `via` when it has one).
    #[allow(clippy::too_many_arguments)]
    fn tx(&self, src: &IpAddr, via: Option<&Arc<Sender>>, dst: &IpAddr, h: &Hdr, payload: &[u8], tclass: u8) {
        let mut hb = [0u8; roce::MAX_HDR];
        let Ok(hl) = roce::encode(h, payload.len(), &mut hb) else {
            return;
        };
        let pad = [0u8; 4];
        let np = roce::pad_for(payload.len()) as usize;
        let ip = tx_ip(src, dst, via);
        let icrc = roce::icrc(&ip, &[&hb[..hl], payload, &pad[..np]]);
        let r = self
            .sock
            .send(src, via, dst, &[&hb[..hl], payload, &pad[..np], &icrc], tclass);
        if trace() {
            eprintln!(
                "{} tx op {:#x} dqpn {} psn {} len {} {:?}",
                now_ns() / 1000,
                h.bth.opcode,
                h.bth.dqpn,
                h.bth.psn,
                payload.len(),
                r.err()
            );
        }
    }

    /// An empty batch (from the pool, else a new one).
    fn batch(&self) -> TxBatch {
        self.txq
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| TxBatch::new(TX_SLOT))
    }

    /// Sends what `b` holds and keeps it for the next burst.
    fn send_out(&self, mut b: TxBatch) {
        if !b.is_empty() {
            self.sock.send_batch(&mut b);
        }
        let mut q = self.txq.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() < TXQ_KEEP {
            q.push(b);
        }
    }

    /// Makes room in `b` for a packet from `src` through `via`: sends it
    /// first when it is full or holds packets from another address or
    /// socket.  Then the payload goes to `b.slot_mut()[PAY..]` and
    /// [`Wire::tx_slot`] completes the packet.
    fn room(&self, b: &mut TxBatch, src: &IpAddr, via: Option<&Arc<Sender>>) {
        if b.is_full() || !b.same_source(src, via) {
            self.sock.send_batch(b);
        }
    }

    /// Completes the packet whose `plen` bytes of payload are at
    /// `PAY..` of the next slot of `b` (headers before it, pad and ICRC
    /// after it) and adds it to the batch; sent by the next
    /// [`Wire::send_out`] (or [`Wire::room`] when the batch is full).
    #[allow(clippy::too_many_arguments)]
    fn tx_slot(
        &self,
        b: &mut TxBatch,
        src: &IpAddr,
        via: Option<&Arc<Sender>>,
        dst: &IpAddr,
        h: &Hdr,
        plen: usize,
        tclass: u8,
    ) {
        let mut hb = [0u8; roce::MAX_HDR];
        let Ok(hl) = roce::encode(h, plen, &mut hb) else {
            return;
        };
        let np = roce::pad_for(plen) as usize;
        let ip = tx_ip(src, dst, via);
        let slot = b.slot_mut();
        let (start, end) = (PAY - hl, PAY + plen + np);
        slot[start..PAY].copy_from_slice(&hb[..hl]);
        slot[PAY + plen..end].fill(0);
        let len = end + roce::ICRC_LEN - start;
        // (an IPv4 datagram's identification is its place in its group)
        let ident = b.seg_for(dst, len, tclass);
        let slot = b.slot_mut();
        let icrc = roce::icrc_ident(&ip, &[&slot[start..end]], ident, true);
        slot[end..end + roce::ICRC_LEN].copy_from_slice(&icrc);
        b.push(*src, via, *dst, start, len, tclass);
        if trace() {
            let (op, dqpn, psn) = (h.bth.opcode, h.bth.dqpn, h.bth.psn);
            eprintln!(
                "{} tx op {op:#x} dqpn {dqpn} psn {psn} len {plen} (batched)",
                now_ns() / 1000
            );
        }
    }

    fn bth(opcode: u8, dqpn: u32, psn: u32) -> Bth {
        Bth {
            opcode,
            pkey: PKEY,
            dqpn,
            psn,
            ..Default::default()
        }
    }

    /// What a request entering a send queue starts (`post`, `post_direct`):
    /// on an empty queue a full retry budget and the wire marked busy, and
    /// the congestion window's first size.
    fn queue_starts<H: Host>(&self, st: &mut H::St) {
        if st.wq_mut().reqs.is_empty() {
            st.budget().refill();
            self.mark_busy();
        }
        if st.wq_mut().cwnd == 0 {
            st.wq_mut().cwnd = CWND_INIT;
        }
    }

    /// Posts a request (checked by `post_one`): queues it and sends what
    /// the window allows.
    pub fn post<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, mut r: Req) {
        let ud = qp.qpt() == IBV_QPT_UD;
        let pmtu = if ud { self.mtu } else { st.wq_mut().pmtu.max(256) } as u64;
        self.queue_starts::<H>(st);
        if r.kind == Op::Read && r.len > READ_CHUNK as u64 * pmtu {
            let chunk = READ_CHUNK as u64 * pmtu;
            let mut off = 0u64;
            while off < r.len {
                let n = (r.len - off).min(chunk);
                let part = Req {
                    first: st.wq().psn,
                    npkts: n.div_ceil(pmtu) as u32,
                    raddr: r.raddr + off,
                    rkey: r.rkey,
                    sges: r.sges.clone(),
                    loff: off,
                    last: off + n >= r.len,
                    ..Req::new(r.seq, Op::Read, n, false)
                };
                st.wq_mut().psn = psn_add(st.wq_mut().psn, part.npkts);
                st.wq_mut().reqs.push_back(part);
                off += n;
            }
        } else {
            r.first = st.wq_mut().psn;
            r.npkts = match r.kind {
                Op::Send | Op::Write | Op::Read => (r.len.div_ceil(pmtu)).max(1) as u32,
                _ => 1,
            };
            r.loff = 0;
            r.last = true;
            st.wq_mut().psn = psn_add(st.wq_mut().psn, r.npkts);
            st.wq_mut().reqs.push_back(r);
        }
        self.pump(c, qp, st);
    }

    /// The direct-transmit window (`wq/mod.rs`) QP `qp` may open now: its
    /// next PSN, its path (on interface `ifindex`) and its ACK timeout (ns;
    /// 0: none), when it is an RC QP in RTS with nothing unacknowledged,
    /// no RNR wait, a path MTU, both addresses of one family and traffic
    /// class 0 (the client's socket sends with the default).
    /// `SWRDMA_WIRE_DIRECT=0`: never.
    pub fn dtx_path<Q: HostQp>(&self, qp: &Q, st: &mut Q::St, ifindex: u32) -> Option<(u32, DtxPath, u64)> {
        static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if !*ON.get_or_init(|| std::env::var_os("SWRDMA_WIRE_DIRECT").is_none_or(|v| v != "0")) {
            return None;
        }
        let ok = qp.qpt() == IBV_QPT_RC
            && st.state() == IBV_QPS_RTS
            && st.wq().reqs.is_empty()
            && st.wq().rnr_until == 0
            && st.wq().pmtu >= 256
            && tclass(st) == 0;
        let (src, dst) = (st.wq().src?, st.wq().dst?);
        if !ok || !same_family(&src, &dst) {
            return None;
        }
        let t = st.attr().timeout;
        let path = DtxPath {
            src,
            dst,
            dqpn: st.attr().dest_qp_num,
            pmtu: st.wq().pmtu,
            ifindex,
        };
        Some((st.wq().psn, path, if t == 0 { 0 } else { ack_timeout_ns(t) }))
    }

    /// Posts a request whose only packet the client sent itself with PSN
    /// `psn` through the direct-transmit window (`wq/mod.rs`) at `sent`
    /// (CLOCK_MONOTONIC ns: its ACK timeout runs from then): kept as
    /// sent (its ACK or response, its retransmission) when it is what the
    /// window was opened for: an RC SEND, WRITE or READ of one packet
    /// (a READ: of at most one packet of response) or an atomic, PSN `psn`
    /// the next one, nothing before it left to send, the QP in RTS.  Else it is
    /// posted as any other (a second copy with the same PSN, when that is
    /// the next one, is a duplicate the responder answers again).
    pub fn post_direct<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, mut r: Req, psn: u32, sent: u64) {
        let pmtu = st.wq_mut().pmtu.max(256) as u64;
        let fits = qp.qpt() == IBV_QPT_RC
            && st.state() == IBV_QPS_RTS
            && (matches!(r.kind, Op::Send | Op::Write | Op::Read) && r.len <= pmtu
                || matches!(r.kind, Op::CmpSwap | Op::FetchAdd))
            && st.wq().psn == psn
            && st.wq().next == st.wq().reqs.len()
            && st.wq().rnr_until == 0;
        if !fits {
            return self.post(c, qp, st, r);
        }
        self.queue_starts::<H>(st);
        (r.first, r.npkts, r.loff, r.last) = (psn, 1, 0, true);
        let timeout = ack_timeout_ns(st.attr().timeout);
        let wq = st.wq_mut();
        wq.psn = psn_add(psn, 1);
        wq.reqs.push_back(r);
        wq.next = wq.reqs.len();
        wq.next_pkt = 0;
        wq.since_ackreq = 0;
        if wq.timer_at == 0 {
            wq.timer_at = sent.min(now_ns()) + timeout;
        }
        crate::wire::record::note_qp(crate::wire::record::Ev::Direct, qp.qpn(), psn);
    }

    /// Transmits from `next` on, as far as the window (and an RNR wait)
    /// allows.  UC and UD requests complete once sent.
    fn pump<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St) {
        if st.wq_mut().rnr_until != 0 || (st.state() != IBV_QPS_RTS && st.state() != IBV_QPS_SQD) {
            return;
        }
        let rc = qp.qpt() == IBV_QPT_RC;
        let pmtu = if qp.qpt() == IBV_QPT_UD {
            self.mtu
        } else {
            st.wq_mut().pmtu.max(256)
        };
        let mut b = self.batch();
        let via = st.wq_mut().sender.clone();
        let mut stage = STAGE.with(|s| s.take());
        let mut staged = None;
        while st.wq_mut().next < st.wq_mut().reqs.len() {
            let idx = st.wq_mut().next;
            let pkt = st.wq_mut().next_pkt;
            if rc && !in_window(st, idx, pkt) {
                break;
            }
            let Some((src, dst, tc)) = path_of(st, idx) else {
                // (No path: checked at RTR; dropped as on a dead link.)
                st.wq_mut().next += 1;
                st.wq_mut().next_pkt = 0;
                continue;
            };
            self.room(&mut b, &src, via.as_ref());
            let pre = read_ahead(c.mem(qp), st, rc, idx, pkt, pmtu, &mut stage, &mut staged);
            let buf = &mut b.slot_mut()[PAY..PAY + pmtu as usize];
            let (mut h, plen, last_pkt) = match request_packet(c.mem(qp), qp, st, idx, pkt, pmtu, pre, buf) {
                Ok(p) => p,
                Err(seq) => {
                    self.send_out(b);
                    STAGE.with(|s| s.replace(stage));
                    self.fail_seq(c, qp, st, seq, IBV_WC_LOC_PROT_ERR);
                    return;
                }
            };
            if rc {
                st.wq_mut().since_ackreq = st.wq_mut().since_ackreq.saturating_add(1);
                // Also twice per window: a window never fills without
                // asking for the ACK that opens it again.
                let every = ACK_EVERY.min(st.wq_mut().cwnd.max(CWND_MIN) / 2);
                if last_pkt || st.wq_mut().since_ackreq >= every {
                    h.bth.ackreq = true;
                    st.wq_mut().since_ackreq = 0;
                }
            } else if last_pkt {
                // (UC, UD: as rxe, which asks on every message's last
                // packet whatever the QP type; nobody answers)
                h.bth.ackreq = true;
            }
            if same_family(&src, &dst) {
                self.tx_slot(&mut b, &src, via.as_ref(), &dst, &h, plen, tc);
            }
            if !last_pkt {
                st.wq_mut().next_pkt += 1;
            } else {
                st.wq_mut().next += 1;
                st.wq_mut().next_pkt = 0;
                if !rc {
                    // UC, UD: done once on the wire.
                    let seq = st.wq_mut().reqs[idx].seq;
                    st.wq_mut().reqs.remove(idx);
                    st.wq_mut().next -= 1;
                    st.sq_done(seq, 0);
                    c.complete_sq(qp, st);
                }
            }
            if rc && st.wq_mut().timer_at == 0 {
                st.wq_mut().timer_at = now_ns() + ack_timeout_ns(st.attr().timeout);
            }
        }
        self.send_out(b);
        STAGE.with(|s| s.replace(stage));
    }

    /// Goes back to PSN `psn` (the oldest unacknowledged one): what follows
    /// is sent again.
    fn rewind<S: HostSt>(&self, st: &mut S, psn: u32) {
        let wq = st.wq_mut();
        wq.next = wq.reqs.len();
        wq.next_pkt = 0;
        for (i, r) in wq.reqs.iter().enumerate() {
            let d = psn_diff(psn, r.first);
            if d < r.npkts as i32 {
                wq.next = i;
                wq.next_pkt = if d > 0 && r.kind != Op::CmpSwap && r.kind != Op::FetchAdd {
                    d as u32
                } else {
                    0
                };
                break;
            }
        }
        // (The first packet sent again asks for an ACK: where the
        // responder stands.)
        wq.since_ackreq = u32::MAX / 2;
    }

    /// The request with `seq` completes with an error status: the QP goes
    /// to the error state (the rest is flushed).
    fn fail_seq<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, seq: u64, status: u32) {
        st.sq_fail(seq, status);
        st.wq_mut().reqs.clear();
        st.wq_mut().next = 0;
        st.wq_mut().timer_at = 0;
        c.to_err(qp, st);
    }

    fn fail_front<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, status: u32) {
        if let Some(seq) = st.wq_mut().reqs.front().map(|r| r.seq) {
            self.fail_seq(c, qp, st, seq, status);
        }
    }

    /// Requests wholly before PSN `psn` that need no response data are
    /// acknowledged: completed.  A READ or atomic among them lost its
    /// response: everything is sent again from it (an implied NAK).
    fn ack_upto<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, psn: u32) -> bool {
        let mut progress = false;
        while let Some(r) = st.wq_mut().reqs.front() {
            let last = psn_add(r.first, r.npkts - 1);
            if psn_diff(psn, last) <= 0 {
                break;
            }
            if r.kind != Op::Send && r.kind != Op::Write {
                // Implied NAK: its response did not come.  Asked for again
                // once per loss (each later packet would ask again, and a
                // responder answering every copy falls ever further behind);
                // the retransmission timer asks again after that.
                let f = r.first;
                if psn_diff(st.wq_mut().una, f) < 0 {
                    st.wq_mut().una = f;
                }
                let una = st.wq_mut().una;
                if st.wq_mut().loss_at != Some(una) {
                    self.lost(st);
                    st.wq_mut().loss_at = Some(una);
                    self.rewind(st, una);
                }
                return progress;
            }
            let seq = r.seq;
            st.wq_mut().reqs.pop_front();
            st.wq_mut().next = st.wq_mut().next.saturating_sub(1);
            st.sq_done(seq, 0);
            st.wq_mut().una = psn_add(last, 1);
            progress = true;
        }
        let before = st.wq_mut().una;
        if !st.wq_mut().reqs.is_empty() {
            // (Part of a multi-packet request.)
            self.advance_una(st, psn);
            progress |= st.wq_mut().una != before;
        }
        if progress {
            c.complete_sq(qp, st);
        }
        progress
    }

    /// The SENDs and WRITEs in front of the request starting at `first`
    /// are done (a response to a later request came: the responder executed
    /// them).  True when something completed.
    fn ack_before<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, first: u32) -> bool {
        let mut progress = false;
        while let Some(r) = st.wq_mut().reqs.front() {
            if (r.kind != Op::Send && r.kind != Op::Write) || psn_diff(first, r.first) <= 0 {
                break;
            }
            let (seq, end) = (r.seq, psn_add(r.first, r.npkts));
            st.wq_mut().reqs.pop_front();
            st.wq_mut().next = st.wq_mut().next.saturating_sub(1);
            st.sq_done(seq, 0);
            if psn_diff(end, st.wq_mut().una) > 0 {
                st.wq_mut().una = end;
            }
            progress = true;
        }
        if progress {
            c.complete_sq(qp, st);
        }
        progress
    }

    /// The oldest unacknowledged PSN moves over the READ responses that are
    /// in; READs whose responses are all in complete.  True on progress.
    fn reads_in<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St) -> bool {
        let mut progress = false;
        loop {
            let wq = st.wq_mut();
            let Some(r) = wq.reqs.front() else { break };
            if r.kind != Op::Read {
                break;
            }
            // (The responder's packets: fewer than ours when its path MTU
            // is larger.)
            let n = match r.rmtu {
                0 => r.npkts,
                m => (r.len.div_ceil(m as u64).max(1) as u32).min(r.npkts),
            };
            let mut i = psn_diff(wq.una, r.first).max(0) as u32;
            while i < n && r.got & (1u64 << i) != 0 {
                i += 1;
                progress = true;
            }
            wq.una = psn_add(r.first, i);
            if i < n {
                break;
            }
            // (its data still waiting is placed before it completes)
            if wq.rpend.read == Some((r.seq, r.loff)) && !self.place_read_pending(c, qp, st) {
                return true;
            }
            let wq = st.wq_mut();
            let Some(r) = wq.reqs.front() else { break };
            let (seq, wr_done, spare) = (r.seq, r.last, r.npkts - n);
            wq.reqs.pop_front();
            wq.next = wq.next.saturating_sub(1);
            if spare > 0 {
                self.renumber(st, spare);
            }
            if wr_done {
                st.sq_done(seq, 0);
                c.complete_sq(qp, st);
            }
        }
        progress
    }

    /// A READ just completed in `spare` PSNs fewer than we gave it (its
    /// responder's path MTU is larger than ours): the responder expects the
    /// next request at `una`, so every later request moves down by `spare`
    /// PSNs, and what of them went out already goes again — it was ahead of
    /// the responder's PSN, which refuses such packets unexecuted (a PSN
    /// sequence NAK at most).  rxe's requester ends in the same numbering,
    /// through that NAK and a retry.
    fn renumber<S: HostSt>(&self, st: &mut S, spare: u32) {
        for r in st.wq_mut().reqs.iter_mut() {
            r.first = psn_add(r.first, (1 << 24) - spare);
            r.got = 0;
            r.rmtu = 0;
        }
        st.wq_mut().psn = psn_add(st.wq_mut().psn, (1 << 24) - spare);
        let una = st.wq_mut().una;
        self.rewind(st, una);
    }

    /// The responder has seen everything before `psn`: the oldest
    /// unacknowledged PSN moves there, within a SEND or WRITE in front
    /// (a READ or atomic in front is done only by its response).
    fn advance_una<S: HostSt>(&self, st: &mut S, psn: u32) {
        let in_front = st
            .wq()
            .reqs
            .front()
            .is_none_or(|r| r.kind == Op::Send || r.kind == Op::Write);
        if in_front && psn_diff(psn, st.wq_mut().una) > 0 {
            st.wq_mut().una = psn;
        }
    }

    /// A loss: the congestion window halves.
    fn lost<S: HostSt>(&self, st: &mut S) {
        st.wq_mut().cwnd = (st.wq_mut().cwnd / 2).max(CWND_MIN);
    }

    /// After progress: a fresh timer, fresh retry counts.
    fn acked<S: HostSt>(&self, st: &mut S) {
        st.wq_mut().cwnd = (st.wq_mut().cwnd + 1).clamp(CWND_MIN, CWND_MAX);
        st.budget().refill();
        st.wq_mut().timer_at = if st.wq_mut().reqs.is_empty() {
            0
        } else {
            now_ns() + ack_timeout_ns(st.attr().timeout)
        };
    }

    // ----- receiving -----------------------------------------------------

    fn rx<H: Host>(&self, c: &H, m: &RxMeta, pkt: &[u8]) {
        let ip = roce::IpInfo {
            src: m.src,
            dst: m.dst,
            sport: m.sport,
            dport: roce::ROCE_PORT,
            flow: 0,
        };
        if !roce::icrc_ok(&ip, pkt) {
            return;
        }
        let Ok((h, payload)) = roce::decode(pkt) else {
            return;
        };
        if trace() {
            eprintln!(
                "{} rx op {:#x} dqpn {} psn {} len {}",
                now_ns() / 1000,
                h.bth.opcode,
                h.bth.dqpn,
                h.bth.psn,
                payload.len()
            );
        }
        if h.bth.pkey & 0x7fff != PKEY & 0x7fff {
            return;
        }
        if h.bth.dqpn == mcast::MCAST_QPN {
            // A copy for each QP attached to the group (rxe_rcv_mcast_pkt).
            for q in self.sock.group_members(&ip_gid(m.dst)) {
                if let Some(qp) = c.qp(q) {
                    self.rx_qp(c, &qp, m, &h, payload);
                }
            }
            return;
        }
        let Some(qp) = c.qp(h.bth.dqpn) else { return };
        self.rx_qp(c, &qp, m, &h, payload);
    }

    /// A packet for QP `qp`, by the QP's state and transport.
    fn rx_qp<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, m: &RxMeta, h: &Hdr, payload: &[u8]) {
        let info = roce::op_info(h.bth.opcode);
        let mut st = qp.lock();
        if qpstate::intake(st.state()) != Intake::Take {
            return;
        }
        // (Waiting data is placed first unless this is the next packet of
        // the same message.)
        let kind = if st.wq().pend.send {
            roce::Kind::Send
        } else {
            roce::Kind::Write
        };
        let next = info.kind == kind && !(info.first || info.only) && h.bth.psn == st.wq().epsn;
        if st.wq().pend.meta.is_some() && !next && !self.place_pending(c, qp, &mut st) {
            return;
        }
        if (qp.qpt() == IBV_QPT_RC || qp.qpt() == IBV_QPT_UC) && !from_peer(st.wq(), m) {
            return; // (as rxe's check_addr: not the QP's path)
        }
        match (qp.qpt(), info.transport) {
            (IBV_QPT_RC, roce::Transport::Rc) => match info.kind {
                roce::Kind::Ack | roce::Kind::AtomicAck | roce::Kind::ReadResp => {
                    if qpstate::takes_responses(st.state()) {
                        self.completer(c, qp, &mut st, h, payload)
                    }
                }
                _ => self.rc_responder(c, qp, &mut st, m, h, payload),
            },
            (IBV_QPT_UC, roce::Transport::Uc) => self.uc_responder(c, qp, &mut st, h, payload),
            (IBV_QPT_UD, roce::Transport::Ud) => self.ud_responder(c, qp, &mut st, m, h, payload),
            _ => {}
        }
    }

    /// ACKs, NAKs, READ responses and atomic ACKs.
    fn completer<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, h: &Hdr, payload: &[u8]) {
        let psn = h.bth.psn;
        if trace() {
            let w = st.wq();
            let f = w.reqs.front().map(|r| (r.first, r.npkts, r.kind));
            eprintln!(
                "  requester: una {} next {}/{} front {:?} cwnd {}",
                w.una, w.next, w.next_pkt, f, w.cwnd
            );
        }
        // Only PSNs of requests in flight.
        if psn_diff(psn, st.wq_mut().una) < 0 || psn_diff(psn, st.wq_mut().psn) >= 0 {
            return;
        }
        let kind = roce::op_info(h.bth.opcode).kind;
        match kind {
            roce::Kind::Ack => self.on_ack(c, qp, st, h),
            roce::Kind::AtomicAck => self.on_atomic_ack(c, qp, st, h),
            roce::Kind::ReadResp => self.on_read_resp(c, qp, st, h, payload),
            _ => {}
        }
    }

    /// An ACK, an RNR NAK or a NAK for `psn`.
    fn on_ack<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, h: &Hdr) {
        let psn = h.bth.psn;
        let Some(a) = h.aeth else { return };
        match a.kind() {
            roce::AethKind::Ack => {
                if self.ack_upto(c, qp, st, psn_add(psn, 1)) {
                    self.acked(st);
                }
                self.pump(c, qp, st);
            }
            roce::AethKind::RnrNak(timer) => {
                self.ack_upto(c, qp, st, psn);
                let rnr_retry = st.attr().rnr_retry;
                let delay = match st.budget().rnr_nak(rnr_retry, timer as u32) {
                    Ok(d) => d,
                    Err(status) => {
                        self.fail_front(c, qp, st, status);
                        return;
                    }
                };
                self.advance_una(st, psn);
                let una = st.wq_mut().una;
                self.rewind(st, una);
                st.wq_mut().rnr_until = now_ns() + delay;
                st.wq_mut().timer_at = 0;
            }
            roce::AethKind::Nak(code) => {
                let progress = self.ack_upto(c, qp, st, psn);
                if code == 0 {
                    // PSN sequence error: send again from `psn`.
                    if progress {
                        self.acked(st);
                    }
                    if st.wq_mut().loss_at != Some(psn) {
                        self.lost(st);
                        st.wq_mut().loss_at = Some(psn);
                    }
                    // (Not past a READ or atomic whose response
                    // did not come: the responder saw its request.)
                    self.advance_una(st, psn);
                    let una = st.wq_mut().una;
                    self.rewind(st, una);
                    self.pump(c, qp, st);
                    return;
                }
                self.fail_front(c, qp, st, completer::nak_status(code));
            }
            roce::AethKind::Reserved => {}
        }
    }

    /// An atomic ACK: the original value for the atomic at `psn`.
    fn on_atomic_ack<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, h: &Hdr) {
        let psn = h.bth.psn;
        let Some(orig) = h.atomic_ack else { return };
        self.ack_upto(c, qp, st, psn);
        let Some(r) = st.wq_mut().reqs.front() else { return };
        if r.first != psn || (r.kind != Op::CmpSwap && r.kind != Op::FetchAdd) {
            return;
        }
        // (The SGEs passed `check_local` for writing at post.)
        let placed = completer::place_atomic(c.mem(qp), &r.sges, orig);
        let seq = r.seq;
        if let Err(status) = placed {
            self.fail_seq(c, qp, st, seq, status);
            return;
        }
        st.wq_mut().reqs.pop_front();
        st.wq_mut().next = st.wq_mut().next.saturating_sub(1);
        st.sq_done(seq, 0);
        st.wq_mut().una = psn_add(psn, 1);
        c.complete_sq(qp, st);
        self.acked(st);
        self.pump(c, qp, st);
    }

    /// A READ response packet (`psn`): its data placed where it belongs.
    fn on_read_resp<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, h: &Hdr, payload: &[u8]) {
        let psn = h.bth.psn;
        // The READ (part) this PSN belongs to.
        let Some(idx) =
            st.wq_mut().reqs.iter().position(|r| {
                r.kind == Op::Read && psn_diff(psn, r.first) >= 0 && psn_diff(psn, r.first) < r.npkts as i32
            })
        else {
            return;
        };
        // The responder executes in order: the SENDs and WRITEs in
        // front of this READ are done.
        let first = st.wq_mut().reqs[idx].first;
        if self.ack_before(c, qp, st, first) {
            self.acked(st);
        }
        let Some(idx) = st
            .wq_mut()
            .reqs
            .iter()
            .position(|r| r.kind == Op::Read && r.first == first)
        else {
            return;
        };
        let pmtu = st.wq_mut().pmtu.max(256);
        let r = &st.wq_mut().reqs[idx];
        let i = psn_diff(psn, r.first) as u32;
        let info = roce::op_info(h.bth.opcode);
        // The packet must be the one this PSN stands for, cut at the
        // responder's path MTU (a READ asked again from packet i may get
        // FIRST/ONLY there).
        let ends = info.last || info.only;
        let Some((off, rmtu)) = completer::read_resp_place(r.len, pmtu, r.rmtu, i, payload.len(), ends) else {
            return;
        };
        if r.got & (1u64 << i) != 0 {
            return;
        }
        // A response ahead of one not yet here (reordered, or lost:
        // then the retransmission timer asks again) is placed too:
        // the data lands where it belongs, the READ completes once
        // every response is in.
        // (The SGEs passed `check_local` for writing at post; the
        // READ part lies at `loff` of the work request.)
        let (read, at) = ((r.seq, r.loff), r.loff + off);
        if !self.defer_read(c, qp, st, read, at, payload) {
            return;
        }
        st.wq_mut().reqs[idx].got |= 1u64 << i;
        st.wq_mut().reqs[idx].rmtu = rmtu;
        if self.reads_in(c, qp, st) {
            self.acked(st);
            self.pump(c, qp, st);
        }
    }

    /// An ACK / NAK from the responder side of `qp` to the peer.
    fn reply<S: HostSt>(&self, m: &RxMeta, st: &S, psn: u32, aeth: Aeth) {
        let h = Hdr {
            bth: Self::bth(op::RC_ACK, st.attr().dest_qp_num, psn),
            aeth: Some(aeth),
            ..Default::default()
        };
        self.tx(&m.dst, st.wq().sender.as_ref(), &m.src, &h, &[], tclass(st));
    }

    fn ack<S: HostSt>(&self, m: &RxMeta, st: &S, psn: u32) {
        self.reply(m, st, psn, Aeth::ack(st.wq().msn));
    }

    fn nak<S: HostSt>(&self, m: &RxMeta, st: &S, psn: u32, code: u8) {
        self.reply(m, st, psn, Aeth::nak(code, st.wq().msn));
    }

    /// An RNR NAK: no receive WQE for `psn` yet (our `min_rnr_timer`).
    fn rnr<S: HostSt>(&self, m: &RxMeta, st: &S, psn: u32) {
        let a = Aeth::rnr_nak(st.attr().min_rnr_timer, st.wq().msn);
        self.reply(m, st, psn, a);
    }

    /// A NAK that ends the connection (the error classes of
    /// `swrdma_rc::fault`): the requester hears the class's NAK code, the
    /// owner its async event, the responder QP goes to the error state.
    fn nak_fatal<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, m: &RxMeta, psn: u32, f: Fault) {
        self.nak(m, st, psn, f.nak_code());
        if let Some(ev) = f.async_event() {
            c.qp_event(qp, ev);
        }
        st.wq_mut().in_send = false;
        st.wq_mut().wr = None;
        c.to_err(qp, st);
    }

    /// The engine's view of `qp` for the checks of a request, with the key
    /// table held while `f` runs (a dereg waits for the copy).
    fn with_target<H: Host, R>(c: &H, qp: &H::Qp, st: &H::St, f: impl FnOnce(&Target) -> R) -> R {
        let qp_access = st.attr().qp_access_flags;
        c.with_keys(qp, |keys| {
            f(&Target {
                qpn: qp.qpn(),
                pd: qp.pd(),
                qp_access,
                keys,
            })
        })
    }

    fn rc_responder<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, m: &RxMeta, h: &Hdr, payload: &[u8]) {
        let psn = h.bth.psn;
        let d = psn_diff(psn, st.wq_mut().epsn);
        if d > 0 {
            // Out of order: one NAK per gap, the packet is dropped.
            if !st.wq_mut().nak_seq {
                st.wq_mut().nak_seq = true;
                let e = st.wq_mut().epsn;
                self.nak(m, st, e, NAK_PSN_SEQ);
            }
            return;
        }
        if d < 0 {
            self.rc_duplicate(c, qp, st, m, h);
            return;
        }
        st.wq_mut().nak_seq = false;
        let info = roce::op_info(h.bth.opcode);
        let done = match info.kind {
            roce::Kind::Send => self.rc_send(c, qp, st, m, h, payload),
            roce::Kind::Write => self.rc_write(c, qp, st, m, h, payload),
            roce::Kind::ReadReq => self.rc_read(c, qp, st, m, h),
            roce::Kind::CmpSwap | roce::Kind::FetchAdd => self.rc_atomic(c, qp, st, m, h),
            _ => Ok(()),
        };
        if let Err((at, f)) = done {
            self.nak_fatal(c, qp, st, m, at, f);
        }
    }

    /// A duplicate (a PSN before the expected one): executed already.  A
    /// READ is executed again from its PSN, an atomic answered from the
    /// saved result, anything else re-ACKed.
    fn rc_duplicate<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, m: &RxMeta, h: &Hdr) {
        let psn = h.bth.psn;
        match roce::op_info(h.bth.opcode).kind {
            roce::Kind::ReadReq => {
                // Only the rest of a READ we executed, as it was checked.
                let pmtu = st.wq_mut().pmtu.max(256) as u64;
                let part = h
                    .reth
                    .and_then(|r| st.wq_mut().reads.replay(psn, r.va, r.len as u64, pmtu));
                if let Some(p) = part {
                    let r = Reth {
                        va: p.va,
                        rkey: p.rkey,
                        len: p.len as u32,
                    };
                    let _ = self.read_resp(c, qp, st, m, psn, &r, true);
                }
            }
            roce::Kind::CmpSwap | roce::Kind::FetchAdd => {
                if let Some(v) = st.wq_mut().atomics.replay(psn) {
                    self.atomic_ack(m, st, psn, v);
                }
            }
            _ => {
                if h.bth.ackreq {
                    let p = psn_add(st.wq_mut().epsn, 0xff_ffff);
                    self.ack(m, st, p);
                }
            }
        }
    }

    /// A SEND packet in sequence.  Err: the PSN to NAK and the class.
    fn rc_send<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, m: &RxMeta, h: &Hdr, payload: &[u8]) -> Fatal {
        let psn = h.bth.psn;
        let info = roce::op_info(h.bth.opcode);
        // Opcode sequence: FIRST/ONLY only between messages.
        if st.wq_mut().in_send == (info.first || info.only) || st.wq_mut().wr.is_some() {
            return Err((psn, Fault::InvalidRequest));
        }
        if info.first || info.only {
            if st.cur().is_none() && !self.take_recv_wqe(c, qp, st) {
                self.rnr(m, st, psn);
                return Ok(());
            }
            st.wq_mut().in_send = true;
            st.wq_mut().recv_off = 0;
        }
        if !roce::payload_fits(&info, payload.len(), st.wq_mut().pmtu.max(256)) {
            return Err((psn, Fault::InvalidRequest)); // (rxe: class C)
        }
        if !(info.last || info.only || h.bth.ackreq) {
            self.defer_send(c, qp, st, m, psn, payload);
        } else {
            // (A SEND's placement cannot fail the QP: its errors wait in
            // `cur` for the completion.)
            self.place_pending(c, qp, st);
            place_send(c.mem(qp), st, payload);
        }
        st.wq_mut().epsn = psn_add(psn, 1);
        if !(info.last || info.only) {
            if h.bth.ackreq {
                self.ack(m, st, psn);
            }
            return Ok(());
        }
        st.wq_mut().in_send = false;
        st.wq_mut().msn = (st.wq_mut().msn + 1) & 0xff_ffff;
        let n = st.wq_mut().recv_off;
        let Some((wc, cq)) = self.recv_wc(c, qp, st, h, IBV_WC_RECV, n, 0) else {
            return Ok(());
        };
        if wc.status == 0 {
            self.ack(m, st, psn);
        }
        c.push_recv(&cq, wc, h.bth.se);
        // LOC_LEN_ERR, LOC_PROT_ERR, or an invalidation refused.
        match Fault::of_receive(wc.status) {
            Some(f) => Err((psn, f)),
            None => Ok(()),
        }
    }

    /// An RDMA WRITE packet in sequence.
    fn rc_write<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, m: &RxMeta, h: &Hdr, payload: &[u8]) -> Fatal {
        let psn = h.bth.psn;
        let info = roce::op_info(h.bth.opcode);
        if st.wq_mut().in_send || (st.wq_mut().wr.is_some() == (info.first || info.only)) {
            return Err((psn, Fault::InvalidRequest));
        }
        // rxe's order (swrdma_rc::responder): the QP enables WRITE, then
        // the receive of a WRITE with immediate (none: RNR), then length
        // and key; a fault after the receive was taken completes it.
        if info.first || info.only {
            Self::with_target(c, qp, st, |t| t.enabled(Op::Write)).map_err(|f| (psn, f))?;
        }
        if h.imm.is_some() && st.cur().is_none() && !self.take_recv_wqe(c, qp, st) {
            // WRITE with immediate needs a receive: RNR.
            if info.only {
                st.wq_mut().wr = None;
            }
            self.rnr(m, st, psn);
            return Ok(());
        }
        let done = self.rc_write_data(c, qp, st, m, h, payload);
        if let (Err((_, f)), Some(_)) = (done, h.imm) {
            if let Some(cur) = st.cur().as_mut() {
                cur.err = f.imm_receive_status();
                let total = st.wq_mut().wr.map_or(0, |w| w.3);
                self.complete_recv(c, qp, st, h, IBV_WC_RECV_RDMA_WITH_IMM, total, 0);
            }
        }
        done
    }

    /// An RDMA WRITE packet past the checks of its opcode and receive:
    /// its length, key and data.
    fn rc_write_data<H: Host>(
        &self,
        c: &H,
        qp: &Arc<H::Qp>,
        st: &mut H::St,
        m: &RxMeta,
        h: &Hdr,
        payload: &[u8],
    ) -> Fatal {
        let psn = h.bth.psn;
        let info = roce::op_info(h.bth.opcode);
        if !roce::payload_fits(&info, payload.len(), st.wq_mut().pmtu.max(256)) {
            return Err((psn, Fault::InvalidRequest)); // (rxe: class C)
        }
        if info.first || info.only {
            let Some(r) = h.reth else { return Ok(()) };
            Self::with_target(c, qp, st, |t| t.check(Op::Write, r.rkey, r.va, r.len as u64)).map_err(|f| (psn, f))?;
            st.wq_mut().wr = Some((r.va, r.rkey, r.len as u64, r.len as u64));
        }
        let Some((va, rkey, left, total)) = st.wq_mut().wr else {
            return Ok(());
        };
        let n = payload.len() as u64;
        if n > left || ((info.last || info.only) && n != left) {
            return Err((psn, Fault::InvalidRequest));
        }
        if !(info.last || info.only || h.bth.ackreq) {
            self.defer_write(c, qp, st, m, psn, rkey, va, payload)?;
        } else {
            if !self.place_pending(c, qp, st) {
                return Ok(()); // (NAKed: the QP is in the error state)
            }
            Self::with_target(c, qp, st, |t| t.write(c.mem(qp), rkey, va, payload)).map_err(|f| (psn, f))?;
        }
        st.wq_mut().wr = Some((va + n, rkey, left - n, total));
        st.wq_mut().epsn = psn_add(psn, 1);
        if info.last || info.only {
            st.wq_mut().wr = None;
            st.wq_mut().msn = (st.wq_mut().msn + 1) & 0xff_ffff;
            // (ACKed before the receive completes, as SENDs are.)
            self.ack(m, st, psn);
            if h.imm.is_some() {
                self.complete_recv(c, qp, st, h, IBV_WC_RECV_RDMA_WITH_IMM, total, 0);
            }
        } else if h.bth.ackreq {
            self.ack(m, st, psn);
        }
        Ok(())
    }

    /// A FIRST or MIDDLE packet of an RDMA WRITE that asks for no ACK:
    /// checked now (its errors as if placed), its data kept with the
    /// packets before it to be placed in one copy (through the agent, one
    /// `process_vm_writev` for the run instead of one per packet) by
    /// [`Wire::place_pending`]: before this QP's next packet that is not
    /// the WRITE's next, before its last packet or any ACK is sent, and at
    /// the end of the receive batch ([`Wire::place_deferred`]).  Nothing of
    /// the QP is answered or completed in between, so no one can tell.
    #[allow(clippy::too_many_arguments)]
    fn defer_write<H: Host>(
        &self,
        c: &H,
        qp: &H::Qp,
        st: &mut H::St,
        m: &RxMeta,
        psn: u32,
        rkey: u32,
        va: u64,
        payload: &[u8],
    ) -> Fatal {
        Self::with_target(c, qp, st, |t| t.check(Op::Write, rkey, va, payload.len() as u64)).map_err(|f| (psn, f))?;
        let p = &mut st.wq_mut().pend;
        let follows = p.meta.is_some() && !p.send && p.rkey == rkey && p.va.wrapping_add(p.bytes.len() as u64) == va;
        if p.meta.is_some() && !follows && !self.place_pending(c, qp, st) {
            return Ok(());
        }
        Self::pend(qp, st, false, m, psn, rkey, va, payload);
        Ok(())
    }

    /// A FIRST or MIDDLE packet of a SEND that asks for no ACK, its receive
    /// taken: its data kept to be placed in one copy with the packets after
    /// it, as [`Wire::defer_write`]'s (what its placement finds, a list
    /// too short or memory gone, waits in the receive for the completion
    /// either way).
    fn defer_send<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, m: &RxMeta, psn: u32, payload: &[u8]) {
        let off = st.wq().recv_off;
        let p = &st.wq().pend;
        let follows = p.meta.is_some() && p.send && p.va.wrapping_add(p.bytes.len() as u64) == off;
        if p.meta.is_some() && !follows {
            self.place_pending(c, qp, st);
        }
        Self::pend(qp, st, true, m, psn, 0, off, payload);
        st.wq_mut().recv_off += payload.len() as u64;
    }

    /// Adds `payload` to the data waiting in `st.pend` (begun with this
    /// packet when none waits).
    #[allow(clippy::too_many_arguments)]
    fn pend<S: HostSt>(
        qp: &impl HostQp,
        st: &mut S,
        send: bool,
        m: &RxMeta,
        psn: u32,
        rkey: u32,
        va: u64,
        payload: &[u8],
    ) {
        let p = &mut st.wq_mut().pend;
        if p.meta.is_none() {
            if p.bytes.capacity() == 0 {
                p.bytes = SPARE.with(|sp| sp.take());
            }
            p.bytes.clear();
            (p.send, p.va, p.rkey, p.first, p.meta) = (send, va, rkey, psn, Some(*m));
            DEFERRED.with(|d| d.borrow_mut().push(qp.qpn()));
        }
        p.bytes.extend_from_slice(payload);
    }

    /// Places the data waiting in `st.pend`: a WRITE's checked again, with
    /// the key table held as for any copy; a SEND's into the receive in
    /// `cur`.  False: it could not be (the QP NAKed the WRITE's first
    /// waiting packet and is in the error state, or had left the states
    /// that take requests).
    fn place_pending<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St) -> bool {
        let Some(m) = st.wq_mut().pend.meta.take() else {
            return true;
        };
        if qpstate::intake(st.state()) != Intake::Take {
            // (It left the states that take requests meanwhile: as one
            // packet that came after it did, the data goes nowhere.)
            st.wq_mut().pend.bytes = Vec::new();
            return false;
        }
        let p = &mut st.wq_mut().pend;
        let (send, va, rkey, first, bytes) = (p.send, p.va, p.rkey, p.first, std::mem::take(&mut p.bytes));
        let done = if send {
            if let Some(cur) = st.cur().as_mut() {
                cur.place(c.mem(qp), va, &bytes);
            }
            Ok(())
        } else {
            Self::with_target(c, qp, st, |t| t.write(c.mem(qp), rkey, va, &bytes))
        };
        // (The buffer goes back to the thread, not the QP: a QP keeps no
        // memory for data it no longer has.)
        let mut bytes = bytes;
        bytes.clear();
        SPARE.with(|sp| sp.set(bytes));
        match done {
            Ok(()) => true,
            Err(f) => {
                self.nak_fatal(c, qp, st, &m, first, f);
                false
            }
        }
    }

    /// The end of a receive batch: every QP's WRITE, SEND or READ response
    /// data still waiting is placed.
    fn place_deferred<H: Host>(&self, c: &H) {
        while let Some(q) = DEFERRED.with(|d| d.borrow_mut().pop()) {
            if let Some(qp) = c.qp(q) {
                let mut st = qp.lock();
                self.place_pending(c, &qp, &mut st);
                self.place_read_pending(c, &qp, &mut st);
            }
        }
    }

    /// A READ response's data (for byte `at` of the work request of READ
    /// part `read`: its sequence number and `loff`), kept with the
    /// responses before it to be placed in one copy (through the agent,
    /// one `process_vm_writev` for the run instead of one per packet) by
    /// [`Wire::place_read_pending`]: before the READ completes, before a
    /// response that does not follow it, and at the end of the receive
    /// batch.  The READ's buffer is the requester's to look at only once
    /// it completed, so no one can tell.  False: data waiting before it
    /// could not be placed (its READ failed, the QP is in the error state).
    fn defer_read<H: Host>(
        &self,
        c: &H,
        qp: &H::Qp,
        st: &mut H::St,
        read: (u64, u64),
        at: u64,
        payload: &[u8],
    ) -> bool {
        let p = &st.wq().rpend;
        let follows = p.read == Some(read) && p.at + p.bytes.len() as u64 == at;
        if p.read.is_some() && !follows && !self.place_read_pending(c, qp, st) {
            return false;
        }
        let p = &mut st.wq_mut().rpend;
        if p.read.is_none() {
            if p.bytes.capacity() == 0 {
                p.bytes = SPARE.with(|sp| sp.take());
            }
            p.bytes.clear();
            (p.read, p.at) = (Some(read), at);
            DEFERRED.with(|d| d.borrow_mut().push(qp.qpn()));
        }
        p.bytes.extend_from_slice(payload);
        true
    }

    /// Places the READ response data waiting in `st.rpend` into its READ's
    /// buffers (the local SGEs, checked at post).  A READ no longer there
    /// (flushed meanwhile) takes nothing.  False: the copy failed: the READ
    /// completes with its status and the QP goes to the error state.
    fn place_read_pending<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St) -> bool {
        let Some((seq, loff)) = st.wq_mut().rpend.read.take() else {
            return true;
        };
        let mut bytes = std::mem::take(&mut st.wq_mut().rpend.bytes);
        let at = st.wq().rpend.at;
        let placed = match st
            .wq()
            .reqs
            .iter()
            .find(|r| r.kind == Op::Read && r.seq == seq && r.loff == loff)
        {
            Some(r) => completer::place_read(c.mem(qp), &r.sges, r.loff + r.len, at, &bytes),
            None => Ok(()),
        };
        // (the buffer goes back to the thread, as `place_pending`'s)
        bytes.clear();
        SPARE.with(|sp| sp.set(bytes));
        match placed {
            Ok(()) => true,
            Err(status) => {
                self.fail_seq(c, qp, st, seq, status);
                false
            }
        }
    }

    fn rc_read<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, m: &RxMeta, h: &Hdr) -> Fatal {
        let psn = h.bth.psn;
        if st.wq_mut().in_send || st.wq_mut().wr.is_some() {
            return Err((psn, Fault::InvalidRequest));
        }
        let Some(r) = h.reth else { return Ok(()) };
        self.read_resp(c, qp, st, m, psn, &r, false)
    }

    fn rc_atomic<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, m: &RxMeta, h: &Hdr) -> Fatal {
        let psn = h.bth.psn;
        if st.wq_mut().in_send || st.wq_mut().wr.is_some() {
            return Err((psn, Fault::InvalidRequest));
        }
        let Some(a) = h.atomic else { return Ok(()) };
        let (op, o) = if roce::op_info(h.bth.opcode).kind == roce::Kind::CmpSwap {
            (Op::CmpSwap, Atomic::Cas(a.cmp, a.swap_add))
        } else {
            (Op::FetchAdd, Atomic::Add(a.swap_add))
        };
        let v = Self::with_target(c, qp, st, |t| t.atomic(c.mem(qp), op, a.rkey, a.va, o)).map_err(|f| (psn, f))?;
        // (As many as the requester may have in flight: our
        // `max_dest_rd_atomic`, which bounds its `max_rd_atomic`.)
        let keep = st.attr().max_dest_rd_atomic;
        st.wq_mut().atomics.save(psn, v, keep);
        st.wq_mut().epsn = psn_add(psn, 1);
        st.wq_mut().msn = (st.wq_mut().msn + 1) & 0xff_ffff;
        self.atomic_ack(m, st, psn, v);
        Ok(())
    }

    fn atomic_ack<S: HostSt>(&self, m: &RxMeta, st: &S, psn: u32, v: u64) {
        let h = Hdr {
            bth: Self::bth(op::RC_ATOMIC_ACK, st.attr().dest_qp_num, psn),
            aeth: Some(Aeth::ack(st.wq().msn)),
            atomic_ack: Some(v),
            ..Default::default()
        };
        self.tx(&m.dst, st.wq().sender.as_ref(), &m.src, &h, &[], tclass(st));
    }

    /// Answers a READ request (a duplicate too: the rest of a READ we
    /// executed, from its PSN, checked again; a duplicate that fails is
    /// dropped, not NAKed).
    #[allow(clippy::too_many_arguments)]
    fn read_resp<H: Host>(
        &self,
        c: &H,
        qp: &H::Qp,
        st: &mut H::St,
        m: &RxMeta,
        psn: u32,
        r: &Reth,
        dup: bool,
    ) -> Fatal {
        let len = r.len as u64;
        let quiet = |e: (u32, Fault)| if dup { Ok(()) } else { Err(e) };
        if let Err(f) = Self::with_target(c, qp, st, |t| t.check(Op::Read, r.rkey, r.va, len)) {
            return quiet((psn, f));
        }
        let pmtu = st.wq_mut().pmtu.max(256) as u64;
        let n = len.div_ceil(pmtu).max(1) as u32;
        if !dup {
            st.wq_mut().epsn = psn_add(psn, n);
            st.wq_mut().msn = (st.wq_mut().msn + 1) & 0xff_ffff;
            let res = ReadRes {
                psn,
                npkts: n,
                va: r.va,
                rkey: r.rkey,
                len,
            };
            let keep = st.attr().max_dest_rd_atomic;
            st.wq_mut().reads.save(res, keep);
        }
        // (Read [`AHEAD_PKTS`] packets at a time in one go; when that fails,
        // each packet of them reads its own, which finds the one that fails.)
        let mut stage = STAGE.with(|s| s.take());
        let mut ahead = None;
        let mut b = self.batch();
        for i in 0..n {
            let off = i as u64 * pmtu;
            let plen = (len - off.min(len)).min(pmtu) as usize;
            if i % AHEAD_PKTS == 0 {
                let end = ((i + AHEAD_PKTS) as u64 * pmtu).min(len);
                stage.resize((end - off.min(end)) as usize, 0);
                ahead = (n - i > 1
                    && Self::with_target(c, qp, st, |t| t.read(c.mem(qp), r.rkey, r.va + off, &mut stage)).is_ok())
                .then_some(off);
            }
            self.room(&mut b, &m.dst, st.wq_mut().sender.as_ref());
            if plen > 0 {
                let buf = &mut b.slot_mut()[PAY..PAY + plen];
                let got = if let Some(at) = ahead {
                    let from = (off - at) as usize;
                    buf.copy_from_slice(&stage[from..from + plen]);
                    Ok(())
                } else {
                    Self::with_target(c, qp, st, |t| t.read(c.mem(qp), r.rkey, r.va + off, buf))
                };
                if let Err(f) = got {
                    STAGE.with(|s| s.replace(stage));
                    self.send_out(b);
                    return quiet((psn_add(psn, i), f));
                }
            }
            let opcode = match (i == 0, i + 1 == n) {
                (true, true) => op::RC_READ_RESPONSE_ONLY,
                (true, false) => op::RC_READ_RESPONSE_FIRST,
                (false, false) => op::RC_READ_RESPONSE_MIDDLE,
                (false, true) => op::RC_READ_RESPONSE_LAST,
            };
            let mut h = Hdr {
                bth: Self::bth(opcode, st.attr().dest_qp_num, psn_add(psn, i)),
                ..Default::default()
            };
            if opcode != op::RC_READ_RESPONSE_MIDDLE {
                h.aeth = Some(Aeth::ack(st.wq_mut().msn));
            }
            let via = st.wq().sender.as_ref();
            self.tx_slot(&mut b, &m.dst, via, &m.src, &h, plen, tclass(st));
        }
        self.send_out(b);
        STAGE.with(|s| s.replace(stage));
        Ok(())
    }

    /// Takes the next receive WQE (the QP's or its SRQ's) into `st.cur`.
    fn take_recv_wqe<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St) -> bool {
        let Some(cur) = c.accept_recv(qp, st) else {
            return false;
        };
        *st.cur() = Some(cur);
        true
    }

    /// Completes the receive in `st.cur`: its status (LOC_LEN_ERR when
    /// the data did not fit, REM_INV_REQ_ERR for a bad invalidation).
    #[allow(clippy::too_many_arguments)]
    fn complete_recv<H: Host>(
        &self,
        c: &H,
        qp: &H::Qp,
        st: &mut H::St,
        h: &Hdr,
        opcode: u32,
        len: u64,
        src_qp: u32,
    ) -> u32 {
        let Some((wc, cq)) = self.recv_wc(c, qp, st, h, opcode, len, src_qp) else {
            return 0;
        };
        c.push_recv(&cq, wc, h.bth.se);
        wc.status
    }

    /// The completion of the receive in `st.cur` (taken), and its CQ: the
    /// caller answers the peer first (an ACK must be on its way before the
    /// application can see the completion and, say, exit).
    #[allow(clippy::too_many_arguments)]
    fn recv_wc<H: Host>(
        &self,
        c: &H,
        qp: &H::Qp,
        st: &mut H::St,
        h: &Hdr,
        opcode: u32,
        len: u64,
        src_qp: u32,
    ) -> Option<(ibv_wc, <H::St as HostSt>::RecvCq)> {
        let cur = st.cur().take()?;
        let done = swrdma_rc::recv::Completion {
            qpn: qp.qpn(),
            src_qp: if src_qp != 0 { src_qp } else { st.attr().dest_qp_num },
            opcode,
            len,
            imm: h.imm.map(|i| i.to_be()),
            inv: h.ieth,
        };
        Some(c.finish_recv(cur, &done))
    }

    fn uc_responder<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, h: &Hdr, payload: &[u8]) {
        let psn = h.bth.psn;
        let info = roce::op_info(h.bth.opcode);
        let starts = info.first || info.only;
        if psn != st.wq_mut().epsn || st.wq_mut().uc_drop {
            // A packet was lost: the message in progress is dropped (its
            // receive WQE is used again by the next one); a new message
            // starts over.
            if !starts {
                st.wq_mut().uc_drop = true;
                st.wq_mut().epsn = psn_add(psn, 1);
                return;
            }
            st.wq_mut().uc_drop = false;
            st.wq_mut().in_send = false;
            st.wq_mut().wr = None;
            st.wq_mut().recv_off = 0;
        }
        st.wq_mut().epsn = psn_add(psn, 1);
        if !roce::payload_fits(&info, payload.len(), st.wq_mut().pmtu.max(256)) {
            // Not the length its place allows: the message is dropped
            // (rxe: class D1; its receive WQE serves the next message).
            st.wq_mut().uc_drop = !(info.last || info.only);
            st.wq_mut().in_send = false;
            st.wq_mut().wr = None;
            return;
        }
        match info.kind {
            roce::Kind::Send => {
                if starts {
                    if st.wq_mut().in_send || st.wq_mut().wr.is_some() {
                        st.wq_mut().in_send = false;
                        st.wq_mut().wr = None;
                    }
                    if st.cur().is_none() && !self.take_recv_wqe(c, qp, st) {
                        st.wq_mut().uc_drop = !info.only;
                        return; // (no receive: dropped)
                    }
                    st.wq_mut().in_send = true;
                    st.wq_mut().recv_off = 0;
                } else if !st.wq_mut().in_send {
                    st.wq_mut().uc_drop = true;
                    return;
                }
                place_send(c.mem(qp), st, payload);
                if info.last || info.only {
                    st.wq_mut().in_send = false;
                    let n = st.wq_mut().recv_off;
                    self.complete_recv(c, qp, st, h, IBV_WC_RECV, n, 0);
                }
            }
            roce::Kind::Write => {
                if starts {
                    let Some(r) = h.reth else { return };
                    let ok = Self::with_target(c, qp, st, |t| t.check(Op::Write, r.rkey, r.va, r.len as u64)).is_ok();
                    if !ok {
                        st.wq_mut().uc_drop = !info.only;
                        return;
                    }
                    st.wq_mut().in_send = false;
                    st.wq_mut().wr = Some((r.va, r.rkey, r.len as u64, r.len as u64));
                }
                let Some((va, rkey, left, total)) = st.wq_mut().wr else {
                    st.wq_mut().uc_drop = true;
                    return;
                };
                let n = payload.len() as u64;
                if n > left
                    || ((info.last || info.only) && n != left)
                    || Self::with_target(c, qp, st, |t| t.write(c.mem(qp), rkey, va, payload)).is_err()
                {
                    st.wq_mut().wr = None;
                    st.wq_mut().uc_drop = !(info.last || info.only);
                    return;
                }
                st.wq_mut().wr = Some((va + n, rkey, left - n, total));
                if info.last || info.only {
                    st.wq_mut().wr = None;
                    if h.imm.is_some() && (st.cur().is_some() || self.take_recv_wqe(c, qp, st)) {
                        self.complete_recv(c, qp, st, h, IBV_WC_RECV_RDMA_WITH_IMM, total, 0);
                    }
                }
            }
            _ => {}
        }
    }

    /// A UD datagram (`udp_len`: its whole UDP payload, for the GRH).
    #[allow(clippy::too_many_arguments)]
    fn ud_responder<H: Host>(&self, c: &H, qp: &Arc<H::Qp>, st: &mut H::St, m: &RxMeta, h: &Hdr, payload: &[u8]) {
        let Some(d) = h.deth else { return };
        if d.qkey != st.attr().qkey {
            return; // (a Q_Key violation: dropped)
        }
        if payload.len() > self.mtu as usize {
            return; // (longer than the port's MTU: dropped, as rxe)
        }
        if st.cur().is_none() && !self.take_recv_wqe(c, qp, st) {
            return; // (no receive: dropped)
        }
        let g = swrdma_rc::recv::grh(
            GidKind::RoceV2,
            &ip_gid(m.src),
            &ip_gid(m.dst),
            m.tclass,
            m.hop,
            payload.len(),
            h.imm.is_some(),
        );
        if let Some(cur) = st.cur().as_mut() {
            cur.place_grh(c.mem(qp), &g);
            cur.place(c.mem(qp), 0, payload);
        }
        self.complete_recv(c, qp, st, h, IBV_WC_RECV, payload.len() as u64, d.sqpn);
    }

    // ----- QP state ------------------------------------------------------

    /// `modify_qp` changed the QP (checked already): its path, PSNs, MTU.
    pub fn modified<H: Host>(&self, c: &H, qp: &H::Qp, st: &mut H::St, new: u32, mask: u32) {
        if new == IBV_QPS_RESET || new == IBV_QPS_ERR {
            let keep = std::mem::take(st.wq_mut());
            if new == IBV_QPS_ERR {
                // (The path stays for a later RESET -> ... -> RTS, and the
                // sockets while the peer may still send.)
                st.wq_mut().src = keep.src;
                st.wq_mut().dst = keep.dst;
                st.wq_mut().pmtu = keep.pmtu;
                st.wq_mut().sender = keep.sender;
                st.wq_mut().flow = keep.flow;
            }
            return;
        }
        if mask & IBV_QP_RQ_PSN != 0 {
            st.wq_mut().epsn = st.attr().rq_psn & 0xff_ffff;
        }
        if mask & IBV_QP_SQ_PSN != 0 {
            st.wq_mut().psn = st.attr().sq_psn & 0xff_ffff;
            st.wq_mut().una = st.wq_mut().psn;
        }
        if mask & IBV_QP_PATH_MTU != 0 {
            st.wq_mut().pmtu = pmtu_bytes(st.attr().path_mtu).min(self.mtu.max(256));
        }
        if st.wq_mut().pmtu == 0 {
            st.wq_mut().pmtu = self.mtu;
        }
        if mask & IBV_QP_AV != 0 && (qp.qpt() == IBV_QPT_RC || qp.qpt() == IBV_QPT_UC) {
            if let Some((s, d)) = ud_path(self, c, &st.attr().ah_attr) {
                st.wq_mut().src = Some(s);
                st.wq_mut().dst = Some(d);
            }
        }
        if new == IBV_QPS_RTR && (qp.qpt() == IBV_QPT_RC || qp.qpt() == IBV_QPT_UC) {
            self.steer(qp, st);
        }
    }

    /// A connected QP going to RTR gets its own source port ([`src_port`]
    /// of its QPN: a [`Sender`]) and the flow socket for its peer's packets
    /// (the peer's port from the peer's QPN, as rxe and ours derive it), so
    /// that each side's kernel steers the other's packets to the QP's
    /// process without forwarding (`wired/src/wire/sock.rs`).  Best effort: without
    /// them the packets leave from port 4791 and are forwarded as before.
    fn steer<Q: HostQp>(&self, qp: &Q, st: &mut Q::St) {
        let (Some(s), Some(d)) = (st.wq_mut().src, st.wq_mut().dst) else {
            return;
        };
        if st.wq_mut().sender.as_ref().is_none_or(|x| !x.is_on(&s)) {
            st.wq_mut().sender = self.sock.sender(s, src_port(qp.qpn()));
        }
        st.wq_mut().flow = None;
        st.wq_mut().flow = self.sock.pin_flow(s, d, src_port(st.attr().dest_qp_num));
    }
}

/// An RC requester may send packet `pkt` of request `idx` now: within the
/// congestion window (a READ takes its responses' PSNs), and at most
/// `max_rd_atomic` READs and atomics in flight.
fn in_window<S: HostSt>(st: &S, idx: usize, pkt: u32) -> bool {
    let r = &st.wq().reqs[idx];
    let psn = psn_add(r.first, pkt);
    let n = if r.kind == Op::Read { r.npkts - pkt } else { 1 };
    let ahead = psn_diff(psn, st.wq().una);
    if ahead > 0 && ahead + n as i32 > st.wq().cwnd.max(CWND_MIN) as i32 {
        return false;
    }
    if matches!(r.kind, Op::Read | Op::CmpSwap | Op::FetchAdd) {
        let limit = (st.attr().max_rd_atomic as usize).max(1);
        let before = st
            .wq()
            .reqs
            .iter()
            .take(idx)
            .filter(|r| matches!(r.kind, Op::Read | Op::CmpSwap | Op::FetchAdd));
        if before.count() >= limit {
            return false;
        }
    }
    true
}

/// A connected (RC, UC) QP takes packets only along its path: from the
/// peer's address of its address vector to our address of it, as the
/// kernel's rxe (`check_addr`): any other host could otherwise act for the
/// peer (NAK, READ, WRITE).  The UDP source port is not looked at (it is
/// the sender's flow entropy, rxe does not either).
fn from_peer(w: &WQp, m: &RxMeta) -> bool {
    w.src == Some(m.dst) && w.dst == Some(m.src)
}

/// Where request `idx` goes: (our address, the peer's).
fn path_of<S: HostSt>(st: &S, idx: usize) -> Option<(IpAddr, IpAddr, u8)> {
    match (&st.wq().reqs[idx].ud, st.wq().src, st.wq().dst) {
        (Some((s, d, _, _, tc)), _, _) => Some((*s, *d, *tc)),
        (None, Some(s), Some(d)) => Some((s, d, tclass(st))),
        _ => None,
    }
}

/// The IP traffic class of a connected QP's packets, requests and
/// responses alike: its address vector's (rxe takes it from the QP's AV).
fn tclass<S: HostSt>(st: &S) -> u8 {
    if st.attr().ah_attr.is_global != 0 {
        st.attr().ah_attr.grh.traffic_class
    } else {
        0
    }
}

/// At most this many packets of a SEND or WRITE are read from the
/// requester's memory in one go ([`read_ahead`]).
const AHEAD_PKTS: u32 = 64;

thread_local! {
    /// The buffer [`read_ahead`] reads into (kept between sends).
    static STAGE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// The QPs whose WRITE, SEND or READ response data waits to be placed
    /// ([`Wire::defer_write`], [`Wire::defer_send`], [`Wire::defer_read`]).
    static DEFERRED: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The buffer of the data placed last ([`Wire::place_pending`]), for
    /// the next QP's data to wait in.
    static SPARE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// What [`read_ahead`] holds in its buffer: request `seq`'s packets
/// `first..first + n` (n = 0: reading them in one go failed; each packet
/// reads its own, which finds the one that fails).
type Staged = Option<(u64, u32, u32)>;

/// The payload of packet `pkt` of request `idx` (a SEND or WRITE of more
/// than one packet, not inline) read ahead: the first time a pump comes to
/// a packet not in `stage`, the packets from it that go now (the window's,
/// at most [`AHEAD_PKTS`]) are read from the requester's memory in one go
/// (through the agent: one `process_vm_readv` instead of one per packet).
/// None: the packet reads its own payload (a single packet, inline data,
/// or reading ahead failed).  Read within the same pump as its packets are
/// sent, as the packet's own read would be.
#[allow(clippy::too_many_arguments)]
fn read_ahead<'a, S: HostSt>(
    mem: &dyn Memory,
    st: &S,
    rc: bool,
    idx: usize,
    pkt: u32,
    pmtu: u32,
    stage: &'a mut Vec<u8>,
    staged: &mut Staged,
) -> Option<&'a [u8]> {
    let r = &st.wq().reqs[idx];
    if !matches!(r.kind, Op::Send | Op::Write) || r.data.is_some() || r.npkts < 2 {
        return None;
    }
    let m = pmtu as u64;
    match *staged {
        Some((seq, first, n)) if seq == r.seq && pkt >= first && pkt < first + n => {}
        Some((seq, _, 0)) if seq == r.seq => return None,
        _ => {
            let mut n = 0;
            while pkt + n < r.npkts && n < AHEAD_PKTS && (!rc || in_window(st, idx, pkt + n)) {
                n += 1;
            }
            if n < 2 {
                return None;
            }
            let off = pkt as u64 * m;
            let end = ((pkt + n) as u64 * m).min(r.len);
            stage.resize((end - off.min(end)) as usize, 0);
            let ok = swrdma_rc::memory::gather(mem, &r.sges, off, stage);
            *staged = Some((r.seq, pkt, if ok { n } else { 0 }));
            if !ok {
                return None;
            }
        }
    }
    let (_, first, _) = (*staged)?;
    let from = ((pkt - first) as u64 * m) as usize;
    let plen = (r.len - (pkt as u64 * m).min(r.len)).min(m) as usize;
    stage.get(from..from + plen)
}

/// Packet `pkt` of request `idx`: its headers, its payload (in `buf`:
/// `pre` when [`read_ahead`] read it, else gathered from the request's
/// memory or inline copy) and whether it is the request's last.
/// Err(seq): the data could not be read.
#[allow(clippy::too_many_arguments)]
fn request_packet<Q: HostQp>(
    mem: &dyn Memory,
    qp: &Q,
    st: &Q::St,
    idx: usize,
    pkt: u32,
    pmtu: u32,
    pre: Option<&[u8]>,
    buf: &mut [u8],
) -> Result<(Hdr, usize, bool), u64> {
    let r = &st.wq().reqs[idx];
    let mut h = Hdr {
        bth: Wire::bth(0, st.attr().dest_qp_num, psn_add(r.first, pkt)),
        ..Default::default()
    };
    let mut plen = 0;
    let last = match r.kind {
        Op::Send | Op::Write => {
            plen = data_packet(Some(mem), (qp.qpt(), qp.qpn()), r, pkt, pmtu, pre, &mut h, buf)?;
            pkt + 1 >= r.npkts
        }
        _ => {
            asking_header(r, pkt, pmtu, &mut h);
            true
        }
    };
    if qp.qpt() == IBV_QPT_UD {
        h.bth.dqpn = r.ud.map_or(0, |u| u.2);
    }
    Ok((h, plen, last))
}

/// The opcode and extension header of a READ request asked from its
/// packet `pkt` on, or of an atomic request (`r.kind` one of those).
fn asking_header(r: &Req, pkt: u32, pmtu: u32, h: &mut Hdr) {
    if r.kind == Op::Read {
        // (Asked again from packet `pkt`: where the responder's packet
        // `pkt` began.)
        let m = if r.rmtu != 0 { r.rmtu } else { pmtu };
        let off = pkt as u64 * m as u64;
        h.bth.opcode = op::RC_READ_REQUEST;
        h.reth = Some(Reth {
            va: r.raddr + off,
            rkey: r.rkey,
            len: (r.len - off.min(r.len)) as u32,
        });
    } else {
        let cas = r.kind == Op::CmpSwap;
        h.bth.opcode = if cas { op::RC_CMP_SWAP } else { op::RC_FETCH_ADD };
        h.atomic = Some(AtomicEth {
            va: r.raddr,
            rkey: r.rkey,
            swap_add: if cas { r.swap } else { r.cmp },
            cmp: if cas { r.cmp } else { 0 },
        });
    }
}

/// A SEND or WRITE packet: its opcode and extension headers in `h`, its
/// payload in `buf` (`pre`: read already); the payload's length.
/// Err(seq): not readable.
#[allow(clippy::too_many_arguments)]
fn data_packet(
    mem: Option<&dyn Memory>,
    (qpt, qpn): (u32, u32),
    r: &Req,
    pkt: u32,
    pmtu: u32,
    pre: Option<&[u8]>,
    h: &mut Hdr,
    buf: &mut [u8],
) -> Result<usize, u64> {
    let off = pkt as u64 * pmtu as u64;
    let plen = (r.len - off.min(r.len)).min(pmtu as u64) as usize;
    let (first, last) = (pkt == 0, pkt + 1 >= r.npkts);
    let ok = match (&r.data, pre) {
        (_, Some(p)) if p.len() == plen => {
            buf[..plen].copy_from_slice(p);
            true
        }
        (Some(d), _) => {
            buf[..plen].copy_from_slice(&d[off as usize..off as usize + plen]);
            true
        }
        // (The SGEs passed `check_local` at post; the copy is fault-safe.)
        (None, _) => mem.is_some_and(|mem| swrdma_rc::memory::gather(mem, &r.sges, off, &mut buf[..plen])),
    };
    if !ok {
        return Err(r.seq);
    }
    let rc = qpt == IBV_QPT_RC;
    let base = match qpt {
        IBV_QPT_RC => 0x00,
        IBV_QPT_UC => 0x20,
        _ => 0x60,
    };
    let imm = r.imm.is_some();
    h.bth.opcode = if qpt == IBV_QPT_UD {
        h.deth = Some(Deth {
            qkey: r.ud.map_or(0, |u| u.3),
            sqpn: qpn,
        });
        if imm {
            op::UD_SEND_ONLY_IMM
        } else {
            op::UD_SEND_ONLY
        }
    } else if r.kind == Op::Send {
        let inv = r.inv.is_some() && rc;
        match (first, last) {
            (true, true) if inv => op::RC_SEND_ONLY_INV,
            (false, true) if inv => op::RC_SEND_LAST_INV,
            (true, true) if imm => base | op::RC_SEND_ONLY_IMM,
            (true, true) => base | op::RC_SEND_ONLY,
            (true, false) => base | op::RC_SEND_FIRST,
            (false, false) => base | op::RC_SEND_MIDDLE,
            (false, true) if imm => base | op::RC_SEND_LAST_IMM,
            (false, true) => base | op::RC_SEND_LAST,
        }
    } else {
        if first {
            h.reth = Some(Reth {
                va: r.raddr,
                rkey: r.rkey,
                len: r.len as u32,
            });
        }
        match (first, last) {
            (true, true) if imm => base | op::RC_WRITE_ONLY_IMM,
            (true, true) => base | op::RC_WRITE_ONLY,
            (true, false) => base | op::RC_WRITE_FIRST,
            (false, false) => base | op::RC_WRITE_MIDDLE,
            (false, true) if imm => base | op::RC_WRITE_LAST_IMM,
            (false, true) => base | op::RC_WRITE_LAST,
        }
    };
    if last {
        h.imm = r.imm;
        if rc {
            h.ieth = r.inv;
        }
        h.bth.se = r.se;
    }
    Ok(plen)
}

/// A SEND packet's payload (RC, UC) goes into the receive in `st.cur` at
/// the message's offset so far; LOC_LEN_ERR once it does not fit.
fn place_send<S: HostSt>(mem: &dyn Memory, st: &mut S, payload: &[u8]) {
    let off = st.wq_mut().recv_off;
    if let Some(cur) = st.cur().as_mut() {
        cur.place(mem, off, payload);
    }
    st.wq_mut().recv_off += payload.len() as u64;
}

/// Where a UD request goes: (our address, the peer's) for the AH's GIDs.
pub fn ud_path<H: Host>(w: &Wire, c: &H, ah: &ibv_ah_attr) -> Option<(IpAddr, IpAddr)> {
    if ah.is_global == 0 {
        return None;
    }
    // SAFETY: `ibv_gid` is 16 bytes in every member.
    let dgid = unsafe { ah.grh.dgid.raw };
    let s = gid_ip(&c.gid(ah.grh.sgid_index as usize));
    let d = gid_ip(&dgid);
    if !same_family(&s, &d) || !w.sock.has_addr(&s) {
        return None;
    }
    Some((s, d))
}

/// Direct transmit (`wq/mod.rs`): the UDP payload of the only packet of RC
/// request `r` ([`crate::data::direct_request`]: a SEND or WRITE of inline
/// data, at most `pmtu` bytes, a READ of at most `pmtu` bytes or an
/// atomic) with PSN `psn` to QP `dqpn`, asking for its ACK, sent from
/// `src`:`sport` to `dst`, into `out`, as the agent's own pump would make
/// it but for the source port.  False when it is not such a request.
pub fn direct_packet(
    r: &Req,
    dqpn: u32,
    psn: u32,
    pmtu: u32,
    (src, sport, dst): (IpAddr, u16, IpAddr),
    out: &mut Vec<u8>,
) -> bool {
    let one = match r.kind {
        Op::Send | Op::Write => r.len <= pmtu as u64 && r.data.as_ref().is_some_and(|d| d.len() as u64 == r.len),
        Op::Read => r.len <= pmtu as u64 && r.data.is_none(),
        Op::CmpSwap | Op::FetchAdd => r.data.is_none(),
        _ => false,
    };
    if !one || !same_family(&src, &dst) {
        return false;
    }
    let r1 = Req {
        npkts: 1,
        sges: Vec::new(),
        data: r.data.clone(),
        ..*r
    };
    let mut h = Hdr {
        bth: Wire::bth(0, dqpn, psn),
        ..Default::default()
    };
    let mut pay = vec![0u8; r1.data.as_ref().map_or(0, |d| d.len())];
    let plen = if matches!(r.kind, Op::Send | Op::Write) {
        let Ok(plen) = data_packet(None, (IBV_QPT_RC, 0), &r1, 0, pmtu, None, &mut h, &mut pay) else {
            return false;
        };
        plen
    } else {
        asking_header(&r1, 0, pmtu, &mut h);
        0
    };
    h.bth.ackreq = true;
    let mut hb = [0u8; roce::MAX_HDR];
    let Ok(hl) = roce::encode(&h, plen, &mut hb) else {
        return false;
    };
    let np = roce::pad_for(plen) as usize;
    let ip = roce::IpInfo {
        src,
        dst,
        sport,
        dport: roce::ROCE_PORT,
        flow: 0,
    };
    let pad = [0u8; 4];
    let icrc = roce::icrc(&ip, &[&hb[..hl], &pay[..plen], &pad[..np]]);
    out.clear();
    out.extend_from_slice(&hb[..hl]);
    out.extend_from_slice(&pay[..plen]);
    out.extend_from_slice(&pad[..np]);
    out.extend_from_slice(&icrc);
    true
}

/// What the ICRC of a packet we send covers of its IP and UDP headers:
/// from `src` to `dst`, port 4791 both ways (our socket's).
fn tx_ip(src: &IpAddr, dst: &IpAddr, via: Option<&Arc<Sender>>) -> roce::IpInfo {
    roce::IpInfo {
        src: *src,
        dst: *dst,
        sport: source_port(src, via),
        dport: roce::ROCE_PORT,
        flow: 0,
    }
}
