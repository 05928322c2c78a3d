//! Fuzzes the provider configuration parsers (src/provider/config.rs): a
//! configuration file's contents split into lines and parsed like upstream
//! (`driver NAME`, comments), and the RDMAV_DRIVERS / IBV_DRIVERS lists.
//! Nothing may panic; names never contain the delimiters they were split at.
#![no_main]

use ibverbs_rs::provider::config::{lines, parse_line, split_list, Line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut total = 0;
    for line in lines(data) {
        total += line.len();
        match parse_line(line) {
            Line::Skip => {}
            Line::Driver(name) => assert!(!name.iter().any(|c| b"\n\t \0".contains(c)), "{name:?}"),
            Line::Bad(field) => assert!(!field.iter().any(|c| b"\n\t \0".contains(c)), "{field:?}"),
        }
    }
    assert_eq!(total, data.len());
    let names = split_list(data);
    assert_eq!(
        names.len(),
        1 + data.iter().filter(|&&c| c == b':' || c == b';').count()
    );
    for name in &names {
        assert!(!name.iter().any(|&c| c == b':' || c == b';'), "{name:?}");
    }
});
