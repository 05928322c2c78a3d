//! Rust mirrors of the public types that rdma-core 65's `<infiniband/verbs.h>`
//! added after rdma-core 44 (the `IBVERBS_1.15`–`1.18` surface), with the
//! conventions of [`crate::verbs`].  Kept apart from `verbs.rs`, whose test
//! checks every definition against rdma-core 44's header: these are checked
//! against rdma-core 65's.

use crate::verbs::ibv_context;
use libc::{c_int, c_void, size_t};

/// `struct ibv_dmah`: a DMA handle (TPH steering hints for memory).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_dmah {
    pub context: *mut ibv_context,
}

/// `struct ibv_dmah_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_dmah_init_attr {
    pub comp_mask: u32,
    pub cpu_id: u32,
    pub ph: u8,
    pub tph_mem_type: u8,
}

/// `enum ibv_tph_mem_type`
pub type ibv_tph_mem_type = u32;
pub const IBV_TPH_MEM_TYPE_VM: ibv_tph_mem_type = 0;
pub const IBV_TPH_MEM_TYPE_PM: ibv_tph_mem_type = 1;

/// `enum ibv_dmah_init_attr_mask`
pub type ibv_dmah_init_attr_mask = u32;
pub const IBV_DMAH_INIT_ATTR_MASK_CPU_ID: ibv_dmah_init_attr_mask = 1 << 0;
pub const IBV_DMAH_INIT_ATTR_MASK_PH: ibv_dmah_init_attr_mask = 1 << 1;
pub const IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE: ibv_dmah_init_attr_mask = 1 << 2;

/// `struct ibv_buf` (opaque to applications; defined in the provider ABI,
/// [`crate::driver::ibv_buf`]).
pub use crate::driver::ibv_buf;

/// `struct ibv_mr_init_attr`: the arguments of `ibv_reg_mr_ex`.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_mr_init_attr {
    pub length: size_t,
    pub access: c_int,
    pub comp_mask: u64,
    pub iova: u64,
    pub addr: *mut c_void,
    pub fd: c_int,
    pub fd_offset: u64,
    pub dmah: *mut ibv_dmah,
    pub buf: *mut ibv_buf,
}

/// `enum ibv_mr_init_attr_mask`
pub type ibv_mr_init_attr_mask = u32;
pub const IBV_REG_MR_MASK_IOVA: ibv_mr_init_attr_mask = 1 << 0;
pub const IBV_REG_MR_MASK_ADDR: ibv_mr_init_attr_mask = 1 << 1;
pub const IBV_REG_MR_MASK_FD: ibv_mr_init_attr_mask = 1 << 2;
pub const IBV_REG_MR_MASK_FD_OFFSET: ibv_mr_init_attr_mask = 1 << 3;
pub const IBV_REG_MR_MASK_DMAH: ibv_mr_init_attr_mask = 1 << 4;
pub const IBV_REG_MR_MASK_BUF: ibv_mr_init_attr_mask = 1 << 5;

/// `struct ibv_comp_cntr`: a completion counter.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_comp_cntr {
    pub context: *mut ibv_context,
    pub handle: u32,
}

/// `enum ibv_comp_cntr_type`
pub type ibv_comp_cntr_type = u32;
pub const IBV_COMP_CNTR_TYPE_WRS: ibv_comp_cntr_type = 0;
pub const IBV_COMP_CNTR_TYPE_BYTES: ibv_comp_cntr_type = 1;

/// `struct ibv_comp_cntr_init_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_comp_cntr_init_attr {
    pub comp_mask: u32,
    pub r#type: ibv_comp_cntr_type,
    pub flags: u32,
}

/// `struct ibv_comp_cntr_caps`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_comp_cntr_caps {
    pub max_value: u64,
    pub max_counters: u32,
    pub supported_qp_attach_ops: u32,
}

/// `struct ibv_qp_attach_comp_cntr_attr`
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_qp_attach_comp_cntr_attr {
    pub comp_mask: u32,
    pub op_mask: u32,
}

/// `enum ibv_qp_attach_comp_cntr_op`
pub type ibv_qp_attach_comp_cntr_op = u32;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_SEND: ibv_qp_attach_comp_cntr_op = 1 << 0;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RECV: ibv_qp_attach_comp_cntr_op = 1 << 1;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ: ibv_qp_attach_comp_cntr_op = 1 << 2;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ: ibv_qp_attach_comp_cntr_op = 1 << 3;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE: ibv_qp_attach_comp_cntr_op = 1 << 4;
pub const IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE: ibv_qp_attach_comp_cntr_op = 1 << 5;

