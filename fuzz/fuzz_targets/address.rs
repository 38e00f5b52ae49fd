//! Address parsing: never panics; a parsed address prints with its EIP-55 checksum, which parses
//! back to the same address.
#![no_main]

use dexd_crypto::{checksummed, parse_address};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(address) = parse_address(text) else {
        return;
    };
    let printed = checksummed(&address);
    assert_eq!(parse_address(&printed), Ok(address));
    assert!(text.eq_ignore_ascii_case(&printed), "{text:?} is not {printed:?}");
});
