//! The completer: READ response data and atomic results placed in the
//! work request's local list.

use super::{sge, snapshot, FakeMem, Holed, Untouched, BASE};
use crate::completer::{place_atomic, place_read};
use ibverbs_abi::*;

#[test]
fn read_data_inside_the_read_is_placed() {
    let mem = FakeMem::new(BASE, 64);
    let list = [sge(BASE, 16, 1)];
    assert_eq!(place_read(&mem, &list, 16, 0, b"first"), Ok(()));
    assert_eq!(place_read(&mem, &list, 16, 12, b"last"), Ok(()), "up to the READ's end");
    let mut want = vec![0u8; 64];
    want[..5].copy_from_slice(b"first");
    want[12..16].copy_from_slice(b"last");
    assert_eq!(snapshot(&mem), want);
}

#[test]
fn read_data_across_sges() {
    let mem = FakeMem::new(BASE, 64);
    let list = [
        sge(BASE, 3, 1),
        sge(BASE, 0, 9),
        sge(BASE + 20, 2, 1),
        sge(BASE + 40, 8, 1),
    ];
    assert_eq!(place_read(&mem, &list, 13, 1, b"abcdefgh"), Ok(()));
    let b = snapshot(&mem);
    assert_eq!(&b[..3], b"\0ab");
    assert_eq!(&b[20..22], b"cd");
    assert_eq!(&b[40..48], b"efgh\0\0\0\0");
}

#[test]
fn read_data_outside_the_read_is_loc_len_err() {
    let list = [sge(BASE, 64, 1)];
    for (len, off, n) in [
        (16, 13, 4),
        (16, 16, 1),
        (16, 100, 1),
        (0, 0, 1),
        (16, u64::MAX, 1),
        (16, u64::MAX - 2, 8),
    ] {
        assert_eq!(
            place_read(&Untouched, &list, len, off, &vec![7; n]),
            Err(IBV_WC_LOC_LEN_ERR),
            "{n} bytes at {off} of a READ of {len}"
        );
    }
    assert_eq!(place_read(&Untouched, &list, 16, 16, b""), Ok(()), "nothing at the end");
}

#[test]
fn read_data_into_unmapped_memory_is_loc_prot_err() {
    let mem = Holed {
        mem: FakeMem::new(BASE, 64),
        hole: BASE + 32..BASE + 64,
    };
    let list = [sge(BASE + 24, 16, 1)];
    assert_eq!(place_read(&mem, &list, 16, 0, &[1; 8]), Ok(()), "the mapped half");
    assert_eq!(place_read(&mem, &list, 16, 8, &[2; 8]), Err(IBV_WC_LOC_PROT_ERR));
    assert_eq!(
        place_read(&mem, &list, 16, 4, &[3; 8]),
        Err(IBV_WC_LOC_PROT_ERR),
        "crossing into it"
    );
    assert_eq!(
        place_read(&FakeMem::new(BASE, 8), &[sge(BASE + 4096, 8, 1)], 8, 0, b"x"),
        Err(IBV_WC_LOC_PROT_ERR)
    );
}

#[test]
fn atomic_result_is_placed_in_our_byte_order() {
    let mem = FakeMem::new(BASE, 32);
    let v = 0x0102_0304_0506_0708u64;
    assert_eq!(place_atomic(&mem, &[sge(BASE + 8, 8, 1)], v), Ok(()));
    let b = snapshot(&mem);
    assert_eq!(&b[8..16], &v.to_ne_bytes());
    assert_eq!(&b[..8], &[0; 8]);
    assert_eq!(&b[16..], &[0; 16]);
    // split over two SGEs
    let mem = FakeMem::new(BASE, 32);
    assert_eq!(place_atomic(&mem, &[sge(BASE, 4, 1), sge(BASE + 20, 4, 1)], v), Ok(()));
    let b = snapshot(&mem);
    assert_eq!(&b[..4], &v.to_ne_bytes()[..4]);
    assert_eq!(&b[20..24], &v.to_ne_bytes()[4..]);
}

#[test]
fn atomic_result_into_unmapped_memory_is_loc_prot_err() {
    let mem = FakeMem::new(BASE, 32);
    assert_eq!(place_atomic(&mem, &[sge(BASE + 28, 8, 1)], 1), Err(IBV_WC_LOC_PROT_ERR));
    assert_eq!(
        place_atomic(&mem, &[sge(BASE + 4096, 8, 1)], 1),
        Err(IBV_WC_LOC_PROT_ERR)
    );
    assert_eq!(snapshot(&mem), vec![0; 32]);
}
