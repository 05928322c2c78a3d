// Link against libibverbs.so.1 so that the provider ABI imports
// (verbs_register_driver_34, _verbs_init_and_alloc_context, ...) carry the
// version IBVERBS_PRIVATE_34.  Our own build (build/lib) is preferred; Debian's
// library defines the same version nodes and is the fallback.
use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let ours = Path::new(&manifest).join("../../build/lib/libibverbs.so.1");
    let lib = match std::env::var("SWRDMA_LINK_LIBIBVERBS") {
        Ok(p) => p,
        Err(_) if ours.exists() => ours.canonicalize().unwrap().display().to_string(),
        Err(_) => "/usr/lib/x86_64-linux-gnu/libibverbs.so.1".to_string(),
    };
    println!("cargo:rerun-if-env-changed=SWRDMA_LINK_LIBIBVERBS");
    println!("cargo:rerun-if-changed=../../build/lib/libibverbs.so.1");
    // (Every linked target: the provider, and the harness of its unit
    // tests, `cargo test -p swrdma --lib`, which links the same code.)
    println!("cargo:rustc-link-arg={lib}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libswrdma-rdmav34.so");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,relro,-z,now");
}
