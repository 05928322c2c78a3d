//! roce_craft: sends hand-made RoCE v2 packets (valid ICRC) from a UDP
//! socket bound to a given source address: the hostile or stray host of
//! the wire tests (compat-tests/wire-strict).  Not part of the device.
//!
//!   roce_craft SRC DST OPCODE DQPN PSN [key=value ...]
//!     len=N        payload bytes (default 0), filled with fill=B (0x5a)
//!     reth=VA:RKEY:LEN   deth=QKEY:SQPN   aeth=SYNDROME:MSN   imm=V
//!     count=N      send the packet N times (default 1)
//! Numbers may be decimal or 0x-hex.  Exits 0 when every packet was sent.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use swrdma_roce as roce;
use swrdma_roce::{Aeth, Bth, Deth, Hdr, Reth};

fn num(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("not a number: {s}"))
}

fn nums(s: &str, n: usize) -> Result<Vec<u64>, String> {
    let v: Vec<u64> = s.split(':').map(num).collect::<Result<_, _>>()?;
    if v.len() != n {
        return Err(format!("{s}: {n} numbers expected"));
    }
    Ok(v)
}

struct Craft {
    src: IpAddr,
    dst: IpAddr,
    h: Hdr,
    len: usize,
    fill: u8,
    count: u64,
}

fn parse(args: &[String]) -> Result<Craft, String> {
    if args.len() < 5 {
        return Err("usage: roce_craft SRC DST OPCODE DQPN PSN [key=value ...]".into());
    }
    let ip = |s: &str| s.parse::<IpAddr>().map_err(|_| format!("not an address: {s}"));
    let mut c = Craft {
        src: ip(&args[0])?,
        dst: ip(&args[1])?,
        h: Hdr {
            bth: Bth {
                opcode: num(&args[2])? as u8,
                pkey: 0xffff,
                dqpn: num(&args[3])? as u32 & 0xff_ffff,
                psn: num(&args[4])? as u32 & 0xff_ffff,
                ackreq: true,
                ..Default::default()
            },
            ..Default::default()
        },
        len: 0,
        fill: 0x5a,
        count: 1,
    };
    for a in &args[5..] {
        let (k, v) = a.split_once('=').ok_or(format!("not key=value: {a}"))?;
        match k {
            "len" => c.len = num(v)? as usize,
            "fill" => c.fill = num(v)? as u8,
            "count" => c.count = num(v)?,
            "imm" => c.h.imm = Some(num(v)? as u32),
            "reth" => {
                let n = nums(v, 3)?;
                c.h.reth = Some(Reth {
                    va: n[0],
                    rkey: n[1] as u32,
                    len: n[2] as u32,
                });
            }
            "deth" => {
                let n = nums(v, 2)?;
                c.h.deth = Some(Deth {
                    qkey: n[0] as u32,
                    sqpn: n[1] as u32,
                });
            }
            "aeth" => {
                let n = nums(v, 2)?;
                c.h.aeth = Some(Aeth {
                    syndrome: n[0] as u8,
                    msn: n[1] as u32,
                });
            }
            _ => return Err(format!("unknown key {k}")),
        }
    }
    Ok(c)
}

fn send(c: &Craft) -> Result<(), String> {
    let sock = UdpSocket::bind(SocketAddr::new(c.src, 0)).map_err(|e| format!("bind {}: {e}", c.src))?;
    let sport = sock.local_addr().map_err(|e| e.to_string())?.port();
    let payload = vec![c.fill; c.len];
    let mut hb = [0u8; roce::MAX_HDR];
    let hl = roce::encode(&c.h, payload.len(), &mut hb).map_err(|e| format!("encode: {e:?}"))?;
    let pad = [0u8; 4];
    let np = roce::pad_for(payload.len()) as usize;
    let ip = roce::IpInfo {
        src: c.src,
        dst: c.dst,
        sport,
        dport: roce::ROCE_PORT,
        flow: 0,
    };
    let icrc = roce::icrc(&ip, &[&hb[..hl], &payload, &pad[..np]]);
    let pkt = [&hb[..hl], &payload[..], &pad[..np], &icrc[..]].concat();
    for _ in 0..c.count {
        sock.send_to(&pkt, SocketAddr::new(c.dst, roce::ROCE_PORT))
            .map_err(|e| format!("send: {e}"))?;
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = parse(&args).and_then(|c| send(&c)) {
        eprintln!("roce_craft: {e}");
        std::process::exit(2);
    }
}
