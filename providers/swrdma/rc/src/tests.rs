//! Unit tests of the engine: requests and responses fed in, answers and
//! completions checked — no process, socket or thread.

use crate::fault::Fault;
use crate::keys::{Keys, MrEnt};
use crate::memory::{Atomic, Memory};
use crate::op::Op;
use crate::responder::Target;
use ibverbs_abi::*;
use std::cell::RefCell;

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
    assert_eq!(no_rights.check(Op::Write, 0, 0, 0), Err(Fault::RemoteAccess));
}
