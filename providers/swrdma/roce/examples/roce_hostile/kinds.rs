//! The hostile kinds of roce_hostile: what each sends (see
//! compat-tests/wire-hostile/kinds.txt for what each is about).  H is the
//! RC QP whose peer is the attacker (expected PSN 0), T the traffic QP of
//! another peer (the attacker is a stranger to it).

use super::{Pkt, Target};
use std::time::{Duration, Instant};
use swrdma_roce::op;

pub const NAMES: &[&str] = &[
    "control-send",
    "ghost-ack",
    "ghost-nak",
    "ghost-read-resp",
    "ghost-atomic-ack",
    "psn-ahead",
    "psn-behind",
    "dup-flood",
    "opseq-middle-first",
    "opseq-last-first",
    "opseq-first-first",
    "opseq-send-write",
    "reth-len-0",
    "reth-write-len-max",
    "reth-read-len-max",
    "out-of-mr-write",
    "out-of-mr-read",
    "dead-rkey",
    "foreign-pd-rkey",
    "unaligned-atomic",
    "qp0-qp1",
    "qp-reset",
    "qp-init",
    "qp-err",
    "wrong-qkey",
    "right-qkey",
    "truncated",
    "padded",
    "stranger",
    "dup-read-replay",
    "dup-atomic-replay",
    "over-mtu",
    "short-middle",
    "flood",
];

type Tx<'a> = dyn FnMut(&Pkt) -> Result<(), String> + 'a;

fn all(tx: &mut Tx, ps: &[Pkt]) -> Result<(), String> {
    ps.iter().try_for_each(tx)
}

/// An ACK-class packet (ACK, NAK, RNR NAK: opcode 0x11) with `syndrome`.
fn aeth(q: u32, psn: u32, syndrome: u8) -> Pkt {
    Pkt::new(op::RC_ACK, q, psn).aeth(syndrome, 0)
}

fn ghosts(q: u32) -> Vec<Pkt> {
    vec![aeth(q, 0, 0x1f), aeth(q, 0x123456, 0x1f)]
}

fn naks(q: u32) -> Vec<Pkt> {
    [0x60, 0x61, 0x62, 0x63, 0x21].iter().map(|&s| aeth(q, 0, s)).collect()
}

fn read_resps(q: u32) -> Vec<Pkt> {
    vec![
        Pkt::new(op::RC_READ_RESPONSE_FIRST, q, 0).aeth(0x1f, 0).len(1024),
        Pkt::new(op::RC_READ_RESPONSE_MIDDLE, q, 1).len(1024),
        Pkt::new(op::RC_READ_RESPONSE_LAST, q, 2).aeth(0x1f, 0).len(256),
        Pkt::new(op::RC_READ_RESPONSE_ONLY, q, 7).aeth(0x1f, 0).len(256),
    ]
}

fn send_only(q: u32, psn: u32, len: usize) -> Pkt {
    Pkt::new(op::RC_SEND_ONLY, q, psn).len(len)
}

fn write_only(q: u32, psn: u32, va: u64, rkey: u32, len: u32, n: usize) -> Pkt {
    Pkt::new(op::RC_WRITE_ONLY, q, psn)
        .reth(va, rkey, len)
        .len(n)
        .fill(0xee)
}

fn read_req(q: u32, psn: u32, va: u64, rkey: u32, len: u32) -> Pkt {
    Pkt::new(op::RC_READ_REQUEST, q, psn).reth(va, rkey, len)
}

fn fetch_add(q: u32, psn: u32, va: u64, rkey: u32, add: u64) -> Pkt {
    Pkt::new(op::RC_FETCH_ADD, q, psn).atomic(va, rkey, add, 0)
}

/// Both targets of a "ghost" kind: H (the attacker is its peer) and T.
fn both(t: &Target, f: impl Fn(u32) -> Vec<Pkt>) -> Vec<Pkt> {
    let mut v = f(t.h);
    v.extend(f(t.t));
    v
}

/// SEND ONLY and WRITE ONLY (into h's MR) at a QP.
fn send_write(t: &Target, q: u32) -> Vec<Pkt> {
    vec![send_only(q, 0, 64), write_only(q, 1, t.hva, t.hrkey, 8, 8)]
}

/// Cuts of a WRITE ONLY (BTH + RETH + 8 bytes: 36) and of a FETCH ADD (40).
fn truncated(t: &Target) -> Vec<Pkt> {
    let mut v: Vec<Pkt> = [0, 1, 4, 6, 11, 12, 16, 20, 27]
        .iter()
        .map(|&n| write_only(t.h, 0, t.hva, t.hrkey, 8, 8).cut(n))
        .collect();
    v.extend(
        [12, 20, 36]
            .iter()
            .map(|&n| fetch_add(t.h, 0, t.hva, t.hrkey, 1).cut(n)),
    );
    v.push(read_req(t.h, 0, t.hva, t.hrkey, 64).cut(24));
    v
}

