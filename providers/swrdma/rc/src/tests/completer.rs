//! The completer: READ response data and atomic results placed in the
//! work request's local list.

use super::{sge, snapshot, FakeMem, Holed, Untouched, BASE};
use crate::completer::{place_atomic, place_read, read_resp_place};
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

#[test]
fn read_responses_at_our_path_mtu() {
    // 712 bytes at 256: 256, 256, 200
    assert_eq!(read_resp_place(712, 256, 0, 0, 256, false), Some((0, 256)));
    assert_eq!(read_resp_place(712, 256, 256, 1, 256, false), Some((256, 256)));
    assert_eq!(read_resp_place(712, 256, 256, 2, 200, true), Some((512, 256)));
    assert_eq!(
        read_resp_place(712, 256, 0, 2, 200, true),
        Some((512, 256)),
        "the LAST first"
    );
    assert_eq!(read_resp_place(100, 256, 0, 0, 100, true), Some((0, 256)), "an ONLY");
    assert_eq!(read_resp_place(0, 256, 0, 0, 0, true), Some((0, 256)), "zero length");
    // a READ asked again from packet 1 gets a FIRST there: same place
    assert_eq!(read_resp_place(712, 256, 256, 1, 256, false), Some((256, 256)));
}

#[test]
fn read_responses_at_a_larger_responder_mtu() {
    // 712 bytes answered at 1024: one ONLY
    assert_eq!(read_resp_place(712, 256, 0, 0, 712, true), Some((0, 1024)));
    // 3000 bytes at 1024: 1024, 1024, 952 (any order)
    assert_eq!(read_resp_place(3000, 256, 0, 1, 1024, false), Some((1024, 1024)));
    assert_eq!(
        read_resp_place(3000, 256, 0, 2, 952, true),
        Some((2048, 1024)),
        "the LAST first"
    );
    assert_eq!(read_resp_place(3000, 256, 1024, 0, 1024, false), Some((0, 1024)));
    assert_eq!(read_resp_place(3000, 256, 1024, 2, 952, true), Some((2048, 1024)));
    // exactly two MTUs at 2048
    assert_eq!(read_resp_place(4096, 1024, 0, 1, 2048, true), Some((2048, 2048)));
}

#[test]
fn read_responses_that_do_not_fit_are_refused() {
    // an MTU seen once holds for the rest of the READ
    assert_eq!(read_resp_place(3000, 256, 1024, 1, 256, false), None);
    assert_eq!(read_resp_place(3000, 256, 256, 1, 1024, false), None);
    // not an MTU
    assert_eq!(read_resp_place(3000, 256, 0, 0, 1000, false), None);
    assert_eq!(
        read_resp_place(3000, 256, 0, 1, 300, true),
        None,
        "2700 bytes before packet 1"
    );
    // smaller than ours (its PSNs would run past the READ's)
    assert_eq!(read_resp_place(3000, 1024, 0, 0, 256, false), None);
    // past the READ, wrong end, wrong length
    assert_eq!(read_resp_place(712, 256, 0, 3, 0, true), None);
    assert_eq!(
        read_resp_place(712, 256, 0, 0, 712, false),
        None,
        "not LAST, yet the whole READ"
    );
    assert_eq!(read_resp_place(712, 256, 0, 0, 800, true), None, "longer than the READ");
    assert_eq!(read_resp_place(712, 256, 1024, 1, 0, true), None);
    assert_eq!(
        read_resp_place(9000, 256, 0, 0, 9000, true),
        None,
        "no MTU carries 9000 bytes"
    );
    assert_eq!(read_resp_place(712, 256, 0, 1, 0, true), None);
}
