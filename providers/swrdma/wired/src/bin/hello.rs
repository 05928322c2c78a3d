//! `swrdma-wired-hello`: a client of the agent for diagnosis and for the
//! crate's tests (README.md, "swrdma-wired-hello").  It connects to (or
//! starts) the agent of an interface, greets it and prints what it
//! answered, one `key=value` line; `error: <why>` and exit 1 when it
//! cannot.

use ibverbs_abi::verbs::{IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_WRITE};
use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use std::io::{BufRead, IoSlice, Write};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::time::Duration;
use swrdma_wired::client::{self, Options, Target};
use swrdma_wired::ctl::msg::{Caps, CreateCq, CreateQp, QpType, Queue, RegMr, Reply, Request};
use swrdma_wired::proto::{self, Hello, Welcome};
use swrdma_wired::wq::format::{recv_slot_size, send_slot_size, CQE_SLOT};
use swrdma_wired::wq::Slots;

const USAGE: &str = "usage: swrdma-wired-hello [--ifindex N] [--scope S] [--idle-ms M] [--program P] [--wait-ms W]
    [--hold] [--query] [--objects] [--nondumpable] [--fork-holder]
    [--name-uid U (--raw-version V | --raw-nofds | --squat | --squat-garbage)]";

#[derive(Default)]
struct Args {
    target: Target,
    opts: Options,
    name_uid: Option<u32>,
    hold: bool,
    query: bool,
    objects: bool,
    nondumpable: bool,
    fork_holder: bool,
    raw_version: Option<u16>,
    raw_nofds: bool,
    squat: bool,
    squat_garbage: bool,
}

fn parse() -> Result<Args, String> {
    // SAFETY: a NUL-terminated name; the call only reads it.
    let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
    let mut a = Args {
        target: Target::new(lo),
        ..Args::default()
    };
    a.opts.program = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.parent()?.join("swrdma-wired")))
        .filter(|p| p.exists())
        .or_else(client::agent_program);
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(k) = it.next() {
        let mut val = || it.next().cloned().ok_or_else(|| format!("{k} needs a value"));
        let bad = |_| format!("{k}: bad value");
        match k.as_str() {
            "--ifindex" => a.target.ifindex = val()?.parse().map_err(bad)?,
            "--scope" => a.target.scope = val()?,
            "--idle-ms" => a.opts.idle_ms = Some(val()?.parse().map_err(bad)?),
            "--program" => a.opts.program = Some(PathBuf::from(val()?)),
            "--wait-ms" => a.opts.wait = Duration::from_millis(val()?.parse().map_err(bad)?),
            "--name-uid" => a.name_uid = Some(val()?.parse().map_err(bad)?),
            "--raw-version" => a.raw_version = Some(val()?.parse().map_err(bad)?),
            "--hold" => a.hold = true,
            "--query" => a.query = true,
            "--objects" => a.objects = true,
            "--nondumpable" => a.nondumpable = true,
            "--fork-holder" => a.fork_holder = true,
            "--raw-nofds" => a.raw_nofds = true,
            "--squat" => a.squat = true,
            "--squat-garbage" => a.squat_garbage = true,
            _ => return Err(format!("unknown argument {k}\n{USAGE}")),
        }
    }
    Ok(a)
}

fn main() {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2)
        }
    };
    let r = if a.squat || a.squat_garbage {
        squat(&a)
    } else if a.raw_version.is_some() || a.raw_nofds {
        raw(&a)
    } else {
        session(&a)
    };
    if let Err(e) = r {
        println!("error: {e}");
        std::process::exit(1);
    }
}

fn name(a: &Args) -> Vec<u8> {
    match a.name_uid {
        Some(u) => proto::socket_name(u, a.target.ifindex, &a.target.scope),
        None => a.target.name(),
    }
}

