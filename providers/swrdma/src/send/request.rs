//! A send work request as plain values: `SendRequest::read` takes out of
//! `ibv_send_wr`'s unions the members its opcode (and the QP's type) uses,
//! and is the only reader of those unions; the rest of the send path
//! decides on these values.  Also what a request is posted with: its local
//! data once checked (`LocalData`) and the QP's state (`QpView`).

use crate::context::{lock, Qp};
use ibverbs_abi::*;
use std::marker::PhantomData;
use std::os::raw::c_int;

/// Where at the responder an RDMA or atomic request goes.
#[derive(Clone, Copy)]
pub struct Remote {
    pub addr: u64,
    pub rkey: u32,
}

/// The operands of an atomic request as posted: the compare value of
/// CMP_AND_SWP or the value FETCH_AND_ADD adds, and the swap value (carried
/// along unused by FETCH_AND_ADD).
#[derive(Clone, Copy)]
pub struct AtomicArgs {
    pub compare_add: u64,
    pub swap: u64,
}

/// A BIND_MW request: the window (a pointer of the application's, not
/// dereferenced here), its new rkey and what it is bound to.
#[derive(Clone, Copy)]
pub struct MwBind {
    pub mw: *mut ibv_mw,
    pub rkey: u32,
    pub info: ibv_mw_bind_info,
}

/// The destination of a UD request: the address handle (a pointer of the
/// application's, not dereferenced here), the remote QPN and Q_Key.
#[derive(Clone, Copy)]
pub struct UdDest {
    pub ah: *mut ibv_ah,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
}

impl UdDest {
    /// The Q_Key the datagram carries: a Q_Key with the high bit set in the
    /// request stands for the QP's own (`own_qkey`).
    pub fn qkey(&self, own_qkey: u32) -> u32 {
        if self.remote_qkey & 0x8000_0000 != 0 {
            own_qkey
        } else {
            self.remote_qkey
        }
    }
}

/// What a request asks for: its opcode with the operands it takes.
#[derive(Clone, Copy)]
pub enum Operation {
    Send,
    /// `imm`: `imm_data` as posted (the ImmDt bytes as they go on the wire).
    SendWithImm {
        imm: u32,
    },
    /// `rkey`: the rkey the responder invalidates.
    SendWithInv {
        rkey: u32,
    },
    RdmaWrite(Remote),
    /// The immediate data as in `SendWithImm`.
    RdmaWriteWithImm(Remote, u32),
    RdmaRead(Remote),
    CompareAndSwap(Remote, AtomicArgs),
    FetchAndAdd(Remote, AtomicArgs),
    /// The 8 bytes to write are the request's local data.
    AtomicWrite(Remote),
    /// `rkey`: the memory window's rkey to invalidate.
    LocalInv {
        rkey: u32,
    },
    BindMw(MwBind),
}

impl Operation {
    /// The opcode of the request's completion.
    pub fn wc_opcode(&self) -> u32 {
        match self {
            Operation::Send | Operation::SendWithImm { .. } => IBV_WC_SEND,
            Operation::RdmaWrite(_) | Operation::RdmaWriteWithImm(..) => IBV_WC_RDMA_WRITE,
            Operation::RdmaRead(_) => IBV_WC_RDMA_READ,
            Operation::CompareAndSwap(..) => IBV_WC_COMP_SWAP,
            Operation::FetchAndAdd(..) => IBV_WC_FETCH_ADD,
            Operation::AtomicWrite(_) => IBV_WC_ATOMIC_WRITE,
            Operation::SendWithInv { .. } => IBV_WC_SEND,
            Operation::BindMw(_) => IBV_WC_BIND_MW,
            Operation::LocalInv { .. } => IBV_WC_LOCAL_INV,
        }
    }

    /// Whether a QP of type `qpt` offers the operation: UD only sends, UC
    /// has no RDMA read and no atomics.
    pub fn allowed_on(&self, qpt: u32) -> bool {
        match qpt {
            IBV_QPT_UD => matches!(self, Operation::Send | Operation::SendWithImm { .. }),
            IBV_QPT_UC => matches!(
                self,
                Operation::Send
                    | Operation::SendWithImm { .. }
                    | Operation::RdmaWrite(_)
                    | Operation::RdmaWriteWithImm(..)
                    | Operation::BindMw(_)
                    | Operation::LocalInv { .. }
            ),
            _ => true,
        }
    }

