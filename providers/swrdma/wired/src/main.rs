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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let idle = std::env::var("SWRDMA_WIRED_IDLE_MS").ok();
    let cfg = match parse_args(&args, idle.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("swrdma-wired: {e}\nusage: swrdma-wired --ifindex N [--scope S] [--idle-ms M] [--ready-fd F]");
            std::process::exit(2);
        }
    };
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
