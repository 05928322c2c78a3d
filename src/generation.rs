//! Provider generations: the private ABIs of the providers this one library
//! serves at once, and everything that differs between them, in one table.
//!
//! | generation | node                 | file suffix    | rdma-core |
//! |------------|----------------------|----------------|-----------|
//! | [`Pabi::P34`] | `IBVERBS_PRIVATE_34` | `-rdmav34.so` | 44 (bookworm) to 56 (trixie) |
//! | [`Pabi::P65`] | `IBVERBS_PRIVATE_65` | `-rdmav65.so` | 65 (sid)  |
//!
//! What differs, and where it is translated:
//! * the `verbs_context` a provider embeds: rdma-core 65's has six op
//!   pointers in front ([`verbs_context_65_front`]); every other member keeps
//!   its offset from `context`.  The library works on the common part (its
//!   "view", [`verbs_context`]) and converts at the entry points that take or
//!   return a provider's `verbs_context` ([`Pabi::view`], [`Pabi::real`]);
//!   `sz` is the generation's own size;
//! * the op table handed to `verbs_set_ops`: 76 members for PABI 34, 93 for
//!   PABI 65 (sorted by name, so most moved); the library dispatches through
//!   the 65 layout and translates an older table by name
//!   ([`verbs_context_ops_65::from_34`]);
//! * `ibv_cmd_*` whose prototype changed (`get_context` gained `fd_arr`,
//!   `create_cq_ex{,2}` gained `prov_attr`, `create_qp_ex2` gained
//!   `driver`): one implementation with the newest prototype; the PABI 34
//!   entry points (`src/api/cmd.rs`, `src/api/provider.rs`) pass the absent
//!   arguments as NULL;
//! * within PABI 34, which grew without a bump: `ibv_cmd_reg_dmabuf_mr` got
//!   its `driver` argument in rdma-core 54.  A provider built before that
//!   leaves garbage there; the argument is read only from a provider that
//!   imports a symbol added after it (`ibv_cmd_create_cq_ex2`, rdma-core 53,
//!   is the one such a provider — mlx5 — needs), see [`Registration`].
//!   `ibv_cmd_query_port` writes `active_speed_ex` (rdma-core 50) only into
//!   the library's own full-size buffer or for a PABI 65 provider, never
//!   past the end of an older provider's own `ibv_port_attr`.
//!
//! Every name of the private ABI that keeps its prototype is exported at
//! both versions: the PABI 65 definition is the default (`name@@IBVERBS_PRIVATE_65`),
//! and an alias of it carries `name@IBVERBS_PRIVATE_34` (the `.symver`
//! block below).

use std::os::raw::c_void;

use crate::abi::*;

/// A provider's private-ABI generation.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Pabi {
    #[default]
    P34,
    P65,
}

/// The facts of one generation.
pub struct Generation {
    pub pabi: Pabi,
    /// The number in `lib<name>-rdmav<N>.so` and `IBVERBS_PRIVATE_<N>`.
    pub number: u32,
    /// Bytes of the generation's `verbs_context` in front of the common part.
    pub front: usize,
    /// `sizeof(struct verbs_context)` of the generation (its `sz`).
    pub vctx_size: usize,
}

/// Every generation served, newest first (the order in which provider files
/// are looked for when several generations of one provider are installed).
pub static GENERATIONS: [Generation; 2] = [
    Generation {
        pabi: Pabi::P65,
        number: 65,
        front: core::mem::size_of::<verbs_context_65_front>(),
        vctx_size: core::mem::size_of::<verbs_context_65>(),
    },
    Generation {
        pabi: Pabi::P34,
        number: 34,
        front: 0,
        vctx_size: core::mem::size_of::<verbs_context>(),
    },
];

impl Pabi {
    /// The generation's facts.
    pub fn info(self) -> &'static Generation {
        match self {
            Pabi::P65 => &GENERATIONS[0],
            Pabi::P34 => &GENERATIONS[1],
        }
    }

    /// The generation whose number is `n`.
    pub fn from_number(n: u32) -> Option<Pabi> {
        GENERATIONS.iter().find(|g| g.number == n).map(|g| g.pabi)
    }

    /// The library's view (the common part) of a provider's
    /// `verbs_context` of this generation.  Only address arithmetic.
    pub fn view(self, real: *mut c_void) -> *mut verbs_context {
        real.cast::<u8>().wrapping_add(self.info().front).cast()
    }

    /// The provider's `verbs_context` of this generation, from the view.
    pub fn real(self, view: *mut verbs_context) -> *mut c_void {
        view.cast::<u8>().wrapping_sub(self.info().front).cast()
    }

    /// The rdma-core 65 front of a context, when the generation has one.
    pub fn front_of(self, view: *mut verbs_context) -> Option<*mut verbs_context_65_front> {
        match self {
            Pabi::P65 => Some(self.real(view).cast()),
            Pabi::P34 => None,
        }
    }
}

