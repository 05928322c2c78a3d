//! The ring protocol (src/ring.rs) on its own, under concurrent use: its
//! tests live beside the code, in `ring::tests`.  `cargo test --release`.
//! (The library itself is not unit-tested here: it includes the main
//! crate's ABI mirrors, whose own tests need the main crate.)
#![allow(dead_code)]

#[path = "../src/ring.rs"]
mod ring;
