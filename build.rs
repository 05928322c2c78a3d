// Compiles the one C file of the library: the variadic entry points that
// stable Rust cannot define (src/c/variadic.c).
fn main() {
    println!("cargo:rerun-if-changed=src/c/variadic.c");
    cc::Build::new()
        .file("src/c/variadic.c")
        .flag("-fvisibility=default")
        .warnings(true)
        .extra_warnings(true)
        .compile("ibvrs_variadic");
}