/// What the library records of a provider when it registers.  The
/// default (a provider that never registered: built-in tables of tests) is
/// PABI 34 of rdma-core 44: without the later `driver` argument, with the
/// old `verbs_qp`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Registration {
    pub pabi: Pabi,
    /// Whether `ibv_cmd_reg_dmabuf_mr`'s `driver` argument is read (always
    /// for PABI 65; for PABI 34 only from a provider built from rdma-core 53
    /// or later, recognised by its import of `ibv_cmd_create_cq_ex2`).
    pub dmabuf_driver_arg: bool,
    /// Whether the provider's `verbs_qp` has rdma-core 45's layout:
    /// `ibv_qp_ex` gained `wr_flush`, so `comp_mask` and `xrcd` after it
    /// moved by one pointer.  `Some(true)` for PABI 65 and for the PABI 34
    /// providers recognised as rdma-core 53 or later; `None` for the other
    /// PABI 34 providers, which may be of 44 (old layout) or of 45 to 52
    /// (new layout) with nothing in their files to tell: the library then
    /// writes only what is harmless in both (see `kernel::verbs::qp`).
    pub qp_ex_grown: Option<bool>,
}

impl Default for Registration {
    fn default() -> Self {
        Registration {
            pabi: Pabi::P34,
            dmabuf_driver_arg: false,
            qp_ex_grown: Some(false),
        }
    }
}

/// Where a provider's `verbs_qp` keeps `comp_mask` and `xrcd`: the
/// library's (rdma-core 44) offsets plus this many bytes.
pub fn qp_tail_shift(grown: bool) -> usize {
    if grown {
        core::mem::size_of::<usize>()
    } else {
        0
    }
}

/// `comp_mask` and `xrcd` of a provider's `verbs_qp`, in its layout.
pub fn qp_tail(vqp: *mut verbs_qp, grown: bool) -> (*mut u32, *mut *mut verbs_xrcd) {
    let shift = qp_tail_shift(grown);
    let base = vqp.cast::<u8>();
    (
        base.wrapping_add(core::mem::offset_of!(verbs_qp, comp_mask) + shift)
            .cast(),
        base.wrapping_add(core::mem::offset_of!(verbs_qp, xrcd) + shift).cast(),
    )
}

/// `ibv_qp_to_qp_ex`'s question, for a QP of any layout: is VERBS_QP_EX set
/// in its `comp_mask`?  The QP's context knows the layout when the provider
/// is known to be rdma-core 45 or later; otherwise both places are looked
/// at, and a word counts as `comp_mask` only when it holds nothing but
/// VERBS_QP_* bits (at the other place lies a pointer: `wr_flush`, or
/// `xrcd`, whose low 32 bits are never 2 or 3).
///
/// # Safety
/// `qp` is a live QP, the first member of its provider's `verbs_qp` (of
/// either layout: both are at least one pointer longer than the place read).
pub unsafe fn qp_is_ex(qp: *mut ibv_qp, grown: Option<bool>) -> bool {
    let vqp = qp.cast::<verbs_qp>();
    let is_ex = |g: bool| {
        // SAFETY: the comp_mask of one of the two layouts, inside the
        // provider's verbs_qp (contract).
        let w = unsafe { qp_tail(vqp, g).0.read_unaligned() };
        w & !(VERBS_QP_XRCD | VERBS_QP_EX) == 0 && w & VERBS_QP_EX != 0
    };
    match grown {
        Some(g) => is_ex(g),
        None => is_ex(false) || is_ex(true),
    }
}

/// The names of the private ABI whose prototype is the same in every
/// generation: defined once, exported at both versions.
macro_rules! private_both {
    ($($name:ident)*) => {
        // Not in unit-test builds: they link no shared object.
        #[cfg(not(test))]
        std::arch::global_asm!(
            $(
                concat!(".globl __ibvrs_p34_", stringify!($name)),
                concat!(".set __ibvrs_p34_", stringify!($name), ", ", stringify!($name)),
                concat!(".symver __ibvrs_p34_", stringify!($name), ", ", stringify!($name), "@IBVERBS_PRIVATE_34"),
                concat!(".globl __ibvrs_p65_", stringify!($name)),
                concat!(".set __ibvrs_p65_", stringify!($name), ", ", stringify!($name)),
                concat!(".symver __ibvrs_p65_", stringify!($name), ", ", stringify!($name), "@@IBVERBS_PRIVATE_65"),
            )*
        );
        /// The names exported at both private versions (for tests).
        pub const PRIVATE_BOTH: &[&str] = &[$(stringify!($name)),*];
    };
}

