//! roce_hostile: one hostile-packet kind at a victim's QPs, and what came
//! back.  The attacker of compat-tests/wire-hostile: it binds SRC:4791 (so
//! that a device answering SRC answers this socket), sends the packets of
//! KIND (RoCE v2, valid ICRC for an unconnected socket with DF set, IP
//! identification 0), then listens until WAIT ms pass without an answer and
//! prints what the device sent back.  Not part of the device.
//!
//!   roce_hostile list                 the kinds, one a line
//!   roce_hostile SRC DST KIND key=value ...
//!     t=QPN        the victim's traffic RC QP (its peer is another host)
//!     h=QPN        an RC QP whose peer is SRC (dest QPN 0x333, PSNs 0)
//!     u=QPN        a UC QP whose peer is SRC;  d=QPN  a UD QP (Q_Key 0x11111111)
//!     reset= init= err=   RC QPs in those states (err: its peer was SRC)
//!     hva=VA hrkey=K      a 4096-byte MR of h's PD (remote read/write/atomic)
//!     tva=VA trkey=K      the traffic MR (another PD); its page 8 is a canary
//!     dead=K       the R_Key of a deregistered MR;  secs=S  flood time (10)
//!     rate=N       flood packets per second (20000);  wait=MS  quiet time (300)
//! Prints `sent PACKETS BYTES`, `answer CLASS*N ...` (`answer none`: nothing
//! came back), `answer-bytes N` (UDP payload bytes received).  Classes: ACK,
//! RNR, NAK-SEQ, NAK-INV, NAK-ACC, NAK-OP, NAK-<n>, RDRESP, ATACK, OP-<hex>
//! (a request), BAD (not a RoCE packet).  Exits 0 when every packet left.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swrdma_roce as roce;
use swrdma_roce::{op, Aeth, AethKind, AtomicEth, Bth, Deth, Hdr, Reth};

mod kinds;

/// The victim's handles, from key=value arguments (0 when not given).
#[derive(Default, Clone, Copy)]
pub struct Target {
    pub t: u32,
    pub h: u32,
    pub u: u32,
    pub d: u32,
    pub reset: u32,
    pub init: u32,
    pub err: u32,
    pub hva: u64,
    pub hrkey: u32,
    pub tva: u64,
    pub trkey: u32,
    pub dead: u32,
    pub secs: u64,
    pub rate: u64,
    pub wait: u64,
}

/// One packet to send: headers and payload, then what to break.
#[derive(Clone)]
pub struct Pkt {
    pub h: Hdr,
    pub len: usize,
    pub fill: u8,
    /// BTH PadCnt written over the right one.
    pub pad: Option<u8>,
    /// Bytes appended after the pad (before the ICRC).
    pub extra: usize,
    /// The UDP payload cut to this many bytes before the ICRC.
    pub cut: Option<usize>,
    /// Raw bytes (the flood): sent as they are, with an ICRC.
    pub raw: Option<Vec<u8>>,
    /// Times to send it.
    pub count: u32,
}

