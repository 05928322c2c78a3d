//! The client side: find the agent of (this user, this network namespace,
//! an interface), start it when no one listens, check who answers, greet
//! it.  What the provider will call when a wire context opens (plan step 2).

use crate::ctl::msg::{self, MsgError, Reply, Request};
use crate::proto::{self, flag, hello_flag, kind, Counters, Hello, Welcome};
use crate::spawn::{self, Said};
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::io::Errno;
use rustix::net::{
    connect, recv, sendmsg, socket_with, AddressFamily, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How a process's wire contexts carry their QPs (`SWRDMA_WIRE_AGENT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireMode {
    /// `0`: in the process (its context's thread and sockets).
    Process,
    /// `1`: through the user's agent, and a context that cannot have one
    /// fails to open (`EIO`, said on stderr).
    Agent,
    /// Unset (or any other value): through the agent, or in the process
    /// where no agent can be had (one that cannot reach the process's
    /// memory, say).
    Prefer,
}

/// The mode `SWRDMA_WIRE_AGENT` asks for.
pub fn wire_mode() -> WireMode {
    mode_of(std::env::var("SWRDMA_WIRE_AGENT").ok().as_deref())
}

/// The mode of the variable's value `v` (None: unset).
pub fn mode_of(v: Option<&str>) -> WireMode {
    match v {
        Some("0") => WireMode::Process,
        Some("1") => WireMode::Agent,
        _ => WireMode::Prefer,
    }
}

/// Which agent: the interface (by index, in the caller's network
/// namespace) and an optional private scope (`proto::socket_name`).
#[derive(Clone, Debug, Default)]
pub struct Target {
    pub ifindex: u32,
    pub scope: String,
}

impl Target {
    /// The agent for interface `ifindex`, in the scope that
    /// `SWRDMA_WIRED_SCOPE` names (none when unset).
    pub fn new(ifindex: u32) -> Target {
        Target {
            ifindex,
            scope: std::env::var("SWRDMA_WIRED_SCOPE").unwrap_or_default(),
        }
    }

    /// The abstract socket name for our effective uid.
    pub fn name(&self) -> Vec<u8> {
        proto::socket_name(rustix::process::geteuid().as_raw(), self.ifindex, &self.scope)
    }
}

/// How to start an agent when none answers.
#[derive(Clone, Debug)]
pub struct Options {
    /// The program (None: [`agent_program`]).
    pub program: Option<PathBuf>,
    /// The new agent's idle time before it exits, in ms (None: its
    /// default, or `SWRDMA_WIRED_IDLE_MS` of the environment it inherits).
    pub idle_ms: Option<u64>,
    /// How long a start and a hello may take.
    pub wait: Duration,
    /// The user's private directory of endpoints (`userdir`) that a new
    /// agent joins as one more wire context (None: it carries no traffic).
    pub dir: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            program: None,
            idle_ms: None,
            wait: Duration::from_secs(5),
            dir: None,
        }
    }
}

