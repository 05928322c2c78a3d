//! A flight recorder of the wire device (debugging): with
//! `SWRDMA_WIRE_RECORD=<directory>`, the last [`N`] packet events of the
//! process (received, forwarded, dropped, sent, retransmitted) are kept in
//! memory and written at exit to `<directory>/rec.<pid>`, one line each:
//! time (µs), event, QPN, PSN, opcode; before them a line `# counts` with
//! `event:count` for every event seen since the start.  Off (one load of a `OnceLock`)
//! when the variable is not set.  Unlike `SWRDMA_WIRE_TRACE` it writes
//! nothing while the program runs, so it leaves the timing alone.

use crate::now_ns;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Events kept (the last ones).
const N: usize = 1 << 16;

/// What happened to a packet.
#[derive(Clone, Copy, Debug)]
#[repr(u8)]
pub enum Ev {
    /// A datagram from our UDP socket for one of our QPs.
    UdpMine = 1,
    /// … for another process's QP, forwarded to it.
    UdpFwd,
    /// … forwarding refused for lack of room (EAGAIN): dropped.
    UdpFwdFull,
    /// … for a QPN nobody owns: dropped.
    UdpNoOwner,
    /// … forwarding failed otherwise (no connection): dropped.
    UdpFwdErr,
    /// A datagram forwarded to us by another process.
    FwdIn,
    /// A packet handed to the kernel (in a batch, also one the kernel
    /// refused by itself, e.g. for its size: the batch's count of what
    /// left does not tell them apart).
    Tx,
    /// A packet of a batch left unsent when the kernel had no room
    /// (EAGAIN/ENOBUFS): lost.
    TxFail,
    /// The ACK timer of a QP fired (a retransmission follows).
    Timeout,
    /// The retry budget of a QP is spent (its front request fails).
    GiveUp,
    /// A request whose only packet its client sent itself (direct
    /// transmit, `wq/mod.rs`) was taken as sent.
    Direct,
}

struct Rec {
    dir: std::path::PathBuf,
    next: AtomicUsize,
    /// Per event: time in ns, then `kind << 56 | opcode << 48 | qpn << 24 | psn`.
    ev: Box<[(AtomicU64, AtomicU64)]>,
    /// Events of each kind since the start (not only the last [`N`]).
    counts: [AtomicU64; KINDS],
}

/// Event kinds counted (above the largest [`Ev`]).
const KINDS: usize = 16;

fn rec() -> Option<&'static Rec> {
    static R: OnceLock<Option<Rec>> = OnceLock::new();
    R.get_or_init(|| {
        let dir = std::env::var_os("SWRDMA_WIRE_RECORD")?;
        let r = Rec {
            dir: dir.into(),
            next: AtomicUsize::new(0),
            ev: (0..N).map(|_| (AtomicU64::new(0), AtomicU64::new(0))).collect(),
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
        };
        extern "C" fn dump_at_exit() {
            dump();
        }
        // SAFETY: registers a function of no arguments for exit(); it
        // never unwinds into C (the provider is built with panic=abort, and
        // dump only formats integers and writes a file, ignoring errors).
        unsafe { libc::atexit(dump_at_exit) };
        Some(r)
    })
    .as_ref()
}

/// Whether the recorder is on.
pub fn on() -> bool {
    rec().is_some()
}

/// Records event `e` for the RoCE packet (UDP payload) `p`.
pub fn note(e: Ev, p: &[u8]) {
    let Some(r) = rec() else { return };
    let (Some(&op), Some(q), Some(s)) = (p.first(), p.get(5..8), p.get(9..12)) else {
        return;
    };
    let qpn = u64::from(u32::from_be_bytes([0, q[0], q[1], q[2]]));
    let psn = u64::from(u32::from_be_bytes([0, s[0], s[1], s[2]]));
    put(r, e, op, qpn, psn);
}

/// Records event `e` of QP `qpn` at PSN `psn` (no packet).
pub fn note_qp(e: Ev, qpn: u32, psn: u32) {
    let Some(r) = rec() else { return };
    put(r, e, 0, u64::from(qpn & 0xff_ffff), u64::from(psn & 0xff_ffff));
}

fn put(r: &Rec, e: Ev, op: u8, qpn: u64, psn: u64) {
    r.counts[e as usize % KINDS].fetch_add(1, Ordering::Relaxed);
    let i = r.next.fetch_add(1, Ordering::Relaxed) % N;
    let v = (e as u64) << 56 | u64::from(op) << 48 | qpn << 24 | psn;
    r.ev[i].0.store(now_ns(), Ordering::Relaxed);
    r.ev[i].1.store(v, Ordering::Relaxed);
}

/// Writes what is recorded to `<dir>/rec.<pid>`, oldest first.
fn dump() {
    let Some(r) = rec() else { return };
    let path = r.dir.join(format!("rec.{}", std::process::id()));
    let Ok(f) = std::fs::File::create(path) else { return };
    let mut w = std::io::BufWriter::new(f);
    // First line: `# counts` and `kind:count` for every kind seen.
    let _ = write!(w, "# counts");
    for (k, c) in r.counts.iter().enumerate() {
        let c = c.load(Ordering::Relaxed);
        if c > 0 {
            let _ = write!(w, " {k}:{c}");
        }
    }
    let _ = writeln!(w);
    let n = r.next.load(Ordering::Relaxed);
    let first = n.saturating_sub(N);
    for k in first..n {
        let (t, v) = (&r.ev[k % N].0, &r.ev[k % N].1);
        let (t, v) = (t.load(Ordering::Relaxed), v.load(Ordering::Relaxed));
        let kind = (v >> 56) as u8;
        let _ = writeln!(
            w,
            "{} {} {} {} {:#x}",
            t / 1000,
            kind,
            (v >> 24) & 0xff_ffff,
            v & 0xff_ffff,
            (v >> 48) & 0xff
        );
    }
    let _ = w.flush();
}