impl Pkt {
    pub fn new(opcode: u8, dqpn: u32, psn: u32) -> Pkt {
        Pkt {
            h: Hdr {
                bth: Bth {
                    opcode,
                    pkey: 0xffff,
                    dqpn: dqpn & 0xff_ffff,
                    psn: psn & 0xff_ffff,
                    ackreq: true,
                    ..Default::default()
                },
                ..Default::default()
            },
            len: 0,
            fill: 0x5a,
            pad: None,
            extra: 0,
            cut: None,
            raw: None,
            count: 1,
        }
    }
    pub fn len(mut self, n: usize) -> Pkt {
        self.len = n;
        self
    }
    pub fn fill(mut self, b: u8) -> Pkt {
        self.fill = b;
        self
    }
    pub fn times(mut self, n: u32) -> Pkt {
        self.count = n;
        self
    }
    pub fn reth(mut self, va: u64, rkey: u32, len: u32) -> Pkt {
        self.h.reth = Some(Reth { va, rkey, len });
        self
    }
    pub fn aeth(mut self, syndrome: u8, msn: u32) -> Pkt {
        self.h.aeth = Some(Aeth { syndrome, msn });
        self
    }
    pub fn deth(mut self, qkey: u32, sqpn: u32) -> Pkt {
        self.h.deth = Some(Deth { qkey, sqpn });
        self
    }
    pub fn atomic(mut self, va: u64, rkey: u32, swap_add: u64, cmp: u64) -> Pkt {
        self.h.atomic = Some(AtomicEth {
            va,
            rkey,
            swap_add,
            cmp,
        });
        self
    }
    pub fn atomic_ack(mut self, orig: u64) -> Pkt {
        self.h.atomic_ack = Some(orig);
        self
    }
    pub fn pad(mut self, p: u8) -> Pkt {
        self.pad = Some(p);
        self
    }
    pub fn extra(mut self, n: usize) -> Pkt {
        self.extra = n;
        self
    }
    pub fn cut(mut self, n: usize) -> Pkt {
        self.cut = Some(n);
        self
    }
    pub fn raw(body: Vec<u8>) -> Pkt {
        let mut p = Pkt::new(op::RC_SEND_ONLY, 0, 0);
        p.raw = Some(body);
        p
    }
}

fn num(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("not a number: {s}"))
}

fn target(args: &[String]) -> Result<Target, String> {
    let mut t = Target {
        secs: 10,
        rate: 20000,
        wait: 300,
        ..Default::default()
    };
    for a in args {
        let (k, v) = a.split_once('=').ok_or(format!("not key=value: {a}"))?;
        let n = num(v)?;
        match k {
            "t" => t.t = n as u32,
            "h" => t.h = n as u32,
            "u" => t.u = n as u32,
            "d" => t.d = n as u32,
            "reset" => t.reset = n as u32,
            "init" => t.init = n as u32,
            "err" => t.err = n as u32,
            "hva" => t.hva = n,
            "hrkey" => t.hrkey = n as u32,
            "tva" => t.tva = n,
            "trkey" => t.trkey = n as u32,
            "dead" => t.dead = n as u32,
            "secs" => t.secs = n,
            "rate" => t.rate = n.max(1),
            "wait" => t.wait = n,
            _ => return Err(format!("unknown key {k}")),
        }
    }
    Ok(t)
}

/// The UDP payload of `p` (ICRC included) from SRC:sport to DST:4791.
fn build(ip: &roce::IpInfo, p: &Pkt) -> Result<Vec<u8>, String> {
    let mut body = match &p.raw {
        Some(b) => b.clone(),
        None => {
            let mut hb = [0u8; roce::MAX_HDR];
            let hl = roce::encode(&p.h, p.len, &mut hb).map_err(|e| format!("encode: {e:?}"))?;
            let np = roce::pad_for(p.len) as usize;
            let mut b = hb[..hl].to_vec();
            b.resize(hl + p.len, p.fill);
            b.resize(hl + p.len + np + p.extra, 0);
            if let Some(pc) = p.pad {
                b[1] = (b[1] & !0x30) | ((pc & 3) << 4);
            }
            b
        }
    };
    if let Some(n) = p.cut {
        body.truncate(n);
    }
    let icrc = roce::icrc(ip, &[&body]);
    body.extend_from_slice(&icrc);
    Ok(body)
}

/// The class of one answer (see the header).
fn class(pkt: &[u8]) -> String {
    let Ok((h, _)) = roce::decode(pkt) else {
        return "BAD".into();
    };
    match h.bth.opcode {
        op::RC_ACK => match h.aeth.map(|a| a.kind()) {
            Some(AethKind::Ack) => "ACK".into(),
            Some(AethKind::RnrNak(_)) => "RNR".into(),
            Some(AethKind::Nak(0)) => "NAK-SEQ".into(),
            Some(AethKind::Nak(1)) => "NAK-INV".into(),
            Some(AethKind::Nak(2)) => "NAK-ACC".into(),
            Some(AethKind::Nak(3)) => "NAK-OP".into(),
            Some(AethKind::Nak(n)) => format!("NAK-{n}"),
            _ => "AETH-RESERVED".into(),
        },
        op::RC_READ_RESPONSE_FIRST..=op::RC_READ_RESPONSE_ONLY => "RDRESP".into(),
        op::RC_ATOMIC_ACK => "ATACK".into(),
        o => format!("OP-{o:#04x}"),
    }
}

