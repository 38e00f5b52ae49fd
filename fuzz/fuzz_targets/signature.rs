//! Signature recovery from untrusted bytes, and the hex and uint256 parsers in front of it:
//! never panic.
#![no_main]

use dexd_crypto::parse_uint256;
use dexd_crypto::{parse_hex_bytes, recover_signer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() >= 32 + 65 {
        let digest: [u8; 32] = data[..32].try_into().unwrap();
        let signature: [u8; 65] = data[32..97].try_into().unwrap();
        let _ = recover_signer(digest, &signature);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(signature) = parse_hex_bytes::<65>(text) {
            let _ = recover_signer([7; 32], &signature);
        }
        if let Some(word) = parse_uint256(text) {
            let printed = dexd_alloy_print(word);
            assert_eq!(printed.trim_start_matches('0'), text.trim_start_matches('0'));
        }
    }
});

fn dexd_alloy_print(word: [u8; 32]) -> String {
    // The decimal digits of a big-endian uint256, by long division (independent of alloy).
    let mut digits = Vec::new();
    let mut number = word.to_vec();
    while number.iter().any(|byte| *byte != 0) {
        let mut remainder = 0u32;
        for byte in number.iter_mut() {
            let value = (remainder << 8) | u32::from(*byte);
            *byte = (value / 10) as u8;
            remainder = value % 10;
        }
        digits.push(b'0' + remainder as u8);
    }
    digits.reverse();
    String::from_utf8(digits).unwrap()
}
