//! The agent: one process per (user, network namespace, interface),
//! started on demand by its first client, ended when it has had no client
//! for its idle time.  Step 1 of HOSTWIRE-DESIGN.md: its life, the checks
//! of its clients and their hellos; step 2 (part): each greeted client's
//! control session (`session.rs`: the verbs' requests, the objects, the
//! queues).  It carries no traffic yet.
//!
//! One thread, one epoll set: the listening socket, each client's
//! connection and each client's pidfd.  A client is dropped when its
//! connection closes or when its process exits (the pidfd becomes
//! readable), whichever comes first: a child that the client forked and
//! that still holds the connection does not keep a dead client alive.
//! A dropped client's session goes with it: its objects, its queues'
//! mappings and its descriptors.
//!
//! One client must not starve the others.  Each client's objects keep at
//! most its budget of descriptors and mappings (`session::Budget`, a share
//! of the agent's `RLIMIT_NOFILE`, raised to its hard limit at start, and
//! of `vm.max_map_count`).  A full descriptor table does not make the
//! agent spin on its listener: the agent holds one spare descriptor, and
//! with it refuses each waiting connection at once (`Agent::shed`).

use crate::proto::{self, flag, kind, Counters, Header, Hello, Welcome};
use crate::session::{self, Budget, Control, Session};
use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::event::Timespec;
use rustix::io::Errno;
use rustix::net::{
    accept_with, bind, listen, recvmsg, socket_with, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage,
    RecvFlags, ReturnFlags, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};
