//! Starting the agent from an application: a double fork, `setsid`, then
//! `execve` of the program, so that the agent is neither the application's
//! child (no zombie, no `SIGCHLD` for it) nor in its process group or
//! session (a terminal's `^C` or a job-control stop of the application's
//! group does not reach it).
//!
//! The application may be multi-threaded: between `fork` and `execve` the
//! children call only async-signal-safe functions on memory prepared
//! before the fork.  The agent gets:
//!
//! * descriptors 0, 1 and 2 on `/dev/null` (a daemon that kept the
//!   application's stdout or stderr would keep a pipe reader such as
//!   `cmd | tee` waiting until the agent exits), descriptor 3 the write end
//!   of the *ready pipe*, and no other descriptor of the application (all
//!   are closed, close-on-exec or not);
//! * an empty signal mask and every signal's default action (an ignored
//!   signal stays ignored across `execve` otherwise);
//! * `/` as its working directory (it holds no mount busy);
//! * of the application's environment only the `SWRDMA_*` variables (no
//!   `LD_PRELOAD`, no `LD_LIBRARY_PATH`).
//!
//! The agent writes one line into the ready pipe and closes it: `ready`
//! (it listens), `busy` (another agent holds the name: it lost a start race
//! and exited) or `error: <why>`; a failed `execve` writes `exec <errno>`.

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the ready pipe said.
#[derive(Debug, PartialEq, Eq)]
pub enum Said {
    /// The new agent listens.
    Ready,
    /// Another agent holds the name (the new one exited).
    Busy,
    /// `execve` failed with this errno.
    Exec(i32),
    /// The agent could not start: its words.
    Error(String),
    /// It closed the pipe without a word (it died).
    Nothing,
    /// No answer in time.
    Timeout,
}

/// The ready pipe's descriptor in the agent.
pub const READY_FD: i32 = 3;

/// Descriptors the children use are moved at or above this number first,
/// so the `dup2`s onto 0..=3 never overwrite one another.
const HIGH_FD: i32 = 10;

struct Prepared {
    path: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
}

fn prepare(program: &Path, args: &[String]) -> Option<Prepared> {
    let path = CString::new(program.as_os_str().as_bytes()).ok()?;
    let mut argv = vec![path.clone()];
    for a in args {
        argv.push(CString::new(a.as_str()).ok()?);
    }
    let envp = std::env::vars_os()
        .filter(|(k, _)| k.as_bytes().starts_with(b"SWRDMA_"))
        .filter_map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).ok()
        })
        .collect();
    Some(Prepared { path, argv, envp })
}

