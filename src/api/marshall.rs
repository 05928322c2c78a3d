//! `execute_ioctl` and the marshalling helpers of the provider ABI
//! (`IBVERBS_PRIVATE_34`): kernel structs of `<rdma/ib_user_verbs.h>` /
//! `<rdma/ib_user_sa.h>` to and from the verbs structs.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

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
    d.grh.flow_label = s.grh.flow_label;
    d.grh.sgid_index = s.grh.sgid_index;
    d.grh.hop_limit = s.grh.hop_limit;
    d.grh.traffic_class = s.grh.traffic_class;
    d.dlid = s.dlid;
    d.sl = s.sl;
    d.src_path_bits = s.src_path_bits;
    d.static_rate = s.static_rate;
    d.is_global = s.is_global;
    d.port_num = s.port_num;
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
        d.cur_qp_state = s.cur_qp_state;
        d.path_mtu = s.path_mtu;
        d.path_mig_state = s.path_mig_state;
        d.qkey = s.qkey;
        d.rq_psn = s.rq_psn;
        d.sq_psn = s.sq_psn;
        d.dest_qp_num = s.dest_qp_num;
        d.qp_access_flags = s.qp_access_flags;
        d.cap.max_send_wr = s.max_send_wr;
        d.cap.max_recv_wr = s.max_recv_wr;
        d.cap.max_send_sge = s.max_send_sge;
        d.cap.max_recv_sge = s.max_recv_sge;
        d.cap.max_inline_data = s.max_inline_data;
        ah_from_kern(&mut d.ah_attr, &s.ah_attr);
        ah_from_kern(&mut d.alt_ah_attr, &s.alt_ah_attr);
        d.pkey_index = s.pkey_index;
        d.alt_pkey_index = s.alt_pkey_index;
        d.en_sqd_async_notify = s.en_sqd_async_notify;
        d.sq_draining = s.sq_draining;
        d.max_rd_atomic = s.max_rd_atomic;
        d.max_dest_rd_atomic = s.max_dest_rd_atomic;
        d.min_rnr_timer = s.min_rnr_timer;
        d.port_num = s.port_num;
        d.timeout = s.timeout;
        d.retry_cnt = s.retry_cnt;
        d.rnr_retry = s.rnr_retry;
        d.alt_port_num = s.alt_port_num;
        d.alt_timeout = s.alt_timeout;
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
        d.dlid = s.dlid;
        d.slid = s.slid;
        d.raw_traffic = s.raw_traffic as c_int;
        d.flow_label = s.flow_label;
        d.hop_limit = s.hop_limit;
        d.traffic_class = s.traffic_class;
        d.reversible = s.reversible as c_int;
        d.numb_path = s.numb_path;
        d.pkey = s.pkey;
        d.sl = s.sl;
        d.mtu_selector = s.mtu_selector;
        d.mtu = s.mtu as u8;
        d.rate_selector = s.rate_selector;
        d.rate = s.rate;
        d.packet_life_time = s.packet_life_time;
        d.preference = s.preference;
        d.packet_life_time_selector = s.packet_life_time_selector;
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
        d.dlid = s.dlid;
        d.slid = s.slid;
        d.raw_traffic = s.raw_traffic as u32;
        d.flow_label = s.flow_label;
        d.hop_limit = s.hop_limit;
        d.traffic_class = s.traffic_class;
        d.reversible = s.reversible as u32;
        d.numb_path = s.numb_path;
        d.pkey = s.pkey;
        d.sl = s.sl;
        d.mtu_selector = s.mtu_selector;
        d.mtu = s.mtu as u32;
        d.rate_selector = s.rate_selector;
        d.rate = s.rate;
        d.packet_life_time = s.packet_life_time;
        d.preference = s.preference;
        d.packet_life_time_selector = s.packet_life_time_selector;
    }
}

#[cfg(test)]
mod tests;