use std::collections::HashMap;
use std::io::{IoSliceMut, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// The idle time by default: long enough that consecutive runs of a test
/// program share one agent, short enough that none lingers for long.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30);
/// How long a connection may stay without a hello.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);
/// Connections at once (the rest are refused with `EMFILE`).
pub const MAX_CLIENTS: usize = 4096;
/// How long the listener stays out of the epoll set when even the spare
/// descriptor cannot take a waiting connection (`Agent::pause_listener`):
/// short, so the waiting clients (who try for 1 s) get in soon after a
/// descriptor frees, long enough that the agent does not spin meanwhile.
const LISTEN_PAUSE: Duration = Duration::from_millis(50);
/// At most one log line per this long about connections refused for want
/// of a descriptor (the first at once, then the count since the last).
const SHED_LOG_EVERY: Duration = Duration::from_secs(10);
/// At most this many connections refused for want of a descriptor in one
/// go; the listener stays readable and the rest come after the other
/// clients' events.
const SHED_BATCH: u32 = 64;

/// The command line (README.md, "The program").
#[derive(Debug, PartialEq, Eq)]
pub struct Config {
    pub ifindex: u32,
    pub scope: String,
    pub idle: Duration,
    pub ready_fd: Option<i32>,
    /// The user's private directory of endpoints the agent joins as a
    /// wire context (`--dir`; None: it carries no traffic).
    pub dir: Option<std::path::PathBuf>,
}

/// A CPU list in the `taskset -c` form ("0", "0-3,8,10-11"): the CPUs,
/// None when it is not one (a range backwards, a number past 4095).
pub fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok()?),
            None => {
                let a = part.trim().parse::<usize>().ok()?;
                (a, a)
            }
        };
        if a > b || b >= 4096 {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

/// Parses `--ifindex N [--scope S] [--idle-ms M] [--ready-fd F] [--dir D]`; the idle
/// time defaults to `SWRDMA_WIRED_IDLE_MS`, then to [`DEFAULT_IDLE`].
pub fn parse_args(args: &[String], env_idle: Option<&str>) -> Result<Config, String> {
    let mut c = Config {
        ifindex: 0,
        scope: String::new(),
        idle: env_idle
            .and_then(|v| v.parse().ok())
            .map_or(DEFAULT_IDLE, Duration::from_millis),
        ready_fd: None,
        dir: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        let num = |v: &String| v.parse::<u64>().map_err(|_| format!("{a}: not a number: {v}"));
        match a.as_str() {
            "--ifindex" => {
                c.ifindex = num(val()?)?
                    .try_into()
                    .map_err(|_| "--ifindex: too large".to_string())?
            }
            "--scope" => c.scope = val()?.clone(),
            "--idle-ms" => c.idle = Duration::from_millis(num(val()?)?),
            "--ready-fd" => c.ready_fd = Some(num(val()?)?.try_into().map_err(|_| "--ready-fd: too large")?),
            "--dir" => {
                let d = std::path::PathBuf::from(val()?);
                if !d.is_absolute() {
                    return Err(format!("--dir: not an absolute path: {}", d.display()));
                }
                c.dir = Some(d);
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if c.ifindex == 0 {
        return Err("--ifindex is required".into());
    }
    if !proto::scope_ok(&c.scope) {
        return Err(format!("bad --scope {:?}", c.scope));
    }
    Ok(c)
}

pub use crate::gids::ifname;

/// A greeted client's resources (its access page is in its data path's
/// memory, `place::ClientMem`).
struct Greeted {
    /// Where its async events go.
    async_w: OwnedFd,
    /// Its control session: its objects and their queues.
    session: Session,
}

struct Client {
    sock: OwnedFd,
    pidfd: OwnedFd,
    pid: i32,
    since: Instant,
    greeted: Option<Greeted>,
}

/// The agent's state.
pub struct Agent {
    cfg: Config,
    listener: Option<OwnedFd>,
    epoll: OwnedFd,
    clients: HashMap<u64, Client>,
    next_id: u64,
    empty_since: Option<Instant>,
    counters: Counters,
    log: Option<std::fs::File>,
    uid: u32,
    /// Connections refused before their hello (another uid, too many):
    /// answered when their first message has been read, so that closing
    /// them does not reset the refusal away (a Unix socket closed with
    /// unread data resets its peer).
    refusing: HashMap<u64, Refusing>,
    /// QP1: the CM MADs between this host and others (`qp1.rs`).
    qp1: Option<crate::qp1::Qp1>,
    /// The greeted clients' objects (`session.rs`).
    ctl: Control,
    /// `/dev/null`, open only so that a full descriptor table can be given
    /// a free slot to refuse a connection with (`shed`).
    spare: Option<OwnedFd>,
    /// The listener is out of the epoll set until then (`pause_listener`).
    paused_until: Option<Instant>,
    /// Connections refused for want of a descriptor, for the log.
    shed_log: ShedLog,
    /// The wire engine for the clients' QPs (`transport.rs`; None: started
    /// without `--dir`, or its sockets could not be had: control only).
    transport: Option<crate::transport::Transport>,
}

/// The rate limit of the log lines about connections refused for want of
/// a descriptor.
#[derive(Default)]
struct ShedLog {
    /// Refused since the last line.
    unlogged: u32,
    /// When the last line was written.
    last: Option<Instant>,
}

struct Refusing {
    sock: OwnedFd,
    since: Instant,
    status: i32,
    why: String,
}

/// Refused connections waiting for their first message, at most.
const MAX_REFUSING: usize = 64;
/// How long a refused connection may wait for its first message.
const REFUSING_DEADLINE: Duration = Duration::from_secs(1);

/// Tokens: 0 the listener; a client's connection 2·id, its pidfd 2·id+1;
/// the transport's descriptors [`TRANSPORT`]; QP1's `qp1::TAG` and up.
const LISTENER: u64 = 0;
/// The token of the transport's descriptors: `TRANSPORT | i` for the
/// `i`th of `Transport::fds` (`TRANSPORT | TRANSPORT_ALL` for the 64th and
/// later: then the turn looks at every one).
const TRANSPORT: u64 = 1 << 62;
const TRANSPORT_ALL: u64 = 63;

/// SO_PEERPIDFD's pidfd of the process at the other end of `sock`, or
/// `pidfd_open` of its SO_PEERCRED pid (kernels before 6.5), opened at once
/// while the connection is new.  Err: `pidfd_open`'s errno (`ESRCH`: the
/// client is gone; `EMFILE`: no descriptor free).
fn peer_pidfd(sock: BorrowedFd<'_>, pid: i32) -> Result<OwnedFd, Errno> {
    if let Some(raw) = crate::sockopt(sock, libc::SO_PEERPIDFD, -1 as libc::c_int).filter(|&r| r >= 0) {
        // SAFETY: the kernel just installed `raw` for us; no one else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let _ = rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC);
        return Ok(fd);
    }
    let pid = rustix::process::Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
}

/// One message of a client connection, without waiting: its length (or the
/// errno), the descriptors that came with it (at most 4, close-on-exec),
/// and whether some were lost (`MSG_CTRUNC`: no descriptor free in our
/// table for them, or more than 4).
fn recv_msg(sock: BorrowedFd<'_>, b: &mut [u8]) -> (Result<usize, Errno>, Vec<OwnedFd>, bool) {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut cmsg = RecvAncillaryBuffer::new(&mut space);
    let flags = RecvFlags::CMSG_CLOEXEC | RecvFlags::DONTWAIT;
    let r = recvmsg(sock, &mut [IoSliceMut::new(b)], &mut cmsg, flags);
    let cut = r.as_ref().is_ok_and(|r| r.flags.contains(ReturnFlags::CTRUNC));
    let mut fds: Vec<OwnedFd> = Vec::new();
    for m in cmsg.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = m {
            fds.extend(it);
        }
    }
    (r.map(|r| r.bytes), fds, cut)
}

/// `/dev/null`, read-only and close-on-exec: the spare descriptor.
fn open_spare() -> Option<OwnedFd> {
    use rustix::fs::{open, Mode, OFlags};
    open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()
}

/// Raises the soft `RLIMIT_NOFILE` to the hard one, once, at start: the
/// agent keeps descriptors for every process of its user, waits with
/// epoll (no `select`, whose sets stop at 1024) and starts no program
/// that would inherit the limit.  The soft limit after that (the same
/// when it cannot be raised).
fn raise_nofile() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let l = getrlimit(Resource::Nofile);
    let up = Rlimit {
        current: l.maximum,
        maximum: l.maximum,
    };
    let raised = l.current != l.maximum && setrlimit(Resource::Nofile, up).is_ok();
    let now = if raised { l.maximum } else { l.current };
    // `None` is no limit (RLIM_INFINITY).
    now.unwrap_or(u64::MAX)
}

/// The budget of each client (`session::Budget`): from the agent's
/// descriptor limit `nofile` and `vm.max_map_count` (65530, the kernel's
/// default, when it cannot be read), unless `SWRDMA_WIRED_CLIENT_FDS` or
/// `SWRDMA_WIRED_CLIENT_MAPS` (for tests) give a number.
fn client_budget(nofile: u64) -> Budget {
    let maps = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(65530);
    let mut b = Budget::from_limits(nofile, maps);
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse::<u32>().ok());
    if let Some(n) = env("SWRDMA_WIRED_CLIENT_FDS") {
        b.fds = n;
    }
    if let Some(n) = env("SWRDMA_WIRED_CLIENT_MAPS") {
        b.maps = n;
    }
    b
}

/// Refuses a connection that the agent cannot keep (no descriptor free
/// for it, or for its pidfd): its first message, if it came already, is
/// read and dropped (the descriptors in it with it: without room for
/// them the kernel closes them), then the refusal with `status` is sent
/// and the connection closed.  Reading the message first keeps the
/// close from resetting the connection (a Unix socket closed with unread
/// data resets its peer), so that the client finds the refusal; a client
/// whose hello comes later finds its connection closed.
fn refuse_at_once(sock: OwnedFd, status: Errno) {
    let mut b = [0u8; proto::MAX_MSG];
    let _ = rustix::net::recv(&sock, &mut b, RecvFlags::DONTWAIT);
    let why = "the agent has no descriptor free; try again later".to_string();
    refuse(sock.as_fd(), status.raw_os_error(), why);
}

/// Cross-memory attach probe: reads the client's 8-byte word at `addr` and
/// compares it with `want`.  Ok(()) or the errno (EFAULT: another value,
/// e.g. a pid of another PID namespace's process).
fn cma_probe(pid: i32, addr: u64, want: u64) -> Result<(), i32> {
    if pid <= 0 {
        return Err(libc::ESRCH); // no number in our PID namespace
    }
    let mut got = 0u64;
    let local = libc::iovec {
        iov_base: (&mut got as *mut u64).cast(),
        iov_len: 8,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: 8,
    };
    // SAFETY: the local iovec is our own 8-byte `got`; the remote one is
    // only read by the kernel, in the other process, with its checks.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM));
    }
    if n != 8 || got != want {
        return Err(libc::EFAULT);
    }
    Ok(())
}

