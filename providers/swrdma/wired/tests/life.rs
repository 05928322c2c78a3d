//! The agent's life, with the real programs: `swrdma-wired` started on
//! demand by `swrdma-wired-hello` clients, each test in a scope of its own
//! (a private agent name), idle times short so that no agent stays.
//! Tests that need a second user run it as uid 65534 when we are root;
//! otherwise they say SKIP on stderr and test what one user can.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

mod common;
use common::*;

#[test]
fn started_on_demand_detached_and_clean() {
    let s = scope("start");
    let out = run(hello(&s, &[])
        .env("SWRDMA_WIRED_TEST", "kept")
        .env("NOT_SWRDMA", "dropped"));
    let w = welcome(&out);
    assert_eq!(
        (w["started"].as_str(), w["no_cma"].as_str(), w["cma_errno"].as_str()),
        ("1", "0", "0")
    );
    let agent: u32 = w["agent_pid"].parse().unwrap();
    let (ppid, pgrp, sid) = ids(agent);
    let (_, my_pgrp, my_sid) = ids(std::process::id());
    assert_ne!(ppid, std::process::id(), "the agent is not our child");
    assert!(pgrp != my_pgrp && sid != my_sid, "own session (setsid): {pgrp} {sid}");
    // Descriptors: 0-2 on /dev/null, no ready pipe, nothing of the client.
    // (Once it has dropped the client, which has exited: no pidfd left.)
    let fds_of = || {
        let mut fds = HashMap::new();
        for e in std::fs::read_dir(format!("/proc/{agent}/fd")).unwrap().flatten() {
            let Ok(t) = std::fs::read_link(e.path()) else { continue };
            fds.insert(
                e.file_name().to_string_lossy().parse::<u32>().unwrap(),
                t.to_string_lossy().into_owned(),
            );
        }
        fds
    };
    let end = Instant::now() + Duration::from_secs(5);
    let mut fds = fds_of();
    while fds.values().any(|t| t.contains("pidfd")) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
        fds = fds_of();
    }
    for fd in 0..3 {
        assert_eq!(fds[&fd], "/dev/null", "fd {fd}: {fds:?}");
    }
    assert!(!fds.values().any(|t| t.starts_with("pipe:")), "a pipe is open: {fds:?}");
    let env = std::fs::read(format!("/proc/{agent}/environ")).unwrap();
    let env: Vec<&[u8]> = env.split(|&b| b == 0).filter(|v| !v.is_empty()).collect();
    assert!(env.iter().all(|v| v.starts_with(b"SWRDMA_")), "environment: {env:?}");
    assert!(env.contains(&&b"SWRDMA_WIRED_TEST=kept"[..]));
    assert_eq!(
        std::fs::read_link(format!("/proc/{agent}/cwd")).unwrap(),
        std::path::Path::new("/")
    );
    // The next client finds it running.
    let w2 = welcome(&run(&mut hello(&s, &[])));
    assert_eq!(
        (w2["agent_pid"].parse::<u32>().unwrap(), w2["started"].as_str()),
        (agent, "0")
    );
    assert_ne!(w2["client_id"], w["client_id"]);
    stop_agent(agent);
}

#[test]
fn ten_clients_at_once_start_one_agent() {
    for round in 0..3 {
        let s = scope(&format!("race{round}"));
        let mut hs: Vec<Holder> = (0..10).map(|_| Holder::start(&mut hello(&s, &[]))).collect();
        let ws: Vec<_> = hs.iter_mut().map(|h| welcome(&h.line())).collect();
        let pids: Vec<&String> = ws.iter().map(|w| &w["agent_pid"]).collect();
        assert!(pids.iter().all(|p| *p == pids[0]), "round {round}: agents {pids:?}");
        assert_eq!(ws.iter().filter(|w| w["started"] == "1").count(), 1, "round {round}");
        let agent: u32 = pids[0].parse().unwrap();
        // (A loser of the race exits right after saying "busy".)
        let end = Instant::now() + Duration::from_secs(5);
        while agents_of(&s).len() > 1 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(agents_of(&s), vec![agent], "round {round}: one agent process");
        assert_eq!(counters(&s)["clients"], "11");
        for h in hs {
            assert!(h.release().success());
        }
        assert_eq!(counters(&s)["clients"], "1", "the 10 sessions ended");
        stop_agent(agent);
    }
}