/// Pad counts that do not match, bytes past the pad, lengths not a
/// multiple of 4 (all at H, expected PSN 0).
fn padded(t: &Target) -> Vec<Pkt> {
    vec![
        send_only(t.h, 0, 1).pad(3),
        send_only(t.h, 0, 0).pad(3),
        send_only(t.h, 0, 5).pad(0),
        write_only(t.h, 0, t.hva, t.hrkey, 8, 8).pad(3),
        write_only(t.h, 0, t.hva, t.hrkey, 8, 8).extra(64),
        read_req(t.h, 0, t.hva, t.hrkey, 8).extra(4),
        Pkt::new(op::RC_ACK, t.h, 0).aeth(0x1f, 0).extra(8),
    ]
}

fn dup_read(t: &Target) -> Vec<Pkt> {
    let r = |psn, off, len| read_req(t.h, psn, t.hva + off, t.hrkey, len);
    vec![
        r(0, 0, 64),          // executed
        r(0, 0, 64),          // the same again: from the saved READ
        r(0, 0, 4096),        // PSN 0, another range
        r(0, 1024, 64),       // PSN 0, another address
        r(0xfff000, 0, 4096), // a past PSN never used
        r(0, 0, 4096).times(64),
    ]
}

fn dup_atomic(t: &Target) -> Vec<Pkt> {
    vec![
        fetch_add(t.h, 0, t.hva, t.hrkey, 1),
        fetch_add(t.h, 0, t.hva, t.hrkey, 1).times(100),
        fetch_add(t.h, 0, t.hva + 8, t.hrkey, 1),
        fetch_add(t.h, 0xffff00, t.hva, t.hrkey, 1),
    ]
}

fn requests(name: &str, t: &Target) -> Option<Vec<Pkt>> {
    let h = t.h;
    Some(match name {
        "control-send" => vec![send_only(h, 0, 64)],
        "psn-ahead" => vec![send_only(h, 0x100, 16), send_only(h, 0x7fffff, 16)],
        "psn-behind" => vec![send_only(h, 0xffff00, 16), send_only(h, 0x800001, 16)],
        "dup-flood" => vec![
            send_only(h, 0, 16),
            send_only(h, 0, 16).times(2000),
            write_only(h, 0, t.hva, t.hrkey, 8, 8).times(2000),
        ],
        "opseq-middle-first" => vec![Pkt::new(op::RC_SEND_MIDDLE, h, 0).len(1024)],
        "opseq-last-first" => vec![Pkt::new(op::RC_SEND_LAST, h, 0).len(100)],
        "opseq-first-first" => vec![
            Pkt::new(op::RC_SEND_FIRST, h, 0).len(1024),
            Pkt::new(op::RC_SEND_FIRST, h, 1).len(1024),
        ],
        "opseq-send-write" => vec![
            Pkt::new(op::RC_SEND_FIRST, h, 0).len(1024),
            Pkt::new(op::RC_WRITE_MIDDLE, h, 1).len(1024),
        ],
        "reth-len-0" => vec![
            write_only(h, 0, t.hva, t.hrkey, 0, 0),
            read_req(h, 1, t.hva, t.hrkey, 0),
        ],
        "reth-write-len-max" => vec![write_only(h, 0, t.hva, t.hrkey, u32::MAX, 8)],
        "reth-read-len-max" => vec![read_req(h, 0, t.hva, t.hrkey, u32::MAX)],
        "out-of-mr-write" => vec![write_only(h, 0, t.hva + 4092, t.hrkey, 8, 8)],
        "out-of-mr-read" => vec![read_req(h, 0, t.hva.wrapping_sub(64), t.hrkey, 128)],
        "dead-rkey" => vec![write_only(h, 0, t.hva, t.dead, 8, 8)],
        "foreign-pd-rkey" => vec![write_only(h, 0, t.tva + 8 * 4096, t.trkey, 8, 8)],
        "unaligned-atomic" => vec![fetch_add(h, 0, t.hva + 3, t.hrkey, 1)],
        "qp0-qp1" => vec![
            Pkt::new(op::UD_SEND_ONLY, 0, 0).deth(0x8001_0000, 0x333).len(256),
            Pkt::new(op::UD_SEND_ONLY, 1, 0).deth(0x8001_0000, 0x333).len(256),
            send_only(1, 0, 256),
        ],
        "qp-reset" => send_write(t, t.reset),
        "qp-init" => send_write(t, t.init),
        "qp-err" => send_write(t, t.err),
        "wrong-qkey" => vec![
            Pkt::new(op::UD_SEND_ONLY, t.d, 0).deth(0x2222_2222, 0x333).len(64),
            Pkt::new(op::UD_SEND_ONLY, t.d, 1).deth(0x8000_0001, 0x333).len(64),
        ],
        "right-qkey" => vec![Pkt::new(op::UD_SEND_ONLY, t.d, 0).deth(0x1111_1111, 0x333).len(64)],
        "truncated" => truncated(t),
        "padded" => padded(t),
        "dup-read-replay" => dup_read(t),
        "dup-atomic-replay" => dup_atomic(t),
        "over-mtu" => vec![send_only(h, 0, 1400)],
        "short-middle" => vec![
            Pkt::new(op::RC_SEND_FIRST, h, 0).len(1024),
            Pkt::new(op::RC_SEND_MIDDLE, h, 1).len(500),
            Pkt::new(op::RC_SEND_LAST, h, 2).len(100),
        ],
        _ => return None,
    })
}

