//! Logging for providers (`__verbs_log`): `VERBS_LOG_LEVEL` selects the
//! level (0 = none, 1 = error … 4 = debug), `VERBS_LOG_FILE` the file
//! (appended to).  As in upstream's release builds, logging is off unless
//! the file can be opened.  Read once, when the
//! device list is first initialised, like upstream.

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

pub const PFX: &str = "libibverbs: ";
pub const LEVEL_NONE: u32 = 0;
pub const LEVEL_ERR: u32 = 1;
pub const LEVEL_WARN: u32 = 2;
pub const LEVEL_INFO: u32 = 3;
pub const LEVEL_DEBUG: u32 = 4;

static LEVEL: AtomicU32 = AtomicU32::new(LEVEL_NONE);

enum Sink {
    Unset,
    File(std::fs::File),
}

static SINK: Mutex<Sink> = Mutex::new(Sink::Unset);

/// strtol(env, NULL, 0) as upstream parses the level.
fn parse_level(s: &str) -> u32 {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    let d: String = digits.chars().take_while(|c| c.is_digit(radix)).collect();
    let v = i64::from_str_radix(&d, radix).unwrap_or(0);
    (if neg { -v } else { v }) as u32
}

/// Reads the environment; called once from the device-list initialisation.
pub fn init() {
    if let Some(v) = crate::env::get("VERBS_LOG_LEVEL") {
        LEVEL.store(parse_level(&v.to_string_lossy()), Ordering::Relaxed);
    }
    if LEVEL.load(Ordering::Relaxed) == LEVEL_NONE {
        return;
    }
    // Like upstream's release build (no VERBS_DEBUG): without a usable
    // VERBS_LOG_FILE, logging stays off.
    let sink = match crate::env::get("VERBS_LOG_FILE") {
        None => Sink::Unset,
        Some(p) => {
            use std::os::unix::ffi::OsStrExt;
            match std::fs::OpenOptions::new()
                .append(true)
                .read(true)
                .create(true)
                .open(std::ffi::OsStr::from_bytes(p.as_bytes()))
            {
                Ok(f) => Sink::File(f),
                Err(_) => Sink::Unset,
            }
        }
    };
    if matches!(sink, Sink::Unset) {
        LEVEL.store(LEVEL_NONE, Ordering::Relaxed);
    }
    *SINK.lock().unwrap_or_else(|p| p.into_inner()) = sink;
}

/// Whether a message of `level` is written.
pub fn enabled(level: u32) -> bool {
    level <= LEVEL.load(Ordering::Relaxed)
}

/// Writes an already formatted message.
pub fn write(msg: &[u8]) {
    let mut s = SINK.lock().unwrap_or_else(|p| p.into_inner());
    let _ = match &mut *s {
        Sink::Unset => Ok(()),
        Sink::File(f) => f.write_all(msg),
    };
}

/// Our own diagnostics at a level (formatted by Rust).
pub fn log(level: u32, msg: std::fmt::Arguments<'_>) {
    if enabled(level) {
        write(msg.to_string().as_bytes());
    }
}

#[no_mangle]
pub extern "C" fn ibvrs_log_enabled(level: u32) -> i32 {
    enabled(level) as i32
}

/// # Safety
/// `msg` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ibvrs_log_write(msg: *const u8, len: usize) {
    if msg.is_null() {
        return;
    }
    crate::ffi::guard((), || {
        // SAFETY: the C shim passes its vasprintf buffer and length.
        write(unsafe { std::slice::from_raw_parts(msg, len) })
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn levels() {
        assert_eq!(super::parse_level("4"), 4);
        assert_eq!(super::parse_level("0x3"), 3);
        assert_eq!(super::parse_level("010"), 8);
        assert_eq!(super::parse_level("abc"), 0);
    }
}