/// Greets the agent with `client::connect_or_start` and prints the welcome.
fn session(a: &Args) -> Result<(), String> {
    if a.nondumpable {
        rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
            .map_err(|e| e.to_string())?;
    }
    let access = client::access_page().map_err(|e| e.to_string())?;
    let (async_r, async_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| e.to_string())?;
    let mut s = if let Some(u) = a.name_uid {
        // Another user's agent: connect only (never start one).
        let sock =
            client::dial(&proto::socket_name(u, a.target.ifindex, &a.target.scope)).map_err(|e| e.to_string())?;
        client::greet_on(sock, a.opts.wait, access.as_fd(), async_w.as_fd()).map_err(|e| e.to_string())?
    } else {
        client::connect_or_start(&a.target, &a.opts, access.as_fd(), async_w.as_fd()).map_err(|e| e.to_string())?
    };
    drop(async_w);
    println!(
        "agent_pid={} client_id={} started={} no_cma={} cma_errno={} ptracer={} pid={}",
        s.agent_pid,
        s.client_id,
        s.started as u8,
        s.no_cma as u8,
        s.cma_errno,
        s.ptracer_set as u8,
        std::process::id()
    );
    if a.fork_holder {
        // SAFETY: the child only sleeps (async-signal-safe) holding the
        // inherited connection until it is killed, then exits.
        match unsafe { libc::fork() } {
            // SAFETY: in the child of a fork: only async-signal-safe calls.
            0 => unsafe {
                libc::sleep(60);
                libc::_exit(0)
            },
            c => println!("holder={c}"),
        }
    }
    if a.query {
        let k = s.query(Duration::from_secs(5)).map_err(|e| e.to_string())?;
        println!(
            "clients={} welcomed={} refused={} exited={} no_cma={}",
            k.clients, k.welcomed, k.refused, k.exited, k.no_cma
        );
    }
    let _kept = if a.objects { Some(objects(&mut s)?) } else { None };
    let _ = std::io::stdout().flush();
    if a.hold {
        hold(s.fd(), async_r.as_fd());
    }
    Ok(())
}

/// What `--objects` made that must live while the session does: the
/// queues' mappings, the doorbell, the registered memory.
struct Kept {
    _queues: Vec<Slots>,
    _doorbell: OwnedFd,
    _memory: Vec<u8>,
}