    /// Whether the local data may be inline data (IBV_SEND_INLINE): the
    /// operations that send it.
    pub fn takes_inline(&self) -> bool {
        matches!(
            self,
            Operation::Send
                | Operation::SendWithImm { .. }
                | Operation::SendWithInv { .. }
                | Operation::RdmaWrite(_)
                | Operation::RdmaWriteWithImm(..)
                | Operation::AtomicWrite(_)
        )
    }

    /// CMP_AND_SWP or FETCH_AND_ADD.
    pub fn is_atomic(&self) -> bool {
        matches!(self, Operation::CompareAndSwap(..) | Operation::FetchAndAdd(..))
    }

    pub fn is_read(&self) -> bool {
        matches!(self, Operation::RdmaRead(_))
    }

    pub fn is_atomic_write(&self) -> bool {
        matches!(self, Operation::AtomicWrite(_))
    }

    /// The immediate data (SEND_WITH_IMM, RDMA_WRITE_WITH_IMM).
    pub fn imm(&self) -> Option<u32> {
        match *self {
            Operation::SendWithImm { imm } | Operation::RdmaWriteWithImm(_, imm) => Some(imm),
            _ => None,
        }
    }

    /// The rkey SEND_WITH_INV has the responder invalidate.
    pub fn invalidated_rkey(&self) -> Option<u32> {
        match *self {
            Operation::SendWithInv { rkey } => Some(rkey),
            _ => None,
        }
    }

    /// Where an RDMA or atomic request goes.
    pub fn remote(&self) -> Option<Remote> {
        match *self {
            Operation::RdmaWrite(r)
            | Operation::RdmaWriteWithImm(r, _)
            | Operation::RdmaRead(r)
            | Operation::CompareAndSwap(r, _)
            | Operation::FetchAndAdd(r, _)
            | Operation::AtomicWrite(r) => Some(r),
            _ => None,
        }
    }

    /// The operands of CMP_AND_SWP and FETCH_AND_ADD.
    pub fn atomic_args(&self) -> Option<AtomicArgs> {
        match *self {
            Operation::CompareAndSwap(_, a) | Operation::FetchAndAdd(_, a) => Some(a),
            _ => None,
        }
    }
}

/// A send work request read out of an `ibv_send_wr` (`read`).
pub struct SendRequest<'a> {
    pub wr_id: u64,
    pub op: Operation,
    pub send_flags: u32,
    /// A UD QP's request: its destination (None for the other QP types).
    pub ud: Option<UdDest>,
    /// An XRC initiator's request: the SRQ at the target (None for the
    /// other QP types).
    pub xrc_srqn: Option<u32>,
    pub num_sge: c_int,
    sg_list: *const ibv_sge,
    /// The gather list is the application's, borrowed with the request.
    _wr: PhantomData<&'a ibv_send_wr>,
}