/// Why there is no session.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// No program to start (no `SWRDMA_WIRED` and the provider's own path
    /// is unknown).
    NoProgram,
    /// `execve` of the program failed.
    Exec { program: PathBuf, errno: i32 },
    /// The agent started and gave up (its words).
    AgentFailed { program: PathBuf, text: String },
    /// Neither a ready line nor a connection in time.
    Timeout { program: PathBuf },
    /// The name is held by a process of another user: refused.
    Squatted { uid: u32, pid: i32 },
    /// The agent refused our hello.
    Refused { status: u32, text: String },
    /// The peer does not speak the protocol (or another version of it).
    Protocol(String),
    /// The agent did not answer in time (stopped, overwhelmed).
    Silent(Duration),
    /// A system call failed.
    Sys { what: &'static str, errno: i32 },
    /// Agents kept closing the connection before welcoming us (each was
    /// exiting, idle, as we came).
    GoneAway,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let os = |e: &i32| std::io::Error::from_raw_os_error(*e);
        match self {
            Error::NoProgram => write!(f, "swrdma-wired: the agent program is not found (set SWRDMA_WIRED)"),
            Error::Exec { program, errno } => {
                write!(f, "swrdma-wired: cannot run {}: {}", program.display(), os(errno))
            }
            Error::AgentFailed { program, text } => write!(f, "swrdma-wired: {} failed: {text}", program.display()),
            Error::Timeout { program } => write!(f, "swrdma-wired: {} did not answer in time", program.display()),
            Error::Squatted { uid, pid } => write!(
                f,
                "swrdma-wired: the agent's name is held by process {pid} of uid {uid}, not by us (uid {}): refused",
                rustix::process::geteuid().as_raw()
            ),
            Error::Refused { status, text } => {
                write!(
                    f,
                    "swrdma-wired: the agent refused us ({}): {text}",
                    os(&(*status as i32))
                )
            }
            Error::Protocol(t) => write!(f, "swrdma-wired: protocol: {t}"),
            Error::Silent(d) => write!(f, "swrdma-wired: the agent did not answer in {d:?} (stopped?)"),
            Error::Sys { what, errno } => write!(f, "swrdma-wired: {what}: {}", os(errno)),
            Error::GoneAway => write!(f, "swrdma-wired: the agent closed every connection before its welcome"),
        }
    }
}

impl std::error::Error for Error {}

fn sys(what: &'static str) -> impl Fn(Errno) -> Error {
    move |e| Error::Sys {
        what,
        errno: e.raw_os_error(),
    }
}

/// A greeted connection to the agent.
#[derive(Debug)]
pub struct Session {
    sock: OwnedFd,
    pub agent_pid: u32,
    pub client_id: u32,
    /// Cross-memory attach into us is refused (`cma_errno` says why).
    pub no_cma: bool,
    pub cma_errno: i32,
    /// The agent carries its clients' traffic (`flag::TRANSPORT`).
    pub transport: bool,
    /// We named the agent our ptracer (Yama `ptrace_scope` 1).
    pub ptracer_set: bool,
    /// We started this agent (it was not running).
    pub started: bool,
    /// The id of our next control request.
    next_req: u32,
}

impl Session {
    /// The connection (readable with a hang-up once the agent is gone).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// The agent's counters.
    pub fn query(&self, wait: Duration) -> Result<Counters, Error> {
        let b = proto::bare(kind::QUERY);
        rustix::net::send(&self.sock, &b, SendFlags::NOSIGNAL).map_err(sys("send"))?;
        let m = recv_msg(self.sock.as_fd(), wait)?;
        Counters::parse(&m).ok_or_else(|| Error::Protocol("not a COUNTERS message".into()))
    }

    /// Wakes the agent: a send queue of ours has entries and its consumer
    /// slept (`Producer::doorbell` said `Ring`).
    pub fn doorbell(&self) -> Result<(), Error> {
        let b = proto::bare(kind::DOORBELL);
        match rustix::net::send(&self.sock, &b, SendFlags::NOSIGNAL | SendFlags::DONTWAIT) {
            // (A full socket holds doorbells enough to wake it.)
            Ok(_) | Err(Errno::AGAIN) => Ok(()),
            Err(e) => Err(sys("send")(e)),
        }
    }

