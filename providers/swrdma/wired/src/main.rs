//! The `swrdma-wired` program (README.md, "The program").

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use swrdma_wired::agent::{parse_args, Agent};

/// Writes the start's outcome into the ready pipe (or, run by hand, to
/// stderr) and closes the pipe.
fn say(ready: Option<OwnedFd>, line: &str) {
    match ready {
        Some(fd) => {
            let mut f = std::fs::File::from(fd);
            let _ = writeln!(f, "{line}");
        }
        None => eprintln!("swrdma-wired: {line}"),
    }
}

/// The agent is background work for the processes it serves: it runs as
/// `SCHED_BATCH` (allowed to any user, same nice value), so that its
/// wake-ups (a MAD in from the wire or from a process) do not preempt the
/// application threads running where it wakes; it runs when that CPU has
/// room or the running thread's slice ends (about a millisecond at worst
/// on a CPU that stays busy, well inside the CM's timeouts of seconds).
/// Under load that lets it take its queued datagrams in one go rather
/// than one per preemption: `cmtime -c 200` on `rw0` between two network
/// namespaces on 2 CPUs, each end pinned to a CPU with its agent, 170-204
/// -> 123-141 us per connection (three runs each).  A failure (a seccomp
/// filter) leaves the default policy.
fn batch_policy() {
    let sp = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler on ourselves with a valid sched_param.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &sp) };
}

/// The CPUs the agent runs on.  It serves every process of its user on its
/// interface, so it does not keep the CPU affinity of the application that
/// happened to start it (a program pinned to one CPU would put every other
/// process's wire traffic on that CPU): all CPUs, as far as its cpuset
/// allows them (the kernel takes the intersection), or those listed in
/// `SWRDMA_WIRED_CPUS` ("0", "2-3,6": the `taskset -c` form).  An
/// unreadable list or a refusal leaves the inherited affinity.
fn cpus() {
    let want = std::env::var("SWRDMA_WIRED_CPUS").ok();
    let list = match want.as_deref().map(str::trim) {
        Some(l) if !l.is_empty() => match swrdma_wired::agent::parse_cpu_list(l) {
            Some(v) => v,
            None => {
                eprintln!("swrdma-wired: SWRDMA_WIRED_CPUS={l:?} is not a CPU list; keeping the inherited CPUs");
                return;
            }
        },
        _ => (0..libc::CPU_SETSIZE as usize).collect(),
    };
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET within its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in list.into_iter().filter(|&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `c` is within the set's size (filtered).
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: our own thread, a valid set of its size.
    let _ = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let idle = std::env::var("SWRDMA_WIRED_IDLE_MS").ok();
    let cfg = match parse_args(&args, idle.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "swrdma-wired: {e}\nusage: swrdma-wired --ifindex N [--scope S] [--idle-ms M] [--ready-fd F] [--dir D]"
            );
            std::process::exit(2);
        }
    };
    // (An agent that carries data keeps the normal policy: a batch task
    // waits for the running slice of a spinning application before each
    // wake-up, about a millisecond per hand-off; HOSTWIRE-DESIGN.md risk 4.)
    if cfg.dir.is_none() {
        batch_policy();
    }
    cpus();
    // SAFETY: the spawner opened this descriptor for us (the ready pipe's
    // write end) and nothing else in this process owns it.
    let ready = cfg
        .ready_fd
        .filter(|&fd| fd >= 0)
        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    match Agent::new(cfg) {
        Ok(mut a) => {
            say(ready, "ready");
            a.run();
        }
        Err(None) => say(ready, "busy"),
        Err(Some(why)) => {
            say(ready, &format!("error: {why}"));
            std::process::exit(1);
        }
    }
}