/// Counts what arrives on `sock` until `stop` is set and `quiet` passed
/// without a packet (at most 20 s after `stop`).
fn listen(sock: UdpSocket, stop: Arc<AtomicBool>, quiet: Duration) -> (BTreeMap<String, u64>, u64) {
    let mut seen = BTreeMap::new();
    let mut bytes = 0u64;
    let mut buf = vec![0u8; 65536];
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let mut last = Instant::now();
    let mut stopped: Option<Instant> = None;
    loop {
        match sock.recv(&mut buf) {
            Ok(n) => {
                *seen.entry(class(&buf[..n])).or_insert(0) += 1;
                bytes += n as u64;
                last = Instant::now();
            }
            Err(_) => {
                if stop.load(Ordering::Acquire) {
                    let s = *stopped.get_or_insert_with(Instant::now);
                    if (last.max(s).elapsed() >= quiet) || s.elapsed() > Duration::from_secs(20) {
                        break;
                    }
                }
            }
        }
    }
    (seen, bytes)
}

fn bind(src: IpAddr) -> Result<UdpSocket, String> {
    let sock = UdpSocket::bind(SocketAddr::new(src, roce::ROCE_PORT)).map_err(|e| format!("bind {src}:4791: {e}"))?;
    // DF with identification 0, what roce::icrc assumes (IP_PMTUDISC_DO)
    let v: libc::c_int = libc::IP_PMTUDISC_DO;
    // SAFETY: a valid socket and a c_int option of the size given.
    let r = unsafe {
        use std::os::fd::AsRawFd;
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(format!("IP_MTU_DISCOVER: {}", std::io::Error::last_os_error()));
    }
    Ok(sock)
}

fn run(args: &[String]) -> Result<(), String> {
    if args.first().map(String::as_str) == Some("list") {
        for k in kinds::NAMES {
            println!("{k}");
        }
        return Ok(());
    }
    if args.len() < 3 {
        return Err("usage: roce_hostile SRC DST KIND [key=value ...] | roce_hostile list".into());
    }
    let ip = |s: &str| s.parse::<IpAddr>().map_err(|_| format!("not an address: {s}"));
    let (src, dst) = (ip(&args[0])?, ip(&args[1])?);
    let t = target(&args[3..])?;
    let sock = bind(src)?;
    let ipi = roce::IpInfo {
        src,
        dst,
        sport: roce::ROCE_PORT,
        dport: roce::ROCE_PORT,
        flow: 0,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let rx = {
        let (s, st) = (sock.try_clone().map_err(|e| e.to_string())?, stop.clone());
        let quiet = Duration::from_millis(t.wait);
        std::thread::spawn(move || listen(s, st, quiet))
    };
    let to = SocketAddr::new(dst, roce::ROCE_PORT);
    let mut sent = (0u64, 0u64);
    let mut tx = |p: &Pkt| -> Result<(), String> {
        let b = build(&ipi, p)?;
        for _ in 0..p.count {
            sock.send_to(&b, to).map_err(|e| format!("send: {e}"))?;
            sent.0 += 1;
            sent.1 += b.len() as u64;
        }
        Ok(())
    };
    let r = kinds::run(&args[2], &t, &mut tx);
    stop.store(true, Ordering::Release);
    let (seen, bytes) = rx.join().map_err(|_| "listener panicked".to_string())?;
    r?;
    println!("sent {} {}", sent.0, sent.1);
    let mut line = String::from("answer");
    for (c, n) in &seen {
        line += &format!(" {c}*{n}");
    }
    if seen.is_empty() {
        line += " none";
    }
    println!("{line}");
    println!("answer-bytes {bytes}");
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("roce_hostile: {e}");
        std::process::exit(2);
    }
}