fn ptrs(v: &[CString]) -> Vec<*const libc::c_char> {
    v.iter()
        .map(|c| c.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// Starts `program` with `args` (the ready pipe's number is appended as
/// `--ready-fd 3`) and waits at most `wait` for its line.
pub fn start(program: &Path, args: &[String], wait: Duration) -> std::io::Result<Said> {
    use rustix::io::fcntl_dupfd_cloexec;
    let mut args = args.to_vec();
    args.extend(["--ready-fd".to_string(), READY_FD.to_string()]);
    let p = prepare(program, &args).ok_or_else(|| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let (argv, envp) = (ptrs(&p.argv), ptrs(&p.envp));
    let (r, w_low) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let w = fcntl_dupfd_cloexec(&w_low, HIGH_FD)?;
    drop(w_low);
    let null_low = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let null = fcntl_dupfd_cloexec(&null_low, HIGH_FD)?;
    drop(null_low);
    // SAFETY: the child runs only `child` (async-signal-safe calls on the
    // memory prepared above, which stays valid in the child's copy) and
    // ends in `_exit` or `execve`; the parent continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the child of a fork, as `child` requires.
        unsafe { child(&p.path, &argv, &envp, null.as_raw_fd(), w.as_raw_fd()) }
    }
    drop(w);
    drop(null);
    let mut status = 0;
    // SAFETY: waits for our own child (it exits at once); ECHILD when the
    // application ignores SIGCHLD or reaped it first, which is fine.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    Ok(read_said(r, wait))
}

/// The first and the second child.  Never returns.
///
/// # Safety
/// Only in the child of `fork`, with `argv`/`envp` null-terminated arrays
/// of live C strings and `null`, `w` open descriptors at or above `HIGH_FD`.
unsafe fn child(path: &CString, argv: &[*const libc::c_char], envp: &[*const libc::c_char], null: i32, w: i32) -> ! {
    // SAFETY: async-signal-safe system calls on descriptors and memory
    // that are valid in this process; the pointers outlive the calls (the
    // parent's memory, copied by fork).
    unsafe {
        libc::setsid();
        match libc::fork() {
            0 => {}
            p => libc::_exit(if p < 0 { 1 } else { 0 }),
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        for sig in 1..libc::SIGRTMAX() {
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        libc::dup2(w, READY_FD);
        if libc::syscall(libc::SYS_close_range, READY_FD + 1, u32::MAX, 0) != 0 {
            for fd in READY_FD + 1..65536 {
                libc::close(fd);
            }
        }
        libc::chdir(c"/".as_ptr());
        libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
        let e = *libc::__errno_location();
        let mut msg = *b"exec 0000000000\n";
        let mut n = e.unsigned_abs();
        for i in (5..15).rev() {
            msg[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        libc::write(READY_FD, msg.as_ptr().cast(), msg.len());
        libc::_exit(127)
    }
}

/// Reads the ready pipe's line (or to its end, or until `wait`).
fn read_said(r: OwnedFd, wait: Duration) -> Said {
    let end = Instant::now() + wait;
    let mut got = Vec::new();
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Said::Timeout;
        }
        let t = Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: left.subsec_nanos() as i64,
        };
        let mut pfd = [PollFd::new(&r, PollFlags::IN)];
        match poll(&mut pfd, Some(&t)) {
            Ok(0) => return Said::Timeout,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return Said::Nothing,
        }
        let mut b = [0u8; 512];
        match rustix::io::read(&r, &mut b) {
            Ok(0) => break,
            // A whole line is the answer: no need for the end of the
            // pipe, which a child forked meanwhile by another thread of the
            // application may hold open until its own exec or exit.
            Ok(n) if got.len() < 4096 => {
                got.extend_from_slice(&b[..n]);
                if got.contains(&b'\n') {
                    break;
                }
            }
            Ok(_) => break,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    parse_said(&got)
}

fn parse_said(b: &[u8]) -> Said {
    let s = String::from_utf8_lossy(b);
    let line = s.lines().next().unwrap_or("").trim();
    if line == "ready" {
        Said::Ready
    } else if line == "busy" {
        Said::Busy
    } else if let Some(e) = line.strip_prefix("exec ") {
        Said::Exec(e.trim().parse().unwrap_or(0))
    } else if let Some(e) = line.strip_prefix("error: ") {
        Said::Error(e.to_string())
    } else if line.is_empty() {
        Said::Nothing
    } else {
        Said::Error(line.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_lines() {
        assert_eq!(parse_said(b"ready\n"), Said::Ready);
        assert_eq!(parse_said(b"busy\n"), Said::Busy);
        assert_eq!(parse_said(b"exec 0000000002\n"), Said::Exec(2));
        assert_eq!(
            parse_said(b"error: no interface 9\n"),
            Said::Error("no interface 9".into())
        );
        assert_eq!(parse_said(b""), Said::Nothing);
    }

    #[test]
    fn exec_failure_is_reported() {
        let said = start(Path::new("/nonexistent/swrdma-wired"), &[], Duration::from_secs(5)).unwrap();
        assert_eq!(said, Said::Exec(libc::ENOENT));
    }

    #[test]
    fn only_swrdma_variables_pass() {
        let p = prepare(Path::new("/bin/true"), &["--x".into()]).unwrap();
        assert_eq!(p.argv.len(), 2);
        assert!(p.envp.iter().all(|kv| kv.as_bytes().starts_with(b"SWRDMA_")));
    }
}