/// `struct ibv_fd_arr`: file descriptors passed to `ibv_cmd_get_context`
/// (rdma-core 65's provider ABI takes it; public in `verbs.h`).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct ibv_fd_arr {
    pub arr: *mut c_int,
    pub count: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};
    use std::fmt::Write;

    /// rdma-core 65's public headers: `$IBVERBS_SID_INCLUDE`, else the sid
    /// root `compat-tests/roots.sh` builds (`build/roots/sid/usr/include`).
    fn sid_include() -> Option<std::path::PathBuf> {
        let dir = match std::env::var_os("IBVERBS_SID_INCLUDE") {
            Some(d) => std::path::PathBuf::from(d),
            None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/roots/sid/usr/include"),
        };
        dir.join("infiniband/verbs.h").exists().then_some(dir)
    }

    macro_rules! layout {
        ($v:ident, $t:ident { $($f:ident),* }) => {{
            $v.push((format!("sizeof(struct {})", stringify!($t)), size_of::<$t>() as i64));
            $v.push((format!("_Alignof(struct {})", stringify!($t)), align_of::<$t>() as i64));
            $(
                let f = stringify!($f).trim_start_matches("r#");
                $v.push((format!("offsetof(struct {}, {})", stringify!($t), f), offset_of!($t, $f) as i64));
                $v.push((format!("sizeof(((struct {} *)0)->{})", stringify!($t), f),
                         size_of_val(&unsafe_zeroed::<$t>().$f) as i64));
            )*
        }};
    }

    macro_rules! values {
        ($v:ident, $($c:ident)*) => { $( $v.push((stringify!($c).to_string(), $c as i64)); )* };
    }

    fn unsafe_zeroed<T>() -> T {
        // SAFETY: only used for the repr(C) structs of this file, made of
        // integers and raw pointers, for which all-zero bytes are valid.
        unsafe { core::mem::zeroed() }
    }

    /// Every type and value of this file against rdma-core 65's verbs.h
    /// (`struct ibv_buf` is opaque there; its layout is the provider
    /// ABI's, see `crate::driver`).
    #[test]
    fn layouts_and_values_match_rdma_core_65_headers() {
        let Some(inc) = sid_include() else {
            eprintln!("abi::verbs65: rdma-core 65 headers not found (run compat-tests/roots.sh sid); skipped");
            return;
        };
        let mut v: Vec<(String, i64)> = Vec::new();
        layout!(v, ibv_dmah { context });
        layout!(
            v,
            ibv_dmah_init_attr {
                comp_mask,
                cpu_id,
                ph,
                tph_mem_type
            }
        );
        layout!(
            v,
            ibv_mr_init_attr {
                length,
                access,
                comp_mask,
                iova,
                addr,
                fd,
                fd_offset,
                dmah,
                buf
            }
        );
        layout!(v, ibv_comp_cntr { context, handle });
        layout!(
            v,
            ibv_comp_cntr_init_attr {
                comp_mask,
                r#type,
                flags
            }
        );
        layout!(
            v,
            ibv_comp_cntr_caps {
                max_value,
                max_counters,
                supported_qp_attach_ops
            }
        );
        layout!(v, ibv_qp_attach_comp_cntr_attr { comp_mask, op_mask });
        layout!(v, ibv_fd_arr { arr, count });
        for e in [
            "ibv_tph_mem_type",
            "ibv_dmah_init_attr_mask",
            "ibv_mr_init_attr_mask",
            "ibv_comp_cntr_type",
            "ibv_qp_attach_comp_cntr_op",
        ] {
            v.push((format!("sizeof(enum {e})"), 4));
        }
        values!(v, IBV_TPH_MEM_TYPE_VM IBV_TPH_MEM_TYPE_PM
            IBV_DMAH_INIT_ATTR_MASK_CPU_ID IBV_DMAH_INIT_ATTR_MASK_PH IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE
            IBV_REG_MR_MASK_IOVA IBV_REG_MR_MASK_ADDR IBV_REG_MR_MASK_FD IBV_REG_MR_MASK_FD_OFFSET
            IBV_REG_MR_MASK_DMAH IBV_REG_MR_MASK_BUF
            IBV_COMP_CNTR_TYPE_WRS IBV_COMP_CNTR_TYPE_BYTES
            IBV_QP_ATTACH_COMP_CNTR_OP_SEND IBV_QP_ATTACH_COMP_CNTR_OP_RECV IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_READ
            IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_READ IBV_QP_ATTACH_COMP_CNTR_OP_RDMA_WRITE
            IBV_QP_ATTACH_COMP_CNTR_OP_REMOTE_RDMA_WRITE);
        // The "grows up" front of rdma-core 65's verbs_context: the older
        // members keep their distance to the end.
        v.push((
            "offsetof(struct verbs_context, context)".into(),
            (size_of::<crate::driver::verbs_context_65_front>() + offset_of!(crate::verbs::verbs_context, context))
                as i64,
        ));
        v.push((
            "sizeof(struct verbs_context)".into(),
            size_of::<crate::driver::verbs_context_65>() as i64,
        ));

        let mut src =
            String::from("#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\nint main(void) {\n");
        for (e, _) in &v {
            writeln!(src, "\tprintf(\"%lld\\n\", (long long)({e}));").unwrap();
        }
        src.push_str("\treturn 0;\n}\n");
        let dir = std::env::temp_dir().join(format!("ibverbs-rs-verbs65-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (c, exe) = (dir.join("probe.c"), dir.join("probe"));
        std::fs::write(&c, src).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let out = std::process::Command::new(cc)
            .arg("-std=gnu11")
            .arg("-w")
            .arg(format!("-I{}", inc.display()))
            .arg("-o")
            .arg(&exe)
            .arg(&c)
            .output()
            .expect("C compiler");
        assert!(out.status.success(), "probe: {}", String::from_utf8_lossy(&out.stderr));
        let run = std::process::Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let got: Vec<i64> = String::from_utf8(run.stdout)
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        assert_eq!(got.len(), v.len());
        let bad: Vec<String> = v
            .iter()
            .zip(&got)
            .filter(|((_, want), got)| want != *got)
            .map(|((e, want), got)| format!("{e}: Rust {want}, C {got}"))
            .collect();
        assert!(bad.is_empty(), "against {}:\n{}", inc.display(), bad.join("\n"));
        eprintln!("abi::verbs65: {} checks agree with {}", v.len(), inc.display());
    }
}