/// `--objects`: a PD, a CQ (its CQE queue and a doorbell eventfd), an RC
/// QP on it (its SQ and RQ) and an MR on our own memory, through the
/// agent's control path; prints `objects pd= cq= qp= qpn= mr=`.
fn objects(s: &mut client::Session) -> Result<Kept, String> {
    let wait = Duration::from_secs(5);
    let mut call = |req: &Request, fds: &[BorrowedFd<'_>]| s.call(req, fds, wait).map_err(|e| e.to_string());
    let Reply::Pd { handle: pd } = call(&Request::AllocPd { parent: None }, &[])? else {
        return Err("alloc_pd failed".into());
    };
    let (cq_q, cq_fd) = Slots::create(64, CQE_SLOT).map_err(|e| e.to_string())?;
    let doorbell = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).map_err(|e| e.to_string())?;
    // (The user handles name the objects in our async events: libibverbs
    // gives the `ibv_cq *` and `ibv_qp *`; any values do here.)
    let c = CreateCq {
        user_handle: 0xC0,
        cqe: 64,
        queue: Queue {
            depth: 64,
            slot_size: CQE_SLOT as u32,
        },
        doorbell: true,
        channel: false,
    };
    let Reply::Cq { handle: cq, .. } = call(&Request::CreateCq(c), &[cq_fd.as_fd(), doorbell.as_fd()])? else {
        return Err("create_cq failed".into());
    };
    let sq_slot = send_slot_size(1, 256).ok_or("send slot size")?;
    let rq_slot = recv_slot_size(1).ok_or("receive slot size")?;
    let (sq_q, sq_fd) = Slots::create(16, sq_slot).map_err(|e| e.to_string())?;
    let (rq_q, rq_fd) = Slots::create(16, rq_slot).map_err(|e| e.to_string())?;
    let q = |slot: usize| Queue {
        depth: 16,
        slot_size: slot as u32,
    };
    let c = CreateQp {
        user_handle: 0x90,
        pd: Some(pd),
        xrcd: None,
        qp_type: QpType::Rc,
        send_cq: Some(cq),
        recv_cq: Some(cq),
        srq: None,
        sq_sig_all: false,
        cap: Caps {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        sq: Some(q(sq_slot)),
        rq: Some(q(rq_slot)),
    };
    let Reply::Qp { handle: qp, qpn, .. } = call(&Request::CreateQp(c), &[sq_fd.as_fd(), rq_fd.as_fd()])? else {
        return Err("create_qp failed".into());
    };
    let memory = vec![0u8; 1 << 16];
    let m = RegMr {
        pd,
        access: IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
        addr: memory.as_ptr() as u64,
        length: memory.len() as u64,
        iova: memory.as_ptr() as u64,
    };
    let Reply::Mr { handle: mr, .. } = call(&Request::RegMr(m), &[])? else {
        return Err("reg_mr failed".into());
    };
    println!("objects pd={pd} cq={cq} qp={qp} qpn={qpn} mr={mr}");
    Ok(Kept {
        _queues: vec![cq_q, sq_q, rq_q],
        _doorbell: doorbell,
        _memory: memory,
    })
}

/// Waits for a line (or the end) on stdin, or for the agent to go (then
/// prints `agent gone` and exits 3).
fn hold(sock: BorrowedFd<'_>, _async_r: BorrowedFd<'_>) {
    use rustix::event::{poll, PollFd, PollFlags};
    let stdin = std::io::stdin();
    let mut pfd = [PollFd::new(&stdin, PollFlags::IN), PollFd::new(&sock, PollFlags::IN)];
    loop {
        if poll(&mut pfd, None).is_err() {
            continue;
        }
        if !pfd[1].revents().is_empty() {
            println!("agent gone");
            std::process::exit(3);
        }
        if !pfd[0].revents().is_empty() {
            let _ = stdin.lock().read_line(&mut String::new());
            return;
        }
    }
}

/// A hand-made hello (another version, or no descriptors) on a plain
/// connection; prints the answer.
fn raw(a: &Args) -> Result<(), String> {
    let sock = client::dial(&name(a)).map_err(|e| format!("connect: {e}"))?;
    rustix::io::ioctl_fionbio(&sock, false).map_err(|e| e.to_string())?;
    let probe = Box::new(7u64);
    let mut b = Hello {
        pid: std::process::id(),
        flags: 0,
        probe_addr: &*probe as *const u64 as u64,
        probe_value: *probe,
    }
    .to_bytes();
    if let Some(v) = a.raw_version {
        b[4..6].copy_from_slice(&v.to_ne_bytes());
    }
    let access = client::access_page().map_err(|e| e.to_string())?;
    let (_r, w) = rustix::pipe::pipe().map_err(|e| e.to_string())?;
    let fds = [access.as_fd(), w.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    if !a.raw_nofds {
        cmsg.push(SendAncillaryMessage::ScmRights(&fds));
    }
    sendmsg(&sock, &[IoSlice::new(&b)], &mut cmsg, SendFlags::NOSIGNAL).map_err(|e| e.to_string())?;
    let mut m = vec![0u8; proto::MAX_MSG];
    let n = rustix::net::recv(&sock, &mut m, rustix::net::RecvFlags::empty())
        .map_err(|e| e.to_string())?
        .0;
    let (h, w) = Welcome::parse(&m[..n]).ok_or("no welcome nor refusal")?;
    println!("kind={} status={} text={}", h.kind, w.status, w.text);
    Ok(())
}

/// Holds the agent's name without being an agent: listens and, with
/// `--squat-garbage`, answers every connection with bytes that are no
/// message of the protocol.  Prints `squatting`, then waits for stdin.
fn squat(a: &Args) -> Result<(), String> {
    use rustix::net::{bind, listen, socket_with, AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let addr = SocketAddrUnix::new_abstract_name(&name(a)).map_err(|e| e.to_string())?;
    let l = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
        .map_err(|e| e.to_string())?;
    bind(&l, &addr).map_err(|e| format!("bind: {e}"))?;
    listen(&l, 16).map_err(|e| e.to_string())?;
    println!("squatting");
    let _ = std::io::stdout().flush();
    if a.squat_garbage {
        std::thread::spawn(move || {
            let mut keep = Vec::new();
            while let Ok(c) = rustix::net::accept(&l) {
                let _ = rustix::net::send(&c, b"not the protocol", SendFlags::NOSIGNAL);
                keep.push(c);
            }
        });
    } else {
        std::mem::forget(l);
    }
    let _ = std::io::stdin().lock().read_line(&mut String::new());
    Ok(())
}