private_both! {
    __ioctl_final_num_attrs execute_ioctl
    ibv_cmd_advise_mr ibv_cmd_alloc_dm ibv_cmd_alloc_mw ibv_cmd_alloc_pd ibv_cmd_attach_mcast
    ibv_cmd_close_xrcd ibv_cmd_create_ah ibv_cmd_create_counters ibv_cmd_create_cq
    ibv_cmd_create_flow ibv_cmd_create_flow_action_esp ibv_cmd_create_qp ibv_cmd_create_qp_ex
    ibv_cmd_create_rwq_ind_table ibv_cmd_create_srq ibv_cmd_create_srq_ex ibv_cmd_create_wq
    ibv_cmd_dealloc_mw ibv_cmd_dealloc_pd ibv_cmd_dereg_mr ibv_cmd_destroy_ah ibv_cmd_destroy_counters
    ibv_cmd_destroy_cq ibv_cmd_destroy_flow ibv_cmd_destroy_flow_action ibv_cmd_destroy_qp
    ibv_cmd_destroy_rwq_ind_table ibv_cmd_destroy_srq ibv_cmd_destroy_wq ibv_cmd_detach_mcast
    ibv_cmd_free_dm ibv_cmd_modify_cq ibv_cmd_modify_flow_action_esp ibv_cmd_modify_qp
    ibv_cmd_modify_qp_ex ibv_cmd_modify_srq ibv_cmd_modify_wq ibv_cmd_open_qp ibv_cmd_open_xrcd
    ibv_cmd_poll_cq ibv_cmd_post_recv ibv_cmd_post_send ibv_cmd_post_srq_recv ibv_cmd_query_context
    ibv_cmd_query_device_any ibv_cmd_query_mr ibv_cmd_query_port ibv_cmd_query_qp ibv_cmd_query_srq
    ibv_cmd_read_counters ibv_cmd_reg_dm_mr ibv_cmd_reg_mr ibv_cmd_req_notify_cq ibv_cmd_rereg_mr
    ibv_cmd_resize_cq ibv_query_gid_type ibv_wr_opcode_str
    verbs_allow_disassociate_destroy verbs_init_cq verbs_open_device
}

/// The names whose PABI 34 prototype differs: their own definition
/// (`__ibvrs_p34_<name>`, in src/api/) carries `name@IBVERBS_PRIVATE_34`.
macro_rules! private_34_own {
    ($($name:ident)*) => {
        #[cfg(not(test))]
        std::arch::global_asm!(
            $(concat!(".symver __ibvrs_p34_", stringify!($name), ", ", stringify!($name), "@IBVERBS_PRIVATE_34"),)*
        );
        /// The names with a PABI 34 definition of their own (for tests).
        pub const PRIVATE_34_OWN: &[&str] = &[$(stringify!($name)),*];
    };
}

private_34_own! {
    _verbs_init_and_alloc_context verbs_set_ops verbs_uninit_context ibv_cmd_get_context
    ibv_cmd_create_cq_ex ibv_cmd_create_cq_ex2 ibv_cmd_create_qp_ex2 ibv_cmd_reg_dmabuf_mr
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_is_six_pointers_and_views_round_trip() {
        assert_eq!(Pabi::P65.info().front, 6 * core::mem::size_of::<usize>());
        assert_eq!(Pabi::P65.info().vctx_size, Pabi::P34.info().vctx_size + 48);
        let mut v: verbs_context_65 = unsafe_zeroed();
        let real = (&mut v as *mut verbs_context_65).cast::<c_void>();
        let view = Pabi::P65.view(real);
        assert_eq!(view, core::ptr::addr_of_mut!(v.common));
        assert_eq!(Pabi::P65.real(view), real);
        assert_eq!(Pabi::P34.view(real), real.cast());
        assert_eq!(Pabi::from_number(65), Some(Pabi::P65));
        assert_eq!(Pabi::from_number(34), Some(Pabi::P34));
        assert_eq!(Pabi::from_number(35), None);
    }

    /// VERBS_QP_EX is found in either verbs_qp layout, and a pointer in
    /// the other place is not taken for it.
    #[test]
    fn qp_ex_in_both_layouts() {
        #[repr(C)]
        struct Grown {
            vqp: verbs_qp,
            tail: [usize; 1],
        }
        let mut g: Grown = unsafe_zeroed();
        let qp = std::ptr::addr_of_mut!(g.vqp).cast::<ibv_qp>();
        // SAFETY: `g` is larger than either layout's tail.
        unsafe {
            assert!(!qp_is_ex(qp, None));
            // rdma-core 44 layout
            *qp_tail(qp.cast(), false).0 = VERBS_QP_EX;
            assert!(qp_is_ex(qp, None) && qp_is_ex(qp, Some(false)) && !qp_is_ex(qp, Some(true)));
            // rdma-core 45 layout: a function pointer where 44 has comp_mask
            qp.cast::<u8>()
                .add(core::mem::offset_of!(verbs_qp, comp_mask))
                .cast::<usize>()
                .write_unaligned(front_is_six_pointers_and_views_round_trip as *const () as usize);
            assert!(!qp_is_ex(qp, None));
            *qp_tail(qp.cast(), true).0 = VERBS_QP_EX | VERBS_QP_XRCD;
            assert!(qp_is_ex(qp, None) && qp_is_ex(qp, Some(true)));
        }
    }

    fn unsafe_zeroed<T>() -> T {
        // SAFETY: only used for repr(C) structs of pointers, integers and
        // Option<fn>, for which all-zero bytes are valid.
        unsafe { core::mem::zeroed() }
    }
}
