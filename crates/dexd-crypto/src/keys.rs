//! Secret keys and the addresses they sign for.
//!
//! [`PrivateKey`] holds a secp256k1 secret for the length of one request: its `Debug` is
//! redacted, it has no `Display`, and it is erased when dropped. Addresses are derived the
//! Ethereum way (keccak-256 of the uncompressed public key, last 20 bytes). This module does not
//! read keys from files or the environment (the operator's key is custody's business).

use std::fmt;

use alloy_primitives::keccak256;
use dexd_core::Address;
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::{Message, PublicKey, SecretKey, SECP256K1};
use zeroize::Zeroizing;

/// A secp256k1 secret key, held only while a request needs it.
pub struct PrivateKey(SecretKey);

impl fmt::Debug for PrivateKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("PrivateKey(<redacted>)")
    }
}

impl Drop for PrivateKey {
    fn drop(&mut self) {
        self.0.non_secure_erase();
    }
}

/// Why a private key string was refused. Never carries any part of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidPrivateKey;

impl PrivateKey {
    /// Parses `0x` + 64 hex digits that form a valid secp256k1 secret (non-zero, below the
    /// curve order). The decoding buffer is erased (see the note on the by-value copy below).
    pub fn parse(text: &str) -> Result<PrivateKey, InvalidPrivateKey> {
        let hex_digits = text.strip_prefix("0x").ok_or(InvalidPrivateKey)?;
        if hex_digits.len() != 64 {
            return Err(InvalidPrivateKey);
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(hex_digits, &mut bytes[..]).map_err(|_| InvalidPrivateKey)?;
        // The secp256k1 crate takes the array by value (since 0.30, and its `from_slice` copies
        // too): that one copy, in this call's stack frame, is not erased; the decoding buffer is.
        SecretKey::from_byte_array(*bytes)
            .map(PrivateKey)
            .map_err(|_| InvalidPrivateKey)
    }

    /// The account address of the key.
    pub fn address(&self) -> Address {
        let public_key = PublicKey::from_secret_key_global(&self.0);
        address_of_public_key(&public_key)
    }

    /// A signer of chain transactions for this key, for a vault chain's deposit that the venue
    /// sends from the account (it lives no longer than the request that made it; its key is
    /// erased when it is dropped).
    pub fn transaction_signer(&self) -> alloy_signer_local::PrivateKeySigner {
        let secret = Zeroizing::new(self.0.secret_bytes());
        alloy_signer_local::PrivateKeySigner::from_slice(&secret[..])
            .expect("invariant: a valid secp256k1 secret key is a valid signing key")
    }

    /// Signs a 32-byte digest; returns `r ‖ s ‖ v` with `v` 27 or 28, as Ethereum tools expect.
    pub fn sign_digest(&self, digest: [u8; 32]) -> [u8; 65] {
        let signature = SECP256K1.sign_ecdsa_recoverable(Message::from_digest(digest), &self.0);
        let (recovery_id, compact) = signature.serialize_compact();
        let mut bytes = [0u8; 65];
        bytes[..64].copy_from_slice(&compact);
        bytes[64] = 27 + u8::try_from(i32::from(recovery_id)).expect("a recovery id is 0 to 3");
        bytes
    }
}

/// The most addresses the [`AddressCache`] keeps; when full it starts over empty.
pub const MAX_ADDRESS_CACHE_ENTRIES: usize = 65_536;

/// Remembers the address of keys seen recently, so that a trader's key is not taken through the
/// elliptic-curve multiplication (about 40 µs) on every order.
///
/// It never holds a key. Its index is keccak-256 of a random secret drawn at start followed by
/// the key: without the secret nothing about a key can be learned from the index, and with it a
/// key can only be confirmed, never recovered. The secret is not stored anywhere.
pub struct AddressCache {
    secret: [u8; 32],
    addresses: parking_lot::Mutex<std::collections::HashMap<[u8; 32], Address>>,
}

impl Default for AddressCache {
    fn default() -> AddressCache {
        AddressCache {
            secret: rand::random(),
            addresses: parking_lot::Mutex::new(std::collections::HashMap::new()),
        }
    }
}

impl AddressCache {
    /// The address of a key, from the cache when the key was seen before.
    pub fn address_of(&self, key: &PrivateKey) -> Address {
        let mut preimage = Zeroizing::new([0u8; 64]);
        preimage[..32].copy_from_slice(&self.secret);
        let secret_bytes = Zeroizing::new(key.0.secret_bytes());
        preimage[32..].copy_from_slice(&secret_bytes[..]);
        let index = keccak256(&preimage[..]).0;
        if let Some(address) = self.addresses.lock().get(&index) {
            return *address;
        }
        let address = key.address();
        let mut addresses = self.addresses.lock();
        if addresses.len() >= MAX_ADDRESS_CACHE_ENTRIES {
            addresses.clear();
        }
        addresses.insert(index, address);
        address
    }
}

/// The Ethereum address of a public key.
pub fn address_of_public_key(public_key: &PublicKey) -> Address {
    let uncompressed = public_key.serialize_uncompressed();
    let hash = keccak256(&uncompressed[1..]);
    let mut bytes = [0u8; 20];
    bytes.copy_from_slice(&hash[12..]);
    Address::from_bytes(bytes)
}

/// Half the order of secp256k1, big-endian. Of the two signatures of one digest by one key,
/// `(r, s)` and `(r, n - s)`, OpenZeppelin's `ECDSA` (and so the vault) takes only the one whose
/// `s` is at most this.
const HALF_CURVE_ORDER: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5d, 0x57, 0x6e,
    0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
];

/// Whether a 65-byte `r ‖ s ‖ v` signature has the one form an Ethereum contract verifying with
/// OpenZeppelin's `ECDSA` accepts: `v` 27 or 28 and a low `s`. ([`recover_signer`] also takes
/// `v` 0 or 1 and a high `s`, which recover the same signer.)
pub fn is_contract_canonical_signature(signature: &[u8; 65]) -> bool {
    matches!(signature[64], 27 | 28) && signature[32..64] <= HALF_CURVE_ORDER[..]
}

/// Recovers the address that made a 65-byte `r ‖ s ‖ v` signature over `digest`.
pub fn recover_signer(digest: [u8; 32], signature: &[u8; 65]) -> Option<Address> {
    recover_public_key(digest, signature).map(|public_key| address_of_public_key(&public_key))
}

/// The public key a 65-byte `r ‖ s ‖ v` signature over `digest` recovers to (the key
/// [`recover_signer`]'s address is of).
pub fn recover_public_key(digest: [u8; 32], signature: &[u8; 65]) -> Option<PublicKey> {
    let v = signature[64];
    let recovery = match v {
        27 | 28 => i32::from(v - 27),
        0 | 1 => i32::from(v),
        _ => return None,
    };
    let recovery_id = RecoveryId::try_from(recovery).ok()?;
    let signature = RecoverableSignature::from_compact(&signature[..64], recovery_id).ok()?;
    SECP256K1.recover_ecdsa(Message::from_digest(digest), &signature).ok()
}
