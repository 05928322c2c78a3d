//! Unit tests of the engine: requests and responses fed in, answers and
//! completions checked — no process, socket or thread.
//!
//! One submodule per row of the engine's table (see lib.rs); the helpers
//! they share are here: [`FakeMem`] (a byte vector at an address),
//! [`Holed`] (one with a range the owner no longer maps), [`Untouched`]
//! (memory that must not be reached at all), [`Strict`] (the `Memory`
//! contract checked: atomics 8-aligned, every access recorded).

use crate::fault::Fault;
use crate::keys::{Keys, MrEnt};
use crate::memory::{Atomic, Memory};
use crate::op::Op;
use crate::responder::Target;
use ibverbs_abi::*;
use std::cell::RefCell;

mod budget;
mod completer;
mod fault;
mod keys;
mod memory;
mod op_state;
mod recv;
mod responder;

/// Memory for the tests: `bytes` at process address `base`.
pub struct FakeMem {
    pub base: u64,
    pub bytes: RefCell<Vec<u8>>,
}

impl FakeMem {
    pub fn new(base: u64, len: usize) -> FakeMem {
        FakeMem {
            base,
            bytes: RefCell::new(vec![0; len]),
        }
    }

    fn range(&self, a: u64, n: usize) -> Option<std::ops::Range<usize>> {
        let s = a.checked_sub(self.base)? as usize;
        (s + n <= self.bytes.borrow().len()).then_some(s..s + n)
    }
}

impl Memory for FakeMem {
    fn write(&self, dst: u64, src: &[u8]) -> bool {
        let Some(r) = self.range(dst, src.len()) else {
            return false;
        };
        self.bytes.borrow_mut()[r].copy_from_slice(src);
        true
    }

    fn read(&self, src: u64, dst: &mut [u8]) -> bool {
        let Some(r) = self.range(src, dst.len()) else {
            return false;
        };
        dst.copy_from_slice(&self.bytes.borrow()[r]);
        true
    }

    fn atomic(&self, addr: u64, op: Atomic) -> Option<u64> {
        let r = self.range(addr, 8)?;
        let mut b = self.bytes.borrow_mut();
        let old = u64::from_ne_bytes(b[r.clone()].try_into().unwrap());
        let new = match op {
            Atomic::Cas(c, s) => {
                if old == c {
                    s
                } else {
                    old
                }
            }
            Atomic::Add(a) => old.wrapping_add(a),
            Atomic::Store(v) => v,
        };
        b[r].copy_from_slice(&new.to_ne_bytes());
        Some(old)
    }
}

pub fn mr(pd: u32, addr: u64, len: u64, access: u32) -> MrEnt {
    MrEnt {
        pd,
        va: addr,
        addr,
        len,
        access,
        mw: 0,
        parent: 0,
        qpn: 0,
    }
}

#[test]
fn write_checks_in_order() {
    let mem = FakeMem::new(0x1000, 64);
    let mut keys = Keys::default();
    keys.insert(
        0x100,
        mr(1, 0x1000, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
    );
    let t = Target {
        qpn: 7,
        pd: 1,
        qp_access: IBV_ACCESS_REMOTE_WRITE,
        keys: &keys,
    };
    assert_eq!(t.write(&mem, 0x100, 0x1008, b"abcd"), Ok(()));
    assert_eq!(&mem.bytes.borrow()[8..12], b"abcd");
    assert_eq!(t.write(&mem, 0x100, 0x1040 - 2, b"abcd"), Err(Fault::RemoteAccess));
    assert_eq!(
        t.check(Op::Write, 0, 0, 0),
        Ok(None),
        "C9-88: zero length checks no key"
    );
    let no_rights = Target { qp_access: 0, ..t };
    assert_eq!(no_rights.check(Op::Write, 0, 0, 0), Err(Fault::InvalidRequest));
}

// ---- helpers shared by the submodules ------------------------------------

/// Where the test memories start.
const BASE: u64 = 0x10_000;

/// MR, window and remote rights together (an MR that allows everything).
const ALL: u32 = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/// Every right a QP's `qp_access_flags` can give a remote peer.
const QP_ALL: u32 = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

fn sge(addr: u64, length: u32, lkey: u32) -> ibv_sge {
    ibv_sge { addr, length, lkey }
}

/// The `(addr, length, lkey)` of each SGE (`ibv_sge` has no `PartialEq`).
fn sges(list: &[ibv_sge]) -> Vec<(u64, u32, u32)> {
    list.iter().map(|s| (s.addr, s.length, s.lkey)).collect()
}

/// A context with MR 0x100 of PD 1 over [BASE, BASE + 256), and the
/// memory behind it.
fn ctx(access: u32) -> (FakeMem, Keys) {
    let mut keys = Keys::default();
    keys.insert(0x100, mr(1, BASE, 256, access));
    (FakeMem::new(BASE, 256), keys)
}

/// QP 7 of PD 1 with `qp_access`.
fn qp(keys: &Keys, qp_access: u32) -> Target<'_> {
    Target {
        qpn: 7,
        pd: 1,
        qp_access,
        keys,
    }
}

