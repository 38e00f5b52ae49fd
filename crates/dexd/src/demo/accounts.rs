//! The demo's accounts: keys made at start from the operating system's randomness, held in
//! memory only (erased when dropped) and never printed; their addresses are logged, because they
//! are ordinary accounts that anyone can look up.
//!
//! This module does not trade or fund: `market.rs` and `mod.rs` do, through the API's handlers.

use std::fmt;

use dexd_core::Address;
use dexd_crypto::PrivateKey;
use rand::RngCore;
use zeroize::Zeroizing;

/// One demo account: its key, as the `privateKey` parameter takes it, and its address.
pub struct DemoAccount {
    key_text: Zeroizing<String>,
    address: Address,
}

impl DemoAccount {
    /// A new account with a fresh random key.
    pub fn generate() -> DemoAccount {
        loop {
            let mut secret = Zeroizing::new([0u8; 32]);
            rand::rngs::OsRng.fill_bytes(secret.as_mut());
            let mut digits = Zeroizing::new([0u8; 64]);
            hex::encode_to_slice(secret.as_ref(), digits.as_mut()).expect("64 hex digits hold 32 bytes");
            let mut key_text = Zeroizing::new(String::with_capacity(66));
            key_text.push_str("0x");
            key_text.push_str(std::str::from_utf8(digits.as_ref()).expect("hex digits are ASCII"));
            // A random 32-byte string is a valid secp256k1 key but for about 2^-128 of them.
            if let Ok(key) = PrivateKey::parse(&key_text) {
                return DemoAccount {
                    address: key.address(),
                    key_text,
                };
            }
        }
    }

    /// The account's address, EIP-55 checksummed (as logged and as sent).
    pub fn address_text(&self) -> String {
        dexd_crypto::checksummed(&self.address)
    }

    /// The key, for a request's `privateKey` (the request's parameters erase their copy).
    pub(super) fn key_text(&self) -> &str {
        &self.key_text
    }
}

impl fmt::Debug for DemoAccount {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("DemoAccount")
            .field("address", &self.address_text())
            .field("key", &"<never shown>")
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounts_are_distinct_and_their_keys_never_show() {
        let (first, second) = (DemoAccount::generate(), DemoAccount::generate());
        assert_ne!(first.address, second.address);
        assert_eq!(PrivateKey::parse(first.key_text()).unwrap().address(), first.address);
        let shown = format!("{first:?} {first:#?}");
        assert!(shown.contains(&first.address_text()));
        assert!(!shown.contains(&first.key_text()[2..]), "the key reached a debug print");
    }
}
