//! Test helper: evaluate integer C expressions against the system headers.

use std::process::Command;

/// Compiles and runs a C program printing each expression of `exprs` (as a
/// `long long`) with `includes` included.  `None` when no C compiler or
/// one of the headers is unavailable (the caller then skips its check).
pub fn c_values(includes: &[&str], exprs: &[String]) -> Option<Vec<i64>> {
    let dir = std::env::temp_dir().join(format!("ibverbs-rs-probe-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(&dir).ok()?;
    let mut src = String::from("#include <stdio.h>\n#include <stddef.h>\n#include <sys/ioctl.h>\n");
    for i in includes {
        src.push_str(&format!("#include <{i}>\n"));
    }
    src.push_str("int main(void) {\n");
    for e in exprs {
        src.push_str(&format!("\tprintf(\"%lld\\n\", (long long)({e}));\n"));
    }
    src.push_str("\treturn 0;\n}\n");
    let c = dir.join("probe.c");
    let exe = dir.join("probe");
    std::fs::write(&c, src).ok()?;
    // Skip (None) only when the toolchain or the headers are absent; a
    // probe that does not compile is a test failure.
    for i in includes {
        if !std::path::Path::new("/usr/include").join(i).exists() {
            return None;
        }
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc).arg("-o").arg(&exe).arg(&c).output().ok()?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&dir);
        panic!("C probe failed to compile:\n{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = Command::new(&exe).output().ok()?;
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8(out.stdout).ok()?;
    let v: Vec<i64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    (v.len() == exprs.len()).then_some(v)
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The pinned provider-ABI table (`compat-tests/layout/provider_abi.expected`,
/// rdma-core 44's sizes and offsets): `key -> value` of its lines (`#`
/// comments and blank lines aside).  The one reader of that table on the
/// Rust side; a malformed line is a test failure, never skipped.
pub fn pinned_table() -> std::collections::HashMap<String, i64> {
    const TABLE: &str = include_str!("../../compat-tests/layout/provider_abi.expected");
    let mut map = std::collections::HashMap::new();
    for line in TABLE.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("table line without value: {line}"));
        let value = value
            .parse::<i64>()
            .unwrap_or_else(|_| panic!("non-numeric value: {line}"));
        map.insert(key.to_string(), value);
    }
    map
}