#[test]
fn idle_exit_only_without_clients() {
    let s = scope("idle");
    let mut h = Holder::start(&mut hello(&s, &["--idle-ms", "300"]));
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    assert!(alive(agent), "a client holds it");
    assert!(h.release().success());
    let t = Instant::now();
    assert!(wait_gone(agent, Duration::from_secs(5)), "idle exit");
    assert!(
        t.elapsed() >= Duration::from_millis(250),
        "not before its idle time: {:?}",
        t.elapsed()
    );
    // Its name went with it: the next client starts another.
    let w = welcome(&run(&mut hello(&s, &["--idle-ms", "300"])));
    assert_eq!(w["started"], "1");
    assert_ne!(w["agent_pid"].parse::<u32>().unwrap(), agent);
    assert!(wait_gone(w["agent_pid"].parse().unwrap(), Duration::from_secs(5)));
}

#[test]
fn killed_agent_is_noticed_and_restarted() {
    let s = scope("kill");
    let mut h = Holder::start(&mut hello(&s, &[]));
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    kill(agent, libc::SIGKILL);
    assert_eq!(h.line().trim(), "agent gone", "the session sees the agent's death");
    assert_eq!(h.child.wait().unwrap().code(), Some(3));
    let w = welcome(&run(&mut hello(&s, &[])));
    assert_eq!(w["started"], "1", "a new agent");
    let again: u32 = w["agent_pid"].parse().unwrap();
    assert_ne!(again, agent);
    stop_agent(again);
}

#[test]
fn stopped_agent_does_not_hang_a_client() {
    let s = scope("stop");
    let w = welcome(&run(&mut hello(&s, &[])));
    let agent: u32 = w["agent_pid"].parse().unwrap();
    kill(agent, libc::SIGSTOP);
    let t = Instant::now();
    let out = run(&mut hello(&s, &["--wait-ms", "500"]));
    let took = t.elapsed();
    kill(agent, libc::SIGCONT);
    assert!(out.contains("did not answer in 500ms"), "{out}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    // Continued, it serves again.
    let w2 = welcome(&run(&mut hello(&s, &[])));
    assert_eq!(w2["agent_pid"].parse::<u32>().unwrap(), agent);
    stop_agent(agent);
}

#[test]
fn dead_client_dropped_by_pidfd_though_a_child_holds_its_socket() {
    let s = scope("pidfd");
    let mut h = Holder::start(&mut hello(&s, &["--fork-holder"]));
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    let holder: u32 = kv(&h.line())["holder"].parse().unwrap();
    kill(h.child.id(), libc::SIGKILL);
    h.child.wait().unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    let mut k = counters(&s);
    while k["exited"] != "1" && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
        k = counters(&s);
    }
    assert!(alive(holder), "the child still holds the connection");
    assert_eq!((k["exited"].as_str(), k["clients"].as_str()), ("1", "1"), "{k:?}");
    kill(holder, libc::SIGKILL);
    stop_agent(agent);
}

#[test]
fn malformed_hellos_refused_agent_unharmed() {
    let s = scope("bad");
    let mut h = Holder::start(&mut hello(&s, &[]));
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    let other = (swrdma_wired::proto::VERSION + 1).to_string();
    let v2 = kv(&run(&mut hello(&s, &["--raw-version", &other])));
    assert_eq!(
        (v2["kind"].as_str(), v2["status"].as_str()),
        ("3", "71"),
        "EPROTO: {v2:?}"
    );
    let nofds = run(&mut hello(&s, &["--raw-nofds"]));
    assert!(
        nofds.contains("status=22") && nofds.contains("2 descriptors"),
        "{nofds}"
    );
    let k = counters(&s);
    assert_eq!((k["refused"].as_str(), k["clients"].as_str()), ("2", "2"), "{k:?}");
    assert!(h.release().success());
    stop_agent(agent);
}

