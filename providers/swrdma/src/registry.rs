//! A context's verbs objects by kind and handle, as the kernel's uverbs
//! object table: a verb given an object looks its `handle` up in the table
//! of the context the object names, and refuses an object that is not
//! there (its handle altered, another context's, already destroyed) before
//! touching it.  The table also holds the count of each kind against the
//! device's advertised limit (`max_pd`, `max_qp`, ...): one more is EINVAL,
//! as rxe's object pools answer one past their limit (measured on Linux
//! 6.1 in compat-tests/vm-sweep; a hardware device may say ENOMEM).  The
//! limits count per context (a device with a kernel counts per device; this
//! one has no common place to count).

use std::collections::{HashMap, HashSet, VecDeque};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// The kinds of objects the table holds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    Pd = 0,
    Cq,
    Qp,
    Srq,
    Mr,
    Mw,
    Ah,
}

const KINDS: usize = 7;
const ALL: [Kind; KINDS] = [Kind::Pd, Kind::Cq, Kind::Qp, Kind::Srq, Kind::Mr, Kind::Mw, Kind::Ah];

/// The device's advertised limit of each kind (query_device_ex reports
/// these): below rxe's (2^20 for most kinds, 32767 AHs), so that a test
/// can reach them in little time.
pub const fn limit(k: Kind) -> u32 {
    match k {
        Kind::Pd | Kind::Cq | Kind::Qp | Kind::Srq | Kind::Mr | Kind::Mw | Kind::Ah => 16384,
    }
}

/// The addresses of every live object of the process's contexts: a destroy
/// verb given anything else (an object destroyed already, whose memory is
/// freed) refuses before reading it (ENOENT, as the kernel's lookup of a
/// handle it no longer has).
static LIVE: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

/// Whether `p` is a live object of one of our contexts.
pub fn live(p: *const u8) -> bool {
    crate::sys::lock(&LIVE)
        .as_ref()
        .is_some_and(|s| s.contains(&(p as usize)))
}

/// How many destroyed objects keep their memory before it goes back to
/// malloc (see `retire`).
const QUARANTINE: usize = 256;

/// Destroyed objects whose memory is kept (oldest first), each with the
/// function that frees it.
static RETIRED: Mutex<VecDeque<Retired>> = Mutex::new(VecDeque::new());

/// A destroyed object's address and the function that frees it.
type Retired = (usize, unsafe fn(usize));

/// Frees a destroyed object's box only after `QUARANTINE` more objects
/// were destroyed: the application's structure (its `context` above all,
/// which libibverbs reads to find the verb) stays as it was a while, so a
/// second destroy reaches the provider, which refuses it (`live`), instead
/// of following what malloc wrote into freed memory.
pub fn retire<T>(b: Box<T>) {
    /// # Safety
    /// `p` is the `Box::into_raw` of a `Box<T>`, freed once.
    unsafe fn free<T>(p: usize) {
        // SAFETY: the contract.
        drop(unsafe { Box::from_raw(p as *mut T) });
    }
    let p = Box::into_raw(b) as usize;
    let old = {
        let mut q = crate::sys::lock(&RETIRED);
        q.push_back((p, free::<T> as unsafe fn(usize)));
        if q.len() > QUARANTINE {
            q.pop_front()
        } else {
            None
        }
    };
    if let Some((p, f)) = old {
        // SAFETY: `p` was retired as the `T` whose `free` is `f`, once.
        unsafe { f(p) };
    }
}

#[derive(Default)]
pub struct Registry {
    map: Mutex<HashMap<(Kind, u32), usize>>,
    counts: [AtomicU32; KINDS],
}

/// A place for one more object of a kind, taken before the object is made
/// (given back when dropped unless `commit`ted).
pub struct Slot<'a> {
    reg: &'a Registry,
    kind: Kind,
    done: bool,
}

impl Slot<'_> {
    /// The object is made: `handle` names `ptr` in the table.
    pub fn commit(mut self, handle: u32, ptr: *const u8) {
        self.done = true;
        crate::sys::lock(&self.reg.map).insert((self.kind, handle), ptr as usize);
        crate::sys::lock(&LIVE)
            .get_or_insert_with(HashSet::new)
            .insert(ptr as usize);
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.reg.counts[self.kind as usize].fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Registry {
    /// A place for one more object of kind `k`: EINVAL at the limit.
    pub fn reserve(&self, k: Kind) -> Result<Slot<'_>, c_int> {
        let c = &self.counts[k as usize];
        if c.fetch_add(1, Ordering::SeqCst) >= limit(k) {
            c.fetch_sub(1, Ordering::SeqCst);
            return Err(libc::EINVAL);
        }
        Ok(Slot {
            reg: self,
            kind: k,
            done: false,
        })
    }

    /// Whether `handle` names the object at `ptr` (of kind `k`): as the
    /// kernel's lookup, ENOENT when no object has the handle, EINVAL when
    /// one of another kind has it (and ENOENT when it names another object
    /// of the kind, which the kernel would take for the one meant).
    pub fn check(&self, k: Kind, handle: u32, ptr: *const u8) -> Result<(), c_int> {
        Self::lookup(&crate::sys::lock(&self.map), k, handle, ptr)
    }

    fn lookup(m: &HashMap<(Kind, u32), usize>, k: Kind, handle: u32, ptr: *const u8) -> Result<(), c_int> {
        match m.get(&(k, handle)) {
            Some(&p) if p == ptr as usize => Ok(()),
            Some(_) => Err(libc::ENOENT),
            None if ALL.iter().any(|&o| m.contains_key(&(o, handle))) => Err(libc::EINVAL),
            None => Err(libc::ENOENT),
        }
    }

    /// Takes the object out of the table (it is being destroyed); the
    /// errno of `check` if `handle` does not name it (nothing changes then).
    pub fn remove(&self, k: Kind, handle: u32, ptr: *const u8) -> Result<(), c_int> {
        let mut m = crate::sys::lock(&self.map);
        Self::lookup(&m, k, handle, ptr)?;
        m.remove(&(k, handle));
        if let Some(s) = crate::sys::lock(&LIVE).as_mut() {
            s.remove(&(ptr as usize));
        }
        self.counts[k as usize].fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_limits() {
        let r = Registry::default();
        let a = 0x1000 as *const u8;
        r.reserve(Kind::Pd).unwrap().commit(7, a);
        assert_eq!(r.check(Kind::Pd, 7, a), Ok(()));
        assert!(live(a));
        assert_eq!(r.check(Kind::Pd, 8, a), Err(libc::ENOENT));
        assert_eq!(r.check(Kind::Cq, 7, a), Err(libc::EINVAL));
        assert_eq!(r.check(Kind::Pd, 7, 0x2000 as *const u8), Err(libc::ENOENT));
        assert!(r.remove(Kind::Pd, 1007, a).is_err());
        assert_eq!(r.remove(Kind::Pd, 7, a), Ok(()));
        assert!(!live(a));
        assert_eq!(r.remove(Kind::Pd, 7, a), Err(libc::ENOENT));
        let mut v = Vec::new();
        for _ in 0..limit(Kind::Ah) {
            v.push(r.reserve(Kind::Ah).unwrap());
        }
        assert_eq!(r.reserve(Kind::Ah).err(), Some(libc::EINVAL));
        v.pop();
        assert!(r.reserve(Kind::Ah).is_ok());
    }
}