    /// A verb's control request (`ctl::msg`): sends `req` with its
    /// descriptors (as many as `Request::fd_count`, in its order) and
    /// waits at most `wait` for the agent's reply.  One request at a time
    /// (`&mut self`), so the reply is the request's.  `GoneAway`: the
    /// agent closed the connection (it does so to a client that breaks the
    /// protocol); `Protocol`: a request the encoding refuses, or a reply
    /// that is not the request's.
    pub fn call(&mut self, req: &Request, fds: &[BorrowedFd<'_>], wait: Duration) -> Result<Reply, Error> {
        let id = self.next_req;
        self.next_req = id.wrapping_add(1);
        let gone = |e: MsgError, what: &'static str| match e {
            MsgError::Closed | MsgError::Io(Errno::PIPE) | MsgError::Io(Errno::CONNRESET) => Error::GoneAway,
            MsgError::Io(e) => sys(what)(e),
            e => Error::Protocol(format!("{what}: {e}")),
        };
        msg::send_request(self.fd(), id, req, fds).map_err(|e| gone(e, "send"))?;
        let t = Timespec {
            tv_sec: wait.as_secs() as i64,
            tv_nsec: wait.subsec_nanos() as i64,
        };
        let mut pfd = [PollFd::new(&self.sock, PollFlags::IN)];
        loop {
            match poll(&mut pfd, Some(&t)) {
                Ok(0) => return Err(Error::Silent(wait)),
                Ok(_) => break,
                Err(Errno::INTR) => {}
                Err(e) => return Err(sys("poll")(e)),
            }
        }
        let (rid, rep) = msg::recv_reply(self.fd()).map_err(|e| gone(e, "recv"))?;
        if rid != id || !rep.answers(req.kind()) {
            return Err(Error::Protocol(format!("reply {rep:?} to request {rid}, not to {id}")));
        }
        Ok(rep)
    }
}

/// The agent program: `SWRDMA_WIRED`, or `../swrdma/swrdma-wired` from the
/// directory of the shared object holding this code (the provider in
/// `<libdir>/libibverbs/`, the agent in `<libdir>/swrdma/`; the same in
/// the build tree, `build/lib/`), or `swrdma/swrdma-wired` from there (the
/// `ucma` interposer in the build tree's `build/lib/`).
pub fn agent_program() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SWRDMA_WIRED") {
        return Some(PathBuf::from(p));
    }
    // SAFETY: dladdr reads the loader's tables for an address of our own
    // code and fills `info` (zeroed, plain data); `dli_fname` is then a C
    // string owned by the loader, valid while the object stays loaded.
    let fname = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(agent_program as *const () as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        std::ffi::CStr::from_ptr(info.dli_fname).to_bytes().to_vec()
    };
    let own = PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&fname));
    let dir = own.parent()?;
    // The provider sits in <libdir>/libibverbs/, the interposer in
    // <libdir>/swrdma/ (installed) or <libdir>/ (the build tree).
    let beside = [dir.join("../swrdma/swrdma-wired"), dir.join("swrdma/swrdma-wired")];
    Some(beside.iter().find(|p| p.exists()).unwrap_or(&beside[0]).clone())
}