#[test]
fn start_failures_are_reported() {
    let s = scope("fail");
    let t = Instant::now();
    let out = run(&mut hello(&s, &["--ifindex", "999999"]));
    assert!(
        out.contains("error:") && out.contains("no interface of index 999999"),
        "{out}"
    );
    let out = run(hello(&s, &[]).args(["--program", "/nonexistent/swrdma-wired"]));
    assert!(
        out.contains("cannot run /nonexistent/swrdma-wired") && out.contains("No such file"),
        "{out}"
    );
    assert!(t.elapsed() < Duration::from_secs(3), "at once, not by a timeout");
    assert!(agents_of(&s).is_empty());
}

#[test]
fn squatted_name_refused() {
    // Our own uid, a process that is no agent: a protocol error.
    let s = scope("squat");
    let mut sq = Holder::start(&mut hello(&s, &["--squat-garbage"]));
    assert_eq!(sq.line().trim(), "squatting");
    let out = run(&mut hello(&s, &[]));
    assert!(out.contains("error: swrdma-wired: protocol"), "{out}");
    assert!(sq.release().success());
    if !root() {
        eprintln!("SKIP squatted_name_refused (another uid): not root");
        return;
    }
    // Another user holds our name: refused, and said so.
    let s = scope("squat-other");
    let uid = rustix::process::geteuid().as_raw().to_string();
    let mut sq = Holder::start(as_nobody(&mut hello(&s, &["--squat", "--name-uid", &uid])));
    assert_eq!(sq.line().trim(), "squatting");
    let out = run(&mut hello(&s, &[]));
    assert!(
        out.contains("is held by process") && out.contains(&format!("of uid {NOBODY}")),
        "{out}"
    );
    assert!(sq.release().success());
}

#[test]
fn another_uid_refused_both_ways() {
    if !root() {
        eprintln!("SKIP another_uid_refused_both_ways: not root (needs a second uid)");
        return;
    }
    let s = scope("uid");
    let mut h = Holder::start(&mut hello(&s, &[]));
    let agent: u32 = welcome(&h.line())["agent_pid"].parse().unwrap();
    // The agent refuses a client of another uid ...
    let v = swrdma_wired::proto::VERSION.to_string();
    let out = run(as_nobody(&mut hello(&s, &["--raw-version", &v, "--name-uid", "0"])));
    assert!(
        out.contains("status=13") && out.contains(&format!("uid {NOBODY} may not use")),
        "{out}"
    );
    // ... and a client refuses an agent of another uid.
    let out = run(as_nobody(&mut hello(&s, &["--name-uid", "0"])));
    assert!(out.contains("is held by process") && out.contains("of uid 0"), "{out}");
    let k = counters(&s);
    assert_eq!((k["refused"].as_str(), k["welcomed"].as_str()), ("2", "2"), "{k:?}");
    assert!(h.release().success());
    stop_agent(agent);
}

#[test]
fn cma_probe_decides_no_cma() {
    // As root, the clients and their agent run as uid 65534: root's
    // CAP_SYS_PTRACE would pass the kernel's checks.
    let s = scope("cma");
    let mk = |extra: &[&str]| {
        let mut c = hello(&s, extra);
        if root() {
            as_nobody(&mut c);
        }
        c
    };
    let mut dumpable = Holder::start(&mut mk(&[]));
    let w = welcome(&dumpable.line());
    assert_eq!((w["no_cma"].as_str(), w["cma_errno"].as_str()), ("0", "0"), "{w:?}");
    let nd = welcome(&run(&mut mk(&["--nondumpable"])));
    assert_eq!(nd["agent_pid"], w["agent_pid"]);
    assert_eq!(
        (nd["no_cma"].as_str(), nd["cma_errno"].as_str()),
        ("1", "1"),
        "EPERM: {nd:?}"
    );
    let out = run(&mut mk(&["--query"]));
    assert_eq!(kv(out.lines().nth(1).unwrap())["no_cma"], "1", "{out}");
    // Yama 1: the client names the agent its ptracer (never "any").
    let yama = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok();
    let want = if yama.as_deref().map(str::trim) == Some("1") {
        "1"
    } else {
        "0"
    };
    assert_eq!(w["ptracer"], want, "yama {yama:?}");
    let agent: u32 = w["agent_pid"].parse().unwrap();
    dumpable.child.stdin.take().unwrap().write_all(b"\n").unwrap();
    assert!(dumpable.child.wait().unwrap().success());
    stop_agent(agent);
}

