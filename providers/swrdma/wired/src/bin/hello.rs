//! `swrdma-wired-hello`: a client of the agent for diagnosis and for the
//! crate's tests (README.md, "swrdma-wired-hello").  It connects to (or
//! starts) the agent of an interface, greets it and prints what it
//! answered, one `key=value` line; `error: <why>` and exit 1 when it
//! cannot.

use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use std::io::{BufRead, IoSlice, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::time::Duration;
use swrdma_wired::client::{self, Options, Target};
use swrdma_wired::proto::{self, Hello, Welcome};

const USAGE: &str = "usage: swrdma-wired-hello [--ifindex N] [--scope S] [--idle-ms M] [--program P] [--wait-ms W]
    [--hold] [--query] [--nondumpable] [--fork-holder]
    [--name-uid U (--raw-version V | --raw-nofds | --squat | --squat-garbage)]";

#[derive(Default)]
struct Args {
    target: Target,
    opts: Options,
    name_uid: Option<u32>,
    hold: bool,
    query: bool,
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
    let s = if let Some(u) = a.name_uid {
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
    let _ = std::io::stdout().flush();
    if a.hold {
        hold(s.fd(), async_r.as_fd());
    }
    Ok(())
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