/// A copy of all the bytes of `mem`.
fn snapshot(mem: &FakeMem) -> Vec<u8> {
    mem.bytes.borrow().clone()
}

/// Memory that must not be reached: any access fails the test.
struct Untouched;

impl Memory for Untouched {
    fn write(&self, dst: u64, src: &[u8]) -> bool {
        panic!("write of {} bytes to {dst:#x}", src.len())
    }

    fn read(&self, src: u64, dst: &mut [u8]) -> bool {
        panic!("read of {} bytes from {src:#x}", dst.len())
    }

    fn atomic(&self, addr: u64, op: Atomic) -> Option<u64> {
        panic!("atomic {op:?} at {addr:#x}")
    }
}

/// A [`FakeMem`] with [hole.start, hole.end) no longer mapped: an access
/// touching it fails and changes nothing.
struct Holed {
    mem: FakeMem,
    hole: std::ops::Range<u64>,
}

impl Holed {
    fn hits(&self, a: u64, n: usize) -> bool {
        a < self.hole.end && a + n as u64 > self.hole.start
    }
}

impl Memory for Holed {
    fn write(&self, dst: u64, src: &[u8]) -> bool {
        !self.hits(dst, src.len()) && self.mem.write(dst, src)
    }

    fn read(&self, src: u64, dst: &mut [u8]) -> bool {
        !self.hits(src, dst.len()) && self.mem.read(src, dst)
    }

    fn atomic(&self, addr: u64, op: Atomic) -> Option<u64> {
        if self.hits(addr, 8) {
            return None;
        }
        self.mem.atomic(addr, op)
    }
}

/// A [`FakeMem`] that records every access the engine makes and holds it to
/// the `Memory` contract (an atomic's address is 8-aligned).
struct Strict {
    mem: FakeMem,
    log: RefCell<Vec<(&'static str, u64, usize)>>,
    misaligned: RefCell<Vec<u64>>,
}

impl Strict {
    fn new(base: u64, len: usize) -> Strict {
        Strict {
            mem: FakeMem::new(base, len),
            log: RefCell::new(Vec::new()),
            misaligned: RefCell::new(Vec::new()),
        }
    }

    fn log(&self) -> Vec<(&'static str, u64, usize)> {
        self.log.borrow().clone()
    }
}

impl Memory for Strict {
    fn write(&self, dst: u64, src: &[u8]) -> bool {
        self.log.borrow_mut().push(("write", dst, src.len()));
        self.mem.write(dst, src)
    }

    fn read(&self, src: u64, dst: &mut [u8]) -> bool {
        self.log.borrow_mut().push(("read", src, dst.len()));
        self.mem.read(src, dst)
    }

    fn atomic(&self, addr: u64, op: Atomic) -> Option<u64> {
        self.log.borrow_mut().push(("atomic", addr, 8));
        if !addr.is_multiple_of(8) {
            self.misaligned.borrow_mut().push(addr);
        }
        self.mem.atomic(addr, op)
    }
}

// ---- the helpers themselves: a helper that cannot fail proves nothing ----

#[test]
fn fake_memories_fail_where_they_should() {
    let m = FakeMem::new(BASE, 16);
    assert!(m.write(BASE + 8, &[1; 8]));
    assert!(!m.write(BASE + 9, &[1; 8]), "one byte past the end");
    assert!(!m.write(BASE - 1, &[1]), "before the start");
    let mut b = [0u8; 8];
    assert!(m.read(BASE + 8, &mut b) && b == [1; 8]);
    assert!(!m.read(BASE + 12, &mut b));
    assert_eq!(m.atomic(BASE + 16, Atomic::Add(1)), None);

    let h = Holed {
        mem: FakeMem::new(BASE, 32),
        hole: BASE + 8..BASE + 16,
    };
    assert!(h.write(BASE, &[2; 8]), "just before the hole");
    assert!(h.write(BASE + 16, &[2; 8]), "just after it");
    assert!(!h.write(BASE + 7, &[2; 2]), "into it");
    assert!(!h.read(BASE + 15, &mut [0; 1]));
    assert_eq!(h.atomic(BASE + 8, Atomic::Add(1)), None);
    assert_eq!(&h.mem.bytes.borrow()[8..16], &[0; 8], "the hole is left alone");

    let s = Strict::new(BASE, 16);
    assert_eq!(s.atomic(BASE + 4, Atomic::Add(1)), Some(0));
    assert_eq!(*s.misaligned.borrow(), vec![BASE + 4]);
    assert_eq!(s.log(), vec![("atomic", BASE + 4, 8)]);
}

#[test]
#[should_panic(expected = "write of 1 bytes")]
fn untouched_memory_is_not_touched() {
    Untouched.write(BASE, b"x");
}
