//! The memory-key model of a context: memory regions and bound memory
//! windows by key, what a local scatter/gather list may touch, what a
//! remote access is granted, window binding and invalidation.

use crate::nummap::NumMap;
use ibverbs_abi::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrEnt {
    pub pd: u32,
    /// Where the range is in the process (`addr` of the MR's I/O virtual
    /// address space maps to `va`).
    pub va: u64,
    pub addr: u64,
    pub len: u64,
    pub access: u32,
    /// 0: a memory region; 1, 2: a bound memory window of that type.
    pub mw: u32,
    /// A window: the lkey of the MR it lies in (which must still exist).
    pub parent: u32,
    /// A type 2 window: the only QP remote accesses may come through.
    pub qpn: u32,
}

/// A memory-window bind, as read from the application's objects.
pub struct WindowBind {
    /// IBV_MW_TYPE_1 or _2.
    pub ty: u32,
    /// The window's current rkey.
    pub old: u32,
    /// The window's PD.
    pub pd: u32,
    pub access: u32,
    /// Type 2: the 8-bit key the consumer chose.
    pub rkey: u32,
    /// The MR's lkey, start and length; None: unbind.
    pub range: Option<(u32, u64, u64)>,
}

/// The keys of one context.
#[derive(Default)]
pub struct Keys {
    map: NumMap<MrEnt>,
}

fn inside(addr: u64, len: u64, m: &MrEnt) -> bool {
    addr >= m.addr && addr.checked_add(len).is_some_and(|e| e <= m.addr.saturating_add(m.len))
}

impl Keys {
    pub fn get(&self, key: u32) -> Option<MrEnt> {
        self.map.get(&key).copied()
    }

    pub fn insert(&mut self, key: u32, e: MrEnt) {
        self.map.insert(key, e);
    }

    pub fn remove(&mut self, key: u32) -> Option<MrEnt> {
        self.map.remove(&key)
    }

    /// Changes MR `key` in place (rereg): its new entry, None when none.
    pub fn update(&mut self, key: u32, f: impl FnOnce(&mut MrEnt)) -> Option<MrEnt> {
        let e = self.map.get_mut(&key)?;
        f(e);
        Some(*e)
    }

    /// The process address of `addr` when `rkey` grants `access` to
    /// [addr, addr+len) through QP `qpn` of PD `pd`: the key's PD, a
    /// window's MR still there, a type 2 window's QP, the rights, the range.
    pub fn grant(&self, qpn: u32, pd: u32, rkey: u32, addr: u64, len: u64, access: u32) -> Option<u64> {
        let m = self.map.get(&rkey)?;
        let ok = m.pd == pd
            && (m.mw == 0 || self.map.contains_key(&m.parent))
            && (m.qpn == 0 || m.qpn == qpn)
            && m.access & access == access
            && inside(addr, len, m);
        ok.then(|| addr - m.addr + m.va)
    }

    /// Checks a local SGE list of PD `pd`; `write`: the data will be
    /// written into it.  SGE addresses are in the MR's address space:
    /// Ok(Some(list)) gives the list with process addresses when any
    /// differs, Ok(None) when they are the same; Err(LOC_PROT_ERR).
    pub fn check_local(&self, pd: u32, sges: &[ibv_sge], write: bool) -> Result<Option<Vec<ibv_sge>>, u32> {
        let mut out: Option<Vec<ibv_sge>> = None;
        for (i, s) in sges.iter().enumerate() {
            if s.length == 0 {
                continue;
            }
            let Some(m) = self.map.get(&s.lkey) else {
                return Err(IBV_WC_LOC_PROT_ERR);
            };
            if m.mw != 0 || m.pd != pd || !inside(s.addr, s.length as u64, m) {
                return Err(IBV_WC_LOC_PROT_ERR);
            }
            if write && m.access & IBV_ACCESS_LOCAL_WRITE == 0 {
                return Err(IBV_WC_LOC_PROT_ERR);
            }
            if m.va != m.addr {
                let v = out.get_or_insert_with(|| sges.to_vec());
                v[i].addr = s.addr - m.addr + m.va;
            }
        }
        Ok(out)
    }

    /// Forgets window `rkey` if it is bound (dealloc_mw).
    pub fn unbind_window(&mut self, rkey: u32) {
        if self.map.get(&rkey).is_some_and(|m| m.mw != 0) {
            self.map.remove(&rkey);
        }
    }

    /// Binds (or, without a range, unbinds) a window through QP `qpn` of PD
    /// `qp_pd`, checked against the MR it lies in: the window's new rkey,
    /// or the completion status (`MW_BIND_ERR`).
    pub fn bind_window(&mut self, qpn: u32, qp_pd: u32, b: &WindowBind) -> Result<u32, u32> {
        let remote = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
        if b.access & !(remote | IBV_ACCESS_LOCAL_WRITE) != 0 {
            return Err(IBV_WC_MW_BIND_ERR); // zero-based windows are not offered
        }
        let bound = self.map.get(&b.old).is_some_and(|m| m.mw != 0);
        // (A type 2 window is unbound only by invalidation: a bind of length
        // 0 is refused, as rxe refuses it.)
        if b.ty == IBV_MW_TYPE_2 && (bound || qp_pd != b.pd || b.range.is_none()) {
            return Err(IBV_WC_MW_BIND_ERR);
        }
        let ent = match b.range {
            Some(r) => Some(self.window_entry(qpn, b, r)?),
            None => None,
        };
        if bound {
            self.map.remove(&b.old);
        }
        // The index stays, the consumer chooses the 8-bit key (type 2; type
        // 1: the next one).
        let new = if b.ty == IBV_MW_TYPE_2 {
            (b.old & !0xff) | (b.rkey & 0xff)
        } else {
            (b.old & !0xff) | (b.old.wrapping_add(1) & 0xff)
        };
        if let Some(e) = ent {
            self.map.insert(new, e);
        }
        Ok(new)
    }

    fn window_entry(&self, qpn: u32, b: &WindowBind, (lkey, addr, length): (u32, u64, u64)) -> Result<MrEnt, u32> {
        let Some(mr) = self.map.get(&lkey).copied() else {
            return Err(IBV_WC_MW_BIND_ERR);
        };
        if mr.mw != 0 || mr.pd != b.pd || mr.access & IBV_ACCESS_MW_BIND == 0 || !inside(addr, length, &mr) {
            return Err(IBV_WC_MW_BIND_ERR);
        }
        if b.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0
            && mr.access & IBV_ACCESS_LOCAL_WRITE == 0
        {
            return Err(IBV_WC_MW_BIND_ERR);
        }
        Ok(MrEnt {
            pd: b.pd,
            va: mr.va + (addr - mr.addr),
            addr,
            len: length,
            access: b.access & !IBV_ACCESS_LOCAL_WRITE,
            mw: b.ty,
            parent: lkey,
            qpn: if b.ty == IBV_MW_TYPE_2 { qpn } else { 0 },
        })
    }

    /// Invalidates the type 2 window `rkey` (LOCAL_INV, SEND_WITH_INV);
    /// `qpn`: the QP a remote invalidation came in on (0: local).  False:
    /// no such window, or not through that QP.
    pub fn invalidate(&mut self, rkey: u32, qpn: u32) -> bool {
        match self.map.get(&rkey) {
            Some(m) if m.mw == 2 && (qpn == 0 || m.qpn == qpn) => {
                self.map.remove(&rkey);
                true
            }
            _ => false,
        }
    }
}