pub(crate) fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: d.as_secs() as i64,
        tv_nsec: d.subsec_nanos() as i64,
    }
}

impl Agent {
    /// Binds the name and listens.  Err(None): another agent holds it;
    /// Err(Some(why)): cannot start.
    pub fn new(cfg: Config) -> Result<Agent, Option<String>> {
        if ifname(cfg.ifindex).is_none() {
            return Err(Some(format!(
                "no interface of index {} in this network namespace",
                cfg.ifindex
            )));
        }
        let uid = rustix::process::geteuid().as_raw();
        let name = proto::socket_name(uid, cfg.ifindex, &cfg.scope);
        fn e(what: &'static str) -> impl Fn(Errno) -> Option<String> {
            move |e| Some(format!("{what}: {e}"))
        }
        let addr = SocketAddrUnix::new_abstract_name(&name).map_err(e("name"))?;
        let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
        let l = socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, flags, None).map_err(e("socket"))?;
        match bind(&l, &addr) {
            Ok(()) => {}
            // The bind is the lock: the name is another agent's.
            Err(Errno::ADDRINUSE) => return Err(None),
            Err(x) => return Err(e("bind")(x)),
        }
        listen(&l, 128).map_err(e("listen"))?;
        let budget = client_budget(raise_nofile());
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(e("epoll"))?;
        epoll::add(&epoll, &l, EventData::new_u64(LISTENER), EventFlags::IN).map_err(e("epoll"))?;
        // QP1 is best effort: an agent without it still serves its clients.
        let qp1 = crate::qp1::Qp1::new(uid, cfg.ifindex, &cfg.scope, epoll.as_fd());
        let log = std::env::var_os("SWRDMA_WIRED_LOG")
            .and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok());
        let mut ctl = Control::new(cfg.ifindex, budget);
        // The transport is best effort too: without it the agent serves
        // the control path only (and says why in its log).
        let transport = cfg
            .dir
            .as_ref()
            .map(|d| crate::transport::Transport::open(d, cfg.ifindex));
        let mut no_transport = None;
        let transport = match transport {
            Some(Ok(t)) => {
                let mut ok = true;
                for (i, fd) in t.fds().into_iter().enumerate() {
                    let tok = TRANSPORT | (i as u64).min(TRANSPORT_ALL);
                    ok &= epoll::add(&epoll, fd, EventData::new_u64(tok), EventFlags::IN).is_ok();
                }
                ctl.number_from(t.numbers());
                if !ok {
                    no_transport = Some("its descriptors cannot be waited on".to_string());
                }
                ok.then_some(t)
            }
            Some(Err(why)) => {
                no_transport = Some(why);
                None
            }
            None => None,
        };
        let mut a = Agent {
            listener: Some(l),
            epoll,
            clients: HashMap::new(),
            next_id: 1,
            empty_since: Some(Instant::now()),
            counters: Counters::default(),
            log,
            uid,
            refusing: HashMap::new(),
            qp1: qp1.ok(),
            ctl,
            spare: open_spare(),
            paused_until: None,
            shed_log: ShedLog::default(),
            transport,
            cfg,
        };
        if let Some(why) = no_transport {
            a.log(format!("no transport (control path only): {why}"));
        }
        Ok(a)
    }

    /// Keeps a refused connection until its first message (or its end, or
    /// a deadline); closes it at once when too many wait.
    fn refuse_later(&mut self, sock: OwnedFd, status: i32, why: String) {
        if self.refusing.len() >= MAX_REFUSING {
            return refuse(sock.as_fd(), status, why);
        }
        let id = self.next_id;
        self.next_id += 1;
        if epoll::add(&self.epoll, &sock, EventData::new_u64(2 * id), EventFlags::IN).is_ok() {
            let since = Instant::now();
            self.refusing.insert(
                id,
                Refusing {
                    sock,
                    since,
                    status,
                    why,
                },
            );
        }
    }

    /// A refused connection is readable (or late): its message is read and
    /// dropped, the refusal sent, the connection closed.
    fn refuse_now(&mut self, id: u64) {
        let Some(r) = self.refusing.remove(&id) else { return };
        let mut b = [0u8; proto::MAX_MSG];
        // The message and the descriptors that came with it are dropped.
        let _ = recv_msg(r.sock.as_fd(), &mut b);
        let _ = epoll::delete(&self.epoll, &r.sock);
        refuse(r.sock.as_fd(), r.status, r.why);
    }

    fn log(&mut self, msg: String) {
        if let Some(f) = self.log.as_mut() {
            let _ = writeln!(f, "swrdma-wired[{}]: {msg}", std::process::id());
        }
    }

    /// Serves until idle for the configured time.
    pub fn run(&mut self) {
        let name =
            String::from_utf8_lossy(&proto::socket_name(self.uid, self.cfg.ifindex, &self.cfg.scope)).into_owned();
        let b = self.ctl.budget();
        self.log(format!(
            "listening on @{name}, idle {:?}, per client at most {} descriptors and {} mappings",
            self.cfg.idle, b.fds, b.maps
        ));
        let mut events = Vec::with_capacity(64);
        let mut last_work: Option<Instant> = None;
        let spin = Duration::from_micros(
            std::env::var("SWRDMA_WIRED_SPIN_US")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0),
        );
        loop {
            let now = Instant::now();
            let mut wake = self.empty_since.map(|t| t + self.cfg.idle);
            for c in self.clients.values().filter(|c| c.greeted.is_none()) {
                let d = c.since + HELLO_DEADLINE;
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            for r in self.refusing.values() {
                let d = r.since + REFUSING_DEADLINE;
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            if let Some(d) = self.qp1.as_ref().and_then(|q| q.flush_at()) {
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            if let Some(d) = self.qp1.as_ref().and_then(|q| q.check_at()) {
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            if let Some(d) = self.paused_until {
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            if let Some(tr) = self.transport.as_ref() {
                // The wire's timers: within a millisecond while it is busy;
                // at once while a send queue has an entry (`may_sleep` marks
                // the others asleep).  A turn that did something is not
                // followed by another at once: what it left shows as a
                // send queue's entry, a readable socket (level triggered:
                // the wait returns at once) or the wire busy.
                // (`SWRDMA_WIRED_SPIN_US`: for that long after the last turn
                // that did something it looks again at once, without
                // sleeping: off by default, for measuring HOSTWIRE-DESIGN.md
                // risk 4.)
                let spinning = last_work.is_some_and(|t| now.saturating_duration_since(t) < spin);
                let d = if spinning || !tr.may_sleep(&self.ctl) {
                    now
                } else if tr.busy() {
                    now + Duration::from_millis(1)
                } else {
                    wake.unwrap_or(now + Duration::from_secs(3600))
                };
                // (Direct-transmit windows open: a request sent through one
                // meanwhile and lost is retransmitted in time.)
                let d = tr.sleep_bound().map_or(d, |b| d.min(now + b));
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            let t = wake.map(|w| timespec(w.saturating_duration_since(now)));
            events.clear();
            let waited = epoll::wait(&self.epoll, rustix::buffer::spare_capacity(&mut events), t.as_ref());
            if let Some(tr) = self.transport.as_ref() {
                tr.woke(&self.ctl);
            }
            match waited {
                Ok(_) | Err(Errno::INTR) => {}
                Err(e) => {
                    self.log(format!("epoll_wait: {e}: exit"));
                    return;
                }
            }
            // (Which of the transport's sockets are readable: the turn
            // asks only those.)
            let mut ready = 0u64;
            for ev in events.iter() {
                let tok = ev.data.u64();
                match tok {
                    t if t & crate::qp1::TAG != 0 => {
                        if let Some(q) = self.qp1.as_mut() {
                            q.event(t)
                        }
                    }
                    LISTENER => self.accept_all(),
                    t if t & !TRANSPORT_ALL == TRANSPORT => {
                        ready |= match t & TRANSPORT_ALL {
                            TRANSPORT_ALL => u64::MAX,
                            i => 1 << i,
                        }
                    }
                    t if t % 2 == 0 && self.refusing.contains_key(&(t / 2)) => self.refuse_now(t / 2),
                    t if t % 2 == 0 => self.readable(t / 2),
                    t => self.drop_client(t / 2, "its process exited"),
                }
            }
            if let Some(q) = self
                .qp1
                .as_mut()
                .filter(|q| q.flush_at().is_some_and(|t| t <= Instant::now()))
            {
                q.flush();
            }
            if let Some(q) = self
                .qp1
                .as_mut()
                .filter(|q| q.check_at().is_some_and(|t| t <= Instant::now()))
            {
                q.end_for_gone();
            }
            if let Some(tr) = self.transport.as_ref() {
                // (A full `events` may leave a readable socket out: it is
                // still readable at the next `epoll_wait`.)
                tr.hint_ready(ready);
            }
            if self.turn() {
                last_work = Some(Instant::now());
            }
            self.expire_hellos();
            self.resume_listener();
            if self.idle_over() {
                let q = self
                    .qp1
                    .as_ref()
                    .map(|q| format!(", qp1 {:?}", q.stats))
                    .unwrap_or_default();
                let n = std::mem::take(&mut self.shed_log.unlogged);
                let shed = if n > 0 {
                    format!(", {n} more connections refused for want of a descriptor")
                } else {
                    String::new()
                };
                self.log(format!("idle for {:?}: exit{q}{shed}", self.cfg.idle));
                return;
            }
        }
    }

    /// One turn of the transport (`Transport::turn`): whether it did
    /// anything.
    fn turn(&mut self) -> bool {
        let Some(tr) = self.transport.as_ref() else {
            return false;
        };
        // (A session's id is its client's id as a u32: `check_hello`.)
        let clients = &self.clients;
        tr.turn(&mut self.ctl, |id| {
            Some(clients.get(&u64::from(id))?.greeted.as_ref()?.async_w.as_fd())
        })
    }

    /// No client for the idle time, and no connection waiting either.
    fn idle_over(&mut self) -> bool {
        let Some(since) = self.empty_since else {
            return false;
        };
        if since.elapsed() < self.cfg.idle {
            return false;
        }
        self.accept_all();
        if !self.clients.is_empty() {
            return false;
        }
        // The name goes with the socket: a client that connects from now
        // on starts a new agent (one queued in the last instant sees its
        // connection closed and tries again).
        self.listener = None;
        true
    }

    fn expire_hellos(&mut self) {
        let late: Vec<u64> = (self.refusing.iter())
            .filter(|(_, r)| r.since.elapsed() >= REFUSING_DEADLINE)
            .map(|(&id, _)| id)
            .collect();
        for id in late {
            self.refuse_now(id);
        }
        let late: Vec<u64> = (self.clients.iter())
            .filter(|(_, c)| c.greeted.is_none() && c.since.elapsed() >= HELLO_DEADLINE)
            .map(|(&id, _)| id)
            .collect();
        for id in late {
            self.counters.refused += 1;
            self.drop_client(id, "no hello in time");
        }
    }

    /// Takes the connections waiting on the listener.  An `accept` that
    /// fails leaves its connection queued and the listener readable (the
    /// epoll set is level-triggered), so no error may simply return: with
    /// a full descriptor table (`EMFILE`, `ENFILE`) each waiting
    /// connection is refused at once with the spare descriptor
    /// ([`Agent::shed`]), at most [`SHED_BATCH`] in one go; any other
    /// error (`ENOMEM`, `ENOBUFS`, a security module's refusal), or a
    /// spare that cannot be had, takes the listener out of the set for
    /// [`LISTEN_PAUSE`] ([`Agent::pause_listener`]).
    fn accept_all(&mut self) {
        let mut shed = 0;
        loop {
            let Some(l) = self.listener.as_ref() else { return };
            match accept_with(l, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK) {
                Ok(s) => self.accept(s),
                // Interrupted, or a connection that ended in the queue.
                Err(Errno::INTR) | Err(Errno::CONNABORTED) => {}
                Err(Errno::AGAIN) => return,
                Err(e @ (Errno::MFILE | Errno::NFILE)) => {
                    if !self.shed(e) {
                        return self.pause_listener(e);
                    }
                    shed += 1;
                    if shed >= SHED_BATCH {
                        return;
                    }
                }
                Err(e) => return self.pause_listener(e),
            }
        }
    }

    /// Refuses the first waiting connection when the descriptor table is
    /// full (`accept` said `e`): the spare descriptor is closed, the
    /// connection accepted into its slot, refused with `e` and closed
    /// ([`refuse_at_once`]), and the spare opened again.  The client gets
    /// an answer at once instead of waiting in the queue.  False: the
    /// spare was not there or did not come back, or the connection could
    /// not be accepted even so (`ENFILE` with the slot taken elsewhere).
    fn shed(&mut self, e: Errno) -> bool {
        if self.spare.is_none() {
            self.spare = open_spare();
        }
        // Closed: its slot is the connection's.
        if self.spare.take().is_none() {
            return false;
        }
        let r = match self.listener.as_ref() {
            Some(l) => accept_with(l, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK),
            None => Err(Errno::AGAIN),
        };
        let took = match r {
            Ok(sock) => {
                refuse_at_once(sock, e);
                self.counters.refused += 1;
                self.note_shed(e);
                true
            }
            // Nothing waits any more (or it ended): nothing to refuse.
            Err(Errno::AGAIN) | Err(Errno::INTR) | Err(Errno::CONNABORTED) => true,
            Err(_) => false,
        };
        self.spare = open_spare();
        took && self.spare.is_some()
    }

    /// One more connection refused for want of a descriptor (`e`): a log
    /// line for the first, then at most one per [`SHED_LOG_EVERY`] with the
    /// count since the last (the rest at exit), not one per connection.
    fn note_shed(&mut self, e: Errno) {
        self.shed_log.unlogged += 1;
        if self.shed_log.last.is_some_and(|t| t.elapsed() < SHED_LOG_EVERY) {
            return;
        }
        let n = std::mem::take(&mut self.shed_log.unlogged);
        self.shed_log.last = Some(Instant::now());
        self.log(format!(
            "no descriptor free ({e}): refused {n} connection(s) (one line per {SHED_LOG_EVERY:?} at most)"
        ));
    }

    /// Takes the listener out of the epoll set for [`LISTEN_PAUSE`] after
    /// `accept` failed with `e` in a way the spare does not help: the
    /// agent then waits (serving its clients) instead of spinning on a
    /// listener that stays readable.  Its connections wait in the queue
    /// meanwhile (the clients try for 1 s).
    fn pause_listener(&mut self, e: Errno) {
        let Some(l) = self.listener.as_ref() else { return };
        // (Not in the set: already paused.)
        let _ = epoll::delete(&self.epoll, l);
        if self.paused_until.is_none() && self.shed_log.last.is_none_or(|t| t.elapsed() >= SHED_LOG_EVERY) {
            self.shed_log.last = Some(Instant::now());
            self.log(format!(
                "accept: {e}: the listener waits {LISTEN_PAUSE:?} (logged once per {SHED_LOG_EVERY:?} at most)"
            ));
        }
        self.paused_until = Some(Instant::now() + LISTEN_PAUSE);
    }

    /// Puts the listener back in the epoll set once its pause is over; a
    /// connection waiting meanwhile makes it readable at once.
    fn resume_listener(&mut self) {
        if self.paused_until.is_none_or(|t| t > Instant::now()) {
            return;
        }
        self.paused_until = None;
        if let Some(l) = self.listener.as_ref() {
            if let Err(e) = epoll::add(&self.epoll, l, EventData::new_u64(LISTENER), EventFlags::IN) {
                if e != Errno::EXIST {
                    self.pause_listener(e);
                }
            }
        }
    }

    /// A new connection: checked (uid), watched (pidfd), then waits for its
    /// hello.
    fn accept(&mut self, sock: OwnedFd) {
        let Some((pid, uid)) = crate::peercred(sock.as_fd()) else {
            return;
        };
        let refusal = if uid != self.uid {
            let why = format!("uid {uid} may not use the agent of uid {}", self.uid);
            Some((libc::EACCES, why))
        } else if self.clients.len() >= MAX_CLIENTS {
            Some((libc::EMFILE, format!("{MAX_CLIENTS} clients already")))
        } else {
            None
        };
        if let Some((status, why)) = refusal {
            self.counters.refused += 1;
            self.log(format!("refusing pid {pid}: {why}"));
            return self.refuse_later(sock, status, why);
        }
        let pidfd = match peer_pidfd(sock.as_fd(), pid) {
            Ok(p) => p,
            // The connection took the last free descriptor: refused at
            // once, as in `shed`.
            Err(e @ (Errno::MFILE | Errno::NFILE)) => {
                self.counters.refused += 1;
                self.note_shed(e);
                return refuse_at_once(sock, e);
            }
            Err(_) => return, // already gone
        };
        let id = self.next_id;
        self.next_id += 1;
        let ok = epoll::add(&self.epoll, &sock, EventData::new_u64(2 * id), EventFlags::IN).is_ok()
            && epoll::add(&self.epoll, &pidfd, EventData::new_u64(2 * id + 1), EventFlags::IN).is_ok();
        if !ok {
            return;
        }
        self.clients.insert(
            id,
            Client {
                sock,
                pidfd,
                pid,
                since: Instant::now(),
                greeted: None,
            },
        );
        self.empty_since = None;
    }

    fn drop_client(&mut self, id: u64, why: &str) {
        let Some(c) = self.clients.remove(&id) else { return };
        if why == "its process exited" {
            self.counters.exited += 1;
        }
        let _ = epoll::delete(&self.epoll, &c.sock);
        let _ = epoll::delete(&self.epoll, &c.pidfd);
        if let Some(g) = c.greeted {
            if let (Some(d), Some(tr)) = (self.ctl.close(g.session), self.transport.as_ref()) {
                tr.gone(d);
            }
        }
        if let Some(q) = self.qp1.as_mut() {
            q.poke();
        }
        self.log(format!("client {id} (pid {}) gone: {why}", c.pid));
        if self.clients.is_empty() {
            self.empty_since = Some(Instant::now());
        }
    }

    /// A client's connection is readable: a message, or its end.  After
    /// the welcome, a control message is served by the client's session.
    fn readable(&mut self, id: u64) {
        let open = self.clients.len() as u32;
        let Some(c) = self.clients.get_mut(&id) else { return };
        if let Some(g) = c.greeted.as_mut().filter(|_| session::next_is_ctl(c.sock.as_fd())) {
            let engine = self.transport.as_ref();
            if let Err(why) = self.ctl.serve(&mut g.session, c.sock.as_fd(), c.pidfd.as_fd(), engine) {
                self.drop_client(id, &why);
            }
            return;
        }
        let mut b = [0u8; proto::MAX_MSG];
        let (r, fds, cut) = recv_msg(c.sock.as_fd(), &mut b);
        let n = match r {
            Ok(n) if n > 0 => n,
            Err(Errno::AGAIN) | Err(Errno::INTR) => return,
            _ => return self.drop_client(id, "connection closed"),
        };
        let is = |k: u16| Header::parse(&b[..n]).is_some_and(|h| h.kind == k && h.version == proto::VERSION);
        if c.greeted.is_none() {
            self.hello(id, &b[..n], fds, cut);
        } else if is(kind::DOORBELL) {
            // (The turn after this event takes the queues' entries.)
        } else if Header::parse(&b[..n]).is_some_and(|h| h.kind == kind::QUERY && h.version == proto::VERSION) {
            let mut k = self.counters;
            k.clients = open;
            let _ = rustix::net::send(&c.sock, &k.to_bytes(), SendFlags::NOSIGNAL | SendFlags::DONTWAIT);
        } else {
            self.drop_client(id, "a message that is no request");
        }
    }

    /// Takes a client's hello, or refuses it (then drops the client).
    /// `cut`: some of its descriptors were lost (no room for them).
    fn hello(&mut self, id: u64, b: &[u8], fds: Vec<OwnedFd>, cut: bool) {
        match self.check_hello(id, b, fds, cut) {
            Ok(w) => {
                // (An address the interface gained since the transport
                // opened, an IPv6 one out of duplicate address detection
                // say: the client may name it in its GIDs.)
                let added = self.transport.as_mut().map(|t| t.refresh()).unwrap_or_default();
                if !added.is_empty() {
                    self.log(format!("the interface's new addresses bound: {added:?}"));
                }
                let c = &self.clients[&id];
                let _ = rustix::net::send(&c.sock, &w.to_bytes(), SendFlags::NOSIGNAL | SendFlags::DONTWAIT);
                let pid = c.pid;
                self.counters.welcomed += 1;
                self.log(format!("client {id} (pid {pid}) welcomed: {}", w.text));
            }
            Err((status, why)) => {
                self.counters.refused += 1;
                if let Some(c) = self.clients.get(&id) {
                    refuse(c.sock.as_fd(), status, why.clone());
                }
                self.drop_client(id, &format!("refused: {why}"));
            }
        }
    }

    fn check_hello(&mut self, id: u64, b: &[u8], fds: Vec<OwnedFd>, cut: bool) -> Result<Welcome, (i32, String)> {
        let inval = |s: String| (libc::EINVAL, s);
        let h = Header::parse(b).ok_or_else(|| inval("the first message is not of the protocol".into()))?;
        if h.version != proto::VERSION {
            let why = format!("protocol version {}; this agent speaks {}", h.version, proto::VERSION);
            return Err((libc::EPROTO, why));
        }
        let hello = Hello::parse(b).ok_or_else(|| inval("the first message is not a hello".into()))?;
        if cut && fds.len() < 2 {
            // Its descriptors found no room in our table: not the
            // client's fault.
            let why = "the agent has no descriptor free for the hello's descriptors; try again later";
            return Err((libc::EMFILE, why.into()));
        }
        let [access, async_w]: [OwnedFd; 2] = fds.try_into().map_err(|v: Vec<OwnedFd>| {
            inval(format!(
                "a hello carries 2 descriptors (access page, async pipe), not {}",
                v.len()
            ))
        })?;
        let access = crate::place::AccessPage::map(access.as_fd()).map_err(inval)?;
        crate::fifo_writer(async_w.as_fd(), "async pipe").map_err(inval)?;
        let c = self.clients.get_mut(&id).ok_or((libc::EINVAL, String::new()))?;
        let cma = cma_probe(c.pid, hello.probe_addr, hello.probe_value);
        // The probe read the process whose pidfd we hold, unless it has
        // exited since (its pid could name another process by now).
        if crate::pidfd_exited(c.pidfd.as_fd()) {
            return Err((libc::ESRCH, "the client exited".into()));
        }
        let mut text = match cma {
            Ok(()) => "cross-memory attach works".to_string(),
            Err(e) => format!("no cross-memory attach: {}", std::io::Error::from_raw_os_error(e)),
        };
        if hello.pid != c.pid as u32 {
            text.push_str(&format!("; the client's pid {} is {} here", hello.pid, c.pid));
        }
        let no_cma = cma.is_err();
        let in_use = || (libc::EMFILE, format!("client number {id} in use"));
        // (The data path's memory holds a pidfd of its own: the client's
        // is the epoll set's.)
        let pidfd = rustix::io::fcntl_dupfd_cloexec(&c.pidfd, 0).ok();
        let mem = crate::place::ClientMem::new(c.pid, pidfd, no_cma, access);
        let session = self.ctl.open(id as u32, c.pid, mem).ok_or_else(in_use)?;
        c.greeted = Some(Greeted { async_w, session });
        self.counters.no_cma += no_cma as u32;
        Ok(Welcome {
            kind: kind::WELCOME,
            status: 0,
            flags: if no_cma { flag::NO_CMA } else { 0 } | if self.transport.is_some() { flag::TRANSPORT } else { 0 },
            agent_pid: std::process::id(),
            client_id: id as u32,
            cma_errno: cma.err().unwrap_or(0) as u32,
            text,
        })
    }
}

/// Sends a refusal (the caller then closes the connection).
fn refuse(sock: BorrowedFd<'_>, status: i32, text: String) {
    let w = Welcome {
        kind: kind::REFUSED,
        status: status as u32,
        flags: 0,
        agent_pid: std::process::id(),
        client_id: 0,
        cma_errno: 0,
        text,
    };
    let _ = rustix::net::send(sock, &w.to_bytes(), SendFlags::NOSIGNAL | SendFlags::DONTWAIT);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("2-4,7, 9-9"), Some(vec![2, 3, 4, 7, 9]));
        for bad in ["", "a", "3-1", "1,", "-2", "4096", "0-4096", "1--2"] {
            assert_eq!(parse_cpu_list(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn command_line() {
        let c = parse_args(&args("--ifindex 3 --scope t1 --idle-ms 250 --ready-fd 3"), None).unwrap();
        assert_eq!(
            c,
            Config {
                ifindex: 3,
                scope: "t1".into(),
                idle: Duration::from_millis(250),
                ready_fd: Some(3),
                dir: None,
            }
        );
        assert_eq!(
            parse_args(&args("--ifindex 2"), Some("1500")).unwrap().idle,
            Duration::from_millis(1500)
        );
        assert_eq!(parse_args(&args("--ifindex 2"), None).unwrap().idle, DEFAULT_IDLE);
        assert!(parse_args(&args(""), None).is_err());
        assert!(parse_args(&args("--ifindex x"), None).is_err());
        assert!(parse_args(&args("--ifindex 1 --scope a/b"), None).is_err());
        assert!(parse_args(&args("--ifindex 1 --what"), None).is_err());
        assert!(parse_args(&args("--ifindex"), None).is_err());
    }

    #[test]
    fn probe_reads_our_own_word() {
        let w = Box::new(0x1122_3344_5566_7788u64);
        let pid = std::process::id() as i32;
        assert_eq!(cma_probe(pid, &*w as *const u64 as u64, *w), Ok(()));
        assert_eq!(cma_probe(pid, &*w as *const u64 as u64, 5), Err(libc::EFAULT));
        assert_eq!(cma_probe(pid, 8, 5), Err(libc::EFAULT), "unmapped address");
    }

    /// The listener's pause, in a forked child (it lowers its own
    /// descriptor limit): a full table and no spare take the listener out
    /// of the epoll set instead of spinning on it; once the pause is over
    /// and a descriptor is free, it is back and its connection taken.
    #[test]
    fn listener_paused_when_not_even_the_spare_helps() {
        use rustix::process::{getrlimit, setrlimit, Resource};
        use std::os::fd::AsRawFd;
        // SAFETY: the child makes only the calls below and ends with
        // _exit; it allocates after fork, which glibc's malloc allows
        // (fork takes its locks); the verdict is its exit code.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let check = || -> Result<(), u8> {
                // SAFETY: a NUL-terminated name; the call only reads it.
                let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
                let cfg = Config {
                    ifindex: lo,
                    scope: format!("unit-pause-{}", std::process::id()),
                    idle: Duration::from_secs(5),
                    ready_fd: None,
                    dir: None,
                };
                let name = proto::socket_name(rustix::process::geteuid().as_raw(), lo, &cfg.scope);
                let mut a = Agent::new(cfg).map_err(|_| 1)?;
                let _conn = crate::client::dial(&name).map_err(|_| 2)?;
                // The table full, and no spare.
                let was = getrlimit(Resource::Nofile);
                a.spare = None;
                let probe = open_spare().ok_or(3)?;
                let full = probe.as_raw_fd() as u64;
                drop(probe);
                let mut low = was;
                low.current = Some(full);
                setrlimit(Resource::Nofile, low).map_err(|_| 4)?;
                a.accept_all();
                if a.paused_until.is_none() || !a.clients.is_empty() {
                    return Err(5);
                }
                let mut ev = Vec::with_capacity(8);
                let zero = timespec(Duration::ZERO);
                epoll::wait(&a.epoll, rustix::buffer::spare_capacity(&mut ev), Some(&zero)).map_err(|_| 6)?;
                if ev.iter().any(|e| e.data.u64() == LISTENER) {
                    return Err(7); // still in the set
                }
                // Not over yet: it stays out.
                a.resume_listener();
                if a.paused_until.is_none() {
                    return Err(8);
                }
                // Room again, and the pause over: back in the set, readable.
                setrlimit(Resource::Nofile, was).map_err(|_| 9)?;
                a.paused_until = Some(Instant::now());
                a.resume_listener();
                ev.clear();
                epoll::wait(&a.epoll, rustix::buffer::spare_capacity(&mut ev), Some(&zero)).map_err(|_| 10)?;
                if a.paused_until.is_some() || !ev.iter().any(|e| e.data.u64() == LISTENER) {
                    return Err(11);
                }
                a.accept_all();
                if a.clients.len() != 1 {
                    return Err(12);
                }
                Ok(())
            };
            let code = check().err().unwrap_or(0);
            // SAFETY: ends the child without running the test harness.
            unsafe { libc::_exit(code as i32) };
        }
        let mut st = 0;
        // SAFETY: waits for our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
        assert!(libc::WIFEXITED(st), "status {st:#x}");
        assert_eq!(libc::WEXITSTATUS(st), 0, "the child's failed step");
    }

    #[test]
    fn interfaces_by_index() {
        // SAFETY: a NUL-terminated name; the call only reads it.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert_eq!(ifname(lo).as_deref(), Some("lo"));
        assert!(ifname(u32::MAX).is_none());
    }
}