/// The lowest descriptor number process `pid` has free.
fn lowest_free_fd(pid: u32) -> u64 {
    let used: std::collections::HashSet<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    (0..).find(|n| !used.contains(n)).unwrap()
}

/// The open descriptors of process `pid`.
fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count()
}

/// The CPU time process `pid` has used (user and system), in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields 14 and 15 (utime, stime): the 12th and 13th after the name.
    let f: Vec<u64> = s[s.rfind(')').unwrap() + 2..]
        .split(' ')
        .skip(11)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    // SAFETY: sysconf reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (f[0] + f[1]) as f64 / hz
}

#[test]
fn full_descriptor_table_refuses_at_once_without_spinning() {
    use rustix::process::{prlimit, Pid, Resource, Rlimit};
    use swrdma_wired::proto::{self, kind, Welcome};
    let s = scope("emfile");
    let log = std::env::temp_dir().join(format!("{s}.log"));
    let mut a = Holder::start(hello(&s, &[]).env("SWRDMA_WIRED_LOG", &log));
    let w = welcome(&a.line());
    let agent: u32 = w["agent_pid"].parse().unwrap();
    let mut b = Holder::start(&mut hello(&s, &[]));
    welcome(&b.line());
    // The agent's table is full: its limit at its lowest free descriptor
    // (soft and hard: it raises its soft limit only at start).
    let full = lowest_free_fd(agent);
    let lim = Rlimit {
        current: Some(full),
        maximum: Some(full),
    };
    prlimit(Pid::from_raw(agent as i32), Resource::Nofile, lim).unwrap();
    let fds = fd_count(agent);
    // SAFETY: a NUL-terminated name; the call only reads it.
    let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
    let name = proto::socket_name(rustix::process::geteuid().as_raw(), lo, &s);
    // For about a second, connections come: each is refused at once
    // (EMFILE), and the agent does not spin meanwhile.
    let cpu = cpu_secs(agent);
    let t = Instant::now();
    let mut refused = 0;
    while t.elapsed() < Duration::from_secs(1) {
        let sock = swrdma_wired::client::dial(&name).expect("the listener takes the connection");
        let mut pfd = [rustix::event::PollFd::new(&sock, rustix::event::PollFlags::IN)];
        let half = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 500_000_000,
        };
        assert_eq!(
            rustix::event::poll(&mut pfd, Some(&half)).unwrap(),
            1,
            "no answer in 0.5 s"
        );
        let mut m = [0u8; proto::MAX_MSG];
        let (n, _) = rustix::net::recv(&sock, &mut m, rustix::net::RecvFlags::DONTWAIT).unwrap();
        let (h, r) = Welcome::parse(&m[..n]).expect("a refusal");
        assert_eq!((h.kind, r.status), (kind::REFUSED, libc::EMFILE as u32), "{}", r.text);
        refused += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    // A real client is told at once too.
    let t1 = Instant::now();
    let out = run(&mut hello(&s, &["--wait-ms", "3000"]));
    assert!(t1.elapsed() < Duration::from_secs(2), "{:?}: {out}", t1.elapsed());
    assert!(
        out.contains("Too many open files") || out.contains("closed every connection before its welcome"),
        "{out}"
    );
    let (used, wall) = (cpu_secs(agent) - cpu, t.elapsed().as_secs_f64());
    assert!(used < 0.25 * wall, "the agent used {used} s of CPU in {wall} s");
    assert!(refused >= 10, "{refused} connections refused");
    // The clients leave: the next is welcomed by the same agent.
    assert!(a.release().success() && b.release().success());
    let end = Instant::now() + Duration::from_secs(5);
    while fd_count(agent) + 6 > fds && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    let w2 = welcome(&run(&mut hello(&s, &[])));
    assert_eq!(w2["agent_pid"], w["agent_pid"]);
    let k = counters(&s);
    assert!(k["refused"].parse::<u32>().unwrap() >= refused, "{k:?}");
    // One log line for the storm, not one per connection.
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let lines = text.lines().filter(|l| l.contains("no descriptor free")).count();
    assert!((1..=2).contains(&lines), "{lines} lines:\n{text}");
    stop_agent(agent);
    let _ = std::fs::remove_file(&log);
}
