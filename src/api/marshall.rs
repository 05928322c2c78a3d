//! `execute_ioctl` and the marshalling helpers of the provider ABI
//! (`IBVERBS_PRIVATE_34`): kernel structs of `<rdma/ib_user_verbs.h>` /
//! `<rdma/ib_user_sa.h>` to and from the verbs structs.

use std::os::raw::c_int;

use crate::abi::*;
use crate::kernel::uapi::{ib_user_path_rec, ib_uverbs_ah_attr, ib_uverbs_qp_attr};

/// `struct ibv_sa_path_rec` of `<infiniband/sa.h>` (only these helpers use
/// it).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ibv_sa_path_rec {
    pub dgid: ibv_gid,
    pub sgid: ibv_gid,
    pub dlid: u16,
    pub slid: u16,
    pub raw_traffic: c_int,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub reversible: c_int,
    pub numb_path: u8,
    pub pkey: u16,
    pub sl: u8,
    pub mtu_selector: u8,
    pub mtu: u8,
    pub rate_selector: u8,
    pub rate: u8,
    pub packet_life_time_selector: u8,
    pub packet_life_time: u8,
    pub preference: u8,
}

fn ah_from_kern(d: &mut ibv_ah_attr, s: &ib_uverbs_ah_attr) {
    d.grh.dgid.raw = s.grh.dgid;
    crate::kernel::copy_fields!(d.grh, s.grh; flow_label, sgid_index, hop_limit, traffic_class);
    crate::kernel::copy_fields!(d, s; dlid, sl, src_path_bits, static_rate, is_global, port_num);
}

/// The members `ibv_sa_path_rec` and `ib_user_path_rec` share under one
/// name and type (everything but the GIDs, `raw_traffic`, `reversible` and
/// `mtu`, whose types differ).
macro_rules! copy_path_rec_common {
    ($d:expr, $s:expr) => {
        crate::kernel::copy_fields!($d, $s;
            dlid, slid, flow_label, hop_limit, traffic_class, numb_path, pkey, sl, mtu_selector,
            rate_selector, rate, packet_life_time, preference, packet_life_time_selector)
    };
}

crate::export! {
    /// Runs a provider-built chain of command buffers as one
    /// `RDMA_VERBS_IOCTL`: 0 or an errno value.
    fn execute_ioctl(context: *mut ibv_context, cmd: *mut ibv_command_buffer) -> c_int [on_panic: libc::EIO] {
        if context.is_null() || cmd.is_null() {
            crate::ffi::set_errno(libc::EINVAL);
            return libc::EINVAL;
        }
        // SAFETY: both pointers are non-null; the provider passes its open
        // context and a chain it built with the `cmd_ioctl.h` helpers, whose
        // first block was sized for the whole chain (execute_ioctl's C
        // contract, which is `execute`'s).
        unsafe { crate::kernel::ioctl::execute(context, cmd) }
    }

    fn ibv_copy_ah_attr_from_kern(dst: *mut ibv_ah_attr, src: *mut ib_uverbs_ah_attr) -> () [on_panic: ()] {
        if dst.is_null() || src.is_null() {
            return;
        }
        // SAFETY: both non-null; the provider passes a writable
        // `ibv_ah_attr` and a readable kernel struct, distinct objects.
        ah_from_kern(unsafe { &mut *dst }, unsafe { &*src });
    }

    fn ibv_copy_qp_attr_from_kern(dst: *mut ibv_qp_attr, src: *mut ib_uverbs_qp_attr) -> () [on_panic: ()] {
        if dst.is_null() || src.is_null() {
            return;
        }
        // SAFETY: both non-null; the provider passes a writable
        // `ibv_qp_attr` and a readable kernel struct, distinct objects.
        let (d, s) = unsafe { (&mut *dst, &*src) };
        crate::kernel::copy_fields!(d, s; cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags);
        crate::kernel::copy_fields!(d.cap, s; max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data);
        ah_from_kern(&mut d.ah_attr, &s.ah_attr);
        ah_from_kern(&mut d.alt_ah_attr, &s.alt_ah_attr);
        crate::kernel::copy_fields!(d, s;
            pkey_index, alt_pkey_index, en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic,
            min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout);
    }

    fn ibv_copy_path_rec_from_kern(dst: *mut ibv_sa_path_rec, src: *mut ib_user_path_rec) -> () [on_panic: ()] {
        if dst.is_null() || src.is_null() {
            return;
        }
        // SAFETY: both non-null; the provider passes a writable
        // `ibv_sa_path_rec` and a readable kernel path record, distinct
        // objects.
        let (d, s) = unsafe { (&mut *dst, &*src) };
        d.dgid.raw = s.dgid;
        d.sgid.raw = s.sgid;
        copy_path_rec_common!(d, s);
        d.raw_traffic = s.raw_traffic as c_int;
        d.reversible = s.reversible as c_int;
        d.mtu = s.mtu as u8;
    }

    fn ibv_copy_path_rec_to_kern(dst: *mut ib_user_path_rec, src: *mut ibv_sa_path_rec) -> () [on_panic: ()] {
        if dst.is_null() || src.is_null() {
            return;
        }
        // SAFETY: both non-null; the provider passes a writable kernel path
        // record and a readable `ibv_sa_path_rec`, distinct objects.
        let (d, s) = unsafe { (&mut *dst, &*src) };
        // SAFETY: `ibv_gid` is a union of 16 plain bytes and two u64 halves:
        // every bit pattern is a valid `raw`.
        (d.dgid, d.sgid) = unsafe { (s.dgid.raw, s.sgid.raw) };
        copy_path_rec_common!(d, s);
        d.raw_traffic = s.raw_traffic as u32;
        d.reversible = s.reversible as u32;
        d.mtu = s.mtu as u32;
    }
}

#[cfg(test)]
mod tests;