/// An access page as the provider's `locks.rs` makes one (a sealed memfd
/// of [`proto::ACCESS_BYTES`] starting with [`proto::ACCESS_MAGIC`]), for
/// a client that has none of its own (the `ucma` interposer, the tests).
pub fn access_page() -> std::io::Result<OwnedFd> {
    use rustix::fs::{fcntl_add_seals, ftruncate, memfd_create, MemfdFlags, SealFlags};
    let fd = memfd_create(c"swrdma-access", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    ftruncate(&fd, proto::ACCESS_BYTES as u64)?;
    fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
    rustix::io::pwrite(&fd, &proto::ACCESS_MAGIC.to_ne_bytes(), 0)?;
    Ok(fd)
}

/// Yama's `ptrace_scope` (None: no Yama).
pub fn yama_scope() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Connects to the agent of `target`, starting it when no one listens,
/// and greets it with our access page and the write end of our async-event
/// pipe (the agent keeps its own copies of both).
pub fn connect_or_start(
    target: &Target,
    opts: &Options,
    access: BorrowedFd<'_>,
    async_w: BorrowedFd<'_>,
) -> Result<Session, Error> {
    if !proto::scope_ok(&target.scope) {
        return Err(Error::Protocol(format!("bad scope {:?}", target.scope)));
    }
    let name = target.name();
    let end = Instant::now() + opts.wait;
    let mut started = false;
    for _ in 0..8 {
        match dial(&name) {
            Ok(sock) => match greet_on(sock, opts.wait, access, async_w) {
                Err(Error::GoneAway) => continue,
                r => return r.map(|s| Session { started, ..s }),
            },
            Err(Errno::CONNREFUSED) | Err(Errno::NOENT) => {}
            Err(Errno::AGAIN) => return Err(Error::Silent(Duration::from_secs(1))),
            Err(e) => return Err(sys("connect")(e)),
        }
        let program = opts.program.clone().or_else(agent_program).ok_or(Error::NoProgram)?;
        let mut args = vec!["--ifindex".to_string(), target.ifindex.to_string()];
        if !target.scope.is_empty() {
            args.extend(["--scope".to_string(), target.scope.clone()]);
        }
        if let Some(d) = opts.dir.as_ref().and_then(|d| d.to_str()) {
            args.extend(["--dir".to_string(), d.to_string()]);
        }
        if let Some(ms) = opts.idle_ms {
            args.extend(["--idle-ms".to_string(), ms.to_string()]);
        }
        let wait = end.saturating_duration_since(Instant::now());
        match spawn::start(&program, &args, wait).map_err(|e| Error::Sys {
            what: "fork",
            errno: e.raw_os_error().unwrap_or(0),
        })? {
            Said::Ready => started = true,
            Said::Busy => {}
            Said::Nothing => {
                let text = "it exited without a word".to_string();
                return Err(Error::AgentFailed { program, text });
            }
            Said::Exec(errno) => return Err(Error::Exec { program, errno }),
            Said::Error(text) => return Err(Error::AgentFailed { program, text }),
            Said::Timeout => return Err(Error::Timeout { program }),
        }
    }
    Err(Error::GoneAway)
}

/// A connection to the abstract name `name` (non-blocking).  A listener
/// whose queue is full (a stopped or overwhelmed agent) is tried again
/// every millisecond for 1 s, then `EAGAIN`: an application never blocks
/// in `connect`.
pub fn dial(name: &[u8]) -> Result<OwnedFd, Errno> {
    let addr = SocketAddrUnix::new_abstract_name(name)?;
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    let sock = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, flags, None)?;
    let end = Instant::now() + Duration::from_secs(1);
    loop {
        match connect(&sock, &addr) {
            Err(Errno::AGAIN) if Instant::now() < end => std::thread::sleep(Duration::from_millis(1)),
            r => return r.map(|()| sock),
        }
    }
}

/// The next message on `sock` within `wait` (an empty one: the agent
/// closed the connection).
fn recv_msg(sock: BorrowedFd<'_>, wait: Duration) -> Result<Vec<u8>, Error> {
    let t = Timespec {
        tv_sec: wait.as_secs() as i64,
        tv_nsec: wait.subsec_nanos() as i64,
    };
    let mut pfd = [PollFd::new(&sock, PollFlags::IN)];
    match poll(&mut pfd, Some(&t)) {
        Ok(0) => return Err(Error::Silent(wait)),
        Ok(_) => {}
        Err(e) => return Err(sys("poll")(e)),
    }
    let mut b = vec![0u8; proto::MAX_MSG];
    match recv(sock, &mut b, RecvFlags::DONTWAIT) {
        Ok((n, _)) => {
            b.truncate(n);
            Ok(b)
        }
        Err(Errno::CONNRESET) => Ok(Vec::new()),
        Err(e) => Err(sys("recv")(e)),
    }
}

/// A value for the probe word, different in each hello.
fn probe_value() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (t ^ (std::process::id() as u64) << 40).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

