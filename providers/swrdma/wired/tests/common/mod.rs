//! What the tests that run the real programs share: the programs, a
//! private scope per test, `swrdma-wired-hello` clients, and looking at
//! processes.  (Each test file uses a part of it.)
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const AGENT: &str = env!("CARGO_BIN_EXE_swrdma-wired");
pub const HELLO: &str = env!("CARGO_BIN_EXE_swrdma-wired-hello");
pub const NOBODY: u32 = 65534;

pub fn scope(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("t{}-{tag}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

pub fn root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A `swrdma-wired-hello` for `scope` (agent idle time 2 s unless given).
pub fn hello(scope: &str, args: &[&str]) -> Command {
    let mut c = Command::new(HELLO);
    c.args(["--scope", scope, "--program", AGENT]);
    if !args.contains(&"--idle-ms") {
        c.args(["--idle-ms", "2000"]);
    }
    c.args(args)
        .env_remove("SWRDMA_WIRED_IDLE_MS")
        .env_remove("SWRDMA_WIRED_SCOPE");
    c
}

pub fn as_nobody(c: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    c.uid(NOBODY).gid(NOBODY)
}

/// The `key=value` pairs of a line.
pub fn kv(line: &str) -> HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// Runs a client to its end; its output.
pub fn run(c: &mut Command) -> String {
    let o = c.output().expect("run swrdma-wired-hello");
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// The first line (the welcome) of a client's output.
pub fn welcome(out: &str) -> HashMap<String, String> {
    let m = kv(out.lines().next().unwrap_or(""));
    assert!(m.contains_key("agent_pid"), "no welcome: {out}");
    m
}

/// A client that holds its session until its stdin closes.
pub struct Holder {
    pub child: Child,
    pub out: BufReader<ChildStdout>,
}

impl Holder {
    pub fn start(c: &mut Command) -> Holder {
        let mut child = c
            .arg("--hold")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Holder { child, out }
    }
    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.out.read_line(&mut l).unwrap();
        l
    }
    /// Closes stdin: the client ends its session and exits.
    pub fn release(mut self) -> std::process::ExitStatus {
        drop(self.child.stdin.take());
        self.child.wait().unwrap()
    }
}

pub fn alive(pid: u32) -> bool {
    // A zombie no one reaped yet counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

pub fn wait_gone(pid: u32, within: Duration) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

pub fn kill(pid: u32, sig: i32) {
    // SAFETY: sends a signal; no memory is involved.
    unsafe { libc::kill(pid as i32, sig) };
}

/// Fields 4 (ppid), 5 (pgrp), 6 (session) of /proc/<pid>/stat.
pub fn ids(pid: u32) -> (u32, u32, u32) {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<u32> = s[s.rfind(')').unwrap() + 2..]
        .split(' ')
        .skip(1)
        .take(3)
        .map(|x| x.parse().unwrap())
        .collect();
    (f[0], f[1], f[2])
}

/// Running `swrdma-wired` processes of `scope`.
pub fn agents_of(scope: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmd.split(|&b| b == 0).collect();
        let ours = args.first().is_some_and(|a| a.ends_with(b"swrdma-wired"))
            && args.windows(2).any(|w| w[0] == b"--scope" && w[1] == scope.as_bytes());
        if ours && alive(pid) {
            v.push(pid);
        }
    }
    v
}

/// The agent's counters, as a new client sees them (itself included).
pub fn counters(scope: &str) -> HashMap<String, String> {
    let out = run(&mut hello(scope, &["--query"]));
    kv(out.lines().nth(1).unwrap_or_else(|| panic!("no counters: {out}")))
}

pub fn stop_agent(pid: u32) {
    kill(pid, libc::SIGKILL);
    assert!(wait_gone(pid, Duration::from_secs(5)));
}

/// A CQ of 64 of a client's (`user_handle`), with its CQE queue (our half:
/// the `Slots`, whose descriptor goes with the request) and a doorbell
/// eventfd when `doorbell`.
pub fn cq_request(
    user_handle: u64,
    doorbell: bool,
) -> (
    swrdma_wired::ctl::msg::CreateCq,
    swrdma_wired::wq::Slots,
    std::os::fd::OwnedFd,
    std::os::fd::OwnedFd,
) {
    use swrdma_wired::ctl::msg::{CreateCq, Queue};
    use swrdma_wired::wq::format::CQE_SLOT;
    let (q, fd) = swrdma_wired::wq::Slots::create(64, CQE_SLOT).unwrap();
    let bell = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).unwrap();
    let c = CreateCq {
        user_handle,
        cqe: 64,
        queue: Queue {
            depth: 64,
            slot_size: CQE_SLOT as u32,
        },
        doorbell,
        channel: false,
    };
    (c, q, fd, bell)
}

/// An RC QP of a client's (`user_handle`) on `pd` and `cq` (both queues'
/// completions), 16 WRs and 1 SGE each way, with its SQ and RQ (our halves,
/// and the descriptors that go with the request, in its order).  The agent
/// grants 256 inline bytes: the SQ's slots are sized for them.
pub fn rc_qp_request(
    user_handle: u64,
    pd: u32,
    cq: u32,
) -> (
    swrdma_wired::ctl::msg::CreateQp,
    [(swrdma_wired::wq::Slots, std::os::fd::OwnedFd); 2],
) {
    qp_request(swrdma_wired::ctl::msg::QpType::Rc, user_handle, pd, cq)
}

/// A QP of type `qp_type` (RC, UC or UD: one with both queues), as
/// [`rc_qp_request`] makes an RC one.
pub fn qp_request(
    qp_type: swrdma_wired::ctl::msg::QpType,
    user_handle: u64,
    pd: u32,
    cq: u32,
) -> (
    swrdma_wired::ctl::msg::CreateQp,
    [(swrdma_wired::wq::Slots, std::os::fd::OwnedFd); 2],
) {
    use swrdma_wired::ctl::msg::{Caps, CreateQp, Queue};
    use swrdma_wired::wq::format::{recv_slot_size, send_slot_size};
    let (sq_slot, rq_slot) = (send_slot_size(1, 256).unwrap(), recv_slot_size(1).unwrap());
    let sq = swrdma_wired::wq::Slots::create(16, sq_slot).unwrap();
    let rq = swrdma_wired::wq::Slots::create(16, rq_slot).unwrap();
    let q = |slot: usize| Queue {
        depth: 16,
        slot_size: slot as u32,
    };
    let c = CreateQp {
        user_handle,
        pd: Some(pd),
        xrcd: None,
        qp_type,
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
    (c, [sq, rq])
}
