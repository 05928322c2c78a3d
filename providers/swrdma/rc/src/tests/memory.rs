//! The scatter/gather walk every placement goes through.

use super::{sge, snapshot, FakeMem, Strict, Untouched, BASE};
use crate::memory::{gather, scatter};

#[test]
fn scatter_from_an_offset_across_sges() {
    let s = Strict::new(BASE, 64);
    let list = [sge(BASE, 2, 1), sge(BASE + 10, 3, 1), sge(BASE + 20, 4, 1)];
    assert!(
        scatter(&s, &list, 3, b"defg"),
        "skips the first SGE and one byte of the second"
    );
    assert_eq!(
        s.log(),
        vec![("write", BASE + 11, 2), ("write", BASE + 20, 2)],
        "one copy per piece"
    );
    assert_eq!(&snapshot(&s.mem)[10..24], b"\0de\0\0\0\0\0\0\0fg\0\0");
}

#[test]
fn gather_reads_what_scatter_wrote() {
    let mem = FakeMem::new(BASE, 64);
    let list = [sge(BASE + 1, 2, 1), sge(BASE, 0, 1), sge(BASE + 30, 5, 1)];
    assert!(scatter(&mem, &list, 0, b"abcdefg"));
    let mut out = [0u8; 7];
    assert!(gather(&mem, &list, 0, &mut out));
    assert_eq!(&out, b"abcdefg");
    let mut tail = [0u8; 3];
    assert!(gather(&mem, &list, 4, &mut tail));
    assert_eq!(&tail, b"efg");
}

#[test]
fn a_list_too_short_fails() {
    let mem = FakeMem::new(BASE, 64);
    let list = [sge(BASE, 4, 1), sge(BASE + 8, 4, 1)];
    assert!(scatter(&mem, &list, 0, &[1; 8]), "exactly full");
    assert!(!scatter(&mem, &list, 0, &[1; 9]));
    assert!(!scatter(&mem, &list, 5, &[1; 4]));
    assert!(!scatter(&Untouched, &list, 8, &[1]), "wholly past it: nothing copied");
    let mut out = [0u8; 9];
    assert!(!gather(&mem, &list, 0, &mut out));
}

#[test]
fn nothing_to_copy_succeeds() {
    assert!(scatter(&Untouched, &[], 0, b""));
    assert!(scatter(&Untouched, &[sge(BASE, 4, 1)], 100, b""));
    assert!(gather(&Untouched, &[], 0, &mut []));
}

#[test]
fn unmapped_memory_fails() {
    let mem = FakeMem::new(BASE, 16);
    assert!(!scatter(&mem, &[sge(BASE + 12, 8, 1)], 0, &[1; 8]));
    let mut out = [0u8; 8];
    assert!(!gather(&mem, &[sge(BASE + 4096, 8, 1)], 0, &mut out));
}