/// On a connection `sock` to an agent's name: checks who listens (our
/// uid), names it our ptracer under Yama 1, sends the hello, reads the
/// welcome.
pub fn greet_on(
    sock: OwnedFd,
    wait: Duration,
    access: BorrowedFd<'_>,
    async_w: BorrowedFd<'_>,
) -> Result<Session, Error> {
    let (pid, uid) = crate::peercred(sock.as_fd()).ok_or(Error::Sys {
        what: "SO_PEERCRED",
        errno: libc::EINVAL,
    })?;
    if uid != rustix::process::geteuid().as_raw() {
        return Err(Error::Squatted { uid, pid });
    }
    let mut flags = 0;
    if let (Some(1), Some(agent)) = (yama_scope(), rustix::process::Pid::from_raw(pid)) {
        // Only an ancestor may attach under Yama 1, and the agent is none.
        rustix::process::set_ptracer(rustix::process::PTracer::ProcessID(agent)).map_err(sys("PR_SET_PTRACER"))?;
        flags |= hello_flag::PTRACER_SET;
    }
    let probe = Box::new(AtomicU64::new(probe_value()));
    let hello = Hello {
        pid: std::process::id(),
        flags,
        probe_addr: probe.as_ptr() as u64,
        probe_value: probe.load(Ordering::Relaxed),
    };
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut cmsg = SendAncillaryBuffer::new(&mut space);
    let fds = [access, async_w];
    cmsg.push(SendAncillaryMessage::ScmRights(&fds));
    let b = hello.to_bytes();
    match sendmsg(&sock, &[IoSlice::new(&b)], &mut cmsg, SendFlags::NOSIGNAL) {
        Ok(_) => {}
        Err(Errno::PIPE) | Err(Errno::CONNRESET) => return Err(Error::GoneAway),
        Err(e) => return Err(sys("sendmsg")(e)),
    }
    let m = recv_msg(sock.as_fd(), wait)?;
    // The probe word must stay until the agent has read it.
    drop(probe);
    if m.is_empty() {
        return Err(Error::GoneAway);
    }
    let (h, w) = Welcome::parse(&m).ok_or_else(|| Error::Protocol("the answer to our hello is no welcome".into()))?;
    if h.kind == kind::REFUSED {
        return Err(Error::Refused {
            status: w.status,
            text: w.text,
        });
    }
    if h.version != proto::VERSION {
        return Err(Error::Protocol(format!("the agent speaks version {}", h.version)));
    }
    Ok(Session {
        sock,
        agent_pid: w.agent_pid,
        client_id: w.client_id,
        no_cma: w.flags & flag::NO_CMA != 0,
        cma_errno: w.cma_errno as i32,
        transport: w.flags & flag::TRANSPORT != 0,
        ptracer_set: flags & hello_flag::PTRACER_SET != 0,
        started: false,
        next_req: 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_beside_the_object_holding_this_code() {
        if std::env::var_os("SWRDMA_WIRED").is_some() {
            return; // the override wins (not set by the test runners)
        }
        // In a test executable the object is the executable itself.
        let p = agent_program().expect("dladdr names our object");
        assert!(p.ends_with("../swrdma/swrdma-wired"), "{}", p.display());
        let exe = std::env::current_exe().unwrap();
        let dir = p.parent().unwrap().parent().unwrap().parent().unwrap();
        assert_eq!(
            dir.canonicalize().unwrap(),
            exe.parent().unwrap().canonicalize().unwrap()
        );
    }

    #[test]
    fn wire_mode_of_the_variable() {
        assert_eq!(mode_of(Some("0")), WireMode::Process);
        assert_eq!(mode_of(Some("1")), WireMode::Agent);
        assert_eq!(mode_of(None), WireMode::Prefer);
        assert_eq!(mode_of(Some("")), WireMode::Prefer);
        assert_eq!(mode_of(Some("yes")), WireMode::Prefer);
    }

    #[test]
    fn errors_say_what_and_why() {
        let e = Error::Exec {
            program: "/x/swrdma-wired".into(),
            errno: libc::ENOENT,
        };
        assert!(e
            .to_string()
            .starts_with("swrdma-wired: cannot run /x/swrdma-wired: No such file"));
        let e = Error::Squatted { uid: 7, pid: 99 };
        assert!(e.to_string().contains("held by process 99 of uid 7"));
        let e = Error::Refused {
            status: libc::EPROTO as u32,
            text: "version".into(),
        };
        assert!(e.to_string().contains("Protocol error") && e.to_string().ends_with("version"));
    }
}
