//! Private key parsing: never panics, accepts only `0x` + 64 hex digits, and a parsed key signs a
//! digest that recovers to its address.
#![no_main]

use dexd_crypto::{recover_signer, PrivateKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(key) = PrivateKey::parse(text) else {
        return;
    };
    assert!(text.len() == 66 && text.starts_with("0x"));
    let digest = [0x42; 32];
    assert_eq!(recover_signer(digest, &key.sign_digest(digest)), Some(key.address()));
    assert_eq!(format!("{key:?}"), "PrivateKey(<redacted>)");
});