impl<'a> SendRequest<'a> {
    /// Reads `wr`, posted to a QP of type `qpt`: the members of its unions
    /// that its opcode and `qpt` use.  None: an opcode this device does not
    /// have (TSO, driver opcodes, any other number).
    pub fn read(wr: &'a ibv_send_wr, qpt: u32) -> Option<SendRequest<'a>> {
        // SAFETY: each member is read only for the opcode (the QP type for
        // `ud` and `xrc`) that uses it; all are integers and raw pointers
        // (`ah`, `mw`, `bind_info.mr`, only copied here, never
        // dereferenced): any bits are a value.
        let (op, ud, xrc_srqn) = unsafe {
            let rdma = || Remote {
                addr: wr.wr.rdma.remote_addr,
                rkey: wr.wr.rdma.rkey,
            };
            let atomic = || {
                let a = wr.wr.atomic;
                let remote = Remote {
                    addr: a.remote_addr,
                    rkey: a.rkey,
                };
                let args = AtomicArgs {
                    compare_add: a.compare_add,
                    swap: a.swap,
                };
                (remote, args)
            };
            let op = match wr.opcode {
                IBV_WR_SEND => Operation::Send,
                IBV_WR_SEND_WITH_IMM => Operation::SendWithImm { imm: wr.imm.imm_data },
                IBV_WR_SEND_WITH_INV => Operation::SendWithInv {
                    rkey: wr.imm.invalidate_rkey,
                },
                IBV_WR_RDMA_WRITE => Operation::RdmaWrite(rdma()),
                IBV_WR_RDMA_WRITE_WITH_IMM => Operation::RdmaWriteWithImm(rdma(), wr.imm.imm_data),
                IBV_WR_RDMA_READ => Operation::RdmaRead(rdma()),
                IBV_WR_ATOMIC_CMP_AND_SWP => {
                    let (r, a) = atomic();
                    Operation::CompareAndSwap(r, a)
                }
                IBV_WR_ATOMIC_FETCH_AND_ADD => {
                    let (r, a) = atomic();
                    Operation::FetchAndAdd(r, a)
                }
                IBV_WR_ATOMIC_WRITE => Operation::AtomicWrite(rdma()),
                IBV_WR_LOCAL_INV => Operation::LocalInv {
                    rkey: wr.imm.invalidate_rkey,
                },
                IBV_WR_BIND_MW => {
                    let b = wr.bind_mw_tso.bind_mw;
                    Operation::BindMw(MwBind {
                        mw: b.mw,
                        rkey: b.rkey,
                        info: b.bind_info,
                    })
                }
                _ => return None,
            };
            // (Only a UD QP's requests have the `ud` member, only an XRC
            // initiator's the `xrc` one.)
            let ud = if qpt == IBV_QPT_UD {
                Some(UdDest {
                    ah: wr.wr.ud.ah,
                    remote_qpn: wr.wr.ud.remote_qpn,
                    remote_qkey: wr.wr.ud.remote_qkey,
                })
            } else {
                None
            };
            let xrc_srqn = if qpt == IBV_QPT_XRC_SEND {
                Some(wr.qp_type.xrc.remote_srqn)
            } else {
                None
            };
            (op, ud, xrc_srqn)
        };
        Some(SendRequest {
            wr_id: wr.wr_id,
            op,
            send_flags: wr.send_flags,
            ud,
            xrc_srqn,
            num_sge: wr.num_sge,
            sg_list: wr.sg_list,
            _wr: PhantomData,
        })
    }

    pub fn signaled(&self) -> bool {
        self.send_flags & IBV_SEND_SIGNALED != 0
    }

    pub fn solicited(&self) -> bool {
        self.send_flags & IBV_SEND_SOLICITED != 0
    }

    /// IBV_SEND_INLINE (whether the operation takes inline data is
    /// `Operation::takes_inline`).
    pub fn inline_flag(&self) -> bool {
        self.send_flags & IBV_SEND_INLINE != 0
    }

    /// The gather list as posted.
    ///
    /// # Safety
    /// `num_sge` was checked not negative, and the request is valid: it has
    /// `num_sge` SGEs at `sg_list`, unchanged during the call.
    pub unsafe fn gather_list(&self) -> &'a [ibv_sge] {
        if self.num_sge > 0 {
            // SAFETY: a valid request has `num_sge` (> 0) SGEs at
            // `sg_list`, unchanged during the call (the contract).
            unsafe { std::slice::from_raw_parts(self.sg_list, self.num_sge as usize) }
        } else {
            &[]
        }
    }
}

/// A request's local data once checked (post_one): the gather list as
/// posted, the one accesses use (`check_local`'s translation, if it made
/// one), the total length, and whether it is inline data.
pub struct LocalData<'a> {
    pub posted: &'a [ibv_sge],
    pub translated: Option<Vec<ibv_sge>>,
    pub len: u64,
    pub inline: bool,
}

impl LocalData<'_> {
    /// The gather list the request accesses.
    pub fn sges(&self) -> &[ibv_sge] {
        self.translated.as_deref().unwrap_or(self.posted)
    }
}

/// What posting needs of the QP's state, read under one lock.
pub struct QpView {
    pub state: u32,
    pub dest_qpn: u32,
    /// The link to the connected peer's process, if made (ring transport).
    pub link: Option<crate::links::OutLink>,
    pub own_qkey: u32,
    /// The source GID index of the QP's address vector.
    pub av_sgid: u8,
    /// Requests in the send queue, not yet completed.
    pub outstanding: usize,
    /// The path MTU in bytes.
    pub pmtu: u32,
}

impl QpView {
    pub fn of(qp: &Qp) -> QpView {
        let st = lock(&qp.st);
        QpView {
            state: st.state,
            dest_qpn: st.attr.dest_qp_num,
            link: st.link.clone(),
            own_qkey: st.attr.qkey,
            av_sgid: st.attr.ah_attr.grh.sgid_index,
            outstanding: st.sq.len(),
            pmtu: swrdma_rc::responder::pmtu_bytes(st.attr.path_mtu),
        }
    }
}