/// What a stranger sends at the traffic QP and MR (it sniffed the R_Key):
/// a WRITE into the canary page, a READ, a SEND, an ACK and a NAK.
fn stranger(t: &Target) -> Vec<Pkt> {
    let q = t.t;
    vec![
        write_only(q, 0, t.tva + 8 * 4096, t.trkey, 8, 8),
        read_req(q, 0, t.tva, t.trkey, 4096),
        send_only(q, 0, 64),
        aeth(q, 0, 0x1f),
        aeth(q, 0, 0x61),
    ]
}

pub fn run(name: &str, t: &Target, tx: &mut Tx) -> Result<(), String> {
    let ps = match name {
        "ghost-ack" => both(t, ghosts),
        "ghost-nak" => both(t, naks),
        "ghost-read-resp" => both(t, read_resps),
        "ghost-atomic-ack" => both(t, |q| {
            vec![Pkt::new(op::RC_ATOMIC_ACK, q, 0).aeth(0x1f, 0).atomic_ack(7)]
        }),
        "stranger" => stranger(t),
        "flood" => return flood(t, tx),
        _ => requests(name, t).ok_or(format!("unknown kind {name} (roce_hostile list)"))?,
    };
    all(tx, &ps)
}

/// xorshift64*: the flood's randomness (a fixed seed: the same flood each run).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[(self.next() % v.len() as u64) as usize]
    }
}

/// One random packet: an opcode (half of them from the table), a QP of
/// the victim (or 0, 1, a random one), a PSN near 0 or anywhere, random
/// header bytes with, often, a known R_Key and an address near an MR.
fn random_pkt(t: &Target, r: &mut Rng) -> Vec<u8> {
    const OPS: &[u8] = &[
        0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11,
        0x12, 0x13, 0x14, 0x16, 0x17, 0x20, 0x22, 0x24, 0x26, 0x28, 0x2a, 0x64, 0x65,
    ];
    let opc = if r.next() & 1 == 0 { r.pick(OPS) } else { r.next() as u8 };
    let any = r.next() as u32 & 0xff_ffff;
    let qp = r.pick(&[t.t, t.h, t.h, t.u, t.d, t.reset, t.init, t.err, 0, 1, any]);
    let psn = if r.next() & 1 == 0 {
        r.next() as u32 % 64
    } else {
        r.next() as u32
    } & 0xff_ffff;
    let hl = [12usize, 16, 20, 28, 40][(r.next() % 5) as usize];
    let len = hl + r.pick(&[0usize, 0, 8, 64, 1024, 1100, 3]);
    let mut b: Vec<u8> = (0..len).map(|_| r.next() as u8).collect();
    b[0] = opc;
    b[1] &= if r.next().is_multiple_of(8) { 0xff } else { 0xf0 };
    b[2] = 0xff;
    b[3] = 0xff;
    b[5..8].copy_from_slice(&qp.to_be_bytes()[1..]);
    b[9..12].copy_from_slice(&psn.to_be_bytes()[1..]);
    let at = if opc >> 5 == 3 { 20 } else { 12 };
    if b.len() >= at + 12 && r.next() & 1 == 0 {
        // a RETH or AtomicETH right after the BTH (or after a DETH)
        let (va, key) = r.pick(&[(t.hva, t.hrkey), (t.tva, t.trkey), (t.hva, t.dead)]);
        let va = va.wrapping_add(r.next() % 8192).wrapping_sub(4096);
        b[at..at + 8].copy_from_slice(&va.to_be_bytes());
        b[at + 8..at + 12].copy_from_slice(&key.to_be_bytes());
    }
    b
}

/// `secs` seconds of random packets at `rate` per second.
fn flood(t: &Target, tx: &mut Tx) -> Result<(), String> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let t0 = Instant::now();
    let mut n = 0u64;
    while t0.elapsed() < Duration::from_secs(t.secs) {
        tx(&Pkt::raw(random_pkt(t, &mut r)))?;
        n += 1;
        let due = Duration::from_micros(n * 1_000_000 / t.rate);
        if let Some(d) = due.checked_sub(t0.elapsed()) {
            std::thread::sleep(d);
        }
    }
    Ok(())
}
